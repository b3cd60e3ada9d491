"""Reading one shard with enhanced fan-out (SubscribeToShard): the API's rules, no I/O of its own.

A `SubscriptionCursor` stands where a GetRecords `ShardCursor` (console.read.cursor) stands, with the
same `read()` -> ShardPage and the same stop rules (`at_tip`, `at_end`, `done`), so `TailReader` keeps
its lineage ordering, windows, filters and decoding whichever way a shard is read. Each page is one
SubscribeToShardEvent: its records, its `MillisBehindLatest`, and its `ChildShards` at the shard's end
(where `ContinuationSequenceNumber` is null: `page.ended`).

The rules it follows:
- a subscription is opened at the caller's start position, and every later one AFTER_SEQUENCE_NUMBER
  the last event's `ContinuationSequenceNumber`, so a subscription that ends (AWS ends each after 5
  minutes) or a connection that drops mid-event is picked up with nothing missed or read twice (an
  event cut short was never handed over, and its records come again in the next subscription);
- at most one SubscribeToShard per second per consumer and shard (`MIN_SUBSCRIBE_INTERVAL`);
- ResourceInUse (another subscription to this shard with this consumer, or one made within 5 s) is
  waited out and tried again, up to `RESOURCE_IN_USE_PATIENCE` seconds, then raised;
- a connection that keeps failing before a single event arrives is raised after `RESUBSCRIBE_LIMIT`
  tries in a row (the reader's own retry policy, e.g. tail --follow's, takes over from there).

`subscribe(shard_id, starting_position)` is injected: an async context manager giving an async
iterator of event payloads (console.backend.subscribe.SubscribeTransport.subscribe with the
consumer's ARN bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from console.errors import AccessDenied, BackendError, BadInput, NoCredentials, ResourceInUse, StreamNotFound
from console.read.cursor import CLOSED_SHARD_PATIENCE, ShardPage
from console.read.positions import AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP
from console.topology.model import EfoConsumer

MIN_SUBSCRIBE_INTERVAL = 1.0  # AWS: one SubscribeToShard a second per consumer and shard
RESOURCE_IN_USE_PATIENCE = 30.0  # AWS takes a subscription over after 5 s; kinesis-mock waits for its end
RESUBSCRIBE_LIMIT = 5  # failed subscriptions in a row, with no event between them, before giving up
# An event holds at most 10,000 records: no page is ever "full" the way a GetRecords page can be.
EVENT_RECORD_LIMIT = 10_001

UNSUPPORTED = "unsupported"  # the error code of an endpoint without SubscribeToShard over HTTP/2
# What no new subscription can mend: the consumer or stream is gone, the credentials are refused.
_PERMANENT = (StreamNotFound, AccessDenied, NoCredentials)

Subscribe = Callable[[str, dict[str, Any]], AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]]


def starting_position(
    iterator_type: str, *, sequence_number: str | None = None, timestamp: Any = None
) -> dict[str, Any]:
    """SubscribeToShard's StartingPosition for a GetShardIterator-style position."""
    position: dict[str, Any] = {"Type": iterator_type}
    if iterator_type in (AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER):
        position["SequenceNumber"] = sequence_number
    if iterator_type == AT_TIMESTAMP:
        position["Timestamp"] = timestamp.timestamp() if isinstance(timestamp, datetime) else timestamp
    return position


