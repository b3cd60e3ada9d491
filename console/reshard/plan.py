"""Reshard plans: exactly what a split, merge, rescale or "make even" will do, before anything runs.

Pure: every function takes the stream's shard list (as ListShards gives it, closed shards included)
and returns a `ReshardPlan`; nothing here does I/O. A plan holds the open shards before and after,
the API operations to run, how much of the key space changes shard, how a sample of partition
keys moves, what it means for ordering, and every AWS limit it breaches (console.reshard.limits).

Shard ids: AWS and the local server number new shards sequentially after the highest existing
index (shardId-000000000004 then -000000000005 after splitting a 4-shard stream's shard), so split,
merge and "make even" plans predict child ids; UpdateShardCount's intermediate shards are not
documented, so a rescale's new shards have `shard_id` None.

The plan's values live in console.reshard.model, the sample-driven parts (median split, key
movement) in console.reshard.sample and the text form in console.reshard.render; their names are
re-exported here.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from console.bounds import shard_count
from console.errors import BadInput
from console.keyspace.hashkeys import HASH_SPACE, check_tiling, even_split
from console.reshard.limits import (
    Breach,
    Limits,
    StreamContext,
    check_account_shards,
    check_split_key,
    check_stream_state,
    check_update_shard_count,
)
from console.reshard.model import (
    MAX_LISTED_MOVES,
    MAX_LISTED_ROUTES,
    ORDERING_NOTE,
    KeyMove,
    KeyMovement,
    KeySample,
    MedianSplit,
    Operation,
    PlannedShard,
    ReshardPlan,
)
from console.reshard.render import RIBBON_BEFORE, RIBBON_NEW, render_plan, ribbon, ribbon_labels, ribbons
from console.reshard.sample import key_movement, median_hash_key, median_split
from console.topology.model import Shard
from console.words import counted

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_LISTED_MOVES",
    "MAX_LISTED_ROUTES",
    "ORDERING_NOTE",
    "RIBBON_BEFORE",
    "RIBBON_NEW",
    "KeyMove",
    "KeyMovement",
    "KeySample",
    "MedianSplit",
    "Operation",
    "PlannedShard",
    "ReshardPlan",
    "even_tolerance",
    "key_movement",
    "median_hash_key",
    "median_split",
    "midpoint",
    "moved_fraction",
    "open_shards",
    "plan_even",
    "plan_merge",
    "plan_scale",
    "plan_split",
    "render_plan",
    "ribbon",
    "ribbon_labels",
    "ribbons",
]

DEFAULT_LIMITS = Limits()

# ---------------------------------------------------------------- helpers


_SHARD_INDEX = re.compile(r"^shardId-(\d+)$")


class _IdAllocator:
    """Predicts the ids AWS gives new shards: the next index after the highest one ever used."""

    def __init__(self, shards: Iterable[Shard]) -> None:
        indexes = []
        self.predictable = True
        for shard in shards:
            match = _SHARD_INDEX.match(shard.shard_id)
            if match is None:
                self.predictable = False
            else:
                indexes.append(int(match.group(1)))
        self._next = max(indexes, default=-1) + 1

    def take(self) -> str | None:
        index, self._next = self._next, self._next + 1
        return f"shardId-{index:012d}" if self.predictable else None


def open_shards(shards: Iterable[Shard]) -> tuple[Shard, ...]:
    """The open shards in key order, checked to tile the key space."""
    opened = sorted((s for s in shards if s.is_open), key=lambda s: s.starting_hash_key)
    check_tiling((s.starting_hash_key, s.ending_hash_key) for s in opened)
    return tuple(opened)


def _find(shards: Sequence[Shard], shard_id: str) -> Shard:
    for shard in shards:
        if shard.shard_id == shard_id:
            return shard
    known = ", ".join(s.shard_id for s in shards if s.is_open)
    raise BadInput(f"no shard {shard_id!r} in the stream (open shards: {_abbreviate(known)})", code="unknown_shard")


def _abbreviate(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _closed_breach(shard: Shard, operation: str) -> Breach:
    return Breach(
        "shard_not_open",
        f"{operation} works only on open shards",
        f"{shard.shard_id} is closed (it was already split or merged)",
        {"shard_id": shard.shard_id},
    )


def midpoint(shard: Shard) -> int:
    """The split key that halves the shard's range exactly (for a whole-space shard: 2**127)."""
    return shard.starting_hash_key + (shard.ending_hash_key - shard.starting_hash_key + 1) // 2


