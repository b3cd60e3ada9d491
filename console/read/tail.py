"""Read what is in a stream: every relevant shard concurrently, decoded, in consumer order.

`TailReader(backend, stream, options).batches()` yields `TailBatch`es (one per GetRecords answer
that passed the filters, plus lag-only updates). The backend is anything with `all_shards`,
`get_shard_iterator` and `get_records` shaped like console.backend.kinesis.KinesisBackend; this
module does no I/O of its own.

Order rules a consumer must follow: a child shard is read only after all of its parents that are
being read have been read to their end (so, from the past, closed parents come first). When a shard
ends (GetRecords returns no NextShardIterator) its children are picked up, with or without `follow`,
so a split or merge before or while tailing is followed. Without `follow` an open shard is finished
when it is caught up (MillisBehindLatest == 0 and a short batch); a closed shard only at its end,
however its last records and empty pages are spread over pages (`ShardCursor.done`). With `follow`
open shards are polled until cancelled.

A window (`TailOptions.end`, console.read.positions) stops each shard before its first record that
arrived after the end; that shard's children are not read, since they hold only later records.
`TailOptions.where` filters on the decoded record's fields (console.read.where). The options, the
batches and which shards a read starts from are in console.read.tail_options.

GetRecords limits: each shard is polled at most 5 times a second; a throttle (after the backend's
own retries) backs off exponentially; an expired iterator is re-got after the last sequence number.
With `follow`, a shard that cannot be read (no answer, a server error) is retried forever, backing off
to MAX_RETRY_BACKOFF, from where it stood (the cursor keeps its iterator and last sequence number),
and `on_trouble` hears of it at once and then once a minute; without `follow` the backend's bounded
retries decide, as for any command.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from console.errors import AccessDenied, BackendError, BadInput, NoCredentials, StreamNotFound, Throttled
from console.read.cursor import ShardCursor
from console.read.decoding import MIB, DecodedRecord, decode_api_record
from console.read.efo import Subscribe, SubscriptionCursor, starting_position
from console.read.keyscope import carries_aggregate, key_hash_to_follow, widening_note
from console.read.payloads import KIND_ERROR, InflateBudget
from console.read.positions import (
    AFTER_SEQUENCE_NUMBER,
    AT_SEQUENCE_NUMBER,
    AT_TIMESTAMP,
    LATEST,
    TRIM_HORIZON,
)
from console.read.positions import parse_start as parse_start  # re-exported: where a read starts belongs with reading
from console.read.schemas import SchemaCatalog
from console.read.share import ReadShare
from console.read.tail_options import ReadBackend, ShardProgress, record_matches, records_until, select_shards
from console.read.tail_options import TailBatch as TailBatch  # re-exported, as TailOptions: a tail's own terms
from console.read.tail_options import TailOptions as TailOptions
from console.topology.model import Shard

MIN_POLL_INTERVAL = 0.2  # GetRecords allows 5 calls per second per shard
IDLE_POLL_INTERVAL = 1.0  # when caught up, poll once a second as AWS recommends
MAX_BACKOFF = 10.0
GET_RECORDS_LIMIT = 10_000
# Decoded records waiting for the consumer, by weight: a slow consumer holds the readers back rather than
# letting pages of large (or inflated) records pile up. Pages are decoded one at a time, when there is room.
MAX_QUEUED_BYTES = 64 * MIB
# With follow, a shard that cannot be read (the network, the endpoint) is retried forever, this far apart at
# most, from its last record; what is wrong is said at once and then once a minute, not once a retry.
MAX_RETRY_BACKOFF = 30.0
TROUBLE_REPORT_INTERVAL = 60.0
# More shards failing than the last report named (an outage reaches every shard within moments) is said
# again at once, at most this often, so the report names every shard that cannot be read.
TROUBLE_GROWTH_INTERVAL = 1.0
SHARDS_NAMED = 10
# Errors no retry can mend: the stream or the credentials are gone.
_PERMANENT = (StreamNotFound, AccessDenied, NoCredentials, BadInput)


class TailReader:
    """Reads the chosen shards concurrently and yields decoded batches in consumer order."""

    def __init__(
        self,
        backend: ReadBackend,
        stream: str,
        options: TailOptions,
        *,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        refresh_interval: float = 5.0,
        batch_limit: int = GET_RECORDS_LIMIT,
        on_trouble: Callable[[str], Any] | None = None,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        subscribe: Subscribe | None = None,
        read_share: ReadShare | None = None,
    ) -> None:
        self.backend = backend
        # kconsole's own share of each shard's GetRecords budget: its calls counted and paced there.
        self.read_share = read_share if read_share is not None else ReadShare(None, clock=clock)
        # With enhanced fan-out: (shard, starting position) -> a subscription's events (console.read.efo);
        # every shard is then read by SubscribeToShard instead of GetRecords.
        self._subscribe = subscribe
        self.batch_limit = batch_limit  # records per GetRecords call
        self.refresh_interval = refresh_interval  # with follow: how often an idle shard re-checks the map
        self.stream = stream
        self.options = options
        self.progress: dict[str, ShardProgress] = {}
        self.shown = 0
        # Records that could not be decoded (a malformed KPL aggregate, corrupt gzip), filtered out or not: a
        # --key or --where read cannot tell what they held, so the user hears how many there were.
        self.decode_errors = 0
        self._sleep = sleep
        self._clock = clock
        self._queue: asyncio.Queue[TailBatch | BaseException | None] = asyncio.Queue(maxsize=64)
        self._queued_bytes = 0
        self._room = asyncio.Event()
        self._decoding = asyncio.Lock()
        self._shards: dict[str, Shard] = {}
        self._planned: set[str] = set()  # shards we read or will read once their parents end
        self._initial: frozenset[str] = frozenset()  # planned at the start (read from the start position)
        self._finished: set[str] = set()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._map_listed_at = 0.0
        self._iterators: dict[str, str] = {}  # first iterators got by position()
        self._positioned = False
        # When a LATEST read began: where a lost start resumes, and where shards a key read widens to start.
        self._positioned_at: datetime | None = None
        self._wall = wall_clock
        # With follow: shards that cannot be read right now (shard -> the last error), and the last report.
        self.unreachable: dict[str, str] = {}
        self._on_trouble = on_trouble
        self._trouble_said_at = float("-inf")
        self._trouble_said_count = 0
        self._trouble_report: asyncio.TimerHandle | None = None  # a report of more shards, due shortly
        self._end = options.end.moment
        self._widened: set[str] = set()  # shards added when a key read met an aggregate
        # Children are followed only where the key can land, unless the user named the shards to read.
        self._key_hash = (
            None if options.shard_ids else key_hash_to_follow(options.partition_key, options.placement_only)
        )
        self.notes: list[str] = []  # one-line notes for the user, e.g. a key read widened to every shard
        # Glue Schema Registry versions, fetched through the backend's GetSchemaVersion where it has one.
        self.schemas = SchemaCatalog(getattr(backend, "schema_version", None))

    # --- public -----------------------------------------------------------------------------------

    async def plan(self) -> list[Shard]:
        """List the stream's shards and choose what to read (BadInput for an unknown shard)."""
        shards = await self.backend.all_shards(self.stream)
        self._shards = {shard.shard_id: shard for shard in shards}
        self._map_listed_at = self._clock()
        chosen = select_shards(shards, self.options)
        if self.options.start.iterator_type == AT_SEQUENCE_NUMBER and not self.options.shard_ids:
            chosen = [await self._locate_sequence_number(chosen)]
        self._planned = {shard.shard_id for shard in chosen}
        self._initial = frozenset(self._planned)
        for shard in chosen:
            self.progress[shard.shard_id] = ShardProgress(shard.shard_id)
        for shard_id in self.options.finished_shards & self._planned:
            self._finished.add(shard_id)
            self.progress[shard_id].state = "ended"
        return chosen

    async def position(self) -> None:
        """Plan, and get the first iterators of the shards that can start now, concurrently. Once this
        returns, a record put is seen even from LATEST; a bad start (say a sequence number that is
        not in the shard) fails here, before anything is shown."""
        if not self._planned:
            await self.plan()
        ready = [
            self._shards[shard_id]
            for shard_id in sorted(self._planned)
            if self._parents_done(shard_id) and shard_id not in self._finished
        ]
        self._positioned_at = self._wall()
        if self._subscribe is not None:
            self._positioned = True  # a subscription starts where the shard's iterator would have
            return
        iterators = await asyncio.gather(*(self._first_iterator(shard) for shard in ready))
        self._iterators.update(zip((shard.shard_id for shard in ready), iterators))
        self._positioned = True

    async def batches(self) -> AsyncGenerator[TailBatch, None]:
        """Yield batches until every shard is done (or forever with follow, or until the limit)."""
        if not self._positioned:
            await self.position()
        for shard_id in sorted(self._planned):
            self._start_if_ready(shard_id)
        try:
            while self._tasks or not self._queue.empty():
                item = await self._queue.get()
                if item is None:
                    continue  # a shard task finished; the loop condition decides whether we are done
                if isinstance(item, BaseException):
                    raise item
                self._queued_bytes -= item.weight
                self._room.set()
                if self.options.limit is not None:
                    room = self.options.limit - self.shown
                    if len(item.records) > room:
                        item.records = item.records[:room]
                self.shown += len(item.records)
                yield item
                if self.options.limit is not None and self.shown >= self.options.limit:
                    return
        finally:
            await self._stop_all()

    @property
    def positions(self) -> dict[str, str]:
        """The last sequence number read of each shard that has given records."""
        return {shard_id: p.last_sequence for shard_id, p in self.progress.items() if p.last_sequence is not None}

    # --- scheduling -------------------------------------------------------------------------------

    def _start_if_ready(self, shard_id: str) -> None:
        if shard_id in self._tasks or shard_id in self._finished:
            return
        shard = self._shards.get(shard_id)
        if shard is None:
            return
        if not self._parents_done(shard_id):
            return
        self.progress.setdefault(shard_id, ShardProgress(shard_id))
        self._tasks[shard_id] = asyncio.create_task(self._run_shard(shard), name=f"tail {shard_id}")

    def _parents_done(self, shard_id: str) -> bool:
        # A parent we are not reading (never chosen, or aged out of retention) does not hold a child back.
        shard = self._shards[shard_id]
        return all(parent not in self._planned or parent in self._finished for parent in shard.parents)

    async def _shard_ended(self, shard: Shard, child_ids: list[str]) -> None:
        """Plan the children of an ended shard (those that can hold our key) and start the ready ones."""
        if not child_ids or any(child not in self._shards for child in child_ids):
            # Children named by GetRecords but not yet in our map, or not named at all: list again.
            self._shards.update((s.shard_id, s) for s in await self.backend.all_shards(self.stream))
            if not child_ids:
                child_ids = [s.shard_id for s in self._shards.values() if shard.shard_id in s.parents]
        for child_id in child_ids:
            child = self._shards.get(child_id)
            if child is None or (self._key_hash is not None and not child.contains(self._key_hash)):
                continue
            self._planned.add(child_id)
        for child_id in child_ids:
            if child_id in self._planned:
                self._start_if_ready(child_id)

    def _widen(self, shard_id: str) -> None:
        """An aggregate on a placement-only key read: read every shard, from the same start (from LATEST,
        from the moment the read began, so nothing written since is missed)."""
        self._key_hash = None
        added = [
            shard
            for shard in select_shards(list(self._shards.values()), TailOptions(start=self.options.start))
            if shard.shard_id not in self._planned
        ]
        self.notes.append(widening_note(self.options.partition_key or "", shard_id, len(added)))
        for shard in added:
            self._planned.add(shard.shard_id)
            self._widened.add(shard.shard_id)
            self.progress[shard.shard_id] = ShardProgress(shard.shard_id)
        for shard in added:
            self._start_if_ready(shard.shard_id)

    async def _stop_all(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    # --- one shard --------------------------------------------------------------------------------

    async def _first_iterator(self, shard: Shard, *, again: bool = False) -> str:
        """An iterator at the shard's first position (`_first_position`)."""
        iterator_type, sequence_number, timestamp = self._first_position(shard, again=again)
        return await self.backend.get_shard_iterator(
            self.stream, shard.shard_id, iterator_type, sequence_number=sequence_number, timestamp=timestamp
        )

    def _first_position(self, shard: Shard, *, again: bool = False) -> tuple[str, str | None, datetime | None]:
        """Where a shard's read starts: (iterator type, sequence number, timestamp). `again` when the first
        iterator expired before any record was read: a LATEST start then resumes where the read began, so
        records put meanwhile are not skipped (as a subscription's LATEST start always does)."""
        start = self.options.start
        resume = self.options.resume_after.get(shard.shard_id)
        if resume is not None:
            return AFTER_SEQUENCE_NUMBER, resume, None
        if shard.shard_id in self._widened and start.iterator_type == LATEST and self._positioned_at is not None:
            return AT_TIMESTAMP, None, self._positioned_at
        if shard.shard_id in self._widened and start.sequence_number is not None:
            # The sequence number was the first shard's: another shard is read from its start.
            return TRIM_HORIZON, None, None
        if shard.shard_id in self._widened:
            return start.iterator_type, None, start.timestamp
        if shard.shard_id not in self._initial:
            # A child found while reading holds only records newer than its parents: read it all.
            return TRIM_HORIZON, None, None
        if (again or self._subscribe is not None) and start.iterator_type == LATEST and self._positioned_at is not None:
            return AT_TIMESTAMP, None, self._positioned_at
        return start.iterator_type, start.sequence_number, start.timestamp

    async def _patiently(self, shard_id: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """`await call()`; with follow, a failure that a retry can mend (no answer, a server error) is
        retried forever, backing off to MAX_RETRY_BACKOFF. Throttles are the caller's."""
        delay = 0.0
        while True:
            try:
                result = await call()
            except (Throttled, *_PERMANENT):
                raise
            except (BackendError, OSError, TimeoutError) as error:
                if not self.options.follow:
                    raise
                delay = min(MAX_RETRY_BACKOFF, max(1.0, delay * 2))
                self._trouble(shard_id, error)
                await self._sleep(delay)
                continue
            if shard_id in self.unreachable:
                del self.unreachable[shard_id]
                if not self.unreachable:
                    self._trouble_said_count = 0
                    self._say(f"tail: reading again ({shard_id} answered); no record was skipped or repeated")
            return result

    def _trouble(self, shard_id: str, error: BaseException) -> None:
        first = not self.unreachable
        newly = shard_id not in self.unreachable
        self.unreachable[shard_id] = str(error) or type(error).__name__
        progress = self.progress.get(shard_id)
        if progress is not None:
            progress.state = "retrying"
            progress.millis_behind = None  # records may be waiting: how many is not known now
        if newly:  # a lag-only update: the lag a view shows for this shard becomes unknown
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(TailBatch(shard_id, [], None))
        since = self._clock() - self._trouble_said_at
        if first or since >= TROUBLE_REPORT_INTERVAL:
            self._report_trouble(self.unreachable[shard_id])
        elif len(self.unreachable) > self._trouble_said_count and self._trouble_report is None:
            self._trouble_report = asyncio.get_running_loop().call_later(
                max(0.0, TROUBLE_GROWTH_INTERVAL - since), self._report_trouble, self.unreachable[shard_id]
            )

    def _report_trouble(self, reason: str) -> None:
        """One line naming every shard that cannot be read now."""
        if self._trouble_report is not None:
            self._trouble_report.cancel()
            self._trouble_report = None
        count = len(self.unreachable)
        if not count:
            return
        self._trouble_said_at, self._trouble_said_count = self._clock(), count
        names = sorted(self.unreachable)
        shown = ", ".join(names[:SHARDS_NAMED]) + (f" (+{count - SHARDS_NAMED})" if count > SHARDS_NAMED else "")
        self._say(
            f"tail: {count} shard{'s' if count != 1 else ''} cannot be read: {shown} ({reason}); lag unknown; "
            f"retrying from the last record read, backing off to {MAX_RETRY_BACKOFF:.0f} s between tries, "
            "until stopped"
        )

    def _say(self, message: str) -> None:
        if self._on_trouble is not None:
            self._on_trouble(message)

    async def _run_shard(self, shard: Shard) -> None:
        """Task body: read one shard; hand errors to the consumer; always tell it we are gone."""
        try:
            await self._read_shard(shard)
        except asyncio.CancelledError:
            self._tasks.pop(shard.shard_id, None)
            raise
        except Exception as error:  # the consumer re-raises it in batches()
            self._tasks.pop(shard.shard_id, None)
            await self._queue.put(error)
            return
        self._tasks.pop(shard.shard_id, None)
        await self._queue.put(None)  # wakes the consumer to re-check whether anything is left

    async def _read_shard(self, shard: Shard) -> None:
        shard_id = shard.shard_id
        progress = self.progress[shard_id]
        progress.state = "reading"
        cursor: ShardCursor | SubscriptionCursor
        if self._subscribe is not None:
            iterator_type, sequence_number, timestamp = self._first_position(shard)
            cursor = SubscriptionCursor(
                shard_id=shard_id,
                start=starting_position(iterator_type, sequence_number=sequence_number, timestamp=timestamp),
                subscribe=self._subscribe,
                closed=not shard.is_open,
                sleep=self._sleep,
                clock=self._clock,
                on_note=lambda message: self._say(f"tail: {message}"),
            )
        else:
            iterator = self._iterators.pop(shard_id, None) or await self._patiently(
                shard_id, lambda: self._first_iterator(shard)
            )
            cursor = ShardCursor(
                stream=self.stream,
                shard_id=shard_id,
                iterator=iterator,
                get_shard_iterator=self.backend.get_shard_iterator,
                get_records=self.backend.get_records,
                restart=lambda: self._first_iterator(shard, again=True),
                limit=self.batch_limit,
                min_interval=MIN_POLL_INTERVAL,
                sleep=self._sleep,
                clock=self._clock,
                closed=not shard.is_open,
                share=self.read_share,
            )
        try:
            await self._read_pages(shard, cursor)
        finally:
            if isinstance(cursor, SubscriptionCursor):
                await cursor.aclose()

    async def _read_pages(self, shard: Shard, cursor: ShardCursor | SubscriptionCursor) -> None:
        shard_id = shard.shard_id
        progress = self.progress[shard_id]
        backoff = 0.0
        reported_lag: int | None = -1  # never a real value, so the first answer is always reported
        while True:
            try:
                # The cursor keeps its iterator and last sequence number across a failed call, so a retry
                # reads on from exactly where the last answer left off.
                page = await self._patiently(shard_id, cursor.read)
            except Throttled:
                backoff = min(MAX_BACKOFF, max(0.5, backoff * 2))
                progress.state = "throttled"
                await self._sleep(backoff)
                continue
            backoff = 0.0
            progress.state = "reading"
            raw_records = page.records
            past_end = False
            if self._end is not None and raw_records:
                within = records_until(raw_records, self._end)
                if within < len(raw_records):
                    # Past the window's end: this shard is done, and its children hold only later records.
                    raw_records, past_end = raw_records[:within], True
            if raw_records:
                progress.last_sequence = raw_records[-1]["SequenceNumber"]
            lag = page.millis_behind
            progress.millis_behind = lag
            if not past_end and not cursor.closed and cursor.at_tip(page) and await self._known_closed(shard_id):
                cursor.closed = True  # closed since it was listed: read it to its end, then its children
            ended = cursor.at_end(page) and not past_end
            caught_up = past_end or (not ended and cursor.done(page, follow=self.options.follow))
            if raw_records:  # a copy's --where decodes the wire records with them too
                await self.schemas.prefetch(raw["Data"] for raw in raw_records)
            async with self._decoding:
                while self._queued_bytes >= MAX_QUEUED_BYTES:
                    self._room.clear()
                    await self._room.wait()
                if self._key_hash is not None and raw_records and carries_aggregate(raw_records):
                    self._widen(shard_id)
                if self.options.wire:
                    shown, wire = [], raw_records
                    weight = sum(len(raw["Data"]) for raw in wire)
                    progress.records += len(wire)
                else:
                    shown, wire = self._decode(raw_records, shard_id), None
                    weight = sum(record.weight for record in shown)
                    progress.records += len(shown)
                if shown or wire or ended or caught_up or lag != reported_lag:
                    self._queued_bytes += weight
                    await self._queue.put(
                        TailBatch(shard_id, shown, lag, ended=ended, caught_up=caught_up, weight=weight, wire=wire)
                    )
                    reported_lag = lag
            if ended:
                progress.state = "ended"
                self._finished.add(shard_id)
                child_ids = [child["ShardId"] for child in page.child_shards or []]
                await self._patiently(shard_id, lambda: self._shard_ended(shard, child_ids))
                return
            if caught_up:
                progress.state = "caught-up"
                self._finished.add(shard_id)
                return
            if not cursor.closed and (not raw_records or lag == 0):
                cursor.defer(IDLE_POLL_INTERVAL)  # a closed shard gets nothing new: read on to its end

    async def _known_closed(self, shard_id: str) -> bool:
        """Whether the shard map says the shard is closed; refreshed at most every `refresh_interval`."""
        if self._clock() - self._map_listed_at >= self.refresh_interval:
            self._map_listed_at = self._clock()
            try:
                shards = await self.backend.all_shards(self.stream)
            except (Throttled, *_PERMANENT):
                raise
            except (BackendError, OSError, TimeoutError):
                if not self.options.follow:
                    raise
                shards = []  # asked again at the next refresh; the shard is read on meanwhile
            for listed in shards:
                self._shards[listed.shard_id] = listed
        shard = self._shards.get(shard_id)
        return shard is not None and not shard.is_open

    def _decode(self, raw_records: list[dict[str, Any]], shard_id: str) -> list[DecodedRecord]:
        key, grep, where = self.options.partition_key, self.options.grep, self.options.where
        decoded: list[DecodedRecord] = []
        budget = InflateBudget()  # what this page's records may inflate together
        for raw in raw_records:
            decoded.extend(decode_api_record(raw, shard_id, budget, self.schemas))
        self.decode_errors += sum(1 for record in decoded if record.kind == KIND_ERROR)
        if key is not None or grep is not None or where is not None:
            decoded = [record for record in decoded if record_matches(record, key, grep, where)]
        mask = self.options.mask
        return decoded if mask is None else [mask(record) for record in decoded]

    # --- locating a sequence number ---------------------------------------------------------------

    async def _locate_sequence_number(self, candidates: list[Shard]) -> Shard:
        """Find the shard holding --from SEQ: the one whose first record at that position is it."""
        wanted = self.options.start.sequence_number or ""
        number = int(wanted)
        in_range = [s for s in candidates if _may_hold(s, number)] or candidates
        for shard in in_range:
            try:
                iterator = await self.backend.get_shard_iterator(
                    self.stream, shard.shard_id, AT_SEQUENCE_NUMBER, sequence_number=wanted
                )
                answer = await self.backend.get_records(iterator, limit=1)
            except BadInput:
                continue  # InvalidArgument: not this shard's sequence number
            records = answer.get("Records") or []
            if records and records[0]["SequenceNumber"] == wanted:
                return shard
        raise BadInput(f"sequence number {wanted} is not in any shard of {self.stream} (expired, or give --shard ID)")


def _may_hold(shard: Shard, number: int) -> bool:
    start = int(shard.starting_sequence_number) if shard.starting_sequence_number else 0
    end = int(shard.ending_sequence_number) if shard.ending_sequence_number else None
    return start <= number and (end is None or number <= end)
