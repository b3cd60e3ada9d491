"""Reshard plans: exactly what a split, merge, rescale or "make even" will do, before anything runs.

Pure: every function takes the stream's shard list (as ListShards gives it, closed shards included)
and returns a `ReshardPlan`; nothing here does I/O. A plan holds the open shards before and after,
the API operations to run, how much of the key space changes shard, how a sample of partition
keys moves, what it means for ordering, and every AWS limit it breaches (console.limits).

Shard ids: AWS and the local server number new shards sequentially after the highest existing
index (shardId-000000000004 then -000000000005 after splitting a 4-shard stream's shard), so split,
merge and "make even" plans predict child ids; UpdateShardCount's intermediate shards are not
documented, so a rescale's new shards have `shard_id` None.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from console.errors import BadInput
from console.hashkeys import (
    HASH_SPACE,
    check_tiling,
    even_split,
    md5_hash_key,
    share_of_space,
    validate_partition_key,
)
from console.limits import (
    Breach,
    Limits,
    StreamContext,
    check_account_shards,
    check_split_key,
    check_stream_state,
    check_update_shard_count,
)
from console.model import Shard

DEFAULT_LIMITS = Limits()
MAX_LISTED_MOVES = 1000
MAX_LISTED_ROUTES = 200

ORDERING_NOTE = (
    "Per-key order holds only if consumers read each parent shard to its end before reading its "
    "children (the KCL does this; a hand-written consumer must check ParentShardId and "
    "AdjacentParentShardId). Records already in a parent stay there until retention expires."
)


@dataclass(frozen=True, slots=True)
class PlannedShard:
    """An open shard after the change. `shard_id` is None where AWS does not document the id."""

    shard_id: str | None
    starting_hash_key: int
    ending_hash_key: int
    parent_shard_id: str | None = None
    adjacent_parent_shard_id: str | None = None
    unchanged: bool = False  # the same shard as before (same id, same range)

    @property
    def share(self) -> float:
        return share_of_space(self.starting_hash_key, self.ending_hash_key)

    @property
    def range(self) -> tuple[int, int]:
        return (self.starting_hash_key, self.ending_hash_key)

    def to_json(self) -> dict:
        return {
            "shard_id": self.shard_id,
            "starting_hash_key": str(self.starting_hash_key),
            "ending_hash_key": str(self.ending_hash_key),
            "share": self.share,
            "parent_shard_id": self.parent_shard_id,
            "adjacent_parent_shard_id": self.adjacent_parent_shard_id,
            "unchanged": self.unchanged,
        }


@dataclass(frozen=True, slots=True)
class Operation:
    """One API call. For splits and merges `new_starting_hash_key` is the hash key where the two
    ranges meet (for a merge: the upper shard's start), so execution can find the right shards
    again by range when their ids were only predicted."""

    kind: str  # "split" | "merge" | "update_shard_count"
    shard_id: str | None = None
    adjacent_shard_id: str | None = None
    new_starting_hash_key: int | None = None
    target_shard_count: int | None = None

    def describe(self) -> str:
        if self.kind == "split":
            return f"SplitShard {self.shard_id} at {self.new_starting_hash_key}"
        if self.kind == "merge":
            return f"MergeShards {self.shard_id} + {self.adjacent_shard_id}"
        return f"UpdateShardCount to {self.target_shard_count} (UNIFORM_SCALING)"

    def to_json(self) -> dict:
        doc: dict = {"kind": self.kind}
        if self.kind == "split":
            doc.update(shard_id=self.shard_id, new_starting_hash_key=str(self.new_starting_hash_key))
        elif self.kind == "merge":
            doc.update(shard_id=self.shard_id, adjacent_shard_id=self.adjacent_shard_id,
                       boundary=str(self.new_starting_hash_key))
        else:
            doc.update(target_shard_count=self.target_shard_count, scaling_type="UNIFORM_SCALING")
        return doc


@dataclass(frozen=True)
class KeySample:
    """Partition keys and their hash keys, hashed and sorted once so every plan reuses the work."""

    keys: Sequence[str]
    hash_keys: Sequence[int]
    order: Sequence[int] = field(init=False, repr=False, compare=False)  # positions by ascending hash key
    sorted_hash_keys: Sequence[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        order = sorted(range(len(self.hash_keys)), key=self.hash_keys.__getitem__)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "sorted_hash_keys", [self.hash_keys[i] for i in order])

    @classmethod
    def from_partition_keys(cls, keys: Iterable[str]) -> "KeySample":
        keys = [validate_partition_key(k) for k in keys]
        return cls(keys, [md5_hash_key(k) for k in keys])

    def __len__(self) -> int:
        return len(self.hash_keys)


@dataclass(frozen=True, slots=True)
class KeyMove:
    partition_key: str
    hash_key: int
    from_shard_id: str
    to_shard_id: str | None
    to_index: int  # position of the destination in the plan's `after` list

    def to_json(self) -> dict:
        return {"partition_key": self.partition_key, "hash_key": str(self.hash_key),
                "from": self.from_shard_id, "to": self.to_shard_id, "to_index": self.to_index}


@dataclass(frozen=True)
class KeyMovement:
    """How a sample of keys moves: counts per (from shard, to shard) route and the first moves."""

    sample_size: int
    moved: int
    routes: tuple[tuple[str, str | None, int, int], ...]  # (from id, to id, to index, keys), most keys first
    moves: tuple[KeyMove, ...]  # up to MAX_LISTED_MOVES moved keys, in hash-key order

    @property
    def moved_fraction(self) -> float:
        return self.moved / self.sample_size if self.sample_size else 0.0

    def to_json(self) -> dict:
        return {
            "sample_size": self.sample_size,
            "moved": self.moved,
            "moved_fraction": self.moved_fraction,
            "routes_total": len(self.routes),
            "routes": [{"from": f, "to": t, "to_index": i, "keys": n} for f, t, i, n in self.routes[:MAX_LISTED_ROUTES]],
            "moves_listed": len(self.moves),
            "moves": [m.to_json() for m in self.moves],
        }


@dataclass(frozen=True)
class ReshardPlan:
    action: str  # "split" | "merge" | "scale" | "even"
    summary: str
    before: tuple[Shard, ...]  # open shards before, in key order
    after: tuple[PlannedShard, ...]  # open shards after, in key order
    operations: tuple[Operation, ...]
    moved_fraction: float  # of the key space, landing on a different shard than before
    key_movement: KeyMovement | None
    breaches: tuple[Breach, ...]
    split_steps: int = 0
    merge_steps: int = 0
    short_lived_shards: int = 0
    peak_open_shards: int = 0
    ordering: str = ORDERING_NOTE
    notes: tuple[str, ...] = field(default_factory=tuple)
    median: MedianSplit | None = None  # a split at the median of a sample: how it divides the sample

    @property
    def ok(self) -> bool:
        return not self.breaches

    @property
    def is_noop(self) -> bool:
        return not self.operations

    def to_json(self) -> dict:
        return {
            "action": self.action,
            "summary": self.summary,
            "ok": self.ok,
            "operations": [op.to_json() for op in self.operations],
            "before": [_shard_json(s) for s in self.before],
            "after": [s.to_json() for s in self.after],
            "before_count": len(self.before),
            "after_count": len(self.after),
            "moved_fraction": self.moved_fraction,
            "split_steps": self.split_steps,
            "merge_steps": self.merge_steps,
            "short_lived_shards": self.short_lived_shards,
            "peak_open_shards": self.peak_open_shards,
            "key_movement": self.key_movement.to_json() if self.key_movement else None,
            "ordering": self.ordering,
            "notes": list(self.notes),
            "breaches": [b.to_json() for b in self.breaches],
            "median_split": self.median.to_json() if self.median else None,
        }


def _shard_json(shard: Shard) -> dict:
    return {"shard_id": shard.shard_id, "starting_hash_key": str(shard.starting_hash_key),
            "ending_hash_key": str(shard.ending_hash_key), "share": shard.share}


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
    return Breach("shard_not_open", f"{operation} works only on open shards",
                  f"{shard.shard_id} is closed (it was already split or merged)", {"shard_id": shard.shard_id})


def midpoint(shard: Shard) -> int:
    """The split key that halves the shard's range exactly (for a whole-space shard: 2**127)."""
    return shard.starting_hash_key + (shard.ending_hash_key - shard.starting_hash_key + 1) // 2


@dataclass(frozen=True, slots=True)
class MedianSplit:
    """A split key chosen from a sample, and how it divides the part of the sample in the shard."""

    shard_id: str
    key: int  # NewStartingHashKey: entries below it go to the lower child
    source: str  # where the sample came from, e.g. "keys.txt" or "the last 300 s of records"
    sampled: int  # sample entries (records, or lines of a keys file) in total
    inside: int  # of which hash into the shard; only these count
    distinct_keys: int  # distinct partition keys among those inside
    lower: int  # entries inside that the lower child gets
    upper: int
    unit: str = "keys"  # what an entry is: "keys" (a keys file) or "records" (records read from the stream)
    uncut_key: str | None = None  # when no cut is within one entry of even: the key at the median that
    uncut_count: int = 0  # cannot be cut, and how many entries it holds

    @property
    def lower_fraction(self) -> float:
        return self.lower / self.inside if self.inside else 0.0

    @property
    def upper_fraction(self) -> float:
        return self.upper / self.inside if self.inside else 0.0

    def describe(self) -> str:
        outside = self.sampled - self.inside
        ignored = f" ({outside} more hash outside the shard and were left out)" if outside else ""
        text = (f"median of {self.inside} sampled {self.unit} ({self.distinct_keys} distinct keys) from {self.source}"
                f"{ignored}; it divides them {self.lower_fraction:.1%} / {self.upper_fraction:.1%} "
                f"({self.lower} / {self.upper})")
        if self.uncut_key is not None:
            text += (f"; no split divides them more evenly: {self.uncut_key!r} alone has {self.uncut_count} "
                     f"({self.uncut_count / self.inside:.1%}) and one hash key cannot be split")
        return text

    def to_json(self) -> dict:
        return {"shard_id": self.shard_id, "key": str(self.key), "source": self.source, "sampled": self.sampled,
                "inside_shard": self.inside, "distinct_keys": self.distinct_keys, "lower": self.lower,
                "upper": self.upper, "lower_fraction": self.lower_fraction, "upper_fraction": self.upper_fraction,
                "unit": self.unit, "uncut_key": self.uncut_key, "uncut_count": self.uncut_count}


def median_split(shard: Shard, sample: KeySample, source: str = "the sample", unit: str = "keys") -> MedianSplit:
    """The split key that divides the sample entries hashing into `shard` as evenly as possible.

    Entries are weighted one each, so a key seen in 500 records pulls the median 500 times: this
    divides observed traffic, not key counts. Many entries can share one hash key (a hot partition
    key), and a split cannot cut through one hash key, so the best lower-child count is either the
    number of entries below the median's hash key or the number up to and including it. The key
    itself is put halfway into the gap between the two neighbouring sampled hash keys rather than
    on the upper one, so unseen keys near the boundary are not all pushed to one side.
    """
    entries = sorted((h, k) for h, k in zip(sample.hash_keys, _keys_or_hashes(sample)) if shard.contains(h))
    inside = [h for h, _ in entries]
    total = len(inside)
    if total < 2:
        raise BadInput(
            f"{total} of the {len(sample)} sampled {unit} fall in {shard.shard_id}; "
            "need at least 2 to find a median", code="too_few_keys")
    middle = inside[total // 2]
    first, after = bisect.bisect_left(inside, middle), bisect.bisect_right(inside, middle)
    candidates = [first, after]
    lower = min((c for c in candidates if 0 < c < total), key=lambda c: abs(2 * c - total), default=None)
    if lower is None:
        raise BadInput(f"all {total} sampled {unit} in {shard.shard_id} have the same hash key (partition key "
                       f"{str(entries[0][1])!r}); no split key divides them", code="one_hash_key")
    below, above = inside[lower - 1], inside[lower]
    key = below + (above - below + 1) // 2  # below < key <= above, so exactly `lower` entries fall below it
    uncut = (str(entries[first][1]), after - first) if abs(2 * lower - total) > 1 else (None, 0)
    return MedianSplit(shard.shard_id, key, source, len(sample), total, len({k for _, k in entries}),
                       lower, total - lower, unit, *uncut)


def _keys_or_hashes(sample: KeySample) -> Sequence:
    """Partition keys to count distinct ones by; hash keys where a sample carries no keys."""
    return sample.keys if len(sample.keys) == len(sample.hash_keys) else sample.hash_keys


def median_hash_key(shard: Shard, sample: KeySample) -> int:
    """The split key that puts half of the sample keys falling in `shard` on each side."""
    return median_split(shard, sample).key


def key_movement(before: Sequence[Shard], after: Sequence[PlannedShard], sample: KeySample | None) -> KeyMovement | None:
    """Which sample keys land on another shard after the change, and where.

    A key moves when the shard that serves it is replaced: its before-shard's range is not an open
    range afterwards. The before and after boundaries together cut the key space into at most N+M
    segments, each inside exactly one before-shard and one after-shard. With the sample's hash
    keys sorted once (KeySample), counting per segment is one bisect per segment, and the listed
    moves are slices of that order: no work per key at all.
    """
    if sample is None:
        return None
    before_ends = [s.ending_hash_key for s in before]
    after_ends = [s.ending_hash_key for s in after]
    after_ranges = {s.range for s in after}
    changed = [(s.starting_hash_key, s.ending_hash_key) not in after_ranges for s in before]
    ordered, keys = sample.sorted_hash_keys, sample.keys
    per_route: Counter = Counter()
    moves: list[KeyMove] = []
    low = 0
    for end in sorted(set(before_ends) | set(after_ends)):
        high = bisect.bisect_right(ordered, end, low)
        old = bisect.bisect_left(before_ends, end)
        if changed[old] and high > low:
            new = bisect.bisect_left(after_ends, end)
            per_route[(old, new)] += high - low
            for position in sample.order[low:min(high, low + MAX_LISTED_MOVES - len(moves))]:
                moves.append(KeyMove(keys[position] if position < len(keys) else "", sample.hash_keys[position],
                                     before[old].shard_id, after[new].shard_id, new))
        low = high
    routes = tuple(
        (before[o].shard_id, after[n].shard_id, n, count)
        for (o, n), count in sorted(per_route.items(), key=lambda item: (-item[1], item[0]))
    )
    return KeyMovement(len(sample.hash_keys), sum(per_route.values()), routes, tuple(moves))


def moved_fraction(before: Sequence[Shard], after: Sequence[PlannedShard]) -> float:
    """Fraction of the key space whose shard changes (exact, from the ranges)."""
    after_ranges = {s.range for s in after}
    moved = sum(s.ending_hash_key - s.starting_hash_key + 1 for s in before
                if (s.starting_hash_key, s.ending_hash_key) not in after_ranges)
    return moved / HASH_SPACE


def _unchanged(shards: Sequence[Shard]) -> tuple[PlannedShard, ...]:
    return tuple(_kept(s) for s in shards)


def _kept(shard: Shard) -> PlannedShard:
    return PlannedShard(shard.shard_id, shard.starting_hash_key, shard.ending_hash_key,
                        shard.parent_shard_id, shard.adjacent_parent_shard_id, unchanged=True)


def _plan(action: str, summary: str, before: tuple[Shard, ...], after: tuple[PlannedShard, ...],
          operations: Sequence[Operation], breaches: Sequence[Breach], sample: KeySample | None,
          **extra) -> ReshardPlan:
    return ReshardPlan(
        action=action, summary=summary, before=before, after=after, operations=tuple(operations),
        moved_fraction=moved_fraction(before, after), key_movement=key_movement(before, after, sample),
        breaches=tuple(breaches), **extra,
    )


# ---------------------------------------------------------------- split and merge


def plan_split(shards: Sequence[Shard], shard_id: str, new_starting_hash_key: int, *, basis: str = "explicit hash key",
               context: StreamContext | None = None, limits: Limits = DEFAULT_LIMITS,
               sample: KeySample | None = None, median: MedianSplit | None = None) -> ReshardPlan:
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
        return _plan("split", summary, before, _unchanged(before), (), breaches, sample,
                     peak_open_shards=len(before), median=median)
    ids = _IdAllocator(shards)
    low = PlannedShard(ids.take(), target.starting_hash_key, new_starting_hash_key - 1, parent_shard_id=shard_id)
    high = PlannedShard(ids.take(), new_starting_hash_key, target.ending_hash_key, parent_shard_id=shard_id)
    after = []
    for shard in before:
        after.extend((low, high) if shard.shard_id == shard_id else _unchanged((shard,)))
    breaches += check_account_shards(len(before), len(before) + 1, context, limits)
    operation = Operation("split", shard_id=shard_id, new_starting_hash_key=new_starting_hash_key)
    return _plan("split", summary, before, tuple(after), [operation], breaches, sample,
                 split_steps=1, peak_open_shards=len(before) + 1, median=median)


def plan_merge(shards: Sequence[Shard], shard_id: str, adjacent_shard_id: str, *,
               context: StreamContext | None = None, limits: Limits = DEFAULT_LIMITS,
               sample: KeySample | None = None) -> ReshardPlan:
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
        breaches.append(Breach(
            "merge_not_adjacent",
            "MergeShards needs two open shards whose hash ranges touch (one ends at k-1, the other starts at k)",
            f"{lower.shard_id} and {upper.shard_id} are not adjacent: {between} open shard(s) lie between "
            f"them ({lower.shard_id} ends at {lower.ending_hash_key}, {upper.shard_id} starts at {upper.starting_hash_key})",
            {"shard_id": shard_id, "adjacent_shard_id": adjacent_shard_id, "shards_between": between},
        ))
    if any(b.limit in ("shard_not_open", "merge_not_adjacent") for b in breaches):
        return _plan("merge", summary, before, _unchanged(before), (), breaches, sample, peak_open_shards=len(before))
    child = PlannedShard(_IdAllocator(shards).take(), lower.starting_hash_key, upper.ending_hash_key,
                         parent_shard_id=lower.shard_id, adjacent_parent_shard_id=upper.shard_id)
    after = []
    for shard in before:
        if shard.shard_id == lower.shard_id:
            after.append(child)
        elif shard.shard_id != upper.shard_id:
            after.extend(_unchanged((shard,)))
    notes = ()
    if lower.shard_id != shard_id:
        notes = (f"{lower.shard_id} covers the lower range, so it is passed as ShardToMerge",)
    operation = Operation("merge", shard_id=lower.shard_id, adjacent_shard_id=upper.shard_id,
                          new_starting_hash_key=upper.starting_hash_key)
    return _plan("merge", summary, before, tuple(after), [operation], breaches, sample,
                 merge_steps=1, peak_open_shards=len(before), notes=notes)


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
    starts = sorted(by_start)
    operations: list[Operation] = []
    for key in sorted(wanted - current):
        parent = by_start[starts[bisect.bisect_right(starts, key) - 1]]
        operations.append(Operation("split", shard_id=parent.shard_id, new_starting_hash_key=key))
        by_start[parent.starting_hash_key] = PlannedShard(ids.take(), parent.starting_hash_key, key - 1,
                                                          parent_shard_id=parent.shard_id)
        by_start[key] = PlannedShard(ids.take(), key, parent.ending_hash_key, parent_shard_id=parent.shard_id)
        bisect.insort(starts, key)
    splits = len(operations)
    for key in sorted(current - wanted):
        position = bisect.bisect_left(starts, key)
        lower, upper = by_start[starts[position - 1]], by_start[key]
        operations.append(Operation("merge", shard_id=lower.shard_id, adjacent_shard_id=upper.shard_id,
                                    new_starting_hash_key=key))
        by_start[lower.starting_hash_key] = PlannedShard(
            ids.take(), lower.starting_hash_key, upper.ending_hash_key,
            parent_shard_id=lower.shard_id, adjacent_parent_shard_id=upper.shard_id)
        del by_start[key]
        del starts[position]
    merges = len(operations) - splits
    after = tuple(by_start[start] for start in starts)
    created_and_kept = sum(1 for s in after if not s.unchanged)
    return _Walk(operations, after, splits, merges, 2 * splits + merges - created_and_kept, len(before) + splits)


def _rounding_near_misses(before: Sequence[Shard], target_ranges: Sequence[tuple[int, int]]) -> int:
    """Current boundaries that miss a target boundary only by even_split's rounding (< N+M keys)."""
    wanted = sorted(start for start, _ in target_ranges[1:])
    tolerance = len(before) + len(target_ranges)
    near = 0
    for shard in before[1:]:
        key = shard.starting_hash_key
        position = bisect.bisect_left(wanted, key)
        neighbours = wanted[max(0, position - 1):position + 1]
        if neighbours and key not in neighbours and min(abs(key - w) for w in neighbours) <= tolerance:
            near += 1
    return near


def _target_count(count: object, what: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise BadInput(f"{what} must be a whole number of at least 1; got {count!r}", code="bad_count")
    return count


def plan_scale(shards: Sequence[Shard], target: int, *, context: StreamContext | None = None,
               limits: Limits = DEFAULT_LIMITS, sample: KeySample | None = None) -> ReshardPlan:
    """Rescale to `target` open shards with UpdateShardCount (UNIFORM_SCALING).

    Model (AWS documents the result, not the path): the result is `target` equal ranges, exactly
    the ranges of a new stream of `target` shards (console.hashkeys.even_split). To get there AWS
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
        _kept(before_by_range[(start, end)]) if (start, end) in before_by_range
        else PlannedShard(None, start, end)
        for start, end in target_ranges
    )
    summary = f"rescale {len(before)} -> {target} open shards (UpdateShardCount, UNIFORM_SCALING)"
    notes = []
    near = _rounding_near_misses(before, target_ranges)
    if near:
        notes.append(f"{near} current boundaries lie within a few hash keys of a target boundary (integer "
                     f"rounding of 2**128/N); the step counts treat them as different, so they are an upper bound")
    if walk.splits or walk.merges:
        operations = [Operation("update_shard_count", target_shard_count=target)]
        breaches = check_update_shard_count(len(before), target, walk.peak, context, limits)
        if walk.short_lived:
            notes.append(f"AWS recommends doubling or halving; this target implies about {walk.short_lived} "
                         "short-lived shards, which count toward the account shard quota while they exist")
    else:
        operations, breaches = [], []
        notes.append(f"the stream already has {target} equal shards: nothing to do")
    return _plan("scale", summary, before, after, operations, breaches, sample,
                 split_steps=walk.splits, merge_steps=walk.merges, short_lived_shards=walk.short_lived,
                 peak_open_shards=walk.peak, notes=tuple(notes))


def plan_even(shards: Sequence[Shard], target: int | None = None, *, context: StreamContext | None = None,
              limits: Limits = DEFAULT_LIMITS, sample: KeySample | None = None) -> ReshardPlan:
    """Make every open shard's share equal (to `target` shards, default the current count) with
    explicit SplitShard/MergeShards calls, run one after another (each makes the stream UPDATING).
    The final ranges are even_split(target), the same as a new stream's."""
    before = open_shards(shards)
    target = len(before) if target is None else _target_count(target, "target shard count")
    walk = _walk_to(shards, before, even_split(target))
    breaches = []
    if walk.operations:
        breaches = check_stream_state(context, "SplitShard/MergeShards")
        breaches += check_account_shards(len(before), walk.peak, context, limits)
    notes = [f"{len(walk.operations)} calls ({walk.splits} splits, then {walk.merges} merges), each waiting "
             "for the stream to be ACTIVE again" if walk.operations else "the open shards are already equal: nothing to do"]
    if walk.short_lived:
        notes.append(f"{walk.short_lived} shards are created and merged away again")
    return _plan("even", f"make {len(before)} open shards into {target} equal shards", before, walk.after,
                 walk.operations, breaches, sample, split_steps=walk.splits, merge_steps=walk.merges,
                 short_lived_shards=walk.short_lived, peak_open_shards=walk.peak, notes=tuple(notes))


# ---------------------------------------------------------------- text


RIBBON_BEFORE = "0123456789abcdefghijklmnopqrstuvwxyz"
RIBBON_NEW = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ribbon(ranges: Sequence[tuple[int, int]], width: int = 64, labels: Sequence[str] | None = None) -> str:
    """The key space as a bar of `width` characters; column c shows the shard owning its middle key.
    `labels[i]` is shard i's character (default: 0-9a-z, cycling)."""
    endings = [end for _, end in ranges]
    labels = labels or [RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i in range(len(ranges))]
    columns = (((2 * c + 1) * HASH_SPACE) // (2 * width) for c in range(width))
    return "".join(labels[bisect.bisect_left(endings, key)] for key in columns)


def ribbons(plan: ReshardPlan, width: int = 64) -> tuple[str, str]:
    """Before and after bars: unchanged shards keep their character, new shards get capitals."""
    before_labels = {s.shard_id: RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i, s in enumerate(plan.before)}
    after_labels, fresh = [], 0
    for shard in plan.after:
        if shard.unchanged and shard.shard_id in before_labels:
            after_labels.append(before_labels[shard.shard_id])
        else:
            after_labels.append(RIBBON_NEW[fresh % len(RIBBON_NEW)])
            fresh += 1
    before_bar = ribbon([(s.starting_hash_key, s.ending_hash_key) for s in plan.before], width)
    after_bar = ribbon([s.range for s in plan.after], width, after_labels)
    return before_bar, after_bar


def _shard_rows(shards: Sequence[PlannedShard | Shard], limit: int) -> list[str]:
    rows = []
    for shard in shards[:limit]:
        mark = " " if getattr(shard, "unchanged", True) else "+"
        rows.append(f"  {mark} {shard.shard_id or '(new)':<22} {shard.share:8.3%}  "
                    f"[{shard.starting_hash_key}, {shard.ending_hash_key}]")
    if len(shards) > limit:
        rows.append(f"    ... {len(shards) - limit} more")
    return rows


def render_plan(plan: ReshardPlan, width: int = 64, max_rows: int = 20, *, with_ribbons: bool = True) -> str:
    """The plan as text for the terminal (the CLI prints it; the TUI preview shows it)."""
    lines = [plan.summary, ""]
    if with_ribbons:
        before_bar, after_bar = ribbons(plan, width)
        lines += [f"  before |{before_bar}|", f"  after  |{after_bar}|", ""]
    if plan.operations:
        lines.append(f"Calls ({len(plan.operations)}):")
        lines += [f"  {i + 1}. {op.describe()}" for i, op in enumerate(plan.operations[:max_rows])]
        if len(plan.operations) > max_rows:
            lines.append(f"  ... {len(plan.operations) - max_rows} more")
    lines.append(f"Before: {len(plan.before)} open shards")
    lines += _shard_rows(plan.before, max_rows)
    lines.append(f"After: {len(plan.after)} open shards (+ = new)")
    lines += _shard_rows(plan.after, max_rows)
    if plan.median is not None:
        lines.append(f"Split key: {plan.median.describe()}")
    lines.append(f"Key space moving to another shard: {plan.moved_fraction:.2%}")
    if plan.action in ("scale", "even"):
        lines.append(f"Steps: {plan.split_steps} splits, {plan.merge_steps} merges; "
                     f"{plan.short_lived_shards} short-lived shards; peak {plan.peak_open_shards} open shards")
    movement = plan.key_movement
    if movement is not None:
        lines.append(f"Sample keys moving: {movement.moved} of {movement.sample_size} ({movement.moved_fraction:.2%})")
        for move in movement.moves[:10]:
            lines.append(f"  {move.partition_key!r}: {move.from_shard_id} -> {move.to_shard_id or f'new shard #{move.to_index}'}")
        if movement.moved > 10:
            lines.append(f"  ... {movement.moved - 10} more (see --json)")
    lines.append(f"Ordering: {plan.ordering}")
    lines += [f"Note: {note}" for note in plan.notes]
    if plan.breaches:
        lines.append(f"REJECTED: {len(plan.breaches)} limit(s) breached:")
        lines += [f"  - {b.limit}: {b.detail} (rule: {b.rule})" for b in plan.breaches]
    else:
        lines.append("Limits: none breached.")
    return "\n".join(lines)
