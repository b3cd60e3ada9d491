"""A worker's throughput where its leases carry no throughputKBps (KCL 2.x lease tables): measured from
its shards — real per-shard IncomingBytes points put into the embedded server's CloudWatch, or the
shards' last minute of records read back — with the source named."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

from console.consumers.throughput import (
    KB,
    LEASE,
    METRIC_MINUTES,
    SAMPLE_SECONDS,
    SAMPLED,
    SHARD_METRICS,
    ShardThroughputMeter,
    measure_shards,
)
from console.consumers.workers import read_workers
from tests.commands.test_cli_reshard import endpoint, kconsole
from tests.consumers.kcl_tables import aws_client, create_lease_table, kcl_lease, put_items
from tests.consumers.test_consumers_live import ddb, isolated  # noqa: F401 - the same fixtures


async def put_shard_points(endpoint_url: str, stream: str, points: list[tuple[str, float, datetime]]) -> None:
    """(shard id, IncomingBytes sum, minute) points with the dimensions Kinesis publishes them under."""
    async with aws_client("cloudwatch", endpoint_url) as cloudwatch:
        await cloudwatch.put_metric_data(
            Namespace="AWS/Kinesis",
            MetricData=[
                {
                    "MetricName": "IncomingBytes",
                    "Dimensions": [{"Name": "StreamName", "Value": stream}, {"Name": "ShardId", "Value": shard}],
                    "Timestamp": at,
                    "Value": value,
                    "Unit": "Bytes",
                }
                for shard, value, at in points
            ],
        )


def minutes_ago(n: int) -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=n, seconds=-5)


async def test_kcl_2x_worker_throughput_from_shard_metrics(capsys, local_kinesis, kinesis, make_stream, ddb):
    stream = await make_stream(shards=3)
    ids = [s.shard_id for s in await kinesis.all_shards(stream)]
    await kinesis.enable_enhanced_monitoring(stream, ["IncomingBytes"])
    await put_shard_points(
        local_kinesis.endpoint_url,
        stream,
        [
            (ids[0], 300.0 * KB, minutes_ago(2)),
            (ids[0], 300.0 * KB, minutes_ago(3)),
            (ids[1], 150.0 * KB, minutes_ago(2)),
        ],
    )
    table = await create_lease_table(ddb)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(ids[0], owner="x", version=2),
            kcl_lease(ids[1], owner="x", version=2),
            kcl_lease(ids[2], owner="y"),
        ],
    )
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", "--json", *endpoint(local_kinesis)
    )
    assert code == 0, err
    document = json.loads(out)
    rows = {row["worker_id"]: row for row in document["workers"]}
    window = METRIC_MINUTES * 60
    assert rows["x"]["throughput_kbps"] == round(750.0 / window, 3)
    assert rows["x"]["throughput_source"] == SHARD_METRICS
    # Enhanced monitoring is on for IncomingBytes: no points means the shard took nothing in.
    assert (rows["y"]["throughput_kbps"], rows["y"]["throughput_source"]) == (0.0, SHARD_METRICS)
    assert "from shard metrics (CloudWatch IncomingBytes" in document["throughput_measured"]
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", table, "--workers", *endpoint(local_kinesis)
    )
    assert code == 0, err
    assert "KB/s measured from shard metrics (CloudWatch IncomingBytes, last 5 min) for 3 shards" in out
    assert f"{750.0 / window:.1f}" in out


async def test_kcl_2x_worker_throughput_from_sampled_records_without_metrics(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    ids = [s.shard_id for s in shards]
    payload = b"x" * 3000
    for i in range(12):
        await kinesis.put_record(stream, payload, f"k{i:02d}", explicit_hash_key=shards[0].starting_hash_key)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(ids[0], owner="x", version=2), kcl_lease(ids[1], owner="y", version=2)])
    meter = ShardThroughputMeter(kinesis, stream, clock=time.monotonic)
    view = await read_workers(kinesis, table, stream, open_shard_ids=ids, now=time.time(), meter=meter)
    rows = {row.worker_id: row for row in view.rows}
    expected = 12 * (len(payload) + len("k00")) / SAMPLE_SECONDS / KB
    assert abs(rows["x"].throughput_kbps - expected) < 1e-9 and rows["x"].throughput_source == SAMPLED
    assert (rows["y"].throughput_kbps, rows["y"].throughput_source) == (0.0, SAMPLED)
    assert not rows["x"].throughput_lower_bound
    assert view.throughput_line == (
        "KB/s measured from sampled records (last 60 s read back) for 2 shards; kconsole reads 0.1 calls/s, "
        "0.0 MiB/s a shard: 2% of the shared budget (read share unbounded)"
    ), "one GetRecords a shard, counted in kconsole's read share"
    # The measurement is kept a minute: a second poll reads neither CloudWatch nor the shards again.
    await kinesis.put_record(stream, payload, "late", explicit_hash_key=shards[0].starting_hash_key)
    again = await read_workers(kinesis, table, stream, open_shard_ids=ids, now=time.time(), meter=meter)
    assert {row.worker_id: row.throughput_kbps for row in again.rows} == {"x": rows["x"].throughput_kbps, "y": 0.0}
    fresh = await measure_shards(kinesis, stream, ids)
    assert fresh.rates[ids[0]].kbps > rows["x"].throughput_kbps


async def test_kcl_3x_leases_keep_their_own_throughput_and_nothing_is_measured(kinesis, make_stream, ddb):
    stream = await make_stream(shards=2)
    ids = [s.shard_id for s in await kinesis.all_shards(stream)]
    table = await create_lease_table(ddb)
    await put_items(
        ddb,
        table,
        [
            kcl_lease(ids[0], owner="x", version=3, throughput_kbps=12.5),
            kcl_lease(ids[1], owner="y", version=2),  # a lease not yet measured by its 3.x worker
        ],
    )
    meter = ShardThroughputMeter(kinesis, stream, clock=time.monotonic)
    view = await read_workers(kinesis, table, stream, open_shard_ids=ids, now=time.time(), meter=meter)
    rows = {row.worker_id: row for row in view.rows}
    assert (rows["x"].throughput_kbps, rows["x"].throughput_source) == (12.5, LEASE)
    assert (rows["y"].throughput_kbps, rows["y"].throughput_source) == (0.0, SAMPLED)
    assert "for 1 shard" in view.throughput_line


async def test_a_sampled_read_stopped_at_its_page_bound_is_a_lower_bound(monkeypatch, kinesis, make_stream):
    from console.consumers import throughput

    stream = await make_stream(shards=1)
    shard = (await kinesis.all_shards(stream))[0].shard_id
    await kinesis.put_records(stream, [{"Data": b"y" * 1000, "PartitionKey": f"p{i}"} for i in range(9)])
    monkeypatch.setattr(throughput, "SAMPLE_RECORDS_PER_PAGE", 2)
    monkeypatch.setattr(throughput, "SAMPLE_PAGES", 2)
    bounded = (await measure_shards(kinesis, stream, [shard])).rates[shard]
    assert bounded.lower_bound and bounded.kbps == 4 * 1002 / SAMPLE_SECONDS / KB
    monkeypatch.setattr(throughput, "SAMPLE_PAGES", 10)
    whole = (await measure_shards(kinesis, stream, [shard])).rates[shard]
    assert not whole.lower_bound and whole.kbps == 9 * 1002 / SAMPLE_SECONDS / KB


def test_measured_rates_fill_only_leases_without_their_own_and_closed_shards_count_zero():
    from console.consumers.kcl3 import KCL_2X
    from console.consumers.leases import parse_lease
    from console.consumers.throughput import ShardRate, ShardThroughput
    from console.consumers.workers import build_workers

    leases = [
        parse_lease(kcl_lease("shardId-000000000000", owner="a", version=2)),
        parse_lease(kcl_lease("shardId-000000000001", owner="a", version=2, checkpoint="SHARD_END")),
        parse_lease(kcl_lease("shardId-000000000002", owner="b", version=3, throughput_kbps=4.0)),
        parse_lease(kcl_lease("shardId-000000000003", owner="b", version=2)),
    ]
    measured = ShardThroughput(
        {
            "shardId-000000000000": ShardRate(3.0, SAMPLED, lower_bound=True),
            "shardId-000000000003": ShardRate(1.5, SHARD_METRICS),
        }
    )
    view = build_workers(
        leases,
        stream="s",
        open_shard_ids=None,
        metrics=[],
        coordination=None,
        layout=KCL_2X,
        now=0.0,
        measured=measured,
    )
    a, b = view.rows
    assert (a.throughput_kbps, a.throughput_source, a.throughput_lower_bound, a.cells()[3]) == (
        3.0,
        SAMPLED,
        True,
        "≥3.0",
    )
    assert (b.throughput_kbps, b.throughput_source, b.cells()[3]) == (5.5, f"{LEASE}+{SHARD_METRICS}", "5.5")
    assert "for 1 shard" in view.throughput_line and "1 of them a lower bound" in view.throughput_line


async def test_sampling_goes_through_the_read_share_paced_and_backing_off_when_throttled(
    monkeypatch, kinesis, make_stream, local_kinesis
):
    from urllib.parse import urlsplit

    from console.backend import BackendConfig, open_backend
    from console.consumers import throughput
    from console.read.share import ReadShare
    from tests.faultproxy import FaultProxy, Faults

    stream = await make_stream(shards=2)
    shards = [s.shard_id for s in await kinesis.all_shards(stream)]
    await kinesis.put_records(stream, [{"Data": b"z" * 100, "PartitionKey": f"p{i}"} for i in range(40)])
    monkeypatch.setattr(throughput, "SAMPLE_RECORDS_PER_PAGE", 5)  # several pages a shard
    faults = Faults(throttle=1.0, operations=frozenset({"GetRecords"}), limit=1)
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url, max_attempts=1)
        async with open_backend(config) as through_proxy:
            share = ReadShare(0.4)  # two calls a second a shard
            began = time.monotonic()
            measured = await measure_shards(through_proxy, stream, shards, read_share=share)
            took = time.monotonic() - began
    assert proxy.stats["throttle:GetRecords"] == 1
    assert share.throttles == 1 and share.backing_off
    assert len(measured.rates) == 1 and "1 shard(s) could not be read back" in " ".join(measured.notes)
    assert proxy.stats["pass:GetRecords"] >= 2, "the other shard read a few pages"
    assert took >= 0.45, "the pages of a shard were paced within the share"
    assert "throttled: kconsole reads less" in (measured.sources_line() or "")
