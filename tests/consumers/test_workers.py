"""The KCL worker view against real tables on the embedded server's DynamoDB, written as KCL 3.x
writes them (tests/consumers/kcl_tables.py): the three-table layout, KCL 3.5's single table, KCL 2.x
(owners only), multi-stream tables, and the bad inputs — each a marked row or one line."""

from __future__ import annotations

import json
import time

import pytest

from console.consumers.kcl3 import (
    KCL_2X,
    SINGLE_TABLE,
    THREE_TABLES,
    Coordination,
    WorkerMetrics,
    parse_coordination,
)
from console.consumers.leases import parse_lease
from console.consumers.workers import (
    CPU_OVER,
    HAND_OFF,
    LEASES_OVER,
    METRICS_STALE,
    NO_METRICS,
    ONLY_CLOSED,
    THROUGHPUT_OVER,
    build_workers,
    read_workers,
)
from tests.commands.test_cli_reshard import endpoint, kconsole, one_clean_line
from tests.consumers.kcl_tables import (
    create_coordinator_table,
    create_lease_table,
    create_worker_metrics_table,
    kcl_lease,
    leader_lock,
    migration_state,
    put_items,
    worker_metrics,
)
from tests.consumers.test_consumers_live import ddb, isolated  # noqa: F401 - the same fixtures


async def split_stream(kinesis, make_stream):
    """A 2-shard stream whose first shard is split: (stream, closed parent, open shard ids)."""
    stream = await make_stream(shards=2)
    first = (await kinesis.all_shards(stream))[0]
    await kinesis.split_shard(stream, first.shard_id, (first.starting_hash_key + first.ending_hash_key + 1) // 2)
    await kinesis.wait_for_active(stream)
    shards = await kinesis.all_shards(stream)
    return stream, first.shard_id, [s.shard_id for s in shards if s.is_open]


def rows_by_id(document: dict) -> dict:
    return {row["worker_id"]: row for row in document["workers"]}


async def test_three_tables_workers_leader_migration_and_flags(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream, parent, open_ids = await split_stream(kinesis, make_stream)
    table = await create_lease_table(ddb)
    metrics_table = await create_worker_metrics_table(ddb, table)
    coordinator = await create_coordinator_table(ddb, table)
    now = int(time.time())
    await put_items(
        ddb,
        table,
        [
            kcl_lease(parent, owner="w-closed", version=3, throughput_kbps=0.0, children=tuple(open_ids[1:])),
            kcl_lease(open_ids[0], owner="w-busy", version=3, throughput_kbps=900.0),
            kcl_lease(open_ids[1], owner="w-busy", version=3, throughput_kbps=800.0, checkpoint_owner="w-idle"),
            kcl_lease(open_ids[2], owner="w-idle", version=3, throughput_kbps=10.0),
        ],
    )
    await put_items(
        ddb,
        metrics_table,
        [
            # The last reading failed (-1): the KCL skips it and smooths the rest, 95 then 97 -> 95.4.
            worker_metrics("w-busy", last_update=now - 5, cpu=(95.0, 97.0, -1.0), cpu_max=80),
            worker_metrics("w-idle", last_update=now - 600),  # a stopped worker: metrics long expired
        ],
    )
    await put_items(ddb, coordinator, [leader_lock("w-busy"), migration_state("CLIENT_VERSION_3X")])
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", "--json", *endpoint(local_kinesis)
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["layout"] == THREE_TABLES and document["migration_state"] == "CLIENT_VERSION_3X"
    rows = rows_by_id(document)
    assert set(rows) == {"w-busy", "w-closed", "w-idle"}
    busy, closed, idle = rows["w-busy"], rows["w-closed"], rows["w-idle"]
    assert set(busy) >= {
        "worker_id",
        "leases",
        "open_leases",
        "throughput_kbps",
        "cpu",
        "metrics_age_s",
        "leader",
        "flags",
    }
    assert (busy["leases"], busy["open_leases"], busy["throughput_kbps"]) == (2, 2, 1700.0)
    assert busy["cpu"] == pytest.approx(95.4)
    assert busy["leader"] is True and not idle["leader"] and 4 <= busy["metrics_age_s"] <= 30
    assert THROUGHPUT_OVER in busy["flags"] and CPU_OVER in busy["flags"] and HAND_OFF in busy["flags"]
    assert (closed["leases"], closed["open_leases"]) == (1, 0) and ONLY_CLOSED in closed["flags"]
    assert NO_METRICS in closed["flags"] and closed["cpu"] is None
    assert METRICS_STALE in idle["flags"] and HAND_OFF in idle["flags"] and idle["metrics_age_s"] >= 600
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", *endpoint(local_kinesis)
    )
    assert code == 0 and "WORKER" in out and "! only-closed" in out and "leader w-busy" in out
    assert "layout three-tables" in out and "migration state CLIENT_VERSION_3X" in out


async def test_single_table_layout_of_kcl_3_5(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    ids = [s.shard_id for s in await kinesis.all_shards(stream)]
    table = await create_lease_table(ddb)
    now = int(time.time())
    await put_items(
        ddb,
        table,
        [
            kcl_lease(ids[0], owner="a", version=3, throughput_kbps=5.0),
            kcl_lease(ids[1], owner="b", version=3, throughput_kbps=7.0),
            worker_metrics("a", last_update=now, in_lease_table=True),
            worker_metrics("b", last_update=now, in_lease_table=True),
            leader_lock("b", in_lease_table=True),
            migration_state("CLIENT_VERSION_3X", in_lease_table=True),
        ],
    )
    view = await read_workers(kinesis, table, stream, open_shard_ids=ids, now=now)
    assert view.layout == SINGLE_TABLE and view.leader == "b" and view.migration_state == "CLIENT_VERSION_3X"
    assert [(r.worker_id, r.leases, r.open_leases, r.throughput_kbps, r.leader, r.flags) for r in view.rows] == [
        ("a", 1, 1, 5.0, False, ()),
        ("b", 1, 1, 7.0, True, ()),
    ]
    # The consumers report still sees only the leases (worker and coordinator items are not leases).
    from console.consumers.look import consumer_report

    report = await consumer_report(kinesis, stream, lease_table=table)
    assert sorted(row.shard_id for row in report.rows) == ids


async def test_kcl_2x_workers_come_from_lease_owners_and_say_so(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=3)
    ids = [s.shard_id for s in await kinesis.all_shards(stream)]
    table = await create_lease_table(ddb)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(ids[0], owner="x", version=2),
            kcl_lease(ids[1], owner="x", version=2),
            kcl_lease(ids[2], owner=None, version=2),
        ],
    )
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", *endpoint(local_kinesis)
    )
    assert code == 0, err
    assert "layout kcl-2.x" in out and "workers are the lease owners" in out and "1 open lease(s) have no owner" in out
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", "--json", *endpoint(local_kinesis)
    )
    document = json.loads(out)
    assert document["layout"] == KCL_2X and document["migration_state"] is None
    assert [(w["worker_id"], w["leases"], w["cpu"], w["flags"]) for w in document["workers"]] == [("x", 2, None, [])]


