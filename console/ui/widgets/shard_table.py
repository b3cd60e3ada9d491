"""The live shard table: a virtualised Line-API widget keyed by shard id.

Why not DataTable: it measures every cell of every new row and re-walks all rows after each
`update_cell`, which costs ~1.4 s for 10k rows. Here a poll's result is diffed against the rows we
hold (by shard id), only the order is recomputed when something moved, and only the visible lines
are ever rendered — so a refresh touching 1% of 10k shards costs a dictionary diff, not a rebuild.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterable
from itertools import compress
from operator import attrgetter, ne
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from console.topology.model import Shard
from console.ui.format import short_shard_id
from console.ui.source import ShardListing
from console.ui.widgets.cursor import CURSOR_BINDINGS, CursorNavigation
from console.ui.widgets.shard_columns import COLUMN_BY_KEY, LAG_COLUMN, Column, ShardHeat, columns_for, fit_columns

_STALE = Style(dim=True, italic=True)
_EMPTY = Style(italic=True)

SORTABLE = ("start", "shard", "state", "share", "throughput")
_SHARD_ID = attrgetter("shard_id")
_ENDING = attrgetter("ending_sequence_number")
THREADED_SORT_ROWS = 50_000  # a full sort of more rows runs off the UI loop (10k sort inline in ~15 ms;
# a thread costs more in GIL hand-overs than it saves below that)


class ShardTable(CursorNavigation, can_focus=True):
    """Shards of one stream, one line each, with a sticky header row, sorting and a text filter."""

    COMPONENT_CLASSES = {
        "shard-table--header",
        "shard-table--sorted",
        "shard-table--cursor",
        "shard-table--closed",
        "shard-table--hot",
    }

    BINDINGS = [
        *CURSOR_BINDINGS,
        Binding("o", "cycle_sort", "Sort", id="table.sort"),
        Binding("O", "reverse_sort", "Reverse sort", show=False, id="table.reverse"),
    ]

    class Highlighted(Message):
        """The cursor moved onto a shard (keyboard, mouse, or a selection made elsewhere)."""

        def __init__(self, table: ShardTable, shard_id: str) -> None:
            super().__init__()
            self.table = table
            self.shard_id = shard_id

        @property
        def control(self) -> ShardTable:
            return self.table

    class SortChanged(Message):
        def __init__(self, column: str, reverse: bool) -> None:
            super().__init__()
            self.column = column
            self.reverse = reverse

    def __init__(
        self, *, key_format: str = "decimal", name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns = columns_for(key_format)
        self._shards: dict[str, Shard] = {}
        self._endings: dict[str, str | None] = {}  # shard id -> ending sequence number, for the diff
        self._heat: dict[str, ShardHeat] = {}
        self.heat_stale = False  # the sampler stopped: the Rate column shows its last figures, dimmed
        # Shown shards (filtered) in ascending sort-key order, with their keys for bisecting;
        # with a reverse sort, row r shows _ascending[-1 - r].
        self._ascending: list[str] = []
        self._ascending_keys: list[Any] = []
        self._position_cache: dict[str, int] | None = {}  # shard id -> display row; None: rebuild on use
        self._left_behind: dict[str, Shard] = {}
        self._cursor = 0
        self._selected_id: str | None = None
        self._style_cache: dict[tuple[str, bool], Style] = {}
        self._columns_cache: tuple[tuple[int, bool, bool, bool], tuple[Column, ...]] | None = None
        self.sort_column = "start"
        self.sort_reverse = False
        self.filter_text = ""
        self.show_throughput = False
        self._lag: dict[str, str] = {}  # shard id -> lag text; empty: no Lag column

    # ---- data in -------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._ascending)

    @property
    def shard_ids(self) -> list[str]:
        """Shard ids in display order (filtered and sorted)."""
        return list(reversed(self._ascending)) if self.sort_reverse else list(self._ascending)

    @property
    def selected_shard_id(self) -> str | None:
        return self._selected_id

    def shard(self, shard_id: str) -> Shard | None:
        return self._shards.get(shard_id)

    def _shard_at(self, row: int) -> str:
        return self._ascending[-1 - row] if self.sort_reverse else self._ascending[row]

    def apply(self, shards: Iterable[Shard]) -> tuple[set[str], set[str], set[str]]:
        """Take a fresh shard listing; returns (added, removed, changed) shard ids.

        A shard's id, range and parents never change in Kinesis; only its ending sequence number
        appears when it closes. So the diff compares that alone, unchanged rows are not touched,
        rows that came, went or moved are re-inserted by bisection, and only visible lines repaint.
        """
        added, removed, changed, moved, full = self._take(shards)
        if full:
            self._install(self._sorted_keyed())
        else:
            self._patch(added, removed, changed, moved)
        self._left_behind = {}
        return added, removed, changed

    async def apply_async(self, shards: Iterable[Shard]) -> tuple[set[str], set[str], set[str]]:
        """`apply`, but a full re-sort of a big listing (the first load of 10k shards) runs in a
        thread so the UI loop keeps answering."""
        added, removed, changed, moved, full = self._take(shards)
        await asyncio.sleep(0)  # the diff and the re-sort are separate turns of the UI loop
        if full and len(self._shards) > THREADED_SORT_ROWS:
            snapshot = self._shards
            keyed = await asyncio.to_thread(self._sorted_keyed)
            if self._shards is snapshot:
                self._install(keyed)
            else:  # another listing arrived meanwhile and was applied: it wins
                return added, removed, changed
        elif full:
            self._install(self._sorted_keyed())
        else:
            self._patch(added, removed, changed, moved)
        self._left_behind = {}
        return added, removed, changed

    def _take(self, shards: Iterable[Shard]) -> tuple[set[str], set[str], set[str], set[str], bool]:
        # The diff runs as C-level maps and set operations (~2 ms at 10k shards, a Python loop
        # over them costs twice that): a shard has changed when its ending sequence number differs
        # from the one held for the same id.
        if isinstance(shards, ShardListing):  # worked out off the UI loop
            ids, endings, fresh, fresh_endings = shards.ids, shards.endings, shards.by_id, shards.ending_by_id
        else:
            shards = shards if isinstance(shards, (list, tuple)) else list(shards)
            ids = list(map(_SHARD_ID, shards))
            endings = list(map(_ENDING, shards))
            fresh = dict(zip(ids, shards))
            fresh_endings = dict(zip(ids, endings))
        old = self._shards
        added = fresh.keys() - old.keys()
        removed = old.keys() - fresh.keys()
        endings_before = map(self._endings.get, ids)  # None for a new shard, as for an open one
        changed = {sid for sid in compress(ids, map(ne, endings, endings_before)) if sid in old}
        self._shards = fresh  # never mutated here: may be the listing's own map
        self._endings = fresh_endings
        self._left_behind = old  # the rows as they were sorted, to find the leaving ones by key
        sort_key = COLUMN_BY_KEY[self.sort_column].sort_key
        heat = self._heat
        moved = {
            sid
            for sid in changed
            if self.filter_text or sort_key(old[sid], heat.get(sid)) != sort_key(fresh[sid], heat.get(sid))
        }
        full = len(added) + len(removed) + len(moved) > max(64, len(fresh) // 4)
        return added, removed, changed, moved, full

    def _patch(self, added: set[str], removed: set[str], changed: set[str], moved: set[str]) -> None:
        if added or removed or moved:
            self._reinsert(removed | moved, added | moved)
        self._refresh_rows(changed - moved)

    def _reinsert(self, leaving: set[str], entering: set[str]) -> None:
        """Take `leaving` out of the order and put `entering` (those that pass the filter) back in."""
        if leaving:
            # Delete by index, from the back (each a memmove), rather than rebuild both 10k lists.
            order = self._ascending
            previous = self._left_behind
            at = [
                i
                for i in (self._order_index(sid, previous[sid]) for sid in leaving if sid in previous)
                if i is not None
            ]
            for index in sorted(at, reverse=True):
                del order[index]
                del self._ascending_keys[index]
        column = COLUMN_BY_KEY[self.sort_column]
        for sid in entering:
            shard = self._shards.get(sid)
            if shard is None or not self._matches(shard):
                continue
            key = column.sort_key(shard, self._heat.get(sid))
            position = bisect.bisect_left(self._ascending_keys, key)
            self._ascending_keys.insert(position, key)
            self._ascending.insert(position, sid)
        self._after_order_change()

    def set_heat(self, heat: dict[str, ShardHeat]) -> None:
        """Show a throughput column (from the heat panel); an empty dict hides it again."""
        if self.heat_stale:
            self.heat_stale = False
            self._update_virtual_size()
            self.refresh()
        previous, self._heat = self._heat, dict(heat)
        show = bool(self._heat)
        if show != self.show_throughput:
            self.show_throughput = show
            self._update_virtual_size()
            self.refresh()
        if self.sort_column == "throughput":
            self._reorder()
        else:
            self._refresh_rows(
                {
                    sid
                    for sid in self._heat.keys() | previous.keys()
                    # `is` first: a heat view of 10,000 shards hands the unchanged figures back as they were.
                    if (figures := self._heat.get(sid)) is not (before := previous.get(sid)) and figures != before
                }
            )

    def set_lag(self, lag: dict[str, str]) -> None:
        """Show a Lag column (texts per shard, from the consumers' leases); an empty dict hides it."""
        previous, self._lag = self._lag, dict(lag)
        if bool(previous) != bool(self._lag):
            self._columns_cache = None
            self._update_virtual_size()
            self.refresh()
        else:
            self._refresh_rows(
                {sid for sid in self._lag.keys() | previous.keys() if self._lag.get(sid) != previous.get(sid)}
            )

    def set_heat_stale(self) -> None:
        """The sampler stopped (its panel was hidden): keep the last figures, dimmed, under
        "Rate (stale)", rather than let old rates pass for live ones. The next `set_heat` revives it."""
        if self._heat and not self.heat_stale:
            self.heat_stale = True
            self._update_virtual_size()
            self.refresh()

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self._reorder()

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        if column not in COLUMN_BY_KEY:
            raise ValueError(f"unknown column {column!r}")
        if reverse is None:
            reverse = (not self.sort_reverse) if column == self.sort_column else False
        self.sort_column, self.sort_reverse = column, reverse
        self._reorder()
        self.post_message(self.SortChanged(column, reverse))

    def select(self, shard_id: str, *, announce: bool = False) -> bool:
        """Move the cursor to a shard (e.g. chosen on the tree); False if it is filtered out or unknown."""
        if shard_id not in self._shards:
            return False
        self._selected_id = shard_id
        position = self._position.get(shard_id)
        if position is None:
            self.refresh()
            return False
        self._move_cursor(position, announce=announce)
        return True

    # ---- ordering ------------------------------------------------------------------------------

    def _matches(self, shard: Shard) -> bool:
        if not self.filter_text:
            return True
        state = "open" if shard.is_open else "closed"
        haystack = " ".join(
            (
                shard.shard_id.lower(),
                short_shard_id(shard.shard_id),
                state,
                *(p.lower() for p in shard.parents),
                *(short_shard_id(p) for p in shard.parents),
            )
        )
        return all(word in haystack for word in self.filter_text.split())

    def _reorder(self) -> None:
        self._install(self._sorted_keyed())

    def _sorted_keyed(self) -> tuple[list[Any], list[str]]:
        """Sort keys and shard ids of the shown shards, ascending. Pure: safe to run in a thread."""
        column = COLUMN_BY_KEY[self.sort_column]
        heat = self._heat
        keyed = sorted(
            (column.sort_key(shard, heat.get(sid)), sid) for sid, shard in self._shards.items() if self._matches(shard)
        )
        return [key for key, _ in keyed], [sid for _, sid in keyed]

    def _install(self, keyed: tuple[list[Any], list[str]]) -> None:
        self._ascending_keys, self._ascending = keyed
        self._after_order_change()
        self.refresh()

    @property
    def _position(self) -> dict[str, int]:
        """Shard id -> display row, built when first asked for after the order changed (a 1% refresh
        that repaints only visible rows never needs all 10k)."""
        if self._position_cache is None:
            count = len(self._ascending)
            if self.sort_reverse:
                self._position_cache = {sid: count - 1 - index for index, sid in enumerate(self._ascending)}
            else:
                self._position_cache = {sid: index for index, sid in enumerate(self._ascending)}
        return self._position_cache

    def _order_index(self, shard_id: str, shard: Shard) -> int | None:
        """Where `shard` sits in the ascending order, found by bisecting its sort key (keys end in
        the shard id, so they are unique); None when it is not shown (filtered out)."""
        key = COLUMN_BY_KEY[self.sort_column].sort_key(shard, self._heat.get(shard_id))
        index = bisect.bisect_left(self._ascending_keys, key)
        if index < len(self._ascending) and self._ascending[index] == shard_id:
            return index
        return None

    def _after_order_change(self) -> None:
        count = len(self._ascending)
        self._position_cache = None
        self._update_virtual_size()
        # Keep the selection on the same shard across refreshes, wherever it moved to.
        selected_id = self._selected_id
        selected = self._shards.get(selected_id) if selected_id is not None else None
        index = self._order_index(selected_id, selected) if selected_id is not None and selected is not None else None
        if index is not None:
            self._cursor = count - 1 - index if self.sort_reverse else index
        elif count:
            self._cursor = min(self._cursor, count - 1)
            if self._selected_id not in self._shards:
                self._selected_id = self._shard_at(self._cursor)
                self.post_message(self.Highlighted(self, self._selected_id))
        else:
            self._cursor = 0
        self._scroll_cursor_into_view()
        self.refresh()

    def _update_virtual_size(self) -> None:
        size = Size(self._table_width(), len(self._ascending) + 1)
        old = self.virtual_size
        if size == old:
            return
        visible = self.scrollable_content_region.height
        if (
            self.is_mounted
            and old.width == size.width
            and self.show_vertical_scrollbar
            and old.height > visible
            and size.height > visible
        ):
            # Same scrollbars before and after: skip the screen-wide layout pass a virtual_size
            # change causes (~50 ms at 10k rows) and tell the scrollbar directly.
            self.set_reactive(ShardTable.virtual_size, size)
            self.vertical_scrollbar.window_virtual_size = size.height
            if self.scroll_y > self.max_scroll_y:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        else:
            self.virtual_size = size

    def _visible_columns(self) -> tuple[Column, ...]:
        """The columns that fit the widget's width (fit_columns); the Lag column only while lag is known."""
        key = (self.size.width, self.show_throughput, bool(self._lag), self.heat_stale)
        if self._columns_cache is not None and self._columns_cache[0] == key:
            return self._columns_cache[1]
        columns = (self._columns if self.show_throughput else self._columns[:-1]) + ((LAG_COLUMN,) if self._lag else ())
        width = self.scrollable_content_region.width if self.is_mounted else 0
        if width and self.heat_stale:
            # Old rates are worth less than any other column: shown only where they push none out
            # and narrow none (shard ids cut to '#n' to make room count as pushed).
            without = tuple(c for c in columns if c.key != "throughput")

            def shape(cols: tuple[Column, ...]) -> list[tuple[str, int]]:
                return [(c.key, c.width) for c in cols if c.key != "throughput"]

            if shape(fit_columns(columns, width)) != shape(fit_columns(without, width)):
                columns = without
        if width:
            columns = fit_columns(columns, width)
            self._columns_cache = (key, columns)
        return columns

    def _table_width(self) -> int:
        return sum(column.width + 1 for column in self._visible_columns()) + 1

    def _refresh_rows(self, shard_ids: Iterable[str]) -> None:
        top = round(self.scroll_y)
        height = self.size.height
        shard_ids = shard_ids if isinstance(shard_ids, (set, list, tuple)) else list(shard_ids)
        if self._position_cache is None and len(shard_ids) <= 256:
            # A few rows: bisect for each rather than build the 10k-entry position map.
            count = len(self._ascending)
            for sid in shard_ids:
                shard = self._shards.get(sid)
                index = self._order_index(sid, shard) if shard is not None else None
                if index is not None:
                    position = count - 1 - index if self.sort_reverse else index
                    if top <= position < top + height:
                        self.refresh_line(position - top + 1)
            return
        positions = self._position
        for sid in shard_ids:
            found = positions.get(sid)
            if found is not None and top <= found < top + height:
                self.refresh_line(found - top + 1)

    # ---- cursor --------------------------------------------------------------------------------

    def _move_cursor(self, row: int, *, announce: bool = True) -> None:
        if not self._ascending:
            return
        row = max(0, min(row, len(self._ascending) - 1))
        previous = self._cursor
        self._cursor = row
        shard_id = self._shard_at(row)
        changed = shard_id != self._selected_id
        self._selected_id = shard_id
        self._scroll_cursor_into_view()
        top = round(self.scroll_y)
        for position in (previous, row):
            self.refresh_line(position - top + 1)
        if changed or announce:
            self.post_message(self.Highlighted(self, shard_id))

    def _line_count(self) -> int:
        return len(self._ascending)

    def _lines_visible(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # the header row is not content

    def action_cycle_sort(self) -> None:
        available = [c for c in SORTABLE if c != "throughput" or self.show_throughput]
        following = (
            available[(available.index(self.sort_column) + 1) % len(available)]
            if self.sort_column in available
            else available[0]
        )
        self.sort_by(following, reverse=False)
        self.notify(f"sorted by {COLUMN_BY_KEY[following].label.lower()}", timeout=2)

    def action_reverse_sort(self) -> None:
        self.sort_by(self.sort_column, reverse=not self.sort_reverse)

    async def _on_click(self, event: events.Click) -> None:
        if event.y == 0:
            column = self._column_at(event.x + round(self.scroll_x))
            if column is not None:
                self.sort_by(column.key)
            return
        row = round(self.scroll_y) + event.y - 1
        if 0 <= row < len(self._ascending):
            self._move_cursor(row, announce=True)

    def _column_at(self, x: int) -> Column | None:
        left = 1
        for column in self._visible_columns():
            if left <= x < left + column.width + 1:
                return column
            left += column.width + 1
        return None

    # ---- rendering -----------------------------------------------------------------------------

    @property
    def empty_message(self) -> str | None:
        """What an empty table says to do (None: it has rows)."""
        if self._ascending:
            return None
        if self.filter_text:
            return f"No shard matches {self.filter_text!r}: edit the filter (/), or escape in it to clear it."
        if not self._shards:
            return "No shards yet: waiting for the first poll (r refreshes, p picks another stream)."
        return None

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = round(self.scroll_x)
        base = self._style("")
        if y == 0:
            strip = self._header_strip()
        else:
            row = round(self.scroll_y) + y - 1
            if row >= len(self._ascending):
                message = self.empty_message if y == 2 else None
                if message:
                    return Strip([Segment(f" {message}", base + _EMPTY)]).crop_extend(0, width, base)
                return Strip.blank(width, base)
            strip = self._row_strip(row)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _cells(self, texts: list[str], style: Style) -> list[Segment]:
        segments = [Segment(" ", style)]
        stale = style + _STALE if self.heat_stale else style
        for column, text in zip(self._visible_columns(), texts):
            if len(text) > column.width:
                text = text[: column.width - 1] + "…"
            cell = text.rjust(column.width) if column.align_right else text.ljust(column.width)
            segments.append(Segment(cell + " ", stale if column.key == "throughput" else style))
        return segments

    def _header_strip(self) -> Strip:
        labels = []
        for column in self._visible_columns():
            label = "Rate (stale)" if column.key == "throughput" and self.heat_stale else column.label
            if column.key == self.sort_column:
                label = f"{label}{'▼' if self.sort_reverse else '▲'}"
            labels.append(label)
        return Strip(self._cells(labels, self._style("shard-table--header")))

    def _row_strip(self, row: int) -> Strip:
        shard_id = self._shard_at(row)
        shard = self._shards[shard_id]
        heat = self._heat.get(shard_id)
        style = self._style("")
        if not shard.is_open:
            style += self._style("shard-table--closed")
        if heat is not None and heat.utilisation >= 0.8 and not self.heat_stale:
            style += self._style("shard-table--hot")
        if row == self._cursor:
            style += self._style("shard-table--cursor")
        texts = [
            self._lag.get(shard_id, "-") if column is LAG_COLUMN else column.text(shard, heat)
            for column in self._visible_columns()
        ]
        return Strip(self._cells(texts, style))

    def on_resize(self, _event: events.Resize) -> None:
        self._update_virtual_size()
        self._scroll_cursor_into_view()
        self.refresh()
