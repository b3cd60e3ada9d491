"""Keyboard cursor for the virtualised list widgets (shard table, lineage tree).

Both draw only the lines on screen, so Textual's own cursor handling does not apply; this mixin
gives them the same keys and scrolling. A widget using it provides `_line_count()`,
`_lines_visible()` (lines of content that fit, headers excluded) and `_move_cursor(line)`.
"""

from __future__ import annotations

from textual.binding import Binding

CURSOR_BINDINGS = [
    Binding("up", "cursor(-1)", "Up", show=False),
    Binding("down", "cursor(1)", "Down", show=False),
    Binding("pageup", "page(-1)", "Page up", show=False),
    Binding("pagedown", "page(1)", "Page down", show=False),
    Binding("home", "jump(0)", "First", show=False),
    Binding("end", "jump(-1)", "Last", show=False),
]


class CursorNavigation:
    _cursor: int

    def _line_count(self) -> int:
        raise NotImplementedError

    def _lines_visible(self) -> int:
        raise NotImplementedError

    def _move_cursor(self, line: int, *, announce: bool = True) -> None:
        raise NotImplementedError

    def _scroll_cursor_into_view(self) -> None:
        visible = self._lines_visible()
        top = round(self.scroll_y)  # type: ignore[attr-defined]
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)  # type: ignore[attr-defined]
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False, immediate=True)  # type: ignore[attr-defined]

    def action_cursor(self, delta: int) -> None:
        self._move_cursor(self._cursor + delta)

    def action_page(self, direction: int) -> None:
        # One line of overlap, so the line the cursor leaves stays in sight.
        self._move_cursor(self._cursor + direction * max(1, self._lines_visible() - 1))

    def action_jump(self, line: int) -> None:
        self._move_cursor(line if line >= 0 else self._line_count() - 1)
