"""Consumers against real servers over HTTP: a KCL lease table on the embedded server's DynamoDB with
items exactly as the KCL writes them, records put and read back, lag per shard; EFO registrations on
the embedded server and on kinesis-mock; and the bad inputs, each one line or a marked row."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from aiobotocore.awsrequest import AioAWSResponse

from console.backend import BackendConfig, open_backend
from console.consumers.look import consumer_report, find_lease_tables, read_leases
from console.consumers.recommend import window_peaks
from console.consumers.report import STALLED, UNOWNED, StallTracker
from console.errors import AccessDenied, BadInput
from tests.commands.test_cli_reshard import kconsole, one_clean_line
from tests.conftest import StreamFactory
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
async def ddb(local_kinesis):
    async with dynamodb(local_kinesis.endpoint_url) as client:
        yield client


async def put_to(kinesis, stream: str, shard, count: int, tag: str = "r") -> list[dict]:
    """`count` records into `shard` (explicit hash key at its start); returns them as read back."""
    for i in range(count):
        await kinesis.put_record(stream, f"{tag}{i}".encode(), f"{tag}{i}", explicit_hash_key=shard.starting_hash_key)
    iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
    return (await kinesis.get_records(iterator))["Records"]


def millis_since(record: dict, now: datetime) -> int:
    return int((now - record["ApproximateArrivalTimestamp"]).total_seconds() * 1000)


async def test_records_and_time_behind_per_shard_from_a_real_lease_table(kinesis, make_stream, ddb):
    stream = await make_stream(shards=4)
    shards = await kinesis.all_shards(stream)
    written = [await put_to(kinesis, stream, shard, count) for shard, count in zip(shards, (10, 6, 3, 0))]
    table = await create_lease_table(ddb)
    s0, s1, s2, s3 = (s.shard_id for s in shards)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(s0, checkpoint=written[0][2]["SequenceNumber"], version=1),  # 7 left, KCL 1.x item
            kcl_lease(
                s1,
                checkpoint="TRIM_HORIZON",
                version=2,
                hash_range=(shards[1].starting_hash_key, shards[1].ending_hash_key),
            ),
            kcl_lease(s2, checkpoint=written[2][-1]["SequenceNumber"], owner=None, version=3),  # caught up, no owner
        ],
    )
    before = datetime.now(UTC)
    report = await consumer_report(kinesis, stream, lease_table=table)
    after = datetime.now(UTC)
    rows = {row.shard_id: row for row in report.rows}
    assert (rows[s0].records_behind, rows[s1].records_behind, rows[s2].records_behind) == (7, 6, 0)
    # Time behind: the age of the first record after the checkpoint, measured during the call.
    for row, first in ((rows[s0], written[0][3]), (rows[s1], written[1][0])):
        assert millis_since(first, before) - 5 <= row.millis_behind <= millis_since(first, after) + 5
    assert rows[s2].millis_behind == 0 and rows[s2].state == UNOWNED
    assert report.unleased_shards == (s3,)
    document = report.to_json()
    assert set(document["leases"][0]) == {"shard_id", "owner", "checkpoint", "records_behind", "millis_behind", "state"}
    assert document["leases"][0]["checkpoint"] == written[0][2]["SequenceNumber"]


async def test_over_the_scan_cap_the_count_is_null_and_reading_stops(kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0]
    written = await put_to(kinesis, stream, shard, 12)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shard.shard_id)])
    capped = await consumer_report(kinesis, stream, lease_table=table, cap=5)
    assert capped.rows[0].records_behind is None and capped.rows[0].lag.over_cap
    assert capped.rows[0].millis_behind >= millis_since(written[0], datetime.now(UTC)) - 1000
    assert capped.to_json()["leases"][0]["records_behind"] is None
    exact = await consumer_report(kinesis, stream, lease_table=table, cap=12)
    assert exact.rows[0].records_behind == 12


async def test_a_counter_that_does_not_move_while_records_wait_is_stalled(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    for shard in shards:
        await put_to(kinesis, stream, shard, 2)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s.shard_id, counter=10) for s in shards])
    tracker = StallTracker()
    await consumer_report(kinesis, stream, lease_table=table, tracker=tracker)
    await put_items(ddb, table, [kcl_lease(shards[0].shard_id, counter=11)])  # this worker renewed its lease
    states = {
        row.shard_id: row.state
        for row in (await consumer_report(kinesis, stream, lease_table=table, tracker=tracker)).rows
    }
    assert states == {shards[0].shard_id: "owned", shards[1].shard_id: STALLED}


async def test_bad_leases_are_marked_rows_not_failures(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    await put_to(kinesis, stream, shards[0], 3)
    table = await create_lease_table(ddb)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(shards[0].shard_id, checkpoint="12abc"),  # unreadable checkpoint
            kcl_lease("shardId-000000000099"),  # a shard the stream does not have
            kcl_lease(shards[1].shard_id, checkpoint="AT_TIMESTAMP"),
        ],
    )
    report = await consumer_report(kinesis, stream, lease_table=table)
    problems = {p["shard_id"]: p["problem"] for p in report.to_json()["problems"]}
    assert "unreadable checkpoint '12abc'" in problems[shards[0].shard_id]
    assert "no such shard" in problems["shardId-000000000099"]
    assert "AT_TIMESTAMP" in problems[shards[1].shard_id]
    assert all(row.records_behind is None for row in report.rows)


async def test_tables_that_are_not_lease_tables_are_one_line(kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    other = f"orders-{stream}"
    await ddb.create_table(
        TableName=other,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with pytest.raises(BadInput, match="not a KCL lease table: its key is id"):
        await read_leases(kinesis, other, stream)
    lookalike = await create_lease_table(ddb)  # keyed on leaseKey, but its items are not leases
    await ddb.put_item(TableName=lookalike, Item={"leaseKey": {"S": "x"}, "colour": {"S": "blue"}})
    with pytest.raises(BadInput, match="of 1 item read, none has"):
        await read_leases(kinesis, lookalike, stream)
    with pytest.raises(BadInput, match="not found"):
        await read_leases(kinesis, f"missing-{stream}", stream)


async def test_find_lease_tables_by_their_items(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    mine, theirs = await create_lease_table(ddb), await create_lease_table(ddb)
    await put_items(ddb, mine, [kcl_lease(shard.shard_id) for shard in shards])  # a lease on every open shard
    await put_items(ddb, theirs, [kcl_lease("shardId-000000000042")])
    found = await find_lease_tables(kinesis, stream, shards)
    assert mine in found and theirs not in found


class AccessDeniedOnScan:
    """What DynamoDB answers a caller without dynamodb:Scan, injected where the HTTP request would be sent
    (moto does not enforce IAM)."""

    class _Body:
        def __init__(self, body: bytes) -> None:
            self.body = body

        async def read(self) -> bytes:
            return self.body

    def __call__(self, request, **_):
        body = json.dumps(
            {
                "__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
                "message": "User is not authorized to perform: dynamodb:Scan",
            }
        ).encode()
        return AioAWSResponse(
            request.url, 400, {"x-amzn-requestid": "x", "content-type": "application/x-amz-json-1.0"}, self._Body(body)
        )


async def test_missing_dynamodb_permission_is_one_clear_error(kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease((await kinesis.all_shards(stream))[0].shard_id)])
    client = await kinesis._side_client("dynamodb")
    client.meta.events.register("before-send.dynamodb.Scan", AccessDeniedOnScan())
    with pytest.raises(AccessDenied, match="access denied for dynamodb:Scan"):
        await consumer_report(kinesis, stream, lease_table=table)


# ---- the CLI -------------------------------------------------------------------------------------


def endpoint(local_kinesis):
    return ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]


async def test_cli_json_contract_and_bad_input(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    await put_to(kinesis, stream, shards[0], 4)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shards[0].shard_id)])
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--json", *endpoint(local_kinesis)
    )
    document = json.loads(out)
    assert code == 0 and document["stream"] == stream and document["efo_consumers"] == []
    assert document["leases"] == [
        {
            "shard_id": shards[0].shard_id,
            "owner": "worker-1",
            "checkpoint": "TRIM_HORIZON",
            "records_behind": 4,
            "millis_behind": document["leases"][0]["millis_behind"],
            "state": "owned",
        }
    ]
    assert document["unleased_shards"] == [shards[1].shard_id]
    code, out, err = await kconsole(capsys, "consumers", stream, "--lease-table", table, *endpoint(local_kinesis))
    assert code == 0 and "RECORDS BEHIND" in out and f"no lease: {shards[1].shard_id}" in out
    for argv, expected in (
        (["--lease-table", "x"], "not a valid DynamoDB table name"),
        (["--lease-table", f"absent-{stream}"], "not found"),
        (["--scan-cap", "0"], "--scan-cap must be"),
        (["--watch", "5"], "--watch needs --lease-table"),
    ):
        code, out, err = await kconsole(capsys, "consumers", stream, *argv, *endpoint(local_kinesis))
        assert code == 2 and expected in one_clean_line(err), (argv, err)


async def test_cli_register_and_deregister_ask_first_and_respect_read_only(capsys, local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    base = ["consumers", "register", stream, "--name", "analytics", *endpoint(local_kinesis)]
    code, out, err = await kconsole(capsys, *base, "--yes", "--read-only")
    assert code == 1 and "read-only" in one_clean_line(err)
    code, out, err = await kconsole(capsys, *base)  # no TTY under pytest, no --yes
    assert code == 1 and "without confirmation" in one_clean_line(err)
    assert await kinesis.list_stream_consumers(arn) == []
    code, out, err = await kconsole(capsys, *base, "--yes", "--json")
    assert code == 0 and json.loads(out)["name"] == "analytics"
    assert [c.name for c in await kinesis.list_stream_consumers(arn)] == ["analytics"]
    code, out, err = await kconsole(capsys, "consumers", stream, "--json", *endpoint(local_kinesis))
    assert [c["name"] for c in json.loads(out)["efo_consumers"]] == ["analytics"]
    code, out, err = await kconsole(
        capsys, "consumers", "deregister", stream, "--name", "analytics", "--yes", *endpoint(local_kinesis)
    )
    assert code == 0 and await kinesis.list_stream_consumers(arn) == []


async def test_split_while_a_consumer_holds_the_parent_shows_the_barrier(
    capsys, local_kinesis, kinesis, make_stream, ddb
):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    await put_to(kinesis, stream, shards[0], 5)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s.shard_id) for s in shards])
    split = ["split", stream, "--shard", shards[0].shard_id, "--lease-table", table, *endpoint(local_kinesis)]
    code, out, err = await kconsole(capsys, "plan", *split, "--json")
    barrier = json.loads(out)["consumers"]
    assert code == 0 and barrier["blocking"] and barrier["records_behind_barrier"] == 5
    assert [s["shard_id"] for s in barrier["behind_barrier"]] == [shards[0].shard_id]
    code, out, err = await kconsole(capsys, "plan", *split)
    assert "Lag this change puts behind the barrier" in out and f"{shards[0].shard_id}: 5 records" in out
    code, out, err = await kconsole(capsys, "reshard", *split, "--yes")
    assert code == 1 and "--force" in one_clean_line(err) and "5 records" in err
    assert len(await kinesis.all_shards(stream)) == 2  # nothing was called
    code, out, err = await kconsole(capsys, "reshard", *split, "--yes", "--force")
    assert code == 0 and len(await kinesis.all_shards(stream)) == 4
    # The parent is closed now and its consumer has not finished it: the children wait.
    code, out, err = await kconsole(
        capsys,
        "plan",
        "split",
        stream,
        "--shard",
        shards[1].shard_id,
        "--lease-table",
        table,
        "--json",
        *endpoint(local_kinesis),
    )
    assert [s["shard_id"] for s in json.loads(out)["consumers"]["unfinished_parents"]] == [shards[0].shard_id]
    code, out, err = await kconsole(capsys, "consumers", stream, "--lease-table", table, *endpoint(local_kinesis))
    assert f"waits for {shards[0].shard_id} to reach SHARD_END" in out


async def test_recommend_prints_ready_plan_lines(capsys, local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    # 1,500 records at once into the first shard: its busiest second is over the 1,000 records/s limit.
    for _ in range(3):
        await kinesis.put_records(
            stream, [{"Data": b"x", "PartitionKey": "p", "ExplicitHashKey": shards[0].starting_hash_key}] * 500
        )
    peaks = await window_peaks(kinesis, stream, shards, datetime.fromtimestamp(0, UTC))
    assert peaks[shards[0].shard_id].peak_records_per_s >= 1000 and peaks[shards[1].shard_id].records_read == 0
    code, out, err = await kconsole(capsys, "recommend", stream, "--window", "10m", "--json", *endpoint(local_kinesis))
    document = json.loads(out)
    assert code == 0 and document["source"].startswith("the window's records")
    assert document["commands"] == [f"kconsole plan split {stream} --shard {shards[0].shard_id} --at-median-of-recent"]
    code, out, err = await kconsole(capsys, "recommend", stream, "--window", "1y", *endpoint(local_kinesis))
    assert code == 2 and "--window" in one_clean_line(err)


# ---- EFO on both servers -------------------------------------------------------------------------


@pytest.fixture(params=["embedded", "kinesis-mock"])
async def any_server(request, local_kinesis):
    url = (
        local_kinesis.endpoint_url
        if request.param == "embedded"
        else request.getfixturevalue("kinesis_mock").endpoint_url
    )
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=url)) as backend:
        factory = StreamFactory(backend)
        yield backend, factory
        await factory.cleanup()


async def test_efo_consumers_register_list_describe_deregister(any_server):
    from console.consumers.look import efo_consumers

    kinesis, make_stream = any_server
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    registered = await kinesis.register_stream_consumer(arn, "reader-a")
    assert registered.name == "reader-a" and registered.arn
    for _ in range(50):  # kinesis-mock activates after REGISTER_STREAM_CONSUMER_DURATION
        described = await kinesis.describe_stream_consumer(arn, "reader-a")
        if described.active:
            break
        await asyncio.sleep(0.05)
    assert described.active
    [consumer] = await efo_consumers(kinesis, arn)
    assert (consumer.name, consumer.status, consumer.arn) == ("reader-a", "ACTIVE", registered.arn)
    assert consumer.created_iso[:4].isdigit()
    await kinesis.deregister_stream_consumer(arn, "reader-a")
    for _ in range(50):
        left = await kinesis.list_stream_consumers(arn)
        if not left or left[0].deleting:
            break
        await asyncio.sleep(0.05)
    assert not left or left[0].deleting


async def test_cli_watch_reads_twice_and_finds_the_stalled_lease(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0]
    await put_to(kinesis, stream, shard, 2)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shard.shard_id, counter=3)])  # nobody renews it
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--watch", "0.2", "--json", *endpoint(local_kinesis)
    )
    assert code == 0 and json.loads(out)["leases"][0]["state"] == "stalled"
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--watch", "900", *endpoint(local_kinesis)
    )
    assert code == 2 and "--watch must be" in one_clean_line(err)