def moved_fraction(before: Sequence[Shard], after: Sequence[PlannedShard]) -> float:
    """Fraction of the key space whose shard changes (exact, from the ranges)."""
    after_ranges = {s.range for s in after}
    moved = sum(
        s.ending_hash_key - s.starting_hash_key + 1
        for s in before
        if (s.starting_hash_key, s.ending_hash_key) not in after_ranges
    )
    return moved / HASH_SPACE


def _unchanged(shards: Sequence[Shard]) -> tuple[PlannedShard, ...]:
    return tuple(_kept(s) for s in shards)


def _kept(shard: Shard) -> PlannedShard:
    return PlannedShard(
        shard.shard_id,
        shard.starting_hash_key,
        shard.ending_hash_key,
        shard.parent_shard_id,
        shard.adjacent_parent_shard_id,
        unchanged=True,
    )


def _plan(
    action: str,
    summary: str,
    before: tuple[Shard, ...],
    after: tuple[PlannedShard, ...],
    operations: Sequence[Operation],
    breaches: Sequence[Breach],
    sample: KeySample | None,
    context: StreamContext | None,
    **extra: Any,
) -> ReshardPlan:
    if context is not None and context.auto_distribution:
        sample = None  # AUTO distribution: the service places records, so no key moves anywhere
    return ReshardPlan(
        action=action,
        summary=summary,
        before=before,
        after=after,
        operations=tuple(operations),
        moved_fraction=moved_fraction(before, after),
        key_movement=key_movement(before, after, sample),
        breaches=tuple(breaches),
        **extra,
    )


# ---------------------------------------------------------------- split and merge


def plan_split(
    shards: Sequence[Shard],
    shard_id: str,
    new_starting_hash_key: int,
    *,
    basis: str = "explicit hash key",
    context: StreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,
    sample: KeySample | None = None,
    median: MedianSplit | None = None,
) -> ReshardPlan:
    """Split `shard_id` so the upper child starts at `new_starting_hash_key` (SplitShard). `median`
    says how a sample-median key divides its sample, for the plan to show."""
    before = open_shards(shards)
    target = _find(shards, shard_id)
    summary = f"split {shard_id} at {new_starting_hash_key} ({basis})"
    breaches = check_stream_state(context, "SplitShard")
    if not target.is_open:
        breaches.append(_closed_breach(target, "SplitShard"))
    else:
        breaches += check_split_key(shard_id, target.starting_hash_key, target.ending_hash_key, new_starting_hash_key)
    if any(b.limit in ("shard_not_open", "split_key_outside_shard") for b in breaches):
        return _plan(
            "split",
            summary,
            before,
            _unchanged(before),
            (),
            breaches,
            sample,
            context,
            peak_open_shards=len(before),
            median=median,
        )
    ids = _IdAllocator(shards)
    low = PlannedShard(ids.take(), target.starting_hash_key, new_starting_hash_key - 1, parent_shard_id=shard_id)
    high = PlannedShard(ids.take(), new_starting_hash_key, target.ending_hash_key, parent_shard_id=shard_id)
    after: list[PlannedShard] = []
    for shard in before:
        after.extend((low, high) if shard.shard_id == shard_id else _unchanged((shard,)))
    breaches += check_account_shards(len(before), len(before) + 1, context, limits)
    operation = Operation("split", shard_id=shard_id, new_starting_hash_key=new_starting_hash_key)
    return _plan(
        "split",
        summary,
        before,
        tuple(after),
        [operation],
        breaches,
        sample,
        context,
        split_steps=1,
        peak_open_shards=len(before) + 1,
        median=median,
    )


