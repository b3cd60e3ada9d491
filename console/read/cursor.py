"""Reading one shard with GetRecords: the mechanics every reader of a shard repeats.

A `ShardCursor` holds a shard iterator and moves it along page by page. It does what is the same for
every consumer of a shard and nothing else:

- paces calls so the shard sees at most one GetRecords per `min_interval` seconds (AWS allows 5 a
  second per shard, shared by every consumer), and, given a `ReadShare`, within kconsole's share of
  the shard's budget (every call and its bytes counted there, a throttle reported there), with an
  injectable sleep and clock;
- remembers the last sequence number read, and when the iterator expires (5 minutes unused; the
  backend raises BackendError code "expired_iterator") gets a new one AFTER_SEQUENCE_NUMBER it, or
  at the start position when nothing was read yet, and reads again;
- reports the end of a closed shard: a page without a NextShardIterator (`page.ended`);
- says when a reader is done with the shard (`done(page, follow=...)`), the one stop rule every
  reader shares: a shard is done when it is read to its end, or, for a reader that stops at the
  tip, when it is open and the page reached its tip. A closed shard is read until it ends: AWS may
  hand back its last records, and empty pages, with a next iterator before the page that ends it,
  and stopping there would skip the rest of it and every child. (A server that never ends a
  closed shard is taken at its word after CLOSED_SHARD_PATIENCE empty pages in a row at its tip.)

What stays with the caller is policy: where to start, what a throttle means (Throttled is raised
as is: back off, count it, or retry it inside the injected call), whether to follow, what to do
with the records, and in which order to read parents and children. No I/O of its own: the calls
are injected.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from console.errors import BackendError, Throttled
from console.read.share import ReadShare

AFTER_SEQUENCE_NUMBER = "AFTER_SEQUENCE_NUMBER"
EXPIRED_ITERATOR = "expired_iterator"
# Empty pages in a row at a closed shard's tip, with a next iterator each time, after which the shard is
# taken as ended: AWS ends a closed shard with a null iterator, but some emulators hand out iterators forever.
CLOSED_SHARD_PATIENCE = 10


@dataclass(slots=True)
class ShardPage:
    """One GetRecords answer."""

    records: list[dict[str, Any]]
    next_iterator: str | None
    millis_behind: int | None
    child_shards: list[dict[str, Any]] | None
    answer: dict[str, Any]

    @property
    def ended(self) -> bool:
        """The shard is closed and read to its end (AWS hands out no further iterator)."""
        return self.next_iterator is None


class ShardCursor:
    """`page = await cursor.read()` until `page.ended` or the caller's own stop rule."""

    def __init__(
        self,
        *,
        stream: str,
        shard_id: str,
        iterator: str,
        get_shard_iterator: Callable[..., Awaitable[str]],
        get_records: Callable[..., Awaitable[dict[str, Any]]],
        restart: Callable[[], Awaitable[str]],
        limit: int = 10_000,
        min_interval: float = 0.0,
        closed: bool = False,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        share: ReadShare | None = None,
    ) -> None:
        self.stream = stream
        self.shard_id = shard_id
        self.iterator: str | None = iterator
        self.limit = limit
        self.min_interval = min_interval
        self.last_sequence: str | None = None
        self.last_call_at = float("-inf")  # clock() when the latest GetRecords was sent
        self.closed = closed  # the shard map says the shard is closed (the caller may learn it later)
        self.empty_at_tip = 0  # empty pages in a row with nothing behind
        self._get_shard_iterator = get_shard_iterator
        self._get_records = get_records
        self._restart = restart  # an iterator at the caller's start position (expired before any record)
        self._sleep = sleep
        self._clock = clock
        self._next_call = float("-inf")
        self._share = share

    def defer(self, seconds: float) -> None:
        """Make the next read wait until `seconds` from now (e.g. a slower poll when caught up)."""
        self._next_call = self._clock() + seconds

    async def read(self) -> ShardPage:
        """The next page. Raises Throttled and any other backend error except an expired iterator."""
        if self.iterator is None:
            raise RuntimeError(f"shard {self.shard_id} was read to its end")
        while True:
            wait = self._next_call - self._clock()
            if self._share is not None:
                wait = max(wait, self._share.wait(self.shard_id))
            if wait > 0:
                await self._sleep(wait)
            self.last_call_at = self._clock()
            self._next_call = self.last_call_at + self.min_interval
            try:
                answer = await self._get_records(self.iterator, limit=self.limit)
            except Throttled:
                if self._share is not None:
                    self._share.throttled(self.shard_id)
                raise
            except BackendError as error:
                if error.code != EXPIRED_ITERATOR:
                    raise
                self.iterator = await self._reposition()
                continue
            records = answer.get("Records") or []
            if self._share is not None:
                self._share.record(self.shard_id, sum(len(record.get("Data") or b"") for record in records))
            if records:
                self.last_sequence = records[-1]["SequenceNumber"]
            self.iterator = answer.get("NextShardIterator")
            page = ShardPage(
                records, self.iterator, answer.get("MillisBehindLatest"), answer.get("ChildShards"), answer
            )
            self.empty_at_tip = self.empty_at_tip + 1 if not records and not page.millis_behind else 0
            return page

    def at_tip(self, page: ShardPage) -> bool:
        """The page reached the shard's current end: a short page with nothing behind it."""
        lag = page.millis_behind
        return len(page.records) < self.limit and (lag == 0 or (lag is None and not page.records))

    def at_end(self, page: ShardPage) -> bool:
        """The shard is read to its end: no next iterator, or a closed shard that only gives empty pages."""
        return page.ended or (self.closed and self.empty_at_tip >= CLOSED_SHARD_PATIENCE)

    def done(self, page: ShardPage, *, follow: bool) -> bool:
        """Whether a reader is done with the shard after `page`: it is at its end, or (without `follow`)
        it is open and at its tip. A closed shard is never done before its end."""
        return self.at_end(page) or (not follow and not self.closed and self.at_tip(page))

    async def _reposition(self) -> str:
        if self.last_sequence is None:
            return await self._restart()
        return await self._get_shard_iterator(
            self.stream, self.shard_id, AFTER_SEQUENCE_NUMBER, sequence_number=self.last_sequence
        )
