"""Plain data shared by the domain modules, the CLI and the UI (no I/O, no Textual)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
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
    def from_api(cls, raw: dict[str, Any]) -> Shard:
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


# AWS's record size bounds (UpdateMaxRecordSize: MaxRecordSizeInKiB from 1,024 to 10,240); a stream
# that does not say has the long-standing 1 MiB.
DEFAULT_MAX_RECORD_KIB = 1024
AUTO_DISTRIBUTION = "AUTO"
NO_KEY = "—"  # how a record sent without a partition key is shown in text (JSON says null)
KEY_DISTRIBUTION = "USER_PARTITION_KEY"


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """What DescribeStreamSummary tells about a stream (ListStreams' StreamSummaries tell less:
    `open_shard_count` is None until a describe fills it in)."""

    name: str
    status: str  # CREATING | ACTIVE | UPDATING | DELETING
    mode: str  # PROVISIONED | ON_DEMAND
    open_shard_count: int | None
    retention_hours: int
    encryption: str  # NONE | KMS
    arn: str = ""
    consumer_count: int = 0
    enhanced_metrics: tuple[str, ...] = field(default_factory=tuple)
    # AUTO: Kinesis spreads records itself and ignores partition and explicit hash keys.
    record_distribution: str = KEY_DISTRIBUTION
    max_record_size_kib: int = DEFAULT_MAX_RECORD_KIB
    warm_throughput_target_mibps: int | None = None
    warm_throughput_current_mibps: int | None = None
    channel_count: int = 0
    stream_id: str = ""
    created: str | None = None  # ISO 8601, when known
    key_id: str | None = None  # the KMS key of an encrypted stream
    # Settings the server's answer left out (one that predates them): the fields above then hold AWS's
    # defaults, which the limits go by, but what is shown of them is "unknown".
    left_out: tuple[str, ...] = ()

    @property
    def auto_distribution(self) -> bool:
        return self.record_distribution == AUTO_DISTRIBUTION

    @property
    def max_record_bytes(self) -> int:
        """The most one record (data plus partition key) may hold on this stream."""
        return self.max_record_size_kib * 1024

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> StreamSummary:
        """Build from DescribeStreamSummary's StreamDescriptionSummary (fields today's API added are
        optional: servers that predate them give the old defaults)."""
        metrics = tuple(m for group in raw.get("EnhancedMonitoring", []) for m in group.get("ShardLevelMetrics", []))
        warm = raw.get("WarmThroughput") or {}
        created: Any = raw.get("StreamCreationTimestamp")
        mode = (raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED")
        answered = {
            "record_distribution": "RecordDistributionStrategy" in raw,
            "max_record_size_kib": "MaxRecordSizeInKiB" in raw,
            # AWS gives warm throughput for on-demand streams only: a provisioned stream has none.
            "warm_throughput": "WarmThroughput" in raw or mode != "ON_DEMAND",
        }
        return cls(
            name=raw["StreamName"],
            status=raw["StreamStatus"],
            mode=(raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED"),
            open_shard_count=int(raw.get("OpenShardCount", 0)),
            retention_hours=int(raw.get("RetentionPeriodHours", 24)),
            encryption=raw.get("EncryptionType") or "NONE",
            arn=raw.get("StreamARN", ""),
            consumer_count=int(raw.get("ConsumerCount") or 0),
            enhanced_metrics=metrics,
            record_distribution=raw.get("RecordDistributionStrategy") or KEY_DISTRIBUTION,
            max_record_size_kib=int(raw.get("MaxRecordSizeInKiB") or DEFAULT_MAX_RECORD_KIB),
            warm_throughput_target_mibps=_optional_int(warm.get("TargetMiBps")),
            warm_throughput_current_mibps=_optional_int(warm.get("CurrentMiBps")),
            channel_count=int(raw.get("ChannelCount") or 0),
            stream_id=raw.get("StreamId") or "",
            created=created.isoformat() if hasattr(created, "isoformat") else created,
            key_id=raw.get("KeyId") or None,
            left_out=tuple(name for name, given in answered.items() if not given),
        )

    def shown(self, name: str, value: Any) -> Any:
        """`value` of the setting `name`, or None (unknown) where the server left it out."""
        return None if name in self.left_out else value

    @classmethod
    def from_listing(cls, raw: dict[str, Any]) -> StreamSummary:
        """Build from one of ListStreams' StreamSummaries: name, status, mode, ARN and creation time."""
        created: Any = raw.get("StreamCreationTimestamp")
        return cls(
            name=raw["StreamName"],
            status=raw.get("StreamStatus", "?"),
            mode=(raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED"),
            open_shard_count=None,
            retention_hours=0,
            encryption="?",
            arn=raw.get("StreamARN", ""),
            created=created.isoformat() if hasattr(created, "isoformat") else created,
        )

    def badges(self, *, compact: bool = False) -> list[str]:
        """What changes how the stream behaves, for a header: AUTO distribution, a record size other
        than 1 MiB, warm throughput on an on-demand stream. `compact` words them for a narrow header
        (80 columns), where the full words would push the later badges off the line."""
        found = []
        if self.auto_distribution:
            found.append("AUTO" if compact else "AUTO distribution")
        if self.max_record_size_kib != DEFAULT_MAX_RECORD_KIB:
            size = format_kib(self.max_record_size_kib)
            found.append(f"{size} records" if compact else f"records up to {size}")
        if self.mode == "ON_DEMAND" and self.warm_throughput_target_mibps:
            current = self.warm_throughput_current_mibps
            found.append(
                f"warm {self.warm_throughput_target_mibps} MiB/s"
                + (f" ({current} now)" if current is not None and current != self.warm_throughput_target_mibps else "")
            )
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "mode": self.mode,
            "open_shard_count": self.open_shard_count,
            "retention_hours": self.retention_hours,
            "encryption": self.encryption,
            "arn": self.arn,
            "stream_id": self.stream_id or None,
            "record_distribution": self.shown("record_distribution", self.record_distribution),
            "max_record_size_kib": self.shown("max_record_size_kib", self.max_record_size_kib),
            "warm_throughput": self.shown(
                "warm_throughput",
                {
                    "target_mibps": self.warm_throughput_target_mibps,
                    "current_mibps": self.warm_throughput_current_mibps,
                },
            ),
            "consumer_count": self.consumer_count,
            "channel_count": self.channel_count,
        }


