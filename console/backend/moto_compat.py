"""Fixes for moto 5.2.5's Kinesis, applied inside the embedded server process (see server_main).

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

and moto's CloudWatch (tests in tests/backend/test_moto_compat_cloudwatch.py, the same two ways):

  metric data  GetMetricData compares every query's every period with every stored point (1,000
               streams x 5 metrics over 30 minutes: seconds a call), and a query with dimensions
               matches points of any namespace: here the points are indexed by namespace, metric name
               and the exact dimension set (as CloudWatch identifies a metric), each series kept in
               time order and its periods found by bisection

moto also predates today's API (botocore's model is the reference; tests in
tests/backend/test_moto_compat_today.py, run the same two ways). Added here, with AWS's validation
(every new request is checked against the model's input shape first, as AWS's front door does):

  AUTO record distribution (UpdateStreamRecordDistributionStrategy, on-demand streams only): keys and
  ExplicitHashKey ignored, records go round the open shards, PartitionKey optional; per-stream
  MaxRecordSizeInKiB (UpdateMaxRecordSize) enforced on PutRecord(s) with the 10 MiB / 500 record request
  limits; warm throughput (UpdateStreamWarmThroughput, on-demand streams in accounts with the minimum
  throughput billing commitment) and the commitment itself (Describe/UpdateAccountSettings); tags on
  streams, consumers and channels (TagResource, UntagResource, ListTagsForResource); resource policies
  on consumers too; channels (Create/Describe/List/Update/DeleteChannel; a stream with channels cannot
  be deleted); StreamId, ChannelCount, MaxRecordSizeInKiB, RecordDistributionStrategy and
  WarmThroughput in DescribeStreamSummary (the short path answers with the same method).

Everything here runs under one lock per process: moto's models are not thread-safe and the server is threaded.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
import random
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from console.backend import moto_readers
from console.keyspace.hashkeys import HASH_SPACE, even_split, md5_hash_key, owners_among

_applied = False
_lock = threading.RLock()
_store_heap: Any = None  # the embedded server's StoreHeap (keep_heap_as_a_store); None in other processes

# AWS sequence numbers are 56-digit decimal strings that grow within a shard and never repeat in a
# stream; one process-wide counter from an AWS-sized base gives both properties.
SEQUENCE_BASE = 49_600_000_000_000_000_000_000_000_000_000_000_000_000_000_000_000_000
_sequence = itertools.count(SEQUENCE_BASE + 1)

# Today's limits, as the API reference states them.
RECORD_SIZE_DEFAULT_KIB = 1024
RECORD_SIZE_MAX_KIB = 10240  # the top of the model's MaxRecordSizeInKiB range (1024..10240)
REQUEST_BYTES_MAX = 10 * 1024 * 1024  # PutRecords: the whole request, partition keys included
REQUEST_RECORDS_MAX = 500
GET_RECORDS_BYTES_MAX = 10 * 1024 * 1024  # one GetRecords answer (always at least one record)
GET_RECORDS_LIMIT_DEFAULT = 10_000  # GetRecords' Limit when none is given (also its maximum)
WARM_THROUGHPUT_MAX_MIBPS = 10 * 1024  # AWS's default limit: 10 GiB/s per on-demand stream
COMMITMENT_MINIMUM_SECONDS = 24 * 3600  # On-demand Advantage: a commitment runs at least a day
TAGS_PER_RESOURCE_MAX = 50
CHANNEL_SETTLE_SECONDS = 0.5  # CREATING/UPDATING for this long, then ACTIVE
CHANNELS_PAGE_MAX = 100
STREAMS_PAGE_MAX = 100
AUTO, USER_PARTITION_KEY = "AUTO", "USER_PARTITION_KEY"
TAG_TEXT = re.compile(r"[\w\s.:/=+\-@]*")


def lock() -> threading.RLock:
    """The one lock every request to moto's Kinesis models holds (the server's short path too)."""
    return _lock


def keep_heap_as_a_store() -> None:
    """The embedded server's process: its heap kept as a store's (console.backend.heap.StoreHeap)."""
    global _store_heap
    from console.backend.heap import StoreHeap

    _store_heap = StoreHeap()


def next_sequence_number() -> int:
    with _lock:
        return next(_sequence)


def apply() -> None:
    """Patch moto's Kinesis models and responses in this process; idempotent."""
    global _applied
    with _lock:
        if _applied:
            return
        from moto.kinesis import models, responses

        _patch_shard(models.Shard)
        _untrack(models.Record, models.Shard, models.Stream)
        _patch_stream(models.Stream, models)
        _patch_responses(responses.KinesisResponse, models)
        _patch_backend(models.KinesisBackend)
        _patch_today(models, responses)
        from moto.cloudwatch import models as cloudwatch_models

        _patch_cloudwatch(cloudwatch_models)
        moto_readers.apply(_lock)
        _applied = True


# ---- enhanced fan-out consumers ----------------------------------------------------------------


def _patch_backend(KinesisBackend: Any) -> None:
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


def _patch_shard(Shard: Any) -> None:
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
        with _lock:
            sequence_number = _append_record(self, partition_key, data, explicit_hash_key, arrival())
        if _store_heap is not None:
            _store_heap.stored(1)
        return str(sequence_number)

    def get_max_sequence_number(self) -> int:
        # LATEST on an empty shard must not hand out an iterator that re-reads later records' gaps.
        return next(reversed(self.records)) if self.records else self.starting_sequence

    def get_records(self, last_sequence_id: str, limit: int | None) -> tuple[list, int, int]:
        """The records after `last_sequence_id`, found by bisection: moto scans the shard from its first
        record on every call, so a reader slowed down as the shard filled."""
        after = int(last_sequence_id)
        index = _sequence_index(self)
        start = bisect.bisect_right(index, after)
        stop = min(len(index), start + (limit or GET_RECORDS_LIMIT_DEFAULT))
        records: list[Any] = []  # moto Record objects
        size = 0
        for sequence_number in index[start:stop]:  # a slice, not islice: islice walks from the start
            record = self.records[sequence_number]
            size += _record_size(record.data, None)
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
        _sequence_index(self)
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


