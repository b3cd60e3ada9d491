"""ShardMap against an injected ListShards transport: the cases a real server cannot produce on demand
(a failing ListShards, exact page boundaries, a listing caught mid-reshard, time passing for TTLs).
The routing cross-check against a real server lives with the backend tests."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import BackendError, StreamNotFound
from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY, even_split, md5_hash_key, shard_id_for_index
from console.topology.model import Shard
from console.topology.shardmap import ShardMap, ShardMapState, build_snapshot

STREAM = "orders"


def raw_shard(
    shard_id: str, start: int, end: int, parent: str | None = None, adjacent: str | None = None, closed: bool = False
) -> dict:
    raw = {
        "ShardId": shard_id,
        "HashKeyRange": {"StartingHashKey": str(start), "EndingHashKey": str(end)},
        "SequenceNumberRange": {"StartingSequenceNumber": "1"},
    }
    if closed:
        raw["SequenceNumberRange"]["EndingSequenceNumber"] = "2"
    if parent:
        raw["ParentShardId"] = parent
    if adjacent:
        raw["AdjacentParentShardId"] = adjacent
    return raw


def even_listing(count: int) -> list[dict]:
    return [raw_shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count))]


def split(listing: list[dict], shard_id: str, first_new: int) -> list[dict]:
    """The listing after splitting `shard_id` in half: the parent closes, two children open."""
    out = []
    for raw in listing:
        if raw["ShardId"] != shard_id:
            out.append(raw)
            continue
        start, end = int(raw["HashKeyRange"]["StartingHashKey"]), int(raw["HashKeyRange"]["EndingHashKey"])
        middle = (start + end + 1) // 2
        out.append(raw_shard(shard_id, start, end, closed=True))
        out.append(raw_shard(shard_id_for_index(first_new), start, middle - 1, parent=shard_id))
        out.append(raw_shard(shard_id_for_index(first_new + 1), middle, end, parent=shard_id))
    return out


class FakeListShards:
    """ListShards with AWS's argument rules: StreamName on the first call, NextToken alone after,
    AT_LATEST drops closed shards. `fail_next` calls raise; `gate` (when set) holds calls open."""

    def __init__(self, listing: list[dict], page_size: int = 1000) -> None:
        self.listing = listing
        self.page_size = page_size
        self.calls: list[dict] = []
        self.fail_next = 0
        self.failure: Exception = BackendError("endpoint unreachable")
        self.gate: asyncio.Event | None = None
        self._pages: dict[str, list[dict]] = {}

    async def __call__(self, **kwargs) -> dict:
        self.calls.append(kwargs)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next -= 1
            raise self.failure
        if "NextToken" in kwargs:
            if set(kwargs) != {"NextToken"}:
                raise BackendError("InvalidArgumentException: NextToken and StreamName cannot be provided together")
            token = kwargs["NextToken"]
            generation, offset = token.rsplit(":", 1)
            shards = self._pages[generation]
        else:
            assert kwargs["StreamName"] == STREAM
            shards = list(self.listing)
            if (kwargs.get("ShardFilter") or {}).get("Type") == "AT_LATEST":
                shards = [s for s in shards if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
            generation = f"gen{len(self.calls)}"
            self._pages[generation] = shards
            offset = "0"
        begin = int(offset)
        page = {"Shards": shards[begin : begin + self.page_size]}
        if begin + self.page_size < len(shards):
            page["NextToken"] = f"{generation}:{begin + self.page_size}"
        return page


class ManualClock:
    """A clock and sleep that move only when the test says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        future = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + seconds, future))
        await future

    async def advance(self, seconds: float) -> None:
        self.now += seconds
        due = [(d, f) for d, f in self._sleepers if d <= self.now]
        self._sleepers = [(d, f) for d, f in self._sleepers if d > self.now]
        for _, future in due:
            if not future.done():
                future.set_result(None)
        await settle()


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def make_map(transport: FakeListShards, clock: ManualClock, **options) -> ShardMap:
    return ShardMap(STREAM, transport, clock=clock, sleep=clock.sleep, **options)


def linear_owner(shards: list[Shard], hash_key: int) -> str:
    return next(s.shard_id for s in shards if s.starting_hash_key <= hash_key <= s.ending_hash_key)


