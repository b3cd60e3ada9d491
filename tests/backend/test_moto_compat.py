"""Each moto 5.2.5 defect that console/localserver/fixes.py fixes, over HTTP.

Every test runs twice: against the patched embedded server (the defect must be gone) and against an
unpatched moto server (the defect must be there). If moto fixes one upstream, the unpatched run fails
and the corresponding patch can go.
"""

from __future__ import annotations

import asyncio
import json
import random
import urllib.request
import uuid
from datetime import UTC, datetime

import pytest

from console.backend import BackendConfig, open_backend
from console.errors import ConsoleError
from console.keyspace.hashkeys import HashRangeIndex, even_split, md5_hash_key
from console.localserver.supervision import LocalKinesisServer
from tests.conftest import StreamFactory


@pytest.fixture(scope="module")
def unpatched_moto():
    with LocalKinesisServer(patched=False) as server:
        yield server


@pytest.fixture(params=["patched", "unpatched"])
async def server(request, local_kinesis, unpatched_moto):
    """(backend, stream factory, patched?) for one of the two servers."""
    patched = request.param == "patched"
    endpoint = (local_kinesis if patched else unpatched_moto).endpoint_url
    async with open_backend(BackendConfig(kind="local", region="us-east-1", endpoint_url=endpoint)) as backend:
        factory = StreamFactory(backend)
        yield backend, factory, patched
        await factory.cleanup()


def expect_defect(defect_seen: bool, patched: bool, what: str) -> None:
    if patched:
        assert not defect_seen, f"patched server still shows: {what}"
    else:
        assert defect_seen, f"moto no longer shows '{what}': the patch may be obsolete"


