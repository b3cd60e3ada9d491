"""The fleet: one row per stream of the region — its rates over the last 30 minutes, utilisation,
iterator age and throttles from CloudWatch's free stream-level metrics — sorted by trouble.

Trouble, in order: throttling (writes or reads refused), then iterator age or a reader behind (the
worst Lambda or Firehose reader's own lag, console.consumers.readers.fleet_reader_lag, given by the
caller), then utilisation (near the write limit). A row with any reason is in trouble and says why.
Capacity: provisioned streams write 1 MiB/s and 1,000 records/s per open shard; on-demand streams
have the same per-shard limits over the shards they have now, or their warm throughput where set.
I/O goes through the injected backend's `fleet_metrics` (GetMetricData, 500 queries a call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.errors import ConsoleError
from console.heat.capacity import RECENT_MINUTES, STREAM_METRICS, per_minute, unavailable_reason
from console.heat.cloudwatch import PERIOD, minute_window
from console.heat.snapshot import SHARD_BYTES_LIMIT, SHARD_RECORDS_LIMIT

WINDOW_MINUTES = 30
# The stream-level metrics (free: no enhanced monitoring) a fleet row shows: five queries a stream,
# so one GetMetricData call covers 100 streams.
FLEET_METRICS: dict[str, str] = {
    metric: STREAM_METRICS[metric]
    for metric in (
        "IncomingRecords",
        "IncomingBytes",
        "GetRecords.IteratorAgeMilliseconds",
        "WriteProvisionedThroughputExceeded",
        "ReadProvisionedThroughputExceeded",
    )
}
AGE_TROUBLE_MS = 60_000  # consumers a minute behind
UTILISATION_TROUBLE = 0.8
SORTS = ("trouble", "name", "incoming", "age")
FLEET_REFRESH_S = 60.0  # CloudWatch's finest period for these metrics: refreshing faster reads the same points
# DescribeStreamSummary calls at once when the fleet fills in shard and consumer counts (the CLI and
# the console alike): a region of 1,000 streams is described in seconds, never 1,000 calls at once.
DESCRIBE_CONCURRENCY = 16
# The incoming rates are the mean over the window's last minutes, named with the figure.
RATE_WINDOW = f"{RECENT_MINUTES} min"
SPARKS = "▁▂▃▄▅▆▇█"
# The fleet's own read cost: it reads CloudWatch and the streams' summaries, never a record.
FLEET_READ_COST = "kconsole reads 0 GetRecords calls/s and 0 MiB/s of any shard here (CloudWatch and summaries only)"
MIB = 1024 * 1024

Series = Sequence[tuple[datetime, float]]


@dataclass(frozen=True, slots=True)
class StreamFacts:
    """What the stream list and DescribeStreamSummary tell about one stream (None: not known yet)."""

    name: str
    status: str
    mode: str
    open_shards: int | None = None
    consumers: int | None = None
    auto_distribution: bool = False
    warm_mibps: int | None = None  # WarmThroughput.CurrentMiBps on on-demand streams

    @classmethod
    def from_stream(cls, summary: Any) -> StreamFacts:
        """From the backend's StreamSummary; one from the stream list alone (no shard count yet) knows
        no consumer count either."""
        listed_only = summary.open_shard_count is None
        return cls(
            name=summary.name,
            status=summary.status,
            mode=summary.mode,
            open_shards=summary.open_shard_count,
            consumers=None if listed_only else summary.consumer_count,
            auto_distribution=summary.auto_distribution,
            warm_mibps=summary.warm_throughput_current_mibps,
        )


@dataclass(frozen=True, slots=True)
class FleetRow:
    facts: StreamFacts
    records_per_s: float | None
    bytes_per_s: float | None
    bytes_sparkline: tuple[float, ...]  # bytes/s per minute over the window, oldest first
    max_iterator_age_ms: float | None
    write_throttled: int | None
    read_throttled: int | None
    utilisation: float | None  # of the write capacity (the larger of bytes and records)
    capacity_basis: str | None  # "shards", "warm"
    trouble: tuple[str, ...]
    metrics_problem: str | None = None
    worst_reader: tuple[str, int] | None = None  # ("lambda orders-fn", millis behind): its furthest-behind reader
    # What the row was built from, so new facts (a shard count arriving late) rebuild it.
    series: Mapping[str, Series] | None = field(default=None, repr=False, compare=False)
    window_start: datetime | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.facts.name

    def with_facts(self, facts: StreamFacts) -> FleetRow:
        return build_row(facts, self.series, self.window_start, problem=self.metrics_problem, reader=self.worst_reader)

    @property
    def behind_ms(self) -> float:
        """How far behind its furthest-behind reader is: the iterator age, or a reader's own lag."""
        return max(self.max_iterator_age_ms or 0.0, float(self.worst_reader[1]) if self.worst_reader else 0.0)

    def trouble_key(self) -> tuple[int, int, int, int, float, float, str]:
        """Sorts the worst first: throttled, then behind, then busy; then by name."""
        throttles = (self.write_throttled or 0) + (self.read_throttled or 0)
        age = self.behind_ms
        busy = self.utilisation or 0.0
        return (
            -(throttles > 0),
            -(age >= AGE_TROUBLE_MS),
            -(busy >= UTILISATION_TROUBLE),
            -throttles,
            -age,
            -busy,
            self.name,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "incoming_records_per_s": _rounded(self.records_per_s),
            "incoming_window_minutes": RECENT_MINUTES,
            "incoming_bytes_per_s": _rounded(self.bytes_per_s),
            "max_iterator_age_ms": self.max_iterator_age_ms,
            "write_throttled": self.write_throttled,
            "read_throttled": self.read_throttled,
            "utilisation": None if self.utilisation is None else round(self.utilisation, 4),
            "trouble": list(self.trouble),
            "metrics_problem": self.metrics_problem,
            "worst_reader": None
            if self.worst_reader is None
            else {"reader": self.worst_reader[0], "millis_behind": self.worst_reader[1]},
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def capacity(facts: StreamFacts) -> tuple[float, float, str] | None:
    """(bytes/s, records/s, basis) the stream can take in, or None when its shard count is unknown."""
    if facts.mode == "ON_DEMAND" and facts.warm_mibps:
        return facts.warm_mibps * MIB, float("inf"), "warm"
    if not facts.open_shards:
        return None
    return facts.open_shards * SHARD_BYTES_LIMIT, facts.open_shards * SHARD_RECORDS_LIMIT, "shards"


def sparkline_values(points: Series, start: datetime, minutes: int = WINDOW_MINUTES) -> tuple[float, ...]:
    """Per-second rates per minute from per-minute sums, a 0 for each minute without a point."""
    return tuple(value / PERIOD for value in per_minute(points, start, minutes))


def build_row(
    facts: StreamFacts,
    series: Mapping[str, Series] | None,
    start: datetime | None = None,
    *,
    problem: str | None = None,
    reader: tuple[str, int] | None = None,
) -> FleetRow:
    """One stream's row from its series ({metric: [(minute, value)]} from `start`, the window's first
    minute; None: no metrics (yet)) and its worst reader (label, millis behind) where known."""
    if series is None or start is None or problem:
        return FleetRow(facts, None, None, (), None, None, None, None, None, (), problem, reader)
    records, nbytes = series.get("IncomingRecords") or (), series.get("IncomingBytes") or ()
    ages = series.get("GetRecords.IteratorAgeMilliseconds") or ()
    writes = series.get("WriteProvisionedThroughputExceeded") or ()
    reads = series.get("ReadProvisionedThroughputExceeded") or ()
    records_per_s, bytes_per_s = _recent_rate(records, start), _recent_rate(nbytes, start)
    recent_ages = sorted(ages)[-RECENT_MINUTES:]
    age = max((value for _, value in recent_ages), default=None)
    write_throttled = int(sum(v for _, v in writes)) if writes else None
    read_throttled = int(sum(v for _, v in reads)) if reads else None
    limits = capacity(facts)
    used = None
    if limits is not None and (records_per_s is not None or bytes_per_s is not None):
        used = max((bytes_per_s or 0.0) / limits[0], (records_per_s or 0.0) / limits[1])
    reasons = []
    if write_throttled:
        reasons.append(f"write throttled: {write_throttled:,} in {WINDOW_MINUTES} min")
    if read_throttled:
        reasons.append(f"read throttled: {read_throttled:,} in {WINDOW_MINUTES} min")
    if age is not None and age >= AGE_TROUBLE_MS:
        reasons.append(f"iterator age {format_age(age)}")
    if reader is not None and reader[1] >= AGE_TROUBLE_MS:
        reasons.append(f"reader {reader[0]} {format_age(reader[1])} behind")
    if used is not None and used >= UTILISATION_TROUBLE:
        reasons.append(
            f"{used:.0%} of {'warm throughput' if limits is not None and limits[2] == 'warm' else 'write capacity'}"
        )
    spark = sparkline_values(nbytes, start) if nbytes else ()
    return FleetRow(
        facts,
        records_per_s,
        bytes_per_s,
        spark,
        age,
        write_throttled,
        read_throttled,
        used,
        limits[2] if limits else None,
        tuple(reasons),
        None,
        reader,
        series,
        start,
    )


def sparkline(values: Sequence[float]) -> str:
    """Eight levels relative to the window's own peak; an idle window is a flat line."""
    if not values:
        return ""
    top = max(values)
    if top <= 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[min(7, int(value / top * 7.999))] for value in values)


