"""The tail reader against the embedded local Kinesis: every encoding, order across splits, filters, limits.

Faults no local server produces (throttling, expired iterators) are injected at the backend boundary
by `FaultyBackend`, which forwards everything else to the real backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from datetime import UTC, datetime, timedelta

import pytest
from aws_kinesis_agg.aggregator import AggRecord

from console.backend import BackendConfig, open_backend
from console.errors import BackendError, BadInput, Throttled
from console.keyspace.hashkeys import md5_hash_key
from console.read.tail import TailOptions, TailReader, parse_start
from tests.conftest import StreamFactory


@pytest.fixture(params=["moto", pytest.param("kinesis-mock", marks=pytest.mark.kinesis_mock)])
async def server(request):
    """(backend, stream factory) on the embedded moto and on kinesis-mock, which (like AWS) ends a
    closed shard with a null NextShardIterator and names its ChildShards."""
    if request.param == "moto":
        config = BackendConfig(
            kind="local", region="us-east-1", endpoint_url=request.getfixturevalue("local_kinesis").endpoint_url
        )
    else:
        config = BackendConfig(
            kind="endpoint", region="us-east-1", endpoint_url=request.getfixturevalue("kinesis_mock").endpoint_url
        )
    async with open_backend(config) as backend:
        factory = StreamFactory(backend)
        yield backend, factory
        await factory.cleanup()


async def read_all(reader: TailReader, *, timeout: float = 30.0) -> list:
    records = []

    async def drain():
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                records.extend(batch.records)

    await asyncio.wait_for(drain(), timeout)
    return records


def aggregate(*entries: tuple[str, bytes, str | None]) -> tuple[str, bytes]:
    packer = AggRecord()
    for partition_key, data, explicit_hash_key in entries:
        packer.add_user_record(partition_key, data, explicit_hash_key)
    partition_key, _, blob = packer.get_contents()
    return partition_key, blob


async def test_every_encoding_is_decoded_and_broken_ones_are_reported(server):
    kinesis, make_stream = server
    stream = await make_stream(shards=1)
    agg_key, agg_blob = aggregate(
        ("user-1", b'{"n": 1}', None),
        ("user-2", b"plain text", "123456789"),
        ("user-3", gzip.compress(b'{"n": 3}', mtime=0), None),
    )
    corrupt_agg = agg_blob[:-3] + bytes(b ^ 0xFF for b in agg_blob[-3:])
    payloads = [
        ("json", b'{"order": 7, "items": [1, 2]}'),
        ("gz", gzip.compress(b'{"zipped": true}', mtime=0)),
        ("text", "héllo wörld".encode()),
        ("bin", bytes(range(0, 256, 7))),
        (agg_key, agg_blob),
        ("bad-agg", corrupt_agg),
        ("bad-gz", gzip.compress(b"some text", mtime=0)[:12]),
    ]
    for key, data in payloads:
        await kinesis.put_record(stream, data, key)

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    by_key = {record.partition_key: record for record in records}
    assert [r.partition_key for r in records] == [
        "json",
        "gz",
        "text",
        "bin",
        "user-1",
        "user-2",
        "user-3",
        "bad-agg",
        "bad-gz",
    ]
    assert (by_key["json"].kind, by_key["json"].value) == ("json", {"order": 7, "items": [1, 2]})
    assert (by_key["gz"].kind_label, by_key["gz"].value) == ("gzip+json", {"zipped": True})
    assert (by_key["text"].kind, by_key["text"].value) == ("text", "héllo wörld")
    assert by_key["bin"].kind == "hex" and by_key["bin"].content_text() == bytes(range(0, 256, 7)).hex()
    inner = [by_key[k] for k in ("user-1", "user-2", "user-3")]
    assert [r.sub_sequence_number for r in inner] == [0, 1, 2]
    assert len({r.sequence_number for r in inner}) == 1  # one Kinesis record, three user records
    assert [r.kind_label for r in inner] == ["kpl+json", "kpl+text", "kpl+gzip+json"]
    assert [r.explicit_hash_key for r in inner] == [None, "123456789", None]
    assert inner[2].value == {"n": 3}
    assert by_key["bad-agg"].kind == "decode-error" and "MD5" in by_key["bad-agg"].error
    assert by_key["bad-gz"].kind == "decode-error" and by_key["bad-gz"].error.startswith("corrupt gzip")
    assert all(r.shard_id == "shardId-000000000000" and r.arrival is not None for r in records)


async def test_parents_are_read_before_children_from_the_past(server):
    kinesis, make_stream = server
    stream = await make_stream(shards=1)
    for index in range(5):
        await kinesis.put_record(stream, json.dumps({"before": index}).encode(), f"k{index}")
    await kinesis.split_shard(stream, "shardId-000000000000", 2**127)
    await kinesis.wait_for_active(stream)
    for index in range(6):
        await kinesis.put_record(stream, json.dumps({"after": index}).encode(), f"k{index}")

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    phases = ["before" if "before" in r.value else "after" for r in records]
    assert phases == ["before"] * 5 + ["after"] * 6
    assert {r.shard_id for r in records[5:]} <= {"shardId-000000000001", "shardId-000000000002"}


async def test_follow_picks_up_the_children_of_a_split_while_tailing(server):
    kinesis, make_stream = server
    stream = await make_stream(shards=1)
    reader = TailReader(
        kinesis, stream, TailOptions(start=parse_start("latest"), follow=True, limit=8), refresh_interval=0.2
    )
    await reader.position()
    reading = asyncio.create_task(read_all(reader, timeout=40))

    for index in range(3):
        await kinesis.put_record(stream, json.dumps({"i": index}).encode(), f"k{index}")
    await asyncio.sleep(0.5)
    await kinesis.split_shard(stream, "shardId-000000000000", 2**127)
    await kinesis.wait_for_active(stream)
    for index in range(3, 8):
        await kinesis.put_record(stream, json.dumps({"i": index}).encode(), f"k{index}")

    records = await reading
    assert sorted(r.value["i"] for r in records) == list(range(8))
    children = {r.shard_id for r in records if r.value["i"] >= 3}
    assert children and children <= {"shardId-000000000001", "shardId-000000000002"}


async def test_key_with_placement_only_reads_only_the_owning_shard_and_filters_by_key(kinesis, make_stream):
    stream = await make_stream(shards=4)
    for index in range(40):
        await kinesis.put_record(stream, f"event {index}".encode(), f"key-{index % 8}")
    shards = await kinesis.all_shards(stream)
    owner = next(s.shard_id for s in shards if s.contains(md5_hash_key("key-3")))
    spy = FaultyBackend(kinesis)

    records = await read_all(
        TailReader(
            spy, stream, TailOptions(start=parse_start("trim-horizon"), partition_key="key-3", placement_only=True)
        )
    )

    assert [r.value for r in records] == [f"event {i}" for i in range(3, 40, 8)]
    assert spy.iterator_shards == [owner]
    spy.iterator_shards.clear()
    records = await read_all(
        TailReader(spy, stream, TailOptions(start=parse_start("trim-horizon"), partition_key="key-3"))
    )
    assert [r.value for r in records] == [f"event {i}" for i in range(3, 40, 8)]
    assert sorted(spy.iterator_shards) == sorted(s.shard_id for s in shards)  # without it: every shard


async def test_grep_and_limit(kinesis, make_stream):
    stream = await make_stream(shards=2)
    for index in range(30):
        await kinesis.put_record(
            stream, json.dumps({"n": index, "tag": "odd" if index % 2 else "even"}).encode(), f"k{index}"
        )
    odd = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"), grep='"odd"')))
    assert sorted(r.value["n"] for r in odd) == list(range(1, 30, 2))
    limited = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"), limit=7)))
    assert len(limited) == 7


async def test_from_timestamp_and_from_sequence_number(server):
    kinesis, make_stream = server
    stream = await make_stream(shards=2)
    for index in range(3):
        await kinesis.put_record(stream, f"old {index}".encode(), "k")
    await asyncio.sleep(1.1)
    cut = datetime.now(UTC)
    await asyncio.sleep(0.1)
    answers = [await kinesis.put_record(stream, f"new {index}".encode(), "k") for index in range(3)]

    since = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start(cut.isoformat()))))
    assert [r.value for r in since] == ["new 0", "new 1", "new 2"]

    at_second = TailOptions(start=parse_start(answers[1]["SequenceNumber"]), shard_ids=(answers[1]["ShardId"],))
    assert [r.value for r in await read_all(TailReader(kinesis, stream, at_second))] == ["new 1", "new 2"]
    located = TailOptions(start=parse_start(answers[1]["SequenceNumber"]))
    assert [r.value for r in await read_all(TailReader(kinesis, stream, located))] == ["new 1", "new 2"]


async def test_throttling_and_expired_iterators_lose_and_repeat_nothing(kinesis, make_stream):
    stream = await make_stream(shards=1)
    for index in range(12):
        await kinesis.put_record(stream, json.dumps({"i": index}).encode(), "k")
    faulty = FaultyBackend(kinesis, faults=["throttle", None, "expired", None, "throttle", "expired"])
    slept: list[float] = []

    async def fast_sleep(seconds: float) -> None:
        slept.append(seconds)

    reader = TailReader(faulty, stream, TailOptions(start=parse_start("trim-horizon")), sleep=fast_sleep, batch_limit=4)
    records = await read_all(reader)

    assert [r.value["i"] for r in records] == list(range(12))
    assert faulty.faults == []  # every planned fault was met
    assert any(seconds >= 0.5 for seconds in slept)  # backed off after the throttle


async def test_unknown_shard_is_bad_input(kinesis, make_stream):
    stream = await make_stream(shards=2)
    with pytest.raises(BadInput, match="unknown shard shardId-000000000099"):
        await TailReader(kinesis, stream, TailOptions(shard_ids=("shardId-000000000099",))).plan()


async def test_key_with_shard_finds_aggregated_records_outside_the_keys_own_shard(kinesis, make_stream):
    """A KPL aggregate is routed by its explicit hash key, so an inner record's key need not hash to the
    shard holding it; naming that shard with --shard must still find the record by --key."""
    from aws_kinesis_agg.aggregator import AggRecord

    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    elsewhere = next(s for s in shards if not s.contains(md5_hash_key("inner-key")))
    packer = AggRecord()
    packer.add_user_record("outer-key", b"first")
    packer.add_user_record("inner-key", b"second")
    outer_key, _, blob = packer.get_contents()
    await kinesis.put_record(stream, blob, outer_key, explicit_hash_key=elsewhere.starting_hash_key)

    found = await read_all(
        TailReader(
            kinesis,
            stream,
            TailOptions(start=parse_start("trim-horizon"), shard_ids=(elsewhere.shard_id,), partition_key="inner-key"),
        )
    )

    assert [(r.partition_key, r.value, r.shard_id) for r in found] == [("inner-key", "second", elsewhere.shard_id)]


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "12ab", "", "latest-ish"])
def test_bad_from_is_one_clear_line(text):
    if text == "":
        assert parse_start(text).iterator_type == "LATEST"
        return
    with pytest.raises(BadInput, match="--from must be"):
        parse_start(text)


def test_from_forms():
    assert parse_start("trim-horizon").iterator_type == "TRIM_HORIZON"
    assert parse_start("TRIM_HORIZON").iterator_type == "TRIM_HORIZON"
    stamp = parse_start("2026-11-22T20:00:00Z")
    assert stamp.timestamp == datetime(2026, 11, 22, 20, tzinfo=UTC)
    naive = parse_start("2026-11-22T21:00:00+01:00")
    assert naive.timestamp - stamp.timestamp == timedelta(0)
    assert parse_start("49654311").sequence_number == "49654311"


class FaultyBackend:
    """Forwards to a real backend; raises planned faults from get_records; records which shards were read."""

    def __init__(self, backend, *, faults: list[str | None] | None = None) -> None:
        self.backend = backend
        self.faults = list(faults or [])
        self.iterator_shards: list[str] = []

    async def all_shards(self, stream, shard_filter=None):
        return await self.backend.all_shards(stream, shard_filter)

    async def get_shard_iterator(self, stream, shard_id, iterator_type, **kwargs):
        self.iterator_shards.append(shard_id)
        return await self.backend.get_shard_iterator(stream, shard_id, iterator_type, **kwargs)

    async def get_records(self, shard_iterator, limit=10000):
        fault = self.faults.pop(0) if self.faults else None
        if fault == "throttle":
            raise Throttled("throttled by test on GetRecords and still throttled after retries")
        if fault == "expired":
            raise BackendError("shard iterator expired: Iterator expired", code="expired_iterator")
        return await self.backend.get_records(shard_iterator, limit=limit)
