"""The embedded ordered producer: test records out fast, without ever reordering a partition key.

Batch mode: a PutRecords request carries at most one record per partition key, and a
key has at most one record in flight across all concurrent requests, so a record that fails is
retried before any later record of its key is even sent — a partial failure cannot reorder a key.
Sequential mode: PutRecord, one record at a time per key, chaining SequenceNumberForOrdering.

Failures: per-record errors (FailedRecordCount / ErrorCode) are retried with exponential backoff
and jitter; ProvisionedThroughputExceeded also slows that shard (console.produce.pacing). A request whose
outcome is unknown (timeout, dropped connection) is retried too, and every record in it is counted
as a possible duplicate — the verifier then reports how many really were. A refused connection sent
nothing: retried, not counted. A record the server refuses (invalid argument) is that record's
failure: its key stops, the others go on. The run itself stops early, with its partial report, only
when nothing can succeed any more: the stream or the credentials are gone, or the endpoint has not
answered a single request for `unanswered_give_up` seconds (one bound for the whole run).

Every acknowledgement's ShardId is checked against the shard map's prediction; a mismatch is
counted and reported to the map (`invalidate(seen_at, predicted_shard)`).
Transport, shard map, key source and clocks are injected: this module does no I/O of its own.

This module is the async driver. The settings live in console.produce.settings, a run's state and
set-up in console.produce.producer_state, the per-key bookkeeping in console.produce.ledger and
what a run reports in console.produce.report.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from console.errors import (
    AccessDenied,
    BackendError,
    BadInput,
    EndpointUnreachable,
    LimitExceeded,
    NoCredentials,
    PlanRejected,
    ReadOnlyRefusal,
    StreamNotFound,
    Throttled,
)
from console.produce.ledger import KeyState, PendingRecord, Requeue
from console.produce.producer_state import ProducerState
from console.produce.report import (
    ProduceResult,
    ProducerProgress,
)
from console.topology.model import put_records_entry
from console.words import counted

THROTTLE_ERROR = "ProvisionedThroughputExceededException"
# Errors after which no record can succeed: the run stops, with its partial report.
_FATAL = (StreamNotFound, AccessDenied, NoCredentials, ReadOnlyRefusal, PlanRejected)
# No answer at all: the request may or may not have reached the server (see EndpointUnreachable.request_sent).
_UNANSWERED = (EndpointUnreachable, OSError, TimeoutError)
# "Slow down" for the whole request: nothing was written.
_THROTTLED = (Throttled, LimitExceeded)
# When a pace runs dry, wait until it has this many seconds' worth of records again (or all that the
# waiting keys need), not for the next single token: the same throughput in a few full requests
# instead of a wake-up, a queue scan and a one-record request per token.
REFILL_SECONDS = 0.2

# Called by a request once its records have all landed and their keys are ready again (see _run_batches).
Handoff = Callable[[], Awaitable[None]]


class OrderedProducer(ProducerState):
    """Produce one run of test records. Construct, then `await run()` once."""

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> ProduceResult:
        if self._ran:
            raise RuntimeError("an OrderedProducer runs once")
        self._ran = True
        self._meter.start(self._clock())
        self._last_answer = self._clock()
        self.result.started_at = self._wall()
        try:
            if self.settings.mode == "batch":
                await self._run_batches()
            else:
                await self._run_sequential()
            if self.result.stopped:
                self._ledger.stop(self._keys, f"run stopped: {self.result.stopped}")
        finally:
            self.result.finished_at = self._wall()
            self._meter.report(force=True, done=True)
        return self.result

    # -- batch mode -----------------------------------------------------------------------------

    async def _run_batches(self) -> None:
        ready: deque[KeyState] = deque(self._keys)
        for key in self._keys:
            key.queued = True
        delayed: list[tuple[float, int, KeyState]] = []  # (due, tie-breaker, key): backing off
        tasks: set[asyncio.Task[Any]] = set()  # requests, in flight or settling their answer
        in_flight = 0  # requests not yet answered: what `concurrency` bounds
        wake = asyncio.Event()
        fatal: list[BaseException] = []
        counter = 0

        def requeue(key: KeyState, due: float) -> None:
            nonlocal counter
            if key.queued or key.abandoned or not self._ledger.has_work(key):
                return
            if due > self._clock():
                counter += 1
                heapq.heappush(delayed, (due, counter, key))
            else:
                key.queued = True
                ready.append(key)

        def fill(now: float) -> float | None:
            """Start requests from the ready keys while fewer than `concurrency` are unanswered; returns
            the pace's hint of when a held-back key may go (see _build_batch)."""
            nonlocal in_flight
            wait_hint = None
            while in_flight < self.settings.concurrency and ready and not self.result.stopped:
                batch, wait_hint = self._build_batch(ready, now)
                if not batch:
                    break
                in_flight += 1
                tasks.add(asyncio.create_task(send(batch)))
            return wait_hint

        async def send(batch: list[PendingRecord]) -> None:
            nonlocal in_flight
            answered = False

            async def handoff() -> None:
                """The request's keys are back in `ready`: start the next requests now, unpaced, and
                let them reach the wire while this one writes down where its records landed. Paced
                runs (or a run's own rate) leave it to the loop below, which knows when to wait."""
                nonlocal in_flight, answered
                answered = True
                in_flight -= 1
                if self._unpaced() and not fatal:
                    fill(self._clock())
                    await asyncio.sleep(0)

            try:
                await self._send_batch(batch, requeue, handoff)
            except BaseException as error:  # handed to the loop below, which re-raises
                fatal.append(error)
            finally:
                if not answered:
                    in_flight -= 1
                # Free the slot now, not in a done-callback a loop turn later, so the next batch goes at once.
                tasks.discard(asyncio.current_task())
                wake.set()

        try:
            while not fatal and not self.result.stopped:
                now = self._clock()
                while delayed and delayed[0][0] <= now:
                    key = heapq.heappop(delayed)[2]
                    if not key.queued and self._ledger.has_work(key):
                        key.queued = True
                        ready.append(key)
                while self._unpark and self._unpark[0][0] <= now:
                    ready.extend(self._parked.pop(heapq.heappop(self._unpark)[1]))
                wait_hint = fill(now)
                if not tasks and not ready and not delayed and not self._parked:
                    break
                self._meter.report()
                timeout = self._progress_interval
                if delayed:
                    timeout = min(timeout, delayed[0][0] - now)
                if self._unpark:
                    timeout = min(timeout, self._unpark[0][0] - now)
                if wait_hint is not None and in_flight < self.settings.concurrency:
                    timeout = min(timeout, wait_hint)
                wake.clear()
                if tasks or timeout > 0:
                    # Woken by a request ending or by the timer: a timer handle, not wait_for's task
                    # and timeout per turn of the loop (a turn per request at few keys).
                    timer = asyncio.get_running_loop().call_later(max(timeout, 0.001), wake.set)
                    try:
                        await wake.wait()
                    finally:
                        timer.cancel()
            if tasks and not fatal:  # stopped: let the requests in flight end, so their outcome is known
                await asyncio.gather(*list(tasks), return_exceptions=True)
        finally:
            # Only a failure or a cancelled run leaves requests in flight: stop them with it.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if fatal:
            raise fatal[0]

    def _pop_ready(
        self, ready: deque[KeyState], at: tuple[float, float] | None = None
    ) -> tuple[KeyState, PendingRecord] | None:
        """The next ready key with a record to send (built `at`, see RecordLedger.build), and that
        record; None when no key is left."""
        while ready:
            key = ready.popleft()
            key.queued = False
            if key.abandoned:
                continue
            record = self._ledger.head(key, at)
            if record is not None:
                return key, record
        return None

    def _take_rate(self, now: float) -> float | None:
        """Take one record from the run's own rate: None when taken (or unlimited), otherwise the
        seconds until it has a refill's worth again."""
        if self._rate is None or (now >= self._rate_resumes and self._rate.try_take(1, now)):
            return None
        if now >= self._rate_resumes:
            refill = min(self._rate.burst, max(1.0, self._rate.rate * REFILL_SECONDS))
            self._rate_resumes = now + self._rate.wait_time(refill, now)
        return self._rate_resumes - now

    def _unpaced(self) -> bool:
        """Nothing holds a record back: no shard paced or throttled yet, no run rate, no key parked."""
        return self._pacer.idle and self._rate is None and not self._parked

    def _build_batch(self, ready: deque[KeyState], now: float) -> tuple[list[PendingRecord], float | None]:
        """Take records from ready keys, at most one per key (unless the rule is switched off), within
        the request limits and the pace. A key whose shard's pace is spent is parked with that shard
        (keeping its queued mark) until the shard has tokens again; the hint says when the run's own
        rate, if it ran dry, has tokens again."""
        settings, parked = self.settings, self._parked
        batch: list[PendingRecord] = []
        nbytes = 0
        newly_parked: dict[str, int] = {}  # shard -> size of the record that found it spent
        wait_hint: float | None = None
        # Looked up once a batch, not once a record: nothing below throttles a shard or parks one
        # until a key finds its shard spent, which an idle pacer never says.
        pop_ready, prediction, take = self._pop_ready, self._prediction, self._ledger.take
        most, most_bytes, one_per_key = (
            settings.max_batch_records,
            settings.max_batch_bytes,
            settings.one_record_per_key,
        )
        pacer, rate = self._pacer, self._rate
        unpaced = self._unpaced()
        at = (self._wall(), now)  # the request's time: every record in it is handed to it at once
        while len(batch) < most and (item := pop_ready(ready, at)) is not None:
            key, record = item
            if nbytes + record.size > most_bytes and batch:
                key.queued = True
                ready.appendleft(key)
                break
            predicted, shard = prediction(key)
            if not unpaced:
                waiting = parked.get(shard) if shard is not None else None
                if waiting is not None:  # its shard's pace is spent: no need to ask again
                    key.queued = True
                    waiting.append(key)
                    continue
                if rate is not None and (rate_wait := self._take_rate(now)) is not None:
                    wait_hint = rate_wait
                    key.queued = True
                    ready.appendleft(key)
                    break
                if not pacer.try_take(shard, record.size, now):
                    if rate is not None:
                        rate.tokens += 1
                    key.queued = True
                    parked[shard] = [key]  # type: ignore[index]  # the pacer never refuses an unpredicted (None) shard
                    newly_parked[shard] = record.size  # type: ignore[index]  # as above
                    continue
            take(record, predicted)
            batch.append(record)
            nbytes += record.size
            if not one_per_key and self._ledger.has_untaken(key):
                # The naive batcher takes the key's next record too, straight away.
                key.queued = True
                ready.appendleft(key)
        for shard, size in newly_parked.items():
            per_second = self._pacer.records_per_second(shard) or 1.0
            wanted = max(1, min(len(parked[shard]), int(per_second * REFILL_SECONDS)))
            due = now + self._pacer.wait_time(shard, size, now, wanted)
            # Shards come back on a common beat, so one request carries several shards' records
            # rather than one small request per shard (the bucket keeps filling meanwhile).
            heapq.heappush(self._unpark, (math.ceil(due / REFILL_SECONDS) * REFILL_SECONDS, shard))
        return batch, wait_hint

    async def _send_batch(self, batch: list[PendingRecord], requeue: Requeue, handoff: Handoff) -> None:
        # The usual entry (a partition key, no explicit hash key) written out here: this runs per record.
        entries = [
            {"Data": record.data, "PartitionKey": key.name}
            if (key := record.key).send_key and key.explicit_hash_key is None
            else put_records_entry(record.data, key.name if key.send_key else None, key.explicit_hash_key)
            for record in batch
        ]
        response = await self._put(entries, batch, lambda: {self._predict(r.key) for r in batch}, requeue)
        if response is None:
            return
        now, wall = self._clock(), self._wall()
        results = response["Records"]
        if not any(outcome.get("ErrorCode") for outcome in results):
            await self._acknowledge_after_handoff(batch, results, requeue, handoff, now, wall)
            return
        # Some records failed: they are retried (their keys wait), the others acknowledged and requeued.
        failures: list[tuple[PendingRecord, str]] = []
        acknowledge, pacer = self._ledger.acknowledge, self._pacer
        idle = pacer.idle  # nothing to tell the pacer of a success until a shard has been paced or throttled
        for record, outcome in zip(batch, results):
            code = outcome.get("ErrorCode")
            if code:
                if code == THROTTLE_ERROR:
                    self._pacer.throttled(self._predict(record.key), now)
                    self.result.throttled += 1
                failures.append((record, f"{code}: {outcome.get('ErrorMessage', '')}".rstrip(": ")))
            else:
                shard_id = outcome["ShardId"]
                acknowledge(record, shard_id, outcome["SequenceNumber"], wall)
                if not idle:
                    pacer.succeeded(shard_id, now)
        self._ledger.retry(failures, requeue)
        failed_ids = {id(record) for record, _ in failures}
        for record in batch:
            if id(record) not in failed_ids:
                requeue(record.key, now)

    async def _acknowledge_after_handoff(
        self,
        batch: list[PendingRecord],
        results: list[dict[str, Any]],
        requeue: Requeue,
        handoff: Handoff,
        now: float,
        wall: float,
    ) -> None:
        """Every record landed: free each key for its next record, hand off (the next request goes
        out), then write down where each landed. The writing is a third of the time between one
        request's answer and the next request at a hundred keys; done after the handoff it overlaps
        the next request's round trip. It runs even if the run is cancelled meanwhile, so no
        acknowledged record goes missing from the report."""
        release = self._ledger.release
        for record in batch:
            release(record)
            requeue(record.key, now)
        try:
            await handoff()
        finally:
            record_ack, pacer = self._ledger.record_ack, self._pacer
            idle = pacer.idle
            for record, outcome in zip(batch, results):
                shard_id = outcome["ShardId"]
                record_ack(record, shard_id, outcome["SequenceNumber"], wall)
                if not idle:
                    pacer.succeeded(shard_id, now)

    async def _put(
        self,
        entries: list[dict[str, Any]],
        batch: list[PendingRecord],
        shards: Callable[[], set[str | None]],
        requeue: Requeue,
    ) -> dict[str, Any] | None:
        """One PutRecords request for `entries`, carrying the records of `batch` (to the shards paced
        against, which `shards()` names when a throttle needs them). A failure of the whole request is
        settled here (each record retried, refused or the run stopped) and None returned; otherwise
        the answer, with one result per entry."""
        sent_wall = self._wall()
        try:
            response = await self._put_records(self.stream, entries)  # type: ignore[misc]  # batch mode has it (__init__)
        except _FATAL as error:
            self._stop(str(error))
            return None
        except BadInput as error:
            self._answered()
            self._ledger.refused(batch, str(error))
            return None
        except _UNANSWERED as error:
            self._unanswered(error)
            sent = getattr(error, "request_sent", True)
            self._ledger.retry_all(batch, str(error), requeue, outcome_known=not sent, sent_wall=sent_wall)
            return None
        except _THROTTLED as error:
            self._answered()
            now = self._clock()
            for shard in shards():
                self._pacer.throttled(shard, now)
            self.result.throttled += len(batch)
            self._ledger.retry_all(batch, str(error), requeue, outcome_known=True, sent_wall=sent_wall)
            return None
        except BackendError as error:  # the server answered with a failure: it may have written first
            self._answered()
            self._ledger.retry_all(batch, str(error), requeue, outcome_known=False, sent_wall=sent_wall)
            return None
        self._answered()
        results = response.get("Records") or []
        if len(results) != len(entries):
            # A malformed answer says nothing trustworthy about any record in it.
            self._ledger.retry_all(
                batch,
                f"PutRecords answered {counted(len(results), 'result')} for {counted(len(entries), 'record')}",
                requeue,
                outcome_known=False,
                sent_wall=sent_wall,
            )
            return None
        return response

    # -- sequential mode ------------------------------------------------------------------------

    async def _run_sequential(self) -> None:
        queue: deque[KeyState] = deque(self._keys)

        async def worker() -> None:
            while queue and not self.result.stopped:
                await self._produce_key_sequentially(queue.popleft())

        async def reporter() -> None:
            while True:
                await asyncio.sleep(self._progress_interval)
                self._meter.report()

        report_task = asyncio.create_task(reporter())
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.settings.concurrency, len(self._keys))):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        finally:
            report_task.cancel()

    async def _produce_key_sequentially(self, key: KeyState) -> None:
        settings = self.settings
        while self._ledger.has_work(key) and not self.result.stopped:
            record = self._ledger.head(key)
            if record is None:  # has_work said there is one; nothing of the key is in flight here
                return
            while not self.result.stopped:
                predicted, shard = self._prediction(key)
                await self._wait_for_pace(shard, record.size)
                self._ledger.take(record, predicted)
                sent_wall = self._wall()
                try:
                    response = await self._put_record(  # type: ignore[misc]  # sequential mode has it (__init__)
                        self.stream,
                        record.data,
                        key.name if key.send_key else None,
                        explicit_hash_key=key.explicit_hash_key,
                        sequence_number_for_ordering=key.last_sequence_number,
                    )
                except _FATAL as error:
                    self._stop(str(error))
                    return
                except BadInput as error:
                    self._answered()
                    self._ledger.refused([record], str(error))
                    return
                except (BackendError, OSError, TimeoutError) as error:
                    if isinstance(error, _UNANSWERED):
                        self._unanswered(error)
                        known = not getattr(error, "request_sent", True)
                    else:
                        self._answered()
                        known = isinstance(error, _THROTTLED)
                    if isinstance(error, _THROTTLED):
                        self._pacer.throttled(shard, self._clock())
                        self.result.throttled += 1
                    self._ledger.retry_all(
                        [record], str(error), lambda *_: None, outcome_known=known, sent_wall=sent_wall
                    )
                    if key.abandoned:
                        return
                    await asyncio.sleep(settings.retry_delay(record.attempts))
                    continue
                self._answered()
                now, wall = self._clock(), self._wall()
                self._ledger.acknowledge(record, response["ShardId"], response["SequenceNumber"], wall)
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

    def progress(self, now: float | None = None, *, done: bool = False) -> ProducerProgress:
        return self._meter.snapshot(now, done=done)