async def test_states_go_invalid_updating_ready_and_predict_answers_only_when_ready():
    transport, clock = FakeListShards(even_listing(4)), ManualClock()
    transport.gate = asyncio.Event()
    shard_map = make_map(transport, clock)
    seen: list[ShardMapState] = []
    shard_map.add_listener(lambda m: seen.append(m.state))
    assert shard_map.state is ShardMapState.INVALID and shard_map.predict(0) is None
    async with shard_map:
        assert shard_map.state is ShardMapState.UPDATING
        assert shard_map.predict(0) is None
        transport.gate.set()
        snapshot = await shard_map.wait_ready(timeout=5)
        assert shard_map.state is ShardMapState.READY
        assert snapshot.version == shard_map.version == 1
        assert snapshot.updated_at == clock.now
        for key in ("alpha", "beta", "gamma", "delta"):
            hash_key = md5_hash_key(key)
            assert shard_map.predict(hash_key) == linear_owner(list(snapshot.shards), hash_key)
        assert shard_map.predict(MAX_HASH_KEY) == shard_id_for_index(3)
    assert seen == [ShardMapState.UPDATING, ShardMapState.READY]


async def test_three_page_listing_sends_next_token_alone_after_the_first_call():
    transport, clock = FakeListShards(even_listing(25), page_size=10), ManualClock()
    async with make_map(transport, clock) as shard_map:
        snapshot = await shard_map.wait_ready(timeout=5)
    assert len(transport.calls) == 3
    assert transport.calls[0] == {"StreamName": STREAM, "ShardFilter": {"Type": "AT_LATEST"}}
    assert all(set(call) == {"NextToken"} for call in transport.calls[1:])
    assert [s.shard_id for s in snapshot.open_shards] == [shard_id_for_index(i) for i in range(25)]


async def test_failing_list_shards_backs_off_then_recovers():
    transport, clock = FakeListShards(even_listing(4)), ManualClock()
    transport.fail_next = 2
    async with make_map(transport, clock) as shard_map:
        await settle()
        assert shard_map.state is ShardMapState.INVALID
        assert shard_map.predict(5) is None
        assert "endpoint unreachable" in shard_map.last_error and shard_map.failures == 1
        assert clock.sleeps == [1.0]
        await clock.advance(1.0)
        assert shard_map.failures == 2 and clock.sleeps == [1.0, 2.0]
        await clock.advance(1.0)  # not yet: the second backoff is 2 s
        assert len(transport.calls) == 2
        await clock.advance(1.0)
        assert shard_map.state is ShardMapState.READY
        assert shard_map.failures == 0 and shard_map.last_error is None
        assert shard_map.predict(5) == shard_id_for_index(0)
        assert len(transport.calls) == 3


async def test_backoff_doubles_up_to_thirty_seconds():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    transport.fail_next = 8
    async with make_map(transport, clock) as shard_map:
        await settle()
        for _ in range(8):
            await clock.advance(30.0)
        assert shard_map.state is ShardMapState.READY
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


async def test_fail_fast_wait_surfaces_the_transport_error():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    transport.fail_next = 1
    transport.failure = StreamNotFound("stream 'orders' not found")
    async with make_map(transport, clock) as shard_map:
        with pytest.raises(StreamNotFound):
            await shard_map.wait_ready(timeout=5, fail_fast=True)


async def test_invalidate_needs_new_evidence_and_is_idempotent_in_flight():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    async with make_map(transport, clock) as shard_map:
        await shard_map.wait_ready(timeout=5)
        listed_at = shard_map.updated_at
        parent = shard_id_for_index(0)
        # Evidence older than (or as old as) the snapshot teaches nothing.
        assert shard_map.invalidate(listed_at, parent) is False
        assert shard_map.invalidate(listed_at - 5, parent) is False
        # A shard the snapshot does not have open: a refresh would not change the prediction.
        assert shard_map.invalidate(listed_at + 5, "shardId-999999999999") is False
        assert len(transport.calls) == 1 and shard_map.state is ShardMapState.READY

        transport.listing = split(transport.listing, parent, first_new=2)
        transport.gate = asyncio.Event()
        await clock.advance(10)
        assert shard_map.invalidate(clock.now, parent) is True
        assert shard_map.state is ShardMapState.UPDATING
        assert shard_map.predict(5) is None  # the snapshot is known stale: callers fall back
        assert shard_map.invalidate(clock.now, parent) is False  # one refresh in flight is enough
        assert shard_map.invalidate(clock.now, shard_id_for_index(1)) is False
        await settle()
        assert len(transport.calls) == 2
        transport.gate.set()
        snapshot = await shard_map.wait_ready(timeout=5)
        assert snapshot.updated_at == clock.now > listed_at
        assert shard_map.predict(5) == shard_id_for_index(2)
        # The parent is now known closed: invalidating against it is ignored.
        assert shard_map.invalidate(clock.now + 1, parent) is False
        assert len(transport.calls) == 2


