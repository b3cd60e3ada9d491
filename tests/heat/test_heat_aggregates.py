"""Heat on a stream of KPL aggregates: user records counted under their own keys, the limits counted in
Kinesis records, the split found from where aggregates land, malformed aggregates counted, not fatal."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from datetime import UTC, datetime

import pytest
from aws_kinesis_agg.aggregator import RecordAggregator

from console.heat.aggregates import split_page
from console.heat.rates import ShardHeat, observations_from_records
from console.keyspace.hashkeys import MAX_HASH_KEY, md5_hash_key
from console.read.decoding import MAGIC, MAX_USER_RECORDS_PER_AGGREGATE
from console.topology.model import Shard
from tests.kpl import HOT_KEY, hot_aggregate, hot_keys, server  # noqa: F401 - server is a fixture

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def aggregate(keys: list[str], payload: bytes = b'{"v":1}') -> tuple[str, str | None, bytes]:
    """(outer partition key, explicit hash key, data) of one aggregate built by AWS's RecordAggregator."""
    aggregator = RecordAggregator()
    for key in keys:
        assert aggregator.add_user_record(key, payload) is None
    return aggregator.clear_and_get().get_contents()


def record(data: bytes, key: str, seconds: float = 0.0) -> dict:
    return {
        "Data": data,
        "PartitionKey": key,
        "SequenceNumber": "1",
        "ApproximateArrivalTimestamp": datetime.fromtimestamp(NOW.timestamp() + seconds, UTC),
    }


def whole_range_shard() -> Shard:
    return Shard.from_api(
        {
            "ShardId": "shardId-000000000000",
            "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": str(MAX_HASH_KEY)},
            "SequenceNumberRange": {"StartingSequenceNumber": "1"},
        }
    )


def observe(heat: ShardHeat, records: list[dict]) -> int:
    plain, aggregates = split_page(records)
    return heat.observe(observations_from_records(plain), aggregates=aggregates)


def test_user_records_count_under_their_own_keys_and_kinesis_records_under_the_limit():
    heat = ShardHeat(whole_range_shard())
    records = []
    for serial in range(50):
        key, _, data = aggregate(hot_keys(serial))
        records.append(record(data, key))
    records += [record(b"plain", "plain-key")] * 5
    assert observe(heat, records) == 55
    snapshot = heat.snapshot(NOW.timestamp(), NOW.timestamp() + 1.0)
    assert snapshot.records == 55 and snapshot.user_records == 505 and snapshot.aggregates == 50
    assert snapshot.bytes == sum(len(r["Data"]) + len(r["PartitionKey"]) for r in records)
    assert snapshot.user_records_per_s == pytest.approx(505)
    assert snapshot.utilisation == pytest.approx(55 / 1000)  # Kinesis records, not user records
    top = snapshot.top_keys[0]
    assert (top.key, top.guaranteed_records, top.aggregated) == (HOT_KEY, 300, True)
    assert top.share == pytest.approx(300 / 505)
    plain = snapshot.top_keys[1]
    assert (plain.key, plain.guaranteed_records, plain.aggregated) == ("plain-key", 5, False)
    assert snapshot.split.dominant_key == HOT_KEY and snapshot.split.dominant_aggregated
    doc = snapshot.to_json("s")
    assert doc["top_keys"][0]["aggregated"] is True and doc["user_records"] == 505
    assert doc["split"]["placed_by"] == "aggregates"


def test_the_split_divides_where_aggregates_land_never_inner_keys_md5():
    """Aggregates placed by two outer keys carry a thousand inner keys: the split point is at one of
    the outer keys, whatever the inner keys hash to."""
    heat = ShardHeat(whole_range_shard())
    outer = ["left-outer", "right-outer"]
    records = []
    for serial in range(40):
        inner = [f"inner-{serial}-{i}" for i in range(25)]
        _, _, data = aggregate(inner)
        records.append(record(data, outer[serial % 2]))
    observe(heat, records)
    split = heat.split_suggestion()
    low, high = sorted(md5_hash_key(key) for key in outer)
    assert split.by_aggregates and split.placed_records == 40
    assert low < split.at <= high + 1  # between the two outer keys: each child takes one
    assert split.lower_share == pytest.approx(0.5)
    inner_hashes = {md5_hash_key(f"inner-{s}-{i}") for s in range(40) for i in range(25)}
    assert split.at not in inner_hashes and split.at - 1 not in inner_hashes


def reframed(message: bytes) -> bytes:
    return MAGIC + message + hashlib.md5(message).digest()


