"""The live shard map: a cached, asynchronously refreshed shard list with O(log N) prediction.

States:  INVALID --start()--> UPDATING --ListShards OK--> READY
         READY/UPDATING --invalidate(new evidence) / failed refresh--> INVALID (retrying) --> UPDATING ...

- INVALID: no trustworthy snapshot; `predict()` returns None so callers fall back (the pipeline
  keeps flowing). Also the state while the open shards do not tile the key space (`problem`).
- UPDATING: a refresh is in flight and there is no trustworthy snapshot to answer from.
- READY: a snapshot is installed and `predict()` answers in O(log N). A routine refresh
  (`request_refresh()`, `poll_interval`) keeps the map READY while it runs (`refreshing` is True):
  without evidence of change the old snapshot stays the best answer.

The transport is injected: `list_shards_fn(**kwargs)` takes ListShards' own argument names and
returns a ListShards-shaped dict, so this module never imports aiobotocore. Time is injected too
(`clock`, `sleep`) so backoff and TTL expiry are testable without waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from console.errors import BackendError, BadInput, ConsoleError
from console.keyspace.hashkeys import MAX_HASH_KEY, HashRangeIndex
from console.topology.lineage import OPEN, Lineage
from console.topology.model import Shard

ListShardsFn = Callable[..., Awaitable[dict[str, Any]]]
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]
Listener = Callable[["ShardMap"], None]

DEFAULT_CLOSED_SHARD_TTL = 60.0
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 30.0
AT_LATEST = {"Type": "AT_LATEST"}


class ShardMapState(str, Enum):
    INVALID = "INVALID"
    UPDATING = "UPDATING"
    READY = "READY"


@dataclass(frozen=True, slots=True)
class ShardMapSnapshot:
    """One immutable view of the stream's shards: open ones indexed, closed ones retained for a TTL."""

    version: int
    updated_at: float  # clock time at which the listing behind this snapshot started
    lineage: Lineage  # open shards plus the retained closed ones
    closed_since: Mapping[str, float]  # closed (or vanished) shard id -> when we first saw it closed

    @property
    def open_index(self) -> HashRangeIndex | None:
        return self.lineage.open_index

    @property
    def problem(self) -> str | None:
        return self.lineage.problem

    @property
    def shards(self) -> tuple[Shard, ...]:
        return tuple(node.shard for node in self.lineage.nodes.values())

    @property
    def open_shards(self) -> tuple[Shard, ...]:
        return tuple(node.shard for node in self.lineage.nodes.values() if node.state == OPEN)

    def is_open(self, shard_id: str) -> bool:
        node = self.lineage.nodes.get(shard_id)
        return node is not None and node.state == OPEN

    def predict(self, hash_key: int) -> str | None:
        index = self.lineage.open_index
        return None if index is None else index.predict(hash_key)

    def next_expiry(self, ttl: float) -> float | None:
        """When the earliest retained closed shard should be purged."""
        deadlines = [since + ttl for shard_id, since in self.closed_since.items() if shard_id in self.lineage]
        return min(deadlines, default=None)


def build_snapshot(
    listed: Sequence[Shard],
    *,
    previous: ShardMapSnapshot | None,
    now: float,
    closed_shard_ttl: float,
    version: int,
    updated_at: float,
) -> ShardMapSnapshot:
    """Merge a fresh listing with the previous snapshot.

    A shard missing from the listing (AT_LATEST drops closed shards) or listed as closed is kept
    until `closed_shard_ttl` after we first saw it closed, so records already in flight when a
    reshard landed can still be attributed. Expired ones are left out.
    """
    listed_by_id = {shard.shard_id: shard for shard in listed}
    open_ids = {shard_id for shard_id, shard in listed_by_id.items() if shard.is_open}
    earlier = previous.closed_since if previous is not None else {}
    candidates: dict[str, Shard] = dict(listed_by_id)
    closed_since = {shard_id: earlier.get(shard_id, now) for shard_id in listed_by_id if shard_id not in open_ids}
    if previous is not None:
        for node in previous.lineage.nodes.values():
            if node.shard_id not in listed_by_id:
                candidates[node.shard_id] = node.shard
                closed_since[node.shard_id] = earlier.get(node.shard_id, now)
    return _assemble(
        candidates,
        open_ids,
        closed_since,
        now=now,
        ttl=closed_shard_ttl,
        version=version,
        updated_at=updated_at,
        listed=listed_by_id.keys(),
    )


