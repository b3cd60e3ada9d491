"""A KCL application's lease table for a stream, as a KCL 2.x worker pair would leave it: what
`kconsole demo lease-table` and `kconsole demo readers` write so the consumers views have a real table to show.

Items follow `DynamoDBLeaseSerializer.toDynamoRecord` (the attribute names are the ones
console.consumers.leases reads): one lease per shard, keyed by shard id; a closed shard is
checkpointed at SHARD_END, an open one at TRIM_HORIZON (so everything it holds counts as behind) or at
a given sequence number; the leases alternate between two workers; parents and hash ranges as the KCL
records them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.consumers.leases import (
    CHECKPOINT,
    CHECKPOINT_SUBSEQUENCE,
    LEASE_COUNTER,
    LEASE_KEY,
    LEASE_OWNER,
    OWNER_SWITCHES,
    PARENT_SHARD_IDS,
)
from console.topology.model import Shard

WORKERS = ("worker-a", "worker-b")


def lease_items(shards: Sequence[Shard], checkpoints: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """`checkpoints` ({shard id: sequence number}) places open shards' checkpoints inside them, with
    the records after it behind; an open shard without one is at TRIM_HORIZON."""
    checkpoints = checkpoints or {}
    items = []
    for index, shard in enumerate(shards):
        item: dict[str, dict[str, Any]] = {
            LEASE_KEY: {"S": shard.shard_id},
            LEASE_OWNER: {"S": WORKERS[index % len(WORKERS)]},
            LEASE_COUNTER: {"N": str(10 + index)},
            OWNER_SWITCHES: {"N": "0"},
            CHECKPOINT: {"S": checkpoints.get(shard.shard_id, "TRIM_HORIZON") if shard.is_open else "SHARD_END"},
            CHECKPOINT_SUBSEQUENCE: {"N": "0"},
            "startingHashKey": {"S": str(shard.starting_hash_key)},
            "endingHashKey": {"S": str(shard.ending_hash_key)},
        }
        if shard.parents:
            item[PARENT_SHARD_IDS] = {"SS": list(shard.parents)}
        items.append(item)
    return items