async def test_multi_stream_table_names_other_streams_in_one_line(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0].shard_id
    table = await create_lease_table(ddb)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(shard, owner="w1", stream_identifier=f"123456789012:{stream}:1700000000"),
            kcl_lease("shardId-000000000000", owner="w1", stream_identifier="123456789012:orders:1700000000"),
            kcl_lease("shardId-000000000001", owner="w2", stream_identifier="123456789012:orders:1700000000"),
            kcl_lease("shardId-000000000000", owner="w2", stream_identifier="123456789012:payments:1700000001"),
        ],
    )
    code, out, err = await kconsole(capsys, "consumers", stream, "--lease-table", table, *endpoint(local_kinesis))
    assert code == 0, err
    line = [line for line in out.splitlines() if "other streams" in line]
    assert line == [
        "3 lease(s) of other streams in this table, left out; --all-streams lists them: orders (2), payments (1)"
    ]
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", "--json", *endpoint(local_kinesis)
    )
    document = json.loads(out)
    assert {w["worker_id"]: w["leases"] for w in document["workers"]} == {"w1": 1}
    assert document["other_streams"] == {"orders": 2, "payments": 1}
    code, out, err = await kconsole(
        capsys,
        "consumers",
        stream,
        "--lease-table",
        table,
        "--workers",
        "--all-streams",
        "--json",
        *endpoint(local_kinesis),
    )
    document = json.loads(out)
    assert {w["worker_id"]: w["leases"] for w in document["workers"]} == {"w1": 2, "w2": 2}
    assert [(row["stream"], row["shard_id"], row["owner"]) for row in document["other_stream_leases"]] == [
        ("orders", "shardId-000000000000", "w1"),
        ("orders", "shardId-000000000001", "w2"),
        ("payments", "shardId-000000000000", "w2"),
    ]
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--all-streams", *endpoint(local_kinesis)
    )
    assert code == 0 and "OTHER STREAM" in out and "payments" in out and "listed below" in out


