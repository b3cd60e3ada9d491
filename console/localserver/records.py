"""How the embedded server stores a record: one lock for moto's Kinesis models, AWS-shaped sequence
numbers, moto's Record built directly, each shard's sequence and arrival indexes, and PutRecords
checked whole and then routed and stored in one pass (the short path and moto's own path alike).

Everything here runs under one lock per process: moto's models are not thread-safe and the server is
threaded.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from console.keyspace.hashkeys import HASH_SPACE, md5_hash_key, owners_among
from console.localserver.validation import invalid

_lock = threading.RLock()
_store_heap: Any = None  # the embedded server's StoreHeap (keep_heap_as_a_store); None in other processes
# Called after records are stored, outside the lock (console.localserver.subscribe sets it, to push
# them to its SubscribeToShard subscriptions at once rather than at their next poll).
on_stored: Callable[[], None] | None = None

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
AUTO, USER_PARTITION_KEY = "AUTO", "USER_PARTITION_KEY"


def lock() -> threading.RLock:
    """The one lock every request to moto's Kinesis models holds (the server's short path too)."""
    return _lock


def keep_heap_as_a_store() -> None:
    """The embedded server's process: its heap kept as a store's (console.localserver.store_heap)."""
    global _store_heap
    from console.localserver.store_heap import StoreHeap

    _store_heap = StoreHeap()


def heap_stored(records: int) -> None:
    if _store_heap is not None:
        _store_heap.stored(records)
    if on_stored is not None:
        on_stored()


def heap_released() -> None:
    """A stream deleted: what it held goes back within the collector's reach."""
    if _store_heap is not None:
        _store_heap.released()


def next_sequence_number() -> int:
    with lock():
        return next(_sequence)


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


def append_record(
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


def ordered_sequence_numbers(shard: Any) -> list[int]:
    """The shard's sequence numbers in order, rebuilt if records were placed by any other path."""
    if len(shard.sequence_index) != len(shard.records):
        shard.sequence_index = list(shard.records)
        shard.arrival_index = [record.created_at for record in shard.records.values()]
    return shard.sequence_index


def close_shard(shard: Any) -> None:
    shard.is_open = False
    shard.closed_at = time.time()
    shard.ending_sequence = next_sequence_number()  # above every record the shard holds


def checked_explicit_hash_key(value: Any) -> int:
    try:
        hash_key = int(value)
    except (TypeError, ValueError):
        raise invalid(f"ExplicitHashKey {value!r} is not a decimal integer") from None
    if not 0 <= hash_key < HASH_SPACE:
        raise invalid(f"ExplicitHashKey {value} is outside [0, 2^128-1]")
    return hash_key


def hash_key_of(partition_key: str, explicit_hash_key: Any) -> int:
    """Where a record goes in the key space: its ExplicitHashKey when it has one, else its key's MD5."""
    return checked_explicit_hash_key(explicit_hash_key) if explicit_hash_key else md5_hash_key(partition_key)


def record_size(data: Any, partition_key: str | None) -> int:
    """Bytes of a record as AWS counts them: the data blob (base64 on the wire) plus the partition key."""
    text = data if isinstance(data, str) else ""
    padding = len(text) - len(text.rstrip("="))
    size = len(text) * 3 // 4 - padding
    return size + (len(partition_key.encode("utf-8")) if isinstance(partition_key, str) else 0)


def check_records(stream: Any, records: list[dict[str, Any]], *, single: bool) -> int:
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
                raise invalid(
                    f"{where(position)} has no PartitionKey; stream {stream.stream_name} distributes records "
                    f"by partition key ({USER_PARTITION_KEY}), so every record needs one."
                )
        elif not isinstance(key, str) or not 1 <= len(key) <= 256:
            raise invalid(f"{where(position)}: PartitionKey must be 1 to 256 characters")
        if keyed and record.get("ExplicitHashKey"):
            checked_explicit_hash_key(record["ExplicitHashKey"])  # before any record is stored
        size = record_size(record.get("Data"), key)
        if size > limit:
            raise invalid(
                f"{where(position)} is {size} bytes (data plus partition key), over stream "
                f"{stream.stream_name}'s MaxRecordSizeInKiB of {stream.max_record_size_kib} "
                f"({limit} bytes); UpdateMaxRecordSize raises it up to {RECORD_SIZE_MAX_KIB} KiB."
            )
        total += size
    if not single and total > REQUEST_BYTES_MAX:
        raise invalid(f"Records size exceeds 10 MiB limit: the request holds {total} bytes (data plus partition keys).")
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
    return stream, records, check_records(stream, records, single=False)


def store_records(backend: Any, stream: Any, records: list[dict[str, Any]], size: int) -> dict[str, Any]:
    """Store checked records (see checked_put_records) and answer as PutRecords does."""
    if stream.record_distribution == AUTO:
        put = stream.put_record  # moto's own way, record by record (readers.py keeps mappings off the stream)
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
    hash_keys = [hash_key_of(record["PartitionKey"], record.get("ExplicitHashKey")) for record in records]
    owners = owners_among([shard.ending_hash for shard in open_shards], hash_keys)
    results = []
    with lock():  # one request's sequence numbers in its order
        arrived = arrival()
        for record, hash_key, position in zip(records, hash_keys, owners):
            if position == len(open_shards) or open_shards[position].starting_hash > hash_key:
                raise InvalidArgumentError(f"no open shard owns hash key {hash_key}")
            sequence_number = append_record(
                open_shards[position], record["PartitionKey"], record["Data"], record.get("ExplicitHashKey"), arrived
            )
            results.append({"SequenceNumber": str(sequence_number), "ShardId": ids[position]})
    heap_stored(len(records))
    return results
