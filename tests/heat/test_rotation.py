"""Sampling a bounded set of shards per second: the selected one and the hottest always, the rest in
turn; ages and the coverage line. Pure (console.heat.rotation), then live against the embedded server."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.errors import StreamNotFound
from console.heat.rotation import SamplingRotation, age_text, duration_text
from console.heat.sampler import HeatSampler
from console.heat.stream_heat import StreamHeat
from console.keyspace.hashkeys import even_split, shard_id_for_index
from console.topology.model import Shard


def ids(count: int) -> list[str]:
    return [shard_id_for_index(index) for index in range(count)]


def test_a_pass_reaches_every_shard_within_pass_seconds():
    rotation = SamplingRotation(ids(300), 20)
    seen: set[str] = set()
    for _ in range(rotation.pass_seconds):
        chosen = rotation.next_round()
        assert len(chosen) == 20 and len(set(chosen)) == 20
        seen.update(chosen)
    assert seen == set(ids(300))


def test_the_selected_shard_and_the_hottest_are_in_every_second():
    rotation = SamplingRotation(ids(300), 20)
    rotation.note(shard_id_for_index(250), 0.9)
    rotation.note(shard_id_for_index(17), 0.5)
    selected = shard_id_for_index(123)
    for _ in range(40):
        chosen = rotation.next_round(selected)
        assert chosen[0] == selected
        assert chosen[1:3] == [shard_id_for_index(250), shard_id_for_index(17)]
        assert len(chosen) == 20 and len(set(chosen)) == 20
    rotation.note(shard_id_for_index(250), 0.0)  # cooled down: back to its turn
    assert shard_id_for_index(250) not in rotation.next_round(selected)[:3]


def test_children_join_the_pass_and_closed_shards_leave_it():
    rotation = SamplingRotation(ids(100), 10)
    rotation.next_round()
    rotation.remove(shard_id_for_index(50))
    rotation.add("shardId-child")
    assert "shardId-child" in rotation.next_round()  # next in line, not a pass away
    seen: set[str] = set()
    for _ in range(rotation.pass_seconds):
        seen.update(rotation.next_round())
    assert shard_id_for_index(50) not in seen and len(seen) == 100


def test_coverage_line_says_how_many_shards_a_pass_covers():
    rotation = SamplingRotation(ids(10_000), 64)
    text = rotation.coverage_text()
    assert text.startswith("sampling 64 of 10,000 shards per second")
    assert rotation.pass_seconds == 10_000 // (64 - 8 - 1) + 1
    assert f"; full pass every {duration_text(rotation.pass_seconds)};" in text and "3 m 2 s" in text
    assert text.endswith("the selected and the 8 hottest (by the last pass) every second")
    small = SamplingRotation(ids(5), 64)
    assert not small.rotates and small.next_round() == ids(5)
    assert small.coverage_text(2) == "sampling all 5 shards every second, 2 reads/s each"


def test_ages_and_durations_read_short():
    assert [age_text(age) for age in (None, 0.4, 12.2, 150, 7300)] == ["-", "now", "12s", "2m", "2h"]
    assert [duration_text(s) for s in (45, 120, 156, 3900)] == ["45 s", "2 m", "2 m 36 s", "1 h 5 m"]


def test_snapshot_recomputes_only_shards_read_since_and_ends_each_at_its_read():
    shards = [Shard(shard_id_for_index(i), start, end) for i, (start, end) in enumerate(even_split(50))]
    heat = StreamHeat("s", shards, window_start=1000.0)
    first = heat.snapshot(1010.0, as_sampled=True)
    assert all(shard.sampled_at is None and shard.records == 0 for shard in first.shards)
    heat.observe(shards[3].shard_id, [(1004.5, "k", 100)] * 10)
    heat.mark_sampled(shards[3].shard_id, 1005.0)
    second = heat.snapshot(1011.0, as_sampled=True)
    changed = [a.shard_id for a, b in zip(first.shards, second.shards) if a is not b]
    assert changed == [shards[3].shard_id]
    read = second.shards[3]
    assert read.records == 10 and read.sampled_at == 1005.0 and read.series[-1] == 10  # ends at its read
    assert heat.age(shards[3].shard_id, 1011.0) == 6.0 and heat.age(shards[4].shard_id, 1011.0) is None


async def test_rotating_sampler_reads_the_selected_shard_every_second_and_the_rest_in_turn(kinesis, make_stream):
    stream = await make_stream(shards=12)
    shards = await kinesis.all_shards(stream)
    hot = shards[7]
    sampler = HeatSampler(kinesis, stream, shards_per_second=4)
    sampler.selected = shards[2].shard_id
    await sampler.start()
    try:
        assert sampler.rotation is not None and sampler.rotation.rotates
        assert "sampling 4 of 12 shards per second" in sampler.coverage_text()
        # Records for the hot shard, written before its first visit: counted when its turn comes.
        await kinesis.put_records(
            stream, [{"Data": b"x" * 50, "ExplicitHashKey": str(hot.starting_hash_key), "PartitionKey": "k"}] * 30
        )
        ages: list[float | None] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            now = sampler.clock()
            ages.append(sampler.heat.age(sampler.selected, now))
            if all(sampler.heat.age(shard.shard_id, now) is not None for shard in shards) and len(ages) >= 3:
                break
        snapshot = sampler.snapshot()
    finally:
        await sampler.stop()
    assert all(age is not None and age < 1.5 for age in ages), ages  # the selected shard: every second
    by_id = {shard.shard_id: shard for shard in snapshot.shards}
    assert all(by_id[shard.shard_id].sampled_at is not None for shard in shards)  # a full pass happened
    assert by_id[hot.shard_id].records == 30
    assert sampler.rotation.hottest(1) == [hot.shard_id]  # and it is now read every second


async def test_cloudwatch_ranks_the_hottest_before_the_pass_reaches_them(kinesis, make_stream, local_kinesis):
    from datetime import UTC, datetime, timedelta

    from tests.heat.test_capacity import put_metric

    stream = await make_stream(shards=40)
    shards = await kinesis.all_shards(stream)
    hot = shards[30]
    minute = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2)
    await put_metric(local_kinesis.endpoint_url, stream, "IncomingRecords", 57_000, minute, shard_id=hot.shard_id)
    sampler = HeatSampler(kinesis, stream, shards_per_second=4)
    sampler.rank_by_cloudwatch = True
    await sampler.start()
    try:
        deadline = time.monotonic() + 6
        while sampler.heat.age(hot.shard_id, sampler.clock()) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        read_after = time.monotonic() - (deadline - 6)
    finally:
        await sampler.stop()
    # In turn (3 a second after the hottest slot) shard 30 would wait 10 s; CloudWatch put it first.
    assert read_after < 4, read_after
    # (Read and found idle now, it goes back to its turn: the live reading is the newer.)
    assert sampler.rotation.ranked_by == "CloudWatch"
    assert "the 1 hottest (by CloudWatch)" in sampler.coverage_text()


async def wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


def put_on(shard, count: int) -> list[dict]:
    return [{"Data": b"y" * 20, "ExplicitHashKey": str(shard.starting_hash_key), "PartitionKey": "p"}] * count


async def test_a_resumed_rotation_counts_what_came_while_stopped_once(kinesis, make_stream):
    stream = await make_stream(shards=12)
    shards = await kinesis.all_shards(stream)
    first = HeatSampler(kinesis, stream, shards_per_second=4)
    await first.start()
    await kinesis.put_records(stream, put_on(shards[5], 10))
    await wait_for(lambda: len(first.heat.sampled_at) == 12 and first.heat.shards[shards[5].shard_id].records == 10)
    await first.stop()
    await kinesis.put_records(stream, put_on(shards[5], 25))  # while no sampler runs
    second = HeatSampler(kinesis, stream, shards_per_second=4, resume=first.heat)
    await second.start()
    try:
        assert second.heat is first.heat  # the history carries on
        await wait_for(lambda: second.heat.shards[shards[5].shard_id].records >= 35)
        await asyncio.sleep(3.5)  # a whole pass more: nothing is counted twice
        assert second.heat.shards[shards[5].shard_id].records == 35
    finally:
        await second.stop()


async def test_a_rotation_follows_a_split_to_the_children(kinesis, make_stream):
    stream = await make_stream(shards=6)
    parent = (await kinesis.all_shards(stream))[1]
    sampler = HeatSampler(kinesis, stream, shards_per_second=2)
    await sampler.start()
    try:
        await wait_for(lambda: parent.shard_id in sampler.heat.sampled_at)
        middle = parent.starting_hash_key + (parent.ending_hash_key - parent.starting_hash_key) // 2
        await kinesis.split_shard(stream, parent.shard_id, middle)
        await kinesis.wait_for_active(stream)
        await wait_for(lambda: parent.shard_id in sampler.closed_shards, timeout=30)
        children = [shard for shard in await kinesis.all_shards(stream) if parent.shard_id in shard.parents]
        assert len(children) == 2 and all(child.shard_id in sampler.rotation for child in children)
        assert parent.shard_id not in sampler.rotation and len(sampler.rotation) == 7
        await kinesis.put_records(stream, put_on(children[1], 15))
        await wait_for(lambda: sampler.heat.shards[children[1].shard_id].records == 15, timeout=30)
    finally:
        snapshot = await sampler.stop()
    by_id = {shard.shard_id: shard for shard in snapshot.shards}
    assert not by_id[parent.shard_id].is_open and by_id[children[1].shard_id].records == 15


async def test_a_deleted_stream_ends_the_rotation_and_stop_says_why(kinesis, make_stream):
    stream = await make_stream(shards=12)
    sampler = HeatSampler(kinesis, stream, shards_per_second=4)
    await sampler.start()
    await kinesis.delete_stream(stream)
    await wait_for(lambda: not sampler.running, timeout=10)
    assert isinstance(sampler.error, StreamNotFound)
    with pytest.raises(StreamNotFound):
        await sampler.stop()
