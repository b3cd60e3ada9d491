"""Finding positions by reading: the lease table as read (`read_table`), a shard read forward
(`ShardReader`) to find the last record before a time, the stream's retention, and the records
between a lease's old and new checkpoints. Only reads, through the backend given."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from console.backend.protocol import ConsoleBackend
from console.consumers.leases import (
    AT_TIMESTAMP,
    LATEST,
    LEASE_COUNTER,
    LEASE_KEY,
    SHARD_END,
    TRIM_HORIZON,
    Lease,
    is_lease_item,
    leases_for_stream,
    looks_like_lease_item,
)
from console.consumers.rewind_plan import AGAIN, SAME, SKIPPED, Move, Target, iso_millis
from console.consumers.workers import check_lease_table
from console.errors import BadInput, ConsoleError
from console.read.cursor import AFTER_SEQUENCE_NUMBER, ShardCursor
from console.read.positions import CLOCK_SKEW
from console.words import counted

MAX_SCANNED = 1_000_000  # records read at most to find one shard's point before a time
MAX_EMPTY_PAGES = 20
PAGE = 10_000
LOOK_BACK = (60.0, 3600.0, 86400.0, 7 * 86400.0)  # seconds before the point to start looking for its predecessor


# ---- reading the table and the shards ------------------------------------------------------------


@dataclass(frozen=True)
class LeaseTable:
    leases: dict[str, Lease]  # by lease key, this stream's
    items: dict[str, dict[str, Any]]  # the raw items, by lease key
    counters: dict[str, int | None]  # every lease in the table (any stream), for the running-app check


async def read_table(backend: ConsoleBackend, table: str, stream: str) -> LeaseTable:
    """The stream's leases; BadInput when the table is not a KCL lease table or holds none of them."""
    await check_lease_table(backend, table)
    items = await backend.scan_table(table)
    if items and not any(looks_like_lease_item(item) for item in items):
        raise BadInput(
            f"table {table!r} is not a KCL lease table: of {counted(len(items), 'item')} read, none has leaseKey, "
            "leaseCounter and checkpoint",
            code="not_a_lease_table",
        )
    leases = leases_for_stream(items, stream)
    if not leases:
        raise BadInput(f"table {table!r} holds no lease of stream {stream}", code="not_a_lease_table")
    raw = {str(item[LEASE_KEY]["S"]): item for item in items if is_lease_item(item) and "S" in item[LEASE_KEY]}
    counters = {key: lease_counter(item) for key, item in raw.items()}
    return LeaseTable({lease.lease_key: lease for lease in leases}, raw, counters)


def lease_counter(item: Mapping[str, Any]) -> int | None:
    value = (item.get(LEASE_COUNTER) or {}).get("N")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


END = 10**130  # past every sequence number (they have at most 128 digits)


def position_of(checkpoint: str | None) -> int:
    """Where a checkpoint sits in its shard, for comparing two of them (exactly: sequence numbers
    are larger than a float can hold)."""
    if checkpoint in (None, TRIM_HORIZON):
        return -1
    if checkpoint in (SHARD_END, LATEST, AT_TIMESTAMP):
        return END
    return int(checkpoint)


