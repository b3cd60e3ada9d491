"""How far behind each lease is: records between its checkpoint and the tip, and how old the first
unprocessed record is.

Records behind are counted exactly by reading the shard from the checkpoint (AFTER_SEQUENCE_NUMBER)
to the tip, up to a scan cap; past the cap the count is unknown (None) and the read stops, so a
far-behind consumer costs at most cap/10,000 pages. Time behind is now minus the
ApproximateArrivalTimestamp of the first record after the checkpoint (0 when there is none).
Counted are Kinesis records: a KPL aggregate counts once, and a checkpoint part-way into one
(checkpointSubSequenceNumber > 0) counts it as done.

Shards are read in parallel (a bounded number at once) and each shard's reads are paced, since the
consumer being measured shares the shard's 5 GetRecords calls per second. I/O goes through the
injected backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.backend.protocol import ConsoleBackend
from console.consumers.leases import AT_TIMESTAMP, LATEST, TRIM_HORIZON, Lease
from console.errors import ConsoleError
from console.read.cursor import AFTER_SEQUENCE_NUMBER, ShardCursor

DEFAULT_SCAN_CAP = 10_000  # records counted per shard before "more than the cap"
MAX_SCAN_CAP = 1_000_000
MAX_PAGE = 10_000  # GetRecords Limit, AWS's maximum
DEFAULT_CONCURRENCY = 64
DEFAULT_MIN_INTERVAL = 0.5  # seconds between reads of one shard: 2 of its 5 calls/s, the rest stay the consumer's
MAX_EMPTY_PAGES = 20  # AWS can answer empty pages short of the tip; give up counting after this many


@dataclass(frozen=True, slots=True)
class ShardLag:
    shard_id: str
    records_behind: int | None  # None: more than the scan cap, or not measurable (see problem)
    millis_behind: int | None
    over_cap: bool = False
    problem: str | None = None


async def measure_lag(
    backend: ConsoleBackend,
    stream: str,
    leases: Iterable[Lease],
    *,
    cap: int = DEFAULT_SCAN_CAP,
    concurrency: int = DEFAULT_CONCURRENCY,
    min_interval: float = DEFAULT_MIN_INTERVAL,
    now: datetime | None = None,
    limit: asyncio.Semaphore | None = None,
) -> dict[str, ShardLag]:
    """Lag per shard for every lease that is not finished; shards the stream does not have should be
    filtered out by the caller (they are reported, not read). Callers measuring several batches at
    once share one `limit` so the bound on reads in flight holds across them."""
    limit = limit or asyncio.Semaphore(concurrency)
    moment = now or datetime.now(UTC)

    async def one(lease: Lease) -> ShardLag:
        async with limit:
            try:
                return await _shard_lag(backend, stream, lease, cap=cap, min_interval=min_interval, now=moment)
            except ConsoleError as error:
                return ShardLag(lease.shard_id, None, None, problem=f"cannot read from the checkpoint: {error}")

    todo = [lease for lease in leases if not lease.finished]
    results = await asyncio.gather(*(one(lease) for lease in todo))
    return {lag.shard_id: lag for lag in results}


async def _shard_lag(
    backend: ConsoleBackend, stream: str, lease: Lease, *, cap: int, min_interval: float, now: datetime
) -> ShardLag:
    if lease.problem:
        return ShardLag(lease.shard_id, None, None, problem=lease.problem)
    if lease.checkpoint == LATEST:
        # The worker starts at the tip when it takes the lease and has not checkpointed since:
        # nothing written before that is owed, and what came after is not known from the table.
        return ShardLag(lease.shard_id, 0, 0)
    if lease.checkpoint == AT_TIMESTAMP:
        return ShardLag(
            lease.shard_id,
            None,
            None,
            problem="checkpoint AT_TIMESTAMP: the start time is in the application, not the lease",
        )
    if lease.checkpoint == TRIM_HORIZON:

        async def start() -> str:
            return await backend.get_shard_iterator(stream, lease.shard_id, TRIM_HORIZON)
    else:

        async def start() -> str:
            return await backend.get_shard_iterator(
                stream, lease.shard_id, AFTER_SEQUENCE_NUMBER, sequence_number=lease.checkpoint
            )

    cursor = ShardCursor(
        stream=stream,
        shard_id=lease.shard_id,
        iterator=await start(),
        get_shard_iterator=backend.get_shard_iterator,
        get_records=backend.get_records,
        restart=start,
        limit=min(MAX_PAGE, cap + 1),
        min_interval=min_interval,
    )
    count, first_arrival, empty_pages = 0, None, 0
    while True:
        page = await cursor.read()
        if page.records:
            empty_pages = 0
            if first_arrival is None:
                first_arrival = page.records[0].get("ApproximateArrivalTimestamp")
            count += len(page.records)
            if count > cap:
                return ShardLag(lease.shard_id, None, _millis_since(first_arrival, now), over_cap=True)
        else:
            empty_pages += 1
        # MillisBehindLatest 0: this answer reached the tip (no need for one more, empty, read).
        caught_up = page.millis_behind == 0 or (not page.records and page.millis_behind is None)
        if page.ended or caught_up:
            return ShardLag(lease.shard_id, count, _millis_since(first_arrival, now))
        if empty_pages >= MAX_EMPTY_PAGES:
            return ShardLag(
                lease.shard_id,
                count,
                _millis_since(first_arrival, now),
                problem=f"still {page.millis_behind} ms from the tip after {empty_pages} empty reads",
            )
        cursor.limit = min(MAX_PAGE, cap + 1 - count)


def _millis_since(arrival: Any, now: datetime) -> int:
    if arrival is None:
        return 0
    if isinstance(arrival, (int, float)):
        arrival = datetime.fromtimestamp(arrival, UTC)
    if arrival.tzinfo is None:
        arrival = arrival.replace(tzinfo=UTC)
    return max(0, int((now - arrival).total_seconds() * 1000))