class SubscriptionCursor:
    """`page = await cursor.read()` until `cursor.at_end(page)`, as with a ShardCursor."""

    def __init__(
        self,
        *,
        shard_id: str,
        start: dict[str, Any],
        subscribe: Subscribe,
        closed: bool = False,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_note: Callable[[str], Any] | None = None,
    ) -> None:
        self.shard_id = shard_id
        self.limit = EVENT_RECORD_LIMIT
        self.closed = closed
        self.last_sequence: str | None = None  # of the last record handed over
        self.continuation: str | None = None  # where the next subscription starts after
        self.empty_at_tip = 0
        self.subscriptions = 0  # SubscribeToShard calls that were answered with a stream of events
        self.millis_behind: int | None = None
        self._start = start
        self._subscribe = subscribe
        self._sleep = sleep
        self._clock = clock
        self._note = on_note
        self._last_subscribe = float("-inf")
        self._stack: contextlib.AsyncExitStack | None = None
        self._events: AsyncIterator[dict[str, Any]] | None = None
        self._failures = 0
        self._ended = False

    def defer(self, seconds: float) -> None:
        """Events are pushed: there is no poll to put off."""

    @property
    def position(self) -> dict[str, Any]:
        if self.continuation is not None:
            return starting_position(AFTER_SEQUENCE_NUMBER, sequence_number=self.continuation)
        return self._start

    async def read(self) -> ShardPage:
        """The next event as a page. Raises what a retry cannot mend, and repeated failures."""
        if self._ended:
            raise RuntimeError(f"shard {self.shard_id} was read to its end")
        in_use_since: float | None = None
        while True:
            try:
                if self._events is None:
                    await self._open()
                event = await anext(self._events)  # type: ignore[arg-type]
            except StopAsyncIteration:
                await self._close()  # the subscription ran its course: the next one continues it
                continue
            except ResourceInUse:
                await self._close()
                now = self._clock()
                if in_use_since is None:
                    in_use_since = now
                    self._say(
                        f"{self.shard_id}: another subscription with this consumer holds the shard (another reader, "
                        f"or one that took it over); subscribing again each second for up to "
                        f"{RESOURCE_IN_USE_PATIENCE:.0f} s, after the last record read"
                    )
                if now - in_use_since >= RESOURCE_IN_USE_PATIENCE:
                    raise ResourceInUse(
                        f"another subscription holds {self.shard_id} with this consumer and did not let go "
                        f"in {RESOURCE_IN_USE_PATIENCE:.0f} s"
                    ) from None
                continue
            except _PERMANENT:
                await self._close()
                raise
            except (BackendError, OSError) as error:
                await self._close()
                if isinstance(error, BackendError) and error.code == UNSUPPORTED:
                    raise
                await self._failed()
                continue
            self._failures = 0
            return self._page(event)

    def _say(self, message: str) -> None:
        if self._note is not None:
            self._note(message)

    async def aclose(self) -> None:
        await self._close()

    def at_tip(self, page: ShardPage) -> bool:
        return page.millis_behind == 0 or (page.millis_behind is None and not page.records)

    def at_end(self, page: ShardPage) -> bool:
        return page.ended or (self.closed and self.empty_at_tip >= CLOSED_SHARD_PATIENCE)

    def done(self, page: ShardPage, *, follow: bool) -> bool:
        return self.at_end(page) or (not follow and not self.closed and self.at_tip(page))

    # --- subscriptions -----------------------------------------------------------------------------

    async def _open(self) -> None:
        wait = self._last_subscribe + MIN_SUBSCRIBE_INTERVAL - self._clock()
        if wait > 0:
            await self._sleep(wait)
        self._last_subscribe = self._clock()
        stack = contextlib.AsyncExitStack()
        try:
            self._events = await stack.enter_async_context(self._subscribe(self.shard_id, self.position))
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        self.subscriptions += 1

    async def _close(self) -> None:
        stack, self._stack, self._events = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def _failed(self) -> None:
        self._failures += 1
        if self._failures >= RESUBSCRIBE_LIMIT:
            self._failures = 0
            raise BackendError(
                f"SubscribeToShard on {self.shard_id} failed {RESUBSCRIBE_LIMIT} times in a row without an event",
                code="subscription_failed",
            )

    def _page(self, event: dict[str, Any]) -> ShardPage:
        records = event.get("Records") or []
        continuation = event.get("ContinuationSequenceNumber")
        children = event.get("ChildShards") or None
        if records:
            self.last_sequence = records[-1]["SequenceNumber"]
        if continuation is not None:
            self.continuation = continuation
        elif records:
            self.continuation = self.last_sequence
        self.millis_behind = event.get("MillisBehindLatest")
        # The shard's end: no continuation, children named. The page's `next_iterator` carries the
        # continuation so `ShardPage.ended` means the same as for GetRecords.
        ended = continuation is None and children is not None
        page = ShardPage(records, None if ended else (continuation or ""), self.millis_behind, children, event)
        self.empty_at_tip = self.empty_at_tip + 1 if not records and not page.millis_behind else 0
        if ended:
            self._ended = True
        return page


# --- a temporary consumer of kconsole's own -------------------------------------------------------

TEMPORARY_PREFIX = "kconsole-"
# AWS's list prices in us-east-1 for a provisioned stream, as of 2025 (other regions and on-demand
# streams differ): what a temporary consumer costs while it is registered and while it reads.
CONSUMER_SHARD_HOUR_USD = 0.015
EFO_RETRIEVAL_PER_GB_USD = 0.013
PRICING_URL = "https://aws.amazon.com/kinesis/data-streams/pricing/"


