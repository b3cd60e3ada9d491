"""What the Heat tab shows, as text and rows: the stream's CloudWatch line, the selected shard's top
keys and split advice, the heat map's rows (made when drawn) and the live figures the shard table and
the ribbon show of a shard."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import overload

from rich.text import Text

from console.heat.hotkey import needs_write_sharding
from console.heat.snapshot import RECENT_SECONDS, ShardHeatSnapshot, StreamHeatSnapshot
from console.read.printable import printable
from console.read.share import BACKING_OFF_NOTE
from console.topology.model import NO_KEY
from console.ui.source import CloudWatchReading
from console.ui.widgets.heat_map import HeatRow
from console.ui.widgets.metric_lines import stream_capacity_text
from console.ui.widgets.shard_columns import ShardHeat
from console.words import counted


def cloudwatch_text(reading: CloudWatchReading | None) -> Text:
    if reading is None:
        return Text("fetching the stream's CloudWatch metrics…", style="dim")
    return stream_capacity_text(reading.metrics, reading.problem)


def top_keys_text(shard: ShardHeatSnapshot | None, stream: str, *, auto: bool = False) -> Text:
    if shard is None:
        return Text("no shard selected", style="dim")
    text = Text(
        f"{shard.shard_id}: peak {shard.peak_records_per_s} rec/s, peak utilisation {shard.peak_utilisation:.0%}\n",
        style="bold",
    )
    if shard.aggregates or shard.decode_errors:
        # REC/S counts Kinesis records (what the limit counts); user records came out of KPL aggregates.
        text.append(
            f"KPL aggregates: {shard.user_records_per_s:,.1f} user rec/s in {shard.records_per_s:,.1f} "
            f"Kinesis rec/s" + (f", {shard.decode_errors} decode-error" if shard.decode_errors else "") + "\n",
            style="dim",
        )
    repeated = [row for row in shard.top_keys if row.guaranteed_records > 1]  # a key seen once is not heat
    if auto:
        text.append("AUTO distribution: Kinesis spread these records; keys as sent:\n", style="yellow")
    if shard.keyless_records:
        text.append(f"  {NO_KEY}  {counted(shard.keyless_records, 'record')} without a key\n")
    if not shard.records:
        text.append("no records sampled yet\n", style="dim")
    elif not repeated:
        text.append("no key repeats: the traffic is spread\n", style="dim")
    for row in repeated:
        inside = "  (aggregated)" if row.aggregated else ""
        text.append(f"  {printable(row.key)}  {counted(row.records, 'record')}  {row.share:.0%}{inside}\n")
    if shard.split is not None and shard.records:
        basis = "where its aggregates land" if shard.split.by_aggregates else "median"
        text.append(
            f"split at {basis} (children ~{shard.split.lower_share:.0%} / "
            f"{1 - shard.split.lower_share:.0%}): {shard.split.command(stream)}\n",
            style="cyan",
        )
        if shard.split.dominant_key and shard.split.dominant_aggregated:
            text.append(
                f"  {printable(shard.split.dominant_key)} carries {shard.split.dominant_share:.0%} inside "
                "aggregates: a split moves whole aggregates, not the key\n",
                style="yellow",
            )
        elif shard.split.dominant_key:
            advice = (
                "write-shard it (`kconsole heat` shows the what-if)"
                if needs_write_sharding(shard.peak_utilisation, shard.split.dominant_share)
                else "a split cannot divide one key; too little of the shard's limit to write-shard"
            )
            text.append(
                f"  {printable(shard.split.dominant_key)} carries {shard.split.dominant_share:.0%}: {advice}\n",
                style="yellow",
            )
    return text


class HeatRows(Sequence[HeatRow]):
    """The heat map's rows, made when drawn: a map of 10,000 shards draws the few dozen that fit."""

    def __init__(self, shards: list[ShardHeatSnapshot], row: Callable[[ShardHeatSnapshot], HeatRow]) -> None:
        self._shards, self._row = shards, row

    def __len__(self) -> int:
        return len(self._shards)

    @overload
    def __getitem__(self, index: int) -> HeatRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[HeatRow]: ...

    def __getitem__(self, index: int | slice) -> HeatRow | list[HeatRow]:
        if isinstance(index, slice):
            return [self._row(shard) for shard in self._shards[index]]
        return self._row(self._shards[index])


def shard_figures(shard: ShardHeatSnapshot) -> ShardHeat:
    """What the shard table and the ribbon show of a shard's reading: the last few seconds (recent_*),
    not the window's average, which would flatten a burst that started a moment ago."""
    return ShardHeat(
        shard.recent_records_per_s, shard.recent_bytes_per_s, shard.recent_utilisation, tuple(shard.series[-4:])
    )


def total_text(
    snapshot: StreamHeatSnapshot, *, rotating: bool, hottest_first: bool, coverage: str, read_cost: str
) -> Text:
    """The header: the stream's rate now and over the window (or why there is none yet), the order, what a
    second of a rotating sampler covers, and what kconsole's own reading takes of the shards' budget."""
    recent = sum(shard.recent_records_per_s for shard in snapshot.shards)
    recent_bytes = sum(shard.recent_bytes_per_s for shard in snapshot.shards)
    order = "hottest first" if hottest_first else "key-space order"
    if snapshot.shards and not any(shard.series for shard in snapshot.shards):
        total = Text(f"{snapshot.stream}: sampling started; the first second is being read …", style="italic")
    elif not any(shard.records for shard in snapshot.shards):
        seconds = snapshot.window_end - snapshot.window_start
        if rotating:  # only what was read is known
            read = sum(1 for shard in snapshot.shards if shard.sampled_at is not None)
            idle = f"idle in the {read:,} of {counted(len(snapshot.shards), 'shard')} read in {seconds:.0f} s so far"
        else:
            idle = f"idle, no records written in the {seconds:.0f} s sampled so far"
        total = Text(f"{snapshot.stream}: {idle}", style="italic")
    else:
        # Reading in turn, each shard counts as of its last read (its age in the map), and the shards not
        # read yet count nothing: until the first pass has read them all, the figure says what it covers.
        last = "each shard's last" if rotating else "last"
        read = sum(1 for shard in snapshot.shards if shard.sampled_at is not None) if rotating else 0
        unread = rotating and read < len(snapshot.shards)
        covers = f"; covers {read:,} of {counted(len(snapshot.shards), 'shard')}" if unread else ""
        total = Text(
            f"{snapshot.stream}: {recent:,.1f} rec/s  {recent_bytes / 1024:,.1f} KiB/s "
            f"({last} {RECENT_SECONDS} s; {snapshot.records_per_s:,.1f} rec/s over "
            f"{snapshot.window_end - snapshot.window_start:.0f} s{covers})"
        )
    total.append(f"  ({order}; h toggles, ↑↓ select)", style="dim")
    if rotating and coverage:
        total.append(f"\n{coverage}", style="dim")
    if read_cost:
        total.append(f"\n{read_cost}", style="yellow" if BACKING_OFF_NOTE in read_cost else "dim")
    return total