async def test_puts_after_a_split_go_to_the_children(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=1)
    await kinesis.split_shard(name, "shardId-000000000000", 2**127)
    keys = [f"k{i}" for i in range(40)]
    reply = await kinesis.put_records(name, [{"Data": b"x", "PartitionKey": k} for k in keys])
    routed = [record["ShardId"] for record in reply["Records"]]
    expect_defect("shardId-000000000000" in routed, patched, "puts routed to the closed parent")
    if patched:
        index = HashRangeIndex.build(
            (s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in await kinesis.all_shards(name) if s.is_open
        )
        assert routed == index.predict_many([md5_hash_key(k) for k in keys])


async def test_explicit_hash_key_equal_to_ending_key(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=2)
    ending = even_split(2)[0][1]
    try:
        shard = (await kinesis.put_record(name, b"x", "p", explicit_hash_key=ending))["ShardId"]
    except ConsoleError:
        shard = None
    expect_defect(shard != "shardId-000000000000", patched, "ExplicitHashKey == EndingHashKey fails")


async def test_a_bad_explicit_hash_key_refuses_the_whole_put_records(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=1)
    records = [{"Data": b"x", "PartitionKey": f"k{i}"} for i in range(3)]
    records.append({"Data": b"x", "PartitionKey": "k", "ExplicitHashKey": str(2**128)})
    with pytest.raises(ConsoleError, match="refused PutRecords"):
        await kinesis.put_records(name, records)
    iterator = await kinesis.get_shard_iterator(name, "shardId-000000000000", "TRIM_HORIZON")
    stored = len((await kinesis.get_records(iterator))["Records"])
    expect_defect(stored > 0, patched, f"a refused PutRecords request stored {stored} records")


async def test_a_deleted_streams_records_leave_the_servers_memory(server):
    """moto tracks every model instance it makes; its /moto-api/data.json dump lists what is tracked."""
    kinesis, make_stream, patched = server
    name = await make_stream(shards=2)
    marker = f"gone-{uuid.uuid4().hex}"
    await kinesis.put_records(name, [{"Data": b"x", "PartitionKey": f"{marker}-{i}"} for i in range(20)])
    await kinesis.delete_stream(name)

    def dumped_records() -> list[dict]:
        with urllib.request.urlopen(f"{kinesis.endpoint_url}/moto-api/data.json", timeout=30) as answer:
            return json.loads(answer.read())["kinesis"].get("Record", [])

    kept = [r for r in await asyncio.to_thread(dumped_records) if str(r.get("partition_key", "")).startswith(marker)]
    expect_defect(len(kept) > 0, patched, f"a deleted stream's records are still held ({len(kept)} of 20)")


async def test_concurrent_put_records_to_one_shard_keep_every_record(server):
    kinesis, make_stream, patched = server
    lost_somewhere = False
    rounds = 3 if patched else 10  # the race is likely, not certain, in one round on unpatched moto
    for _ in range(rounds):
        name = await make_stream(shards=1)

        async def batch(b: int) -> dict:
            return await kinesis.put_records(name, [{"Data": b"v", "PartitionKey": f"{b}-{i}"} for i in range(100)])

        replies = await asyncio.gather(*(batch(b) for b in range(20)))
        sequence_numbers = {r["SequenceNumber"] for reply in replies for r in reply["Records"]}
        iterator = await kinesis.get_shard_iterator(name, "shardId-000000000000", "TRIM_HORIZON")
        stored = (await kinesis.get_records(iterator))["Records"]
        lost_somewhere |= len(sequence_numbers) < 2000 or len(stored) < 2000
        if lost_somewhere or (patched and len(stored) == 2000):
            break
    if not patched and not lost_somewhere:
        # A race that did not happen in ten rounds is not proof that moto fixed it: how often moto's
        # read-max-then-insert interleaves depends on the machine's load and the GIL's switch interval.
        pytest.skip("the unpatched race did not show in 10 rounds on this machine")
    expect_defect(lost_somewhere, patched, "concurrent PutRecords lose records")


async def test_closed_shard_iterator_ends(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=1)
    await kinesis.put_record(name, b"before", "p")
    await kinesis.split_shard(name, "shardId-000000000000", 2**127)
    iterator = await kinesis.get_shard_iterator(name, "shardId-000000000000", "TRIM_HORIZON")
    records, reply = [], {}
    for _ in range(4):
        reply = await kinesis.get_records(iterator)
        records += reply["Records"]
        iterator = reply.get("NextShardIterator")
        if not iterator:
            break
    expect_defect(iterator is not None, patched, "a closed shard's iterator never ends")
    if patched:
        assert [r["Data"] for r in records] == [b"before"]  # the record stayed in the parent
        assert sorted(child["ShardId"] for child in reply["ChildShards"]) == [
            "shardId-000000000001",
            "shardId-000000000002",
        ]


async def test_list_shards_with_only_next_token(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=3)
    first = await kinesis.list_shards(stream=name, max_results=2)
    try:
        second = await kinesis.list_shards(next_token=first["NextToken"], max_results=2)
        ids = [s["ShardId"] for s in first["Shards"] + second["Shards"]]
    except ConsoleError:
        ids = None
    expect_defect(ids != [f"shardId-00000000000{i}" for i in range(3)], patched, "ListShards with only NextToken fails")


async def test_shard_filter(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=2)
    await kinesis.split_shard(name, "shardId-000000000000", 2**126)
    latest = [s.shard_id for s in await kinesis.all_shards(name, {"Type": "AT_LATEST"})]
    expect_defect("shardId-000000000000" in latest, patched, "ShardFilter is ignored")
    if patched:
        assert latest == ["shardId-000000000001", "shardId-000000000002", "shardId-000000000003"]
        horizon = [s.shard_id for s in await kinesis.all_shards(name, {"Type": "AT_TRIM_HORIZON"})]
        assert horizon == ["shardId-000000000000", "shardId-000000000001"]
        everything = await kinesis.all_shards(name, {"Type": "FROM_TRIM_HORIZON"})
        assert len(everything) == 4
        after = await kinesis.all_shards(name, {"Type": "AFTER_SHARD_ID", "ShardId": "shardId-000000000001"})
        assert [s.shard_id for s in after] == ["shardId-000000000002", "shardId-000000000003"]


async def test_shard_filter_timestamps(kinesis, make_stream):
    """AT_TIMESTAMP / FROM_TIMESTAMP on the patched server (unpatched moto ignores every filter)."""
    name = await make_stream(shards=2)
    before_split = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await kinesis.split_shard(name, "shardId-000000000000", 2**126)
    await asyncio.sleep(0.05)
    after_split = datetime.now(UTC)

    async def ids(kind: str, moment: datetime) -> list[str]:
        return [s.shard_id for s in await kinesis.all_shards(name, {"Type": kind, "Timestamp": moment})]

    assert await ids("AT_TIMESTAMP", before_split) == ["shardId-000000000000", "shardId-000000000001"]
    assert await ids("AT_TIMESTAMP", after_split) == [
        "shardId-000000000001",
        "shardId-000000000002",
        "shardId-000000000003",
    ]
    assert len(await ids("FROM_TIMESTAMP", before_split)) == 4
    assert await ids("FROM_TIMESTAMP", after_split) == await ids("AT_TIMESTAMP", after_split)


async def test_sequence_numbers_unique_across_shards(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=4)
    reply = await kinesis.put_records(name, [{"Data": b"x", "PartitionKey": f"k{i}"} for i in range(40)])
    numbers = [r["SequenceNumber"] for r in reply["Records"]]
    expect_defect(len(set(numbers)) < len(numbers), patched, "sequence numbers repeat across shards")


async def test_split_keeps_records_in_the_parent(server):
    """moto's split re-puts the parent's records through its routing; unpatched they land back in the
    parent only because of the routing defect, so fixing routing alone would move them to the children.
    moto_compat's split leaves them where AWS does: in the closed parent."""
    kinesis, make_stream, patched = server
    if not patched:
        pytest.skip("masked by the routing defect on unpatched moto")
    name = await make_stream(shards=1)
    await kinesis.put_records(name, [{"Data": b"old", "PartitionKey": f"k{i}"} for i in range(10)])
    await kinesis.split_shard(name, "shardId-000000000000", 2**127)
    in_children = 0
    for child in ("shardId-000000000001", "shardId-000000000002"):
        iterator = await kinesis.get_shard_iterator(name, child, "TRIM_HORIZON")
        in_children += len((await kinesis.get_records(iterator))["Records"])
    assert in_children == 0
    iterator = await kinesis.get_shard_iterator(name, "shardId-000000000000", "TRIM_HORIZON")
    assert len((await kinesis.get_records(iterator))["Records"]) == 10


async def test_merge_accepts_either_order_and_leaves_records_in_parents(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=2)
    await kinesis.put_records(name, [{"Data": b"old", "PartitionKey": f"k{i}"} for i in range(10)])
    defects = []
    try:  # upper shard first: AWS accepts it
        await kinesis.merge_shards(name, "shardId-000000000001", "shardId-000000000000")
    except ConsoleError:
        defects.append("reverse order refused")
        await kinesis.merge_shards(name, "shardId-000000000000", "shardId-000000000001")
    child = next(s for s in await kinesis.all_shards(name) if s.is_open)
    if (child.starting_hash_key, child.ending_hash_key) != (0, 2**128 - 1):
        defects.append("merged range wrong")
    iterator = await kinesis.get_shard_iterator(name, child.shard_id, "TRIM_HORIZON")
    if (await kinesis.get_records(iterator))["Records"]:
        defects.append("records copied into the child")
    if (await kinesis.describe_stream_summary(name)).open_shard_count != 1:
        defects.append("OpenShardCount stale")
    expect_defect(bool(defects), patched, f"merge defects {defects}")
    if patched:
        assert child.parents == ("shardId-000000000001", "shardId-000000000000")


@pytest.mark.parametrize("start, target", [(4, 6), (4, 3), (3, 5)])
async def test_update_shard_count_ends_with_the_even_split(server, start, target):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=start)
    await kinesis.update_shard_count(name, target)
    shards = await kinesis.all_shards(name)
    open_ranges = sorted((s.starting_hash_key, s.ending_hash_key) for s in shards if s.is_open)
    expect_defect(open_ranges != even_split(target), patched, "UpdateShardCount leaves uneven ranges")
    if patched:
        by_id = {s.shard_id: s for s in shards}
        for shard in shards:
            assert len(shard.parents) <= 2 and all(not by_id[p].is_open for p in shard.parents)
        for closed in (s for s in shards if not s.is_open):
            assert int(closed.ending_sequence_number) >= int(closed.starting_sequence_number)
        assert (await kinesis.describe_stream_summary(name)).open_shard_count == target