def purge_expired(snapshot: ShardMapSnapshot, *, now: float, closed_shard_ttl: float, version: int) -> ShardMapSnapshot:
    """The same snapshot without the closed shards whose TTL has run out."""
    candidates = {node.shard_id: node.shard for node in snapshot.lineage.nodes.values()}
    open_ids = {node.shard_id for node in snapshot.lineage.nodes.values() if node.state == OPEN}
    return _assemble(
        candidates,
        open_ids,
        dict(snapshot.closed_since),
        now=now,
        ttl=closed_shard_ttl,
        version=version,
        updated_at=snapshot.updated_at,
        listed=snapshot.closed_since.keys(),
    )


def _assemble(
    candidates: dict[str, Shard],
    open_ids: set[str],
    closed_since: dict[str, float],
    *,
    now: float,
    ttl: float,
    version: int,
    updated_at: float,
    listed: Iterable[str],
) -> ShardMapSnapshot:
    kept = [
        shard for shard_id, shard in candidates.items() if shard_id in open_ids or closed_since[shard_id] + ttl > now
    ]
    kept_ids = {shard.shard_id for shard in kept}
    # Remember closing times of expired shards the server still lists, so they are not re-admitted
    # with a fresh timestamp on the next refresh; forget the ones that vanished for good.
    still_listed = set(listed)
    closed_since = {i: t for i, t in closed_since.items() if i in kept_ids or i in still_listed}
    lineage = Lineage.build(kept, open_ids=open_ids)
    return ShardMapSnapshot(version=version, updated_at=updated_at, lineage=lineage, closed_since=closed_since)