def plan_merge(
    shards: Sequence[Shard],
    shard_id: str,
    adjacent_shard_id: str,
    *,
    context: StreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,  # noqa: ARG001 - the planners' common signature; a merge adds no shard
    sample: KeySample | None = None,
) -> ReshardPlan:
    """Merge two adjacent open shards into one (MergeShards). The lower shard is passed first, so
    the child's ParentShardId is the lower one and AdjacentParentShardId the upper one."""
    before = open_shards(shards)
    if shard_id == adjacent_shard_id:
        raise BadInput(f"cannot merge {shard_id} with itself; name two different shards", code="same_shard")
    first, second = _find(shards, shard_id), _find(shards, adjacent_shard_id)
    summary = f"merge {shard_id} with {adjacent_shard_id}"
    breaches = check_stream_state(context, "MergeShards")
    breaches += [_closed_breach(s, "MergeShards") for s in (first, second) if not s.is_open]
    lower, upper = sorted((first, second), key=lambda s: s.starting_hash_key)
    if first.is_open and second.is_open and lower.ending_hash_key + 1 != upper.starting_hash_key:
        between = sum(1 for s in before if lower.ending_hash_key < s.starting_hash_key < upper.starting_hash_key)
        breaches.append(
            Breach(
                "merge_not_adjacent",
                "MergeShards needs two open shards whose hash ranges touch (one ends at k-1, the other starts at k)",
                f"{lower.shard_id} and {upper.shard_id} are not adjacent: {between} open shard(s) lie between "
                f"them ({lower.shard_id} ends at {lower.ending_hash_key}, {upper.shard_id} starts at {upper.starting_hash_key})",
                {"shard_id": shard_id, "adjacent_shard_id": adjacent_shard_id, "shards_between": between},
            )
        )
    if any(b.limit in ("shard_not_open", "merge_not_adjacent") for b in breaches):
        return _plan(
            "merge", summary, before, _unchanged(before), (), breaches, sample, context, peak_open_shards=len(before)
        )
    child = PlannedShard(
        _IdAllocator(shards).take(),
        lower.starting_hash_key,
        upper.ending_hash_key,
        parent_shard_id=lower.shard_id,
        adjacent_parent_shard_id=upper.shard_id,
    )
    after = []
    for shard in before:
        if shard.shard_id == lower.shard_id:
            after.append(child)
        elif shard.shard_id != upper.shard_id:
            after.extend(_unchanged((shard,)))
    notes: tuple[str, ...] = ()
    if lower.shard_id != shard_id:
        notes = (f"{lower.shard_id} covers the lower range, so it is passed as ShardToMerge",)
    operation = Operation(
        "merge",
        shard_id=lower.shard_id,
        adjacent_shard_id=upper.shard_id,
        new_starting_hash_key=upper.starting_hash_key,
    )
    return _plan(
        "merge",
        summary,
        before,
        tuple(after),
        [operation],
        breaches,
        sample,
        context,
        merge_steps=1,
        peak_open_shards=len(before),
        notes=notes,
    )


# ---------------------------------------------------------------- rescale and make-even


@dataclass
class _Walk:
    """Replays explicit splits and merges from the current ranges to target boundaries."""

    operations: list[Operation]
    after: tuple[PlannedShard, ...]
    splits: int
    merges: int
    short_lived: int
    peak: int


