"""Read a producer run back and check that nothing was lost, reordered or misplaced.

Which shards: every shard a put was acknowledged on or predicted for, and all their descendants
(a key's records move to a child after a split or merge). How: parents are read to their end
before their children, as a consumer must, starting at the smallest sequence number acknowledged
on the shard (AT_SEQUENCE_NUMBER) — or at TRIM_HORIZON when the shard had no ack, or when a
request of unknown outcome might have written to it before that first ack. Closed shards are read
to their end, open ones to their current end (an empty page with nothing behind it).

What is counted (lost, duplicated, late duplicates, out of order, misplaced, latency) is defined
in console.produce.verify_analysis. The transport is injected (backend methods), so this module does
no I/O of its own.

When: a request whose outcome stayed unknown (its answer was lost) may still be on its way and land
later, after the records that followed it. So when the run had any, reading starts only once the
in-flight window (the request timeout plus a margin: `ReadSettings.in_flight_window`) has passed
since the latest of them was sent; a copy that lands later than that cannot be counted.

With `subscribe` (console.read.efo's, a consumer's SubscribeToShard bound) each shard is read through
enhanced fan-out instead, from the same starting positions and to the same ends, taking nothing of the
shards' shared GetRecords budget.

The reading is here; the pure comparison and the report live in console.produce.verify_analysis.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_kinesis_agg import MAGIC

from console.errors import BackendError, ConsoleError, Throttled
from console.produce.report import ProduceResult
from console.produce.testrecords import decode
from console.produce.verify_analysis import (
    ReadCopy,
    ShardLineage,
    ShardRead,
    VerificationReport,
    analyse,
)
from console.read.cursor import ShardCursor
from console.read.decoding import MalformedAggregate, user_records
from console.read.efo import Subscribe, SubscriptionCursor, starting_position
from console.topology.model import Shard


@dataclass
class ReadSettings:
    concurrency: int = 8  # shards read at once
    page_limit: int = 10000
    min_call_interval: float = 0.0  # per shard; AWS allows 5 GetRecords/s per shard (0.2 s)
    timeout: float = 300.0  # for the whole read-back
    retry_base: float = 0.1
    retry_cap: float = 2.0
    # Seconds after a request of unknown outcome was sent before it can no longer land on the server.
    in_flight_window: float = 0.0


# The in-flight window is this many request timeouts: the timeout itself, then as much again and a half
# for a request held up on the way (a proxy, a retransmitting network) to be delivered all the same.
IN_FLIGHT_TIMEOUTS = 2.5


class Verifier:
    """Reads a run back through injected backend calls and builds a VerificationReport."""

    def __init__(
        self,
        *,
        all_shards: Callable[[str], Awaitable[list[Shard]]],
        get_shard_iterator: Callable[..., Awaitable[str]],
        get_records: Callable[..., Awaitable[dict[str, Any]]],
        settings: ReadSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        identify: Callable[[ProduceResult, dict[str, Any]], Any] | None = None,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        subscribe: Subscribe | None = None,
    ) -> None:
        self._all_shards = all_shards
        self._subscribe = subscribe
        # Which of the run's records a read record is (something with key, seq and sent_at), or None:
        # by default the test-record header; given records are matched by their key and bytes.
        self._identify = identify or (lambda run, raw: decode(raw["Data"], run.run_id))
        self._get_shard_iterator = get_shard_iterator
        self._get_records = get_records
        self.settings = settings or ReadSettings()
        self._clock = clock
        self._wall = wall_clock
        self._sleep = sleep

    @classmethod
    def for_backend(
        cls,
        kinesis: Any,
        settings: ReadSettings | None = None,
        identify: Callable[[ProduceResult, dict[str, Any]], Any] | None = None,
        subscribe: Subscribe | None = None,
    ) -> Verifier:
        return cls(
            all_shards=kinesis.all_shards,
            get_shard_iterator=kinesis.get_shard_iterator,
            get_records=kinesis.get_records,
            settings=settings,
            identify=identify,
            subscribe=subscribe,
        )

    def in_flight_wait(self, run: ProduceResult) -> float:
        """Seconds to wait before reading: until the latest request of unknown outcome can no longer land."""
        if run.last_unknown_sent is None:
            return 0.0
        return max(0.0, run.last_unknown_sent + self.settings.in_flight_window - self._wall())

    async def verify(self, run: ProduceResult) -> VerificationReport:
        waited = self.in_flight_wait(run)
        if waited:
            await self._sleep(waited)
        started = self._clock()
        try:
            async with asyncio.timeout(self.settings.timeout):
                lineage = ShardLineage(await self._call(self._all_shards, run.stream))
        except TimeoutError:
            raise BackendError(
                f"listing the shards of {run.stream} did not finish within {self.settings.timeout:g} s",
                code="verify_timeout",
            ) from None
        plan = self._plan(run, lineage)
        copies: list[ReadCopy] = []
        reads: dict[str, ShardRead] = {}
        done = {shard_id: asyncio.Event() for shard_id in plan}
        gate = asyncio.Semaphore(self.settings.concurrency)

        async def read(shard_id: str) -> None:
            for parent in lineage.shards[shard_id].parents:
                if parent in done:
                    await done[parent].wait()
            try:
                async with gate:
                    reads[shard_id] = await self._read_shard(run, lineage, shard_id, plan[shard_id], copies)
            finally:
                done[shard_id].set()

        try:
            async with asyncio.timeout(self.settings.timeout):
                async with asyncio.TaskGroup() as group:
                    for shard_id in sorted(plan, key=lineage.order.__getitem__):
                        group.create_task(read(shard_id))
        except TimeoutError:
            raise BackendError(
                f"read-back of run {run.run_id} did not finish within {self.settings.timeout:g} s",
                code="verify_timeout",
            ) from None
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        elapsed = self._clock() - started
        ordered_reads = [reads[s] for s in sorted(reads, key=lineage.order.__getitem__)]
        report = analyse(run, lineage, copies, ordered_reads, elapsed)
        report.waited_seconds = waited
        return report

    def _plan(self, run: ProduceResult, lineage: ShardLineage) -> dict[str, tuple[str, str | None]]:
        """shard id -> (iterator type, starting sequence number) for every shard to read."""
        seeds = set(run.first_acks)
        seeds.update(ack.predicted for ack in run.acks.values() if ack.predicted)
        seeds.update(shard for shard in run.unknown_outcomes if shard)
        relevant: set[str] = set()
        for shard_id in seeds:
            if shard_id in lineage.shards:
                relevant |= lineage.at_or_below(shard_id)
        plan: dict[str, tuple[str, str | None]] = {}
        for shard_id in relevant:
            first = run.first_acks.get(shard_id)
            if first is None or self._maybe_written_before(run, lineage, shard_id, first[1]):
                plan[shard_id] = ("TRIM_HORIZON", None)
            else:
                plan[shard_id] = ("AT_SEQUENCE_NUMBER", str(first[0]))
        return plan

    @staticmethod
    def _maybe_written_before(run: ProduceResult, lineage: ShardLineage, shard_id: str, first_ack_at: float) -> bool:
        """Could a request of unknown outcome have written to `shard_id` ahead of its first ack?
        Only if it was sent before that ack came back, to this shard or an ancestor (or unpredicted)."""
        for predicted, sent_at in run.unknown_outcomes.items():
            if sent_at >= first_ack_at:
                continue
            if predicted is None or predicted not in lineage.shards or shard_id in lineage.at_or_below(predicted):
                return True
        return False

    async def _read_shard(
        self,
        run: ProduceResult,
        lineage: ShardLineage,
        shard_id: str,
        start: tuple[str, str | None],
        copies: list[ReadCopy],
    ) -> ShardRead:
        shard = lineage.shards[shard_id]
        cursor = await self._cursor(run, shard_id, start, closed=not shard.is_open)
        try:
            total, mine = await self._take(run, shard_id, lineage.order[shard_id], cursor, copies)
        finally:
            if isinstance(cursor, SubscriptionCursor):
                await cursor.aclose()
        return ShardRead(shard_id, start[0], total, mine, closed=not shard.is_open)

    async def _cursor(
        self, run: ProduceResult, shard_id: str, start: tuple[str, str | None], *, closed: bool
    ) -> ShardCursor | SubscriptionCursor:
        iterator_type, sequence_number = start
        if self._subscribe is not None:
            return SubscriptionCursor(
                shard_id=shard_id,
                start=starting_position(iterator_type, sequence_number=sequence_number),
                subscribe=self._subscribe,
                closed=closed,
                sleep=self._sleep,
                clock=self._clock,
            )

        async def at_start() -> str:
            iterator: str = await self._call(
                self._get_shard_iterator, run.stream, shard_id, iterator_type, sequence_number=sequence_number
            )
            return iterator

        # Throttling is retried inside each call (self._call), so the cursor never sees Throttled.
        return ShardCursor(
            stream=run.stream,
            shard_id=shard_id,
            iterator=await at_start(),
            get_shard_iterator=functools.partial(self._call, self._get_shard_iterator),
            get_records=functools.partial(self._call, self._get_records),
            restart=at_start,
            limit=self.settings.page_limit,
            min_interval=self.settings.min_call_interval,
            sleep=asyncio.sleep,
            clock=self._clock,
            closed=closed,
        )

    async def _take(
        self,
        run: ProduceResult,
        shard_id: str,
        order: int,
        cursor: ShardCursor | SubscriptionCursor,
        copies: list[ReadCopy],
    ) -> tuple[int, int]:
        """Every page of the shard to its end (or an open shard's tip): (records read, records of the run)."""
        total = mine = 0
        while True:
            page = await cursor.read()
            for raw in page.records:
                total += 1
                # A record of the run as it was sent (a copied aggregate is one, whole), or else, for a
                # KPL aggregate the run packed, the run's records inside it.
                record = self._identify(run, raw)
                inside = record is None and raw["Data"][:4] == MAGIC
                found = (
                    [record]
                    if record is not None
                    else ([self._identify(run, one) for one in _user_records(raw)] if inside else [])
                )
                for record in found:
                    if record is None:
                        continue
                    mine += 1
                    copies.append(
                        ReadCopy(
                            record.key,
                            record.seq,
                            shard_id,
                            raw["SequenceNumber"],
                            order,
                            record.sent_at,
                            _epoch(raw.get("ApproximateArrivalTimestamp")),
                            inside,
                        )
                    )
            if cursor.done(page, follow=False):  # an open shard's tip, or a closed shard's end
                return total, mine

    async def _call(self, function: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """Retry throttling (shared read limits) and a briefly unreachable endpoint with backoff, on top
        of the backend's own retries: a read-back after a long run must not fail on one dropped call."""
        delay = self.settings.retry_base
        for attempt in range(8):
            try:
                return await function(*args, **kwargs)
            except ConsoleError as error:
                unreachable = error.code == "endpoint_unreachable"
                if not (isinstance(error, Throttled) or unreachable) or attempt == 7 or (unreachable and attempt == 2):
                    raise
            await self._sleep(delay)
            delay = min(self.settings.retry_cap, delay * 2)
        raise AssertionError("unreachable")  # pragma: no cover


def _user_records(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The user records of a KPL aggregate as GetRecords entries of their own (none if it is malformed:
    nothing in it can be told apart)."""
    try:
        inner = user_records(raw["Data"])
    except MalformedAggregate:
        return []
    return [
        {"Data": data, "PartitionKey": key, "ExplicitHashKey": hash_key, "SequenceNumber": raw["SequenceNumber"]}
        for key, hash_key, data in inner
    ]


def _epoch(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    return None


async def run_and_verify(
    kinesis: Any,
    stream: str,
    settings: Any,
    *,
    verify: bool = True,
    on_progress: Callable[[Any], None] | None = None,
    on_verifying: Callable[[float], None] | None = None,
    read_settings: ReadSettings | None = None,
    progress_interval: float = 0.25,
    records: Any = None,
    max_aggregate_bytes: int | None = None,
    identify: Callable[[ProduceResult, dict[str, Any]], Any] | None = None,
    subscribe: Subscribe | None = None,
) -> tuple[ProduceResult, VerificationReport | None]:
    """One whole run on an open backend (a KinesisBackend): shard map, ordered producer, read-back.
    What the CLI and the console's producer panel (in its own worker) both do. With `records`
    (console.produce.given.GivenRecord), those are sent instead of generated test records. With
    `max_aggregate_bytes`, they travel in KPL aggregates of at most that size (AggregatingProducer).
    `identify` tells which record one read back is (`produce --schema` decodes it with its schema first).
    With `subscribe`, the run is read back through enhanced fan-out (a consumer's SubscribeToShard)."""
    from console.produce.producer import OrderedProducer
    from console.topology.shardmap import ShardMap

    producer_class, options = OrderedProducer, {}
    summary = await kinesis.describe_stream_summary(stream)
    if max_aggregate_bytes is not None:
        from console.produce.aggregate import AggregatingProducer

        producer_class = AggregatingProducer
        options = {"max_aggregate_bytes": max_aggregate_bytes, "record_limit": summary.max_record_bytes}
    if summary.auto_distribution:  # Kinesis ignores the keys: a shard map would predict nothing true
        producer = producer_class(
            stream,
            settings,
            put_records=kinesis.put_records,
            put_record=kinesis.put_record,
            on_progress=on_progress,
            progress_interval=progress_interval,
            records=records,
            **options,
        )
        result = await producer.run()
    else:
        async with ShardMap.for_backend(kinesis, stream) as shard_map:
            await shard_map.wait_ready(timeout=60, fail_fast=True)
            producer = producer_class(
                stream,
                settings,
                put_records=kinesis.put_records,
                put_record=kinesis.put_record,
                shard_map=shard_map,
                on_progress=on_progress,
                progress_interval=progress_interval,
                records=records,
                **options,
            )
            result = await producer.run()
    result.auto_distribution = summary.auto_distribution
    if not verify:
        return result, None
    if result.endpoint_lost:  # nothing answers: a read-back could only wait and fail
        result.verification_error = "not verified: the endpoint stopped answering"
        return result, None
    read_settings = read_settings or ReadSettings()
    if not read_settings.in_flight_window:
        timeout = getattr(kinesis, "request_timeout", None) or 0.0
        read_settings = dataclasses.replace(read_settings, in_flight_window=IN_FLIGHT_TIMEOUTS * timeout)
    if records is not None:
        from console.produce.given import GivenRecordMatcher

        identify = GivenRecordMatcher(records)
    verifier = Verifier.for_backend(kinesis, read_settings, identify, subscribe)
    if on_verifying is not None:
        on_verifying(verifier.in_flight_wait(result))
    try:
        return result, await verifier.verify(result)
    except ConsoleError as error:  # the run's own figures stand; say why they could not be checked
        result.verification_error = f"verification failed: {error}"
        return result, None
