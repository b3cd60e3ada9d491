"""Live heat: one background reader per open shard, from LATEST, feeding console.heat.rates.

Each reader calls GetRecords at most `reads_per_second` times a second (AWS allows 5 per shard,
shared with every other consumer of the shard; the default 2 leaves 3 for them) and counts what
it reads by ApproximateArrivalTimestamp. The window of arrival time starts just before the
iterators are taken, and `stop()` closes it, does one last read per shard (records that arrived
before the close but were not read yet) and then cancels and awaits every reader: no task
outlives `stop()`. When a shard closes under a reshard, its reader hands over to the children
(from TRIM_HORIZON: a child holds only records written after the reshard), so the heat follows the
stream's new shape; the closed parent stays in the report with what it carried until it closed.

All I/O goes through the injected backend (`all_shards`, `get_shard_iterator`, `get_records`), so the
same sampler runs against AWS, any endpoint, the embedded local Kinesis or a test double.

With `shards_per_second` (a live view), a stream with more open shards than that is not read by one
reader per shard but in turn (console.heat.rotation): each second one loop reads the shards the
rotation hands out, the selected one (`sampler.selected`) and the hottest always among them, and
every other shard once a pass. A shard's first read starts at the window's start (or where a
resumed window last read it), so each visit counts everything that arrived since the one before,
by arrival time; `heat.sampled_at` says up to when each shard is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from console.backend.protocol import ConsoleBackend
from console.errors import BadInput, ConsoleError, Throttled
from console.heat.cloudwatch import shard_utilisation
from console.heat.rates import HISTORY_SECONDS
from console.heat.rotation import SamplingRotation
from console.heat.snapshot import StreamHeatSnapshot, utilisation
from console.heat.stream_heat import StreamHeat
from console.read.cursor import ShardCursor
from console.read.efo import Subscribe, SubscriptionCursor, starting_position
from console.read.share import ReadShare
from console.topology.model import Shard
from console.words import plain_number

MAX_READS_PER_SECOND = 5.0  # GetRecords transactions per second per shard (AWS limit)
DEFAULT_READS_PER_SECOND = 2.0
THROTTLE_PAUSE = 1.0  # a throttled GetRecords: the shard's 5 reads/s are taken by other consumers
# Records become readable shortly after PutRecords returns ("typically less than 1 second" on AWS),
# so the last read waits this long after the window closes.
DRAIN_GRACE = 0.5
# A rotating sampler: shards read at once within a second (the rest of the second's round waits its
# turn), and pages read at most from one shard in one visit (AWS's 5 reads a second per shard).
CONCURRENT_READS = 8
PAGES_PER_VISIT = 5
CLOUDWATCH_RANK_SECONDS = 60.0  # CloudWatch's shard metrics come a minute at a time: ranked once a minute


class HeatSampler:
    """`async with HeatSampler(backend, "orders") as sampler: ...; snapshot = sampler.snapshot()`."""

    def __init__(
        self,
        backend: ConsoleBackend,
        stream: str,
        *,
        reads_per_second: float = DEFAULT_READS_PER_SECOND,
        records_per_read: int = 10_000,
        top_capacity: int = 256,
        drain_grace: float = DRAIN_GRACE,
        clock: Callable[[], float] = time.time,
        resume: StreamHeat | None = None,
        shards_per_second: int | None = None,
        read_share: ReadShare | None = None,
        subscribe: Subscribe | None = None,
    ) -> None:
        if not 0 < reads_per_second <= MAX_READS_PER_SECOND:
            raise BadInput(
                f"reads per second per shard must be above 0 and at most {MAX_READS_PER_SECOND:g} "
                f"(the GetRecords limit); got {plain_number(reads_per_second)}"
            )
        self.backend = backend
        self.stream = stream
        # kconsole's own share of each shard's GetRecords budget: its calls counted and paced there.
        self.read_share = read_share if read_share is not None else ReadShare(None)
        # Counted from enhanced fan-out's pushed events (SubscribeToShard) instead of GetRecords: every
        # shard is subscribed to at once (no rotation), and nothing of the shards' shared 5 reads/s is taken.
        self.subscribe = subscribe
        self.interval = 1.0 / reads_per_second
        self.records_per_read = records_per_read
        self.top_capacity = top_capacity
        self.clock = clock
        self.drain_grace = drain_grace
        # A closed window of this stream to carry on: its history is kept, and the records that arrived
        # since it closed are read (at most HISTORY_SECONDS of them) and counted in their own seconds.
        self._resume = (
            resume
            if resume is not None
            and subscribe is None  # a subscription starts at LATEST: a fresh window
            and resume.stream == stream
            and resume.window_end is not None
            else None
        )
        self.heat: StreamHeat | None = None
        self.reads = 0
        self.throttled_reads = 0
        self.closed_shards: list[str] = []  # shards that closed (resharded) while sampling
        self._followed: set[str] = set()  # children already handed over to (a merge has two parents)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._closing = asyncio.Event()  # the window is closed: stop sleeping between reads
        self._last_call = asyncio.Event()  # make the last read now
        self._failure: BaseException | None = None
        self.shards_per_second = shards_per_second
        self.rotation: SamplingRotation | None = None  # set by start() when the stream has more shards
        self.selected: str | None = None  # the shard a view has selected: read in every second
        # Rank the hottest by CloudWatch's shard-level metrics (set by a view when enhanced monitoring
        # is on); otherwise, and when CloudWatch fails, by the last pass.
        self.rank_by_cloudwatch = False
        self._ranked_at = float("-inf")
        self._cursors: dict[str, ShardCursor] = {}
        self._start_at: dict[str, str] = {}  # how a shard's first read starts when not AT_TIMESTAMP

    @property
    def error(self) -> BaseException | None:
        """The first error that ended a reader (stop() raises it too)."""
        return self._failure

    @property
    def running(self) -> bool:
        return any(not task.done() for task in self._tasks.values())

    async def start(self) -> None:
        if self._tasks:
            raise RuntimeError("sampler already started")
        listed = await self.backend.all_shards(self.stream)
        shards = [shard for shard in listed if shard.is_open]
        rotating = self.shards_per_second is not None and len(shards) > self.shards_per_second
        if rotating and self.subscribe is None:
            self._start_rotation(shards)
            return
        if self._resume is not None:
            heat, closed_at = self._resume, self._resume.window_end or self.clock()
            since = datetime.fromtimestamp(max(closed_at, self.clock() - HISTORY_SECONDS), UTC)
            # Shards sampled before that closed meanwhile are read to their end too (children follow).
            shards += [shard for shard in listed if not shard.is_open and shard.shard_id in heat.shards]
            iterators = await asyncio.gather(
                *(
                    self.backend.get_shard_iterator(self.stream, shard.shard_id, "AT_TIMESTAMP", timestamp=since)
                    for shard in shards
                )
            )
            heat.reopen(shard for shard in shards if shard.is_open)
            self.heat = heat
        else:
            window_start = self.clock()
            iterators = await asyncio.gather(*(self._first_position(shard.shard_id, "LATEST") for shard in shards))
            self.heat = StreamHeat(self.stream, shards, window_start=window_start, top_capacity=self.top_capacity)
        for shard, iterator in zip(shards, iterators):
            self._tasks[shard.shard_id] = asyncio.create_task(
                self._read_shard(shard.shard_id, iterator), name=f"heat-{self.stream}-{shard.shard_id}"
            )

    def _start_rotation(self, shards: list[Shard]) -> None:
        assert self.shards_per_second is not None
        if self._resume is not None:
            self.heat = self._resume
            self.heat.reopen(shards)
        else:
            self.heat = StreamHeat(self.stream, shards, window_start=self.clock(), top_capacity=self.top_capacity)
        # The pass follows the key space; only open shards are read (a closed one was read to its end).
        self.rotation = SamplingRotation(
            (shard_id for shard_id in self.heat.shards if shard_id not in self.heat.closed), self.shards_per_second
        )
        self._tasks["rotation"] = asyncio.create_task(self._rotate(), name=f"heat-{self.stream}-rotation")

    def coverage_text(self) -> str:
        """What one second of sampling covers, for a view's header."""
        if self.rotation is not None:
            return self.rotation.coverage_text()
        heat = self.heat
        count = 0 if heat is None else len(heat.shards.keys() - heat.closed.keys())
        noun = "shard" if count == 1 else "shards"
        return f"sampling all {count:,} {noun}, {1 / self.interval:g} reads/s each"

    async def stop(self, *, drain: bool = True) -> StreamHeatSnapshot | None:
        """Close the window, let each reader make its last read (if `drain`), and await them all."""
        if self.heat is None:
            return None
        if self.heat.window_end is None:
            self.heat.close(self.clock())
        self._closing.set()
        if self.rotation is not None:
            drain = False  # a rotation knows each shard up to its last visit (its age); no last round
        if not drain:
            for task in self._tasks.values():
                task.cancel()
        try:
            if drain and self.drain_grace > 0:
                await asyncio.sleep(self.drain_grace)
            self._last_call.set()
            # A reader's last read normally takes milliseconds; bound it anyway.
            deadline = asyncio.get_running_loop().time() + max(5.0, 4 * self.interval)
            while pending := [task for task in self._tasks.values() if not task.done()]:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                await asyncio.wait(pending, timeout=remaining)
        finally:
            # Also when stop() itself is cancelled (the app quitting), and for readers started by a
            # hand-over during the wait: they are in _tasks too, so none escapes.
            self._last_call.set()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return self.snapshot()

    def snapshot(self, *, top: int = 5, series_seconds: int = 60) -> StreamHeatSnapshot:
        if self.heat is None:
            raise RuntimeError("sampler not started")
        return self.heat.snapshot(
            self.clock(), top=top, series_seconds=series_seconds, as_sampled=self.rotation is not None
        )

    async def snapshots(
        self, every: float = 1.0, *, top: int = 5, series_seconds: int = 60
    ) -> AsyncIterator[StreamHeatSnapshot]:
        """A snapshot every `every` seconds while the readers run (for a UI worker:
        `async for snapshot in sampler.snapshots(): panel.update_snapshot(snapshot)`)."""
        while self.running:
            yield self.snapshot(top=top, series_seconds=series_seconds)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), every)
            if self._closing.is_set():
                return

    async def __aenter__(self) -> HeatSampler:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop(drain=exc_info[0] is None)

    async def _read_shard(self, shard_id: str, iterator: str) -> None:
        try:
            await self._read_loop(shard_id, iterator)
        except ConsoleError as error:  # e.g. the stream was deleted: end this reader, report at stop()
            self._failure = self._failure or error

    async def _read_loop(self, shard_id: str, iterator: str) -> None:
        assert self.heat is not None
        # Never more than MAX_READS_PER_SECOND, even for the last read right after a wake-up; the
        # slower `interval` between ordinary reads is kept here, as a pause the window's close cuts short.
        cursor = self._cursor(shard_id, iterator, restart=lambda: self._at_latest(shard_id))
        try:
            await self._read_pages(shard_id, cursor)
        finally:
            if isinstance(cursor, SubscriptionCursor):
                await cursor.aclose()

    async def _read_pages(self, shard_id: str, cursor: ShardCursor | SubscriptionCursor) -> None:
        assert self.heat is not None
        while True:
            if self._closing.is_set():
                await self._last_call.wait()
            last_read = self._last_call.is_set()  # the window is closed: one more read, then done
            try:
                page = await cursor.read()
            except Throttled:
                self.throttled_reads += 1
                if last_read:
                    return
                await self._pause(THROTTLE_PAUSE)
                continue
            self.reads += 1
            self._count(shard_id, page.records)
            self.heat.mark_sampled(shard_id, self.clock())
            if page.ended:  # the shard was closed by a reshard: nothing more will arrive
                self.closed_shards.append(shard_id)
                self.heat.mark_closed(shard_id, self.clock())
                if not last_read:
                    await self._follow_children(shard_id, page.child_shards)
                return
            if last_read:
                return
            if isinstance(cursor, ShardCursor):  # events are pushed: nothing to pace
                await self._pause(self.interval - (time.monotonic() - cursor.last_call_at))

    def _count(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        assert self.heat is not None
        self.heat.observe_page(shard_id, records)

    # ---- reading in turn --------------------------------------------------------------------------

    async def _rotate(self) -> None:
        """Each second: read the shards the rotation hands out, a few at once, then wait for the next."""
        assert self.rotation is not None
        gate = asyncio.Semaphore(CONCURRENT_READS)

        async def visit(shard_id: str) -> None:
            async with gate:
                if not self._closing.is_set():
                    await self._visit(shard_id)

        while not self._closing.is_set():
            began = time.monotonic()
            ranking = self._tasks.get("cloudwatch")
            if (
                self.rank_by_cloudwatch
                and began - self._ranked_at >= CLOUDWATCH_RANK_SECONDS
                and (ranking is None or ranking.done())
            ):
                self._ranked_at = began
                self._tasks["cloudwatch"] = asyncio.create_task(
                    self._rank_by_cloudwatch(), name=f"heat-{self.stream}-cloudwatch"
                )
            chosen = self.rotation.next_round(self.selected)
            # Every visit ends before the next second (none is left running when one fails).
            outcomes = await asyncio.gather(*(visit(shard_id) for shard_id in chosen), return_exceptions=True)
            failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
            for failure in failures:
                if not isinstance(failure, ConsoleError):
                    raise failure
            if failures:  # e.g. the stream was deleted: end the rotation, report at stop()
                self._failure = self._failure or failures[0]
                return
            await self._pause(1.0 - (time.monotonic() - began))

    async def _rank_by_cloudwatch(self) -> None:
        """The hottest shards by CloudWatch: a pass takes minutes, CloudWatch knows every shard's last
        minutes already (enhanced monitoring). A failure leaves the ranking to the last pass."""
        assert self.rotation is not None
        shard_ids = list(self.rotation)
        try:
            found = await shard_utilisation(self.backend, self.stream, shard_ids)
        except ConsoleError:
            self.rotation.ranked_by = "the last pass"
            return
        self.rotation.rank(found, by="CloudWatch")

    async def _visit(self, shard_id: str) -> None:
        """Read one shard up to its tip (at most PAGES_PER_VISIT pages): everything since the last visit."""
        assert self.heat is not None and self.rotation is not None
        cursor = self._cursors.get(shard_id) or await self._open_cursor(shard_id)
        for _ in range(PAGES_PER_VISIT):
            read_at = self.clock()
            try:
                page = await cursor.read()
            except Throttled:
                self.throttled_reads += 1
                return
            self.reads += 1
            self._count(shard_id, page.records)
            if page.ended:  # closed by a reshard: its children take its place in the rotation
                self.heat.mark_sampled(shard_id, read_at)
                self.closed_shards.append(shard_id)
                self.heat.mark_closed(shard_id, read_at)
                self.rotation.remove(shard_id)
                self._cursors.pop(shard_id, None)
                await self._follow_children(shard_id, page.child_shards)
                return
            # Known up to the read, less what it says is still behind it.
            self.heat.mark_sampled(shard_id, read_at - (page.millis_behind or 0) / 1000)
            if cursor.at_tip(page):
                break
        heat = self.heat.shards[shard_id]
        second = int(self.heat.sampled_at.get(shard_id, read_at))
        records, nbytes = heat.recent_rates(int(self.heat.window_start), second)
        self.rotation.note(shard_id, utilisation(records, nbytes))

    async def _open_cursor(self, shard_id: str) -> ShardCursor:
        """A shard's first visit: from the window's start, or from where a resumed window last read it
        (at most HISTORY_SECONDS back); a reshard's child from its beginning."""
        assert self.heat is not None
        position = self._start_at.pop(shard_id, None)
        if position is not None:
            iterator = await self.backend.get_shard_iterator(self.stream, shard_id, position)
        else:
            iterator = await self._since_last_read(shard_id)
        cursor = self._cursors[shard_id] = self._poll_cursor(
            shard_id, iterator, restart=lambda: self._since_last_read(shard_id)
        )
        return cursor

    async def _first_position(self, shard_id: str, iterator_type: str) -> str:
        """An iterator of `iterator_type`, or with enhanced fan-out the type itself (a subscription starts there)."""
        if self.subscribe is not None:
            return iterator_type
        return await self.backend.get_shard_iterator(self.stream, shard_id, iterator_type)

    def _cursor(
        self, shard_id: str, iterator: str, *, restart: Callable[[], Awaitable[str]]
    ) -> ShardCursor | SubscriptionCursor:
        if self.subscribe is not None:
            return SubscriptionCursor(
                shard_id=shard_id, start=starting_position(iterator), subscribe=self.subscribe, sleep=asyncio.sleep
            )
        return self._poll_cursor(shard_id, iterator, restart=restart)

    def _poll_cursor(self, shard_id: str, iterator: str, *, restart: Callable[[], Awaitable[str]]) -> ShardCursor:
        return ShardCursor(
            stream=self.stream,
            shard_id=shard_id,
            iterator=iterator,
            get_shard_iterator=self.backend.get_shard_iterator,
            get_records=self.backend.get_records,
            restart=restart,
            limit=self.records_per_read,
            min_interval=1.0 / MAX_READS_PER_SECOND,
            sleep=asyncio.sleep,
            clock=time.monotonic,
            share=self.read_share,
        )

    async def _since_last_read(self, shard_id: str) -> str:
        """An iterator at the first record not counted yet (at most HISTORY_SECONDS back): also what an
        iterator that expired between two visits (a pass longer than 5 minutes) is replaced by."""
        assert self.heat is not None
        since = max(self.heat.sampled_at.get(shard_id, self.heat.window_start), self.clock() - HISTORY_SECONDS)
        return await self.backend.get_shard_iterator(
            self.stream, shard_id, "AT_TIMESTAMP", timestamp=datetime.fromtimestamp(since, UTC)
        )

    async def _follow_children(self, parent_id: str, child_shards: list[dict[str, Any]] | None) -> None:
        """Start readers on the open children of a closed shard (GetRecords names them in ChildShards;
        without that, ListShards does)."""
        assert self.heat is not None
        if child_shards is None:
            children = [
                shard
                for shard in await self.backend.all_shards(self.stream)
                if shard.is_open and parent_id in shard.parents
            ]
        else:
            children = [
                Shard.from_api({**raw, "ParentShardId": (raw.get("ParentShards") or [None])[0]}) for raw in child_shards
            ]
        if self.rotation is not None:
            for child in children:
                if child.shard_id not in self.heat.shards:
                    self.heat.add_shard(child, since=self.clock())
                    self._start_at[child.shard_id] = "TRIM_HORIZON"  # a child holds only what followed the reshard
                self.rotation.add(child.shard_id)
            return
        for child in children:
            if child.shard_id in self._followed or child.shard_id in self._tasks or self._closing.is_set():
                continue
            self._followed.add(child.shard_id)  # before the await: the other parent of a merge may race us
            iterator = await self._first_position(child.shard_id, "TRIM_HORIZON")
            if self._closing.is_set():
                return
            self.heat.add_shard(child, since=self.clock())
            self._tasks[child.shard_id] = asyncio.create_task(
                self._read_shard(child.shard_id, iterator), name=f"heat-{self.stream}-{child.shard_id}"
            )

    async def _at_latest(self, shard_id: str) -> str:
        """A fresh iterator after the old one expired (5 minutes without a read, e.g. a suspended
        laptop) before anything was read; the cursor resumes after the last record otherwise."""
        return await self.backend.get_shard_iterator(self.stream, shard_id, "LATEST")

    async def _pause(self, seconds: float) -> None:
        """Sleep between reads, but wake at once when the window closes."""
        if seconds <= 0 or self._closing.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)
