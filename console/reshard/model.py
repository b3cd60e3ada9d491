"""The values a reshard plan is made of: shards after the change, the API operations, a key sample,
how sampled keys move, the median split, and the plan itself with its JSON form.

Built by console.reshard.plan (and console.reshard.sample); read by the CLI, the executor and the TUI.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.keyspace.hashkeys import md5_hash_keys, share_of_space, validate_partition_keys
from console.reshard.limits import Breach
from console.topology.model import Shard

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

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind}
        if self.kind == "split":
            doc.update(shard_id=self.shard_id, new_starting_hash_key=str(self.new_starting_hash_key))
        elif self.kind == "merge":
            doc.update(
                shard_id=self.shard_id,
                adjacent_shard_id=self.adjacent_shard_id,
                boundary=str(self.new_starting_hash_key),
            )
        else:
            doc.update(target_shard_count=self.target_shard_count, scaling_type="UNIFORM_SCALING")
        return doc


@dataclass(frozen=True)
class KeySample:
    """Partition keys and their hash keys, hashed once so every plan reuses the work."""

    keys: Sequence[str]
    hash_keys: Sequence[int]

    @classmethod
    def from_partition_keys(cls, keys: Iterable[str]) -> KeySample:
        keys = list(keys)
        validate_partition_keys(keys)
        return cls(keys, md5_hash_keys(keys))

    def __len__(self) -> int:
        return len(self.hash_keys)


@dataclass(frozen=True, slots=True)
class KeyMove:
    partition_key: str
    hash_key: int
    from_shard_id: str
    to_shard_id: str | None
    to_index: int  # position of the destination in the plan's `after` list

    def to_json(self) -> dict[str, Any]:
        return {
            "partition_key": self.partition_key,
            "hash_key": str(self.hash_key),
            "from": self.from_shard_id,
            "to": self.to_shard_id,
            "to_index": self.to_index,
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "sample_size": self.sample_size,
            "moved": self.moved,
            "moved_fraction": self.moved_fraction,
            "routes_total": len(self.routes),
            "routes": [
                {"from": f, "to": t, "to_index": i, "keys": n} for f, t, i, n in self.routes[:MAX_LISTED_ROUTES]
            ],
            "moves_listed": len(self.moves),
            "moves": [m.to_json() for m in self.moves],
        }


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
        text = (
            f"median of {self.inside} sampled {self.unit} ({self.distinct_keys} distinct keys) from {self.source}"
            f"{ignored}; it divides them {self.lower_fraction:.1%} / {self.upper_fraction:.1%} "
            f"({self.lower} / {self.upper})"
        )
        if self.uncut_key is not None:
            text += (
                f"; no split divides them more evenly: {self.uncut_key!r} alone has {self.uncut_count} "
                f"({self.uncut_count / self.inside:.1%}) and one hash key cannot be split"
            )
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "key": str(self.key),
            "source": self.source,
            "sampled": self.sampled,
            "inside_shard": self.inside,
            "distinct_keys": self.distinct_keys,
            "lower": self.lower,
            "upper": self.upper,
            "lower_fraction": self.lower_fraction,
            "upper_fraction": self.upper_fraction,
            "unit": self.unit,
            "uncut_key": self.uncut_key,
            "uncut_count": self.uncut_count,
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

    def to_json(self) -> dict[str, Any]:
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


def _shard_json(shard: Shard) -> dict[str, Any]:
    return {
        "shard_id": shard.shard_id,
        "starting_hash_key": str(shard.starting_hash_key),
        "ending_hash_key": str(shard.ending_hash_key),
        "share": shard.share,
    }
