"""The heat sampler against the embedded local Kinesis, with a writer of known skew and rate."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.errors import Throttled
from console.heat.sampler import HeatSampler
from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key

HOT_KEY = "tenant-hot"
RATE = 200  # records/s written
TICK = 0.1  # one PutRecords call per tick
PAYLOAD = b"x" * 90


class SteadyWriter:
    """PutRecords on a fixed schedule: half the records carry HOT_KEY, the rest distinct keys."""

    def __init__(self, kinesis, stream: str) -> None:
        self.kinesis, self.stream = kinesis, stream
        self.sent: list[tuple[float, str]] = []  # (time the call returned, key)
        self.began = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        per_tick = int(RATE * TICK)
        self.began = time.monotonic()
        tick = 0
        while not stop.is_set():
            keys = [HOT_KEY if i % 2 == 0 else f"cold-{tick}-{i}" for i in range(per_tick)]
            response = await self.kinesis.put_records(
                self.stream, [{"Data": PAYLOAD, "PartitionKey": key} for key in keys]
            )
            assert response.get("FailedRecordCount", 0) == 0
            now = time.time()
            self.sent.extend((now, key) for key in keys)
            tick += 1
            await asyncio.sleep(max(0.0, self.began + tick * TICK - time.monotonic()))

    def between(self, start: float, end: float) -> list[str]:
        return [key for sent_at, key in self.sent if start <= sent_at < end]


async def test_sampler_finds_hot_shard_and_key_at_the_produced_rate(kinesis, make_stream):
    stream = await make_stream(shards=4)
    shards = await kinesis.all_shards(stream)
    index = HashRangeIndex.build((s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in shards)
    hot_shard = index.predict(md5_hash_key(HOT_KEY))

    writer = SteadyWriter(kinesis, stream)
    stop = asyncio.Event()
    writing = asyncio.create_task(writer.run(stop))
    await asyncio.sleep(0.5)
    sampler = HeatSampler(kinesis, stream, reads_per_second=4, drain_grace=0.2)
    await sampler.start()
    await asyncio.sleep(3.0)
    snapshot = await sampler.stop()
    stop.set()
    await writing

    assert not sampler.running and sampler.reads >= 4 * 4 * 2
    # What the writer sent during the window, by the shard MD5 routes each key to.
    sent = writer.between(snapshot.window_start, snapshot.window_end)
    window = snapshot.window_end - snapshot.window_start
    produced_rate = len(sent) / window
    assert produced_rate == pytest.approx(RATE, rel=0.1)  # the writer kept its pace
    assert snapshot.records_per_s == pytest.approx(produced_rate, rel=0.1)
    assert snapshot.records_per_s == pytest.approx(RATE, rel=0.1)

    hottest = snapshot.hottest
    assert hottest.shard_id == hot_shard
    expected_hot = sum(1 for key in sent if index.predict(md5_hash_key(key)) == hot_shard) / window
    assert hottest.records_per_s == pytest.approx(expected_hot, rel=0.1)
    assert hottest.bytes_per_s == pytest.approx(expected_hot * (len(PAYLOAD) + len(HOT_KEY)), rel=0.1)
    assert hottest.peak_records_per_s >= hottest.records_per_s * 0.9
    top = hottest.top_keys[0]
    assert top.key == HOT_KEY
    hot_share_of_shard = (RATE / 2) / expected_hot
    assert top.share == pytest.approx(hot_share_of_shard, abs=0.05)
    assert hottest.utilisation == pytest.approx(hottest.records_per_s / 1000, rel=1e-6)
    assert hottest.split is not None and hottest.split.dominant_key == HOT_KEY
    assert hottest.starting_hash_key + 1 < hottest.split.at < hottest.ending_hash_key


async def test_arrival_timestamps_are_real_time(kinesis, make_stream):
    """The rates rest on ApproximateArrivalTimestamp: the local server must stamp the wall clock."""
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0]
    iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
    before = time.time()
    await kinesis.put_records(stream, [{"Data": b"a", "PartitionKey": "k"}])
    await asyncio.sleep(1.1)
    await kinesis.put_records(stream, [{"Data": b"b", "PartitionKey": "k"}])
    after = time.time()
    records = (await kinesis.get_records(iterator))["Records"]
    stamps = [record["ApproximateArrivalTimestamp"].timestamp() for record in records]
    assert len(stamps) == 2
    assert before - 1 <= stamps[0] <= stamps[1] <= after + 1
    assert stamps[1] - stamps[0] == pytest.approx(1.1, abs=0.3)


class ThrottleOnce:
    """The backend, except GetRecords is throttled once per shard (no local server throttles reads)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.throttled: set[str] = set()

    def __getattr__(self, name):
        return getattr(self.backend, name)

    async def get_records(self, iterator, limit=10000):
        if iterator not in self.throttled and len(self.throttled) < 2:
            self.throttled.add(iterator)
            raise Throttled("throttled by test on GetRecords")
        return await self.backend.get_records(iterator, limit)


