"""Plain data shared by the domain modules, the CLI and the UI (no I/O, no Textual)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.keyspace.hashkeys import share_of_space


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard as ListShards describes it. Hash keys are ints; ids are AWS strings."""

    shard_id: str
    starting_hash_key: int
    ending_hash_key: int
    parent_shard_id: str | None = None
    adjacent_parent_shard_id: str | None = None
    starting_sequence_number: str | None = None
    ending_sequence_number: str | None = None  # set once the shard is closed

    @property
    def is_open(self) -> bool:
        return self.ending_sequence_number is None

    @property
    def share(self) -> float:
        return share_of_space(self.starting_hash_key, self.ending_hash_key)

    @property
    def parents(self) -> tuple[str, ...]:
        return tuple(p for p in (self.parent_shard_id, self.adjacent_parent_shard_id) if p)

    def contains(self, hash_key: int) -> bool:
        return self.starting_hash_key <= hash_key <= self.ending_hash_key

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> "Shard":
        """Build from one element of ListShards' `Shards` list."""
        hash_range = raw["HashKeyRange"]
        seq = raw.get("SequenceNumberRange") or {}
        return cls(
            shard_id=raw["ShardId"],
            starting_hash_key=int(hash_range["StartingHashKey"]),
            ending_hash_key=int(hash_range["EndingHashKey"]),
            parent_shard_id=raw.get("ParentShardId"),
            adjacent_parent_shard_id=raw.get("AdjacentParentShardId"),
            starting_sequence_number=seq.get("StartingSequenceNumber"),
            ending_sequence_number=seq.get("EndingSequenceNumber"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "state": "open" if self.is_open else "closed",
            "starting_hash_key": str(self.starting_hash_key),
            "ending_hash_key": str(self.ending_hash_key),
            "share": self.share,
            "parent_shard_id": self.parent_shard_id,
            "adjacent_parent_shard_id": self.adjacent_parent_shard_id,
        }


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """What DescribeStreamSummary tells about a stream."""

    name: str
    status: str  # CREATING | ACTIVE | UPDATING | DELETING
    mode: str  # PROVISIONED | ON_DEMAND
    open_shard_count: int
    retention_hours: int
    encryption: str  # NONE | KMS
    arn: str = ""
    consumer_count: int = 0
    enhanced_metrics: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "mode": self.mode,
            "open_shard_count": self.open_shard_count,
            "retention_hours": self.retention_hours,
            "encryption": self.encryption,
            "arn": self.arn,
        }


def put_records_entry(data: bytes, partition_key: str, explicit_hash_key: int | str | None = None) -> dict[str, object]:
    """One entry of PutRecords' `Records` as AWS takes it: the explicit hash key in decimal, and
    only when there is one (it overrides the partition key's MD5)."""
    entry: dict[str, object] = {"Data": data, "PartitionKey": partition_key}
    if explicit_hash_key is not None:
        entry["ExplicitHashKey"] = str(explicit_hash_key)
    return entry