def temporary_consumer_name(host: str, pid: int, moment: datetime) -> str:
    """`kconsole-<host>-<pid>-<UTC time>`: recognisably kconsole's own, and whose (a consumer name is 1
    to 128 of a-z A-Z 0-9 _ . -)."""
    return f"{TEMPORARY_PREFIX}{_name_safe_host(host)}-{pid}-{moment.strftime('%Y%m%dT%H%M%SZ')}"


def _name_safe_host(host: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "-" for c in host)[:60] or "host"


def is_temporary_consumer(name: str) -> bool:
    """Whether a consumer name is one `temporary_consumer_name` made."""
    return temporary_consumer_owner(name) is not None


def temporary_consumer_owner(name: str) -> tuple[str, int] | None:
    """The host (as the name spells it) and pid of the kconsole that registered a temporary consumer,
    or None for a name `temporary_consumer_name` did not make."""
    parts = name.removeprefix(TEMPORARY_PREFIX).rsplit("-", 2)
    if not name.startswith(TEMPORARY_PREFIX) or len(parts) != 3 or not parts[1].isdigit():
        return None
    return (parts[0], int(parts[1])) if parts[2].endswith("Z") else None


def left_over_consumers(names: Iterable[str], host: str, is_running: Callable[[int], bool]) -> list[str]:
    """Temporary consumers this host registered whose kconsole is no longer running (a kill -9 skips the
    deregistration at exit). Another host's are left alone: whether its kconsole runs cannot be known here."""
    here = _name_safe_host(host)
    left = []
    for name in names:
        owner = temporary_consumer_owner(name)
        if owner is not None and owner[0] == here and not is_running(owner[1]):
            left.append(name)
    return sorted(left)


def temporary_consumer_preview(name: str, stream: str, shards: int, command: str = "tail") -> str:
    """What registering a temporary consumer does and what AWS charges for it, before it is done."""
    hourly = shards * CONSUMER_SHARD_HOUR_USD
    return (
        f"Register a temporary enhanced fan-out consumer {name} on {stream} to read it without sharing the "
        f"shards' 2 MiB/s with other readers; it is deregistered when {command} ends (Ctrl-C included). AWS "
        f"charges ${CONSUMER_SHARD_HOUR_USD:.3f} per consumer-shard hour ({shards} shard"
        f"{'s' if shards != 1 else ''}: ${hourly:.3f} for each hour or part of one) and "
        f"${EFO_RETRIEVAL_PER_GB_USD:.3f} per GB it reads (us-east-1 list prices for a provisioned stream as "
        f"of 2025; other regions and on-demand streams differ: {PRICING_URL})."
    )


def consumer_problem(
    consumer: EfoConsumer | None, name: str, stream: str, stream_arn: str, registered: list[str]
) -> str | None:
    """Why an existing consumer cannot be read with (one line), or None when it can: it is not on this
    stream, or not ACTIVE yet."""
    if name.startswith("arn:") and not name.startswith(stream_arn + "/consumer/"):
        other = name.split(":stream/", 1)[-1].split("/consumer/", 1)[0]
        return f"consumer {name} is registered on stream {other}, not on {stream}"
    if consumer is None:
        listed = ", ".join(sorted(registered)) or "none"
        return f"no enhanced fan-out consumer {name!r} on {stream} (registered: {listed})"
    if not consumer.active:
        return (
            f"consumer {consumer.name or name} on {stream} is {consumer.status}, not ACTIVE: it can be read "
            "with once AWS has made it (seconds after registering)"
        )
    return None


async def named_consumer_arn(kinesis: Any, stream: str, name: str) -> str:
    """The ARN of the registered consumer `name` (its name or ARN) to read `stream` with; one line of
    BadInput when it cannot be read with (see `consumer_problem`)."""
    summary = await kinesis.describe_stream_summary(stream)
    consumers: list[EfoConsumer] = await kinesis.list_stream_consumers(summary.arn)
    found = next((c for c in consumers if name in (c.name, c.arn)), None)
    problem = consumer_problem(found, name, stream, summary.arn, [c.name for c in consumers])
    if problem is not None or found is None:
        raise BadInput(problem or f"no consumer {name!r} on {stream}", code="consumer")
    return found.arn


async def until_active(kinesis: Any, stream_arn: str, name: str, timeout: float = 120.0) -> None:
    """A consumer is read with once ACTIVE (AWS takes seconds to make one)."""
    deadline = time.monotonic() + timeout
    while not (await kinesis.describe_stream_consumer(stream_arn, name)).active:
        if time.monotonic() > deadline:
            raise BadInput(f"consumer {name} did not become ACTIVE in {timeout:.0f} s", code="consumer")
        await asyncio.sleep(0.5)
