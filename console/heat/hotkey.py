"""What to do about a hot key: how many write-sharding suffixes it needs and which shards the
sharded keys land on (the placement itself is console.keyspace.writesharding's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from console.heat.snapshot import SHARD_BYTES_LIMIT, SHARD_RECORDS_LIMIT
from console.keyspace.hashkeys import HashRangeIndex
from console.keyspace.writesharding import spread

TARGET_UTILISATION = 0.5  # leave each sharded key half a shard, room for the shard's other keys


@dataclass(frozen=True, slots=True)
class HotKeyWhatIf:
    key: str
    records_per_s: float
    bytes_per_s: float
    suffixes: int  # a power of two (the suffix is xxh64("PK:SK") & (n-1))
    landing: tuple[tuple[str, str], ...]  # (sharded partition key, shard id) per suffix

    @property
    def shards_hit(self) -> dict[str, int]:
        hits: dict[str, int] = {}
        for _, shard_id in self.landing:
            hits[shard_id] = hits.get(shard_id, 0) + 1
        return hits

    def with_keys(self, rename: Callable[[str], str]) -> HotKeyWhatIf:
        """The same what-if with the key and the sharded keys shown through `rename` (masking)."""
        return replace(self, key=rename(self.key), landing=tuple((rename(key), shard) for key, shard in self.landing))

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "suffixes": self.suffixes,
            "shards_hit": self.shards_hit,
            "sharded_keys": [{"partition_key": key, "shard_id": shard_id} for key, shard_id in self.landing],
        }


def needs_write_sharding(peak_utilisation: float, key_share: float, target: float = TARGET_UTILISATION) -> bool:
    """Whether a key is hot enough to write-shard: in its shard's busiest second (`peak_utilisation`
    of the shard's limit) its `key_share` alone took at least `target`, what each sharded key is left.
    A dominant key of a quiet shard needs nothing."""
    return peak_utilisation * key_share >= target


def suffixes_needed(records_per_s: float, bytes_per_s: float, target: float = TARGET_UTILISATION) -> int:
    """The smallest power of two n >= 2 such that 1/n of the key's traffic stays under `target` of a shard."""
    needed = max(records_per_s / (target * SHARD_RECORDS_LIMIT), bytes_per_s / (target * SHARD_BYTES_LIMIT))
    suffixes = 2
    while suffixes < needed:
        suffixes *= 2
    return suffixes


def hot_key_what_if(
    key: str, records_per_s: float, bytes_per_s: float, index: HashRangeIndex, *, target: float = TARGET_UTILISATION
) -> HotKeyWhatIf:
    """How many suffixes the key needs and which shards the sharded keys `key:0..n-1` land on
    (the placement is console.keyspace.writesharding's)."""
    suffixes = suffixes_needed(records_per_s, bytes_per_s, target)
    placement = spread(key, suffixes, index)
    landing = tuple((row.partition_key, row.shard_id) for row in placement.suffixes)
    return HotKeyWhatIf(key, records_per_s, bytes_per_s, suffixes, landing)
