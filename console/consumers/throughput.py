"""A worker's throughput measured from its shards, for leases that carry no `throughputKBps` (KCL 2.x,
or 3.x before its first measurement): the worker owns leases, a lease names a shard, and a shard's
throughput is what comes into it.

Two sources, the better first:

- **shard metrics**: CloudWatch's per-shard `IncomingBytes` (one GetMetricData query per shard, 500 to
  a call), summed over the last few whole minutes. Kinesis publishes shard-level metrics only with
  enhanced monitoring on; where it is on for IncomingBytes, a shard without points took nothing in.
- **sampled records**: where CloudWatch has nothing, each shard's last minute of records is read
  (GetRecords from AT_TIMESTAMP, a few pages at most, a few shards at once — as Heat reads shards)
  and their bytes (data and partition key, as IncomingBytes counts them) counted by arrival time. A
  read that stops at the page bound gives a lower bound, marked as such. These reads take from the
  shards' shared GetRecords budget like any poll: they go through kconsole's `ReadShare` (paced within
  it, counted, backed off when throttled), and the sources line says what they took.

IncomingBytes, not OutgoingBytes: the outgoing bytes are every consumer's reads of the shard added up,
while a worker keeping up with its shard reads what came in. KB is 1,024 bytes, as KCL 3.x's
`LeaseStatsRecorder` counts the throughputKBps it writes, so measured and reported values compare.
All I/O goes through the injected backend (`shard_metrics`, `describe_stream_summary`,
`get_shard_iterator`, `get_records`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from console.backend.protocol import MetricPoints
from console.errors import ConsoleError, Throttled
from console.read.share import ReadShare

KB = 1024
METRIC = "IncomingBytes"
METRIC_MINUTES = 5  # whole minutes of CloudWatch points (shard-level metrics come per minute)
SAMPLE_SECONDS = 60  # how far back a sampled shard is read
SAMPLE_PAGES = 5  # GetRecords calls per sampled shard at most (AWS allows 5 a second per shard)
SAMPLE_RECORDS_PER_PAGE = 10_000
SAMPLE_AT_ONCE = 8  # shards read at the same time
MAX_SAMPLED_SHARDS = 200  # beyond this many shards without metrics, sampling would be a scan
MEASURE_EVERY_S = 60.0  # a measurement is reused this long (CloudWatch's points are per minute anyway)

LEASE = "lease"  # KCL 3.x's throughputKBps, read from the lease
SHARD_METRICS = "shard metrics"
SAMPLED = "sampled records"


@dataclass(frozen=True, slots=True)
class ShardRate:
    kbps: float
    source: str  # SHARD_METRICS or SAMPLED
    lower_bound: bool = False  # sampled, and the read stopped at the page bound before catching up


@dataclass(frozen=True, slots=True)
class ShardThroughput:
    """Measured KB/s per shard id, with how each was measured, and what could not be measured."""

    rates: dict[str, ShardRate] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    read_cost: str | None = None  # what sampling took of the shards' shared budget (None: nothing sampled)

    def sources_line(self) -> str | None:
        """One line naming where the measured values come from (None: nothing was measured)."""
        by_source: dict[str, int] = {}
        for rate in self.rates.values():
            by_source[rate.source] = by_source.get(rate.source, 0) + 1
        parts = []
        if by_source.get(SHARD_METRICS):
            parts.append(
                f"from shard metrics (CloudWatch {METRIC}, last {METRIC_MINUTES} min) for {_shards(by_source[SHARD_METRICS])}"
            )
        if by_source.get(SAMPLED):
            partial = sum(1 for rate in self.rates.values() if rate.source == SAMPLED and rate.lower_bound)
            parts.append(
                f"from sampled records (last {SAMPLE_SECONDS} s read back) for {_shards(by_source[SAMPLED])}"
                + (f", {partial} of them a lower bound (≥)" if partial else "")
            )
        if self.read_cost:
            parts.append(self.read_cost)
        return "KB/s measured " + "; ".join(parts) if parts else None


def _shards(count: int) -> str:
    return f"{count} shard" + ("" if count == 1 else "s")


def monitors_incoming_bytes(enhanced_metrics: Iterable[str]) -> bool:
    return any(metric in (METRIC, "ALL") for metric in enhanced_metrics)


async def measure_shards(
    backend: Any,
    stream: str,
    shard_ids: Iterable[str],
    *,
    now: datetime | None = None,
    read_share: ReadShare | None = None,
) -> ShardThroughput:
    """Each shard's incoming KB/s: from CloudWatch where it has points (or where enhanced monitoring
    says no points means nothing came in), else from reading the shard's last minute within `read_share`
    (unbounded, and still counted, when None)."""
    share = read_share if read_share is not None else ReadShare(None)
    ids = list(dict.fromkeys(shard_ids))
    if not ids:
        return ShardThroughput()
    now = now or datetime.now(UTC)
    notes: list[str] = []
    end = now.replace(second=0, microsecond=0)
    start = end - timedelta(minutes=METRIC_MINUTES)
    series: dict[str, dict[str, MetricPoints]] = {}
    try:
        series = await backend.shard_metrics(stream, ids, {METRIC: "Sum"}, start, end, 60)
    except ConsoleError as error:
        notes.append(f"no shard metrics ({error.message})")
    try:
        monitored = monitors_incoming_bytes((await backend.describe_stream_summary(stream)).enhanced_metrics)
    except ConsoleError:
        monitored = False
    rates: dict[str, ShardRate] = {}
    to_sample = []
    for shard_id in ids:
        points = series.get(shard_id, {}).get(METRIC, [])
        if points or monitored:
            rates[shard_id] = ShardRate(sum(value for _, value in points) / (METRIC_MINUTES * 60) / KB, SHARD_METRICS)
        else:
            to_sample.append(shard_id)
    if len(to_sample) > MAX_SAMPLED_SHARDS:
        notes.append(
            f"{len(to_sample) - MAX_SAMPLED_SHARDS} shard(s) not measured: no shard metrics, and at most "
            f"{MAX_SAMPLED_SHARDS} shards are read back (turn on enhanced monitoring for {METRIC})"
        )
        to_sample = to_sample[:MAX_SAMPLED_SHARDS]
    failed: list[str] = []
    limit = asyncio.Semaphore(SAMPLE_AT_ONCE)

    async def sample(shard_id: str) -> None:
        async with limit:
            try:
                rates[shard_id] = await _sample_shard(backend, stream, shard_id, now, share)
            except ConsoleError:
                failed.append(shard_id)

    await asyncio.gather(*(sample(shard_id) for shard_id in to_sample))
    if failed:
        notes.append(f"{len(failed)} shard(s) could not be read back to measure: {', '.join(sorted(failed)[:5])}")
    return ShardThroughput(
        {shard_id: rates[shard_id] for shard_id in ids if shard_id in rates},
        tuple(notes),
        share.summary() if to_sample else None,
    )


async def _sample_shard(backend: Any, stream: str, shard_id: str, now: datetime, share: ReadShare) -> ShardRate:
    """Bytes that arrived in the last SAMPLE_SECONDS before `now`, read from AT_TIMESTAMP, each call
    within kconsole's share of the shard and counted there."""
    since = now - timedelta(seconds=SAMPLE_SECONDS)
    iterator = await backend.get_shard_iterator(stream, shard_id, "AT_TIMESTAMP", timestamp=since)
    total = 0
    for _ in range(SAMPLE_PAGES):
        await asyncio.sleep(share.wait(shard_id))
        try:
            page = await backend.get_records(iterator, SAMPLE_RECORDS_PER_PAGE)
        except Throttled:
            share.throttled(shard_id)
            raise
        share.record(shard_id, sum(len(record.get("Data") or b"") for record in page.get("Records", [])))
        records = page.get("Records", [])
        past_now = False
        for record in records:
            arrived = record.get("ApproximateArrivalTimestamp")
            if isinstance(arrived, datetime) and arrived > now:
                past_now = True
                break
            total += len(record.get("Data", b"")) + len(str(record.get("PartitionKey", "")).encode())
        iterator = page.get("NextShardIterator")
        # At the tip: nothing behind (AWS's MillisBehindLatest 0) and a page that was not full.
        caught_up = page.get("MillisBehindLatest", 0) == 0 and len(records) < SAMPLE_RECORDS_PER_PAGE
        if past_now or not iterator or caught_up:
            return ShardRate(total / SAMPLE_SECONDS / KB, SAMPLED)
    return ShardRate(total / SAMPLE_SECONDS / KB, SAMPLED, lower_bound=True)


class ShardThroughputMeter:
    """Measures a stream's shards and keeps each answer MEASURE_EVERY_S, so a poll every few seconds
    reads CloudWatch (or the shards) once a minute, not every time."""

    def __init__(
        self,
        backend: Any,
        stream: str,
        *,
        clock: Callable[[], float],
        max_age_s: float = MEASURE_EVERY_S,
        read_share: ReadShare | None = None,
    ):
        self.backend, self.stream, self.clock, self.max_age_s = backend, stream, clock, max_age_s
        self.read_share = read_share if read_share is not None else ReadShare(None, clock=clock)
        self._last: tuple[float, frozenset[str], ShardThroughput] | None = None

    async def measure(self, shard_ids: Iterable[str]) -> ShardThroughput:
        wanted = frozenset(shard_ids)
        if self._last is not None:
            at, ids, measured = self._last
            if ids == wanted and self.clock() - at < self.max_age_s:
                return measured
        measured = await measure_shards(self.backend, self.stream, sorted(wanted), read_share=self.read_share)
        self._last = (self.clock(), wanted, measured)
        return measured