def _untrack(*classes: Any) -> None:
    """moto keeps every model instance it ever made in a class-level list (for its /moto-api/ dump and
    reset), so every record ever put stayed in memory after its stream was deleted, and every full
    garbage collection walked them all: a server that had taken a million records spent over half a
    second a collection. A record lives as long as its shard, a shard as long as its stream."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: ARG001 - the model's own arguments
        return object.__new__(cls)

    for model in classes:
        model.__new__ = __new__
        model.instances_tracked = []


def new_record(
    partition_key: str, data: str, sequence_number: int, explicit_hash_key: str | None, arrived: Any = None
) -> Any:
    """moto's Record with the members its __init__ sets, arriving now (or at `arrived`, an `arrival()`
    shared by a request's records): its __init__ reads the clock as a datetime and converts it back with
    two imports and an epoch built per record, 2 us of a server's ~12 us a record."""
    from moto.kinesis.models import Record

    now, now_datetime = arrived or arrival()
    record: Any = Record.__new__(Record)
    record.partition_key = partition_key
    record.data = data
    record.sequence_number = sequence_number
    record.explicit_hash_key = explicit_hash_key
    record.created_at_datetime = now_datetime
    record.created_at = now
    return record


def arrival() -> tuple[float, datetime]:
    """Now, as a record's arrival time in both forms moto keeps (epoch seconds, naive UTC datetime)."""
    now = time.time()
    return now, datetime.fromtimestamp(now, UTC).replace(tzinfo=None)


def _append_record(
    shard: Any, partition_key: str, data: str, explicit_hash_key: str | None, arrived: tuple[float, datetime]
) -> int:
    """Store a record at the end of the shard under the next sequence number. Called under the lock:
    one counter under one lock, so each shard's numbers (and arrival times) grow, and both of its
    indexes stay sorted."""
    sequence_number = next(_sequence)
    shard.records[sequence_number] = new_record(partition_key, data, sequence_number, explicit_hash_key, arrived)
    shard.sequence_index.append(sequence_number)
    shard.arrival_index.append(arrived[0])
    return sequence_number


def _sequence_index(shard: Any) -> list[int]:
    """The shard's sequence numbers in order, rebuilt if records were placed by any other path."""
    if len(shard.sequence_index) != len(shard.records):
        shard.sequence_index = list(shard.records)
        shard.arrival_index = [record.created_at for record in shard.records.values()]
    return shard.sequence_index


def close_shard(shard: Any) -> None:
    shard.is_open = False
    shard.closed_at = time.time()
    shard.ending_sequence = next_sequence_number()  # above every record the shard holds


# ---- streams: routing, split, merge, rescale -----------------------------------------------------


def _explicit_hash_key(value: Any) -> int:
    try:
        hash_key = int(value)
    except (TypeError, ValueError):
        raise _invalid(f"ExplicitHashKey {value!r} is not a decimal integer") from None
    if not 0 <= hash_key < HASH_SPACE:
        raise _invalid(f"ExplicitHashKey {value} is outside [0, 2^128-1]")
    return hash_key


def _hash_key(partition_key: str, explicit_hash_key: Any) -> int:
    """Where a record goes in the key space: its ExplicitHashKey when it has one, else its key's MD5."""
    return _explicit_hash_key(explicit_hash_key) if explicit_hash_key else md5_hash_key(partition_key)


def _patch_stream(Stream: Any, models: Any) -> None:
    InvalidArgumentError = models.InvalidArgumentError
    Shard = models.Shard

    def get_shard_for_key(self, partition_key: str, explicit_hash_key: str) -> Any:
        if not isinstance(partition_key, str) or not 1 <= len(partition_key) <= 256:
            raise InvalidArgumentError("PartitionKey must be 1 to 256 characters")
        hash_key = _hash_key(partition_key, explicit_hash_key)
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


def _patch_responses(KinesisResponse: Any, models: Any) -> None:
    from moto.core.responses import ActionResult, BaseResponse

    InvalidArgumentError = models.InvalidArgumentError

    def call_action(self) -> Any:
        with _lock:  # moto's Kinesis models assume one caller at a time
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
            result["ChildShards"] = [
                {
                    "ShardId": child.shard_id,
                    "ParentShards": [p for p in (child.parent, child.adjacent_parent) if p],
                    "HashKeyRange": {
                        "StartingHashKey": str(child.starting_hash),
                        "EndingHashKey": str(child.ending_hash),
                    },
                }
                for child in stream.shards.values()
                if shard.shard_id in (child.parent, child.adjacent_parent)
            ]
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


# ---- today's Kinesis API (botocore's model is the reference) -----------------------------------
#
# moto 5.2.5 predates these. Each is stored on moto's own objects (streams, consumers, the per-account
# backend) so that DeleteStream, ListStreams and the short path see one state.


class _State:
    """What one account's Kinesis (one moto backend) holds beyond moto's models."""

    def __init__(self) -> None:
        self.commitment: dict[str, Any] = {"Status": "DISABLED"}
        self.channels: dict[str, dict[str, Any]] = {}  # by ARN, in creation order


def _state(backend: Any) -> _State:
    state = backend.__dict__.get("kconsole_state")
    if state is None:
        state = backend.kconsole_state = _State()
    return state


def _backend_of(stream: Any) -> Any:
    from moto.kinesis.models import kinesis_backends

    return kinesis_backends[stream.account_id][stream.region]


def _new_stream_id() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    pick = random.SystemRandom().choice
    return "".join(pick(alphabet) for _ in range(20)) + "-" + "".join(pick(alphabet) for _ in range(3))


def _on_demand(stream: Any) -> bool:
    return stream.stream_mode.get("StreamMode") == "ON_DEMAND"


def _commitment(backend: Any) -> dict[str, Any]:
    """The account's commitment, with a requested end that has come due applied first."""
    commitment = _state(backend).commitment
    if (
        commitment["Status"] == "ENABLED_UNTIL_EARLIEST_ALLOWED_END"
        and time.time() >= commitment["EarliestAllowedEndAt"]
    ):
        commitment.update(Status="DISABLED", EndedAt=commitment["EarliestAllowedEndAt"])
        commitment.pop("EarliestAllowedEndAt", None)
        for stream in backend.streams.values():
            stream.warm_throughput_mibps = None
    return commitment


def _committed(backend: Any) -> bool:
    return _commitment(backend)["Status"] in ("ENABLED", "ENABLED_UNTIL_EARLIEST_ALLOWED_END")


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


# -- request validation against the model --


def _service_model() -> Any:
    from moto.core.utils import get_service_model

    return get_service_model("kinesis")


