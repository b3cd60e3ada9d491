"""The fleet: every stream's row from real metric data put into the embedded server's CloudWatch
(PutMetricData under AWS/Kinesis, as Kinesis publishes it), sorted by trouble; GetMetricData calls
counted at the transport (the fault proxy, passing everything); a server without CloudWatch keeps
every row and says why in one line."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from aiobotocore.session import AioSession

from console.backend import BackendConfig, open_backend
from console.backend.config import DUMMY_CREDENTIALS
from console.commands.streams import StreamsOptions, _watch_fleet
from console.heat.cloudwatch import minute_window
from console.heat.fleet import (
    AGE_TROUBLE_MS,
    FLEET_METRICS,
    FLEET_READ_COST,
    StreamFacts,
    build_row,
    fleet_rows,
    sort_rows,
    sparkline,
)
from tests.commands.test_cli_reshard import kconsole
from tests.faultproxy import FaultProxy

MIB = 1024 * 1024


async def put_points(
    endpoint_url: str, points: list[tuple[str, str, float, datetime]], *, region: str = "us-east-1"
) -> None:
    """(stream, metric, value, minute) data points, stream level, 1,000 to a PutMetricData call."""
    data = [
        {"MetricName": metric, "Dimensions": [{"Name": "StreamName", "Value": stream}], "Timestamp": at, "Value": value}
        for stream, metric, value, at in points
    ]
    async with AioSession().create_client(
        "cloudwatch",
        region_name=region,
        endpoint_url=endpoint_url,
        aws_access_key_id=DUMMY_CREDENTIALS[0],
        aws_secret_access_key=DUMMY_CREDENTIALS[1],
    ) as cloudwatch:
        for offset in range(0, len(data), 1000):
            await cloudwatch.put_metric_data(Namespace="AWS/Kinesis", MetricData=data[offset : offset + 1000])


async def create_streams(backend, prefix: str, count: int) -> list[str]:
    """`count` one-shard streams named prefix0000..., 16 creations at once; ones already there kept."""
    existing = set(await backend.stream_names())
    names = [f"{prefix}{i:04d}" for i in range(count)]
    limit = asyncio.Semaphore(16)

    async def create(name: str) -> None:
        if name not in existing:
            async with limit:
                await backend.create_stream(name, 1)

    await asyncio.gather(*(create(name) for name in names))
    return names


def minutes_ago(n: int) -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=n, seconds=-5)


async def test_streams_json_rows_sorted_by_trouble_with_reasons(capsys, local_kinesis, make_stream):
    calm, throttled, behind, busy, silent = [await make_stream(shards=1) for _ in range(5)]
    points = [
        # busy: two minutes at 2.25 MiB/s are 0.9 MiB/s over the last five
        (name, metric, 2.25 * MIB * 60 if (name, metric) == (busy, "IncomingBytes") else value, minutes_ago(m))
        for name in (calm, throttled, behind, busy)
        for m in (2, 3)
        for metric, value in (("IncomingRecords", 600.0), ("IncomingBytes", 60_000.0))
    ]
    points += [
        (throttled, "WriteProvisionedThroughputExceeded", 40.0, minutes_ago(2)),
        (calm, "WriteProvisionedThroughputExceeded", 0.0, minutes_ago(2)),
        (behind, "GetRecords.IteratorAgeMilliseconds", 300_000.0, minutes_ago(2)),
        (calm, "GetRecords.IteratorAgeMilliseconds", 1_000.0, minutes_ago(2)),
    ]
    await put_points(local_kinesis.endpoint_url, points)
    code, out, err = await kconsole(
        capsys, "streams", "--json", "--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"
    )
    assert code == 0, err
    mine = [row for row in json.loads(out) if row["name"] in {calm, throttled, behind, busy, silent}]
    assert [row["name"] for row in mine][:3] == [throttled, behind, busy]
    rows = {row["name"]: row for row in mine}
    assert rows[throttled]["write_throttled"] == 40 and rows[throttled]["trouble"] == ["write throttled: 40 in 30 min"]
    assert rows[behind]["max_iterator_age_ms"] == 300_000.0 and rows[behind]["trouble"] == ["iterator age 5 min"]
    assert rows[busy]["trouble"] and "of write capacity" in rows[busy]["trouble"][0]
    # 600 records in each of two of the last five minutes: 1,200 / 300 s.
    assert rows[calm]["incoming_records_per_s"] == 4.0 and rows[calm]["incoming_bytes_per_s"] == 400.0
    assert rows[calm]["incoming_window_minutes"] == 5
    assert rows[calm]["trouble"] == [] and rows[calm]["write_throttled"] == 0 and rows[calm]["read_throttled"] is None
    assert {
        key: rows[silent][key]
        for key in (
            "incoming_records_per_s",
            "incoming_bytes_per_s",
            "max_iterator_age_ms",
            "write_throttled",
            "read_throttled",
        )
    } == dict.fromkeys(
        ("incoming_records_per_s", "incoming_bytes_per_s", "max_iterator_age_ms", "write_throttled", "read_throttled")
    )
    code, out, err = await kconsole(
        capsys, "streams", "--sort", "name", "--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"
    )
    assert code == 0 and "TROUBLE" in out and "! write throttled: 40 in 30 min" in out
    *table, read_cost = out.splitlines()
    assert read_cost == FLEET_READ_COST, "under the table, what the fleet's own reading costs"
    names = [line.split()[0] for line in table[2:]]
    assert names == sorted(names)


async def test_the_watch_refreshes_without_overlap_and_prints_each_round(capsys, local_kinesis, make_stream):
    stream = await make_stream(shards=1)
    args = argparse.Namespace(endpoint_url=local_kinesis.endpoint_url, region="us-east-1", local=False)
    started = time.monotonic()
    await _watch_fleet(args, StreamsOptions(sort="age"), rounds=2, interval=0.5)
    text = capsys.readouterr().out
    assert text.count("sorted by age") == 2 and stream in text and time.monotonic() - started >= 0.5
    args.json = True
    await _watch_fleet(args, StreamsOptions(sort="age"), rounds=2, interval=0.1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(stream in [row["name"] for row in json.loads(line)["streams"]] for line in lines)


async def test_getmetricdata_is_batched_500_queries_a_call(local_kinesis, make_stream):
    streams = [await make_stream(shards=1) for _ in range(3)]
    async with FaultProxy(int(local_kinesis.endpoint_url.rsplit(":", 1)[1])) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as backend:
            facts = [StreamFacts(name, "ACTIVE", "PROVISIONED", 1) for name in streams]
            facts += [StreamFacts(f"absent-{i}", "ACTIVE", "PROVISIONED", 1) for i in range(247)]  # 250 x 5 queries
            fleet = await fleet_rows(backend, facts)
    assert len(fleet.rows) == 250 and fleet.problem is None
    assert proxy.stats["pass:GetMetricData"] == fleet.metric_calls == 3  # 1,250 queries: 500, 500, 250


async def test_a_failed_getmetricdata_call_marks_only_its_own_streams(local_kinesis, make_stream):
    """CloudWatch answers the first call and fails the second (HTTP 500 on every attempt): the first
    call's streams keep their metrics, the second's rows are marked with the reason, none dropped."""
    from tests.faultproxy import Faults

    read = await make_stream(shards=1)
    await put_points(local_kinesis.endpoint_url, [(read, "IncomingRecords", 600.0, minutes_ago(2))])
    facts = [StreamFacts(read, "ACTIVE", "PROVISIONED", 1)]
    facts += [StreamFacts(f"absent-{i:03d}", "ACTIVE", "PROVISIONED", 1) for i in range(149)]  # 750 queries
    faults = Faults(fail_after=1.0, operations=frozenset({"GetMetricData"}), skip=1)
    async with FaultProxy(int(local_kinesis.endpoint_url.rsplit(":", 1)[1]), faults) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as backend:
            fleet = await fleet_rows(backend, facts)
    assert proxy.stats["pass:GetMetricData"] == 1 and proxy.stats["fail_after:GetMetricData"] >= 1
    rows = {row.name: row for row in fleet.rows}
    assert len(rows) == 150 and fleet.problem is None
    assert rows[read].records_per_s == pytest.approx(2.0) and rows[read].metrics_problem is None
    assert all(rows[f.name].metrics_problem is None for f in facts[:100])
    marked = [rows[f.name] for f in facts[100:]]
    assert all(row.metrics_problem and row.metrics_problem.startswith("CloudWatch: ") for row in marked)
    assert all(row.records_per_s is None and row.trouble == () for row in marked)


async def test_a_server_without_cloudwatch_keeps_every_row_and_says_why_once(capsys, kinesis_mock):
    url = kinesis_mock.endpoint_url
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=url)) as backend:
        await backend.create_stream("fleet-no-metrics", 1)
        await backend.wait_for_active("fleet-no-metrics")
    code, out, err = await kconsole(capsys, "streams", "--endpoint-url", url, "--region", "us-east-1")
    assert code == 0 and "Traceback" not in err and "fleet-no-metrics" in out
    assert sum(1 for line in out.splitlines() if line.startswith("no metrics:")) == 1
    code, out, err = await kconsole(capsys, "streams", "--json", "--endpoint-url", url, "--region", "us-east-1")
    row = next(row for row in json.loads(out) if row["name"] == "fleet-no-metrics")
    assert row["incoming_records_per_s"] is None and row["trouble"] == [] and row["metrics_problem"]


def test_trouble_order_capacity_bases_and_marked_rows():
    start, _ = minute_window(30)
    at = start + timedelta(minutes=29)

    def row(name, *, shards=1, mode="PROVISIONED", warm=None, **values):
        """The rates the same each of the last 5 minutes; anything else once, in the last minute."""
        series = {
            metric: [(at - timedelta(minutes=back), value) for back in range(5 if metric.startswith("Incoming") else 1)]
            for metric, value in values.items()
        }
        return build_row(StreamFacts(name, "ACTIVE", mode, shards, warm_mibps=warm), series, start)

    throttled_read = row("r", ReadProvisionedThroughputExceeded=3)
    old = row("o", **{"GetRecords.IteratorAgeMilliseconds": AGE_TROUBLE_MS * 2})
    older_but_quiet = row("q", **{"GetRecords.IteratorAgeMilliseconds": AGE_TROUBLE_MS - 1})
    hot = row("h", shards=2, IncomingRecords=0.85 * 2000 * 60)
    warm = row("w", mode="ON_DEMAND", shards=4, warm=10, IncomingBytes=9 * MIB * 60)
    quiet = row("a", IncomingRecords=60)
    marked = build_row(StreamFacts("m", "ACTIVE", "PROVISIONED", 1), None, start, problem="CloudWatch: Forbidden")
    ordered = [r.name for r in sort_rows([quiet, marked, warm, hot, older_but_quiet, old, throttled_read])]
    assert ordered[:4] == ["r", "o", "w", "h"] and set(ordered[4:]) == {"a", "m", "q"}
    assert hot.trouble == ("85% of write capacity",) and warm.trouble == ("90% of warm throughput",)
    assert marked.trouble == () and marked.metrics_problem == "CloudWatch: Forbidden" and marked.records_per_s is None
    assert [r.name for r in sort_rows([quiet, old, hot], "age")] == ["o", "a", "h"]
    assert set(FLEET_METRICS) >= {"IncomingRecords", "IncomingBytes", "GetRecords.IteratorAgeMilliseconds"}
    assert sparkline([0, 1, 2, 4]) == "▁▂▄█" and sparkline([0, 0]) == "▁▁"


async def test_a_thousand_streams_first_rows_in_under_two_seconds(local_kinesis):
    """1,000 streams with metrics: the first rows (ListStreams' summaries, what the fleet view shows
    before CloudWatch answers) in < 2 s, and one refresh of every row's metrics in at most 3
    GetMetricData calls per 500 queries (counted at the transport). The streams live in a region of
    their own, so other tests' listings of the shared server do not see them."""
    region = "eu-west-3"
    async with open_backend(
        BackendConfig(kind="local", region=region, endpoint_url=local_kinesis.endpoint_url)
    ) as backend:
        names = await create_streams(backend, "fleet-k-", 1000)
    await put_points(
        local_kinesis.endpoint_url,
        [(name, "IncomingRecords", float(i), minutes_ago(2)) for i, name in enumerate(names)],
        region=region,
    )
    async with FaultProxy(int(local_kinesis.endpoint_url.rsplit(":", 1)[1])) as proxy:
        config = BackendConfig(kind="endpoint", region=region, endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as backend:
            started = time.monotonic()
            listed = [StreamFacts.from_stream(s) for s in await backend.list_stream_summaries(page_size=1000)]
            first_rows = time.monotonic() - started
            fleet = await fleet_rows(backend, listed)
            refreshed = time.monotonic() - started - first_rows
    rows = {row.name: row for row in fleet.rows}
    assert set(names) <= set(rows) and rows[names[999]].records_per_s == pytest.approx(999 / 300)
    queries = len(listed) * len(FLEET_METRICS)
    assert proxy.stats["pass:GetMetricData"] <= 3 * -(-queries // 500)
    assert proxy.stats["pass:GetMetricData"] == -(-queries // 500)
    assert first_rows < 2.0, f"first rows took {first_rows:.2f} s"
    print(
        f"1,000 streams: first rows {first_rows:.2f} s, metrics refresh {refreshed:.2f} s "
        f"in {proxy.stats['pass:GetMetricData']} GetMetricData calls"
    )


async def test_an_auto_stream_says_so_in_its_mode(capsys, local_kinesis, kinesis, make_stream):
    name = await make_stream(shards=1)
    summary = await kinesis.describe_stream_summary(name)
    await kinesis.update_stream_mode(summary.arn, "ON_DEMAND")
    await kinesis.wait_for_active(name)
    await kinesis.update_record_distribution(summary.arn, "AUTO")
    code, out, err = await kconsole(
        capsys, "streams", "--sort", "name", "--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"
    )
    assert code == 0, err
    assert next(line for line in out.splitlines() if line.startswith(name + " ")).split()[2:4] == ["ON_DEMAND", "AUTO"]


def test_the_streams_table_and_the_fleet_screen_show_a_row_in_the_same_words():
    from console.commands.streams import format_fleet
    from console.topology.model import AUTO_DISTRIBUTION, StreamSummary
    from console.ui.screens.stream_picker import COLUMNS, row_cells

    start, _ = minute_window(30)

    def steady(metric: str, value: float) -> list[tuple[datetime, float]]:
        """The rates the same each of the last 5 minutes; anything else once, in the last minute."""
        minutes = range(25, 30) if metric.startswith("Incoming") else (29,)
        return [(start + timedelta(minutes=minute), value) for minute in minutes]

    summaries = [
        StreamSummary("hot", "ACTIVE", "PROVISIONED", 2, 24, "NONE", consumer_count=3),
        StreamSummary(
            "warm",
            "ACTIVE",
            "ON_DEMAND",
            4,
            24,
            "KMS",
            record_distribution=AUTO_DISTRIBUTION,
            warm_throughput_current_mibps=10,
        ),
        StreamSummary("blind", "UPDATING", "PROVISIONED", 1, 48, "NONE"),
    ]
    values = [
        {"IncomingRecords": 0.85 * 2000 * 60, "WriteProvisionedThroughputExceeded": 7},
        {"IncomingBytes": 9 * MIB * 60, "GetRecords.IteratorAgeMilliseconds": AGE_TROUBLE_MS * 3},
        None,
    ]
    rows = [
        build_row(
            StreamFacts.from_stream(summary),
            None if points is None else {metric: steady(metric, value) for metric, value in points.items()},
            start,
            problem=None if points else "CloudWatch: Forbidden",
        )
        for summary, points in zip(summaries, values)
    ]
    table = format_fleet(list(zip(summaries, rows)), "test", None).splitlines()
    for row, line in zip(rows, table[1:]):
        cells = [cell if isinstance(cell, str) else cell.plain for cell in row_cells(row)]
        shown = dict(zip(COLUMNS, cells))
        assert line.split()[0] == shown["Stream"]
        # Each of the screen's cells is in the table's line, in words the table uses too.
        for column in COLUMNS[1:]:
            assert shown[column] in line, (column, shown[column], line)
    assert "ON_DEMAND AUTO warm 10 MiB/s" in table[2] and "? CloudWatch: Forbidden" in table[3]
    assert table[1].rstrip().endswith("! write throttled: 7 in 30 min; 85% of write capacity")


def test_a_minute_without_a_point_is_a_minute_of_zero():
    """CloudWatch writes no point for a minute nobody wrote in: a stream written once, 12 minutes ago,
    is idle now (not busy at that minute's rate), the rate is over the last 5 minutes, says so in
    --json, and `--sort incoming` ranks a stream writing now first."""
    start, _ = minute_window(30)
    capacity = StreamFacts("once", "ACTIVE", "PROVISIONED", 1)
    burst = build_row(
        capacity,
        {
            "IncomingRecords": [(start + timedelta(minutes=18), 8076.0)],
            "IncomingBytes": [(start + timedelta(minutes=18), 4.2e6)],
        },
        start,
    )
    steady = build_row(
        StreamFacts("steady", "ACTIVE", "PROVISIONED", 1),
        {
            "IncomingRecords": [(start + timedelta(minutes=m), 600.0) for m in range(20, 30)],
            "IncomingBytes": [(start + timedelta(minutes=m), 60_000.0) for m in range(20, 30)],
        },
        start,
    )
    lately = build_row(
        StreamFacts("lately", "ACTIVE", "PROVISIONED", 1),
        {
            "IncomingRecords": [(start + timedelta(minutes=28), 600.0)],
            "IncomingBytes": [(start + timedelta(minutes=28), 600.0)],
        },
        start,
    )
    assert burst.records_per_s == 0.0 and burst.bytes_per_s == 0.0 and burst.utilisation == 0.0
    assert burst.trouble == () and burst.bytes_sparkline[18] > 0
    assert steady.records_per_s == pytest.approx(10.0) and steady.bytes_per_s == pytest.approx(1000.0)
    assert lately.records_per_s == pytest.approx(2.0)
    assert [row.name for row in sort_rows([burst, lately, steady], "incoming")] == ["steady", "lately", "once"]
    assert burst.to_json()["incoming_window_minutes"] == 5
