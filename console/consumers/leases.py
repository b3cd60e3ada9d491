"""KCL lease items, read exactly as the Kinesis Client Library writes them to its DynamoDB table.

Attribute names are the KCL's own constants (amazon-kinesis-client on GitHub):

- KCL 1.x `com.amazonaws.services.kinesis.leases.impl.LeaseSerializer`: LEASE_KEY_KEY "leaseKey",
  LEASE_OWNER_KEY "leaseOwner", LEASE_COUNTER_KEY "leaseCounter"; and `KinesisClientLeaseSerializer`:
  OWNER_SWITCHES_KEY "ownerSwitchesSinceCheckpoint", CHECKPOINT_SEQUENCE_NUMBER_KEY "checkpoint",
  CHECKPOINT_SUBSEQUENCE_NUMBER_KEY "checkpointSubSequenceNumber", PENDING_CHECKPOINT_SEQUENCE_KEY
  "pendingCheckpoint", PENDING_CHECKPOINT_SUBSEQUENCE_KEY "pendingCheckpointSubSequenceNumber",
  PARENT_SHARD_ID_KEY "parentShardId" (a string set), CHILD_SHARD_IDS_KEY "childShardIds".
- KCL 2.x/3.x `software.amazon.kinesis.leases.dynamodb.DynamoDBLeaseSerializer`: the same names plus
  "pendingCheckpointState", "startingHashKey"/"endingHashKey", and in 3.x "throughputKBps",
  "checkpointOwner" (a graceful lease hand-off in progress) and ENTITY_TYPE_ATTRIBUTE_NAME
  "entityType" (3.x keeps coordinator and worker-metric items in the lease table too; only "LEASE"
  items, or items without the attribute, are leases). Releases before 2.13 wrote the children as
  "childShardId"; both are read.
- Multi-stream applications (KCL 2.3+ `DynamoDBMultiStreamLeaseSerializer`): STREAM_ID_KEY
  "streamName" holds the serialized stream identifier "account:stream:creationEpoch", SHARD_ID_KEY
  "shardId" the shard, and `MultiStreamLease.getLeaseKey` makes the leaseKey "<identifier>:<shardId>".
- Checkpoint sentinels: `SentinelCheckpoint` TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP; anything
  else must be a sequence number (a string of digits, as `ExtendedSequenceNumber` demands).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from console.topology.model import Shard

LEASE_KEY = "leaseKey"
LEASE_OWNER = "leaseOwner"
LEASE_COUNTER = "leaseCounter"
OWNER_SWITCHES = "ownerSwitchesSinceCheckpoint"
CHECKPOINT = "checkpoint"
CHECKPOINT_SUBSEQUENCE = "checkpointSubSequenceNumber"
PENDING_CHECKPOINT = "pendingCheckpoint"
PARENT_SHARD_IDS = "parentShardId"
CHILD_SHARD_IDS = ("childShardIds", "childShardId")
CHECKPOINT_OWNER = "checkpointOwner"
THROUGHPUT_KBPS = "throughputKBps"
ENTITY_TYPE = "entityType"
LEASE_ENTITY = "LEASE"
MULTI_STREAM_NAME = "streamName"
MULTI_STREAM_SHARD = "shardId"

TRIM_HORIZON = "TRIM_HORIZON"
LATEST = "LATEST"
SHARD_END = "SHARD_END"
AT_TIMESTAMP = "AT_TIMESTAMP"
SENTINELS = frozenset({TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP})

# "123456789012:orders:1700000000" (StreamIdentifier's serialized multi-stream form).
_STREAM_IDENTIFIER = re.compile(r"^(?P<account>[0-9]+):(?P<stream>[^:]+):(?P<epoch>[0-9]+)$")
_SEQUENCE_NUMBER = re.compile(r"^[0-9]{1,128}$")


def attribute(value: Mapping[str, Any] | None) -> Any:
    """One DynamoDB attribute value ({"S": "x"}, {"N": "5"}, {"SS": [...]}) as a plain value."""
    if not value:
        return None
    kind, raw = next(iter(value.items()))
    if kind == "N":
        try:
            return int(raw)
        except ValueError:
            return float(raw)
    if kind in ("SS", "NS", "BS"):
        return list(raw)
    if kind == "NULL":
        return None
    if kind == "L":
        return [attribute(v) for v in raw]
    if kind == "M":
        return {k: attribute(v) for k, v in raw.items()}
    return raw  # S, B, BOOL


@dataclass(frozen=True, slots=True)
class Lease:
    lease_key: str
    shard_id: str
    stream_name: str | None  # multi-stream tables only
    owner: str | None
    counter: int | None
    checkpoint: str | None
    checkpoint_subsequence: int
    pending_checkpoint: str | None
    owner_switches: int
    parent_shard_ids: tuple[str, ...]
    child_shard_ids: tuple[str, ...]
    checkpoint_owner: str | None
    problem: str | None = None  # why the checkpoint cannot be used (the row is marked, not dropped)
    throughput_kbps: float | None = None  # KCL 3.x's measure of the shard's throughput (None: not a number)

    @property
    def finished(self) -> bool:
        return self.checkpoint == SHARD_END


def is_lease_item(item: Mapping[str, Any]) -> bool:
    """A KCL lease (not a 3.x coordinator or worker-metrics item sharing the table)."""
    entity = attribute(item.get(ENTITY_TYPE))
    return LEASE_KEY in item and (entity is None or entity == LEASE_ENTITY)


def looks_like_lease_item(item: Mapping[str, Any]) -> bool:
    """Enough of KCL's own attributes to tell a lease table from any table keyed on "leaseKey"."""
    return is_lease_item(item) and LEASE_COUNTER in item and CHECKPOINT in item