async def test_sampler_survives_throttling_and_leaves_no_tasks(kinesis, make_stream):
    stream = await make_stream(shards=2)
    before = {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}
    async with HeatSampler(ThrottleOnce(kinesis), stream, reads_per_second=5, drain_grace=0.1) as sampler:
        await asyncio.sleep(1.3)  # past the 1 s pause after a throttle
        await kinesis.put_records(stream, [{"Data": b"v", "PartitionKey": f"k{i}"} for i in range(20)])
        await asyncio.sleep(0.3)
    assert sampler.throttled_reads == 2
    assert sum(shard.records for shard in sampler.snapshot().shards) == 20
    after = {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}
    assert not {task for task in after - before if task.get_name().startswith("heat-")}


async def test_reads_stay_within_the_get_records_limit(kinesis, make_stream):
    stream = await make_stream(shards=1)
    sampler = HeatSampler(kinesis, stream, reads_per_second=5, drain_grace=0.0)
    await sampler.start()
    await asyncio.sleep(2.0)
    await sampler.stop()
    window = sampler.heat.window_end - sampler.heat.window_start
    assert sampler.reads <= 5 * window + 2  # the last read adds one; the first starts at once


def test_reads_per_second_above_the_limit_is_refused():
    from console.errors import BadInput

    with pytest.raises(BadInput, match="at most 5"):
        HeatSampler(object(), "s", reads_per_second=6)


async def test_snapshots_stream_while_running_and_end_on_stop(kinesis, make_stream):
    stream = await make_stream(shards=1)
    sampler = HeatSampler(kinesis, stream, reads_per_second=5, drain_grace=0.0)
    await sampler.start()
    seen = []

    async def watch():
        async for snapshot in sampler.snapshots(every=0.2):
            seen.append(snapshot)

    watcher = asyncio.create_task(watch())
    await kinesis.put_records(stream, [{"Data": b"v", "PartitionKey": "k"} for _ in range(10)])
    await asyncio.sleep(1.0)
    await sampler.stop()
    await asyncio.wait_for(watcher, 2)  # the generator ends when the sampler stops
    assert len(seen) >= 3
    assert seen[-1].shards[0].records == 10


async def test_sampler_follows_a_split_into_the_children(kinesis, make_stream):
    stream = await make_stream(shards=1)
    parent = (await kinesis.all_shards(stream))[0]
    sampler = HeatSampler(kinesis, stream, reads_per_second=5, drain_grace=0.2)
    await sampler.start()
    await kinesis.put_records(stream, [{"Data": b"before", "PartitionKey": f"b{i}"} for i in range(30)])
    await asyncio.sleep(0.5)
    middle = (parent.starting_hash_key + parent.ending_hash_key) // 2
    await kinesis.split_shard(stream, parent.shard_id, middle)
    await kinesis.wait_for_active(stream)
    await asyncio.sleep(0.8)  # the parent's reader reaches the closed end and hands over
    await kinesis.put_records(stream, [{"Data": b"after", "PartitionKey": f"a{i}"} for i in range(40)])
    await asyncio.sleep(0.8)
    snapshot = await sampler.stop()

    assert sampler.closed_shards == [parent.shard_id]
    window = snapshot.window_end - snapshot.window_start
    by_id = {shard.shard_id: shard for shard in snapshot.shards}
    children = [shard for shard in by_id.values() if shard.shard_id != parent.shard_id]
    assert len(children) == 2 and all(child.is_open for child in children)
    assert not by_id[parent.shard_id].is_open
    assert by_id[parent.shard_id].records == 30
    assert sum(child.records for child in children) == 40
    for child in children:  # each child counted exactly the keys MD5 routes into its range
        expected = sum(
            1 for i in range(40) if child.starting_hash_key <= md5_hash_key(f"a{i}") <= child.ending_hash_key
        )
        assert child.records == expected
        # rates cover only the part of the window each shard lived in: born after the split
        assert child.window_seconds < window - 0.5
    assert by_id[parent.shard_id].window_seconds < window - 0.5  # closed before the end
    assert snapshot.hottest.is_open
    assert not sampler.running


async def test_cancelling_stop_midway_still_leaves_no_readers(kinesis, make_stream):
    """The app quitting cancels whatever is stopping the sampler: the readers must go anyway."""
    stream = await make_stream(shards=2)
    sampler = HeatSampler(kinesis, stream, reads_per_second=5, drain_grace=5.0)
    await sampler.start()
    readers = list(sampler._tasks.values())
    stopping = asyncio.create_task(sampler.stop())
    await asyncio.sleep(0.3)  # inside the drain grace
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert all(task.done() for task in readers) and not sampler.running


async def test_a_deleted_stream_ends_the_readers_and_stop_says_why(kinesis, make_stream):
    from console.errors import StreamNotFound

    stream = await make_stream(shards=1)
    sampler = HeatSampler(kinesis, stream, reads_per_second=5, drain_grace=0.0)
    await sampler.start()
    await kinesis.delete_stream(stream)
    for _ in range(50):
        if not sampler.running:
            break
        await asyncio.sleep(0.1)
    assert not sampler.running and isinstance(sampler.error, StreamNotFound)
    with pytest.raises(StreamNotFound):
        await sampler.stop()
