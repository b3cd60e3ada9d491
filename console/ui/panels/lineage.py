"""Lineage: closed parents above their children, open shards marked.

A Line-API widget fed a `console.topology.lineage.Lineage`: the tree is flattened to one entry per line and
only the visible lines are rendered, so a 10,000-shard stream opens as fast as a 4-shard one (a
Textual Tree of 10k nodes takes seconds to build). A merge's child sits under its first listed
parent and appears as a reference line under the other one. Enter or space folds a subtree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive, var
from textual.strip import Strip

from console.topology.lineage import OPEN, Lineage, LineageNode
from console.ui.format import format_share, short_shard_id
from console.ui.source import StreamView
from console.ui.widgets.cursor import CURSOR_BINDINGS, CursorNavigation
from console.words import counted

if TYPE_CHECKING:
    from rich.text import Text


@dataclass(frozen=True, slots=True)
class TreeLine:
    shard_id: str
    prefix: str  # guide characters drawn before the marker
    reference_to: str | None = None  # set on a merge child's second appearance: its home parent


def home_parent(lineage: Lineage, shard_id: str) -> str | None:
    """A merged child is drawn under its first present parent (as console.topology.lineage renders it)."""
    for parent in lineage.nodes[shard_id].shard.parents:
        if parent in lineage.nodes and parent != shard_id:
            return parent
    return None


def flatten(lineage: Lineage, folded: set[str]) -> list[TreeLine]:
    """Depth-first, roots and children in key-space order; iterative (chains can be deep)."""
    lines: list[TreeLine] = []
    roots = [sid for sid in lineage.roots]
    placed = set(roots)
    stack: list[tuple[str, str, str, str | None]] = [(sid, "", "", None) for sid in reversed(roots)]
    while stack:
        shard_id, prefix, child_prefix, reference_to = stack.pop()
        lines.append(TreeLine(shard_id, prefix, reference_to))
        if reference_to is not None or shard_id in folded:
            continue
        children = lineage.nodes[shard_id].children
        pending: list[tuple[str, str, str, str | None]] = []
        for position, child in enumerate(children):
            last = position == len(children) - 1
            glyph = "└─ " if last else "├─ "
            below = child_prefix + ("   " if last else "│  ")
            home = home_parent(lineage, child)
            if home != shard_id or child in placed:
                pending.append((child, child_prefix + glyph, below, home or shard_id))
            else:
                placed.add(child)
                pending.append((child, child_prefix + glyph, below, None))
        stack.extend(reversed(pending))
    return lines


class LineageTree(CursorNavigation, can_focus=True):
    stream: reactive[str | None] = reactive(None, init=False)  # the app's (data_bind)
    view: var[StreamView | None] = var(None, init=False, always_update=True)  # the app's (data_bind)

    COMPONENT_CLASSES = {
        "lineage-tree--cursor",
        "lineage-tree--closed",
        "lineage-tree--open-marker",
        "lineage-tree--guide",
    }

    BINDINGS = [
        *CURSOR_BINDINGS,
        Binding("enter,space", "fold", "Fold", id="lineage.fold"),
    ]

    class ShardHighlighted(Message):
        def __init__(self, tree: LineageTree, shard_id: str) -> None:
            super().__init__()
            self.tree = tree
            self.shard_id = shard_id

        @property
        def control(self) -> LineageTree:
            return self.tree

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lineage: Lineage | None = None
        self.lines: list[TreeLine] = []
        self._line_of: dict[str, int] = {}  # shard id -> its main line
        self._folded: set[str] = set()
        self._cursor = 0
        self._selected_id: str | None = None
        self._style_cache: dict[tuple[str, bool], Style] = {}
        self._shown = False
        self._waiting: Lineage | None = None  # the latest lineage, drawn when the tree is next shown

    # ---- data in -------------------------------------------------------------------------------

    def show_lineage(self, lineage: Lineage) -> None:
        """A poll's lineage: drawn now while the tree is on screen, else when it is next shown (a
        10k-shard stream must not pay for a tree nobody looks at)."""
        if self._shown:
            self._waiting = None
            self.apply(lineage)
        else:
            self._waiting = lineage

    def on_show(self) -> None:
        self._shown = True
        if self._waiting is not None:
            lineage, self._waiting = self._waiting, None
            self.apply(lineage)
            if self._selected_id is not None:
                self.select_shard(self._selected_id)

    def on_hide(self) -> None:
        self._shown = False

    def watch_view(self, view: StreamView | None) -> None:
        """A poll's lineage, once it is built (a poll that found the same shards keeps the same one)."""
        lineage = view.lineage if view is not None else None
        if lineage is not None and lineage is not self.lineage and lineage is not self._waiting:
            self.show_lineage(lineage)

    def watch_stream(self, old: str | None, new: str | None) -> None:
        """Another stream: nothing of the previous one stays drawn or waiting to be drawn."""
        if new != old:
            self._waiting = None
            self.apply(Lineage.build([]))

    def apply(self, lineage: Lineage) -> None:
        self.lineage = lineage
        self._folded &= lineage.nodes.keys()
        self._reflow()

    def _reflow(self) -> None:
        if self.lineage is None:
            return
        self.lines = flatten(self.lineage, self._folded)
        self._line_of = {line.shard_id: index for index, line in enumerate(self.lines) if line.reference_to is None}
        self.virtual_size = Size(max((len(line.prefix) + 60 for line in self.lines[:2000]), default=0), len(self.lines))
        # The cursor stays on the selected shard across polls, wherever its line moved.
        if self._selected_id in self._line_of:
            self._cursor = self._line_of[self._selected_id]
        else:
            self._cursor = min(self._cursor, max(0, len(self.lines) - 1))
        self._scroll_cursor_into_view()
        self.refresh()

    def line_text(self, shard_id: str) -> str:
        index = self._line_of.get(shard_id)
        return self._text(self.lines[index]).plain if index is not None else ""

    def children_of(self, shard_id: str) -> list[str]:
        """The shard ids drawn directly under `shard_id` (references included)."""
        index = self._line_of.get(shard_id)
        if index is None:
            return []
        depth = len(self.lines[index].prefix)
        children = []
        for line in self.lines[index + 1 :]:
            if len(line.prefix) <= depth:
                break
            if len(line.prefix) == depth + 3 or (depth == 0 and len(line.prefix) == 3):
                children.append(line.shard_id)
        return children

    @property
    def selected_shard_id(self) -> str | None:
        return self._selected_id

    def select_shard(self, shard_id: str) -> bool:
        if self._waiting is not None:  # selected when the waiting lineage is drawn
            self._selected_id = shard_id
            return shard_id in self._waiting.nodes
        if self.lineage is None or shard_id not in self.lineage.nodes:
            return False
        self._selected_id = shard_id
        hidden_under = [sid for sid in self.lineage.ancestors(shard_id) if sid in self._folded]
        if hidden_under:
            self._folded -= set(hidden_under)
            self._reflow()
        self._move_cursor(self._line_of[shard_id], announce=False)
        return True

    # ---- cursor --------------------------------------------------------------------------------

    def _move_cursor(self, line: int, *, announce: bool = True) -> None:
        if not self.lines:
            return
        line = max(0, min(line, len(self.lines) - 1))
        previous, self._cursor = self._cursor, line
        shard_id = self.lines[line].shard_id
        changed = shard_id != self._selected_id
        self._selected_id = shard_id
        self._scroll_cursor_into_view()
        top = round(self.scroll_y)
        self.refresh_line(previous - top)
        self.refresh_line(line - top)
        if announce and changed:
            self.post_message(self.ShardHighlighted(self, shard_id))

    def _line_count(self) -> int:
        return len(self.lines)

    def _lines_visible(self) -> int:
        return max(1, self.scrollable_content_region.height)

    def action_fold(self) -> None:
        if not self.lines:
            return
        line = self.lines[self._cursor]
        if line.reference_to is not None or self.lineage is None or not self.lineage.nodes[line.shard_id].children:
            return
        self._folded ^= {line.shard_id}
        self._reflow()

    async def _on_click(self, event: events.Click) -> None:
        line = round(self.scroll_y) + event.y
        if 0 <= line < len(self.lines):
            if line == self._cursor and event.x + round(self.scroll_x) < len(self.lines[line].prefix) + 2:
                self.action_fold()
            self._move_cursor(line)

    # ---- rendering -----------------------------------------------------------------------------

    def _text(self, line: TreeLine) -> Text:
        from rich.text import Text

        assert self.lineage is not None  # a line is drawn only from a lineage
        node: LineageNode = self.lineage.nodes[line.shard_id]
        text = Text(no_wrap=True)
        text.append(line.prefix, style=self._style("lineage-tree--guide"))
        if line.reference_to is not None:
            text.append(
                f"↳ {line.shard_id}  (merged; shown under {short_shard_id(line.reference_to)})", style="italic dim"
            )
            return text
        shard = node.shard
        is_open = node.state == OPEN
        folded = line.shard_id in self._folded
        text.append(
            "▶ " if folded else "● " if is_open else "○ ",
            style=self._style("lineage-tree--open-marker") if is_open else "dim",
        )
        text.append(shard.shard_id, style="bold" if is_open else "")
        text.append(f"  {'open' if is_open else 'closed'} {format_share(shard.share)}")
        if len(shard.parents) == 2:
            text.append(f"  merge of {' + '.join(short_shard_id(p) for p in shard.parents)}", style="italic")
        if node.missing_parents:
            text.append(
                f"  (parent {', '.join(short_shard_id(p) for p in node.missing_parents)} aged out)", style="dim"
            )
        if folded:
            text.append(f"  ({counted(len(node.children), 'child', 'children')} folded)", style="dim")
        if not is_open:
            text.stylize(self._style("lineage-tree--closed"))
        return text

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self._style("")
        index = round(self.scroll_y) + y
        if index >= len(self.lines) or self.lineage is None:
            return Strip.blank(width, base)
        text = self._text(self.lines[index])
        if index == self._cursor:
            text.stylize(self._style("lineage-tree--cursor"))
        segments = [Segment(s.text, base + s.style if s.style else base) for s in text.render(self.app.console)]
        scroll_x = round(self.scroll_x)
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)
