"""KPL aggregation in the producer: the encoder against aws-kinesis-agg (same bytes, round trip), and
aggregating runs on the embedded server judged by the verifier and by aws-kinesis-agg's deaggregator."""

from __future__ import annotations

import asyncio
import base64
from collections import defaultdict

import pytest
from aws_kinesis_agg import deaggregator
from aws_kinesis_agg.aggregator import AggRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import BadInput, EndpointUnreachable
from console.keyspace.hashkeys import md5_hash_key
from console.produce.aggregate import AggregateBuilder, AggregatingProducer, check_max_aggregate_bytes
from console.produce.settings import ProducerSettings
from console.produce.testrecords import decode
from console.produce.verify import Verifier
from console.read.decoding import user_records
from console.topology.shardmap import ShardMap

keys = st.text(min_size=1, max_size=20)
records = st.lists(
    st.tuples(keys, st.binary(max_size=300), st.one_of(st.none(), st.integers(0, 2**128 - 1).map(str))),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(records)
def test_builder_writes_aws_kinesis_agg_bytes_and_round_trips(rows):
    theirs = AggRecord()
    ours = AggregateBuilder()
    for key, data, hash_key in rows:
        assert theirs.add_user_record(key, data, hash_key)
        ours.add(key, data, hash_key)
    _, _, expected = theirs.get_contents()
    encoded = ours.encode()
    assert encoded == expected
    assert ours.size == len(encoded) <= theirs.get_size_bytes()  # theirs estimates, over rather than under
    assert user_records(encoded) == [(key, hash_key, data) for key, data, hash_key in rows]
    back = list(
        deaggregator.iter_deaggregate_records(
            [{"Data": encoded, "PartitionKey": "outer", "SequenceNumber": "1", "ApproximateArrivalTimestamp": 0}],
            data_format="Boto3",
        )
    )
    assert [(r["kinesis"]["partitionKey"], base64.b64decode(r["kinesis"]["data"])) for r in back] == [
        (key, data) for key, data, _ in rows
    ]


def test_growth_is_what_add_adds():
    builder = AggregateBuilder()
    for key, data, hash_key in (
        ("a", b"", None),
        ("a", b"x" * 200, None),
        ("k" * 150, b"y" * 20000, "12345"),
        ("a", b"z", "12345"),
    ):
        before, growth = len(builder.encode()), builder.growth(key, data, hash_key)
        builder.add(key, data, hash_key)
        assert len(builder.encode()) - before == growth and builder.size == len(builder.encode())


@pytest.mark.parametrize("value", [0, 1023, 10 * 1024 * 1024 + 1, 1024 * 1024 + 1])
def test_max_aggregate_bytes_is_bounded_by_the_record_limit(value):
    with pytest.raises(BadInput, match="--max-aggregate-bytes must be a whole number from 1,024 to 1,048,576"):
        check_max_aggregate_bytes(value, 1024 * 1024)


# ---- runs on the embedded server ----------------------------------------------------------------


def aggregating(kinesis, stream, settings, shard_map=None, put_records=None, **options):
    return AggregatingProducer(
        stream, settings, put_records=put_records or kinesis.put_records, shard_map=shard_map, **options
    )


async def read_independently(kinesis, stream) -> dict[str, list[int]]:
    """Every shard from TRIM_HORIZON, parents first, de-aggregated by aws-kinesis-agg: seqs per key."""
    seqs: dict[str, list[int]] = defaultdict(list)
    shards = sorted(await kinesis.all_shards(stream), key=lambda s: (len(s.parents), s.shard_id))
    for shard in shards:
        iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
        while iterator:
            page = await kinesis.get_records(iterator)
            for raw in page["Records"]:
                for inner in deaggregator.iter_deaggregate_records([raw], data_format="Boto3"):
                    record = decode(base64.b64decode(inner["kinesis"]["data"]))
                    if record is not None:
                        seqs[record.key].append(record.seq)
            if not page["Records"] and page.get("MillisBehindLatest", 0) == 0:
                break
            iterator = page.get("NextShardIterator")
    return seqs


async def test_aggregating_run_holds_per_key_order_and_an_independent_reader_agrees(kinesis, make_stream):
    stream = await make_stream(shards=4)
    settings = ProducerSettings(keys=40, records_per_key=60, payload_bytes=100, pacing=False)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(timeout=30)
        result = await aggregating(kinesis, stream, settings, shard_map=shard_map, max_aggregate_bytes=8192).run()
    assert result.complete and result.acknowledged == 2400
    stats = result.aggregation
    assert sum(stats.kinesis_records.values()) < 2400 / 10  # user records travel many to a Kinesis record
    assert stats.user_records == 2400 and len(stats.kinesis_records) == 4
    report = await Verifier.for_backend(kinesis).verify(result)
    assert report.ok and report.read_back == 2400 and report.out_of_order == 0 and report.misplaced == 0
    seqs = await read_independently(kinesis, stream)
    assert len(seqs) == 40 and all(found == list(range(60)) for found in seqs.values())
    doc = result.to_json()["aggregation"]
    assert doc["kinesis_records"] == sum(stats.kinesis_records.values())
    assert doc["user_records_per_kinesis_record"] > 10


class FlakyAggregates:
    """PutRecords through the real server, but the first calls throttle every other entry, and one
    request is written and then its answer lost (a whole aggregate written twice on the retry)."""

    def __init__(self, kinesis) -> None:
        self.kinesis = kinesis
        self.calls = 0

    async def put_records(self, stream, entries):
        self.calls += 1
        if self.calls == 3:
            await self.kinesis.put_records(stream, entries)
            raise EndpointUnreachable("answer lost after the server wrote it", request_sent=True)
        if self.calls <= 6:
            kept = entries[::2]
            answer = await self.kinesis.put_records(stream, kept)
            results = iter(answer["Records"])
            return {
                "FailedRecordCount": len(entries) - len(kept),
                "Records": [
                    next(results)
                    if index % 2 == 0
                    else {"ErrorCode": "ProvisionedThroughputExceededException", "ErrorMessage": "slow down"}
                    for index in range(len(entries))
                ],
            }
        return await self.kinesis.put_records(stream, entries)


async def test_throttles_and_a_lost_answer_keep_order_and_count_whole_aggregate_duplicates(kinesis, make_stream):
    stream = await make_stream(shards=2)
    settings = ProducerSettings(keys=12, records_per_key=40, payload_bytes=60, pacing=False, concurrency=1)
    flaky = FlakyAggregates(kinesis)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(timeout=30)
        result = await aggregating(
            kinesis, stream, settings, shard_map=shard_map, put_records=flaky.put_records, max_aggregate_bytes=2048
        ).run()
    assert result.complete and result.throttled > 0 and result.possible_duplicates > 0
    report = await Verifier.for_backend(kinesis).verify(result)
    assert report.ok and report.out_of_order == 0 and report.lost == 0
    # The lost answer's aggregates were all written twice: every user record in them is one duplicate.
    assert report.duplicated == result.possible_duplicates
    seqs = await read_independently(kinesis, stream)
    for found in seqs.values():
        firsts = list(dict.fromkeys(found))
        assert firsts == list(range(40))


async def test_a_split_meanwhile_re_predicts_and_re_aggregates(kinesis, make_stream):
    stream = await make_stream(shards=1)
    settings = ProducerSettings(keys=30, records_per_key=20, payload_bytes=80, pacing=False)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(timeout=30)
        parent = (await kinesis.all_shards(stream))[0]
        # The map still says one shard when the producer starts: its first aggregates are predicted
        # for the parent and land on the children.
        await kinesis.split_shard(stream, parent.shard_id, 2**127)
        await kinesis.wait_for_active(stream)
        result = await aggregating(kinesis, stream, settings, shard_map=shard_map, max_aggregate_bytes=4096).run()
    assert result.complete
    assert result.aggregation.wrong_shard > 0 and result.mismatch_count > 0
    report = await Verifier.for_backend(kinesis).verify(result)
    assert report.ok and report.out_of_order == 0 and report.misplaced == 0 and report.lost == 0
    children = {s.shard_id: s for s in await kinesis.all_shards(stream) if s.shard_id != parent.shard_id}
    for (key, _), ack in result.acks.items():  # each acknowledged copy is in the child its key hashes to
        assert children[ack.shard_id].contains(md5_hash_key(key))


async def test_one_aggregate_in_flight_per_key(kinesis, make_stream):
    stream = await make_stream(shards=2)
    settings = ProducerSettings(keys=6, records_per_key=200, payload_bytes=100, pacing=False, concurrency=8)
    in_flight: dict[str, int] = defaultdict(int)
    most = 0

    async def watching(stream_name, entries):
        nonlocal most
        keys_here = [{key for key, _, _ in user_records(entry["Data"])} for entry in entries]
        for group in keys_here:
            for key in group:
                in_flight[key] += 1
                most = max(most, in_flight[key])
        try:
            await asyncio.sleep(0.01)
            return await kinesis.put_records(stream_name, entries)
        finally:
            for group in keys_here:
                for key in group:
                    in_flight[key] -= 1

    result = await aggregating(kinesis, stream, settings, put_records=watching, max_aggregate_bytes=4096).run()
    assert result.complete and most == 1


async def test_pacing_counts_kinesis_records_and_bytes_not_user_records(kinesis, make_stream):
    """At 20 Kinesis records/s per shard, 2,000 user records in 4 KiB aggregates take a second or two;
    paced per user record they would take 50 s."""
    stream = await make_stream(shards=2)
    settings = ProducerSettings(
        keys=20, records_per_key=100, payload_bytes=100, pacing=True, shard_records_per_second=20
    )
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(timeout=30)
        producer = aggregating(kinesis, stream, settings, shard_map=shard_map, max_aggregate_bytes=4096)
        result = await producer.run()
    assert result.complete and result.elapsed < 15
    for shard, count in result.aggregation.kinesis_records.items():
        # the bucket starts full (20) and refills at 20/s: never more Kinesis records than that allows
        assert count <= 20 + 20 * result.elapsed + 1, (shard, count, result.elapsed)
    assert sum(result.aggregation.kinesis_records.values()) < 2000 / 20
