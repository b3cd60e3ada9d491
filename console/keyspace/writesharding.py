"""Write sharding for a hot partition key: spread one key over n calculated suffixes.

suffix = xxh64("PK:SK") & (n - 1) with n a power of two (the AND takes the low bits without modulo
bias); the sharded partition key is "PK:suffix". A reader can rebuild the suffix from PK and SK alone.
The what-if: which shards the n sharded keys land on, and how evenly given sort keys spread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import xxhash

from console.errors import BadInput
from console.keyspace.distribution import Distribution, count_indices, summarize
from console.keyspace.hashkeys import (
    MAX_PARTITION_KEY_CHARS,
    HashRangeIndex,
    check_utf8,
    md5_hash_key,
    share_of_space,
    validate_partition_key,
)

# Far past any sane fan-out (a reader must query every suffix); keeps a typo from a minutes-long,
# hundreds-of-megabytes answer: 2**20 suffixes took over two minutes and 290 MB of --json.
MAX_SUFFIXES = 1 << 16


def check_suffix_count(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1 or count & (count - 1):
        raise BadInput(f"suffix count must be a power of two (1, 2, 4, 8, 16, ...); got {count!r}")
    if count > MAX_SUFFIXES:
        raise BadInput(f"suffix count must be at most {MAX_SUFFIXES}; got {count}")
    return count


def suffix_for(partition_key: str, sort_key: str, suffix_count: int) -> int:
    """The suffix of one record: the low bits of xxh64 (seed 0) of "PK:SK"."""
    return xxhash.xxh64_intdigest(f"{partition_key}:{sort_key}".encode()) & (suffix_count - 1)


def sharded_partition_key(partition_key: str, suffix: int) -> str:
    return f"{partition_key}:{suffix}"


@dataclass(frozen=True, slots=True)
class SuffixPlacement:
    suffix: int
    partition_key: str  # the sharded key "PK:suffix"
    hash_key: int
    shard_id: str
    shard_index: int
    sort_keys: int  # how many of the given sort keys got this suffix

    def to_json(self) -> dict[str, Any]:
        return {
            "suffix": self.suffix,
            "partition_key": self.partition_key,
            "hash_key": str(self.hash_key),
            "shard_id": self.shard_id,
            "shard_index": self.shard_index,
            "sort_keys": self.sort_keys,
        }


@dataclass(frozen=True, slots=True)
class SortKeyPlacement:
    sort_key: str
    suffix: int
    partition_key: str
    shard_id: str
    shard_index: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sort_key": self.sort_key,
            "suffix": self.suffix,
            "partition_key": self.partition_key,
            "shard_id": self.shard_id,
            "shard_index": self.shard_index,
        }


@dataclass(frozen=True, slots=True)
class Spread:
    partition_key: str
    suffix_count: int
    suffixes: tuple[SuffixPlacement, ...]  # one per suffix 0 .. n-1
    sort_keys: tuple[SortKeyPlacement, ...]  # in the order given
    by_suffix: Distribution  # the given sort keys per suffix
    by_shard: Distribution  # the given sort keys per shard (every shard of the set)
    suffixes_by_shard: Distribution  # the n sharded keys per shard: how many suffixes each shard takes

    @property
    def shards_reached(self) -> int:
        return len({s.shard_id for s in self.suffixes})

    def to_json(self) -> dict[str, Any]:
        return {
            "partition_key": self.partition_key,
            "suffix_count": self.suffix_count,
            "shards_reached": self.shards_reached,
            "suffixes": [s.to_json() for s in self.suffixes],
            "sort_keys": [s.to_json() for s in self.sort_keys],
            "by_suffix": self.by_suffix.to_json(),
            "by_shard": self.by_shard.to_json(),
            "suffixes_by_shard": self.suffixes_by_shard.to_json(),
        }


def spread(partition_key: str, suffix_count: int, shards: HashRangeIndex, sort_keys: Iterable[str] = ()) -> Spread:
    """Where the n sharded keys of a hot partition key land on `shards`, and how `sort_keys` spread."""
    validate_partition_key(partition_key)
    check_suffix_count(suffix_count)
    sort_keys = list(sort_keys)
    for position, sort_key in enumerate(sort_keys, 1):
        if not isinstance(sort_key, str) or not sort_key:
            raise BadInput(f"sort key #{position} is empty; the suffix is derived from PK:SK, so it needs one")
        if not sort_key.isascii():
            check_utf8(sort_key, what=f"sort key #{position}")

    sharded = [sharded_partition_key(partition_key, s) for s in range(suffix_count)]
    if len(sharded[-1]) > MAX_PARTITION_KEY_CHARS:  # the longest one
        raise BadInput(
            f"PK is {len(partition_key)} characters; with the suffix ':{suffix_count - 1}' the sharded "
            f"key would be {len(sharded[-1])}, over the {MAX_PARTITION_KEY_CHARS}-character limit"
        )
    hash_keys = [md5_hash_key(k) for k in sharded]
    shard_index_of_suffix = [shards.index_of(h) for h in hash_keys]

    suffix_of_sort_key = [suffix_for(partition_key, sk, suffix_count) for sk in sort_keys]
    per_suffix = count_indices(suffix_of_sort_key, suffix_count)
    shard_count = len(shards)
    expected = [share_of_space(s, e) for s, e in zip(shards.starts, shards.endings)]

    return Spread(
        partition_key=partition_key,
        suffix_count=suffix_count,
        suffixes=tuple(
            SuffixPlacement(
                suffix=s,
                partition_key=sharded[s],
                hash_key=hash_keys[s],
                shard_id=shards.shard_ids[shard_index_of_suffix[s]],
                shard_index=shard_index_of_suffix[s],
                sort_keys=per_suffix[s],
            )
            for s in range(suffix_count)
        ),
        sort_keys=tuple(
            SortKeyPlacement(
                sort_key=sk,
                suffix=s,
                partition_key=sharded[s],
                shard_id=shards.shard_ids[shard_index_of_suffix[s]],
                shard_index=shard_index_of_suffix[s],
            )
            for sk, s in zip(sort_keys, suffix_of_sort_key)
        ),
        by_suffix=summarize([str(s) for s in range(suffix_count)], per_suffix),
        by_shard=summarize(
            shards.shard_ids,
            count_indices((shard_index_of_suffix[s] for s in suffix_of_sort_key), shard_count),
            expected,
        ),
        suffixes_by_shard=summarize(shards.shard_ids, count_indices(shard_index_of_suffix, shard_count), expected),
    )
