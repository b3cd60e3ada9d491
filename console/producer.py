"""The embedded ordered producer: test records out fast, without ever reordering a partition key.

Batch mode (seed 001): a PutRecords request carries at most one record per partition key, and a
key has at most one record in flight across all concurrent requests, so a record that fails is
retried before any later record of its key is even sent — a partial failure cannot reorder a key.
Sequential mode: PutRecord, one record at a time per key, chaining SequenceNumberForOrdering.

Failures: per-record errors (FailedRecordCount / ErrorCode) are retried with exponential backoff
and jitter; ProvisionedThroughputExceeded also slows that shard (console.pacing). A request whose
outcome is unknown (timeout, dropped connection, server gone) is retried too, and every record in
it is counted as a possible duplicate — the verifier then reports how many really were.

Every acknowledgement's ShardId is checked against the shard map's prediction; a mismatch is
counted and reported to the map (`invalidate(seen_at, predicted_shard)`, seed 002).
Transport, shard map, key source and clocks are injected: this module does no I/O of its own.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from console.errors import (
    AccessDenied,
    BadInput,
    BackendError,
    LimitExceeded,
    NoCredentials,
    PlanRejected,
    ReadOnlyRefusal,
    StreamNotFound,
    Throttled,
)
from console.hashkeys import hash_key_for, validate_partition_key
from console.pacing import PacingLimits, ShardPacer, TokenBucket
from console.testrecords import MAX_RECORD_BYTES, encode_record, new_run_id, partition_key_for

MAX_BATCH_RECORDS = 500
MAX_BATCH_BYTES = 5 * 1024 * 1024
THROTTLE_ERROR = "ProvisionedThroughputExceededException"
# Errors after which retrying cannot help: the whole run stops with the error.
_FATAL = (BadInput, StreamNotFound, AccessDenied, NoCredentials, ReadOnlyRefusal, PlanRejected)
# "Slow down" for the whole request: nothing was written.
_THROTTLED = (Throttled, LimitExceeded)

PutRecords = Callable[[str, list[dict]], Awaitable[dict]]
PutRecord = Callable[..., Awaitable[dict]]


class ShardPredictor(Protocol):
    """What the producer needs of console.shardmap.ShardMap."""

    def predict(self, hash_key: int) -> str | None: ...

    def invalidate(self, seen_at: float, predicted_shard: str | None) -> Any: ...


@dataclass(frozen=True)
class ProducerSettings:
    keys: int
    records_per_key: int
    payload_bytes: int = 128
    mode: Literal["batch", "sequential"] = "batch"
    rate: float | None = None  # records/s for the whole run; None: as fast as the shards allow
    concurrency: int = 8  # requests in flight (batch) or keys in progress (sequential)
    explicit_hash_keys: Literal["none", "keytree"] = "none"
    pacing: bool = True  # per-shard pace at the shard limits below
    shard_records_per_second: float = 1000.0
    shard_bytes_per_second: float = 1024.0 * 1024.0
    max_batch_records: int = MAX_BATCH_RECORDS
    max_batch_bytes: int = MAX_BATCH_BYTES
    retry_base: float = 0.05  # seconds; doubles per attempt of the same record
    retry_cap: float = 2.0
    give_up_after: float = 120.0  # seconds of retrying one record before the key is abandoned
    one_record_per_key: bool = True  # False only to prove, in tests, that the rule is what keeps order
    run_id: str = ""

    def validated(self) -> "ProducerSettings":
        """Check the numbers (BadInput, one line, for the CLI and the panel) and fill in a run id."""
        def whole(name: str, value: Any, low: int, high: int) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise BadInput(f"{name} must be a whole number from {low} to {high}; got {value!r}")

        whole("keys", self.keys, 1, 1_000_000)
        whole("records per key", self.records_per_key, 1, 1_000_000)
        whole("concurrency", self.concurrency, 1, 256)
        whole("batch size", self.max_batch_records, 1, MAX_BATCH_RECORDS)
        whole("batch bytes", self.max_batch_bytes, 1024, MAX_BATCH_BYTES)
        run_id = self.run_id or new_run_id()
        key = partition_key_for(run_id, self.keys - 1)
        validate_partition_key(key)
        largest = MAX_RECORD_BYTES - len(key.encode())
        whole("payload bytes", self.payload_bytes, 0, largest)
        if self.mode not in ("batch", "sequential"):
            raise BadInput(f"mode must be batch or sequential; got {self.mode!r}")
        if self.explicit_hash_keys not in ("none", "keytree"):
            raise BadInput(f"explicit hash keys must come from 'none' or 'keytree'; got {self.explicit_hash_keys!r}")
        if self.rate is not None and not (isinstance(self.rate, (int, float)) and self.rate > 0):
            raise BadInput(f"rate must be a positive number of records per second; got {self.rate!r}")
        return replace(self, run_id=run_id)

    @property
    def total(self) -> int:
        return self.keys * self.records_per_key


@dataclass(slots=True)
class Ack:
    """Where one record landed, as the put's response said."""

    shard_id: str
    sequence_number: str
    predicted: str | None  # the shard map's prediction when it was first sent
    sent_at: float  # epoch seconds, first send
    acked_at: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class ShardMismatch:
    key: str
    seq: int
    predicted: str
    actual: str