async def test_random_explicit_keys_route_to_the_owner_after_reshards(server):
    kinesis, make_stream, patched = server
    if not patched:
        pytest.skip("covered by the single-defect tests above")
    name = await make_stream(shards=3)
    await kinesis.split_shard(name, "shardId-000000000001", even_split(3)[1][0] + 12345)
    await kinesis.merge_shards(name, "shardId-000000000002", "shardId-000000000004")
    shards = [s for s in await kinesis.all_shards(name) if s.is_open]
    index = HashRangeIndex.build((s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in shards)
    rng = random.Random(7)
    keys = (
        [rng.randrange(2**128) for _ in range(400)]
        + [s.ending_hash_key for s in shards]
        + [s.starting_hash_key for s in shards]
    )
    reply = await kinesis.put_records(name, [{"Data": b"x", "PartitionKey": "p", "ExplicitHashKey": k} for k in keys])
    assert [r["ShardId"] for r in reply["Records"]] == index.predict_many(keys)


async def test_split_at_the_shards_ending_hash_key(server):
    """AWS takes any NewStartingHashKey in (StartingHashKey, EndingHashKey]; moto refuses the ending key."""
    kinesis, make_stream, patched = server
    name = await make_stream(shards=2)
    ending = even_split(2)[0][1]
    try:
        await kinesis.split_shard(name, "shardId-000000000000", ending)
        refused = False
    except ConsoleError:
        refused = True
    expect_defect(refused, patched, "SplitShard at EndingHashKey refused")
    if patched:
        single_key = next(s for s in await kinesis.all_shards(name) if s.shard_id == "shardId-000000000003")
        assert (single_key.starting_hash_key, single_key.ending_hash_key) == (ending, ending)
        with pytest.raises(ConsoleError):  # an empty lower child is still refused
            await kinesis.split_shard(name, "shardId-000000000001", even_split(2)[1][0])


async def test_deregister_by_name_removes_only_that_consumer(server):
    kinesis, make_stream, patched = server
    name = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(name)).arn
    for consumer in ("keep-me", "drop-me"):
        await kinesis.register_stream_consumer(arn, consumer)
    await kinesis.deregister_stream_consumer(arn, "drop-me")
    left = sorted(c.name for c in await kinesis.list_stream_consumers(arn))
    expect_defect(left != ["keep-me"], patched, "deregistering by name keeps only the named consumer")


async def test_malformed_shard_iterator_is_invalid_argument(server):
    kinesis, make_stream, patched = server
    await make_stream(shards=1)
    # One attempt: moto's 500 would otherwise be retried with backoff for seconds.
    config = BackendConfig(kind="local", region="us-east-1", endpoint_url=kinesis.endpoint_url, max_attempts=1)
    try:
        async with open_backend(config) as single_attempt:
            await single_attempt.get_records("not-an-iterator")
        answer = "no error"
    except ConsoleError as error:
        answer = str(error)
    expect_defect(
        "InvalidArgument" not in answer and "Invalid ShardIterator" not in answer,
        patched,
        f"a malformed iterator is not InvalidArgumentException (got: {answer})",
    )
