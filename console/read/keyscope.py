"""Which shards a read for one partition key covers.

A plain record lands on the shard its key's MD5 falls in, so `--key K` would need only that shard.
A KPL aggregate lands by its own outer key or explicit hash key, and the user records inside it keep
their own keys: an inner record of K can sit in any shard. So a key read covers every shard, unless
the user says the stream carries no aggregates (`placement_only`); and then the first aggregate seen
proves otherwise, and the read widens to every shard (`widening_note` says so in one line).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aws_kinesis_agg import MAGIC

from console.keyspace.hashkeys import md5_hash_key, validate_partition_key
from console.topology.model import Shard


def key_hash_to_follow(partition_key: str | None, placement_only: bool) -> int | None:
    """The hash key a read narrows to (its shard and the children holding it), or None: every shard."""
    if partition_key is None or not placement_only:
        return None
    return md5_hash_key(validate_partition_key(partition_key))


def shards_for_key(shards: Sequence[Shard], partition_key: str | None, placement_only: bool) -> list[Shard]:
    """The shards a read for `partition_key` covers: all of them, or with `placement_only` the one(s)
    its MD5 falls in."""
    hash_key = key_hash_to_follow(partition_key, placement_only)
    if hash_key is None:
        return list(shards)
    return [shard for shard in shards if shard.contains(hash_key)]


def carries_aggregate(records: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a GetRecords page holds a KPL aggregate (its data opens with the KPL magic)."""
    return any(record["Data"][:4] == MAGIC for record in records)


def widening_note(partition_key: str, shard_id: str, added: int) -> str:
    return (
        f"tail: {shard_id} holds KPL aggregates, whose records of {partition_key!r} can sit in any shard: "
        f"reading all shards now (+{added})"
    )