def _walk_to(shards: Sequence[Shard], before: tuple[Shard, ...], target_ranges: Sequence[tuple[int, int]]) -> _Walk:
    """Every target boundary that is missing costs one split; every current boundary that must vanish
    costs one merge. Splits run first (key order), then merges, so capacity never drops mid-way;
    the peak open count is therefore before + splits."""
    current = {s.starting_hash_key for s in before}
    wanted = {start for start, _ in target_ranges}
    ids = _IdAllocator(shards)
    by_start = {s.starting_hash_key: _kept(s) for s in before}
    # Every start that ever exists, in key order. Splits go in key order, so when the one at `key`
    # runs, the shard just below it in this list (original or split off before) is its parent.
    starts = sorted(current | wanted)
    operations: list[Operation] = []
    for below, key in itertools.pairwise(starts):
        if key in current:
            continue
        parent = by_start[below]
        operations.append(Operation("split", shard_id=parent.shard_id, new_starting_hash_key=key))
        by_start[parent.starting_hash_key] = PlannedShard(
            ids.take(), parent.starting_hash_key, key - 1, parent_shard_id=parent.shard_id
        )
        by_start[key] = PlannedShard(ids.take(), key, parent.ending_hash_key, parent_shard_id=parent.shard_id)
    splits = len(operations)
    # Merges go in key order too: a boundary that must vanish merges its shard into the nearest kept
    # start below it (which earlier merges may already have grown).
    lower_start = starts[0]
    for key in starts[1:]:
        if key in wanted:
            lower_start = key
            continue
        lower, upper = by_start[lower_start], by_start[key]
        operations.append(
            Operation("merge", shard_id=lower.shard_id, adjacent_shard_id=upper.shard_id, new_starting_hash_key=key)
        )
        by_start[lower_start] = PlannedShard(
            ids.take(),
            lower.starting_hash_key,
            upper.ending_hash_key,
            parent_shard_id=lower.shard_id,
            adjacent_parent_shard_id=upper.shard_id,
        )
        del by_start[key]
    merges = len(operations) - splits
    after = tuple(by_start[start] for start in starts if start in wanted)
    created_and_kept = sum(1 for s in after if not s.unchanged)
    return _Walk(operations, after, splits, merges, 2 * splits + merges - created_and_kept, len(before) + splits)


EVEN_TOLERANCE_FRACTION = 10**6  # a boundary within 1/1,000,000 of an even shard's range counts as even


