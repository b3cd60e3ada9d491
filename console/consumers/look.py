"""Gathering a ConsumerReport: EFO consumers, the lease table's items, and lag per leased shard.
I/O goes through the injected backend (its Kinesis and DynamoDB methods)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from console.consumers.lag import DEFAULT_SCAN_CAP, measure_lag
from console.consumers.leases import (
    LEASE_KEY,
    Lease,
    is_lease_key_schema,
    leases_for_stream,
    looks_like_lease_item,
    parse_lease,
    table_matches_stream,
)
from console.consumers.report import ConsumerReport, EfoConsumer, StallTracker, build_report
from console.errors import BadInput
from console.topology.model import Shard

SAMPLE_ITEMS = 25  # items read from each table when looking for lease tables


async def efo_consumers(backend: Any, stream_arn: str) -> list[EfoConsumer]:
    raw = await backend.list_stream_consumers(stream_arn)
    return sorted((EfoConsumer.from_api(item) for item in raw), key=lambda c: c.name)


async def read_leases(backend: Any, table: str, stream: str) -> list[Lease]:
    """The stream's leases in `table`; BadInput (one line) when the table is not a KCL lease table or
    holds no lease of this stream."""
    description = await backend.describe_table(table)
    if not is_lease_key_schema(description):
        keys = ", ".join(f"{k.get('AttributeName')} ({k.get('KeyType')})" for k in description.get("KeySchema", []))
        raise BadInput(f"table {table!r} is not a KCL lease table: its key is {keys or 'unknown'}; "
                       f"a lease table's is {LEASE_KEY} (HASH)", code="not_a_lease_table")
    items = await backend.scan_table(table)
    if items and not any(looks_like_lease_item(item) for item in items):
        raise BadInput(f"table {table!r} is not a KCL lease table: none of its {len(items)} items has "
                       "leaseKey, leaseCounter and checkpoint", code="not_a_lease_table")
    leases = leases_for_stream(items, stream)
    if not leases and items:
        others = sorted({parse_lease(item).stream_name or "?" for item in items if looks_like_lease_item(item)})
        if others != ["?"]:
            raise BadInput(f"lease table {table!r} holds no lease of stream {stream!r} "
                           f"(its streams: {', '.join(others[:10])})", code="not_this_stream")
    return leases


async def find_lease_tables(backend: Any, stream: str, shard_ids: Sequence[str]) -> list[str]:
    """Tables keyed on leaseKey whose items look like KCL leases of this stream."""
    names = await backend.table_names()
    limit = asyncio.Semaphore(8)

    async def check(name: str) -> str | None:
        async with limit:
            if not is_lease_key_schema(await backend.describe_table(name)):
                return None
            sample = await backend.scan_table(name, limit=SAMPLE_ITEMS)
            return name if table_matches_stream(sample, stream, shard_ids) else None

    found = await asyncio.gather(*(check(name) for name in names))
    return [name for name in found if name]


async def consumer_report(backend: Any, stream: str, *, lease_table: str | None, cap: int = DEFAULT_SCAN_CAP,
                          tracker: StallTracker | None = None, shards: Sequence[Shard] | None = None,
                          stream_arn: str | None = None, **lag_options: Any) -> ConsumerReport:
    """Everything the consumers view shows, in one pass: EFO consumers and, with a lease table, every
    lease with its lag and state and the open shards without a lease."""
    if stream_arn is None:
        stream_arn = (await backend.describe_stream(stream)).arn
    if shards is None:
        shards = await backend.all_shards(stream)
    efo = await efo_consumers(backend, stream_arn)
    leases = await read_leases(backend, lease_table, stream) if lease_table else []
    known = {shard.shard_id for shard in shards}
    lags = await measure_lag(backend, stream, [lease for lease in leases if lease.shard_id in known],
                             cap=cap, **lag_options)
    return build_report(stream, lease_table, leases, shards, lags, efo, scan_cap=cap, tracker=tracker)
