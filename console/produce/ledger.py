"""The producer's per-key bookkeeping: each partition key's queue of built but unacknowledged
records, what is in flight, and the run's counts (sent, acknowledged, retried, abandoned). Keeping
at most one record of a key in flight is what lets the producer never reorder a key; the requests
themselves are sent by console.produce.producer."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from console.produce.report import Ack, ProduceResult, ProgressMeter, ShardMismatch
from console.produce.settings import ProducerSettings
from console.produce.testrecords import encode_record


@dataclass(slots=True)
class PendingRecord:
    """One record on its way: built once, resent byte for byte until acknowledged."""

    key: KeyState
    seq: int
    data: bytes
    sent_at: float  # epoch
    first_try: float  # monotonic
    attempts: int = 0
    predicted: str | None = None  # at the latest attempt: what its ack is checked against
    # At the first attempt: a copy from any attempt lands there or on a descendant (reshards only
    # move a key's hash down the lineage), so this is what the verifier checks placement against.
    first_predicted: str | None = None
    in_request: bool = False
    size: int = 0  # what counts toward the request limits: data plus partition key


@dataclass(slots=True, eq=False)
class KeyState:
    name: str
    hash_key: int
    explicit_hash_key: int | None
    name_bytes: int = 0  # UTF-8 length of the name (counts toward request sizes)
    next_seq: int = 0
    pending: deque[PendingRecord] = field(default_factory=deque)  # built but unacknowledged, in key order
    in_flight: int = 0
    queued: bool = False  # in the ready queue
    learned_shard: str | None = None  # from the last ack, for pacing without a shard map
    last_sequence_number: str | None = None  # sequential mode's SequenceNumberForOrdering
    abandoned: bool = False
    record_count: int = 0  # how many records this key sends
    payloads: list[bytes] | None = None  # given records' data, in key order; None: generated test records
    send_key: bool = True  # False: a keyless record (AUTO stream), sent without PartitionKey; `name` is internal


# Put a key back in the send queue once `due` (monotonic seconds) has come.
Requeue = Callable[[KeyState, float], None]


class RecordLedger:
    """Every key's records from first build to acknowledgement, and the run's counts of them: what
    is sent, in flight, acknowledged, retried after a backoff or abandoned."""

    def __init__(
        self,
        settings: ProducerSettings,
        result: ProduceResult,
        meter: ProgressMeter,
        *,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        on_mismatch: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.result = result
        self._meter = meter
        self._clock = clock
        self._wall = wall_clock
        self._on_mismatch = on_mismatch  # an ack landed on another shard than predicted: tell the map

    def has_work(self, key: KeyState) -> bool:
        return not key.abandoned and (bool(key.pending) or key.next_seq < key.record_count)

    def head(self, key: KeyState, at: tuple[float, float] | None = None) -> PendingRecord | None:
        """The key's first record not in a request, built on first use (see build for `at`). Ordered
        mode only asks when nothing of the key is in flight, so this is the oldest unacknowledged record."""
        for record in key.pending:
            if not record.in_request:
                return record
        return self.build(key, at)

    def build(self, key: KeyState, at: tuple[float, float] | None = None) -> PendingRecord | None:
        """The key's next record, built now (None when it has no more); it joins the key's pending ones.
        `at`: (wall, monotonic) time of the request it is built for, read once for all its records."""
        if key.next_seq >= key.record_count:
            return None
        sent_at, first_try = at if at is not None else (self._wall(), self._clock())
        if key.payloads is not None:
            data = key.payloads[key.next_seq]
        else:
            data = encode_record(self.settings.run_id, key.name, key.next_seq, sent_at, self.settings.payload_bytes)
            if self.settings.encode is not None:
                data = self.settings.encode(data)
        record = PendingRecord(key, key.next_seq, data, sent_at, first_try, size=len(data) + key.name_bytes)
        key.next_seq += 1
        key.pending.append(record)
        return record

    def has_untaken(self, key: KeyState) -> bool:
        return not key.abandoned and (
            key.next_seq < key.record_count or any(not record.in_request for record in key.pending)
        )

    def take(self, record: PendingRecord, predicted: str | None) -> None:
        """The record goes into a request now."""
        if record.attempts == 0:
            self.result.sent += 1
            record.first_predicted = predicted
        record.attempts += 1
        record.in_request = True
        record.predicted = predicted
        key = record.key
        key.in_flight += 1
        if key.in_flight > self.result.max_in_flight_per_key:
            self.result.max_in_flight_per_key = key.in_flight

    def acknowledge(self, record: PendingRecord, shard_id: str, sequence_number: str, wall: float) -> None:
        """The put answered: record where the record landed and check it against the prediction."""
        self.release(record)
        self.record_ack(record, shard_id, sequence_number, wall)

    def release(self, record: PendingRecord) -> None:
        """The put answered for the record: it leaves its key, whose next record may go at once.
        Where it landed is written by record_ack, which must follow (acknowledge does both)."""
        key = record.key
        key.in_flight -= 1
        record.in_request = False
        # Acks come back in key order: only one in flight (ordered) or FIFO per request (naive).
        _unpend(key.pending, record)

    def record_ack(self, record: PendingRecord, shard_id: str, sequence_number: str, wall: float) -> None:
        """Where a released record landed, checked against the prediction."""
        key = record.key
        key.learned_shard = shard_id
        key.last_sequence_number = sequence_number
        result = self.result
        result.acks[(key.name, record.seq)] = Ack(
            shard_id, sequence_number, record.first_predicted or record.predicted, record.sent_at, wall
        )
        self._meter.count_ack(shard_id)
        number = int(sequence_number)  # inline, not _note_first: this runs once per record
        first = result.first_acks.get(shard_id)
        if first is None or number < first[0]:
            result.first_acks[shard_id] = (number, wall)
        if record.predicted is not None and record.predicted != shard_id:
            result.mismatch_count += 1
            if len(result.mismatches) < 100:
                result.mismatches.append(ShardMismatch(key.name, record.seq, record.predicted, shard_id))
            self._on_mismatch(record.predicted)

    def acknowledge_all(self, records: list[PendingRecord], shard_id: str, sequence_number: str, wall: float) -> None:
        """One put answered for several records of one Kinesis record (a KPL aggregate): all landed on
        `shard_id` at `sequence_number`, as predicted (the caller has checked the prediction)."""
        acks = self.result.acks
        # Records of one aggregate share where and when they landed; they were built together, so the
        # first one's send time stands for all (a record first sent elsewhere keeps its own Ack).
        first = records[0]
        predicted = first.first_predicted or first.predicted
        shared = Ack(shard_id, sequence_number, predicted, first.sent_at, wall)
        for record in records:
            key = record.key
            key.in_flight -= 1
            record.in_request = False
            _unpend(key.pending, record)
            key.learned_shard = shard_id
            key.last_sequence_number = sequence_number
            if (record.first_predicted or record.predicted) == predicted:
                acks[(key.name, record.seq)] = shared
            else:
                acks[(key.name, record.seq)] = Ack(
                    shard_id, sequence_number, record.first_predicted or record.predicted, record.sent_at, wall
                )
        self._meter.count_ack(shard_id, len(records))
        self._note_first(shard_id, sequence_number, wall)

    def _note_first(self, shard_id: str, sequence_number: str, wall: float) -> None:
        """Keep each shard's lowest acknowledged sequence number (where the verifier starts reading)."""
        number = int(sequence_number)
        first = self.result.first_acks.get(shard_id)
        if first is None or number < first[0]:
            self.result.first_acks[shard_id] = (number, wall)

    def retry_all(
        self, batch: list[PendingRecord], reason: str, requeue: Requeue, *, outcome_known: bool, sent_wall: float
    ) -> None:
        """The whole request failed: retry every record in it, counting possible duplicates when
        the request may have been written anyway."""
        if not outcome_known:
            # The request may have been written: each record may now exist twice. Say so.
            self.result.possible_duplicates += len(batch)
            self.result.last_unknown_sent = max(self.result.last_unknown_sent or sent_wall, sent_wall)
            unknown = self.result.unknown_outcomes
            for record in batch:
                where = record.predicted
                unknown[where] = min(unknown.get(where, sent_wall), sent_wall)
        self.retry([(record, reason) for record in batch], requeue)

    def retry(self, failures: list[tuple[PendingRecord, str]], requeue: Requeue) -> None:
        """Put failed records back at the head of their key (in key order) after a backoff."""
        if not failures:
            return
        now = self._clock()
        settings = self.settings
        self.result.retries += len(failures)
        due_by_key: dict[int, tuple[KeyState, float]] = {}
        for record, reason in failures:
            key = record.key
            key.in_flight -= 1
            record.in_request = False
            if now - record.first_try > settings.give_up_after:
                self._abandon(key, record, reason)
                continue
            due = now + settings.retry_delay(record.attempts)
            previous = due_by_key.get(id(key))
            due_by_key[id(key)] = (key, max(due, previous[1]) if previous else due)
        for key, due in due_by_key.values():
            if key.in_flight == 0 or not settings.one_record_per_key:
                requeue(key, due if settings.one_record_per_key else now)

    def refused(self, batch: list[PendingRecord], reason: str) -> None:
        """The server refused these records (not the connection, not a throttle): each is failed with
        the reason and its key stopped, since its later records would overtake it. Other keys go on."""
        for record in batch:
            record.key.in_flight -= 1
            record.in_request = False
            self._abandon(record.key, record, reason)

    def stop(self, keys: list[KeyState], reason: str) -> None:
        """The run ends now: every record sent but not acknowledged is failed with `reason`; what was
        never sent stays not attempted."""
        for key in keys:
            if key.abandoned:
                continue
            key.abandoned = True
            for record in key.pending:
                if record.attempts:
                    self.result.failed.append((key.name, record.seq, reason))
            key.pending.clear()

    def _abandon(self, key: KeyState, record: PendingRecord, reason: str) -> None:
        """Retrying for too long: fail the record and stop the key (later records would break order)."""
        if key.abandoned:
            return
        key.abandoned = True
        self.result.failed.append((key.name, record.seq, reason))
        self.result.abandoned += key.record_count - key.next_seq
        key.pending.clear()
        key.next_seq = key.record_count


def _unpend(pending: deque[PendingRecord], record: PendingRecord) -> None:
    """An acknowledged record leaves its key's pending ones: the first of them, as acks come in key order."""
    if pending and pending[0] is record:
        pending.popleft()
        return
    with contextlib.suppress(ValueError):  # pragma: no cover - a record is acknowledged once
        pending.remove(record)