def malformed_aggregates() -> dict[str, bytes]:
    from aws_kinesis_agg import messages_pb2

    _, _, good = aggregate(hot_keys(0))
    message = good[4:-16]
    many = messages_pb2.AggregatedRecord()
    many.partition_key_table.append("k")
    for _ in range(MAX_USER_RECORDS_PER_AGGREGATE + 1):
        many.records.add(partition_key_index=0, data=b"")
    past_table = messages_pb2.AggregatedRecord()
    past_table.partition_key_table.append("k")
    past_table.records.add(partition_key_index=3, data=b"x")
    return {
        "md5 mismatch": good[:-1] + bytes([good[-1] ^ 1]),
        "truncated protobuf": reframed(message[:-3]),
        "truncated record": good[: len(good) // 2],
        "too many nested records": reframed(many.SerializeToString()),
        "key past the table": reframed(past_table.SerializeToString()),
    }


@pytest.mark.parametrize("case", sorted(malformed_aggregates()))
def test_a_malformed_aggregate_is_a_decode_error_and_the_page_is_kept(case):
    heat = ShardHeat(whole_range_shard())
    _, _, good = aggregate(hot_keys(1))
    page = [record(good, "a"), record(malformed_aggregates()[case], "b"), record(b"plain", "c"), record(good, "d")]
    assert observe(heat, page) == 4
    snapshot = heat.snapshot(NOW.timestamp(), NOW.timestamp() + 1)
    assert snapshot.decode_errors == 1 and snapshot.aggregates == 3
    assert snapshot.user_records == 10 + 1 + 10
    assert snapshot.top_keys[0].key == HOT_KEY and snapshot.top_keys[0].guaranteed_records == 12


def test_bad_magic_is_a_plain_record():
    heat = ShardHeat(whole_range_shard())
    _, _, good = aggregate(hot_keys(2))
    observe(heat, [record(b"\xf3\x89\x9a\xc3" + good[4:], "plain")])
    snapshot = heat.snapshot(NOW.timestamp(), NOW.timestamp() + 1)
    assert (snapshot.aggregates, snapshot.decode_errors, snapshot.user_records) == (0, 0, 1)


# ---- live, on both servers, through the CLI -----------------------------------------------------


async def write_aggregates(kinesis, stream: str, stop: asyncio.Event, per_second: int = 20) -> None:
    """`per_second` aggregates of 10 user records each (60% HOT_KEY) in 10 calls a second."""
    loop = asyncio.get_running_loop()
    began, tick, serial = loop.time(), 0, 0
    while not stop.is_set():
        entries = []
        for _ in range(per_second // 10):
            entries.append(hot_aggregate(serial))
            serial += 1
        await kinesis.put_records(stream, entries)
        tick += 1
        await asyncio.sleep(max(0.0, began + tick / 10 - loop.time()))


async def test_heat_json_names_the_hot_inner_key_on_both_servers(server):
    kinesis, make_stream, url = server
    stream = await make_stream(shards=4)
    stop = asyncio.Event()
    writer = asyncio.create_task(write_aggregates(kinesis, stream, stop))
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "console.cli",
            "heat",
            stream,
            "--seconds",
            "2.5",
            "--json",
            "--endpoint-url",
            url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        stop.set()
        await writer
    assert process.returncode == 0, err.decode()
    doc = json.loads(out)
    assert doc["aggregates"] > 0 and doc["decode_errors"] == 0
    assert doc["user_records_per_s"] == pytest.approx(10 * doc["records_per_s"], rel=0.02)
    busy = [shard for shard in doc["shards"] if shard["user_records"] >= 30]
    assert busy
    for shard in busy:
        top = shard["top_keys"][0]
        assert top["key"] == HOT_KEY and top["aggregated"] is True
        assert top["share"] == pytest.approx(0.6, abs=0.02)
    # 20 aggregates a second take a few percent of a shard: the key leads, but nothing is write-sharded
    assert doc["hot_keys"] == []
    assert doc["split_suggestion"]["placed_by"] == "aggregates"


@pytest.mark.parametrize("as_datetimes", [True, False])
def test_a_page_counts_as_its_observations_do_at_the_window_edges_and_out_of_order(as_datetimes):
    """The sampler's one-pass page path (ShardHeat.observe_page) books exactly what the observation path
    books: seconds cut by the window's edges, an arrival going back a second, keyless records,
    multi-byte keys and aggregates among plain records."""
    outer, _, data = aggregate(["a", "b", "b"])
    offsets = [0.1, 0.2, 0.12, 0.9, 1.0, 1.5, 0.7, 2.2, 2.95, 3.0, 3.4, 4.1, 5.2, 5.7, 5.9]
    page = [record(b"x" * (10 + n), ["k1", "ké", "k2"][n % 3], offset) for n, offset in enumerate(offsets)]
    page[4].pop("PartitionKey")  # keyless (an AUTO stream)
    page.insert(6, record(data, outer, 2.5))
    if not as_datetimes:
        for row in page:
            row["ApproximateArrivalTimestamp"] = row["ApproximateArrivalTimestamp"].timestamp()
    start, end = NOW.timestamp() + 0.15, NOW.timestamp() + 5.5
    by_page, by_observations = ShardHeat(whole_range_shard()), ShardHeat(whole_range_shard())
    counted = by_page.observe_page(page, start, end)
    plain, aggregates = split_page(page)
    assert counted == by_observations.observe(observations_from_records(plain), start, end, aggregates) == 12
    assert by_page._buckets == by_observations._buckets
    assert (by_page.records, by_page.bytes, by_page.user_records, by_page.keyless, by_page.aggregates) == (
        by_observations.records,
        by_observations.bytes,
        by_observations.user_records,
        by_observations.keyless,
        by_observations.aggregates,
    )
    assert by_page.by_records.top(5) == by_observations.by_records.top(5)
    assert by_page.by_bytes.top(5) == by_observations.by_bytes.top(5)
    assert by_page._bins == by_observations._bins