class ShardMap:
    """Keeps a stream's shard map current. Use `async with ShardMap(...) as m:` or start()/aclose()."""

    def __init__(
        self,
        stream_name: str,
        list_shards_fn: ListShardsFn,
        *,
        closed_shard_ttl: float = DEFAULT_CLOSED_SHARD_TTL,
        shard_filter: dict[str, Any] | None = AT_LATEST,
        poll_interval: float | None = None,
        max_results: int | None = None,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.stream_name = stream_name
        self._list_shards = list_shards_fn
        self.closed_shard_ttl = closed_shard_ttl
        self._shard_filter = shard_filter
        self._poll_interval = poll_interval
        self._max_results = max_results
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._clock = clock
        self._sleep = sleep

        self._state = ShardMapState.INVALID
        self._snapshot: ShardMapSnapshot | None = None
        self._version = 0
        self.last_error: str | None = None  # why the latest attempt failed, for the UI's status line
        self.last_exception: BaseException | None = None
        self.failures = 0  # consecutive failed attempts
        self.retry_delay: float | None = None  # the backoff currently being waited out

        self._listeners: list[Listener] = []
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refresh_task: asyncio.Task[Any] | None = None
        self._purge_task: asyncio.Task[Any] | None = None
        self._started = False
        self._closed = False

    @classmethod
    def for_backend(cls, kinesis: Any, stream_name: str, **options: Any) -> ShardMap:
        """A map fed by a KinesisBackend (console.backend.kinesis)."""
        return cls(stream_name, backend_list_shards(kinesis), **options)

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> ShardMap:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Begin the first refresh (and polling, if asked). Returns at once; see `wait_ready()`."""
        if self._started or self._closed:
            return
        self._started = True
        self._begin_refresh()
        if self._poll_interval:
            self._spawn(self._poll(self._poll_interval), "poll")

    async def aclose(self) -> None:
        """Stop every background task and wait for them, so none outlives the map."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._refresh_task = self._purge_task = None
        self._wake_waiters()  # so they see the map is closed instead of waiting forever

    # -- reading ----------------------------------------------------------------------------

    @property
    def state(self) -> ShardMapState:
        return self._state

    @property
    def snapshot(self) -> ShardMapSnapshot | None:
        """The latest snapshot, also while INVALID (for display); None before the first listing."""
        return self._snapshot

    @property
    def version(self) -> int:
        return self._version

    @property
    def updated_at(self) -> float:
        return self._snapshot.updated_at if self._snapshot is not None else float("-inf")

    @property
    def problem(self) -> str | None:
        return self._snapshot.problem if self._snapshot is not None else None

    @property
    def lineage(self) -> Lineage | None:
        return self._snapshot.lineage if self._snapshot is not None else None

    @property
    def refreshing(self) -> bool:
        return self._refresh_task is not None

    @property
    def closed(self) -> bool:
        return self._closed

    def now(self) -> float:
        """The map's clock: pass its readings as `seen_at` to `invalidate()`."""
        return self._clock()

    def predict(self, hash_key: int) -> str | None:
        """The open shard that owns `hash_key`, or None while the map has no trustworthy snapshot."""
        if not 0 <= hash_key <= MAX_HASH_KEY:
            raise BadInput(f"hash key must be from 0 to {MAX_HASH_KEY}; got {hash_key}")
        if self._state is not ShardMapState.READY or self._snapshot is None:
            return None
        return self._snapshot.predict(hash_key)

    # -- triggering refreshes ---------------------------------------------------------------

    def invalidate(self, seen_at: float, predicted_shard: str | None) -> bool:
        """Report that a record seen at `seen_at` did not land where `predicted_shard` said.

        Refreshes only on new evidence: ignored when the snapshot was listed after `seen_at`, when
        the snapshot already knows `predicted_shard` is gone, or while a refresh is in flight.
        Returns True when it started a refresh.
        """
        snapshot = self._snapshot
        if self._closed or not self._started or snapshot is None:
            return False
        if seen_at <= snapshot.updated_at:
            return False
        if predicted_shard is not None and not snapshot.is_open(predicted_shard):
            return False
        if self._refresh_task is not None:
            return False
        self._set_state(ShardMapState.INVALID)
        self._begin_refresh()
        return True

    def request_refresh(self) -> bool:
        """A routine refresh (polling, a user's 'refresh' key). No-op while one is in flight."""
        if self._closed or not self._started or self._refresh_task is not None:
            return False
        self._begin_refresh()
        return True

    async def refresh(self) -> ShardMapSnapshot:
        """Refresh now (or join the refresh in flight) and return the snapshot it installs."""
        after = self._version
        if not self._started:
            await self.start()
        else:
            self.request_refresh()
        return await self.wait_for_snapshot(after)

    # -- waiting and listening --------------------------------------------------------------

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(map)` after every new snapshot and state change. Returns a remover."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait_for_snapshot(self, after_version: int | None = None) -> ShardMapSnapshot:
        """Wait for a snapshot newer than `after_version` (default: the current one)."""
        after = self._version if after_version is None else after_version
        while self._snapshot is None or self._snapshot.version <= after:
            self._raise_if_closed()
            changed = self._changed
            await changed.wait()
        return self._snapshot

    async def wait_ready(self, timeout: float | None = None, *, fail_fast: bool = False) -> ShardMapSnapshot:
        """Wait until READY. With `fail_fast`, the latest failed attempt raises its error instead of
        the wait lasting through the backoff (what a one-shot CLI command wants)."""
        try:
            async with asyncio.timeout(timeout):
                while self._state is not ShardMapState.READY:
                    self._raise_if_closed()
                    if fail_fast and self._state is ShardMapState.INVALID and self.failures:
                        raise self._failure_error()
                    changed = self._changed
                    await changed.wait()
        except TimeoutError:
            raise self._failure_error(f"not ready after {timeout:g} s") from None
        if self._snapshot is None:  # READY is only ever set with a snapshot installed
            raise self._failure_error()
        return self._snapshot

    # -- internals --------------------------------------------------------------------------

    def _failure_error(self, prefix: str = "refresh failed") -> ConsoleError:
        if isinstance(self.last_exception, ConsoleError):
            return self.last_exception
        detail = f": {self.last_error}" if self.last_error else ""
        return BackendError(f"shard map for stream {self.stream_name!r} {prefix}{detail}")

    def _raise_if_closed(self) -> None:
        if self._closed:
            raise BackendError(f"shard map for stream {self.stream_name!r} is closed")

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine, name=f"shardmap:{self.stream_name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _begin_refresh(self) -> None:
        if self._state is not ShardMapState.READY:
            self._set_state(ShardMapState.UPDATING)
        self._refresh_task = self._spawn(self._refresh_until_done(), "refresh")

    async def _refresh_until_done(self) -> None:
        """List until a listing succeeds and tiles, backing off 1 s, 2 s, ... up to 30 s between tries."""
        delay = self._initial_backoff
        try:
            while True:
                if self._state is ShardMapState.INVALID:
                    self._set_state(ShardMapState.UPDATING)
                started = self._clock()
                try:
                    listed = await self._list_all()
                except Exception as error:  # any transport failure is retried; the UI shows last_error
                    self._record_failure(f"ListShards failed: {error}", error)
                else:
                    snapshot = build_snapshot(
                        listed,
                        previous=self._snapshot,
                        now=self._clock(),
                        closed_shard_ttl=self.closed_shard_ttl,
                        version=self._version + 1,
                        updated_at=started,
                    )
                    if snapshot.problem is None:
                        self.last_error, self.last_exception, self.failures, self.retry_delay = None, None, 0, None
                        self._install(snapshot, ShardMapState.READY)
                        return
                    # Shown for diagnosis but never predicted from; a reshard caught mid-way heals on retry.
                    self._install(snapshot, ShardMapState.INVALID, notify=False)
                    self._record_failure(snapshot.problem, None)
                self.retry_delay = delay
                await self._sleep(delay)
                delay = min(delay * 2, self._max_backoff)
        finally:
            if self._refresh_task is asyncio.current_task():
                self._refresh_task = None
            self.retry_delay = None

    def _record_failure(self, message: str, error: BaseException | None) -> None:
        self.failures += 1
        self.last_error, self.last_exception = message, error
        if self._state is ShardMapState.UPDATING:
            self._state = ShardMapState.INVALID
        self._notify()

    async def _list_all(self) -> list[Shard]:
        """Every page of ListShards. AWS rejects StreamName (or ShardFilter) alongside NextToken,
        so follow-up calls carry the token alone."""
        request: dict[str, Any] = {"StreamName": self.stream_name}
        if self._shard_filter:
            request["ShardFilter"] = self._shard_filter
        if self._max_results:
            request["MaxResults"] = self._max_results
        shards: list[Shard] = []
        seen_tokens: set[str] = set()
        while True:
            page = await self._list_shards(**request)
            shards.extend(Shard.from_api(raw) for raw in page.get("Shards") or ())
            token = page.get("NextToken")
            if not token:
                return shards
            if token in seen_tokens:  # a server handing back an old token would page forever
                raise BackendError(f"ListShards repeated NextToken {token[:16]!r}... for {self.stream_name!r}")
            seen_tokens.add(token)
            request = {"NextToken": token}

    def _install(self, snapshot: ShardMapSnapshot, state: ShardMapState, *, notify: bool = True) -> None:
        self._snapshot = snapshot
        self._version = snapshot.version
        self._state = state
        self._schedule_purge()
        if notify:
            self._notify()

    def _schedule_purge(self) -> None:
        if self._purge_task is not None:
            self._purge_task.cancel()
            self._purge_task = None
        deadline = self._snapshot.next_expiry(self.closed_shard_ttl) if self._snapshot else None
        if deadline is not None and not self._closed:
            self._purge_task = self._spawn(self._purge_at(deadline), "purge")

    async def _purge_at(self, deadline: float) -> None:
        await self._sleep(max(0.0, deadline - self._clock()))
        if self._purge_task is asyncio.current_task():
            self._purge_task = None
        if self._snapshot is None:  # a purge is only scheduled after a snapshot is installed
            return
        snapshot = purge_expired(
            self._snapshot, now=self._clock(), closed_shard_ttl=self.closed_shard_ttl, version=self._version + 1
        )
        self._install(snapshot, self._state)

    async def _poll(self, interval: float) -> None:
        while True:
            await self._sleep(interval)
            self.request_refresh()

    def _set_state(self, state: ShardMapState) -> None:
        if state is not self._state:
            self._state = state
            self._notify()

    def _wake_waiters(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _notify(self) -> None:
        self._wake_waiters()
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception as error:  # a broken listener must not stop the refresh loop
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "shard map listener failed", "exception": error}
                )


def backend_list_shards(kinesis: Any) -> ListShardsFn:
    """Adapt KinesisBackend.list_shards (snake_case keywords) to ListShards' own argument names."""

    async def list_shards(
        *,
        StreamName: str | None = None,
        NextToken: str | None = None,  # ListShards' own names
        ShardFilter: dict[str, Any] | None = None,
        MaxResults: int | None = None,
    ) -> dict[str, Any]:
        page: dict[str, Any] = await kinesis.list_shards(
            stream=StreamName, next_token=NextToken, shard_filter=ShardFilter, max_results=MaxResults
        )
        return page

    return list_shards