async def test_find_lease_tables_names_each_layout(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0].shard_id
    three, single, legacy = [await create_lease_table(ddb) for _ in range(3)]
    await create_worker_metrics_table(ddb, three)
    await create_coordinator_table(ddb, three)
    for table in (three, single, legacy):
        await put_items(ddb, table, [kcl_lease(shard, version=3 if table != legacy else 2)])
    await put_items(ddb, single, [worker_metrics("worker-1", last_update=int(time.time()), in_lease_table=True)])
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--find-lease-tables", "--json", *endpoint(local_kinesis)
    )
    assert code == 0, err
    found = {k["lease_table"]: k for k in json.loads(out)["kcl_tables"]}
    assert found[three] == {
        "lease_table": three,
        "worker_metrics_table": f"{three}-WorkerMetricStats",
        "coordinator_table": f"{three}-CoordinatorState",
        "layout": THREE_TABLES,
    }
    assert found[single]["layout"] == SINGLE_TABLE and found[legacy]["layout"] == KCL_2X
    assert f"{three}-WorkerMetricStats" not in json.loads(out)["lease_tables"]


async def test_bad_kcl_tables_are_one_line_or_a_marked_row(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0].shard_id
    table = await create_lease_table(ddb)
    metrics_table = await create_worker_metrics_table(ddb, table)
    await create_coordinator_table(ddb, table)  # no Leader item in it
    await put_items(ddb, table, [kcl_lease(shard, owner="w1", version=3)])
    broken = worker_metrics("w1", last_update=int(time.time()))
    broken["lut"] = {"S": "yesterday"}
    broken["sts"] = {"M": {"C": {"S": "high"}}}
    await put_items(ddb, metrics_table, [broken])
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", *endpoint(local_kinesis)
    )
    assert code == 0 and "Traceback" not in err
    assert "! bad-item" in out and "lut has the wrong type (S)" in out and "no leader or migration state" in out
    # The worker-metrics table passed as the lease table: one line naming the lease table to pass.
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", metrics_table, "--workers", *endpoint(local_kinesis)
    )
    assert code == 2 and f"pass its lease table (by default {table!r})" in one_clean_line(err)
    # A table keyed on leaseKey whose items are nothing the KCL wrote.
    stranger = await create_lease_table(ddb)
    await put_items(ddb, stranger, [{"leaseKey": {"S": "k"}, "colour": {"S": "blue"}}])
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", stranger, "--workers", *endpoint(local_kinesis)
    )
    assert code == 2 and "not a KCL lease table" in one_clean_line(err)
    code, out, err = await kconsole(capsys, "consumers", stream, "--workers", *endpoint(local_kinesis))
    assert code == 2 and "--workers and --all-streams need --lease-table" in one_clean_line(err)


def lease(shard: str, owner: str, *, throughput: float = 0.0, checkpoint: str = "TRIM_HORIZON") -> object:
    return parse_lease(kcl_lease(shard, owner=owner, version=3, throughput_kbps=throughput, checkpoint=checkpoint))


def test_balance_flags_use_twice_the_mean_and_a_single_worker_is_never_over():
    leases = [lease(f"s{i}", "heavy") for i in range(7)] + [lease("t0", "light"), lease("t1", "other")]
    view = build_workers(leases, stream="x", open_shard_ids=None, metrics=[], coordination=None, layout=KCL_2X, now=0)
    flags = {row.worker_id: row.flags for row in view.rows}
    assert LEASES_OVER in flags["heavy"] and flags["light"] == () and flags["other"] == ()  # 7 > 2 x 3
    alone = build_workers(
        leases[:7], stream="x", open_shard_ids=None, metrics=[], coordination=None, layout=KCL_2X, now=0
    )
    assert alone.rows[0].flags == ()
    even = build_workers(
        [lease("a", "p"), lease("b", "p"), lease("c", "q")],
        stream="x",
        open_shard_ids=None,
        metrics=[],
        coordination=None,
        layout=KCL_2X,
        now=0,
    )
    assert all(LEASES_OVER not in row.flags for row in even.rows)  # 2 is not more than 2 x 1.5


def test_metrics_expire_after_the_kcl_expiry_and_finished_leases_count_as_closed():
    metrics = [WorkerMetrics("w", last_update=1000.0, cpu=10.0, cpu_limit=100.0)]
    fresh = build_workers(
        [lease("a", "w")],
        stream="x",
        open_shard_ids=None,
        metrics=metrics,
        coordination=Coordination("w", "CLIENT_VERSION_3X", None, 2),
        layout=THREE_TABLES,
        now=1060,
    )
    stale = build_workers(
        [lease("a", "w", checkpoint="SHARD_END")],
        stream="x",
        open_shard_ids=None,
        metrics=metrics,
        coordination=Coordination(None, None, None, 1),
        layout=THREE_TABLES,
        now=1061,
    )
    assert fresh.rows[0].flags == () and fresh.rows[0].leader
    assert stale.rows[0].flags == (ONLY_CLOSED, METRICS_STALE)
    assert "no leader: the coordinator state has no Leader lock item" in stale.notes


