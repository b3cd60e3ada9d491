"""Gathering a ConsumerReport: EFO consumers, the lease table's items, and lag per leased shard.
I/O goes through the injected backend (its Kinesis and DynamoDB methods)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from console.consumers.lag import DEFAULT_CONCURRENCY, DEFAULT_SCAN_CAP, ShardLag, measure_lag
from console.consumers.leases import (
    LEASE_KEY,
    Lease,
    is_lease_key_schema,
    leases_for_stream,
    looks_like_lease_item,
    parse_lease,
    table_matches_stream,
)
from console.consumers.report import ConsumerReport, StallTracker, build_report
from console.errors import BadInput, ConsoleError
from console.topology.model import EfoConsumer, Shard
from console.words import counted

SAMPLE_ITEMS = 25  # items read from each table when looking for lease tables
LEASE_PAGE = 250  # lease items per Scan page when measuring lag: small enough to start reading early


async def efo_consumers(backend: Any, stream_arn: str) -> list[EfoConsumer]:
    return sorted(await backend.list_stream_consumers(stream_arn), key=lambda c: c.name)


async def read_leases(backend: Any, table: str, stream: str) -> list[Lease]:
    """The stream's leases in `table`; BadInput (one line) when the table is not a KCL lease table or
    holds no lease of this stream."""
    return [lease async for page in lease_pages(backend, table, stream) for lease in page]


async def lease_pages(
    backend: Any, table: str, stream: str, *, page_size: int | None = None
) -> AsyncIterator[list[Lease]]:
    """The stream's leases in `table`, a page of the table at a time; raises BadInput as read_leases."""
    description = await backend.describe_table(table)
    if not is_lease_key_schema(description):
        keys = ", ".join(f"{k.get('AttributeName')} ({k.get('KeyType')})" for k in description.get("KeySchema", []))
        raise BadInput(
            f"table {table!r} is not a KCL lease table: its key is {keys or 'unknown'}; "
            f"a lease table's is {LEASE_KEY} (HASH)",
            code="not_a_lease_table",
        )
    seen_items, seen_leases, other_streams, lease_like = 0, 0, set(), False
    async for items in backend.scan_pages(table, page_size=page_size):
        lease_like = lease_like or any(looks_like_lease_item(item) for item in items)
        if items and not lease_like:
            raise BadInput(
                f"table {table!r} is not a KCL lease table: of {counted(len(items), 'item')} read, none has "
                "leaseKey, leaseCounter and checkpoint",
                code="not_a_lease_table",
            )
        leases = leases_for_stream(items, stream)
        seen_items, seen_leases = seen_items + len(items), seen_leases + len(leases)
        if not leases:
            other_streams |= {parse_lease(item).stream_name or "?" for item in items if looks_like_lease_item(item)}
        yield leases
    if not seen_leases and seen_items and sorted(other_streams) != ["?"]:
        raise BadInput(
            f"lease table {table!r} holds no lease of stream {stream!r} "
            f"(its streams: {', '.join(sorted(other_streams)[:10])})",
            code="not_this_stream",
        )


async def find_lease_tables(backend: Any, stream: str, shards: Sequence[Shard]) -> list[str]:
    """Tables keyed on leaseKey whose leases are this stream's (leases.table_matches_stream): not
    any lease table that happens to hold a shard id the stream also has."""
    names = await backend.table_names()
    limit = asyncio.Semaphore(8)

    async def check(name: str) -> str | None:
        async with limit:
            if not is_lease_key_schema(await backend.describe_table(name)):
                return None
            sample = await backend.scan_table(name, limit=SAMPLE_ITEMS)
            whole = len(sample) < SAMPLE_ITEMS
            return name if table_matches_stream(sample, stream, shards, whole_table=whole) else None

    found = await asyncio.gather(*(check(name) for name in names))
    return [name for name in found if name]


async def consumer_report(
    backend: Any,
    stream: str,
    *,
    lease_table: str | None,
    cap: int = DEFAULT_SCAN_CAP,
    tracker: StallTracker | None = None,
    shards: Sequence[Shard] | None = None,
    stream_arn: str | None = None,
    efo: Sequence[EfoConsumer] | None = None,
    **lag_options: Any,
) -> ConsumerReport:
    """Everything the consumers view shows, in one pass: EFO consumers (listed unless `efo` gives
    them) and, with a lease table, every lease with its lag and state and the open shards without a
    lease."""
    if stream_arn is None:
        stream_arn = (await backend.describe_stream_summary(stream)).arn
    if shards is None:
        shards = await backend.all_shards(stream)
    efo_unknown = None
    if efo is None:
        try:
            efo = await efo_consumers(backend, stream_arn)
        except ConsoleError as error:
            if error.code != "unsupported_operation":
                raise
            efo = []
            efo_unknown = error.message  # the endpoint lacks ListStreamConsumers: one line, the rest stands
    known = {shard.shard_id for shard in shards}
    leases: list[Lease] = []
    lags: dict[str, ShardLag] = {}
    if lease_table:
        # Each page of the table is measured while the next one is read: the scan and the reads
        # overlap instead of adding up.
        limit = asyncio.Semaphore(lag_options.pop("concurrency", DEFAULT_CONCURRENCY))
        batches: list[asyncio.Task[dict[str, ShardLag]]] = []
        try:
            async for page in lease_pages(backend, lease_table, stream, page_size=LEASE_PAGE):
                leases.extend(page)
                batches.append(
                    asyncio.ensure_future(
                        measure_lag(
                            backend,
                            stream,
                            [lease for lease in page if lease.shard_id in known],
                            cap=cap,
                            limit=limit,
                            **lag_options,
                        )
                    )
                )
            for measured in await asyncio.gather(*batches):
                lags.update(measured)
        finally:
            for batch in batches:
                batch.cancel()
    report = build_report(stream, lease_table, leases, shards, lags, efo, scan_cap=cap, tracker=tracker)
    return dataclasses.replace(report, efo_unknown=efo_unknown) if efo_unknown else report
