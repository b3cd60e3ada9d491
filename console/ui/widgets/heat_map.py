"""The heat map: shards (rows, in the order given) by seconds (columns, the last five minutes, newest
at the right), each cell coloured by how much of the shard's write limit (1 MiB/s or 1,000
records/s, whichever is nearer) that second used.

A cell shows one second, or the busiest of several when the terminal is narrower than five
minutes; a dot is a second sampled with no traffic (idle), a blank one a second not sampled yet.
When the shards are read in turn (a stream with more shards than a second's reads), each row ends
where its shard was last read, with an age column saying how long ago: the seconds since then are
blank, not known yet, rather than idle.
Only the visible lines are rendered (a line-API ScrollView), so many shards cost what fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.heat.rotation import age_text
from console.ui.format import format_rate, short_shard_id

MAP_SECONDS = 300  # five minutes
LABEL_WIDTH = 25  # "▶ #12345 x 1.2kr/s 100% "
AGE_WIDTH = 5  # " 12s " after the label, when shards are read in turn
# Rows the map keeps on screen however short the terminal (the panel scrolls what is below it):
# at 80x24 a stream of up to this many shards shows them all.
MIN_ROWS = 8
# (upper bound of utilisation, colour): green while calm, yellow from 50%, orange from 80%, red at the limit.
LEVELS: tuple[tuple[float, str], ...] = (
    (0.1, "#2d6a4f"),
    (0.3, "#40916c"),
    (0.5, "#74c69d"),
    (0.8, "#e9c46a"),
    (1.0, "#f4a261"),
    (math.inf, "#e63946"),
)
IDLE = Style(color="grey42")
NOT_SAMPLED = Style()
_LEVEL_STYLES = tuple((bound, Style(color=colour)) for bound, colour in LEVELS)


def level_style(utilisation: float) -> Style:
    for bound, style in _LEVEL_STYLES:
        if utilisation < bound:
            return style
    return _LEVEL_STYLES[-1][1]


@dataclass(frozen=True, slots=True)
class HeatRow:
    shard_id: str
    is_open: bool
    records_per_s: float  # now (the last few seconds)
    utilisation: float  # now
    seconds: tuple[float, ...]  # utilisation per second, oldest first, ending now (or at `sampled_at`)
    sampled_at: float | None = None  # read up to then (epoch seconds); None: not read yet


def seconds_per_cell(cells: int, seconds: int = MAP_SECONDS) -> int:
    """How many seconds one column shows so that `seconds` fit in `cells` columns."""
    return max(1, math.ceil(seconds / max(1, cells)))


def cell_values(
    series: Sequence[float], cells: int, per_cell: int, seconds: int = MAP_SECONDS, unknown: int = 0
) -> list[float | None]:
    """The busiest second of each column, newest column last; None where nothing was sampled yet.
    `unknown`: the series ends that many seconds before now (the shard was last read then)."""
    columns = min(cells, math.ceil(seconds / per_cell))
    values: list[float | None] = []
    known = len(series)
    end = known + max(0, unknown)
    for column in range(columns):
        high = end - (columns - 1 - column) * per_cell
        low = high - per_cell
        window = series[max(0, low) : max(0, min(high, known))]
        values.append(max(window) if window else None)
    return values


class HeatMap(ScrollView, can_focus=False):
    """Rows of shards by columns of seconds; `show(rows, selected)` redraws it."""

    DEFAULT_CSS = """
    HeatMap { overflow-x: hidden; }
    """

    class RowClicked(Message):
        def __init__(self, shard_id: str) -> None:
            super().__init__()
            self.shard_id = shard_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Sequence[HeatRow] = ()
        self.selected: str | None = None
        self.ages = False  # shards are read in turn: rows end at their last read and show its age
        self.now = 0.0  # epoch seconds the ages are counted to

    def show(
        self,
        rows: Sequence[HeatRow],
        selected: str | None,
        position: int | None = None,
        *,
        now: float = 0.0,
        ages: bool = False,
    ) -> None:
        """Draw `rows` (any sequence: rows may be made only when drawn), `selected` at `position`
        (found among the rows when not given)."""
        self.rows = rows
        self.now, self.ages = now, ages
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        lines = min(len(rows), MIN_ROWS) + 1  # and the time axis
        if self.styles.min_height is None or self.styles.min_height.value != lines:
            self.styles.min_height = lines
        self.select(selected, position)

    def select(self, selected: str | None, position: int | None = None) -> None:
        """Move the marker (and the view, when it is off screen) to another row; the rows stay."""
        self.selected = selected
        if selected is not None and position is None:
            position = next((i for i, row in enumerate(self.rows) if row.shard_id == selected), None)
        if position is not None:
            self.scroll_to_region_of_row(position)
        self.refresh()

    def scroll_to_region_of_row(self, position: int) -> None:
        line = position + 1  # below the time axis
        top, height = round(self.scroll_y), self.size.height
        if line < top + 1:
            self.scroll_to(y=max(0, line - 1), animate=False)
        elif height and line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False)

    @property
    def label_width(self) -> int:
        return LABEL_WIDTH + (AGE_WIDTH if self.ages else 0)

    @property
    def cells(self) -> int:
        return max(1, self.scrollable_content_region.width - self.label_width)

    @property
    def per_cell(self) -> int:
        return seconds_per_cell(self.cells)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            return Strip(
                self._axis(),
            ).crop_extend(0, width, base)
        index = round(self.scroll_y) + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        return Strip(self._row(self.rows[index])).crop_extend(0, width, base)

    def _axis(self) -> list[Segment]:
        """'shard  rec/s  now' over the labels; minute marks over the cells, 'now' at the right."""
        per_cell = self.per_cell
        columns = min(self.cells, math.ceil(MAP_SECONDS / per_cell))
        axis = [" "] * columns
        for minutes in range(MAP_SECONDS // 60, 0, -1):
            column = columns - 1 - (minutes * 60) // per_cell
            mark = f"-{minutes}m"
            if column >= 0 and column + len(mark) <= columns - 4:
                axis[column : column + len(mark)] = mark
        axis[columns - 3 :] = "now"
        dim = Style(dim=True)
        age = f"{'age':>4} " if self.ages else ""
        return [Segment(f"  {'shard':<8} {'rec/s':>7} {'now':>4} {age}", dim), Segment("".join(axis), dim)]

    def _row(self, row: HeatRow) -> list[Segment]:
        selected = row.shard_id == self.selected
        label = (
            f"{'▶' if selected else ' '} {short_shard_id(row.shard_id):<7}{' ' if row.is_open else 'x'}"
            f"{format_rate(row.records_per_s, ''):>7} {row.utilisation:4.0%} "
        )
        label_style = Style(bold=True, reverse=True) if selected else Style()
        segments = [Segment(label[:LABEL_WIDTH].ljust(LABEL_WIDTH), label_style)]
        unknown = 0
        if self.ages:
            age = None if row.sampled_at is None else self.now - row.sampled_at
            stale = age is None or age >= 2
            segments.append(Segment(f"{age_text(age):>4} ", Style(dim=stale, bold=not stale)))
            unknown = 0 if row.sampled_at is None else max(0, int(self.now) - int(row.sampled_at))
        # One segment per run of cells alike (a row is mostly runs): fewer segments to style and crop.
        run_char, run_style, run = " ", NOT_SAMPLED, 0
        for value in cell_values(row.seconds, self.cells, self.per_cell, unknown=unknown):
            if value is None:
                char, style = " ", NOT_SAMPLED
            elif value <= 0:
                char, style = "·", IDLE
            else:
                char, style = "█", level_style(value)
            if style is run_style and char == run_char:
                run += 1
                continue
            if run:
                segments.append(Segment(run_char * run, run_style))
            run_char, run_style, run = char, style, 1
        if run:
            segments.append(Segment(run_char * run, run_style))
        return segments

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < len(self.rows):
            self.post_message(self.RowClicked(self.rows[index].shard_id))

    def on_resize(self, _event: events.Resize) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows) + 1)
        self.refresh()


def legend(per_cell: int, *, ages: bool = False) -> list[Segment]:
    """What the colours mean, and how many seconds a column is (and, with ages, what a blank is)."""
    segments = [Segment("·", IDLE), Segment("idle ")]
    lower = 0.0
    for bound, style in _LEVEL_STYLES:
        segments.append(Segment("█", style))
        segments.append(Segment(f"≥{lower:.0%} " if math.isinf(bound) else f"<{bound:.0%} "))
        lower = bound
    segments.append(Segment(f"of the shard limit (1 MiB/s, 1,000 rec/s) · a column is {per_cell} s", Style(dim=True)))
    if ages:
        segments.append(Segment(" · blank: not read since (age)", Style(dim=True)))
    return segments