async def test_closed_parent_is_retained_for_the_ttl_then_purged():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    async with make_map(transport, clock, closed_shard_ttl=60.0) as shard_map:
        await shard_map.wait_ready(timeout=5)
        parent = shard_id_for_index(0)
        transport.listing = split(transport.listing, parent, first_new=2)
        await clock.advance(1)
        snapshot = await shard_map.refresh()
        lineage = snapshot.lineage
        assert parent in lineage and lineage[parent].state == "closed"
        assert lineage[parent].children == (shard_id_for_index(2), shard_id_for_index(3))
        assert lineage.owner_before(5).previous == parent
        assert snapshot.closed_since == {parent: clock.now}
        version = shard_map.version

        await clock.advance(59.5)
        assert parent in shard_map.snapshot.lineage and shard_map.version == version
        await clock.advance(0.5)
        assert parent not in shard_map.snapshot.lineage
        assert shard_map.version == version + 1
        assert shard_map.state is ShardMapState.READY
        # A later refresh does not bring the vanished parent back.
        await clock.advance(1)
        snapshot = await shard_map.refresh()
        assert parent not in snapshot.lineage and len(snapshot.open_shards) == 3


async def test_listed_closed_shards_expire_and_are_not_readmitted():
    listing = split(even_listing(2), shard_id_for_index(0), first_new=2)
    transport, clock = FakeListShards(listing), ManualClock()
    async with make_map(transport, clock, shard_filter=None, closed_shard_ttl=30.0) as shard_map:
        snapshot = await shard_map.wait_ready(timeout=5)
        assert transport.calls[0] == {"StreamName": STREAM}
        assert len(snapshot.shards) == 4 and len(snapshot.open_shards) == 3
        await clock.advance(30)
        assert len(shard_map.snapshot.shards) == 3
        snapshot = await shard_map.refresh()  # the server still lists the closed parent
        assert len(snapshot.shards) == 3


async def test_listing_that_does_not_tile_is_reported_and_retried():
    broken = even_listing(4)
    del broken[2]
    transport, clock = FakeListShards(broken), ManualClock()
    async with make_map(transport, clock) as shard_map:
        await settle()
        assert shard_map.state is ShardMapState.INVALID
        assert "gap in the key space" in shard_map.problem
        assert shard_map.problem == shard_map.last_error
        assert len(shard_map.snapshot.shards) == 3  # visible for diagnosis
        assert shard_map.predict(5) is None
        transport.listing = even_listing(4)
        await clock.advance(1.0)
        assert shard_map.state is ShardMapState.READY and shard_map.problem is None
        assert shard_map.predict(MAX_HASH_KEY) == shard_id_for_index(3)


async def test_repeated_next_token_is_an_error_not_an_endless_loop():
    clock = ManualClock()
    calls = []

    async def stuck_transport(**kwargs):
        calls.append(kwargs)
        return {"Shards": even_listing(1), "NextToken": "same"}

    async with ShardMap(STREAM, stuck_transport, clock=clock, sleep=clock.sleep) as shard_map:
        await settle()
        assert shard_map.state is ShardMapState.INVALID
        assert "repeated NextToken" in shard_map.last_error
    assert len(calls) == 2


async def test_polling_refreshes_and_close_leaves_no_tasks_behind():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    shard_map = make_map(transport, clock, poll_interval=5.0)
    await shard_map.start()
    await shard_map.wait_ready(timeout=5)
    transport.listing = split(transport.listing, shard_id_for_index(1), first_new=2)
    waiter = asyncio.ensure_future(shard_map.wait_for_snapshot())
    await clock.advance(5.0)
    snapshot = await asyncio.wait_for(waiter, 5)
    assert shard_map.state is ShardMapState.READY  # a routine poll never dropped prediction
    assert len(snapshot.open_shards) == 3 and snapshot.version == 2
    await shard_map.aclose()
    leftovers = [t for t in asyncio.all_tasks() if t.get_name().startswith("shardmap:")]
    assert leftovers == []
    assert shard_map.request_refresh() is False
    with pytest.raises(BackendError):
        await shard_map.wait_for_snapshot()