def _recent_rate(points: Series, start: datetime) -> float | None:
    """Per second over the window's last RECENT_MINUTES minutes, a minute without a point counting as
    zero: CloudWatch writes no point for a minute nobody wrote in, so a stream written once a while
    ago is idle now, not busy at its old rate. None: CloudWatch has no point in the whole window."""
    if not points:
        return None
    return sum(per_minute(points, start, WINDOW_MINUTES)[-RECENT_MINUTES:]) / (RECENT_MINUTES * PERIOD)


@dataclass(frozen=True)
class RowText:
    """A fleet row's cells as text: `kconsole streams` and the console's fleet screen show these."""

    mode: str  # "ON_DEMAND AUTO warm 100 MiB/s"
    trouble: str  # the reasons, or "? why there are no metrics"
    records_per_s: str
    kib_per_s: str
    sparkline: str
    used: str
    iterator_age: str
    throttled: str  # writes/reads
    shards: str
    consumers: str


def row_text(row: FleetRow, *, fleet_problem: str | None = None) -> RowText:
    """`fleet_problem`: why the whole fleet has no metrics, said once, so no row repeats it."""
    facts = row.facts

    def number(value: float | None, pattern: str) -> str:
        return "-" if value is None else pattern.format(value)

    def count(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    trouble = "; ".join(row.trouble)
    if not trouble and row.metrics_problem and not fleet_problem:
        trouble = f"? {row.metrics_problem}"
    return RowText(
        mode=facts.mode
        + (" AUTO" if facts.auto_distribution else "")
        + (f" warm {facts.warm_mibps} MiB/s" if facts.warm_mibps else ""),
        trouble=trouble,
        records_per_s=number(row.records_per_s, "{:.1f}"),
        kib_per_s=number(None if row.bytes_per_s is None else row.bytes_per_s / 1024, "{:.1f}"),
        sparkline=sparkline(row.bytes_sparkline) or "-",
        used=number(None if row.utilisation is None else row.utilisation * 100, "{:.0f}%"),
        iterator_age="-" if row.max_iterator_age_ms is None else format_age(row.max_iterator_age_ms),
        throttled=f"{count(row.write_throttled)}/{count(row.read_throttled)}",
        shards=count(facts.open_shards),
        consumers=count(facts.consumers),
    )


def format_age(millis: float) -> str:
    seconds = millis / 1000
    return (
        f"{seconds:.0f} s"
        if seconds < 120
        else f"{seconds / 60:.0f} min"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h"
    )


def sort_rows(rows: Sequence[FleetRow], by: str = "trouble") -> list[FleetRow]:
    if by == "name":
        return sorted(rows, key=lambda r: r.name)
    if by == "incoming":
        return sorted(rows, key=lambda r: (-(r.bytes_per_s or 0.0), r.name))
    if by == "age":
        return sorted(rows, key=lambda r: (-r.behind_ms, r.name))
    return sorted(rows, key=FleetRow.trouble_key)


@dataclass
class Fleet:
    """The rows of one refresh; streams whose metrics failed keep their rows, marked."""

    rows: list[FleetRow] = field(default_factory=list)
    metric_calls: int = 0
    problem: str | None = None  # one line when CloudWatch could not be read at all
    readers_unavailable: tuple[str, ...] = ()  # one line per readers' service that could not be listed


@dataclass(frozen=True)
class FleetMetrics:
    """One batched read of the fleet's metrics: each stream's series from `start`, or the problem."""

    start: datetime
    found: Any = None  # the backend's StreamsMetrics (series and problems by stream, calls made)
    problem: str | None = None  # one line when CloudWatch could not be read at all


async def read_fleet_metrics(backend: Any, names: Sequence[str], *, now: datetime | None = None) -> FleetMetrics:
    """The last 30 minutes' stream-level metrics of `names`, in one batched read. It needs only the
    names, so a caller may run it while it still describes the streams."""
    start, end = minute_window(WINDOW_MINUTES, now)
    try:
        found = await backend.streams_metrics(list(names), FLEET_METRICS, start, end, PERIOD)
    except ConsoleError as error:  # no permission, no CloudWatch: the list stands, the reason is one line
        return FleetMetrics(start, problem=unavailable_reason(error).removeprefix("no CloudWatch metrics: "))
    return FleetMetrics(start, found)


def fleet_from(
    streams: Sequence[StreamFacts], metrics: FleetMetrics, readers: Mapping[str, tuple[str, int]] | None = None
) -> Fleet:
    """Every stream's row from a read of the metrics (streams it did not cover have no series) and
    each stream's worst reader ({stream: (label, millis behind)}, where known)."""
    start, found = metrics.start, metrics.found
    readers = readers or {}
    if found is None:
        return Fleet(
            [
                build_row(facts, None, start, problem=metrics.problem, reader=readers.get(facts.name))
                for facts in streams
            ],
            problem=metrics.problem,
        )
    rows = [
        build_row(
            facts,
            found.series.get(facts.name),
            start,
            problem=found.problems.get(facts.name),
            reader=readers.get(facts.name),
        )
        for facts in streams
    ]
    return Fleet(rows, metric_calls=found.calls)


async def fleet_rows(
    backend: Any,
    streams: Sequence[StreamFacts],
    *,
    now: datetime | None = None,
    readers: Mapping[str, tuple[str, int]] | None = None,
) -> Fleet:
    """Every stream's row from one batched read of the last 30 minutes' stream-level metrics."""
    metrics = await read_fleet_metrics(backend, [facts.name for facts in streams], now=now)
    return fleet_from(streams, metrics, readers)