class ShardReader:
    """Reads one shard forward from a start, a page at a time (through ShardCursor: expired iterators
    are renewed), paced lightly: a stopped application's shards are the only readers."""

    def __init__(self, backend: ConsoleBackend, stream: str, shard_id: str) -> None:
        self.backend, self.stream, self.shard_id = backend, stream, shard_id

    async def pages(self, iterator_type: str, **where: Any) -> AsyncIterator[list[dict[str, Any]]]:
        async def start() -> str:
            return await self.backend.get_shard_iterator(self.stream, self.shard_id, iterator_type, **where)

        cursor = ShardCursor(
            stream=self.stream,
            shard_id=self.shard_id,
            iterator=await start(),
            get_shard_iterator=self.backend.get_shard_iterator,
            get_records=self.backend.get_records,
            restart=start,
            limit=PAGE,
        )
        empty = 0
        while True:
            page = await cursor.read()
            yield page.records
            empty = 0 if page.records else empty + 1
            if page.ended or cursor.at_tip(page) or empty >= MAX_EMPTY_PAGES:
                return

    async def first_from(self, iterator_type: str, **where: Any) -> dict[str, Any] | None:
        async for records in self.pages(iterator_type, **where):
            if records:
                return records[0]
        return None

    async def count(self, after: str, through: str | None, cap: int) -> int | None:
        """Records after `after` (a sequence number or TRIM_HORIZON) up to and including `through`
        (None: to the tip or the shard's end); None when more than `cap`."""
        if after == TRIM_HORIZON:
            pages = self.pages(TRIM_HORIZON)
        else:
            pages = self.pages(AFTER_SEQUENCE_NUMBER, sequence_number=after)
        bound = None if through is None else int(through)
        total = 0
        async for records in pages:
            for record in records:
                if bound is not None and int(record["SequenceNumber"]) > bound:
                    return total
                total += 1
                if total > cap:
                    return None
        return total

    async def last_before(self, bound: str | None, moment: datetime, oldest: datetime) -> str:
        """The last record before sequence number `bound` (None: the shard's last record), looking back
        from `moment` in widening steps; TRIM_HORIZON when retention holds none."""
        limit = None if bound is None else int(bound)
        for back in (*LOOK_BACK, None):
            start = None if back is None else moment - timedelta(seconds=back)
            horizon = start is None or start <= oldest
            pages = self.pages(TRIM_HORIZON) if horizon else self.pages(AT_TIMESTAMP, timestamp=start)
            last, scanned = None, 0
            async for records in pages:
                done = False
                for record in records:
                    if limit is not None and int(record["SequenceNumber"]) >= limit:
                        done = True
                        break
                    last = record["SequenceNumber"]
                scanned += len(records)
                if done:
                    break
                if scanned > MAX_SCANNED:
                    raise ConsoleError(
                        f"{self.shard_id}: more than {MAX_SCANNED:,} records before the point; "
                        "give the sequence number with --to SHARD=SEQ instead"
                    )
            if last is not None:
                return str(last)
            if horizon:
                return TRIM_HORIZON
        return TRIM_HORIZON  # pragma: no cover - the last step starts at the horizon


async def check_retention(backend: ConsoleBackend, stream: str, target: Target, now: datetime) -> datetime:
    summary = await backend.describe_stream_summary(stream)
    oldest = now - timedelta(hours=summary.retention_hours)
    if target.moment is not None and target.moment < oldest - CLOCK_SKEW:
        raise BadInput(
            f"the point {iso_millis(target.moment)} is beyond {stream}'s retention of {summary.retention_hours} h "
            f"(its oldest records arrived after {iso_millis(oldest)})"
        )
    return oldest


async def with_record_counts(backend: ConsoleBackend, stream: str, moves: Sequence[Move], cap: int) -> list[Move]:
    """Each move with the records between its two checkpoints (read again, or skipped)."""

    async def count(move: Move) -> Move:
        if not move.changes or move.old == move.new:
            return replace(move, direction=SAME, records=0)
        if move.old == AT_TIMESTAMP:
            return replace(move, direction=AGAIN, records=None, note=move.note or "old checkpoint AT_TIMESTAMP")
        reader = ShardReader(backend, stream, move.shard_id)
        # A recreated lease had ended (SHARD_END) before it was cleaned up.
        old = SHARD_END if move.create is not None else (TRIM_HORIZON if move.old is None else move.old)
        low, high = sorted((old, move.new), key=position_of)
        direction = AGAIN if position_of(move.new) < position_of(old) else SKIPPED
        if position_of(low) == END:
            return replace(move, direction=SAME, records=0)
        through = None if position_of(high) == END else high
        try:
            records = await reader.count(low if position_of(low) >= 0 else TRIM_HORIZON, through, cap)
        except ConsoleError as error:
            return replace(move, direction=direction, records=None, note=f"cannot count: {error.message}")
        return replace(move, direction=direction, records=records)

    return list(await asyncio.gather(*(count(move) for move in moves)))


async def record_at(backend: ConsoleBackend, stream: str, shard_id: str, sequence: str) -> dict[str, Any]:
    """The record with this sequence number in this shard, or BadInput (another shard's, or gone)."""
    try:
        record = await ShardReader(backend, stream, shard_id).first_from("AT_SEQUENCE_NUMBER", sequence_number=sequence)
    except BadInput as error:
        raise BadInput(f"{sequence} is not a sequence number of {shard_id}: {error.message}") from None
    if record is None or record["SequenceNumber"] != sequence:
        raise BadInput(f"{sequence} is not a sequence number of {shard_id} (another shard's, or beyond retention)")
    return record


def arrival(record: Mapping[str, Any], fallback: datetime) -> datetime:
    arrival = record.get("ApproximateArrivalTimestamp")
    if isinstance(arrival, datetime):
        return arrival if arrival.tzinfo else arrival.replace(tzinfo=UTC)
    return fallback
