"""The ordered producer against the embedded local Kinesis: clean runs in both modes, request
limits, pacing, explicit hash keys, and a run with a split and a merge in the middle."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.errors import BadInput
from console.keyspace.hashkeys import HASH_SPACE, md5_hash_key
from console.produce.pacing import PacingLimits, ShardPacer, TokenBucket
from console.produce.producer import OrderedProducer
from console.produce.settings import MAX_BATCH_BYTES, ProducerSettings
from console.produce.testrecords import TestRecord, decode, partition_key_for
from console.produce.verify import Verifier
from console.topology.shardmap import ShardMap


def producer_for(kinesis, stream, settings, **options) -> OrderedProducer:
    return OrderedProducer(stream, settings, put_records=kinesis.put_records, put_record=kinesis.put_record, **options)


async def produce_and_verify(kinesis, stream, settings, **options):
    result = await producer_for(kinesis, stream, settings, **options).run()
    report = await Verifier.for_backend(kinesis).verify(result)
    return result, report


# ---- records and settings -------------------------------------------------------------------------


def header_size(run_id: str, key: str) -> int:
    """The most bytes a record of this run and key needs before padding (large seq, 6-decimal time)."""
    return len(TestRecord(run_id, key, 999_999, 9_999_999_999.999999).encode(0))


def test_record_roundtrip_and_padding():
    record = TestRecord("abc123", partition_key_for("abc123", 7), 41, 1_700_000_000.25)
    bare = len(record.encode(0))
    assert bare <= header_size("abc123", record.key)
    for size in (0, bare + 1, bare + 9, bare + 10, 1000, 65536):
        data = record.encode(size)
        assert len(data) == max(size, bare)
        assert decode(data) == record
    assert decode(record.encode(200), run_id="other") is None
    assert decode(b'{"some": "json"}') is None and decode(b"\x00\x01") is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"keys": 0}, "keys must be"),
        ({"records_per_key": -1}, "records per key"),
        ({"payload_bytes": 2 * 1024 * 1024}, "payload bytes"),
        ({"max_batch_records": 501}, "batch size"),
        ({"concurrency": 0}, "concurrency"),
        ({"rate": 0}, "rate must be"),
        ({"mode": "turbo"}, "mode must be"),
        ({"run_id": "r" * 260}, "partition key"),
    ],
)
def test_settings_reject_bad_numbers(change, message):
    with pytest.raises(BadInput, match=message):
        ProducerSettings(**{"keys": 10, "records_per_key": 10, **change}).validated()


def test_token_bucket_and_throttle_backoff():
    bucket = TokenBucket(100, now=0.0)
    assert sum(bucket.try_take(1, 0.0) for _ in range(150)) == 100  # the burst, no more
    assert bucket.wait_time(1, 0.0) == pytest.approx(0.01)
    assert bucket.try_take(1, 0.011)
    pacer = ShardPacer(PacingLimits(records_per_second=1000, bytes_per_second=10**9))
    assert pacer.try_take("s", 10, 0.0)
    pacer.throttled("s", 1.0)
    assert pacer.scale_of("s") == 0.5 and not pacer.try_take("s", 10, 1.0)  # cooling down
    assert pacer.wait_time("s", 10, 1.0) > 0
    pacer.throttled("s", 1.2)  # after the cool-down: halves again, longer cool-down
    assert pacer.scale_of("s") == 0.25
    assert pacer.try_take("s", 10, 5.0) and pacer.scale_of("s") == pytest.approx(0.25 + 0.1 * 3.8)
    unpaced = ShardPacer(PacingLimits(enabled=False))
    assert all(unpaced.try_take("s", 10**6, 0.0) for _ in range(5000))


# ---- clean runs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode, keys, per_key", [("batch", 60, 25), ("sequential", 12, 6)])
async def test_ordered_run_verifies_clean(kinesis, make_stream, mode, keys, per_key):
    stream = await make_stream(shards=3)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        seen = []
        settings = ProducerSettings(
            keys=keys, records_per_key=per_key, mode=mode, pacing=False, concurrency=4, max_batch_records=50
        )
        result, report = await produce_and_verify(
            kinesis, stream, settings, shard_map=shard_map, on_progress=seen.append, progress_interval=0.01
        )
    total = keys * per_key
    assert (result.sent, result.acknowledged, report.read_back) == (total, total, total)
    assert report.ok and report.lost == report.out_of_order == report.misplaced == report.duplicated == 0
    assert result.max_in_flight_per_key == 1 and result.mismatch_count == 0
    assert {read.start for read in report.shards} == {"AT_SEQUENCE_NUMBER"}
    assert sum(read.run_records for read in report.shards) == total
    assert report.latency_ms["p50"] is not None and report.latency_ms["p50"] <= report.latency_ms["max"]
    # Progress ends with a final snapshot that matches the result, per shard too.
    assert seen[-1].done and seen[-1].acknowledged == total
    assert sum(p.acknowledged for p in seen[-1].shards.values()) == total
    assert set(seen[-1].shards) == {ack.shard_id for ack in result.acks.values()}


@pytest.mark.parametrize("answers_before_cancel", [1, 7, 20])
async def test_a_run_cancelled_mid_flight_reports_every_record_the_stream_took(
    kinesis, make_stream, answers_before_cancel
):
    """Where a request's records landed is written down after the next request has gone out; a run
    cancelled in between (Ctrl-C) still has every acknowledged record in its report."""
    stream = await make_stream(shards=2)
    answered: list[str] = []  # partition key and per-key number of every record the stream acknowledged
    run: asyncio.Task | None = None

    async def counted_put_records(name, records):
        response = await kinesis.put_records(name, records)
        for record, outcome in zip(records, response["Records"]):
            if "ErrorCode" not in outcome:
                answered.append(f"{record['PartitionKey']}/{decode(record['Data']).seq}")
        if len(answered) >= answers_before_cancel * 20 and not run.cancelling():
            run.cancel()  # delivered at the run's next pause, with this answer not yet written down
        return response

    settings = ProducerSettings(keys=60, records_per_key=40, pacing=False, concurrency=4, max_batch_records=20)
    producer = OrderedProducer(stream, settings, put_records=counted_put_records)
    run = asyncio.create_task(producer.run())
    with pytest.raises(asyncio.CancelledError):
        await run
    reported = {f"{key}/{seq}" for key, seq in producer.result.acks}
    assert answered and reported == set(answered)
    assert producer.result.acknowledged == len(answered) < 60 * 40


async def test_requests_respect_limits_and_one_record_per_key(kinesis, make_stream):
    """Every request: <= 10 MiB, no key twice, and no key in two requests at once."""
    stream = await make_stream(shards=2)
    in_flight: set[str] = set()
    violations, sizes = [], []

    async def watched_put_records(name, records):
        keys = [r["PartitionKey"] for r in records]
        sizes.append(sum(len(r["Data"]) + len(r["PartitionKey"]) for r in records))
        if len(set(keys)) != len(keys) or in_flight & set(keys):
            violations.append(keys)
        in_flight.update(keys)
        try:
            return await kinesis.put_records(name, records)
        finally:
            in_flight.difference_update(keys)

    settings = ProducerSettings(keys=14, records_per_key=2, payload_bytes=1_000_000, pacing=False, concurrency=3)
    result = await OrderedProducer(stream, settings, put_records=watched_put_records).run()
    assert result.acknowledged == 28 and not violations
    assert max(sizes) <= MAX_BATCH_BYTES and len(sizes) >= 3  # 10 records of ~1 MB fill a request


async def test_pacing_holds_a_shard_to_its_rate(kinesis, make_stream):
    stream = await make_stream(shards=1)
    settings = ProducerSettings(keys=50, records_per_key=6, pacing=True, shard_records_per_second=200)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        started = time.monotonic()
        result = await producer_for(kinesis, stream, settings, shard_map=shard_map).run()
        elapsed = time.monotonic() - started
    assert result.acknowledged == 300
    # 300 records at 200/s on one shard: a full bucket (200) goes at once, the other 100 take 0.5 s.
    assert elapsed >= 0.45


@pytest.mark.parametrize(
    "limit",
    [
        {"pacing": True, "shard_records_per_second": 500},  # the per-shard pace
        {"pacing": False, "rate": 500},  # the run's own --rate
    ],
)
async def test_a_spent_pace_waits_for_a_refill_not_for_each_token(kinesis, make_stream, limit):
    # 800 records at 500/s: a full bucket goes at once, the other 300 arrive while the producer waits
    # on the pace. Waking for every token would send them in hundreds of one-record requests (and
    # scan every waiting key each time); waiting for a refill sends them in a few full ones.
    stream = await make_stream(shards=1)
    settings = ProducerSettings(keys=100, records_per_key=8, concurrency=4, **limit)
    requests = []

    async def counted_put_records(name, entries):
        requests.append(len(entries))
        return await kinesis.put_records(name, entries)

    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        started = time.monotonic()
        result = await OrderedProducer(stream, settings, put_records=counted_put_records, shard_map=shard_map).run()
        elapsed = time.monotonic() - started
    assert result.acknowledged == 800 and not result.failed
    assert elapsed >= 0.5  # the pace held: 300 records past the burst at 500/s
    assert len(requests) <= 40, requests


async def test_keytree_hash_keys_place_keys_evenly(kinesis, make_stream):
    pytest.importorskip("console.keyspace.keytree.tree")
    stream = await make_stream(shards=4)
    settings = ProducerSettings(keys=8, records_per_key=3, explicit_hash_keys="keytree", pacing=False)
    result, report = await produce_and_verify(kinesis, stream, settings)
    per_shard: dict[str, int] = {}
    for ack in result.acks.values():
        per_shard[ack.shard_id] = per_shard.get(ack.shard_id, 0) + 1
    assert sorted(per_shard.values()) == [6, 6, 6, 6] and report.ok
    assert sorted(result.explicit_hash_keys.values())[0] == HASH_SPACE // 16


@pytest.mark.parametrize("mode", ["batch", "sequential"])
async def test_missing_stream_stops_the_run_with_its_partial_report(kinesis, mode):
    settings = ProducerSettings(keys=3, records_per_key=2, mode=mode, concurrency=1)
    result = await producer_for(kinesis, "no-such-stream-here", settings).run()
    assert "not found" in result.stopped and not result.endpoint_lost and not result.complete
    assert result.acknowledged == 0 and result.sent == len(result.failed) >= 1
    assert result.not_attempted == 6 - result.sent


# ---- a live reshard ---------------------------------------------------------------------------------


async def wait_for_acks(producer: OrderedProducer, count: int, task: asyncio.Task) -> None:
    while producer.result.acknowledged < count:
        assert not task.done(), "the run ended before the reshard point"
        await asyncio.sleep(0.01)


async def wait_for_records_in(producer: OrderedProducer, shard_ids: set[str], task: asyncio.Task) -> None:
    """Until each shard has acknowledged a record of the run: a busy machine may take the split's own
    time past the reshard point, and a child merged away before it took a record is never read."""
    while not shard_ids <= producer.result.first_acks.keys():
        assert not task.done(), (
            f"the run ended before {sorted(shard_ids - producer.result.first_acks.keys())} took a record"
        )
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", ["batch", "sequential"])
async def test_split_and_merge_mid_run_verify_clean(kinesis, make_stream, mode):
    stream = await make_stream(shards=2)
    keys, per_key = (60, 30) if mode == "batch" else (16, 12)
    total = keys * per_key
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        settings = ProducerSettings(
            keys=keys,
            records_per_key=per_key,
            mode=mode,
            pacing=False,
            concurrency=4,
            rate=total / 3.0,
            max_batch_records=100,
        )
        # Each reshard is made while the run waits at a gate: on a busy machine a split or a merge can take
        # longer than the rest of the run, which would then end before the reshard it is meant to cross.
        gate = asyncio.Event()
        gate.set()

        async def put_records(*args, **kwargs):
            await gate.wait()
            return await kinesis.put_records(*args, **kwargs)

        async def put_record(*args, **kwargs):
            await gate.wait()
            return await kinesis.put_record(*args, **kwargs)

        producer = OrderedProducer(
            stream, settings, put_records=put_records, put_record=put_record, shard_map=shard_map
        )
        task = asyncio.create_task(producer.run())
        await wait_for_acks(producer, total // 4, task)
        gate.clear()
        first, second = sorted(await kinesis.all_shards(stream), key=lambda s: s.starting_hash_key)
        # Split among the run's own keys, so each child is written to (at a fixed point, 16 random
        # keys leave a quarter of the key space empty one run in a hundred).
        inside = sorted(
            hash_key
            for hash_key in (md5_hash_key(partition_key_for(settings.run_id, index)) for index in range(keys))
            if first.starting_hash_key <= hash_key <= first.ending_hash_key
        )
        await kinesis.split_shard(stream, first.shard_id, inside[len(inside) // 2])
        await kinesis.wait_for_active(stream)
        gate.set()
        await wait_for_acks(producer, total // 2, task)
        children = [s for s in await kinesis.all_shards(stream) if s.parent_shard_id == first.shard_id]
        await wait_for_records_in(producer, {child.shard_id for child in children}, task)
        gate.clear()
        upper_child = next(s for s in children if s.ending_hash_key == first.ending_hash_key)
        await kinesis.merge_shards(stream, upper_child.shard_id, second.shard_id)
        await kinesis.wait_for_active(stream)
        gate.set()
        result = await task
    report = await Verifier.for_backend(kinesis).verify(result)
    assert report.ok, report.to_json()["problems"][:5]
    assert (result.acknowledged, report.read_back, report.lost, report.out_of_order, report.misplaced) == (
        total,
        total,
        0,
        0,
        0,
    )
    shards_read = {read.shard_id: read for read in report.shards}
    assert len(shards_read) == 5  # 2 parents, 2 children of the split, 1 merged
    assert shards_read[first.shard_id].closed and shards_read[second.shard_id].closed
    assert sum(read.run_records for read in report.shards) == total
    # Records of a key moved to a child: the acks after the reshard name children.
    assert len({ack.shard_id for ack in result.acks.values()}) >= 4
    # Puts the map had predicted for a parent that was gone were reported to the map.
    if result.mismatch_count:
        assert shard_map.version >= 2
