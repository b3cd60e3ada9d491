"""Fixes for moto 5.2.5's Kinesis defects, applied inside the embedded server process (listed in
moto_compat).

Each fix has a test in tests/backend/test_moto_compat.py that runs against a patched and an unpatched
server, asserting the defect is present only in the unpatched one. Measured defects:

  routing      puts after a split go to the closed parent (moto searches every shard, closed ones first)
  end key      an ExplicitHashKey equal to a shard's EndingHashKey fails (moto treats the end as exclusive)
  concurrency  concurrent PutRecords to one shard lose records (read-max-then-insert without a lock)
  closed end   a closed shard's iterator never ends (GetRecords always returns a NextShardIterator)
  list token   ListShards with only NextToken fails (the token does not carry the stream)
  filter       ListShards ignores ShardFilter
  sequences    every shard numbers its records 1, 2, 3... so sequence numbers repeat across shards
  split/merge  a split moves the parent's records into the children and a merge copies them into the
               child (AWS leaves them in the closed parents); a merge given the upper shard first is
               refused, and the merged range is wrong; OpenShardCount ignores splits and merges
  rescale      UpdateShardCount doubles then merges pairs, leaving uneven ranges; AWS's UNIFORM_SCALING
               ends with the even split of the key space
  iterator     GetRecords with a malformed ShardIterator fails with a 500 (AWS: InvalidArgumentException)
  deregister   DeregisterStreamConsumer by StreamARN and ConsumerName keeps the named consumer and
               deletes every other one
  iterator ARN GetShardIterator by StreamARN alone hands out an iterator GetRecords cannot resolve
  memory       every record ever put stays in memory, a deleted stream's too (moto tracks every model
               instance it makes), and each full garbage collection walks them all
  whole batch  a PutRecords request with an invalid ExplicitHashKey stores the records before it, then
               fails (AWS checks the whole request first and stores nothing)
  reads        GetRecords scans the shard from its first record on every call (and AT_TIMESTAMP from its
               last), so every reader slows down as the shard fills: here both bisect an index kept
               as records are appended; an answer holds at most 10,000 records or 10 MiB, as on AWS
  list streams ListStreams pages 10 at a time with no NextToken and puts every stream's summary on
               every page
  delete       DeleteStream deletes a stream with registered consumers without EnforceConsumerDeletion

The last three are fixed beside the requests they belong to: the whole-batch check in records,
ListStreams and DeleteStream in today.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import time
from datetime import datetime
from typing import Any

from console.keyspace.hashkeys import even_split
from console.localserver.records import (
    GET_RECORDS_BYTES_MAX,
    GET_RECORDS_LIMIT_DEFAULT,
    append_record,
    arrival,
    close_shard,
    hash_key_of,
    heap_stored,
    lock,
    next_sequence_number,
    ordered_sequence_numbers,
    record_size,
)

# ---- enhanced fan-out consumers ----------------------------------------------------------------


def patch_backend(KinesisBackend: Any) -> None:
    original = KinesisBackend.deregister_stream_consumer

    def deregister_stream_consumer(self, stream_arn: str, consumer_name: str, consumer_arn: str) -> None:
        before = {c.consumer_arn for stream in self.streams.values() for c in stream.consumers}
        if stream_arn and consumer_name and not consumer_arn:
            stream = self._find_stream_by_arn(stream_arn)
            stream.consumers = [c for c in stream.consumers if c.consumer_name != consumer_name]
        else:
            original(self, stream_arn, consumer_name, consumer_arn)
        # A consumer's resource policy goes with it (its tags live on the consumer object).
        for gone in before - {c.consumer_arn for stream in self.streams.values() for c in stream.consumers}:
            self.resource_policies.pop(gone, None)

    KinesisBackend.deregister_stream_consumer = deregister_stream_consumer

    original_iterator = KinesisBackend.get_shard_iterator

    def get_shard_iterator(self, stream_arn: str | None, stream_name: str | None, *args: Any) -> str:
        # moto writes the stream's name into the iterator as given: asked by StreamARN alone, the
        # iterator names stream "None" and GetRecords cannot find it.
        stream = self.describe_stream(stream_arn=stream_arn, stream_name=stream_name)
        return original_iterator(self, stream_arn, stream.stream_name, *args)

    KinesisBackend.get_shard_iterator = get_shard_iterator


# ---- shards: sequence numbers, creation/close times --------------------------------------------


def patch_shard(Shard: Any) -> None:
    original_init = Shard.__init__
    original_to_json = Shard.to_json

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.starting_sequence = next_sequence_number()
        self.ending_sequence = None
        self.created_at = time.time()
        self.closed_at = None
        self.sequence_index = []  # the keys of self.records, in order
        self.arrival_index = []  # their records' arrival times, in the same order

    def put_record(self, partition_key: str, data: str, explicit_hash_key: str) -> str:
        with lock():
            sequence_number = append_record(self, partition_key, data, explicit_hash_key, arrival())
        heap_stored(1)
        return str(sequence_number)

    def get_max_sequence_number(self) -> int:
        # LATEST on an empty shard must not hand out an iterator that re-reads later records' gaps.
        return next(reversed(self.records)) if self.records else self.starting_sequence

    def get_records(self, last_sequence_id: str, limit: int | None) -> tuple[list, int, int]:
        """The records after `last_sequence_id`, found by bisection: moto scans the shard from its first
        record on every call, so a reader slowed down as the shard filled."""
        after = int(last_sequence_id)
        index = ordered_sequence_numbers(self)
        start = bisect.bisect_right(index, after)
        stop = min(len(index), start + (limit or GET_RECORDS_LIMIT_DEFAULT))
        records: list[Any] = []  # moto Record objects
        size = 0
        for sequence_number in index[start:stop]:  # a slice, not islice: islice walks from the start
            record = self.records[sequence_number]
            size += record_size(record.data, None)
            if records and size > GET_RECORDS_BYTES_MAX:
                break
            records.append(record)
        if not records:
            return [], after, 0
        newest = self.records[index[-1]]
        return records, records[-1].sequence_number, int((newest.created_at - records[-1].created_at) * 1000)

    def get_sequence_number_at(self, at_timestamp: Any) -> int:
        """AT_TIMESTAMP: the last record that arrived before the moment (0 if none), by bisection."""
        moment = at_timestamp.timestamp() if isinstance(at_timestamp, datetime) else float(at_timestamp)
        ordered_sequence_numbers(self)
        position = bisect.bisect_left(self.arrival_index, moment)
        return self.sequence_index[position - 1] if position else 0

    def to_json(self) -> dict[str, Any]:
        response = original_to_json(self)
        response["SequenceNumberRange"] = {"StartingSequenceNumber": str(self.starting_sequence)}
        if not self.is_open:
            response["SequenceNumberRange"]["EndingSequenceNumber"] = str(self.ending_sequence)
        return response

    Shard.__init__ = __init__
    Shard.put_record = put_record
    Shard.get_max_sequence_number = get_max_sequence_number
    Shard.get_records = get_records
    Shard.get_sequence_number_at = get_sequence_number_at
    Shard.to_json = to_json


def untrack(*classes: Any) -> None:
    """moto keeps every model instance it ever made in a class-level list (for its /moto-api/ dump and
    reset), so every record ever put stayed in memory after its stream was deleted, and every full
    garbage collection walked them all: a server that had taken a million records spent over half a
    second a collection. A record lives as long as its shard, a shard as long as its stream."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: ARG001 - the model's own arguments
        return object.__new__(cls)

    for model in classes:
        model.__new__ = __new__
        model.instances_tracked = []