@dataclass(frozen=True, slots=True)
class ChannelSummary:
    """One channel reading from a stream, as ListChannels names it."""

    name: str
    arn: str
    status: str

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> ChannelSummary:
        return cls(name=raw.get("ChannelName") or "?", arn=raw["ChannelARN"], status=raw.get("ChannelStatus") or "?")


@dataclass(frozen=True, slots=True)
class EfoConsumer:
    """One enhanced fan-out consumer registered on a stream, as ListStreamConsumers,
    DescribeStreamConsumer and RegisterStreamConsumer name it."""

    name: str
    arn: str
    status: str  # CREATING, ACTIVE or DELETING
    created: datetime | None = None

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> EfoConsumer:
        created = raw.get("ConsumerCreationTimestamp")
        return cls(
            name=raw.get("ConsumerName") or "",
            arn=raw.get("ConsumerARN") or "",
            status=raw.get("ConsumerStatus") or "",
            created=created if isinstance(created, datetime) else None,
        )

    @property
    def active(self) -> bool:
        return self.status == "ACTIVE"

    @property
    def deleting(self) -> bool:
        return self.status == "DELETING"

    @property
    def created_iso(self) -> str:
        """When it was registered, ISO 8601; empty when the server did not say."""
        return self.created.isoformat() if self.created else ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "arn": self.arn, "created": self.created_iso or None}


def put_records_entry(
    data: bytes, partition_key: str | None, explicit_hash_key: int | str | None = None
) -> dict[str, object]:
    """One entry of PutRecords' `Records` as AWS takes it: the explicit hash key in decimal, and
    only when there is one (it overrides the partition key's MD5); no partition key only for an AUTO
    stream, which ignores keys."""
    entry: dict[str, object] = {"Data": data}
    if partition_key is not None:
        entry["PartitionKey"] = partition_key
    if explicit_hash_key is not None:
        entry["ExplicitHashKey"] = str(explicit_hash_key)
    return entry


def format_kib(kib: int) -> str:
    """1024 -> '1 MiB', 10240 -> '10 MiB', 1536 -> '1.5 MiB'."""
    return f"{kib / 1024:g} MiB"


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def auto_notice(stream: str, since: str | None = None) -> str:
    """The one line every key-space view of an AUTO stream starts with."""
    when = f" since {since}" if since else ""
    return (
        f"{stream} uses AUTO record distribution{when}: Kinesis ignores partition and explicit hash keys "
        "and spreads records itself, so no placement by key is shown (records already in the stream "
        "keep their shards)"
    )
