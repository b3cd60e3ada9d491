"""Placement: type or paste keys and see, live, each key's hash key and the open shard it lands on.

One key per line. In partition-key mode the hash is MD5 (as Kinesis does it); in explicit mode each
line is a decimal ExplicitHashKey. The keys are marked on the ribbon; with many keys a summary says
how they spread over the open shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive, var
from textual.strip import Strip
from textual.widgets import DataTable, Static, TextArea

from console.errors import BadInput
from console.keyspace.distribution import Distribution, count_indices, format_distribution, summarize
from console.keyspace.hashkeys import (
    HashRangeIndex,
    md5_hash_key,
    parse_hash_key,
    share_of_space,
    validate_partition_key,
)
from console.read.printable import printable
from console.reshard.model import KeySample
from console.ui.format import KEY_WIDTHS, format_hash_key, format_share, short_shard_id, shorten_middle
from console.ui.source import StreamView
from console.words import counted

SHOWN_ROWS = 200  # the table lists the first keys; the summary covers all of them
KEY_COLUMN_WIDTH = 40  # a hash key (39 digits) in full; a longer key keeps its start and end (shorten_middle)


@dataclass(frozen=True, slots=True)
class Placement:
    key: str
    hash_key: int | None
    shard_id: str | None
    problem: str | None = None


def place_keys(lines: list[str], *, explicit: bool, index: HashRangeIndex | None) -> list[Placement]:
    placements = []
    for line in lines:
        key = line.strip() if explicit else line
        if not key.strip():
            continue
        try:
            hash_key = parse_hash_key(key) if explicit else md5_hash_key(validate_partition_key(key))
        except BadInput as error:
            placements.append(Placement(key, None, None, error.message))
            continue
        placements.append(Placement(key, hash_key, index.predict(hash_key) if index else None))
    return placements


DISTRIBUTION_FROM = 10  # keys; from this many on, the per-shard spread is shown too


def key_distribution(placements: list[Placement], index: HashRangeIndex) -> Distribution:
    """How the placed keys spread over the open shards (console.keyspace.distribution), in key-space order."""
    positions = [index.index_of(p.hash_key) for p in placements if p.hash_key is not None]
    expected = [share_of_space(start, end) for start, end in zip(index.starts, index.endings)]
    return summarize(index.shard_ids, count_indices(positions, len(index)), expected)


def empty_hint(explicit: bool) -> str:
    if explicit:
        return "Type explicit hash keys (decimal, 0 to 2^128-1), one per line: each shows the shard it lands on."
    return "Type partition keys, one per line (or paste many): each shows its MD5 hash key and its shard."


def distribution_summary(placements: list[Placement], index: HashRangeIndex | None, *, explicit: bool = False) -> str:
    bad = sum(1 for p in placements if p.problem)
    if not placements:
        return empty_hint(explicit)
    if index is None:
        return f"{counted(len(placements), 'key')}; waiting for the shard map to predict shards."
    dist = key_distribution(placements, index)
    parts = [
        f"{counted(dist.total, 'key')} on {len(dist.buckets) - dist.empty_buckets} of {counted(len(dist.buckets), 'open shard')}"
    ]
    busiest = dist.busiest
    if dist.total and busiest is not None:
        parts.append(f"busiest {short_shard_id(busiest.label)} {busiest.count} ({format_share(busiest.share)})")
        parts.append(f"max/mean skew {dist.skew:.2f}")
    if bad:
        first = next(p for p in placements if p.problem)
        parts.append(f"{bad} invalid (first, {shorten_middle(first.key, KEY_COLUMN_WIDTH)!r}: {first.problem})")
    return " · ".join(parts)


class KeysInput(TextArea):
    """The keys box: a pasted key's control characters are drawn escaped (the cursor may sit a few cells
    off on such a line), never sent to the terminal; the text itself is kept as pasted. ctrl+a selects
    every key (to replace or copy them all) rather than moving to the line's start, as home still does."""

    BINDINGS = [Binding("ctrl+a", "select_all", "Select all keys", show=False)]

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        if all(segment.text.isprintable() for segment in segments):
            return strip
        escaped = [Segment(printable(segment.text), segment.style, segment.control) for segment in segments]
        return Strip(escaped).crop(0, strip.cell_length)


