"""KPL aggregation for the ordered producer: many user records in one Kinesis record, in AWS's format
(magic 0xF3899AC2, the `AggregatedRecord` protobuf, MD5 of the message), as KPL and aws-kinesis-agg
write it and every KCL, Lambda and aws-kinesis-agg deaggregator reads it.

`AggregateBuilder` encodes the protobuf directly: two tables and a list of records is all the format
has, and writing its few fields by hand costs a fraction of building protobuf objects record by
record. It writes fields in field-number order, as protobuf serializes them, so its bytes equal
aws-kinesis-agg's `AggRecord` for the same records (tests/produce/test_aggregate.py checks that, and
the round trip through aws-kinesis-agg's deaggregator).

`AggregatingProducer` is the ordered producer with KPL's grouping: user records are packed by the
shard the map predicts for them into aggregates placed by the first record's hash key (so the
aggregate lands where its records would have), at most `max_aggregate_bytes` each. The per-key
promise is unchanged: a key's records sit in one aggregate of one request at a time, and the key's
next records wait until that aggregate is acknowledged, so a retry can never reorder a key. Pacing
counts what a shard's limits count: one Kinesis record per aggregate and its bytes. An aggregate
acknowledged on another shard than predicted (the shard split or merged meanwhile) is, as KPL does,
failed and its records re-predicted and re-aggregated on the retry; the map is invalidated, and the
copy that did land counts as possible duplicates (the verifier finds it, and judges order by first
copies).
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aws_kinesis_agg import MAGIC

from console.errors import BadInput
from console.produce.ledger import PendingRecord, Requeue
from console.produce.producer import REFILL_SECONDS, THROTTLE_ERROR, Handoff, OrderedProducer
from console.produce.settings import ProducerSettings
from console.topology.model import put_records_entry

DIGEST_BYTES = 16
FRAME_BYTES = len(MAGIC) + DIGEST_BYTES
# KPL's default AggregationMaxSize: an aggregate of this size is quick to build, send and retry.
DEFAULT_MAX_AGGREGATE_BYTES = 51_200
MIN_AGGREGATE_BYTES = 1024
MAX_RECORD_LIMIT = 10 * 1024 * 1024  # the largest record size a stream may allow (MaxRecordSizeInKiB)

_PARTITION_KEY_TAG, _HASH_KEY_TAG, _RECORD_TAG = b"\x0a", b"\x12", b"\x1a"
_INDEX_TAG, _HASH_INDEX_TAG, _DATA_TAG = b"\x08", b"\x10", b"\x1a"


_SMALL_VARINTS = [bytes((value,)) for value in range(0x80)]


def varint(value: int) -> bytes:
    """Protobuf's base-128 varint."""
    if value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class KeySlot:
    """How records of one key go into one aggregate: the index fields each of its records starts with,
    and the table entries its first record adds (empty once the key is in the tables)."""

    __slots__ = ("key", "explicit_hash_key", "prefix", "entries")

    def __init__(self, key: str, explicit_hash_key: str | None, prefix: bytes, entries: bytes) -> None:
        self.key, self.explicit_hash_key, self.prefix, self.entries = key, explicit_hash_key, prefix, entries

    def piece(self, data: bytes) -> bytes:
        """One user record as the `records` field of the AggregatedRecord message."""
        size = len(data)
        body = len(self.prefix) + (2 if size < 0x80 else 1 + len(varint(size))) + size
        return b"".join((_RECORD_TAG, varint(body), self.prefix, _DATA_TAG, varint(size), data))