def is_lease_key_schema(table: Mapping[str, Any]) -> bool:
    """KCL creates its table with one HASH key, "leaseKey" (type S), and no sort key."""
    schema = table.get("KeySchema") or []
    return len(schema) == 1 and schema[0].get("AttributeName") == LEASE_KEY and schema[0].get("KeyType") == "HASH"


def split_lease_key(lease_key: str) -> tuple[str | None, str]:
    """(stream name or None, shard id) from a leaseKey: a bare shard id, a multi-stream
    "account:stream:epoch:shardId", or a looser "stream:shardId"."""
    head, sep, shard_id = lease_key.rpartition(":")
    if not sep:
        return None, lease_key
    match = _STREAM_IDENTIFIER.match(head)
    return (match.group("stream") if match else head), shard_id


def parse_lease(item: Mapping[str, Any]) -> Lease:
    """One lease item. A checkpoint that is neither a sentinel nor a sequence number, or a counter
    that is not a number, gives a Lease with `problem` set, so the row can be shown and marked."""
    lease_key = str(attribute(item.get(LEASE_KEY)))
    stream_name, shard_id = split_lease_key(lease_key)
    identifier = attribute(item.get(MULTI_STREAM_NAME))
    if isinstance(identifier, str) and attribute(item.get(MULTI_STREAM_SHARD)):
        match = _STREAM_IDENTIFIER.match(identifier)
        stream_name = match.group("stream") if match else identifier
        shard_id = str(attribute(item.get(MULTI_STREAM_SHARD)))
    checkpoint = attribute(item.get(CHECKPOINT))
    problems = []
    if checkpoint is None:
        problems.append("no checkpoint attribute")
    elif not isinstance(checkpoint, str) or not (checkpoint in SENTINELS or _SEQUENCE_NUMBER.match(checkpoint)):
        problems.append(f"unreadable checkpoint {str(checkpoint)[:60]!r}")
        checkpoint = str(checkpoint)
    counter = attribute(item.get(LEASE_COUNTER))
    if counter is not None and not isinstance(counter, int):
        problems.append(f"leaseCounter is not a whole number: {counter!r}")
        counter = None
    children: list[str] = []
    for name in CHILD_SHARD_IDS:
        children.extend(attribute(item.get(name)) or [])
    owner = attribute(item.get(LEASE_OWNER))
    return Lease(
        lease_key=lease_key,
        shard_id=shard_id,
        stream_name=stream_name,
        owner=str(owner) if owner not in (None, "") else None,
        counter=counter,
        checkpoint=checkpoint,
        checkpoint_subsequence=_whole(attribute(item.get(CHECKPOINT_SUBSEQUENCE))),
        pending_checkpoint=attribute(item.get(PENDING_CHECKPOINT)),
        owner_switches=_whole(attribute(item.get(OWNER_SWITCHES))),
        parent_shard_ids=tuple(sorted(attribute(item.get(PARENT_SHARD_IDS)) or ())),
        child_shard_ids=tuple(sorted(set(children))),
        checkpoint_owner=attribute(item.get(CHECKPOINT_OWNER)),
        problem="; ".join(problems) or None,
        throughput_kbps=_number(attribute(item.get(THROUGHPUT_KBPS))),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _whole(value: Any) -> int:
    return value if isinstance(value, int) else 0


def leases_for_stream(items: Iterable[Mapping[str, Any]], stream: str) -> list[Lease]:
    """The stream's leases from a lease table's items: single-stream leases (a bare shard id) and
    multi-stream leases naming `stream`; other entities and other streams' leases are left out."""
    leases = (parse_lease(item) for item in items if is_lease_item(item))
    return sorted((lease for lease in leases if lease.stream_name in (None, stream)), key=lambda lease: lease.shard_id)


STARTING_HASH_KEY = "startingHashKey"
ENDING_HASH_KEY = "endingHashKey"


def table_matches_stream(
    items: Iterable[Mapping[str, Any]], stream: str, shards: Iterable[Shard], *, whole_table: bool = False
) -> bool:
    """A sample of a table's items holds KCL leases of this stream (used to find lease tables).

    A multi-stream lease names its stream. A single-stream lease names only a shard id, and shard ids
    repeat across streams (every stream has shardId-000000000000), so a table of single-stream leases
    is this stream's only when every one of its leases agrees with this stream's shards: its shard is
    one of this stream's (a finished lease may outlive its shard, trimmed past retention), and its
    parents, its hash key range (KCL 2.x+) and a checkpoint that is a sequence number (sequence
    numbers are the stream's own) all fit that shard. When `items` is the whole table, it must also
    cover the stream: the KCL holds a lease on every open shard or on one of its ancestors. Two
    streams with the same shards and no checkpointed sequence number yet still cannot be told apart."""
    known = {shard.shard_id: shard for shard in shards}
    mine = False
    leased: set[str] = set()
    for item in items:
        if not looks_like_lease_item(item):
            continue
        lease = parse_lease(item)
        if lease.stream_name is not None:
            mine = mine or lease.stream_name == stream
            continue
        shard = known.get(lease.shard_id)
        if shard is None:
            if lease.finished:
                continue
            return False
        if not _lease_agrees_with(lease, item, shard):
            return False
        leased.add(lease.shard_id)
    if mine or not leased:
        return mine
    return not whole_table or all(_leased_line(shard, known, leased) for shard in known.values() if shard.is_open)


def _leased_line(shard: Shard, known: Mapping[str, Shard], leased: set[str]) -> bool:
    """The shard or one of its ancestors holds a lease."""
    todo, seen = [shard.shard_id], set()
    while todo:
        shard_id = todo.pop()
        if shard_id in leased:
            return True
        if shard_id in seen or shard_id not in known:
            continue
        seen.add(shard_id)
        todo.extend(known[shard_id].parents)
    return False


def _lease_agrees_with(lease: Lease, item: Mapping[str, Any], shard: Shard) -> bool:
    if lease.parent_shard_ids and set(lease.parent_shard_ids) != set(shard.parents):
        return False
    starting, ending = attribute(item.get(STARTING_HASH_KEY)), attribute(item.get(ENDING_HASH_KEY))
    if starting is not None and ending is not None:
        try:
            if (int(starting), int(ending)) != (shard.starting_hash_key, shard.ending_hash_key):
                return False
        except (TypeError, ValueError):
            return False
    checkpoint = lease.checkpoint
    if checkpoint is not None and _SEQUENCE_NUMBER.match(checkpoint):
        if shard.starting_sequence_number is not None and int(checkpoint) < int(shard.starting_sequence_number):
            return False
        if shard.ending_sequence_number is not None and int(checkpoint) > int(shard.ending_sequence_number):
            return False
    return True
