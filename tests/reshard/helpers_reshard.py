"""Helpers shared by the reshard tests: evenly split streams and partition keys aimed at a hash range."""

from __future__ import annotations

from console.keyspace.hashkeys import even_split, md5_hash_key, shard_id_for_index
from console.topology.model import Shard


def even_shards(count: int) -> list[Shard]:
    """`count` open shards splitting the key space evenly, numbered in key order."""
    return [Shard(shard_id_for_index(i), start, end) for i, (start, end) in enumerate(even_split(count))]


def keys_hashing_into(low: int, high: int, count: int, prefix: str) -> list[str]:
    """`count` distinct partition keys whose MD5 hash key lies in [low, high]."""
    keys, index = [], 0
    while len(keys) < count:
        key = f"{prefix}-{index}"
        if low <= md5_hash_key(key) <= high:
            keys.append(key)
        index += 1
    return keys