@dataclass(frozen=True)
class ShardProgress:
    acknowledged: int
    records_per_second: float
    throttled: int
    pace: float  # fraction of the shard limit the pacer allows right now


@dataclass(frozen=True)
class ProducerProgress:
    """A snapshot for progress bars: totals, and per shard what was acknowledged and how fast."""

    run_id: str
    total: int
    sent: int
    acknowledged: int
    retries: int
    throttled: int
    possible_duplicates: int
    failed: int
    shard_mismatches: int
    elapsed: float
    records_per_second: float
    shards: dict[str, ShardProgress]
    done: bool = False

    @property
    def fraction(self) -> float:
        return self.acknowledged / self.total if self.total else 1.0


@dataclass
class ProduceResult:
    """Everything the verifier and the reports need to know about a finished run."""

    settings: ProducerSettings
    stream: str
    started_at: float  # epoch seconds
    finished_at: float
    sent: int = 0
    acks: dict[tuple[str, int], Ack] = field(default_factory=dict)
    retries: int = 0
    throttled: int = 0
    possible_duplicates: int = 0
    failed: list[tuple[str, int, str]] = field(default_factory=list)  # (key, seq, last error)
    abandoned: int = 0  # records never sent because an earlier one of their key failed for good
    mismatches: list[ShardMismatch] = field(default_factory=list)
    mismatch_count: int = 0
    max_in_flight_per_key: int = 0
    # For the verifier: where an unknown-outcome attempt could have landed (predicted shard, or None
    # when there was no prediction) -> epoch time of the earliest such attempt.
    unknown_outcomes: dict[str | None, float] = field(default_factory=dict)
    # Per shard: the smallest acknowledged sequence number, and when that ack was received.
    first_acks: dict[str, tuple[int, float]] = field(default_factory=dict)
    explicit_hash_keys: dict[str, int] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    @property
    def acknowledged(self) -> int:
        return len(self.acks)

    @property
    def elapsed(self) -> float:
        return max(1e-9, self.finished_at - self.started_at)

    def to_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "stream": self.stream,
            "mode": self.settings.mode,
            "keys": self.settings.keys,
            "records_per_key": self.settings.records_per_key,
            "payload_bytes": self.settings.payload_bytes,
            "sent": self.sent,
            "acknowledged": self.acknowledged,
            "retries": self.retries,
            "throttled": self.throttled,
            "possible_duplicates": self.possible_duplicates,
            "failed": len(self.failed),
            "abandoned": self.abandoned,
            "shard_mismatches": self.mismatch_count,
            "seconds": round(self.elapsed, 3),
            "records_per_second": round(self.acknowledged / self.elapsed, 1),
        }


@dataclass(slots=True)
class _Pending:
    """One record on its way: built once, resent byte for byte until acknowledged."""

    key: "_KeyState"
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
class _KeyState:
    name: str
    hash_key: int
    explicit_hash_key: int | None
    name_bytes: int = 0  # UTF-8 length of the name (counts toward request sizes)
    next_seq: int = 0
    pending: deque = field(default_factory=deque)  # built but unacknowledged, in key order
    in_flight: int = 0
    queued: bool = False  # in the ready queue
    learned_shard: str | None = None  # from the last ack, for pacing without a shard map
    last_sequence_number: str | None = None  # sequential mode's SequenceNumberForOrdering
    abandoned: bool = False


ProgressCallback = Callable[[ProducerProgress], None]