class AggregateBuilder:
    """One KPL aggregate being filled, record by record: `slot(key)` once per key, then for each
    record `slot.piece(data)`, whose length (plus the slot's `entries` for a key new to this aggregate)
    is what the aggregate grows by, and `append()`. `encode()` gives the Kinesis record's data; `size`
    is always len(encode()). `growth()` and `add()` do the same for a single record."""

    __slots__ = ("_keys", "_hash_keys", "_key_parts", "_hash_key_parts", "_record_parts", "size", "count")

    def __init__(self) -> None:
        self._keys: dict[str, int] = {}
        self._hash_keys: dict[str, int] = {}
        self._key_parts: list[bytes] = []
        self._hash_key_parts: list[bytes] = []
        self._record_parts: list[bytes] = []
        self.size = FRAME_BYTES
        self.count = 0

    @staticmethod
    def _table_entry(tag: bytes, text: str) -> bytes:
        raw = text.encode("utf-8")
        return tag + varint(len(raw)) + raw

    def slot(self, key: str, explicit_hash_key: str | None = None) -> KeySlot:
        entries = b""
        index = self._keys.get(key)
        if index is None:
            index = len(self._keys)
            entries = self._table_entry(_PARTITION_KEY_TAG, key)
        prefix = _INDEX_TAG + varint(index)
        if explicit_hash_key is not None:
            hash_index = self._hash_keys.get(explicit_hash_key)
            if hash_index is None:
                hash_index = len(self._hash_keys)
                entries += self._table_entry(_HASH_KEY_TAG, explicit_hash_key)
            prefix += _HASH_INDEX_TAG + varint(hash_index)
        return KeySlot(key, explicit_hash_key, prefix, entries)

    def append(self, slot: KeySlot, piece: bytes) -> None:
        """Add a record (`slot.piece(data)`); the first of a key new here puts the key in the tables."""
        if slot.entries:
            self.size += len(slot.entries)
            if slot.key not in self._keys:
                self._keys[slot.key] = len(self._keys)
                self._key_parts.append(self._table_entry(_PARTITION_KEY_TAG, slot.key))
            hash_key = slot.explicit_hash_key
            if hash_key is not None and hash_key not in self._hash_keys:
                self._hash_keys[hash_key] = len(self._hash_keys)
                self._hash_key_parts.append(self._table_entry(_HASH_KEY_TAG, hash_key))
            slot.entries = b""
        self.size += len(piece)
        self._record_parts.append(piece)
        self.count += 1

    def growth(self, key: str, data: bytes, explicit_hash_key: str | None = None) -> int:
        """Bytes the aggregate grows by if this record is added."""
        slot = self.slot(key, explicit_hash_key)
        return len(slot.entries) + len(slot.piece(data))

    def add(self, key: str, data: bytes, explicit_hash_key: str | None = None) -> None:
        slot = self.slot(key, explicit_hash_key)
        self.append(slot, slot.piece(data))

    def encode(self) -> bytes:
        message = b"".join((*self._key_parts, *self._hash_key_parts, *self._record_parts))
        encoded: bytes = MAGIC + message + hashlib.md5(message).digest()  # MAGIC comes from an untyped library
        return encoded