# ---- streams: routing, split, merge, rescale -----------------------------------------------------


def patch_stream(Stream: Any, models: Any) -> None:
    InvalidArgumentError = models.InvalidArgumentError
    Shard = models.Shard

    def get_shard_for_key(self, partition_key: str, explicit_hash_key: str) -> Any:
        if not isinstance(partition_key, str) or not 1 <= len(partition_key) <= 256:
            raise InvalidArgumentError("PartitionKey must be 1 to 256 characters")
        hash_key = hash_key_of(partition_key, explicit_hash_key)
        # Only open shards take writes, and both ends of a range are inclusive.
        for shard in self.shards.values():
            if shard.is_open and shard.starting_hash <= hash_key <= shard.ending_hash:
                return shard
        raise InvalidArgumentError(f"no open shard owns hash key {hash_key}")

    def new_shard(self, start: int, end: int, parent: str | None, adjacent_parent: str | None = None) -> Any:
        next_id = max(shard._shard_id for shard in self.shards.values()) + 1
        shard = Shard(next_id, start, end, parent=parent, adjacent_parent=adjacent_parent)
        self.shards[shard.shard_id] = shard
        return shard

    def split(self, shard: Any, new_start: int) -> tuple[Any, Any]:
        low = new_shard(self, shard.starting_hash, new_start - 1, shard.shard_id)
        high = new_shard(self, new_start, shard.ending_hash, shard.shard_id)
        close_shard(shard)  # its records stay readable in the parent, as on AWS
        return low, high

    def merge(self, lower: Any, upper: Any, parent: Any, adjacent: Any) -> Any:
        child = new_shard(self, lower.starting_hash, upper.ending_hash, parent.shard_id, adjacent.shard_id)
        close_shard(lower)
        close_shard(upper)
        return child

    def split_shard(self, shard_to_split: str, new_starting_hash_key: str) -> None:
        shard = self.shards[shard_to_split]
        new_start = int(new_starting_hash_key)
        if not shard.is_open:
            raise InvalidArgumentError(
                f"Shard {shard.shard_id} in stream {self.stream_name} under account {self.account_id} has already "
                "been merged or split, and thus is not eligible for merging or splitting."
            )
        if not shard.starting_hash < new_start <= shard.ending_hash:
            raise InvalidArgumentError(
                f"NewStartingHashKey {new_start} used in SplitShard() on shard {shard.shard_id} in stream "
                f"{self.stream_name} under account {self.account_id} is not both greater than the shard's "
                f"StartingHashKey {shard.starting_hash} and at most its EndingHashKey {shard.ending_hash}."
            )
        split(self, shard, new_start)

    def merge_shards(self, shard_to_merge: str, adjacent_shard_to_merge: str) -> None:
        first, second = self.shards[shard_to_merge], self.shards[adjacent_shard_to_merge]
        for shard in (first, second):
            if not shard.is_open:
                raise InvalidArgumentError(
                    f"Shard {shard.shard_id} in stream {self.stream_name} under account {self.account_id} has "
                    "already been merged or split, and thus is not eligible for merging or splitting."
                )
        lower, upper = sorted((first, second), key=lambda shard: shard.starting_hash)
        if lower.ending_hash + 1 != upper.starting_hash:
            raise InvalidArgumentError(
                f"Shards {first.shard_id} and {second.shard_id} in stream {self.stream_name} under account "
                f"{self.account_id} are not an adjacent pair of shards eligible for merging"
            )
        merge(self, lower, upper, first, second)

    def update_shard_count(self, target_shard_count: int) -> None:
        """UNIFORM_SCALING: end with the even split of the key space, through splits then merges, so
        every new shard has at most two parents as on AWS."""
        if self.stream_mode.get("StreamMode", "") == "ON_DEMAND":
            raise models.StreamCannotBeUpdatedError(stream_name=self.stream_name, account_id=self.account_id)
        target = even_split(int(target_shard_count))
        if sorted((s.starting_hash, s.ending_hash) for s in self.shards.values() if s.is_open) == target:
            return
        for boundary, _ in target[1:]:
            owner = next(s for s in self.shards.values() if s.is_open and s.starting_hash <= boundary <= s.ending_hash)
            if owner.starting_hash != boundary:
                split(self, owner, boundary)
        for low, high in target:
            pieces = sorted(
                (s for s in self.shards.values() if s.is_open and low <= s.starting_hash <= high),
                key=lambda shard: shard.starting_hash,
            )
            while len(pieces) > 1:
                pieces[:2] = [merge(self, pieces[0], pieces[1], pieces[0], pieces[1])]
        self.shard_count = len(target)

    original_summary = Stream.to_json_summary

    def to_json_summary(self) -> dict[str, Any]:
        summary = original_summary(self)
        summary["StreamDescriptionSummary"]["OpenShardCount"] = sum(1 for s in self.shards.values() if s.is_open)
        summary["StreamDescriptionSummary"]["ConsumerCount"] = len(self.consumers)
        return summary

    Stream.get_shard_for_key = get_shard_for_key
    Stream.split_shard = split_shard
    Stream.merge_shards = merge_shards
    Stream.update_shard_count = update_shard_count
    Stream.to_json_summary = to_json_summary