class OrderedProducer:
    """Produce one run of test records. Construct, then `await run()` once."""

    def __init__(self, stream: str, settings: ProducerSettings, *,
                 put_records: PutRecords | None = None,
                 put_record: PutRecord | None = None,
                 shard_map: ShardPredictor | None = None,
                 explicit_hash_key_source: Callable[[int], Sequence[int]] | None = None,
                 on_progress: ProgressCallback | None = None,
                 progress_interval: float = 0.25,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 map_clock: Callable[[], float] | None = None) -> None:
        self.settings = settings = settings.validated()
        if settings.mode == "batch" and put_records is None:
            raise BadInput("batch mode needs a put_records transport")
        if settings.mode == "sequential" and put_record is None:
            raise BadInput("sequential mode needs a put_record transport")
        self.stream = stream
        self._put_records = put_records
        self._put_record = put_record
        self._map = shard_map
        # invalidate(seen_at) compares with the map's own clock (ShardMap.now()) when it has one.
        self._map_clock = map_clock or getattr(shard_map, "now", None) or clock
        self._on_progress = on_progress
        self._progress_interval = progress_interval
        self._clock = clock
        self._wall = wall_clock
        self._pacer = ShardPacer(PacingLimits(settings.shard_records_per_second, settings.shard_bytes_per_second,
                                              enabled=settings.pacing))
        self._rate = TokenBucket(settings.rate, burst=max(1.0, settings.rate / 10), now=clock()) if settings.rate else None
        self._keys = self._make_keys(explicit_hash_key_source)
        self.result = ProduceResult(settings, stream, started_at=wall_clock(), finished_at=wall_clock())
        self.result.explicit_hash_keys = {k.name: k.explicit_hash_key for k in self._keys
                                          if k.explicit_hash_key is not None}
        self._shard_acks: dict[str, int] = {}
        self._last_progress = (0.0, 0, {})  # (time, acked, per-shard acked) at the last report
        self._next_report = 0.0
        self._started = 0.0
        self._ran = False

    # -- set-up ---------------------------------------------------------------------------------

    def _make_keys(self, source: Callable[[int], Sequence[int]] | None) -> list[_KeyState]:
        settings = self.settings
        explicit: Sequence[int | None] = [None] * settings.keys
        if settings.explicit_hash_keys == "keytree":
            if source is None:
                source = keytree_hash_keys
            explicit = list(source(settings.keys))
            if len(explicit) != settings.keys:
                raise BadInput(f"the key tree handed out {len(explicit)} hash keys for {settings.keys} keys")
        keys = []
        for index in range(settings.keys):
            name = partition_key_for(settings.run_id, index)
            keys.append(_KeyState(name, hash_key_for(name, explicit[index]), explicit[index], len(name.encode())))
        return keys

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> ProduceResult:
        if self._ran:
            raise RuntimeError("an OrderedProducer runs once")
        self._ran = True
        self._started = self._clock()
        self.result.started_at = self._wall()
        self._last_progress = (self._started, 0, {})
        try:
            if self.settings.mode == "batch":
                await self._run_batches()
            else:
                await self._run_sequential()
        finally:
            self.result.finished_at = self._wall()
            self._report(force=True, done=True)
        return self.result

    # -- batch mode -----------------------------------------------------------------------------

    async def _run_batches(self) -> None:
        ready: deque[_KeyState] = deque(self._keys)
        for key in self._keys:
            key.queued = True
        delayed: list[tuple[float, int, _KeyState]] = []  # (due, tie-breaker, key): backing off
        tasks: set[asyncio.Task] = set()
        wake = asyncio.Event()
        fatal: list[BaseException] = []
        counter = 0

        def requeue(key: _KeyState, due: float) -> None:
            nonlocal counter
            if key.queued or key.abandoned or not self._has_work(key):
                return
            if due > self._clock():
                counter += 1
                heapq.heappush(delayed, (due, counter, key))
            else:
                key.queued = True
                ready.append(key)

        async def send(batch: list[_Pending]) -> None:
            try:
                await self._send_batch(batch, requeue)
            except BaseException as error:  # noqa: BLE001 - handed to the loop below, which re-raises
                fatal.append(error)
            finally:
                # Free the slot now, not in a done-callback a loop turn later, so the next batch goes at once.
                tasks.discard(asyncio.current_task())
                wake.set()

        try:
            while not fatal:
                now = self._clock()
                while delayed and delayed[0][0] <= now:
                    key = heapq.heappop(delayed)[2]
                    if not key.queued and self._has_work(key):
                        key.queued = True
                        ready.append(key)
                wait_hint = None
                while len(tasks) < self.settings.concurrency and ready:
                    batch, wait_hint = self._build_batch(ready, now)
                    if not batch:
                        break
                    tasks.add(asyncio.create_task(send(batch)))
                if not tasks and not ready and not delayed:
                    break
                self._report()
                timeout = self._progress_interval
                if delayed:
                    timeout = min(timeout, delayed[0][0] - now)
                if wait_hint is not None and len(tasks) < self.settings.concurrency:
                    timeout = min(timeout, wait_hint)
                wake.clear()
                if tasks or timeout > 0:
                    try:
                        await asyncio.wait_for(wake.wait(), max(timeout, 0.001))
                    except TimeoutError:
                        pass
        finally:
            # Only a failure or a cancelled run leaves requests in flight: stop them with it.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if fatal:
            raise fatal[0]

    def _has_work(self, key: _KeyState) -> bool:
        return not key.abandoned and (bool(key.pending) or key.next_seq < self.settings.records_per_key)

    def _head(self, key: _KeyState) -> _Pending | None:
        """The key's first record not in a request, built on first use. Ordered mode only asks when
        nothing of the key is in flight, so this is the oldest unacknowledged record."""
        for record in key.pending:
            if not record.in_request:
                return record
        if key.next_seq >= self.settings.records_per_key:
            return None
        sent_at = self._wall()
        data = encode_record(self.settings.run_id, key.name, key.next_seq, sent_at, self.settings.payload_bytes)
        record = _Pending(key, key.next_seq, data, sent_at, self._clock(), size=len(data) + key.name_bytes)
        key.next_seq += 1
        key.pending.append(record)
        return record

    def _has_untaken(self, key: _KeyState) -> bool:
        return not key.abandoned and (key.next_seq < self.settings.records_per_key
                                      or any(not record.in_request for record in key.pending))

    def _prediction(self, key: _KeyState) -> tuple[str | None, str | None]:
        """(the shard map's prediction, the shard to pace against: the prediction or the last ack's)."""
        predicted = self._map.predict(key.hash_key) if self._map is not None else None
        return predicted, predicted or key.learned_shard

    def _predict(self, key: _KeyState) -> str | None:
        return self._prediction(key)[1]

    def _take(self, record: _Pending, predicted: str | None) -> None:
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

    def _build_batch(self, ready: deque, now: float) -> tuple[list[_Pending], float | None]:
        """Take records from ready keys, at most one per key (unless the rule is switched off), within
        the request limits and the pace. Keys the pace turns away keep their place in the queue."""
        settings = self.settings
        batch: list[_Pending] = []
        nbytes = 0
        held: list[_KeyState] = []
        wait_hint: float | None = None
        while ready and len(batch) < settings.max_batch_records:
            key = ready.popleft()
            key.queued = False
            if key.abandoned:
                continue
            record = self._head(key)
            if record is None:
                continue
            if nbytes + record.size > settings.max_batch_bytes and batch:
                key.queued = True
                ready.appendleft(key)
                break
            if self._rate is not None and not self._rate.try_take(1, now):
                wait_hint = self._rate.wait_time(1, now)
                key.queued = True
                ready.appendleft(key)
                break
            predicted, shard = self._prediction(key)
            if not self._pacer.try_take(shard, record.size, now):
                if self._rate is not None:
                    self._rate.tokens += 1
                hint = self._pacer.wait_time(shard, record.size, now)
                wait_hint = hint if wait_hint is None else min(wait_hint, hint)
                held.append(key)
                continue
            self._take(record, predicted)
            batch.append(record)
            nbytes += record.size
            if not settings.one_record_per_key and self._has_untaken(key):
                # The naive batcher takes the key's next record too, straight away.
                key.queued = True
                ready.appendleft(key)
        for key in reversed(held):
            key.queued = True
            ready.appendleft(key)
        return batch, wait_hint

    async def _send_batch(self, batch: list[_Pending], requeue: Callable[[_KeyState, float], None]) -> None:
        entries = []
        for record in batch:
            entry = {"Data": record.data, "PartitionKey": record.key.name}
            if record.key.explicit_hash_key is not None:
                entry["ExplicitHashKey"] = str(record.key.explicit_hash_key)
            entries.append(entry)
        sent_wall = self._wall()
        try:
            response = await self._put_records(self.stream, entries)  # type: ignore[misc]
        except _FATAL:
            raise
        except _THROTTLED as error:
            now = self._clock()
            for shard in {self._predict(r.key) for r in batch}:
                self._pacer.throttled(shard, now)
            self.result.throttled += len(batch)
            self._retry_all(batch, str(error), requeue, outcome_known=True, sent_wall=sent_wall)
            return
        except (BackendError, OSError, TimeoutError) as error:
            self._retry_all(batch, str(error), requeue, outcome_known=False, sent_wall=sent_wall)
            return
        now, wall = self._clock(), self._wall()
        results = response.get("Records") or []
        if len(results) != len(batch):
            # A malformed answer says nothing trustworthy about any record in it.
            self._retry_all(batch, f"PutRecords answered {len(results)} results for {len(batch)} records",
                            requeue, outcome_known=False, sent_wall=sent_wall)
            return
        failures: list[tuple[_Pending, str]] = []
        for record, outcome in zip(batch, results):
            code = outcome.get("ErrorCode")
            if code:
                if code == THROTTLE_ERROR:
                    self._pacer.throttled(self._predict(record.key), now)
                    self.result.throttled += 1
                failures.append((record, f"{code}: {outcome.get('ErrorMessage', '')}".rstrip(": ")))
            else:
                self._acknowledge(record, outcome["ShardId"], outcome["SequenceNumber"], now, wall)
                self._pacer.succeeded(outcome["ShardId"], now)
        self._retry(failures, requeue)
        failed_ids = {id(record) for record, _ in failures}
        for record in batch:
            if id(record) not in failed_ids:
                requeue(record.key, now)

    def _acknowledge(self, record: _Pending, shard_id: str, sequence_number: str, now: float, wall: float) -> None:
        key = record.key
        key.in_flight -= 1
        record.in_request = False
        # Acks come back in key order: only one in flight (ordered) or FIFO per request (naive).
        try:
            key.pending.remove(record)
        except ValueError:  # pragma: no cover - a record is acknowledged once
            pass
        key.learned_shard = shard_id
        key.last_sequence_number = sequence_number
        result = self.result
        result.acks[(key.name, record.seq)] = Ack(shard_id, sequence_number, record.first_predicted or record.predicted,
                                                  record.sent_at, wall)
        self._shard_acks[shard_id] = self._shard_acks.get(shard_id, 0) + 1
        number = int(sequence_number)
        first = result.first_acks.get(shard_id)
        if first is None or number < first[0]:
            result.first_acks[shard_id] = (number, wall)
        if record.predicted is not None and record.predicted != shard_id:
            result.mismatch_count += 1
            if len(result.mismatches) < 100:
                result.mismatches.append(ShardMismatch(key.name, record.seq, record.predicted, shard_id))
            self._invalidate(record.predicted)

    def _invalidate(self, predicted: str) -> None:
        if self._map is None:
            return
        outcome = self._map.invalidate(self._map_clock(), predicted)
        if inspect.isawaitable(outcome):
            asyncio.ensure_future(outcome)

    def _retry_all(self, batch: list[_Pending], reason: str, requeue, *, outcome_known: bool, sent_wall: float) -> None:
        if not outcome_known:
            # The request may have been written: each record may now exist twice. Say so.
            self.result.possible_duplicates += len(batch)
            unknown = self.result.unknown_outcomes
            for record in batch:
                where = record.predicted
                unknown[where] = min(unknown.get(where, sent_wall), sent_wall)
        self._retry([(record, reason) for record in batch], requeue)

    def _retry(self, failures: list[tuple[_Pending, str]], requeue) -> None:
        """Put failed records back at the head of their key (in key order) after a backoff."""
        if not failures:
            return
        now = self._clock()
        settings = self.settings
        self.result.retries += len(failures)
        due_by_key: dict[int, tuple[_KeyState, float]] = {}
        for record, reason in failures:
            key = record.key
            key.in_flight -= 1
            record.in_request = False
            if now - record.first_try > settings.give_up_after:
                self._abandon(key, record, reason)
                continue
            backoff = min(settings.retry_cap, settings.retry_base * 2 ** (record.attempts - 1))
            due = now + backoff * random.uniform(0.5, 1.0)
            previous = due_by_key.get(id(key))
            due_by_key[id(key)] = (key, max(due, previous[1]) if previous else due)
        for key, due in due_by_key.values():
            if key.in_flight == 0 or not settings.one_record_per_key:
                requeue(key, due if settings.one_record_per_key else now)

    def _abandon(self, key: _KeyState, record: _Pending, reason: str) -> None:
        """Retrying for too long: fail the record and stop the key (later records would break order)."""
        if key.abandoned:
            return
        key.abandoned = True
        self.result.failed.append((key.name, record.seq, reason))
        self.result.abandoned += self.settings.records_per_key - key.next_seq
        key.pending.clear()
        key.next_seq = self.settings.records_per_key

    # -- sequential mode ------------------------------------------------------------------------

    async def _run_sequential(self) -> None:
        queue: deque[_KeyState] = deque(self._keys)

        async def worker() -> None:
            while queue:
                await self._produce_key_sequentially(queue.popleft())

        async def reporter() -> None:
            while True:
                await asyncio.sleep(self._progress_interval)
                self._report()

        report_task = asyncio.create_task(reporter())
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.settings.concurrency, len(self._keys))):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        finally:
            report_task.cancel()

    async def _produce_key_sequentially(self, key: _KeyState) -> None:
        settings = self.settings
        while self._has_work(key):
            record = self._head(key)
            while True:
                predicted, shard = self._prediction(key)
                await self._wait_for_pace(shard, record.size)
                self._take(record, predicted)
                sent_wall = self._wall()
                try:
                    response = await self._put_record(  # type: ignore[misc]
                        self.stream, record.data, key.name, explicit_hash_key=key.explicit_hash_key,
                        sequence_number_for_ordering=key.last_sequence_number)
                except _FATAL:
                    raise
                except (BackendError, OSError, TimeoutError) as error:
                    throttled = isinstance(error, _THROTTLED)
                    if throttled:
                        self._pacer.throttled(shard, self._clock())
                        self.result.throttled += 1
                    self._retry_all([record], str(error), lambda *_: None, outcome_known=throttled, sent_wall=sent_wall)
                    if key.abandoned:
                        return
                    backoff = min(settings.retry_cap, settings.retry_base * 2 ** (record.attempts - 1))
                    await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
                    continue
                now, wall = self._clock(), self._wall()
                self._acknowledge(record, response["ShardId"], response["SequenceNumber"], now, wall)
                self._pacer.succeeded(response["ShardId"], now)
                break

    async def _wait_for_pace(self, shard: str | None, size: int) -> None:
        while True:
            now = self._clock()
            if self._rate is not None and not self._rate.try_take(1, now):
                await asyncio.sleep(self._rate.wait_time(1, now))
                continue
            if self._pacer.try_take(shard, size, now):
                return
            if self._rate is not None:
                self._rate.tokens += 1
            await asyncio.sleep(max(0.001, self._pacer.wait_time(shard, size, now)))

    # -- progress -------------------------------------------------------------------------------

    def _report(self, *, force: bool = False, done: bool = False) -> None:
        if self._on_progress is None:
            return
        now = self._clock()
        if not force and now < self._next_report:
            return
        self._next_report = now + self._progress_interval
        self._on_progress(self.progress(now, done=done))

    def progress(self, now: float | None = None, *, done: bool = False) -> ProducerProgress:
        now = self._clock() if now is None else now
        last_time, last_acked, last_shards = self._last_progress
        span = max(now - last_time, 1e-6)
        result = self.result
        shards = {
            shard: ShardProgress(count, (count - last_shards.get(shard, 0)) / span,
                                 self._pacer.throttle_count(shard), self._pacer.scale_of(shard))
            for shard, count in sorted(self._shard_acks.items())
        }
        progress = ProducerProgress(
            run_id=self.settings.run_id, total=self.settings.total, sent=result.sent,
            acknowledged=result.acknowledged, retries=result.retries, throttled=result.throttled,
            possible_duplicates=result.possible_duplicates, failed=len(result.failed),
            shard_mismatches=result.mismatch_count, elapsed=now - self._started,
            records_per_second=(result.acknowledged - last_acked) / span, shards=shards, done=done)
        self._last_progress = (now, result.acknowledged, dict(self._shard_acks))
        return progress


def keytree_hash_keys(count: int) -> list[int]:
    """The first `count` keys an empty key tree hands out (seed 000): 2**127, 2**126, 3*2**126, ..."""
    try:
        from console.keytree import KeyTree
    except ImportError as error:  # pragma: no cover - the key tree ships with the package
        raise BadInput(f"the key tree is not available: {error}") from None
    return [int(key) for key in KeyTree.rehydrate([]).next_keys(count)]
