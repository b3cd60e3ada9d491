"""Every reader of a stream, one row each, worst first: Lambda event source mappings (on the stream
and on its EFO consumers), Firehose delivery streams, EventBridge Pipes, Managed Service for Apache
Flink applications that name the stream, EFO consumers and KCL applications (their lease tables).

Each row says how far behind the reader is (time, and records where the leases tell), its errors and
the settings that explain its behaviour. Time behind comes from CloudWatch, the last
METRIC_WINDOW_MINUTES minutes, read in one batched GetMetricData pass for every reader:

    Lambda    AWS/Lambda IteratorAge (Maximum, FunctionName); Errors and Throttles (Sum)
    Firehose  AWS/Firehose KinesisMillisBehindLatest (Maximum), DataReadFromKinesisStream.Records
              and .Bytes (Sum), DeliveryStreamName
    Flink     AWS/KinesisAnalytics millisBehindLatest (Maximum, Application)
    EFO       AWS/Kinesis SubscribeToShardEvent.MillisBehindLatest (Maximum, StreamName + ConsumerName)
    Pipes     publish no iterator age: their lag is unknown
    KCL       from the lease table: records and time between each checkpoint and the tip (lag.py)

A service the endpoint lacks, a permission missing or throttling that outlasts the retries costs one
line in `unavailable` in place of that service's rows. Everything here only reads. I/O goes through
the injected backend (console.backend.protocol.ReaderSources and the Kinesis/DynamoDB calls).

`reshard_impact` says what a reshard does to these readers; `fleet_reader_lag` is the cheap form
for the stream list (mappings and delivery streams of every stream, one metric batch). The models are
in reader_model, the gathering of each kind of reader in reader_sources, the reshard and the fleet in
reader_impact; this module gathers every reader of one stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.look import consumer_report, find_lease_tables
from console.consumers.reader_impact import (
    FleetReaders,
    ReaderImpact,
    ReshardReaders,
    fleet_reader_lag,
    reshard_impact,
)
from console.consumers.reader_model import (
    METRIC_WINDOW_MINUTES,
    Reader,
    ReadersReport,
    ShardPosition,
)
from console.consumers.reader_sources import (
    Found,
    delivery_source,
    flink_names_stream,
    guarded,
    lambda_mappings,
    reads_stream_arn,
    with_metrics,
)

# The command line and the console reach every reader through this module: the models, the
# reshard's effect on the readers and the fleet's worst reader too.
__all__ = [
    "METRIC_WINDOW_MINUTES",
    "FleetReaders",
    "Reader",
    "ReaderImpact",
    "ReadersReport",
    "ReshardReaders",
    "ShardPosition",
    "fleet_reader_lag",
    "readers_for_reshard",
    "readers_report",
    "reshard_impact",
]


async def readers_report(
    backend: Any,
    stream: str,
    *,
    lease_tables: Sequence[str] | None = None,
    now: datetime | None = None,
    scan_cap: int = DEFAULT_SCAN_CAP,
) -> ReadersReport:
    """Every reader of `stream`, worst first. `lease_tables`: the KCL applications' tables (None: find
    them, as `consumers --find-lease-tables` does; an empty list: no KCL applications)."""
    summary = await backend.describe_stream_summary(stream)  # a missing stream is the command's error
    stream_arn = summary.arn
    shards = await backend.all_shards(stream)
    found = Found()

    async def efo_then_mappings() -> None:
        consumers = await guarded(found, "EFO consumers", backend.list_stream_consumers(stream_arn))
        found.efo = sorted(consumers or (), key=lambda c: c.name)
        await lambda_mappings(backend, stream_arn, found)

    async def firehose() -> None:
        described = await guarded(found, "Firehose", backend.delivery_streams_from_kinesis())
        found.delivery_streams = [d for d in described or () if delivery_source(d) == stream_arn]

    async def pipes() -> None:
        described = await guarded(found, "EventBridge Pipes", backend.pipes_from(stream_arn))
        found.pipes = [p for p in described or () if reads_stream_arn(p.get("Source"), stream_arn)]

    async def flink() -> None:
        applications = await guarded(found, "Managed Service for Apache Flink", backend.flink_applications())
        found.flink = [
            (app, named) for app in applications or () if (named := flink_names_stream(app, stream, stream_arn))
        ]

    async def kcl() -> None:
        tables = lease_tables
        if tables is None:
            tables = await guarded(found, "KCL lease tables", find_lease_tables(backend, stream, shards))
        for table in tables or ():
            report = await guarded(
                found,
                f"KCL lease table {table}",
                consumer_report(
                    backend,
                    stream,
                    lease_table=table,
                    shards=shards,
                    stream_arn=stream_arn,
                    efo=(),  # the EFO consumers are listed once, for their own rows
                    cap=scan_cap,
                    now=now,
                ),
            )
            if report is not None:
                found.kcl.append(report)

    await asyncio.gather(efo_then_mappings(), firehose(), pipes(), flink(), kcl())
    readers = await with_metrics(backend, stream, found, now)
    return ReadersReport(
        stream,
        tuple(sorted(readers, key=Reader.sort_key)),
        tuple(found.unavailable[source] for source in sorted(found.unavailable)),
    )


async def readers_for_reshard(
    backend: Any,
    stream: str,
    *,
    closes: Iterable[str],
    shards_before: int,
    shards_after: int,
    lease_tables: Sequence[str] | None = None,
    now: datetime | None = None,
) -> ReshardReaders:
    """Every reader of `stream` (readers_report) and what a reshard closing `closes` and going from
    `shards_before` to `shards_after` open shards does to each (reshard_impact)."""
    report = await readers_report(backend, stream, lease_tables=lease_tables, now=now)
    impacts = reshard_impact(report, parents=sorted(closes), shards_before=shards_before, shards_after=shards_after)
    return ReshardReaders(tuple(impacts), report.unavailable)