async def test_a_failing_listener_does_not_stop_the_map():
    transport, clock = FakeListShards(even_listing(2)), ManualClock()
    reported = []
    loop = asyncio.get_running_loop()
    previous_handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    try:
        async with make_map(transport, clock) as shard_map:
            shard_map.add_listener(lambda _m: 1 / 0)
            await shard_map.wait_ready(timeout=5)
            assert shard_map.predict(0) == shard_id_for_index(0)
    finally:
        loop.set_exception_handler(previous_handler)
    assert "shard map listener failed" in reported


@st.composite
def tilings(draw):
    count = draw(st.integers(min_value=1, max_value=60))
    cuts = draw(
        st.lists(st.integers(min_value=1, max_value=MAX_HASH_KEY), min_size=count - 1, max_size=count - 1, unique=True)
    )
    bounds = [0, *sorted(cuts), HASH_SPACE]
    order = draw(st.permutations(range(len(bounds) - 1)))  # listing order need not be key order
    return [Shard(shard_id_for_index(i), bounds[i], bounds[i + 1] - 1) for i in order]


@settings(max_examples=150, deadline=None)
@given(tilings(), st.lists(st.integers(min_value=0, max_value=MAX_HASH_KEY), max_size=30), st.randoms())
def test_predict_equals_a_linear_scan_over_random_tilings(shards, keys, rnd: random.Random):
    snapshot = build_snapshot(shards, previous=None, now=0.0, closed_shard_ttl=60.0, version=1, updated_at=0.0)
    assert snapshot.problem is None
    boundaries = [k for s in shards for k in (s.starting_hash_key, s.ending_hash_key)]
    probes = keys + boundaries + [rnd.randrange(HASH_SPACE) for _ in range(10)]
    for hash_key in probes:
        assert snapshot.predict(hash_key) == linear_owner(shards, hash_key)


async def test_live_map_matches_the_server_and_follows_a_split_through_invalidate(kinesis, make_stream):
    """The KPL loop against the embedded server: predict, put, compare; a mismatch after a split
    is the evidence that invalidates the map, and the refreshed map agrees with the server again."""
    name = await make_stream(shards=2)
    rng = random.Random(5)
    keys = [f"user-{i}" for i in range(30)]
    explicit = [rng.randrange(HASH_SPACE) for _ in range(10)]

    async def put(key: str, hash_key: int | None) -> str:
        response = await kinesis.put_record(name, b"x", key, explicit_hash_key=hash_key)
        return response["ShardId"]

    async with ShardMap.for_backend(kinesis, name) as shard_map:
        await shard_map.wait_ready(timeout=10, fail_fast=True)
        for key in keys:
            assert shard_map.predict(md5_hash_key(key)) == await put(key, None)
        for hash_key in explicit:
            assert shard_map.predict(hash_key) == await put("k", hash_key)

        parent = "shardId-000000000000"
        await kinesis.split_shard(name, parent, HASH_SPACE // 4)
        await kinesis.wait_for_active(name)
        mismatches = refreshes = 0
        for key in keys:
            seen_at, predicted = shard_map.now(), shard_map.predict(md5_hash_key(key))
            actual = await put(key, None)
            if predicted is not None and predicted != actual:
                mismatches += 1
                refreshes += shard_map.invalidate(seen_at, predicted)
        assert mismatches >= 1 and refreshes >= 1
        snapshot = await shard_map.wait_ready(timeout=10)
        assert snapshot.lineage[parent].state == "closed"  # retained for the TTL after it vanished
        for key in keys:
            assert shard_map.predict(md5_hash_key(key)) == await put(key, None)
        for hash_key in explicit:
            ownership = snapshot.lineage.owner_before(hash_key)
            assert ownership.owner == await put("k", hash_key)
            if ownership.owner in ("shardId-000000000002", "shardId-000000000003"):
                assert ownership.previous == parent


@pytest.mark.kinesis_mock
async def test_live_map_matches_kinesis_mock_routing(kinesis_mock):
    from console.backend import BackendConfig, open_backend

    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    rng = random.Random(9)
    async with open_backend(config) as backend:
        name = f"map-{uuid.uuid4().hex[:10]}"
        await backend.create_stream(name, 4)
        try:
            await backend.wait_for_active(name)
            async with ShardMap.for_backend(backend, name) as shard_map:
                snapshot = await shard_map.wait_ready(timeout=10, fail_fast=True)
                for hash_key in [rng.randrange(HASH_SPACE) for _ in range(20)] + [0, MAX_HASH_KEY]:
                    response = await backend.put_record(name, b"x", "k", explicit_hash_key=hash_key)
                    assert snapshot.predict(hash_key) == response["ShardId"]
        finally:
            await backend.delete_stream(name)