class PlacementPanel(Vertical):
    BINDINGS = [Binding("ctrl+t", "toggle_mode", "Key mode", id="placement.mode")]
    stream: reactive[str | None] = reactive(None, init=False)  # the app's (data_bind)
    view: var[StreamView | None] = var(None, init=False, always_update=True)  # the app's (data_bind)
    # The app's (data_bind), from each poll: an AUTO stream's notice (Kinesis ignores the keys, so it
    # stands where the shard column was); None: the stream routes by key.
    auto_notice: reactive[str | None] = reactive(None, init=False)

    class MarkersChanged(Message):
        def __init__(self, hash_keys: list[int]) -> None:
            super().__init__()
            self.hash_keys = hash_keys

    def __init__(self, *, key_format: str = "decimal", id: str | None = None) -> None:
        super().__init__(id=id)
        self.key_format = key_format
        self.explicit = False
        self.index: HashRangeIndex | None = None
        self.placements: list[Placement] = []

    def compose(self) -> ComposeResult:
        yield Static(self._mode_text(), id="placement-mode")
        yield KeysInput(id="placement-input", soft_wrap=False)
        yield Static(empty_hint(self.explicit), id="placement-summary")
        yield Static("", id="placement-distribution")
        yield DataTable(id="placement-results", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self._add_columns(self.query_one("#placement-results", DataTable))

    def _add_columns(self, table: DataTable[Any]) -> None:
        # Fixed widths, the shard (the answer) before the 39-digit hash, and a line's problem in a
        # column of its own, last: an error text never widens a column and pushes Shard off-screen.
        table.add_column("Key", key="key", width=KEY_COLUMN_WIDTH)
        if self.auto_notice is None:
            table.add_column("Shard", key="shard", width=20)
        table.add_column("Hash key", key="hash", width=KEY_WIDTHS[self.key_format])
        table.add_column("Problem", key="problem")

    def _mode_text(self) -> str:
        mode = "explicit hash keys (decimal)" if self.explicit else "partition keys (MD5)"
        return f"Keys are {mode}, one per line · ctrl+t switches · enter to type, esc leaves the box"

    def key_sample(self) -> KeySample | None:
        """The keys typed here that parse, as a sample a reshard plan counts moves of (None: none; on an
        AUTO stream the plan itself counts none, console.reshard.plan)."""
        placed = [(p.key, p.hash_key) for p in self.placements if p.hash_key is not None]
        if not placed:
            return None
        return KeySample([key for key, _ in placed], [hash_key for _, hash_key in placed])

    def action_toggle_mode(self) -> None:
        self.explicit = not self.explicit
        self.query_one("#placement-mode", Static).update(self._mode_text())
        self._recompute()

    def set_keys(self, text: str) -> None:
        """Replace the typed keys (used by tests and the command palette)."""
        self.query_one("#placement-input", TextArea).load_text(text)
        self._recompute()

    def watch_auto_notice(self, old: str | None, new: str | None) -> None:
        """AUTO shows the notice; back to keys, shards."""
        if new != old and self.is_mounted:
            self._recompute()

    def watch_stream(self, old: str | None, new: str | None) -> None:
        if new != old:  # the typed keys stay; where they land waits for the new stream's shards
            self.set_index(None)

    def watch_view(self, view: StreamView | None) -> None:
        if view is not None and view.lineage is not None:  # the open shards' index comes with the lineage
            self.set_index(view.index)

    def set_index(self, index: HashRangeIndex | None) -> None:
        if index is not self.index:
            self.index = index
            if self.placements:  # nothing typed yet: nothing to redo on every poll
                self._recompute()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self._recompute()

    def _recompute(self) -> None:
        text = self.query_one("#placement-input", TextArea).text
        auto = self.auto_notice is not None
        self.placements = place_keys(text.splitlines(), explicit=self.explicit, index=None if auto else self.index)
        self.query_one("#placement-summary", Static).update(
            Text(self.auto_notice, style="bold yellow")
            if self.auto_notice is not None
            else Text(distribution_summary(self.placements, self.index, explicit=self.explicit))
        )  # keys are not markup
        spread = self.query_one("#placement-distribution", Static)
        placed = sum(1 for p in self.placements if p.hash_key is not None)
        if self.index is not None and placed >= DISTRIBUTION_FROM and not auto:
            spread.update(
                Text(format_distribution(key_distribution(self.placements, self.index), bar_width=20, max_rows=8))
            )
            spread.display = True
        else:
            spread.display = False
        table = self.query_one("#placement-results", DataTable)
        table.clear(columns=True)  # the Problem column's width starts again from what is shown now
        self._add_columns(table)
        for placement in self.placements[:SHOWN_ROWS]:
            key = Text(
                printable(shorten_middle(placement.key, KEY_COLUMN_WIDTH))
            )  # Text: a key is never read as markup
            cells: tuple[Text, str, str, Text | str]
            if placement.problem or placement.hash_key is None:
                cells = (key, "-", "-", Text(printable(placement.problem or "no hash key"), style="red"))
            else:
                cells = (key, placement.shard_id or "?", format_hash_key(placement.hash_key, self.key_format), "")
            table.add_row(*(cells[:1] + cells[2:] if auto else cells))
        self.post_message(self.MarkersChanged([p.hash_key for p in self.placements if p.hash_key is not None]))
