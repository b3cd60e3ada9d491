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
through the action log with the lease's old checkpoint beside the new one: `logged_positions` reads it
back. A lost reply is settled by reading the item back. No I/O of its own: it calls the backend given.

The plan's model is in rewind_plan, finding positions by reading in rewind_find, the conditional
writes in rewind_run; this module prepares each kind of move.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
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
    SHARD_END,
    TRIM_HORIZON,
    Lease,
)
from console.consumers.rewind_find import (
    ShardReader,
    arrival,
    check_retention,
    position_of,
    read_table,
    record_at,
    with_record_counts,
)
from console.consumers.rewind_plan import PENDING_ATTRIBUTES, CheckpointPlan, Move, Target, parse_target
from console.consumers.rewind_run import DEFAULT_WATCH_SECONDS, run
from console.errors import BadInput
from console.read.decoding import decode_api_record, text_line

# The command line reaches the whole move through this module: the plan's parts and the runner too.
__all__ = [
    "DEFAULT_WATCH_SECONDS",
    "CheckpointPlan",
    "Target",
    "logged_positions",
    "parse_target",
    "prepare_clone",
    "prepare_positions",
    "prepare_rewind",
    "prepare_skip",
    "read_table",
    "run",
]

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
    oldest = await check_retention(backend, stream, target, now)
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
        reader = ShardReader(backend, stream, shard_id)
        if target.kind == "trim-horizon":
            return TRIM_HORIZON
        if target.kind == "latest":
            return LATEST if shard.is_open else SHARD_END
        if target.kind == "sequences":
            sequence = target.sequences[shard_id]
            named = await record_at(backend, stream, shard_id, sequence)
            return await reader.last_before(sequence, arrival(named, now), oldest)
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
    moves = await with_record_counts(backend, stream, moves, scan_cap)
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


def _recreated_item(shard: Any, by_shard: Mapping[str, Lease], checkpoint: str) -> tuple[dict[str, Any] | None, str]:
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
    item: dict[str, dict[str, Any]] = {
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
    record = await record_at(backend, stream, shard_id, sequence)
    decoded = decode_api_record(record, shard_id)
    refusal = None
    if lease.problem:
        refusal = f"{shard_id}'s lease cannot be moved: {lease.problem}"
    elif position_of(lease.checkpoint) >= int(sequence):
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
    moves = await with_record_counts(backend, stream, [move], scan_cap) if refusal is None else [move]
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
    moves = await with_record_counts(backend, stream, moves, scan_cap)
    target = f"the checkpoints before {undo_of}" if undo_of else "the saved checkpoints"
    return CheckpointPlan(action, stream, table, target, tuple(moves), scan_cap, undo_of=undo_of)


def logged_positions(entries: Iterable[dict[str, Any]], action_id: str) -> tuple[str, str, dict[str, tuple[str, int]]]:
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