# ---- responses: one request at a time, GetRecords at a closed end, ListShards ------------------


def patch_responses(KinesisResponse: Any, models: Any) -> None:
    from moto.core.responses import ActionResult, BaseResponse

    InvalidArgumentError = models.InvalidArgumentError

    def call_action(self) -> Any:
        with lock():  # moto's Kinesis models assume one caller at a time
            return BaseResponse.call_action(self)

    def get_records(self) -> Any:
        from moto.kinesis.utils import compose_shard_iterator, decompose_shard_iterator

        iterator = self._get_param("ShardIterator")
        limit = self._get_param("Limit")
        try:
            stream_name, shard_id, last_sequence = decompose_shard_iterator(iterator)
        except (ValueError, TypeError, AttributeError, binascii.Error):
            # moto fails with a 500 (and botocore retries it); AWS answers InvalidArgumentException.
            raise InvalidArgumentError(f"Invalid ShardIterator: {str(iterator)[:40]}") from None
        stream = self.kinesis_backend.describe_stream(stream_arn=self._get_param("StreamARN"), stream_name=stream_name)
        shard = stream.get_shard(shard_id)
        records, last_sequence, millis_behind = shard.get_records(last_sequence, limit)
        result: dict[str, Any] = {
            "Records": [record.to_json() for record in records],
            "MillisBehindLatest": millis_behind,
        }
        at_closed_end = not shard.is_open and (not shard.records or last_sequence >= next(reversed(shard.records)))
        if at_closed_end:
            # AWS: no NextShardIterator once a closed shard is read to its end, and the children to go on with.
            result["ChildShards"] = child_shards(stream, shard)
        else:
            result["NextShardIterator"] = compose_shard_iterator(stream_name, shard, last_sequence)
        return ActionResult(result)

    def list_shards(self) -> Any:
        token = self._get_param("NextToken")
        max_results = self._get_param("MaxResults", 10000)
        if not isinstance(max_results, int) or not 1 <= max_results <= 10000:
            raise InvalidArgumentError(f"MaxResults must be from 1 to 10000; got {max_results}")
        if token:
            if self._get_param("StreamName") or self._get_param("StreamARN"):
                raise InvalidArgumentError("NextToken and StreamName cannot be provided together.")
            state = _decode_token(token, InvalidArgumentError)
        else:
            state = {
                "name": self._get_param("StreamName"),
                "arn": self._get_param("StreamARN"),
                "after": self._get_param("ExclusiveStartShardId"),
                "filter": self._get_param("ShardFilter"),
            }
        stream = self.kinesis_backend.describe_stream(stream_arn=state["arn"], stream_name=state["name"])
        shards = sorted(stream.shards.values(), key=lambda shard: shard._shard_id)
        shards = _filtered(shards, stream, state["filter"], InvalidArgumentError)
        if state["after"]:
            shards = [shard for shard in shards if shard.shard_id > state["after"]]
        page, more = shards[:max_results], len(shards) > max_results
        result: dict[str, Any] = {"Shards": [shard.to_json() for shard in page]}
        if more:
            result["NextToken"] = _encode_token({**state, "after": page[-1].shard_id})
        return ActionResult(result)

    KinesisResponse.call_action = call_action
    KinesisResponse.get_records = get_records
    KinesisResponse.list_shards = list_shards