def check_max_aggregate_bytes(value: int, record_limit: int, what: str = "the stream's record size limit") -> int:
    """--max-aggregate-bytes within [MIN_AGGREGATE_BYTES, the record size limit]; BadInput otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_AGGREGATE_BYTES <= value <= record_limit:
        raise BadInput(
            f"--max-aggregate-bytes must be a whole number from {MIN_AGGREGATE_BYTES:,} to "
            f"{record_limit:,} ({what}); got {value!r}"
        )
    return value


@dataclass(slots=True, eq=False)
class PendingAggregate:
    """One aggregate of a request: its user records (in the order packed) and where it should land."""

    shard: str | None  # the shard paced against (the prediction, or the last ack's)
    predicted: str | None  # the shard map's prediction: what the ack is checked against
    partition_key: str
    hash_key: int
    key_bytes: int  # UTF-8 length of the partition key
    builder: AggregateBuilder = field(default_factory=AggregateBuilder)
    records: list[PendingRecord] = field(default_factory=list)

    @property
    def size(self) -> int:
        """What the shard limits count: data plus the outer partition key."""
        return self.builder.size + self.key_bytes

    def entry(self) -> dict[str, Any]:
        return put_records_entry(self.builder.encode(), self.partition_key, self.hash_key)


@dataclass
class AggregationStats:
    """What aggregation did in a run: Kinesis records acknowledged per shard, and re-aggregations."""

    max_aggregate_bytes: int
    kinesis_records: dict[str, int] = field(default_factory=dict)  # acknowledged aggregates per shard
    user_records: int = 0  # acknowledged user records
    wrong_shard: int = 0  # aggregates that landed off their prediction: re-predicted and re-aggregated

    def to_json(self, seconds: float) -> dict[str, Any]:
        total = sum(self.kinesis_records.values())
        seconds = max(seconds, 1e-9)
        return {
            "max_aggregate_bytes": self.max_aggregate_bytes,
            "kinesis_records": total,
            "user_records_per_kinesis_record": round(self.user_records / total, 2) if total else None,
            "kinesis_records_per_second": round(total / seconds, 1),
            "kinesis_records_per_second_by_shard": {
                shard: round(count / seconds, 1) for shard, count in sorted(self.kinesis_records.items())
            },
            "re_aggregated": self.wrong_shard,
        }


def aggregation_line(aggregation: dict[str, Any] | None) -> str | None:
    """One line of a run summary about its aggregation (from ProduceResult.to_json's "aggregation")."""
    if not aggregation or not aggregation["kinesis_records"]:
        return None
    line = (
        f"aggregated: {aggregation['kinesis_records']:,} KPL records of up to {aggregation['max_aggregate_bytes']:,} "
        f"bytes, {aggregation['user_records_per_kinesis_record']} user records each, "
        f"{aggregation['kinesis_records_per_second']:,} Kinesis records/s"
    )
    if aggregation["re_aggregated"]:
        line += f"; {aggregation['re_aggregated']} landed off their prediction and were re-aggregated"
    return line


class AggregatingProducer(OrderedProducer):
    """The ordered producer, sending KPL aggregates grouped by predicted shard. Batch mode only."""

    def __init__(
        self,
        stream: str,
        settings: ProducerSettings,
        *,
        max_aggregate_bytes: int = DEFAULT_MAX_AGGREGATE_BYTES,
        record_limit: int = MAX_RECORD_LIMIT,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream, settings, **kwargs)
        if self.settings.mode != "batch":
            raise BadInput("aggregation sends PutRecords requests: use batch mode")
        self.max_aggregate_bytes = check_max_aggregate_bytes(max_aggregate_bytes, record_limit)
        self.aggregation = AggregationStats(self.max_aggregate_bytes)
        self.result.aggregation = self.aggregation

    # An aggregate stands where the base class has a record: its own _send_batch takes these.
    def _build_batch(self, ready: deque[Any], now: float) -> tuple[list[PendingAggregate], float | None]:  # type: ignore[override]
        """Pack ready keys' records into one open aggregate per predicted shard (a new one when it is
        full), within the request limits (500 Kinesis records, 5 MiB) and the pace. A key's records go
        into one aggregate, as many as fit; the key comes back to `ready` once they are acknowledged."""
        settings, parked, limit, ledger, pacer = (
            self.settings,
            self._parked,
            self.max_aggregate_bytes,
            self._ledger,
            self._pacer,
        )
        paced = pacer.limits.enabled
        aggregates: list[PendingAggregate] = []
        open_by_shard: dict[str | None, PendingAggregate] = {}
        request_bytes = 0
        newly_parked: dict[str, int] = {}
        wait_hint: float | None = None
        stop = False
        at = (self._wall(), now)  # the request's time: every record in it is handed to it at once
        while not stop and (item := self._pop_ready(ready, at)) is not None:
            key, first_record = item
            record: PendingRecord | None = first_record
            predicted, shard = self._prediction(key)
            waiting = parked.get(shard) if shard is not None else None
            if waiting is not None:
                key.queued = True
                waiting.append(key)
                continue
            name, hash_text = key.name, None if key.explicit_hash_key is None else str(key.explicit_hash_key)
            # Nothing of a ready key is in flight: its pending records (retries) all wait, in key order.
            backlog = iter(list(key.pending)[1:])
            aggregate = open_by_shard.get(shard)
            slot = aggregate.builder.slot(name, hash_text) if aggregate is not None else None
            taken = 0
            while record is not None:
                data = record.data
                piece = slot.piece(data) if slot is not None else b""
                growth = len(piece) + len(slot.entries) if slot is not None else 0
                if aggregate is None or aggregate.builder.size + aggregate.key_bytes + growth > limit:
                    if taken:  # the key's next records wait for this aggregate: one in flight per key
                        break
                    # A new Kinesis record on this shard: the request's and the shard's limits count it.
                    if (
                        len(aggregates) >= settings.max_batch_records
                        or request_bytes + FRAME_BYTES + key.name_bytes + record.size > settings.max_batch_bytes
                    ):
                        stop = True
                        break
                    if not pacer.try_take(shard, FRAME_BYTES + key.name_bytes, now):
                        newly_parked[shard] = FRAME_BYTES + record.size  # type: ignore[index]
                        break
                    aggregate = open_by_shard[shard] = PendingAggregate(
                        shard, predicted, name, key.hash_key, key.name_bytes
                    )
                    aggregates.append(aggregate)
                    request_bytes += aggregate.size
                    slot = aggregate.builder.slot(name, hash_text)
                    piece = slot.piece(data)
                    growth = len(piece) + len(slot.entries)
                    if aggregate.size + growth > limit:
                        raise BadInput(
                            f"a record of {record.size:,} bytes does not fit an aggregate of at most "
                            f"{limit:,} bytes: raise --max-aggregate-bytes"
                        )
                if request_bytes + growth > settings.max_batch_bytes:
                    stop = True
                    break
                if paced and not pacer.take_bytes(shard, growth, now):
                    if not taken:
                        newly_parked[shard] = growth  # type: ignore[index]
                    break
                if self._rate is not None and (rate_wait := self._take_rate(now)) is not None:
                    wait_hint = rate_wait
                    pacer.return_bytes(shard, growth)
                    stop = True
                    break
                aggregate.builder.append(slot, piece)  # type: ignore[arg-type]  # made with its aggregate above
                aggregate.records.append(record)
                request_bytes += growth
                ledger.take(record, predicted)
                taken += 1
                record = next(backlog, None) or ledger.build(key, at)
            if not taken:
                key.queued = True
                if shard in newly_parked:  # its shard's pace is spent: wait with the shard
                    parked.setdefault(shard, []).append(key)
                else:
                    ready.appendleft(key)
        for shard, size in newly_parked.items():
            due = now + pacer.wait_time(shard, size, now)
            heapq.heappush(self._unpark, (math.ceil(due / REFILL_SECONDS) * REFILL_SECONDS, shard))
        return [aggregate for aggregate in aggregates if aggregate.records], wait_hint

    async def _send_batch(  # type: ignore[override]
        self,
        batch: list[PendingAggregate],
        requeue: Requeue,
        handoff: Handoff,  # noqa: ARG002 - the producer's _send_batch signature
    ) -> None:
        """Aggregates are acknowledged as their answer comes (no handoff): an aggregate that landed off
        its prediction sends its records again, re-aggregated."""
        entries = [aggregate.entry() for aggregate in batch]
        records = [record for aggregate in batch for record in aggregate.records]
        response = await self._put(entries, records, lambda: {aggregate.shard for aggregate in batch}, requeue)
        if response is None:
            return
        now, wall = self._clock(), self._wall()
        failures: list[tuple[PendingRecord, str]] = []
        stats = self.aggregation
        for aggregate, outcome in zip(batch, response["Records"]):
            code = outcome.get("ErrorCode")
            if code:
                if code == THROTTLE_ERROR:
                    self._pacer.throttled(aggregate.shard, now)
                    self.result.throttled += len(aggregate.records)
                reason = f"{code}: {outcome.get('ErrorMessage', '')}".rstrip(": ")
                failures.extend((record, reason) for record in aggregate.records)
                continue
            shard_id = outcome["ShardId"]
            stats.kinesis_records[shard_id] = stats.kinesis_records.get(shard_id, 0) + 1
            if aggregate.predicted is not None and shard_id != aggregate.predicted:
                # Its records belong to shards the map no longer knows: re-predict and re-aggregate them,
                # as KPL does. The copy that landed stays in the stream.
                stats.wrong_shard += 1
                self.result.mismatch_count += 1
                self.result.possible_duplicates += len(aggregate.records)
                self._invalidate(aggregate.predicted)
                reason = f"aggregate predicted for {aggregate.predicted} landed on {shard_id}: re-aggregated"
                failures.extend((record, reason) for record in aggregate.records)
                continue
            self._ledger.acknowledge_all(aggregate.records, shard_id, outcome["SequenceNumber"], wall)
            stats.user_records += len(aggregate.records)
            self._pacer.succeeded(shard_id, now)
        self._ledger.retry(failures, requeue)
        failed = {id(record) for record, _ in failures}
        last = None
        for record in records:  # a key's records sit together: requeue each key once
            if record.key is not last and id(record) not in failed:
                last = record.key
                requeue(last, now)
