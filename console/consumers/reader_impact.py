"""What a reshard does to a stream's readers (`reshard_impact`, `ReshardReaders`) and the cheap form
for the stream list: the worst reader of every stream (`fleet_reader_lag`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.consumers.reader_model import EFO, FLINK, KCL, LAMBDA, PIPE, Reader, ReadersReport
from console.consumers.reader_sources import (
    Found,
    MetricQuery,
    Metrics,
    delivery_source,
    firehose_queries,
    flink_name,
    flink_queries,
    flink_streams,
    function_name,
    guarded,
    lambda_queries,
    stream_of_source,
)
from console.consumers.report import format_millis
from console.words import counted

# ---- what a reshard does to the readers -----------------------------------------------------------


@dataclass(frozen=True)
class ReaderImpact:
    reader: str  # "lambda orders-fn"
    lines: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"reader": self.reader, "lines": list(self.lines)}


def reshard_impact(
    report: ReadersReport,
    *,
    parents: Sequence[str],
    shards_before: int,
    shards_after: int,
    workers: Mapping[str, tuple[int, int | None]] | None = None,
) -> list[ReaderImpact]:
    """What a reshard from `shards_before` to `shards_after` open shards, closing `parents`, does to
    each reader: every reader that follows the parent-first rule (KCL, Lambda, Firehose, Pipes) reads a
    child only once its parents are drained, so a reader behind on a parent reaches the children that
    much later; a KCL application whose workers cannot hold the new lease count (maxLeasesForWorker is
    the application's setting, not in its lease table: without it, what it must be at least); a Lambda
    or pipe whose concurrency changes with the shard count. `workers`: per lease table, (workers,
    maxLeasesForWorker or None when unknown); without it the lease owners seen are the workers."""
    impacts: list[ReaderImpact] = []
    for reader in report.readers:
        if reader.kind == EFO:
            continue  # the readers through it are listed themselves
        lines = []
        backlog = _parents_backlog(reader, parents)
        if parents and reader.kind == FLINK:
            lines.append(
                "reads the children as its connector does: KinesisStreamsSource after the parents are "
                f"drained, the older FlinkKinesisConsumer at once{backlog}"
            )
        elif parents:
            lines.append(f"reads the children only after the parents are drained{backlog}")
        if reader.kind == LAMBDA:
            factor = reader.settings.get("parallelization_factor") or 1
            if isinstance(factor, int) and shards_before != shards_after:
                lines.append(
                    f"concurrency {factor * shards_before} → {factor * shards_after} "
                    f"(parallelization factor {factor} × shards)"
                )
        if reader.kind == PIPE and shards_before != shards_after:
            factor = reader.settings.get("parallelization_factor") or 1
            if isinstance(factor, int):
                lines.append(f"concurrency {factor * shards_before} → {factor * shards_after}")
        if reader.kind == KCL:
            leased_by = reader.settings.get("workers")
            seen, most = (workers or {}).get(reader.name, (leased_by if isinstance(leased_by, int) else 0, None))
            if most is not None and seen and seen * most < shards_after:
                lines.append(
                    f"{counted(seen, 'worker')} × maxLeasesForWorker {most} hold {counted(seen * most, 'lease')}, fewer than "
                    f"{counted(shards_after, 'shard')}: {shards_after - seen * most} would go unread"
                )
            elif seen and shards_after > shards_before:
                each = -(-shards_after // seen)
                lines.append(
                    f"{counted(seen, 'worker')} will hold {counted(shards_after, 'lease')}: each worker's maxLeasesForWorker "
                    f"must be at least {each}, or shards go unread"
                )
        if reader.failing:
            lines.append(f"is {reader.state} now: it reads neither parents nor children until fixed")
        if lines:
            impacts.append(ReaderImpact(reader.label, tuple(lines)))
    return impacts


@dataclass(frozen=True)
class ReshardReaders:
    """The readers a planned reshard affects, for its preview (the CLI's plan and the console's)."""

    impacts: tuple[ReaderImpact, ...]
    unavailable: tuple[str, ...]

    def lines(self) -> list[str]:
        """One line per effect on a reader, and one for the services that could not be read (none
        when no reader was found)."""
        lines = [f"reader {impact.reader}: {line}" for impact in self.impacts for line in impact.lines]
        if self.unavailable:
            lines.append("readers not checked: " + "; ".join(self.unavailable))
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"affected": [impact.to_json() for impact in self.impacts], "unavailable": list(self.unavailable)}


def _parents_backlog(reader: Reader, parents: Sequence[str]) -> str:
    if reader.shards is not None:
        positions = [p for p in reader.shards if p.shard_id in parents]
        records = [p.records_behind for p in positions]
        millis = [p.millis_behind for p in positions if p.millis_behind is not None]
        if positions and all(r is not None for r in records):
            total = sum(r for r in records if r is not None)
            return f" (the parents' backlog: {counted(total, 'record')}, {format_millis(max(millis, default=0))})"
        if millis:
            return f" (the parents' backlog: {format_millis(max(millis))})"
        return ""
    if reader.millis_behind is not None:
        return f" (now {format_millis(reader.millis_behind)} behind)"
    return " (its backlog is unknown)"


# ---- the fleet: the worst reader of every stream, cheaply -----------------------------------------


@dataclass(frozen=True)
class FleetReaders:
    """The worst known reader of each stream ({stream: (reader label, millis behind)}), from the
    mappings and delivery streams of the whole region and one metric batch; `unavailable` as above."""

    worst: Mapping[str, tuple[str, int]]
    unavailable: tuple[str, ...]


async def fleet_reader_lag(backend: Any, streams: Sequence[str], *, now: datetime | None = None) -> FleetReaders:
    """The worst Lambda, Firehose or Flink reader of each of `streams`, in a number of calls that grows
    with the readers, not the streams: one page-through of every event source mapping in the region
    (EFO mappings name their stream in the consumer's ARN), one of the delivery streams with a
    Kinesis source and one of the Flink applications (each described, a few at once), and one
    batched GetMetricData pass for all their lag. EFO consumers and KCL applications are left to
    `kconsole readers STREAM` (finding them costs calls per stream), and Pipes publish no lag."""
    wanted = set(streams)
    found = Found()
    mappings, delivery, applications = await asyncio.gather(
        guarded(found, "Lambda", backend.event_source_mappings(None)),
        guarded(found, "Firehose", backend.delivery_streams_from_kinesis()),
        guarded(found, "Managed Service for Apache Flink", backend.flink_applications()),
    )
    metrics = Metrics()
    readers: list[tuple[str, str, MetricQuery]] = []  # (stream, label, lag query)
    for mapping in mappings or ():
        stream = stream_of_source(mapping.get("EventSourceArn"))
        function = function_name(mapping.get("FunctionArn"))
        if stream in wanted and function:
            readers.append((stream, f"lambda {function}", lambda_queries(function)[0]))
    for description in delivery or ():
        stream = stream_of_source(delivery_source(description))
        name = str(description.get("DeliveryStreamName", ""))
        if stream in wanted and name:
            readers.append((stream, f"firehose {name}", firehose_queries(name)[0]))
    for application in applications or ():
        name = flink_name(application)
        for stream in sorted(flink_streams(application) & wanted):
            readers.append((stream, f"flink {name}", flink_queries(name)[0]))
    metrics.want(query for _, _, query in readers)
    await metrics.read(backend, now)
    worst: dict[str, tuple[str, int]] = {}
    for stream, label, query in readers:
        millis = metrics.latest(query)
        if millis is not None and (stream not in worst or worst[stream][1] < millis):
            worst[stream] = (label, millis)
    if metrics.problem:
        found.unavailable.setdefault("CloudWatch", metrics.problem)
    return FleetReaders(worst, tuple(found.unavailable[s] for s in sorted(found.unavailable)))
