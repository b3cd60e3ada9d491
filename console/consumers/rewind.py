"""Moving a KCL application's checkpoints: rewind to a point, skip one record, put back what a rewind
changed, restore saved positions, clone the lease table for a second application. Prepared and run
here once; the command line and the console render the plan and collect the confirmation:

    plan = await prepare_rewind(backend, "orders", "orders-app", parse_target(["-1h"], now), now=now)
    plan.lines()                                        # the preview both faces show
    result = await run(backend, plan, action_log=ActionLog.default(), watch_seconds=10)

The KCL resumes *after* the checkpointed sequence number, so "from time T" checkpoints the last record
before the first one AT_TIMESTAMP T returns, found by reading the shard (TRIM_HORIZON when retention
holds none before it). A shard closed by a reshard whose parent is put back is set to TRIM_HORIZON:
the KCL reads it once the parent is done, as it does. A parent whose lease was already cleaned up is
recreated as the KCL writes lease items (single-stream and multi-stream keys), unowned.

Against a running application: `run` reads every lease's counter, waits `watch_seconds` (the KCL's
failoverTimeMillis is 10 s) and refuses when any moved; each write is a conditional UpdateItem on the
lease's counter and owner as read, so a worker that starts meanwhile makes the write fail instead of
being overwritten. The write bumps the counter (a worker still holding the lease loses it, as after
an eviction) and removes the owner, so the restarted application takes the lease. Every write goes
through the action log with the lease's old checkpoint beside the new one: `prepare_undo` reads it
back. A lost reply is settled by reading the item back. No I/O of its own: it calls the backend given.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from console.consumers.leases import (
    AT_TIMESTAMP,
    CHECKPOINT,
    CHECKPOINT_OWNER,
    CHECKPOINT_SUBSEQUENCE,
    CHILD_SHARD_IDS,
    LATEST,
    LEASE_COUNTER,
    LEASE_KEY,
    LEASE_OWNER,
    OWNER_SWITCHES,
    PARENT_SHARD_IDS,
    PENDING_CHECKPOINT,
    SHARD_END,
    TRIM_HORIZON,
    Lease,
    is_lease_item,
    leases_for_stream,
    looks_like_lease_item,
)
from console.consumers.workers import check_lease_table
from console.errors import BadInput, ConsoleError, PlanRejected
from console.read.cursor import AFTER_SEQUENCE_NUMBER, ShardCursor
from console.read.decoding import decode_api_record, text_line
from console.read.positions import CLOCK_SKEW, parse_duration, parse_time
from console.words import counted

DEFAULT_WATCH_SECONDS = 10.0  # the KCL's failoverTimeMillis default
MAX_SCANNED = 1_000_000  # records read at most to find one shard's point before a time
MAX_EMPTY_PAGES = 20
PAGE = 10_000
LOOK_BACK = (60.0, 3600.0, 86400.0, 7 * 86400.0)  # seconds before the point to start looking for its predecessor
PENDING_ATTRIBUTES = (PENDING_CHECKPOINT, "pendingCheckpointSubSequenceNumber", "pendingCheckpointState")
LOGGED = "consumers checkpoints"

AGAIN, SKIPPED, SAME = "again", "skipped", "same"


# ---- where to ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """trim-horizon, latest, a moment, or a sequence number per shard (the record read next)."""

    kind: str  # "trim-horizon" | "latest" | "time" | "sequences"
    moment: datetime | None = None
    sequences: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "time" and self.moment is not None:
            return self.moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self.kind == "sequences":
            return ", ".join(f"{shard}={seq}" for shard, seq in self.sequences.items())
        return self.kind


def parse_target(values: Sequence[str], now: datetime) -> Target:
    """--to: trim-horizon | latest | an ISO-8601 time | -DURATION (e.g. -1h) | shardId-…=SEQ (repeatable)."""
    values = [value.strip() for value in values if value and value.strip()]
    if not values:
        raise BadInput("--to needs trim-horizon, latest, a time (ISO 8601 or -1h) or shardId-…=SEQ", code="usage")
    if any("=" in value for value in values):
        sequences: dict[str, str] = {}
        for value in values:
            shard, _, sequence = value.partition("=")
            if not shard.startswith("shardId-") or not sequence.isdigit() or len(sequence) > 128:
                raise BadInput(f"--to {value[:80]!r}: per shard, give shardId-…=SEQUENCE_NUMBER (digits)")
            sequences[shard] = sequence
        return Target("sequences", sequences=sequences)
    if len(values) > 1:
        raise BadInput("--to takes one point (or several shardId-…=SEQ)", code="usage")
    raw = values[0]
    lowered = raw.lower().replace("_", "-")
    if lowered in ("trim-horizon", "latest"):
        return Target(lowered)
    if raw.startswith("-"):
        moment = now - parse_duration(raw[1:], "--to")
    else:
        try:
            moment = parse_time(raw, "--to")
        except BadInput:
            raise BadInput(
                f"--to must be trim-horizon, latest, an ISO-8601 time, -DURATION (e.g. -1h) or "
                f"shardId-…=SEQ; got {raw[:80]!r}"
            ) from None
    if moment > now + CLOCK_SKEW:
        raise BadInput(f"--to {_iso(moment)} is in the future (now is {_iso(now)})")
    return Target("time", moment=moment)


# ---- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One lease's checkpoint, as read and as planned, and the records between the two."""

    lease_key: str
    shard_id: str
    old: str | None
    new: str
    owner: str | None
    counter: int | None
    old_subsequence: int = 0
    new_subsequence: int = 0
    records: int | None = 0  # read again or skipped; None: more than the scan cap (or not countable)
    direction: str = SAME
    create: dict | None = None  # the whole lease item to write (a parent lease already cleaned up)
    note: str = ""

    @property
    def changes(self) -> bool:
        return self.create is not None or (self.old, self.old_subsequence) != (self.new, self.new_subsequence)

    def records_text(self, cap: int) -> str:
        if self.direction == SAME:
            return "-"
        amount = f"more than {cap:,}" if self.records is None else f"{self.records:,}"
        return f"{amount} {'read again' if self.direction == AGAIN else 'skipped'}"

    def to_json(self) -> dict:
        return {
            "lease_key": self.lease_key,
            "shard_id": self.shard_id,
            "owner": self.owner,
            "lease_counter": self.counter,
            "checkpoint": self.old,
            "new_checkpoint": self.new,
            "new_subsequence": self.new_subsequence,
            "records": self.records,
            "direction": self.direction,
            "recreated": self.create is not None,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class CheckpointPlan:
    """What a rewind, skip, undo, import or clone changes; `lines()` is the preview."""

    action: str  # rewind | skip | undo | import | clone
    stream: str
    table: str
    target: str
    moves: tuple[Move, ...]
    scan_cap: int
    refusal: str | None = None
    record: dict | None = None  # skip: the record skipped, decoded
    record_line: str | None = None
    to_table: str | None = None  # clone: the new application's table
    clone_items: tuple[dict, ...] = ()
    undo_of: str | None = None

    @property
    def changed(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.changes)

    @property
    def summary(self) -> str:
        if self.action == "clone":
            return f"create lease table {self.to_table} with {counted(len(self.clone_items), 'lease')} of {self.stream}"
        return f"move {counted(len(self.changed), 'checkpoint')} in {self.table} ({self.action} to {self.target})"

    def lines(self) -> list[str]:
        """The preview: one row per lease, the records each move reads again or skips, the refusal."""
        head = f"{self.action} {self.stream} in {self.table} to {self.target}" + (
            f" (undoing {self.undo_of})" if self.undo_of else ""
        )
        if self.action == "clone":
            head = f"clone {self.table} to new lease table {self.to_table}: {len(self.clone_items)} lease(s), unowned"
        rows = [
            (
                move.shard_id,
                move.owner or "-",
                move.old or "-",
                move.new + (" (recreated)" if move.create is not None else ""),
                move.records_text(self.scan_cap),
                move.note,
            )
            for move in self.moves
        ]
        lines = [head]
        if self.record_line:
            lines.append(f"record skipped: {self.record_line}")
        lines.append(_table(("SHARD", "OWNER", "CHECKPOINT", "NEW CHECKPOINT", "RECORDS", ""), rows))
        again = [m.records for m in self.changed if m.direction == AGAIN]
        skipped = [m.records for m in self.changed if m.direction == SKIPPED]
        if again:
            lines.append(f"read again: {_total(again, self.scan_cap)} record(s)")
        if skipped:
            lines.append(f"skipped: {_total(skipped, self.scan_cap)} record(s)")
        if self.action != "clone":
            lines.append(
                "the application must be stopped: leases whose counter moves while watched refuse the change; "
                "changed leases are left unowned"
            )
        if self.refusal:
            lines.append(f"refused: {self.refusal}")
        elif not self.changed and self.action != "clone":
            lines.append("nothing to change: every checkpoint is already there")
        return lines

    def to_json(self) -> dict:
        document: dict[str, Any] = {
            "action": self.action,
            "stream": self.stream,
            "lease_table": self.table,
            "target": self.target,
            "scan_cap": self.scan_cap,
            "leases": [move.to_json() for move in self.moves],
            "refusal": self.refusal,
        }
        if self.record is not None:
            document["record"] = self.record
        if self.to_table is not None:
            document["to_table"] = self.to_table
        if self.undo_of is not None:
            document["undo_of"] = self.undo_of
        return document


def _total(amounts: list[int | None], cap: int) -> str:
    known = sum(a for a in amounts if a is not None)
    return f"more than {known + cap:,}" if any(a is None for a in amounts) else f"{known:,}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    from console.read.printable import printable  # lease owners and checkpoints come from the table

    cells = [list(header)] + [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


# ---- reading the table and the shards ------------------------------------------------------------


@dataclass(frozen=True)
class LeaseTable:
    leases: dict[str, Lease]  # by lease key, this stream's
    items: dict[str, dict]  # the raw items, by lease key
    counters: dict[str, int | None]  # every lease in the table (any stream), for the running-app check


async def read_table(backend: Any, table: str, stream: str) -> LeaseTable:
    """The stream's leases; BadInput when the table is not a KCL lease table or holds none of them."""
    await check_lease_table(backend, table)
    items = await backend.scan_table(table)
    if items and not any(looks_like_lease_item(item) for item in items):
        raise BadInput(
            f"table {table!r} is not a KCL lease table: none of its {len(items)} items has leaseKey, "
            "leaseCounter and checkpoint",
            code="not_a_lease_table",
        )
    leases = leases_for_stream(items, stream)
    if not leases:
        raise BadInput(f"table {table!r} holds no lease of stream {stream}", code="not_a_lease_table")
    raw = {str(item[LEASE_KEY]["S"]): item for item in items if is_lease_item(item) and "S" in item[LEASE_KEY]}
    counters = {key: _counter(item) for key, item in raw.items()}
    return LeaseTable({lease.lease_key: lease for lease in leases}, raw, counters)


def _counter(item: Mapping[str, Any]) -> int | None:
    value = (item.get(LEASE_COUNTER) or {}).get("N")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


END = 10**130  # past every sequence number (they have at most 128 digits)


def _position(checkpoint: str | None) -> int:
    """Where a checkpoint sits in its shard, for comparing two of them (exactly: sequence numbers
    are larger than a float can hold)."""
    if checkpoint in (None, TRIM_HORIZON):
        return -1
    if checkpoint in (SHARD_END, LATEST, AT_TIMESTAMP):
        return END
    return int(checkpoint)


class _Reader:
    """Reads one shard forward from a start, a page at a time (through ShardCursor: expired iterators
    are renewed), paced lightly: a stopped application's shards are the only readers."""

    def __init__(self, backend: Any, stream: str, shard_id: str) -> None:
        self.backend, self.stream, self.shard_id = backend, stream, shard_id

    async def pages(self, iterator_type: str, **where: Any):
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

    async def first_from(self, iterator_type: str, **where: Any) -> dict | None:
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


async def _check_retention(backend: Any, stream: str, target: Target, now: datetime) -> datetime:
    summary = await backend.describe_stream_summary(stream)
    oldest = now - timedelta(hours=summary.retention_hours)
    if target.moment is not None and target.moment < oldest - CLOCK_SKEW:
        raise BadInput(
            f"--to {_iso(target.moment)} is beyond {stream}'s retention of {summary.retention_hours} h "
            f"(its oldest records arrived after {_iso(oldest)})"
        )
    return oldest


# ---- prepare -------------------------------------------------------------------------------------


async def prepare_rewind(
    backend: Any,
    stream: str,
    table: str,
    target: Target,
    *,
    now: datetime,
    shards: Sequence[str] = (),
    scan_cap: int = 10_000,
) -> CheckpointPlan:
    """Each lease's new checkpoint for `target`, found by reading, with the records it reads again or
    skips; across a reshard, children of a parent put back go to TRIM_HORIZON, and a parent lease
    already cleaned up is recreated (or the plan is refused, saying why)."""
    oldest = await _check_retention(backend, stream, target, now)
    lease_table = await read_table(backend, table, stream)
    stream_shards = {shard.shard_id: shard for shard in await backend.all_shards(stream)}
    by_shard = {lease.shard_id: lease for lease in lease_table.leases.values()}
    wanted = set(shards)
    for shard_id in wanted | set(target.sequences):
        if shard_id not in stream_shards:
            raise BadInput(f"{stream} has no shard {shard_id}", code="not_found")
        if shard_id not in by_shard and shard_id not in target.sequences:
            raise BadInput(f"{table} has no lease of {shard_id}", code="not_found")
    for shard_id in target.sequences:
        if shard_id not in by_shard:
            raise BadInput(f"{table} has no lease of {shard_id}", code="not_found")

    notes: dict[str, str] = {}

    async def point_of(shard_id: str) -> str:
        shard = stream_shards[shard_id]
        reader = _Reader(backend, stream, shard_id)
        if target.kind == "trim-horizon":
            return TRIM_HORIZON
        if target.kind == "latest":
            return LATEST if shard.is_open else SHARD_END
        if target.kind == "sequences":
            sequence = target.sequences[shard_id]
            named = await _record_at(backend, stream, shard_id, sequence)
            return await reader.last_before(sequence, _arrival(named, now), oldest)
        assert target.moment is not None
        first = await reader.first_from(AT_TIMESTAMP, timestamp=target.moment)
        if first is None and not shard.is_open:
            return SHARD_END  # every record of the closed shard is before the point
        bound = None if first is None else first["SequenceNumber"]
        return await reader.last_before(bound, target.moment, oldest)

    names = (
        list(target.sequences)
        if target.kind == "sequences"
        else [s for s in stream_shards if not wanted or s in wanted]
    )
    names = [s for s in names if s in by_shard or _needs_recreation(s, by_shard)]
    new_points = dict(zip(names, await asyncio.gather(*(point_of(s) for s in names))))

    # Across a reshard: a shard whose parent is put back before its end is read from its start.
    for shard_id in _parents_first(stream_shards):
        parents = [p for p in stream_shards[shard_id].parents if p in stream_shards]
        if shard_id in new_points and any(new_points.get(p, SHARD_END) != SHARD_END for p in parents):
            new_points[shard_id] = TRIM_HORIZON
            notes[shard_id] = "child of a shard put back: read after its parent"

    moves = []
    refusal = None
    for shard_id, new in new_points.items():
        lease = by_shard.get(shard_id)
        if lease is None:
            if new == SHARD_END:
                continue
            item, why = _recreated_item(stream_shards[shard_id], by_shard, new)
            if item is None:
                refusal = why
                continue
            moves.append(Move(str(item[LEASE_KEY]["S"]), shard_id, None, new, None, None, create=item, note=why))
            continue
        if lease.problem:
            moves.append(
                Move(
                    lease.lease_key,
                    shard_id,
                    lease.checkpoint,
                    lease.checkpoint or "-",
                    lease.owner,
                    lease.counter,
                    note=f"left alone: {lease.problem}",
                )
            )
            continue
        moves.append(
            Move(
                lease.lease_key,
                shard_id,
                lease.checkpoint,
                new,
                lease.owner,
                lease.counter,
                old_subsequence=lease.checkpoint_subsequence,
                note=notes.get(shard_id, ""),
            )
        )
    moves = await _counted(backend, stream, moves, scan_cap)
    return CheckpointPlan("rewind", stream, table, target.describe(), tuple(moves), scan_cap, refusal=refusal)


def _needs_recreation(shard_id: str, by_shard: Mapping[str, Lease]) -> bool:
    """A shard without a lease whose child has one: its lease was cleaned up after it ended."""
    return shard_id not in by_shard and any(shard_id in lease.parent_shard_ids for lease in by_shard.values())


def _parents_first(shards: Mapping[str, Any]) -> list[str]:
    order: list[str] = []
    seen: set[str] = set()

    def visit(shard_id: str) -> None:
        if shard_id in seen or shard_id not in shards:
            return
        seen.add(shard_id)
        for parent in shards[shard_id].parents:
            visit(parent)
        order.append(shard_id)

    for shard_id in shards:
        visit(shard_id)
    return order


def _recreated_item(shard: Any, by_shard: Mapping[str, Lease], checkpoint: str) -> tuple[dict | None, str]:
    """The lease item the KCL wrote for a parent shard, rebuilt from the shard map and a child's lease
    (a multi-stream key keeps the child's stream prefix)."""
    child = next((lease for lease in by_shard.values() if shard.shard_id in lease.parent_shard_ids), None)
    if child is None:
        return None, f"{shard.shard_id} has no lease and no child lease to rebuild it from"
    prefix = child.lease_key[: -len(child.shard_id)] if child.lease_key.endswith(child.shard_id) else None
    if prefix is None:
        return None, f"cannot tell how {child.lease_key!r} names its shard; recreate {shard.shard_id}'s lease by hand"
    if prefix:
        return None, (
            f"{shard.shard_id}'s lease was cleaned up and this is a multi-stream table; restart the "
            f"application from {checkpoint} instead"
        )
    item: dict[str, dict] = {
        LEASE_KEY: {"S": shard.shard_id},
        LEASE_COUNTER: {"N": "0"},
        OWNER_SWITCHES: {"N": "0"},
        CHECKPOINT: {"S": checkpoint},
        CHECKPOINT_SUBSEQUENCE: {"N": "0"},
        "startingHashKey": {"S": str(shard.starting_hash_key)},
        "endingHashKey": {"S": str(shard.ending_hash_key)},
    }
    if shard.parents:
        item[PARENT_SHARD_IDS] = {"SS": list(shard.parents)}
    children = sorted(lease.shard_id for lease in by_shard.values() if shard.shard_id in lease.parent_shard_ids)
    item[CHILD_SHARD_IDS[0]] = {"SS": children}
    return item, "its lease was cleaned up: recreated"


async def _counted(backend: Any, stream: str, moves: Sequence[Move], cap: int) -> list[Move]:
    """Each move with the records between its two checkpoints (read again, or skipped)."""

    async def count(move: Move) -> Move:
        if not move.changes or move.old == move.new:
            return replace(move, direction=SAME, records=0)
        if move.old == AT_TIMESTAMP:
            return replace(move, direction=AGAIN, records=None, note=move.note or "old checkpoint AT_TIMESTAMP")
        reader = _Reader(backend, stream, move.shard_id)
        # A recreated lease had ended (SHARD_END) before it was cleaned up.
        old = SHARD_END if move.create is not None else (TRIM_HORIZON if move.old is None else move.old)
        low, high = sorted((old, move.new), key=_position)
        direction = AGAIN if _position(move.new) < _position(old) else SKIPPED
        if _position(low) == END:
            return replace(move, direction=SAME, records=0)
        through = None if _position(high) == END else high
        try:
            records = await reader.count(low if _position(low) >= 0 else TRIM_HORIZON, through, cap)
        except ConsoleError as error:
            return replace(move, direction=direction, records=None, note=f"cannot count: {error.message}")
        return replace(move, direction=direction, records=records)

    return list(await asyncio.gather(*(count(move) for move in moves)))


async def _record_at(backend: Any, stream: str, shard_id: str, sequence: str) -> dict:
    """The record with this sequence number in this shard, or BadInput (another shard's, or gone)."""
    try:
        record = await _Reader(backend, stream, shard_id).first_from("AT_SEQUENCE_NUMBER", sequence_number=sequence)
    except BadInput as error:
        raise BadInput(f"{sequence} is not a sequence number of {shard_id}: {error.message}") from None
    if record is None or record["SequenceNumber"] != sequence:
        raise BadInput(f"{sequence} is not a sequence number of {shard_id} (another shard's, or beyond retention)")
    return record


def _arrival(record: Mapping[str, Any], fallback: datetime) -> datetime:
    arrival = record.get("ApproximateArrivalTimestamp")
    if isinstance(arrival, datetime):
        return arrival if arrival.tzinfo else arrival.replace(tzinfo=UTC)
    return fallback


async def prepare_skip(
    backend: Any, stream: str, table: str, shard_id: str, sequence: str, *, scan_cap: int = 10_000
) -> CheckpointPlan:
    """Move one shard's checkpoint to `sequence`: the KCL resumes after that record (the one it keeps
    failing on), shown decoded as tail shows it. Refused when the lease is already past it."""
    if not sequence.isdigit() or len(sequence) > 128:
        raise BadInput(f"--sequence must be a sequence number (digits); got {sequence[:80]!r}")
    lease_table = await read_table(backend, table, stream)
    lease = next((lease for lease in lease_table.leases.values() if lease.shard_id == shard_id), None)
    if lease is None:
        raise BadInput(f"{table} has no lease of {shard_id} ({stream})", code="not_found")
    record = await _record_at(backend, stream, shard_id, sequence)
    decoded = decode_api_record(record, shard_id)
    refusal = None
    if lease.problem:
        refusal = f"{shard_id}'s lease cannot be moved: {lease.problem}"
    elif _position(lease.checkpoint) >= int(sequence):
        refusal = f"{shard_id} is already past {sequence} (checkpoint {lease.checkpoint}): nothing to skip"
    move = Move(
        lease.lease_key,
        shard_id,
        lease.checkpoint,
        sequence,
        lease.owner,
        lease.counter,
        old_subsequence=lease.checkpoint_subsequence,
    )
    moves = await _counted(backend, stream, [move], scan_cap) if refusal is None else [move]
    return CheckpointPlan(
        "skip",
        stream,
        table,
        f"{shard_id} past {sequence}",
        tuple(moves),
        scan_cap,
        refusal=refusal,
        record=decoded[0].to_json() if decoded else None,
        record_line=text_line(decoded[0]) if decoded else None,
    )


async def prepare_clone(
    backend: Any, stream: str, table: str, to_table: str, *, scan_cap: int = 10_000
) -> CheckpointPlan:
    """A new application's lease table holding this one's positions: the same lease keys, checkpoints,
    parents, children and hash ranges, every lease unowned with a fresh counter."""
    if to_table == table:
        raise BadInput("--to-table must name a new table, not the lease table itself", code="usage")
    lease_table = await read_table(backend, table, stream)
    if to_table in await backend.table_names():
        raise BadInput(f"table {to_table!r} already exists: clone makes a new lease table", code="exists")
    items = []
    moves = []
    for key, lease in lease_table.leases.items():
        source = lease_table.items[key]
        item = {name: value for name, value in source.items() if name not in _NOT_CLONED}
        item[LEASE_COUNTER] = {"N": "0"}
        item[OWNER_SWITCHES] = {"N": "0"}
        items.append(item)
        moves.append(
            Move(
                key,
                lease.shard_id,
                lease.checkpoint,
                lease.checkpoint or "-",
                None,
                0,
                old_subsequence=lease.checkpoint_subsequence,
                new_subsequence=lease.checkpoint_subsequence,
            )
        )
    return CheckpointPlan(
        "clone", stream, table, to_table, tuple(moves), scan_cap, to_table=to_table, clone_items=tuple(items)
    )


# What a clone leaves out of a lease item: who holds it, a hand-off or checkpoint in flight.
_NOT_CLONED = frozenset({LEASE_OWNER, CHECKPOINT_OWNER, *PENDING_ATTRIBUTES, "leaseOwnerHeartbeat"})


async def prepare_positions(
    backend: Any,
    stream: str,
    table: str,
    positions: Mapping[str, tuple[str, int]],
    *,
    action: str,
    scan_cap: int = 10_000,
    undo_of: str | None = None,
) -> CheckpointPlan:
    """Put leases (by lease key) at given checkpoints: what undo and import do."""
    lease_table = await read_table(backend, table, stream)
    unknown = [key for key in positions if key not in lease_table.leases]
    if unknown:
        raise BadInput(f"{table} has no lease {unknown[0]!r} of {stream}", code="not_found")
    moves = []
    for key, (checkpoint, subsequence) in positions.items():
        lease = lease_table.leases[key]
        moves.append(
            Move(
                key,
                lease.shard_id,
                lease.checkpoint,
                checkpoint,
                lease.owner,
                lease.counter,
                old_subsequence=lease.checkpoint_subsequence,
                new_subsequence=subsequence,
            )
        )
    moves = await _counted(backend, stream, moves, scan_cap)
    target = f"the checkpoints before {undo_of}" if undo_of else "the saved checkpoints"
    return CheckpointPlan(action, stream, table, target, tuple(moves), scan_cap, undo_of=undo_of)


def logged_positions(entries: Iterable[dict], action_id: str) -> tuple[str, str, dict[str, tuple[str, int]]]:
    """(stream, table, {lease key: (old checkpoint, subsequence)}) of the writes of action `action_id`
    that happened or may have (applied or unknown), from the action log's entries."""
    entries = list(entries)
    outcomes = {entry.get("intent"): entry.get("outcome") for entry in entries if entry.get("kind") == "outcome"}
    stream = table = None
    positions: dict[str, tuple[str, int]] = {}
    for entry in entries:
        plan = entry.get("plan") or {}
        if entry.get("kind") != "intent" or plan.get("action_id") != action_id:
            continue
        stream, table = entry.get("stream"), plan.get("lease_table")
        if outcomes.get(entry.get("id"), "unknown") in ("applied", "unknown"):
            old = plan.get("old_checkpoint") or SHARD_END  # a recreated lease had none: it had ended
            positions.setdefault(plan["lease_key"], (old, int(plan.get("old_subsequence") or 0)))
    if stream is None or table is None:
        raise BadInput(f"the action log has no checkpoint change {action_id!r}", code="not_found")
    if not positions:
        raise BadInput(f"{action_id} changed no checkpoint (every write was refused): nothing to undo")
    return stream, table, positions


# ---- run -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseOutcome:
    lease_key: str
    shard_id: str
    outcome: str  # applied | not applied | unknown | not attempted
    evidence: str

    def to_json(self) -> dict:
        return {
            "lease_key": self.lease_key,
            "shard_id": self.shard_id,
            "outcome": self.outcome,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class RunResult:
    action_id: str
    outcomes: tuple[LeaseOutcome, ...]
    done: str = "checkpoint(s) changed"  # what an applied outcome did, in the last line

    @property
    def complete(self) -> bool:
        return all(o.outcome == "applied" for o in self.outcomes)

    def lines(self) -> list[str]:
        lines = [f"{o.shard_id}: {o.outcome} ({o.evidence})" for o in self.outcomes]
        applied = sum(o.outcome == "applied" for o in self.outcomes)
        lines.append(f"{applied} of {len(self.outcomes)} {self.done}; action {self.action_id}")
        if applied and self.outcomes and not self.complete:
            lines.append(f"the leases above marked applied did change; undo them with --undo {self.action_id}")
        return lines

    def to_json(self) -> dict:
        return {"action_id": self.action_id, "complete": self.complete, "leases": [o.to_json() for o in self.outcomes]}


async def watch_counters(
    backend: Any, table: str, stream: str, seconds: float, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
) -> LeaseTable:
    """The table read twice, `seconds` apart; PlanRejected when any lease's counter moved (a worker renews it)."""
    first = await read_table(backend, table, stream)
    if seconds > 0:
        await sleep(seconds)
    second = await read_table(backend, table, stream)
    moved = sorted(key for key, counter in second.counters.items() if first.counters.get(key) != counter)
    if moved:
        raise PlanRejected(
            f"the application is running: stop it first (leaseCounter moved on {', '.join(moved[:5])}"
            f"{' and more' if len(moved) > 5 else ''} within {seconds:g} s); nothing was written"
        )
    return second


async def run(
    backend: Any,
    plan: CheckpointPlan,
    *,
    action_log: Any,
    watch_seconds: float = DEFAULT_WATCH_SECONDS,
    progress: Callable[[str], None] = lambda _text: None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    who: str | None = None,
) -> RunResult:
    """Watch for a running application, then write each changed lease conditionally, through the
    action log (old checkpoint beside the new), stopping at the first lease a worker changed."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was written: {plan.refusal}")
    if plan.action == "clone":
        return await _run_clone(backend, plan, action_log=action_log, progress=progress, who=who)
    changed = plan.changed
    if not changed:
        return RunResult("", ())
    progress(f"watching {plan.table} for {watch_seconds:g} s: a running application renews its leases")
    current = await watch_counters(backend, plan.table, plan.stream, watch_seconds, sleep=sleep)
    for move in changed:
        lease = current.leases.get(move.lease_key)
        if move.create is None and (lease is None or lease.checkpoint != move.old):
            raise PlanRejected(
                f"{move.shard_id}'s checkpoint changed since the plan ({move.old} -> "
                f"{lease.checkpoint if lease else 'no lease'}): plan again; nothing was written"
            )
        if move.create is not None and move.lease_key in current.items:
            raise PlanRejected(f"{move.shard_id} has a lease again since the plan: plan again; nothing was written")
    action_id = uuid.uuid4().hex[:12]
    outcomes: list[LeaseOutcome] = []
    for index, move in enumerate(changed):
        item = current.items.get(move.lease_key)
        try:
            change = await _write(backend, plan, move, item, action_id=action_id, action_log=action_log, who=who)
        except ConsoleError as error:
            outcome = "unknown" if error.code == "outcome_unknown" else "not applied"
            why = (
                "a worker changed the lease since it was read (the application is running)"
                if error.code == "condition_failed"
                else error.message
            )
            outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, outcome, why))
            outcomes.extend(
                LeaseOutcome(m.lease_key, m.shard_id, "not attempted", "stopped at the lease before")
                for m in changed[index + 1 :]
            )
            break
        evidence = change.evidence or "written"
        if change.reply_lost:
            progress(f"{move.shard_id}: the reply was lost; reading the lease back shows the change")
        outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "applied", evidence))
    return RunResult(action_id, tuple(outcomes))


async def _write(
    backend: Any,
    plan: CheckpointPlan,
    move: Move,
    item: dict | None,
    *,
    action_id: str,
    action_log: Any,
    who: str | None,
) -> Any:
    key = {LEASE_KEY: {"S": move.lease_key}}
    logged = {
        "action": f"consumers {plan.action}",
        "action_id": action_id,
        "lease_table": plan.table,
        "lease_key": move.lease_key,
        "shard_id": move.shard_id,
        "old_checkpoint": move.old,
        "old_subsequence": move.old_subsequence,
        "new_checkpoint": move.new,
        "new_subsequence": move.new_subsequence,
        "target": plan.target,
        **({"undo_of": plan.undo_of} if plan.undo_of else {}),
    }
    if move.create is not None:
        created = move.create

        async def put() -> None:
            await backend.put_item_if_absent(plan.table, created, LEASE_KEY)

        async def created_back() -> tuple[bool | None, str]:
            found = await backend.get_item(plan.table, key)
            if found is None:
                return False, "the lease is not there"
            return (found.get(CHECKPOINT) == created[CHECKPOINT]), f"the lease reads {found.get(CHECKPOINT)}"

        return await action_log.call(
            "PutItem",
            {**logged, "recreated": True},
            put,
            stream=plan.stream,
            backend=backend.label,
            who=who,
            settle=created_back,
            check=f"kconsole consumers {plan.stream} --lease-table {plan.table}",
        )
    assert item is not None
    counter = item.get(LEASE_COUNTER)
    owner = item.get(LEASE_OWNER)
    expected_counter = int(counter["N"]) if counter else None

    async def update() -> None:
        await backend.update_item_if(
            plan.table,
            key,
            set_values={
                CHECKPOINT: {"S": move.new},
                CHECKPOINT_SUBSEQUENCE: {"N": str(move.new_subsequence)},
                OWNER_SWITCHES: {"N": "0"},
            },
            remove=[LEASE_OWNER, CHECKPOINT_OWNER, *PENDING_ATTRIBUTES],
            add_numbers={LEASE_COUNTER: 1},
            expected={LEASE_COUNTER: counter, LEASE_OWNER: owner},
        )

    async def read_back() -> tuple[bool | None, str]:
        found = await backend.get_item(plan.table, key)
        if found is None:
            return None, "the lease is gone"
        now_at = (found.get(CHECKPOINT) or {}).get("S")
        now_counter = _counter(found)
        if now_at == move.new and expected_counter is not None and now_counter == expected_counter + 1:
            return True, f"the lease reads {now_at}, counter {now_counter}"
        if now_counter == expected_counter and now_at == move.old:
            return False, f"the lease still reads {now_at}"
        return None, f"the lease reads {now_at}, counter {now_counter}: someone else changed it"

    async def again() -> Callable[[], Awaitable[None]]:
        return update  # conditional on the same counter: it cannot overwrite a worker's write

    return await action_log.call(
        "UpdateItem",
        logged,
        update,
        stream=plan.stream,
        backend=backend.label,
        who=who,
        settle=read_back,
        check=f"kconsole consumers {plan.stream} --lease-table {plan.table}",
        again=again,
    )


async def _run_clone(
    backend: Any, plan: CheckpointPlan, *, action_log: Any, progress: Callable[[str], None], who: str | None
) -> RunResult:
    """Create the table as the KCL does, then put each lease, each through the action log."""
    assert plan.to_table is not None
    target = plan.to_table
    action_id = uuid.uuid4().hex[:12]
    logged = {"action": "consumers clone", "action_id": action_id, "lease_table": plan.table, "to_table": target}

    async def table_there() -> tuple[bool | None, str]:
        exists = target in await backend.table_names()
        return exists, f"table {target} {'exists' if exists else 'does not exist'}"

    progress(f"creating lease table {target}")
    await action_log.call(
        "CreateTable",
        logged,
        lambda: backend.create_lease_table(target),
        stream=plan.stream,
        backend=backend.label,
        who=who,
        settle=table_there,
        check=f"kconsole consumers {plan.stream} --lease-table {target}",
    )
    outcomes = []
    for move, item in zip(plan.moves, plan.clone_items):
        key = {LEASE_KEY: item[LEASE_KEY]}

        async def put(item: dict = item) -> None:
            await backend.put_item_if_absent(target, item, LEASE_KEY)

        async def there(key: dict = key, item: dict = item) -> tuple[bool | None, str]:
            found = await backend.get_item(target, key)
            if found is None:
                return False, "the lease is not there"
            return found.get(CHECKPOINT) == item.get(CHECKPOINT), f"the lease reads {found.get(CHECKPOINT)}"

        try:
            change = await action_log.call(
                "PutItem",
                {**logged, "lease_key": move.lease_key, "new_checkpoint": move.new},
                put,
                stream=plan.stream,
                backend=backend.label,
                who=who,
                settle=there,
                check=f"kconsole consumers {plan.stream} --lease-table {target}",
            )
        except ConsoleError as error:
            outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "not applied", error.message))
            continue
        outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "applied", change.evidence or "written"))
    return RunResult(action_id, tuple(outcomes), done=f"lease(s) written to {target}")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