def test_a_leader_item_without_its_owner_is_named_once_not_called_missing():
    """A Leader lock item whose ownerName is not a string: the note says that item is broken, and
    does not also claim the table has no Leader item."""
    broken = leader_lock("w")
    broken["ownerName"] = {"N": "3"}
    coordination = parse_coordination([broken, migration_state("CLIENT_VERSION_3X")], in_lease_table=False)
    view = build_workers(
        [lease("a", "w")],
        stream="x",
        open_shard_ids=None,
        metrics=[WorkerMetrics("w", last_update=0.0, cpu=None, cpu_limit=None)],
        coordination=coordination,
        layout=THREE_TABLES,
        now=0,
    )
    assert view.leader is None and view.notes == ("the Leader lock item has no ownerName string",)
    missing = build_workers(
        [lease("a", "w")],
        stream="x",
        open_shard_ids=None,
        metrics=[],
        coordination=parse_coordination([migration_state("CLIENT_VERSION_3X")], in_lease_table=False),
        layout=THREE_TABLES,
        now=0,
    )
    assert missing.notes == ("no leader: the coordinator state has no Leader lock item",)


async def test_a_server_without_dynamodb_says_so_in_one_line(capsys, kinesis_mock):
    """kinesis-mock serves Kinesis only: the lease-table commands say the endpoint has no DynamoDB
    (exit 1), not that it might not be a Kinesis endpoint."""
    from console.backend import BackendConfig, open_backend

    url = kinesis_mock.endpoint_url
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=url)) as backend:
        await backend.create_stream("workers-no-dynamodb", 1)
        await backend.wait_for_active("workers-no-dynamodb")
    where = ("--endpoint-url", url, "--region", "us-east-1")
    for flags in (("--lease-table", "app", "--workers"), ("--find-lease-tables",)):
        code, out, err = await kconsole(capsys, "consumers", "workers-no-dynamodb", *flags, *where)
        line = one_clean_line(err)
        assert code == 1 and "does not serve DynamoDB" in line and "Kinesis endpoint" not in line, line
    code, out, err = await kconsole(
        capsys, "consumers", "workers-no-dynamodb", "--lease-table", "app", "--json", *where
    )
    assert code == 1 and "does not serve DynamoDB" in json.loads(out)["error"]["message"]


def test_cpu_is_the_kcls_own_moving_average_of_its_readings():
    """WorkerMetricStats.getMetricStat: an exponential moving average (alpha 0.2) skipping failed (-1) reads."""
    from console.consumers.kcl3 import kcl_metric_value

    assert kcl_metric_value([50.0]) == 50.0
    assert kcl_metric_value([70.0, 95.0]) == pytest.approx(75.0)  # not the last reading, 95
    assert kcl_metric_value([95.0, 97.0, -1.0]) == pytest.approx(95.4)  # not unknown for the failed last one
    assert kcl_metric_value([-1.0, 40.0, -1.0, 60.0]) == pytest.approx(44.0)
    assert kcl_metric_value([-1.0, -1.0]) is None and kcl_metric_value([]) is None


async def test_find_lease_tables_passes_over_another_streams_table_with_the_same_shard_ids(
    capsys, local_kinesis, kinesis, make_stream, ddb
):
    """Both streams have shardId-000000000000 and -01; the other stream's table, of a 4-shard stream written
    before this one existed, is not this stream's however alike its shard ids."""
    other = await make_stream(shards=4)
    await kinesis.put_record(other, b"x", "k")
    other_shards = sorted(await kinesis.all_shards(other), key=lambda s: s.shard_id)
    iterator = await kinesis.get_shard_iterator(other, other_shards[0].shard_id, "TRIM_HORIZON")
    other_records = (await kinesis.get_records(iterator))["Records"]
    stream = await make_stream(shards=2)
    shards = sorted(await kinesis.all_shards(stream), key=lambda s: s.shard_id)
    mine, theirs = await create_lease_table(ddb), await create_lease_table(ddb)
    await put_items(
        ddb, mine, [kcl_lease(s.shard_id, hash_range=(s.starting_hash_key, s.ending_hash_key)) for s in shards]
    )
    await put_items(
        ddb,
        theirs,
        [
            kcl_lease(
                s.shard_id,
                hash_range=(s.starting_hash_key, s.ending_hash_key),
                checkpoint=other_records[0]["SequenceNumber"] if other_records and s is other_shards[0] else "LATEST",
            )
            for s in other_shards[:2]
        ],
    )
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--find-lease-tables", "--json", *endpoint(local_kinesis)
    )
    assert code == 0, err
    found = json.loads(out)["lease_tables"]
    assert mine in found and theirs not in found, found