def even_tolerance(count: int) -> int:
    """How far (in hash keys) a boundary may lie from the even split of `count` shards and still count
    as even: a millionth of one even shard. Shares then differ by under 0.0001% of a shard, far below
    what any partition key distribution can show, while other servers' rounding (kinesis-mock steps
    by (2**128-1)//N, a few keys off) or a hand-made near-even split does not cost a reshard."""
    return (HASH_SPACE // count) // EVEN_TOLERANCE_FRACTION


def _keep_near_boundaries(
    before: Sequence[Shard], target_ranges: Sequence[tuple[int, int]], tolerance: int
) -> tuple[list[tuple[int, int]], int]:
    """The target ranges with each boundary that a current boundary lies within `tolerance` of moved
    onto that current boundary (so it stays), and how many were moved."""
    current = [s.starting_hash_key for s in before[1:]]
    starts, kept = [0], 0
    for start, _ in target_ranges[1:]:
        position = bisect.bisect_left(current, start - tolerance)
        near = current[position] if position < len(current) and current[position] <= start + tolerance else None
        if near is not None and near != start and near > starts[-1]:
            kept += 1
            start = near
        starts.append(start)
    ends = [s - 1 for s in starts[1:]] + [HASH_SPACE - 1]
    return list(zip(starts, ends)), kept


def _rounding_near_misses(before: Sequence[Shard], target_ranges: Sequence[tuple[int, int]]) -> int:
    """Current boundaries that miss a target boundary only by even_split's rounding (< N+M keys)."""
    wanted = sorted(start for start, _ in target_ranges[1:])
    tolerance = len(before) + len(target_ranges)
    near = 0
    for shard in before[1:]:
        key = shard.starting_hash_key
        position = bisect.bisect_left(wanted, key)
        neighbours = wanted[max(0, position - 1) : position + 1]
        if neighbours and key not in neighbours and min(abs(key - w) for w in neighbours) <= tolerance:
            near += 1
    return near


def _target_count(count: object, what: str) -> int:
    """The target shard count, within what kconsole plans at all (console.bounds), so the work of a
    plan never follows a mistyped target into billions of ranges."""
    if isinstance(count, bool) or not isinstance(count, int):
        raise BadInput(f"{what} must be a whole number of at least 1; got {count!r}", code="bad_count")
    return shard_count(count, what=what)


def plan_scale(
    shards: Sequence[Shard],
    target: int,
    *,
    context: StreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,
    sample: KeySample | None = None,
) -> ReshardPlan:
    """Rescale to `target` open shards with UpdateShardCount (UNIFORM_SCALING).

    Model (AWS documents the result, not the path): the result is `target` equal ranges, exactly
    the ranges of a new stream of `target` shards (console.keyspace.hashkeys.even_split). To get there AWS
    "performs splits or merges on individual shards", creating short-lived shards that count toward
    the account quota. We count the fewest explicit steps that reach those ranges: one split per
    missing boundary and one merge per boundary that disappears, splits first; shards created and
    then merged away are the short-lived ones. Doubling or halving an even stream needs no
    short-lived shard (AWS recommends those targets); 4 -> 6 needs 4 splits, 2 merges, 4 short-lived.
    New shards' ids are not predicted (None).
    """
    target = _target_count(target, "target shard count")
    before = open_shards(shards)
    target_ranges = even_split(target)
    walk = _walk_to(shards, before, target_ranges)
    before_by_range = {(s.starting_hash_key, s.ending_hash_key): s for s in before}
    after = tuple(
        _kept(before_by_range[(start, end)]) if (start, end) in before_by_range else PlannedShard(None, start, end)
        for start, end in target_ranges
    )
    summary = f"rescale {len(before)} -> {counted(target, 'open shard')} (UpdateShardCount, UNIFORM_SCALING)"
    notes = []
    near = _rounding_near_misses(before, target_ranges)
    if near:
        notes.append(
            f"{near} current boundaries lie within a few hash keys of a target boundary (integer "
            f"rounding of 2**128/N); the step counts treat them as different, so they are an upper bound"
        )
    if walk.splits or walk.merges:
        operations = [Operation("update_shard_count", target_shard_count=target)]
        breaches = check_update_shard_count(len(before), target, walk.peak, context, limits)
        if walk.short_lived:
            notes.append(
                f"AWS recommends doubling or halving; this target implies about {walk.short_lived} "
                "short-lived shards, which count toward the account shard quota while they exist"
            )
    else:
        operations, breaches = [], []
        notes.append(f"the stream already has {target} equal shards: nothing to do")
    return _plan(
        "scale",
        summary,
        before,
        after,
        operations,
        breaches,
        sample,
        context,
        split_steps=walk.splits,
        merge_steps=walk.merges,
        short_lived_shards=walk.short_lived,
        peak_open_shards=walk.peak,
        notes=tuple(notes),
    )


def plan_even(
    shards: Sequence[Shard],
    target: int | None = None,
    *,
    context: StreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,
    sample: KeySample | None = None,
) -> ReshardPlan:
    """Make every open shard's share equal (to `target` shards, default the current count) with
    explicit SplitShard/MergeShards calls, run one after another (each makes the stream UPDATING).
    The final ranges are even_split(target), the same as a new stream's, except that a current
    boundary within even_tolerance(target) of an even one is kept (it already counts as even)."""
    before = open_shards(shards)
    target = len(before) if target is None else _target_count(target, "target shard count")
    tolerance = even_tolerance(target)
    target_ranges, kept_near = _keep_near_boundaries(before, even_split(target), tolerance)
    walk = _walk_to(shards, before, target_ranges)
    breaches = []
    if walk.operations:
        breaches = check_stream_state(context, "SplitShard/MergeShards")
        breaches += check_account_shards(len(before), walk.peak, context, limits)
    notes = [
        f"{counted(len(walk.operations), 'call')} ({counted(walk.splits, 'split')}, then {counted(walk.merges, 'merge')}), each waiting "
        "for the stream to be ACTIVE again"
        if walk.operations
        else "the open shards are already equal: nothing to do"
    ]
    if walk.short_lived:
        notes.append(
            f"{counted(walk.short_lived, 'shard')} {'is' if walk.short_lived == 1 else 'are'} created and merged away again"
        )
    if kept_near:
        notes.append(
            f"{kept_near} boundaries within {counted(tolerance, 'hash key')} (a millionth of an even shard) of the "
            "even split are kept as they are: counted as even"
        )
    return _plan(
        "even",
        f"make {counted(len(before), 'open shard')} into {target} equal shards",
        before,
        walk.after,
        walk.operations,
        breaches,
        sample,
        context,
        split_steps=walk.splits,
        merge_steps=walk.merges,
        short_lived_shards=walk.short_lived,
        peak_open_shards=walk.peak,
        notes=tuple(notes),
    )
