"""The fleet's table: a virtualised Line-API widget, one line per stream, keyed by stream name.

Why not DataTable: it measures every cell of every new row (1,000 streams x 12 columns on each
refill), re-measures a whole column for each updated cell that got narrower (minutes when a refresh
rewrites 1,000 rows) and renders each cell through Rich. Here a batch of new rows replaces the list
of cell texts in one go, the column widths are their longest texts, and only the lines on screen are
drawn, each as one strip: a refresh of 1,000 rows costs building their texts, and a key costs two lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from console.ui.widgets.cursor import CURSOR_BINDINGS, CursorNavigation


@dataclass(frozen=True, slots=True)
class FleetLine:
    """One stream's line: its cells' texts (printable already) and whether it is in trouble."""

    key: str
    cells: tuple[str, ...]
    trouble: bool = False
    # Each cell's width, measured once when the line is made (the table's widths are their maxima).
    widths: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "widths", tuple(cell_len(text) for text in self.cells))


class FleetTable(CursorNavigation, can_focus=True):
    """Streams one line each under a sticky header; the cursor follows its stream as the rows change."""

    COMPONENT_CLASSES = {"fleet-table--header", "fleet-table--cursor", "fleet-table--trouble"}
    DEFAULT_CSS = """
    FleetTable > .fleet-table--header { text-style: bold; background: $panel; }
    FleetTable > .fleet-table--cursor { background: $accent 30%; }
    FleetTable:focus > .fleet-table--cursor { background: $accent; color: $text; }
    FleetTable > .fleet-table--trouble { color: $error; text-style: bold; }
    """
    BINDINGS = [*CURSOR_BINDINGS, Binding("enter", "select", "Open", show=False)]

    class Highlighted(Message):
        """The user moved the cursor onto a stream (a key or a click; never the table's own moves)."""

        def __init__(self, table: FleetTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> FleetTable:
            return self.table

    class Selected(Message):
        """Enter (or a click on the cursor's line) on a stream."""

        def __init__(self, table: FleetTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> FleetTable:
            return self.table

    def __init__(self, labels: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._labels = tuple(labels)
        self._lines: list[FleetLine] = []
        self._index: dict[str, int] = {}
        self._widths = [cell_len(label) for label in self._labels]
        self._cursor = 0
        self._style_cache: dict[tuple[str, bool], Style] = {}

    # ---- data in -------------------------------------------------------------------------------

    def set_lines(self, lines: Sequence[FleetLine], *, cursor_on: str | None = None) -> None:
        """Every line, in order, at once; the cursor on `cursor_on` when shown, else on its row. The
        table is drawn again only when what it shows changed: a batch of rows below the screen costs
        no frame."""
        shown = self._on_screen()
        self._lines = list(lines)
        self._index = {line.key: row for row, line in enumerate(self._lines)}
        widths = [cell_len(label) for label in self._labels]
        if self._lines:  # each column's widest line, its widths measured when it was made
            widths = [max(label, *column) for label, column in zip(widths, zip(*(line.widths for line in self._lines)))]
        self._widths = widths
        self._cursor = self._index.get(cursor_on, self._cursor) if cursor_on is not None else self._cursor
        self._cursor = max(0, min(self._cursor, len(self._lines) - 1))
        self._update_virtual_size()
        self._scroll_cursor_into_view()
        if self._on_screen() != shown:
            self.refresh()

    def _on_screen(self) -> tuple[object, ...]:
        """What the table's drawing depends on: the lines in sight, the cursor, the scroll and the
        column widths."""
        top = round(self.scroll_y)
        in_sight = tuple(self._lines[top : top + self._lines_visible()])
        return (in_sight, self._cursor, top, round(self.scroll_x), tuple(self._widths))

    @property
    def row_count(self) -> int:
        return len(self._lines)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_key(self) -> str | None:
        return self._lines[self._cursor].key if self._lines else None

    @property
    def keys(self) -> list[str]:
        """The streams in display order."""
        return [line.key for line in self._lines]

    def line(self, key: str) -> FleetLine:
        return self._lines[self._index[key]]

    def move_cursor(self, row: int) -> None:
        """The screen's own move (the user did not choose it: no Highlighted)."""
        self._move_cursor(row, announce=False)

    # ---- cursor --------------------------------------------------------------------------------

    def _move_cursor(self, line: int, *, announce: bool = True) -> None:
        if not self._lines:
            return
        previous, self._cursor = self._cursor, max(0, min(line, len(self._lines) - 1))
        self._scroll_cursor_into_view()
        top = round(self.scroll_y)
        for row in (previous, self._cursor):
            self.refresh_line(row - top + 1)
        if announce:
            self.post_message(self.Highlighted(self, self._lines[self._cursor].key))

    def _line_count(self) -> int:
        return len(self._lines)

    def _lines_visible(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # the header is not content

    def action_select(self) -> None:
        if self._lines:
            self.post_message(self.Selected(self, self._lines[self._cursor].key))

    async def _on_click(self, event: events.Click) -> None:
        row = round(self.scroll_y) + event.y - 1
        if event.y == 0 or not 0 <= row < len(self._lines):
            return
        if row == self._cursor:
            self.action_select()
        else:
            self._move_cursor(row)

    # ---- rendering -----------------------------------------------------------------------------

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(sum(self._widths) + 2 * len(self._widths) + 1, len(self._lines) + 1)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = round(self.scroll_x)
        base = self._style("")
        if y == 0:
            labels = self._labels
            strip = self._strip(labels, [cell_len(label) for label in labels], self._style("fleet-table--header"))
        else:
            row = round(self.scroll_y) + y - 1
            if row >= len(self._lines):
                return Strip.blank(width, base)
            line = self._lines[row]
            style = base
            if row == self._cursor:
                style += self._style("fleet-table--cursor")
            if line.trouble:  # its colour on the cursor's line too: the trouble stays in sight
                trouble = self._style("fleet-table--trouble")
                style += Style(color=trouble.color, bold=trouble.bold)
            strip = self._strip(line.cells, line.widths, style)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _strip(self, texts: Sequence[str], measured: Sequence[int], style: Style) -> Strip:
        padded = " " + "  ".join(
            text + " " * (width - used) for text, used, width in zip(texts, measured, self._widths)
        )
        return Strip([Segment(padded, style)])

    def on_resize(self, _event: events.Resize) -> None:
        self._scroll_cursor_into_view()
        self.refresh()
