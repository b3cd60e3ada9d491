"""`tail --key` on a stream of KPL aggregates: every record of an inner key is found, wherever the
aggregate carrying it landed; `--placement-only` reads the key's own shard until an aggregate shows up."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys

from console.keyspace.hashkeys import md5_hash_key
from console.read.tail import TailOptions, TailReader, parse_start
from tests.kpl import HOT_KEY, hot_aggregate, server  # noqa: F401 - server is a fixture


def aggregate(serial: int) -> tuple[str, bytes]:
    entry = hot_aggregate(serial)
    return entry["PartitionKey"], entry["Data"]


async def test_tail_key_returns_every_inner_record_on_both_servers(server):
    kinesis, make_stream, url = server
    stream = await make_stream(shards=4)
    entries = [hot_aggregate(serial) for serial in range(40)]
    await kinesis.put_records(stream, entries)
    shards = await kinesis.all_shards(stream)
    landed = {s.shard_id for s in shards for entry in entries if s.contains(md5_hash_key(entry["PartitionKey"]))}
    assert len(landed) > 1  # the aggregates sit in several shards, not only the one HOT_KEY hashes to

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "tail",
        stream,
        "--key",
        HOT_KEY,
        "--json",
        "--endpoint-url",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    found = [json.loads(line) for line in out.decode().splitlines()]
    assert len(found) == 40 * 6
    assert {row["partition_key"] for row in found} == {HOT_KEY}
    assert sorted((row["content"]["serial"], row["content"]["i"]) for row in found) == sorted(
        (serial, i) for serial in range(40) for i in range(10) if i % 5 >= 2
    )
    assert {row["shard_id"] for row in found} == landed


async def test_placement_only_widens_to_every_shard_at_the_first_aggregate(kinesis, make_stream):
    stream = await make_stream(shards=4)
    shards = await kinesis.all_shards(stream)
    own = next(s for s in shards if s.contains(md5_hash_key(HOT_KEY)))
    # One aggregate sent into the key's own shard (by explicit hash key), the rest where they land.
    key, data = aggregate(0)
    await kinesis.put_record(stream, data, key, explicit_hash_key=own.starting_hash_key)
    await kinesis.put_records(stream, [hot_aggregate(serial) for serial in range(1, 30)])
    reader = TailReader(
        kinesis, stream, TailOptions(start=parse_start("trim-horizon"), partition_key=HOT_KEY, placement_only=True)
    )
    found = []
    async for batch in reader.batches():
        found.extend(batch.records)
    assert len(found) == 30 * 6
    assert len(reader.notes) == 1 and "reading all shards now (+3)" in reader.notes[0]
    assert set(reader.progress) == {s.shard_id for s in shards}


async def test_placement_only_from_latest_widens_without_losing_what_arrived_meanwhile(kinesis, make_stream):
    stream = await make_stream(shards=4)
    shards = await kinesis.all_shards(stream)
    own = next(s for s in shards if s.contains(md5_hash_key(HOT_KEY)))
    reader = TailReader(
        kinesis,
        stream,
        TailOptions(start=parse_start("latest"), follow=True, partition_key=HOT_KEY, placement_only=True),
    )
    await reader.position()
    # Written before the read meets its first aggregate: the shards added then must still see them.
    await kinesis.put_records(stream, [hot_aggregate(serial) for serial in range(1, 20)])
    key, data = aggregate(0)
    await kinesis.put_record(stream, data, key, explicit_hash_key=own.starting_hash_key)
    found = []

    async def read():
        async for batch in reader.batches():
            found.extend(batch.records)
            if len(found) >= 20 * 6:
                return

    await asyncio.wait_for(read(), 20)
    assert len(found) == 20 * 6 and reader.notes


async def test_placement_only_without_key_is_refused():
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "tail",
        "s",
        "--placement-only",
        "--endpoint-url",
        "http://127.0.0.1:9",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2 and err.decode().count("\n") == 1 and "--placement-only" in err.decode()


async def test_malformed_aggregates_are_decode_errors_and_the_page_is_kept(kinesis, make_stream):
    from aws_kinesis_agg import messages_pb2

    from console.read.decoding import MAGIC, MAX_USER_RECORDS_PER_AGGREGATE

    stream = await make_stream(shards=1)
    good = hot_aggregate(1)["Data"]
    many = messages_pb2.AggregatedRecord()
    many.partition_key_table.append(HOT_KEY)
    for _ in range(MAX_USER_RECORDS_PER_AGGREGATE + 1):
        many.records.add(partition_key_index=0, data=b"")
    message = many.SerializeToString()
    broken = {
        "too many nested records": MAGIC + message + hashlib.md5(message).digest(),
        "md5 mismatch": good[:-1] + bytes([good[-1] ^ 1]),
        "truncated": good[: len(good) // 2],
    }
    await kinesis.put_records(
        stream,
        [{"Data": data, "PartitionKey": "outer"} for data in broken.values()]
        + [{"Data": good, "PartitionKey": "outer"}],
    )
    reader = TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon")))
    found = []
    async for batch in reader.batches():
        found.extend(batch.records)
    errors = [record for record in found if record.kind == "decode-error"]
    assert len(errors) == 3 and all(record.error.startswith("malformed KPL aggregate: ") for record in errors)
    assert "nests 100,001 user records" in errors[0].error
    assert [record.partition_key for record in found if record.kind != "decode-error"].count(HOT_KEY) == 6


async def test_malformed_aggregates_are_counted_and_the_rest_of_the_page_kept(kinesis, make_stream, local_kinesis):
    """Bad magic is a plain record; a truncated protobuf, an MD5 mismatch and a frame too short for its
    digest are decode errors: counted by a --key read that filters them out, and by the summary line."""
    stream = await make_stream(shards=1)
    good, spoiled = hot_aggregate(0), hot_aggregate(1)["Data"]
    message = spoiled[4:-16][:-7]
    entries = [
        good,
        {"PartitionKey": "bad-md5", "Data": spoiled[:-1] + bytes([spoiled[-1] ^ 1])},
        {"PartitionKey": "bad-protobuf", "Data": spoiled[:4] + message + hashlib.md5(message).digest()},
        {"PartitionKey": "bad-short", "Data": spoiled[:4] + b"\x01\x02"},
        {"PartitionKey": "bad-magic", "Data": b"\xf3\x89\x9a\xc3" + spoiled[4:]},
        hot_aggregate(2),
    ]
    await kinesis.put_records(stream, entries)
    reader = TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"), partition_key=HOT_KEY))
    found = [record async for batch in reader.batches() for record in batch.records]
    assert sorted(record.content_json()["serial"] for record in found) == [0] * 6 + [2] * 6
    assert reader.decode_errors == 3

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "tail",
        stream,
        "--endpoint-url",
        local_kinesis.endpoint_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert len(out.decode().splitlines()) == 10 + 3 + 1 + 10
    assert "tail: 24 records, 3 decode-errors (" in err.decode()
