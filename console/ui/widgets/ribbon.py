"""The key-space ribbon: [0, 2**128) as one bar, each open shard a segment proportional to its share.

Four lines: placement markers, the bar, shard labels where they fit, and a one-line summary of
how uneven the shares are. Each column of the bar covers 2**128/width keys; its colour says whether
the shards there are wider (amber) or narrower (blue) than an even split, so an uneven stream is
visible at a glance even with 10,000 shards on an 80-column terminal.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from console.keyspace.hashkeys import HASH_SPACE, HashRangeIndex
from console.topology.model import Shard
from console.ui.format import short_shard_id, summarise_shares

# (primary, alternate) background per class, so neighbouring segments stay distinguishable.
_EVEN = ("#2f6f3a", "#3d8a4a")
_WIDE = ("#9a5b00", "#b86e00")
_NARROW = ("#1f4f8f", "#2a63ad")
_HEAT = (("#2f6f3a", "#3d8a4a"), ("#9a7b00", "#b39000"), ("#a12a2a", "#bf3636"))
_DENSE_MARK = "┊"


@dataclass(frozen=True, slots=True)
class _Segment:
    """A run of bar columns owned by one shard (or a dense run of many small ones)."""

    first: int
    last: int
    shard_index: int  # index into the ribbon's open shards (owner of the run's first column)
    dense: bool


class KeySpaceRibbon(Widget):
    COMPONENT_CLASSES = {"ribbon--selected", "ribbon--marker", "ribbon--label", "ribbon--summary"}

    class ShardClicked(Message):
        def __init__(self, shard_id: str) -> None:
            super().__init__()
            self.shard_id = shard_id

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._starts: Sequence[int] = ()
        self._ends: Sequence[int] = ()
        self._ids: Sequence[str] = ()
        self._heat: dict[str, float] = {}
        self._markers: list[int] = []
        self.selected_id: str | None = None
        self._column_cache: tuple[int, list[int], list[int]] | None = None  # (width, owners, counts)
        self._summary = ""
        self._selected_index: tuple[str, int | None] | None = None  # (shard id, its position), see _index_of
        self._style_cache: dict[str, Style] = {}

    # ---- data in -------------------------------------------------------------------------------

    def set_shards(self, shards: Iterable[Shard]) -> None:
        """Open shards only are drawn; they tile the key space."""
        open_shards = sorted((s for s in shards if s.is_open), key=lambda s: s.starting_hash_key)
        self._set_ranges(
            tuple(s.starting_hash_key for s in open_shards),
            tuple(s.ending_hash_key for s in open_shards),
            tuple(s.shard_id for s in open_shards),
        )

    def set_index(self, index: HashRangeIndex, summary: str | None = None) -> None:
        """The open shards as the shard map's index holds them (already sorted: no work per poll);
        `summary`, when given, is `summarise_shares` of them, worked out off the UI loop."""
        self._set_ranges(index.starts, index.endings, index.shard_ids, summary)

    def _set_ranges(
        self, starts: Sequence[int], ends: Sequence[int], ids: Sequence[str], summary: str | None = None
    ) -> None:
        if ids == self._ids and starts == self._starts and ends == self._ends:
            return
        self._starts, self._ends, self._ids = starts, ends, ids
        self._column_cache = None
        self._selected_index = None
        self._summary = summary if summary is not None else summarise_shares(starts, ends, ids)
        self.refresh()

    def set_selected(self, shard_id: str | None) -> None:
        if shard_id != self.selected_id:
            self.selected_id = shard_id
            self.refresh()

    def set_markers(self, hash_keys: Iterable[int]) -> None:
        """Mark hash keys (from the placement panel) above the bar."""
        self._markers = list(hash_keys)
        self.refresh()

    def set_heat(self, utilisation: dict[str, float]) -> None:
        """Colour by heat (0..1 of the shard limit) instead of by share; empty dict reverts."""
        self._heat = dict(utilisation)
        self.refresh()

    def _index_of(self, shard_id: str | None) -> int | None:
        """Position of one shard among the open ones: a C-level scan, remembered until the shards
        or the selection change (a map of all 10k ids cost ~4 ms on every poll's first paint)."""
        if shard_id is None:
            return None
        cached = self._selected_index
        if cached is not None and cached[0] == shard_id:
            return cached[1]
        try:
            position: int | None = self._ids.index(shard_id)
        except ValueError:
            position = None
        self._selected_index = (shard_id, position)
        return position

    @property
    def open_shard_ids(self) -> list[str]:
        return list(self._ids)

    # ---- geometry ------------------------------------------------------------------------------

    def get_content_height(self, _container: Size, _viewport: Size, _width: int) -> int:
        return 4

    def _column_layout(self, width: int) -> tuple[list[int], list[int]]:
        """For each column: index of the shard owning its first key, and how many shards start in it."""
        if self._column_cache and self._column_cache[0] == width:
            return self._column_cache[1], self._column_cache[2]
        owners, counts = [], []
        for column in range(width):
            low = column * HASH_SPACE // width
            high = (column + 1) * HASH_SPACE // width
            owners.append(bisect.bisect_left(self._ends, low))
            counts.append(bisect.bisect_left(self._starts, high) - bisect.bisect_left(self._starts, low))
        self._column_cache = (width, owners, counts)
        return owners, counts

    def _segments(self, width: int) -> list[_Segment]:
        owners, counts = self._column_layout(width)
        segments: list[_Segment] = []
        for column in range(width):
            dense = counts[column] > 1
            owner = owners[column]
            if segments and not dense and not segments[-1].dense and segments[-1].shard_index == owner:
                segments[-1] = _Segment(segments[-1].first, column, owner, False)
            elif segments and dense and segments[-1].dense:
                segments[-1] = _Segment(segments[-1].first, column, segments[-1].shard_index, True)
            else:
                segments.append(_Segment(column, column, owner, dense))
        return segments

    def _ratio_to_even(self, segment: _Segment, width: int) -> float:
        """A segment's shards' mean share relative to an even split (1.0 = even)."""
        count = len(self._ids)
        if segment.dense:
            low = segment.first * HASH_SPACE // width
            high = (segment.last + 1) * HASH_SPACE // width
            inside = bisect.bisect_left(self._starts, high) - bisect.bisect_left(self._starts, low)
            return (high - low) / HASH_SPACE / max(1, inside) * count
        index = segment.shard_index
        return (self._ends[index] - self._starts[index] + 1) / HASH_SPACE * count

    def _background(self, segment: _Segment, width: int, alternate: int) -> str:
        shard_id = self._ids[segment.shard_index]
        if self._heat:
            utilisation = self._heat.get(shard_id, 0.0)
            palette = _HEAT[0 if utilisation < 0.5 else 1 if utilisation < 0.8 else 2]
            return palette[alternate]
        ratio = self._ratio_to_even(segment, width)
        palette = _WIDE if ratio >= 1.5 else _NARROW if ratio <= 0.67 else _EVEN
        return palette[alternate]

    def shard_at_x(self, x: int) -> str | None:
        width = self.content_region.width
        if not self._ids or not 0 <= x < width:
            return None
        owners, _ = self._column_layout(width)
        return self._ids[owners[x]]

    def _selected_columns(self, width: int) -> tuple[int, int] | None:
        index = self._index_of(self.selected_id)
        if index is None:
            return None
        first = self._starts[index] * width // HASH_SPACE
        last = self._ends[index] * width // HASH_SPACE
        return first, max(first, last)

    # ---- rendering -----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        self._style_cache.clear()
        super().notify_style_update()

    def _style(self, part: str) -> Style:
        style = self._style_cache.get(part)
        if style is None:
            style = self.rich_style + (self.get_component_rich_style(part) if part else Style())
            self._style_cache[part] = style
        return style

    def render_line(self, y: int) -> Strip:
        width = self.content_region.width
        base = self._style("")
        if width <= 0:
            return Strip.blank(0)
        if not self._ids:
            text = "no open shards yet" if y == 1 else ""
            return Strip([Segment(text.ljust(width)[:width], base)])
        if y == 0:
            return self._marker_line(width)
        if y == 1:
            return self._bar_line(width, base)
        if y == 2:
            return self._label_line(width)
        return self._summary_line(width)

    def _marker_line(self, width: int) -> Strip:
        cells = [" "] * width
        for hash_key in self._markers:
            column = min(width - 1, hash_key * width // HASH_SPACE)
            cells[column] = "▼" if cells[column] == " " else "◆"
        style = self._style("ribbon--marker")
        return Strip([Segment("".join(cells), style)])

    def _bar_line(self, width: int, base: Style) -> Strip:
        selected = self._selected_columns(width)
        selected_style = self._style("ribbon--selected")
        segments = []
        for number, segment in enumerate(self._segments(width)):
            background = self._background(segment, width, number % 2)
            style = base + Style(bgcolor=background, color="#d0d0d0")
            for column in range(segment.first, segment.last + 1):
                char = _DENSE_MARK if segment.dense else " "
                cell_style = style
                if selected and selected[0] <= column <= selected[1]:
                    cell_style = style + selected_style
                segments.append(Segment(char, cell_style))
        return Strip(Segment.simplify(segments))

    def _label_line(self, width: int) -> Strip:
        cells = [" "] * width
        selected = self._selected_columns(width)
        # The selected shard's label first, so it always wins a crowded spot.
        placed: list[tuple[int, int]] = []

        def place(label: str, first: int, last: int, force: bool) -> None:
            span = last - first + 1
            if not force and span < len(label) + 1:
                return
            start = max(0, min(width - len(label), first + (span - len(label)) // 2))
            end = start + len(label)
            if any(start < b + 1 and a - 1 < end for a, b in placed):
                return
            cells[start:end] = list(label)
            placed.append((start, end - 1))

        if selected:
            place(short_shard_id(self.selected_id or ""), selected[0], selected[1], True)
        for segment in self._segments(width):
            if not segment.dense:
                place(short_shard_id(self._ids[segment.shard_index]), segment.first, segment.last, False)
        style = self._style("ribbon--label")
        return Strip([Segment("".join(cells), style)])

    def _summary_line(self, width: int) -> Strip:
        style = self._style("ribbon--summary")
        return Strip([Segment(self.summary_text()[:width].ljust(width), style)])

    def summary_text(self) -> str:
        return self._summary

    async def _on_click(self, event: events.Click) -> None:
        shard_id = self.shard_at_x(event.x)
        if shard_id is not None:
            self.post_message(self.ShardClicked(shard_id))
