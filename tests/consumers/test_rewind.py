"""Rewind, skip, undo and clone of a KCL application's checkpoints, against the embedded server's
DynamoDB and Kinesis over HTTP, with a KCL-like worker: it takes leases and renews their counters
with conditional writes, reads each shard from its checkpoint with GetRecords and checkpoints the
last record it read, conditional on the counter and owner it holds (as the KCL's checkpointer does)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from console.backend import BackendConfig, open_backend
from console.consumers import rewind, rewind_plan, rewind_run
from console.reshard.actionlog import ActionLog
from tests.commands.test_cli_reshard import kconsole, one_clean_line
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.faultproxy import FaultProxy, Faults

RECORDS, SHARDS, POINT = 3000, 4, 1000


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
async def ddb(local_kinesis):
    async with dynamodb(local_kinesis.endpoint_url) as client:
        yield client


def endpoint(url: str) -> list[str]:
    return ["--endpoint-url", url, "--region", "us-east-1"]


class Worker:
    """A KCL-like worker of one application: leases taken and renewed by conditional writes on
    leaseCounter, shards read from the checkpoint, the last record read checkpointed."""

    def __init__(self, kinesis, ddb, stream: str, table: str, name: str = "worker-1") -> None:
        self.kinesis, self.ddb, self.stream, self.table, self.name = kinesis, ddb, stream, table, name
        self.counters: dict[str, int] = {}  # lease key -> the counter this worker holds it at

    async def _items(self) -> list[dict]:
        return (await self.ddb.scan(TableName=self.table, ConsistentRead=True))["Items"]

    async def take_all(self) -> None:
        for item in await self._items():
            counter = int(item["leaseCounter"]["N"])
            await self.ddb.update_item(
                TableName=self.table,
                Key={"leaseKey": item["leaseKey"]},
                UpdateExpression="SET leaseOwner = :me, leaseCounter = :n",
                ConditionExpression="leaseCounter = :c",
                ExpressionAttributeValues={
                    ":c": {"N": str(counter)},
                    ":me": {"S": self.name},
                    ":n": {"N": str(counter + 1)},
                },
            )
            self.counters[item["leaseKey"]["S"]] = counter + 1

    async def _bump(self, key: str, extra: str = "", values: dict | None = None) -> None:
        counter = self.counters[key]
        await self.ddb.update_item(
            TableName=self.table,
            Key={"leaseKey": {"S": key}},
            UpdateExpression="SET leaseCounter = :n" + extra,
            ConditionExpression="leaseCounter = :c AND leaseOwner = :me",
            ExpressionAttributeValues={
                ":c": {"N": str(counter)},
                ":n": {"N": str(counter + 1)},
                ":me": {"S": self.name},
                **(values or {}),
            },
        )
        self.counters[key] = counter + 1

    async def renew_forever(self, every: float = 0.1) -> None:
        while True:
            for key in list(self.counters):
                await self._bump(key)
            await asyncio.sleep(every)

    async def read_pass(self) -> dict[str, list[dict]]:
        """Every leased shard read from its checkpoint to the tip; the last record checkpointed."""
        read: dict[str, list[dict]] = {}
        for item in await self._items():
            shard, checkpoint = item["leaseKey"]["S"], item["checkpoint"]["S"]
            if checkpoint == "TRIM_HORIZON":
                iterator = await self.kinesis.get_shard_iterator(self.stream, shard, "TRIM_HORIZON")
            else:
                iterator = await self.kinesis.get_shard_iterator(
                    self.stream, shard, "AFTER_SEQUENCE_NUMBER", sequence_number=checkpoint
                )
            records: list[dict] = []
            while iterator:
                page = await self.kinesis.get_records(iterator)
                records.extend(page["Records"])
                iterator = page.get("NextShardIterator")
                if not page["Records"] and not page.get("MillisBehindLatest"):
                    break
            read[shard] = records
            if records:
                await self._bump(shard, ", checkpoint = :cp", {":cp": {"S": records[-1]["SequenceNumber"]}})
        return read


async def checkpoints(ddb, table: str) -> dict[str, dict]:
    items = (await ddb.scan(TableName=table, ConsistentRead=True))["Items"]
    return {item["leaseKey"]["S"]: item for item in items}


async def written_stream(kinesis, make_stream) -> tuple[str, list[str]]:
    """3,000 records over 4 shards; a pause before the 1,000th, so its arrival time marks it alone."""
    stream = await make_stream(shards=SHARDS)
    keys = [f"key-{i}" for i in range(RECORDS)]
    for start, end in ((0, POINT - 1), (POINT - 1, RECORDS)):
        if start:
            await asyncio.sleep(1.5)
        for offset in range(start, end, 500):
            batch = [
                {"Data": f"record {i}".encode(), "PartitionKey": keys[i]} for i in range(offset, min(end, offset + 500))
            ]
            answer = await kinesis.put_records(stream, batch)
            assert not answer.get("FailedRecordCount")
    return stream, keys


async def test_rewind_to_a_time_plans_refuses_while_running_applies_undoes_and_the_reader_reads_exactly_the_plan(
    capsys, local_kinesis, kinesis, make_stream, ddb
):
    stream, _ = await written_stream(kinesis, make_stream)
    shards = [s.shard_id for s in await kinesis.all_shards(stream)]
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s, owner=None, counter=0) for s in shards])
    worker = Worker(kinesis, ddb, stream, table)
    await worker.take_all()
    first = await worker.read_pass()
    assert sum(len(r) for r in first.values()) == RECORDS
    by_data = {r["Data"]: r for records in first.values() for r in records}
    point = by_data[f"record {POINT - 1}".encode()]["ApproximateArrivalTimestamp"]
    expected = {
        shard: [r["SequenceNumber"] for r in records if r["ApproximateArrivalTimestamp"] >= point]
        for shard, records in first.items()
    }
    assert sum(len(v) for v in expected.values()) == RECORDS - POINT + 1
    at_tip = {key: item["checkpoint"]["S"] for key, item in (await checkpoints(ddb, table)).items()}
    when = point.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    base = ["consumers", "rewind", stream, "--lease-table", table, "--to", when, *endpoint(local_kinesis.endpoint_url)]

    code, out, err = await kconsole(capsys, *base, "--plan", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["planned_only"], err
    planned = {lease["shard_id"]: lease for lease in plan["leases"]}
    for shard in shards:
        assert planned[shard]["records"] == len(expected[shard]), (
            planned[shard]["new_checkpoint"],
            planned[shard]["note"],
            when,
        )
        assert planned[shard]["direction"] == "again"
        before = [r["SequenceNumber"] for r in first[shard] if r["ApproximateArrivalTimestamp"] < point]
        assert planned[shard]["new_checkpoint"] == (before[-1] if before else "TRIM_HORIZON")

    renewer = asyncio.create_task(worker.renew_forever())
    try:
        code, out, err = await kconsole(capsys, *base, "--yes", "--watch", "0.6")
        assert code == 1 and "the application is running: stop it first" in one_clean_line(err)
        assert {k: i["checkpoint"]["S"] for k, i in (await checkpoints(ddb, table)).items()} == at_tip
    finally:
        renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewer

    code, out, err = await kconsole(capsys, *base, "--yes", "--watch", "0.3", "--json")
    result = json.loads(out)["result"]
    assert code == 0 and result["complete"], err
    after = await checkpoints(ddb, table)
    for shard in shards:
        assert after[shard]["checkpoint"]["S"] == planned[shard]["new_checkpoint"]
        assert "leaseOwner" not in after[shard]  # left for the restarted application to take

    # Undo: the checkpoints the rewind moved are put back, under the same rules.
    code, out, err = await kconsole(
        capsys,
        "consumers",
        "rewind",
        "--undo",
        result["action_id"],
        "--yes",
        "--watch",
        "0",
        *endpoint(local_kinesis.endpoint_url),
    )
    assert code == 0, err
    assert {k: i["checkpoint"]["S"] for k, i in (await checkpoints(ddb, table)).items()} == at_tip

    code, out, err = await kconsole(capsys, *base, "--yes", "--watch", "0", "--json")
    assert code == 0 and json.loads(out)["result"]["complete"], err
    again = Worker(kinesis, ddb, stream, table, name="worker-2")
    await again.take_all()
    reread = await again.read_pass()
    assert {s: [r["SequenceNumber"] for r in records] for s, records in reread.items()} == expected

    # Skip: one named record (the poison pill) is moved past, shown decoded in the plan.
    target = shards[0]
    for text in ("fine", "poison", "after"):
        await kinesis.put_record(
            stream, text.encode(), "k", explicit_hash_key=(await kinesis.all_shards(stream))[0].starting_hash_key
        )
    checkpoint = (await checkpoints(ddb, table))[target]["checkpoint"]["S"]
    iterator = await kinesis.get_shard_iterator(stream, target, "AFTER_SEQUENCE_NUMBER", sequence_number=checkpoint)
    tail = (await kinesis.get_records(iterator))["Records"]
    poison = next(r for r in tail if r["Data"] == b"poison")
    skip = [
        "consumers",
        "skip",
        stream,
        "--lease-table",
        table,
        "--shard",
        target,
        "--sequence",
        poison["SequenceNumber"],
    ]
    code, out, err = await kconsole(capsys, *skip, "--plan", *endpoint(local_kinesis.endpoint_url))
    assert code == 0 and "record skipped:" in out and "poison" in out and "2 skipped" in out, out
    code, out, err = await kconsole(capsys, *skip, "--yes", "--watch", "0", *endpoint(local_kinesis.endpoint_url))
    assert code == 0, err
    await again.take_all()
    assert [r["Data"] for r in (await again.read_pass())[target]] == [b"after"]

    # Clone: a second application's table at the same positions; its reader starts there.
    clone_table = f"{table}-clone"
    code, out, err = await kconsole(
        capsys,
        "consumers",
        "clone",
        stream,
        "--lease-table",
        table,
        "--to-table",
        clone_table,
        "--yes",
        *endpoint(local_kinesis.endpoint_url),
    )
    assert code == 0, err
    original, cloned = await checkpoints(ddb, table), await checkpoints(ddb, clone_table)
    assert {k: i["checkpoint"] for k, i in cloned.items()} == {k: i["checkpoint"] for k, i in original.items()}
    assert all("leaseOwner" not in item and item["leaseCounter"]["N"] == "0" for item in cloned.values())
    await kinesis.put_record(
        stream, b"new", "k", explicit_hash_key=(await kinesis.all_shards(stream))[0].starting_hash_key
    )
    second = Worker(kinesis, ddb, stream, clone_table, name="clone-worker")
    await second.take_all()
    assert [r["Data"] for records in (await second.read_pass()).values() for r in records] == [b"new"]


async def test_bad_points_and_tables_are_one_line(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    other = await kinesis.put_record(stream, b"x", "k", explicit_hash_key=shards[1].starting_hash_key)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s.shard_id, owner=None) for s in shards])
    not_leases = f"plain-{stream}"
    await ddb.create_table(
        TableName=not_leases,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    url = endpoint(local_kinesis.endpoint_url)
    for argv, expected, exit_code in (
        (["--to", "2020-01-01T00:00:00Z"], "beyond", 2),
        (["--to", "2999-01-01T00:00:00Z"], "in the future", 2),
        (
            ["--to", f"{shards[0].shard_id}={other['SequenceNumber']}"],
            f"not a sequence number of {shards[0].shard_id}",
            2,
        ),
        (["--to", "yesterday-ish"], "--to must be", 2),
        ([], "needs --to", 2),
    ):
        code, _, err = await kconsole(
            capsys, "consumers", "rewind", stream, "--lease-table", table, *argv, "--yes", *url
        )
        assert code == exit_code and expected in one_clean_line(err), (argv, err)
    code, _, err = await kconsole(
        capsys, "consumers", "rewind", stream, "--lease-table", not_leases, "--to", "trim-horizon", "--yes", *url
    )
    assert code == 2 and "not a KCL lease table" in one_clean_line(err)
    code, _out, err = await kconsole(capsys, "consumers", "rewind", "--undo", "abcdef123456", "--yes", *url)
    assert code == 2 and "no checkpoint change" in one_clean_line(err)


class RenewsDuringTheWrite:
    """The real backend, with a worker renewing the second lease just before kconsole writes it (what a
    worker started between the watch and the write does)."""

    def __init__(self, backend, ddb, table: str, racing_key: str) -> None:
        self._backend, self._ddb, self._table, self._key = backend, ddb, table, racing_key

    def __getattr__(self, name):
        return getattr(self._backend, name)

    async def update_item_if(self, table, key, **change):
        if key["leaseKey"]["S"] == self._key:
            await self._ddb.update_item(
                TableName=self._table,
                Key=key,
                UpdateExpression="SET leaseOwner = :me ADD leaseCounter :one",
                ExpressionAttributeValues={":me": {"S": "worker-9"}, ":one": {"N": "1"}},
            )
        await self._backend.update_item_if(table, key, **change)


async def test_a_lease_renewed_during_the_write_is_reported_and_the_log_says_which_changed(
    kinesis, make_stream, ddb, tmp_path
):
    stream = await make_stream(shards=3)
    shards = [s.shard_id for s in await kinesis.all_shards(stream)]
    for shard in await kinesis.all_shards(stream):
        await kinesis.put_record(stream, b"x", "k", explicit_hash_key=shard.starting_hash_key)
    table = await create_lease_table(ddb)
    at_tip = {}
    for shard in shards:
        iterator = await kinesis.get_shard_iterator(stream, shard, "TRIM_HORIZON")
        at_tip[shard] = (await kinesis.get_records(iterator))["Records"][-1]["SequenceNumber"]
    await put_items(ddb, table, [kcl_lease(s, owner="worker-1", checkpoint=at_tip[s]) for s in shards])
    now = datetime.now(UTC)
    plan = await rewind.prepare_rewind(kinesis, stream, table, rewind_plan.parse_target(["trim-horizon"], now), now=now)
    assert [m.records for m in plan.changed] == [1, 1, 1]
    log = ActionLog(tmp_path / "actions.jsonl")
    racing = RenewsDuringTheWrite(kinesis, ddb, table, shards[1])
    result = await rewind_run.run(racing, plan, action_log=log, watch_seconds=0)
    assert [(o.shard_id, o.outcome) for o in result.outcomes] == [
        (shards[0], "applied"),
        (shards[1], "not applied"),
        (shards[2], "not attempted"),
    ]
    assert "application is running" in result.outcomes[1].evidence and not result.complete
    items = await checkpoints(ddb, table)
    assert [items[s]["checkpoint"]["S"] for s in shards] == ["TRIM_HORIZON", at_tip[shards[1]], at_tip[shards[2]]]
    entries = log.entries()
    intents = {e["id"]: e["plan"]["lease_key"] for e in entries if e.get("kind") == "intent"}
    outcomes = {intents[e["intent"]]: e["outcome"] for e in entries if e.get("kind") == "outcome"}
    assert outcomes == {shards[0]: "applied", shards[1]: "not applied"}
    # The undo puts back only what changed.
    stream_logged, table_logged, positions = rewind.logged_positions(entries, result.action_id)
    assert (stream_logged, table_logged, positions) == (stream, table, {shards[0]: (at_tip[shards[0]], 0)})


async def test_a_lost_update_item_reply_is_settled_by_reading_the_lease_back(
    local_kinesis, kinesis, make_stream, ddb, tmp_path
):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0]
    for text in (b"a", b"b"):
        await kinesis.put_record(stream, text, "k", explicit_hash_key=shard.starting_hash_key)
    iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
    last = (await kinesis.get_records(iterator))["Records"][-1]["SequenceNumber"]
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shard.shard_id, owner="worker-1", counter=5, checkpoint=last)])
    log = ActionLog(tmp_path / "actions.jsonl")
    port = urlsplit(local_kinesis.endpoint_url).port
    async with FaultProxy(port, Faults.drop_reply("UpdateItem")) as proxy:
        config = BackendConfig(kind="local", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as backend:
            now = datetime.now(UTC)
            plan = await rewind.prepare_rewind(
                backend, stream, table, rewind_plan.parse_target(["trim-horizon"], now), now=now
            )
            result = await rewind_run.run(backend, plan, action_log=log, watch_seconds=0)
        assert proxy.stats["reset_after:UpdateItem"] == 1
    assert result.complete and "the reply was lost" in result.outcomes[0].evidence
    item = (await checkpoints(ddb, table))[shard.shard_id]
    assert item["checkpoint"]["S"] == "TRIM_HORIZON" and item["leaseCounter"]["N"] == "6"  # written once
    assert [e["outcome"] for e in log.entries() if e.get("kind") == "outcome"] == ["applied"]


async def test_export_and_import_restore_positions(capsys, local_kinesis, kinesis, make_stream, ddb, tmp_path):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    for shard in shards:
        await kinesis.put_record(stream, b"x", "k", explicit_hash_key=shard.starting_hash_key)
    tips = {}
    for shard in shards:
        iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
        tips[shard.shard_id] = (await kinesis.get_records(iterator))["Records"][-1]["SequenceNumber"]
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s, owner=None, checkpoint=c) for s, c in tips.items()])
    url = endpoint(local_kinesis.endpoint_url)
    saved = tmp_path / "positions.json"
    code, _, err = await kconsole(
        capsys, "consumers", "checkpoints", "export", stream, saved, "--lease-table", table, *url
    )
    assert code == 0 and json.loads(saved.read_text())["leases"][0]["checkpoint"] in tips.values(), err
    code, _, err = await kconsole(
        capsys,
        "consumers",
        "rewind",
        stream,
        "--lease-table",
        table,
        "--to",
        "trim-horizon",
        "--yes",
        "--watch",
        "0",
        *url,
    )
    assert code == 0, err
    code, _, err = await kconsole(
        capsys,
        "consumers",
        "checkpoints",
        "import",
        stream,
        saved,
        "--lease-table",
        table,
        "--yes",
        "--watch",
        "0",
        *url,
    )
    assert code == 0, err
    assert {k: i["checkpoint"]["S"] for k, i in (await checkpoints(ddb, table)).items()} == tips
    code, _, err = await kconsole(
        capsys, "consumers", "checkpoints", "export", stream, tmp_path, "--lease-table", table, *url
    )
    assert code == 2 and "never replaces" in one_clean_line(err)
    (tmp_path / "junk.json").write_text("[1, 2]")
    code, _out, err = await kconsole(
        capsys,
        "consumers",
        "checkpoints",
        "import",
        stream,
        tmp_path / "junk.json",
        "--lease-table",
        table,
        "--yes",
        *url,
    )
    assert code == 2 and "not a positions file" in one_clean_line(err)


async def test_across_a_split_the_cleaned_up_parent_is_recreated_and_the_children_start_over(
    kinesis, make_stream, ddb, tmp_path
):
    stream = await make_stream(shards=1)
    parent = (await kinesis.all_shards(stream))[0]
    for text in (b"p1", b"p2"):
        await kinesis.put_record(stream, text, "k", explicit_hash_key=parent.starting_hash_key)
    await kinesis.split_shard(stream, parent.shard_id, (parent.starting_hash_key + parent.ending_hash_key) // 2)
    await kinesis.wait_for_active(stream)
    children = [s for s in await kinesis.all_shards(stream) if s.parents]
    for child in children:
        await kinesis.put_record(stream, b"c", "k", explicit_hash_key=child.starting_hash_key)
    tips = {}
    for child in children:
        iterator = await kinesis.get_shard_iterator(stream, child.shard_id, "TRIM_HORIZON")
        tips[child.shard_id] = (await kinesis.get_records(iterator))["Records"][-1]["SequenceNumber"]
    table = await create_lease_table(ddb)  # the parent's lease was cleaned up after it ended
    await put_items(
        ddb,
        table,
        [kcl_lease(c.shard_id, owner=None, checkpoint=tips[c.shard_id], parents=c.parents) for c in children],
    )
    now = datetime.now(UTC)
    plan = await rewind.prepare_rewind(kinesis, stream, table, rewind_plan.parse_target(["trim-horizon"], now), now=now)
    moves = {m.shard_id: m for m in plan.moves}
    assert moves[parent.shard_id].create is not None and moves[parent.shard_id].records == 2
    assert all(moves[c.shard_id].new == "TRIM_HORIZON" and moves[c.shard_id].records == 1 for c in children)
    result = await rewind_run.run(kinesis, plan, action_log=ActionLog(tmp_path / "log.jsonl"), watch_seconds=0)
    assert result.complete
    recreated = (await checkpoints(ddb, table))[parent.shard_id]
    assert recreated["checkpoint"] == {"S": "TRIM_HORIZON"} and "leaseOwner" not in recreated
    assert sorted(recreated["childShardIds"]["SS"]) == sorted(c.shard_id for c in children)
    assert recreated["startingHashKey"] == {"S": str(parent.starting_hash_key)}