def child_shards(stream: Any, shard: Any) -> list[dict[str, Any]]:
    """A closed shard's children as GetRecords and SubscribeToShard name them at the shard's end."""
    return [
        {
            "ShardId": child.shard_id,
            "ParentShards": [p for p in (child.parent, child.adjacent_parent) if p],
            "HashKeyRange": {"StartingHashKey": str(child.starting_hash), "EndingHashKey": str(child.ending_hash)},
        }
        for child in stream.shards.values()
        if shard.shard_id in (child.parent, child.adjacent_parent)
    ]


def _encode_token(state: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, default=str).encode()).decode()


def _decode_token(token: str, InvalidArgumentError: type) -> dict:
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode()))
        if not isinstance(state, dict) or not {"name", "arn", "after", "filter"} <= set(state):
            raise ValueError
        return state
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgumentError(f"Invalid NextToken: {token[:40]}") from None


def _timestamp(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    raise ValueError(value)


def _open_at(shard: Any, moment: float) -> bool:
    return shard.created_at <= moment and (shard.is_open or shard.closed_at >= moment)


def _filtered(shards: list, stream: Any, shard_filter: dict | None, InvalidArgumentError: type) -> list:
    """ListShards' ShardFilter, as AWS documents each type. Nothing is ever trimmed here, so the trim
    horizon is the stream's first moment (or `now - retention`, whichever is later)."""
    if not shard_filter:
        return shards
    kind = shard_filter.get("Type")
    # The stream's first shards have no parents and were all made at its creation.
    earliest = max((shard.created_at for shard in shards if not shard.parent), default=time.time())
    if kind == "AT_LATEST":
        return [shard for shard in shards if shard.is_open]
    if kind == "AFTER_SHARD_ID":
        if not shard_filter.get("ShardId"):
            raise InvalidArgumentError("ShardFilter AFTER_SHARD_ID needs a ShardId")
        return [shard for shard in shards if shard.shard_id > shard_filter["ShardId"]]
    if kind in ("AT_TRIM_HORIZON", "FROM_TRIM_HORIZON"):
        horizon = max(earliest, time.time() - stream.retention_period_hours * 3600)
        if kind == "FROM_TRIM_HORIZON":
            return [shard for shard in shards if shard.is_open or shard.closed_at >= horizon]
        return [shard for shard in shards if _open_at(shard, horizon)]
    if kind in ("AT_TIMESTAMP", "FROM_TIMESTAMP"):
        try:
            moment = max(earliest, _timestamp(shard_filter.get("Timestamp")))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"ShardFilter {kind} needs a Timestamp") from None
        if kind == "FROM_TIMESTAMP":
            return [shard for shard in shards if shard.is_open or shard.closed_at >= moment]
        return [shard for shard in shards if _open_at(shard, moment)]
    raise InvalidArgumentError(f"unknown ShardFilter Type {kind!r}")