def _validation_error(value: Any, path: str, constraint: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    shown = "null" if value is None else repr(value)[:200] if not isinstance(value, str) else value[:200]
    return JsonRESTError(
        "ValidationException",
        f"1 validation error detected: Value '{shown}' at '{path}' "
        f"failed to satisfy constraint: Member must {constraint}",
    )


def _check(shape: Any, value: Any, path: str) -> None:
    """AWS's front-door validation of one value against its shape (types, required members, ranges,
    lengths, patterns, enums); raises ValidationException for the first failure, as AWS reports it."""
    kind = shape.type_name
    metadata = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            raise _validation_error(value, path, "be a structure")
        for name in shape.required_members:
            if value.get(name) is None:
                raise _validation_error(None, _member_path(path, name), "not be null")
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _check(member, value[name], _member_path(path, name))
        return
    if kind == "list":
        if not isinstance(value, list):
            raise _validation_error(value, path, "be a list")
        _check_size(len(value), metadata, value, path)
        for index, item in enumerate(value, 1):
            _check(shape.member, item, f"{path}.{index}.member")
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise _validation_error(value, path, "be a map")
        _check_size(len(value), metadata, value, path)
        for key, item in value.items():
            _check(shape.key, key, f"{path}.key")
            _check(shape.value, item, f"{path}.{key}")
        return
    if kind == "string":
        if not isinstance(value, str):
            raise _validation_error(value, path, "be a string")
        _check_size(len(value), metadata, value, path)
        if "pattern" in metadata and not re.fullmatch(metadata["pattern"], value):
            raise _validation_error(value, path, f"satisfy regular expression pattern: {metadata['pattern']}")
        if shape.enum and value not in shape.enum:
            raise _validation_error(value, path, f"satisfy enum value set: [{', '.join(shape.enum)}]")
        return
    if kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise _validation_error(value, path, "be an integer")
        if "min" in metadata and value < metadata["min"]:
            raise _validation_error(value, path, f"have value greater than or equal to {metadata['min']}")
        if "max" in metadata and value > metadata["max"]:
            raise _validation_error(value, path, f"have value less than or equal to {metadata['max']}")
        return
    if kind == "boolean" and not isinstance(value, bool):
        raise _validation_error(value, path, "be a boolean")
    if kind == "timestamp" and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
        raise _validation_error(value, path, "be a timestamp")


def _check_size(size: int, metadata: dict, value: Any, path: str) -> None:
    if "min" in metadata and size < metadata["min"]:
        raise _validation_error(value, path, f"have length greater than or equal to {metadata['min']}")
    if "max" in metadata and size > metadata["max"]:
        raise _validation_error(value, path, f"have length less than or equal to {metadata['max']}")


def _member_path(path: str, name: str) -> str:
    member = name[:1].lower() + name[1:]
    return f"{path}.{member}" if path else member


def _validated(response: Any, operation: str) -> dict[str, Any]:
    """The request's JSON parameters, checked against the operation's input shape."""
    try:
        params = json.loads(response.body or "{}")
    except (TypeError, ValueError):
        raise _invalid(f"the {operation} request is not a JSON object") from None
    _check(_service_model().operation_model(operation).input_shape, params, "")
    return params


def _invalid(message: str) -> Exception:
    from moto.kinesis.exceptions import InvalidArgumentError

    return InvalidArgumentError(message)


def _not_found(message: str) -> Exception:
    from moto.kinesis.exceptions import ResourceNotFoundError

    return ResourceNotFoundError(message)


def _in_use(message: str) -> Exception:
    from moto.kinesis.exceptions import ResourceInUseError

    return ResourceInUseError(message)


def _limit_exceeded(message: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    return JsonRESTError("LimitExceededException", message)


# -- resources named by ARN --


def _stream_by_arn(backend: Any, arn: str) -> Any:
    for stream in backend.streams.values():
        if stream.arn == arn:
            return stream
    raise _not_found(f"Stream {arn.rsplit('/', 1)[-1]} under account {backend.account_id} not found.")


def _stream(backend: Any, params: dict[str, Any]) -> Any:
    """The stream a request names by StreamARN and/or StreamName (ResourceNotFound otherwise)."""
    if params.get("StreamARN"):
        return _stream_by_arn(backend, params["StreamARN"])
    if params.get("StreamName"):
        return backend.describe_stream(stream_arn=None, stream_name=params["StreamName"])
    raise _invalid("Either StreamARN or StreamName must be given.")


def _resource(backend: Any, arn: str) -> tuple[str, Any]:
    """("stream" | "consumer" | "channel", the object) for a resource ARN; ResourceNotFound if absent."""
    resource = arn.split(":", 5)[5] if arn.count(":") >= 5 else ""
    if resource.startswith("channel/"):
        channel = _state(backend).channels.get(arn)
        if channel is None:
            raise _not_found(f"Channel {resource[len('channel/') :]} under account {backend.account_id} not found.")
        return "channel", channel
    if "/consumer/" in resource:
        for stream in backend.streams.values():
            consumer = stream.get_consumer_by_arn(arn)
            if consumer is not None:
                return "consumer", consumer
        raise _not_found(f"Consumer {arn}, account {backend.account_id} not found.")
    return "stream", _stream_by_arn(backend, arn)


def _tags_of(kind: str, resource: Any) -> dict[str, str]:
    if kind == "channel":
        return resource["Tags"]
    if kind == "consumer" and not hasattr(resource, "tags"):
        resource.tags = {}
    return resource.tags


def _check_tags(tags: dict[str, str], existing: dict[str, str]) -> None:
    for key, value in tags.items():
        if key.lower().startswith("aws:"):
            raise _invalid(f"Tag key {key!r}: the aws: prefix is reserved for AWS use.")
        for text in (key, value):
            if not TAG_TEXT.fullmatch(text):
                raise _invalid(
                    f"Tag {key!r}: tags may only contain Unicode letters, digits, white space, "
                    "or these symbols: _ . : / = + - @"
                )
    if len(set(existing) | set(tags)) > TAGS_PER_RESOURCE_MAX:
        raise _invalid(f"A resource can have at most {TAGS_PER_RESOURCE_MAX} tags.")


# -- record size, distribution --


def _record_size(data: Any, partition_key: str | None) -> int:
    """Bytes of a record as AWS counts them: the data blob (base64 on the wire) plus the partition key."""
    text = data if isinstance(data, str) else ""
    padding = len(text) - len(text.rstrip("="))
    size = len(text) * 3 // 4 - padding
    return size + (len(partition_key.encode("utf-8")) if isinstance(partition_key, str) else 0)


def _check_records(stream: Any, records: list[dict[str, Any]], *, single: bool) -> int:
    """PutRecord(s)' limits: the stream's MaxRecordSizeInKiB per record, 10 MiB and 500 records per
    request, and the partition key AWS requires unless the stream distributes records itself. Returns
    the request's size as AWS counts it (data plus partition keys)."""
    limit = stream.max_record_size_kib * 1024
    keyed = stream.record_distribution != AUTO
    total = 0

    def where(position: int) -> str:
        return "PutRecord" if single else f"Record {position} of the PutRecords request"

    for position, record in enumerate(records, 1):
        key = record.get("PartitionKey")
        if key is None:
            if keyed:
                raise _invalid(
                    f"{where(position)} has no PartitionKey; stream {stream.stream_name} distributes records "
                    f"by partition key ({USER_PARTITION_KEY}), so every record needs one."
                )
        elif not isinstance(key, str) or not 1 <= len(key) <= 256:
            raise _invalid(f"{where(position)}: PartitionKey must be 1 to 256 characters")
        if keyed and record.get("ExplicitHashKey"):
            _explicit_hash_key(record["ExplicitHashKey"])  # before any record is stored
        size = _record_size(record.get("Data"), key)
        if size > limit:
            raise _invalid(
                f"{where(position)} is {size} bytes (data plus partition key), over stream "
                f"{stream.stream_name}'s MaxRecordSizeInKiB of {stream.max_record_size_kib} "
                f"({limit} bytes); UpdateMaxRecordSize raises it up to {RECORD_SIZE_MAX_KIB} KiB."
            )
        total += size
    if not single and total > REQUEST_BYTES_MAX:
        raise _invalid(
            f"Records size exceeds 10 MiB limit: the request holds {total} bytes (data plus partition keys)."
        )
    return total


def checked_put_records(handler: Any) -> tuple[Any, list[dict[str, Any]], int]:
    """A PutRecords request's stream, records and size, checked whole: an error here has stored nothing."""
    from moto.kinesis.exceptions import TooManyRecords

    stream = handler.kinesis_backend.describe_stream(
        stream_arn=handler._get_param("StreamARN"), stream_name=handler._get_param("StreamName")
    )
    records = handler._get_param("Records") or []
    if len(records) > REQUEST_RECORDS_MAX:
        raise TooManyRecords
    return stream, records, _check_records(stream, records, single=False)


def store_records(backend: Any, stream: Any, records: list[dict[str, Any]], size: int) -> dict[str, Any]:
    """Store checked records (see checked_put_records) and answer as PutRecords does."""
    if stream.record_distribution == AUTO or stream.lambda_event_source_mappings:
        put = stream.put_record  # moto's own way, record by record (its Lambda mappings see each one)
        results = []
        for record in records:
            sequence_number, shard_id = put(
                record.get("PartitionKey"), record.get("ExplicitHashKey"), record.get("Data")
            )
            results.append({"SequenceNumber": sequence_number, "ShardId": shard_id})
    else:
        results = _store_keyed(stream, records)
    backend._send_stream_metrics(stream.stream_name, incoming_records=len(records), incoming_bytes=size)
    return {"FailedRecordCount": 0, "Records": results}


def _store_keyed(stream: Any, records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Records routed by partition key (or ExplicitHashKey), as Stream.put_record routes and stores each
    one, with what a request shares worked out once: the open shards' ranges (their owners found as a
    shard map finds them, by the sorted endings), their ids, and the arrival time (a request's records
    arrive together). A 500-record request took the server 10.5 us a record in process, and takes 5.8."""
    from moto.kinesis.models import InvalidArgumentError

    open_shards = sorted((shard for shard in stream.shards.values() if shard.is_open), key=lambda s: s.ending_hash)
    ids = [shard.shard_id for shard in open_shards]
    hash_keys = [_hash_key(record["PartitionKey"], record.get("ExplicitHashKey")) for record in records]
    owners = owners_among([shard.ending_hash for shard in open_shards], hash_keys)
    results = []
    with _lock:  # one request's sequence numbers in its order
        arrived = arrival()
        for record, hash_key, position in zip(records, hash_keys, owners):
            if position == len(open_shards) or open_shards[position].starting_hash > hash_key:
                raise InvalidArgumentError(f"no open shard owns hash key {hash_key}")
            sequence_number = _append_record(
                open_shards[position], record["PartitionKey"], record["Data"], record.get("ExplicitHashKey"), arrived
            )
            results.append({"SequenceNumber": str(sequence_number), "ShardId": ids[position]})
    if _store_heap is not None:
        _store_heap.stored(len(records))
    return results


def _auto_shard(stream: Any) -> Any:
    """The next open shard in turn: AUTO spreads records evenly whatever their keys."""
    open_shards = sorted(
        (shard for shard in stream.shards.values() if shard.is_open), key=lambda shard: shard.starting_hash
    )
    stream.auto_cursor = (getattr(stream, "auto_cursor", -1) + 1) % len(open_shards)
    return open_shards[stream.auto_cursor]


def _stream_setup(stream: Any) -> None:
    stream.record_distribution = USER_PARTITION_KEY
    stream.max_record_size_kib = RECORD_SIZE_DEFAULT_KIB
    stream.warm_throughput_mibps = None
    stream.stream_id = _new_stream_id()


def _set_warm_throughput(backend: Any, stream: Any, mibps: int) -> None:
    if not _on_demand(stream):
        raise _invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "warm throughput applies to ON_DEMAND streams only."
        )
    if not _committed(backend):
        raise _invalid(
            f"Warm throughput needs the account's MinimumThroughputBillingCommitment (On-demand "
            f"Advantage) enabled; account {backend.account_id} has it "
            f"{_commitment(backend)['Status']}. UpdateAccountSettings enables it."
        )
    if mibps > WARM_THROUGHPUT_MAX_MIBPS:
        raise _limit_exceeded(
            f"WarmThroughputMiBps {mibps} exceeds the limit of {WARM_THROUGHPUT_MAX_MIBPS} "
            "MiBps (10 GiBps) for an on-demand stream."
        )
    stream.warm_throughput_mibps = mibps


def _set_distribution(backend: Any, stream: Any, strategy: str) -> None:
    if strategy == AUTO and not _on_demand(stream):
        raise _invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "the AUTO record distribution strategy is supported for ON_DEMAND streams only."
        )
    stream.record_distribution = strategy


# -- channels --


def _channel_status(channel: dict[str, Any]) -> str:
    if (
        channel["ChannelStatus"] in ("CREATING", "UPDATING")
        and time.time() - channel["changed"] >= CHANNEL_SETTLE_SECONDS
    ):
        channel["ChannelStatus"] = "ACTIVE"
    return channel["ChannelStatus"]


def _channel_streams(channel: dict[str, Any]) -> list[str]:
    return [config["StreamARN"] for config in channel["StreamConfigurationList"]]


def _channels_of(backend: Any, stream: Any) -> list[dict[str, Any]]:
    return [
        channel
        for channel in _state(backend).channels.values()
        if stream.arn in _channel_streams(channel) and _channel_status(channel) != "DELETING"
    ]


def _channel_description(channel: dict[str, Any]) -> dict[str, Any]:
    _channel_status(channel)
    return {key: value for key, value in channel.items() if key not in ("Tags", "changed")}


def _channel_summary(channel: dict[str, Any]) -> dict[str, Any]:
    return {
        "ChannelName": channel["ChannelName"],
        "ChannelARN": channel["ChannelARN"],
        "ChannelId": channel["ChannelId"],
        "ChannelStatus": _channel_status(channel),
        "ChannelCreationTimestamp": channel["ChannelCreationTimestamp"],
        "ChannelDestinationType": "S3" if "S3DestinationConfiguration" in channel else "S3_TABLES",
        "Streams": [
            {"StreamARN": config["StreamARN"], "StreamCreationTimestamp": config["StreamCreationTimestamp"]}
            for config in channel["StreamConfigurationList"]
        ],
    }


def _new_channel(backend: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A channel from a validated CreateChannel request, with the rules the API reference states
    beyond the model: one destination, one source stream (on-demand), formats per destination."""
    # Exactly one of the two is given (checked next); Any, as mypy cannot follow that check.
    s3: Any = params.get("S3DestinationConfiguration")
    tables: Any = params.get("S3TablesDestinationConfiguration")
    if (s3 is None) == (tables is None):
        raise _invalid("Specify either S3DestinationConfiguration or S3TablesDestinationConfiguration, but not both.")
    sources = params["StreamConfigurationList"]
    if len(sources) != 1:
        raise _invalid(f"A channel reads one stream; StreamConfigurationList has {len(sources)}.")
    stream = _stream_by_arn(backend, sources[0]["StreamARN"])
    if not _on_demand(stream):
        raise _invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "channels are supported for ON_DEMAND streams only."
        )
    record_format = sources[0]["RecordConfiguration"]
    kind = record_format["RecordFormatType"]
    if tables is not None:
        if kind not in ("JSON", "GSR_JSON"):
            raise _invalid(f"RecordFormatType {kind} is not supported for streaming table (S3 Tables) destinations.")
        if not record_format.get("GSRSchemaARN"):
            raise _invalid("GSRSchemaARN is required when the channel destination is a streaming table.")
        if len(tables["S3TablesConfigurationList"]) != 1:
            raise _invalid("A channel writes to one table; S3TablesConfigurationList must have one entry.")
    elif kind == "GSR_JSON":
        raise _invalid("RecordFormatType GSR_JSON is supported only for streaming table (S3 Tables) destinations.")
    name = params["ChannelName"]
    arn = f"arn:aws:kinesis:{backend.region_name}:{backend.account_id}:channel/{name}"
    if arn in _state(backend).channels:
        raise _in_use(f"Channel {name} under account {backend.account_id} already exists.")
    now = time.time()
    channel: dict[str, Any] = {
        "ChannelName": name,
        "ChannelARN": arn,
        "ChannelId": str(uuid.uuid4()),
        "ChannelStatus": "CREATING",
        "ChannelCreationTimestamp": _utc(now),
        "ServiceExecutionRoleARN": params["ServiceExecutionRoleARN"],
        "StreamConfigurationList": [
            {
                "StreamARN": stream.arn,
                "StreamCreationTimestamp": stream.creation_datetime,
                "RecordConfiguration": record_format,
            }
        ],
        "LoggingConfiguration": params.get("LoggingConfiguration") or {"CloudWatchLogs": {"Enabled": False}},
        "Tags": dict(params.get("Tags") or {}),
        "changed": now,
    }
    if s3 is not None:
        storage = s3["StorageConfiguration"]
        channel["S3DestinationConfiguration"] = {
            "DataFreshnessInSeconds": s3.get("DataFreshnessInSeconds", 300),
            # The API reference: without one, the dead-letter queue is the destination bucket, error prefix.
            "DeadLetterQueueS3Configuration": s3.get("DeadLetterQueueS3Configuration")
            or {
                "BucketARN": storage["BucketARN"],
                "ExpectedBucketOwner": storage["ExpectedBucketOwner"],
                "ErrorOutputPrefix": "error/",
            },
            "StorageConfiguration": storage,
        }
    else:
        channel["S3TablesDestinationConfiguration"] = {
            "DataFreshnessInSeconds": tables.get("DataFreshnessInSeconds", 300),
            "DeadLetterQueueS3Configuration": tables["DeadLetterQueueS3Configuration"],
            "S3TablesConfigurationList": tables["S3TablesConfigurationList"],
        }
    if params.get("EncryptionConfiguration"):
        channel["EncryptionConfiguration"] = params["EncryptionConfiguration"]
    _check_tags(channel["Tags"], {})
    return channel


def _channel(backend: Any, arn: str) -> dict[str, Any]:
    channel = _state(backend).channels.get(arn)
    if channel is None:
        raise _not_found(f"Channel {arn.rsplit('/', 1)[-1]} under account {backend.account_id} not found.")
    return channel


def _policy_document(policy: str) -> None:
    try:
        document = json.loads(policy)
    except (TypeError, ValueError):
        raise _invalid("Policy is not valid JSON.") from None
    if not isinstance(document, dict) or not document.get("Statement"):
        raise _invalid("Policy must be a JSON object with a Statement.")


def _patch_today(models: Any, responses: Any) -> None:
    from moto.core.responses import ActionResult, EmptyResult

    Stream, KinesisResponse = models.Stream, responses.KinesisResponse

    original_init = Stream.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        _stream_setup(self)

    Stream.__init__ = __init__

    keyed_shard = Stream.get_shard_for_key

    def get_shard_for_key(self, partition_key: str | None, explicit_hash_key: str | None) -> Any:
        if self.record_distribution == AUTO:
            return _auto_shard(self)  # partition key and ExplicitHashKey are ignored, as AWS documents
        return keyed_shard(self, partition_key, explicit_hash_key)

    Stream.get_shard_for_key = get_shard_for_key

    summary_so_far = Stream.to_json_summary

    def to_json_summary(self) -> dict[str, Any]:
        summary = summary_so_far(self)
        description = summary["StreamDescriptionSummary"]
        backend = _backend_of(self)
        description["StreamId"] = self.stream_id
        description["RecordDistributionStrategy"] = self.record_distribution
        description["MaxRecordSizeInKiB"] = self.max_record_size_kib
        description["ChannelCount"] = len(_channels_of(backend, self))
        if _on_demand(self) and _committed(backend) and self.warm_throughput_mibps is not None:
            description["WarmThroughput"] = {
                "TargetMiBps": self.warm_throughput_mibps,
                "CurrentMiBps": self.warm_throughput_mibps,
            }
        return summary

    Stream.to_json_summary = to_json_summary

    # -- requests moto knows, with today's members and rules --

    def create_stream(self) -> Any:
        params = _validated(self, "CreateStream")
        mode = (params.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED")
        backend = self.kinesis_backend
        if mode == "PROVISIONED" and params.get("ShardCount") is None:
            raise _invalid("ShardCount is required for a PROVISIONED stream.")
        if mode == "PROVISIONED" and params.get("RecordDistributionStrategy") == AUTO:
            raise _invalid("The AUTO record distribution strategy is supported for ON_DEMAND streams only.")
        if params.get("WarmThroughputMiBps") is not None and mode != "ON_DEMAND":
            raise _invalid("Warm throughput applies to ON_DEMAND streams only.")
        if params.get("Tags"):
            _check_tags(params["Tags"], {})
        stream = backend.create_stream(
            params["StreamName"], params.get("ShardCount"), stream_mode=params.get("StreamModeDetails")
        )
        try:
            if params.get("WarmThroughputMiBps") is not None:
                _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        except Exception:
            backend.streams.pop(stream.stream_name, None)
            raise
        stream.record_distribution = params.get("RecordDistributionStrategy", USER_PARTITION_KEY)
        stream.max_record_size_kib = params.get("MaxRecordSizeInKiB", RECORD_SIZE_DEFAULT_KIB)
        stream.tags.update(params.get("Tags") or {})
        return EmptyResult()

    def delete_stream(self) -> Any:
        backend = self.kinesis_backend
        stream = backend.describe_stream(
            stream_arn=self._get_param("StreamARN"), stream_name=self._get_param("StreamName")
        )
        if stream.consumers and not self._get_param("EnforceConsumerDeletion"):
            raise _in_use(
                f"Stream {stream.stream_name} under account {backend.account_id} has registered consumers; "
                "deregister them or set EnforceConsumerDeletion."
            )
        channels = _channels_of(backend, stream)
        if channels:
            names = ", ".join(channel["ChannelName"] for channel in channels)
            raise _in_use(
                f"Stream {stream.stream_name} under account {backend.account_id} has active channels "
                f"({names}); delete them before deleting the stream."
            )
        backend.delete_stream(stream.arn, stream.stream_name)
        if _store_heap is not None:
            _store_heap.released()
        for arn in [arn for arn in backend.resource_policies if arn == stream.arn or arn.startswith(stream.arn + "/")]:
            del backend.resource_policies[arn]
        return EmptyResult()

    def put_record(self) -> Any:
        backend = self.kinesis_backend
        stream = backend.describe_stream(
            stream_arn=self._get_param("StreamARN"), stream_name=self._get_param("StreamName")
        )
        record = {
            "Data": self._get_param("Data"),
            "PartitionKey": self._get_param("PartitionKey"),
            "ExplicitHashKey": self._get_param("ExplicitHashKey"),
        }
        size = _check_records(stream, [record], single=True)
        sequence_number, shard_id = stream.put_record(record["PartitionKey"], record["ExplicitHashKey"], record["Data"])
        backend._send_stream_metrics(stream.stream_name, incoming_bytes=size, incoming_records=1)
        return ActionResult({"SequenceNumber": sequence_number, "ShardId": shard_id})

    def put_records(self) -> Any:
        return ActionResult(store_records(self.kinesis_backend, *checked_put_records(self)))

    def update_stream_mode(self) -> Any:
        params = _validated(self, "UpdateStreamMode")
        backend = self.kinesis_backend
        stream = _stream_by_arn(backend, params["StreamARN"])
        mode = params["StreamModeDetails"]["StreamMode"]
        if mode == "PROVISIONED" and stream.record_distribution == AUTO:
            raise _invalid(
                f"Stream {stream.stream_name} uses the AUTO record distribution strategy, which "
                "PROVISIONED streams do not support; switch it to USER_PARTITION_KEY first."
            )
        if params.get("WarmThroughputMiBps") is not None and mode != "ON_DEMAND":
            raise _invalid("Warm throughput applies to ON_DEMAND streams only.")
        backend.update_stream_mode(stream.arn, params["StreamModeDetails"])
        if mode == "PROVISIONED":
            stream.warm_throughput_mibps = None
        elif params.get("WarmThroughputMiBps") is not None:
            _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        return EmptyResult()

    def list_streams(self) -> Any:
        """AWS's paging: at most 100 names a page (100 by default), a NextToken to go on with, and the
        summaries of the page's streams (moto: 10 by default, no NextToken, every stream's summary on
        every page)."""
        params = _validated(self, "ListStreams")
        streams = list(self.kinesis_backend.list_streams())
        names = [stream.stream_name for stream in streams]
        after = params.get("ExclusiveStartStreamName")
        if params.get("NextToken"):
            after = _decode_token_name(params["NextToken"])
        start = names.index(after) + 1 if after in names else (0 if after is None else len(names))
        size = min(params.get("Limit", STREAMS_PAGE_MAX), STREAMS_PAGE_MAX)
        page = streams[start : start + size]
        result: dict[str, Any] = {
            "StreamNames": [stream.stream_name for stream in page],
            "HasMoreStreams": start + size < len(streams),
            "StreamSummaries": [
                {
                    "StreamName": stream.stream_name,
                    "StreamARN": stream.arn,
                    "StreamStatus": stream.status,
                    "StreamModeDetails": stream.stream_mode,
                    "StreamCreationTimestamp": stream.creation_datetime,
                }
                for stream in page
            ],
        }
        if result["HasMoreStreams"]:
            result["NextToken"] = _encode_token_name(page[-1].stream_name)
        return ActionResult(result)

    # -- operations moto lacks --

    def update_stream_record_distribution_strategy(self) -> Any:
        params = _validated(self, "UpdateStreamRecordDistributionStrategy")
        backend = self.kinesis_backend
        _set_distribution(backend, _stream_by_arn(backend, params["StreamARN"]), params["RecordDistributionStrategy"])
        return EmptyResult()

    def update_max_record_size(self) -> Any:
        params = _validated(self, "UpdateMaxRecordSize")
        backend = self.kinesis_backend
        if not params.get("StreamARN"):
            raise _invalid("StreamARN is required.")
        _stream_by_arn(backend, params["StreamARN"]).max_record_size_kib = params["MaxRecordSizeInKiB"]
        return EmptyResult()

    def update_stream_warm_throughput(self) -> Any:
        params = _validated(self, "UpdateStreamWarmThroughput")
        backend = self.kinesis_backend
        stream = _stream(backend, params)
        _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        return ActionResult(
            {
                "StreamARN": stream.arn,
                "StreamName": stream.stream_name,
                "WarmThroughput": {
                    "TargetMiBps": stream.warm_throughput_mibps,
                    "CurrentMiBps": stream.warm_throughput_mibps,
                },
            }
        )

    def describe_account_settings(self) -> Any:
        _validated(self, "DescribeAccountSettings")
        return ActionResult({"MinimumThroughputBillingCommitment": _commitment_wire(_commitment(self.kinesis_backend))})

    def update_account_settings(self) -> Any:
        params = _validated(self, "UpdateAccountSettings")
        backend = self.kinesis_backend
        commitment = _commitment(backend)
        now = time.time()
        if params["MinimumThroughputBillingCommitment"]["Status"] == "ENABLED":
            if commitment["Status"] == "DISABLED":
                commitment.clear()
                commitment.update(
                    Status="ENABLED", StartedAt=now, EarliestAllowedEndAt=now + COMMITMENT_MINIMUM_SECONDS
                )
            else:  # enabling again cancels an end that was asked for
                commitment["Status"] = "ENABLED"
        elif commitment["Status"] != "DISABLED":
            # Before the minimum window is over, the commitment ends at its earliest allowed end.
            commitment["Status"] = "ENABLED_UNTIL_EARLIEST_ALLOWED_END"
            commitment = _commitment(backend)
        return ActionResult({"MinimumThroughputBillingCommitment": _commitment_wire(commitment)})

    def tag_resource(self) -> Any:
        params = _validated(self, "TagResource")
        tags = _tags_of(*_resource(self.kinesis_backend, params["ResourceARN"]))
        _check_tags(params["Tags"], tags)
        tags.update(params["Tags"])
        return EmptyResult()

    def untag_resource(self) -> Any:
        params = _validated(self, "UntagResource")
        tags = _tags_of(*_resource(self.kinesis_backend, params["ResourceARN"]))
        for key in params["TagKeys"]:
            tags.pop(key, None)
        return EmptyResult()

    def list_tags_for_resource(self) -> Any:
        params = _validated(self, "ListTagsForResource")
        tags = _tags_of(*_resource(self.kinesis_backend, params["ResourceARN"]))
        return ActionResult({"Tags": [{"Key": key, "Value": value} for key, value in sorted(tags.items())]})

    def put_resource_policy(self) -> Any:
        params = _validated(self, "PutResourcePolicy")
        backend = self.kinesis_backend
        kind, _ = _resource(backend, params["ResourceARN"])
        if kind == "channel":
            raise _invalid("Resource policies apply to data streams and consumers.")
        _policy_document(params["Policy"])
        backend.resource_policies[params["ResourceARN"]] = params["Policy"]
        return EmptyResult()

    def get_resource_policy(self) -> Any:
        params = _validated(self, "GetResourcePolicy")
        backend = self.kinesis_backend
        _resource(backend, params["ResourceARN"])
        return ActionResult({"Policy": backend.resource_policies.get(params["ResourceARN"], "{}")})

    def delete_resource_policy(self) -> Any:
        params = _validated(self, "DeleteResourcePolicy")
        backend = self.kinesis_backend
        _resource(backend, params["ResourceARN"])
        if backend.resource_policies.pop(params["ResourceARN"], None) is None:
            raise _not_found(f"No resource policy found for resource ARN {params['ResourceARN']}.")
        return EmptyResult()

    def create_channel(self) -> Any:
        params = _validated(self, "CreateChannel")
        backend = self.kinesis_backend
        channel = _new_channel(backend, params)
        _state(backend).channels[channel["ChannelARN"]] = channel
        return ActionResult({"ChannelDescription": _channel_description(channel)})

    def describe_channel(self) -> Any:
        params = _validated(self, "DescribeChannel")
        return ActionResult(
            {"ChannelDescription": _channel_description(_channel(self.kinesis_backend, params["ChannelARN"]))}
        )

    def update_channel(self) -> Any:
        params = _validated(self, "UpdateChannel")
        channel = _channel(self.kinesis_backend, params["ChannelARN"])
        if _channel_status(channel) != "ACTIVE":
            raise _in_use(
                f"Channel {channel['ChannelName']} is {channel['ChannelStatus']}; it can be updated when ACTIVE."
            )
        for member in ("S3DestinationConfiguration", "S3TablesDestinationConfiguration"):
            if member in params:
                if member not in channel:
                    raise _invalid(
                        f"Channel {channel['ChannelName']} has no {member}; only its own destination "
                        "type can be updated."
                    )
                channel[member]["DataFreshnessInSeconds"] = params[member]["DataFreshnessInSeconds"]
        if "LoggingConfiguration" in params:
            channel["LoggingConfiguration"] = params["LoggingConfiguration"]
        channel.update(ChannelStatus="UPDATING", changed=time.time())
        return ActionResult({"ChannelDescription": _channel_description(channel)})

    def delete_channel(self) -> Any:
        params = _validated(self, "DeleteChannel")
        backend = self.kinesis_backend
        _channel(backend, params["ChannelARN"])
        del _state(backend).channels[params["ChannelARN"]]
        return EmptyResult()

    def list_channels(self) -> Any:
        params = _validated(self, "ListChannels")
        backend = self.kinesis_backend
        wanted = {entry["StreamARN"] for entry in params.get("StreamFilter") or []}
        channels = [
            channel
            for channel in _state(backend).channels.values()
            if not wanted or wanted & set(_channel_streams(channel))
        ]
        start = 0
        if params.get("NextToken"):
            names = [channel["ChannelARN"] for channel in channels]
            after = _decode_token_name(params["NextToken"])
            start = names.index(after) + 1 if after in names else len(names)
        size = min(params.get("MaxResults", CHANNELS_PAGE_MAX), CHANNELS_PAGE_MAX)
        page = channels[start : start + size]
        result: dict[str, Any] = {"ChannelSummaries": [_channel_summary(channel) for channel in page]}
        if start + size < len(channels):
            result["NextToken"] = _encode_token_name(page[-1]["ChannelARN"])
        return ActionResult(result)

    for handler in (
        create_stream,
        delete_stream,
        put_record,
        put_records,
        update_stream_mode,
        list_streams,
        update_stream_record_distribution_strategy,
        update_max_record_size,
        update_stream_warm_throughput,
        describe_account_settings,
        update_account_settings,
        tag_resource,
        untag_resource,
        list_tags_for_resource,
        put_resource_policy,
        get_resource_policy,
        delete_resource_policy,
        create_channel,
        describe_channel,
        update_channel,
        delete_channel,
        list_channels,
    ):
        setattr(KinesisResponse, handler.__name__, handler)


def _commitment_wire(commitment: dict[str, Any]) -> dict[str, Any]:
    return {key: _utc(value) if isinstance(value, float) else value for key, value in commitment.items()}


def _encode_token_name(name: str) -> str:
    """A NextToken: the last name (or ARN) of the page, to go on after."""
    return base64.urlsafe_b64encode(name.encode()).decode()


def _decode_token_name(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _invalid(f"Invalid NextToken: {token[:40]}") from None


# ---- CloudWatch: GetMetricData from an index ------------------------------------------------------

_cloudwatch_lock = threading.Lock()


class _MetricIndex:
    """A CloudWatch backend's stored points by (namespace, metric name, dimension set), each series in
    time order. Points are only ever appended to the backend's list, so the index catches up with
    what was added since it last looked."""

    def __init__(self) -> None:
        self.indexed = 0
        self.series: dict[tuple, tuple[list, list]] = {}  # key -> (timestamps, points), both in time order

    def catch_up(self, stored: list) -> None:
        if len(stored) < self.indexed:  # the list was replaced or cut: index it again
            self.indexed, self.series = 0, {}
        for datum in stored[self.indexed :]:
            key = _metric_key(datum.namespace, datum.name, ((d.name, d.value) for d in datum.dimensions))
            times, points = self.series.setdefault(key, ([], []))
            at = bisect.bisect_right(times, datum.timestamp)
            times.insert(at, datum.timestamp)
            points.insert(at, datum)
        self.indexed = len(stored)


def _metric_key(namespace: str, name: str, dimensions: Any) -> tuple:
    return namespace, name, frozenset(dimensions)


def _patch_cloudwatch(models: Any) -> None:
    CloudWatchBackend = models.CloudWatchBackend
    original = CloudWatchBackend.get_metric_data

    def get_metric_data(self, queries, start_time, end_time, scan_by="TimestampAscending"):
        if any("MetricStat" not in query for query in queries):
            return original(self, queries, start_time, end_time, scan_by)  # metric math: moto's own way
        start_time = start_time.replace(microsecond=0)
        end_time = end_time.replace(microsecond=0)
        if start_time >= end_time:
            return original(self, queries, start_time, end_time, scan_by)  # its validation errors
        with _cloudwatch_lock:
            index = self.__dict__.setdefault("_console_metric_index", _MetricIndex())
            index.catch_up(self.metric_data)
            # Other services' metrics (moto computes them on demand; usually none): indexed per call.
            provided = _MetricIndex()
            provided.catch_up(self.aws_metric_data)
            results = []
            for query in queries:
                values, timestamps = _metric_stat(models, query["MetricStat"], start_time, end_time, index, provided)
                if scan_by == "TimestampDescending":
                    values.reverse()
                    timestamps.reverse()
                if query.get("ReturnData", True):
                    stat = query["MetricStat"]
                    results.append(
                        {
                            "id": query["Id"],
                            "label": query.get("Label") or f"{stat['Metric']['MetricName']} {stat['Stat']}",
                            "values": values,
                            "timestamps": timestamps,
                            "status_code": "Complete",
                        }
                    )
            return results

    CloudWatchBackend.get_metric_data = get_metric_data


def _metric_stat(
    models: Any, metric_stat: dict, start: datetime, end: datetime, *indexes: _MetricIndex
) -> tuple[list, list]:
    """One MetricStat query's (values, period starts) from the indexes: a value per period that has points."""
    metric = metric_stat["Metric"]
    key = _metric_key(
        metric["Namespace"], metric["MetricName"], ((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
    )
    found = [index.series[key] for index in indexes if key in index.series]
    period = timedelta(seconds=int(metric_stat["Period"]))
    unit, stat = metric_stat.get("Unit"), metric_stat["Stat"]
    values: list = []
    timestamps: list = []
    if not found:
        return values, timestamps
    moment = start
    while moment <= end:
        upper = min(moment + period, end)  # points at or after EndTime are outside the window
        points = [
            datum
            for times, series in found
            for datum in series[bisect.bisect_left(times, moment) : bisect.bisect_left(times, upper)]
            if not unit or datum.unit == unit
        ]
        if points:
            statistics = models.Statistics([stat], moment)
            statistics.metric_data = points
            values.append(statistics.get_statistics_for_type(stat))
            timestamps.append(statistics.timestamp)
        moment += period
    return values, timestamps
