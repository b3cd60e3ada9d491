"""CloudWatch metrics from the embedded server's CloudWatch: data points put over HTTP under
AWS/Kinesis with the stream's dimension (stream level) or the stream's and a shard's (shard level)
come back on a per-minute grid; shard-level queries are batched in pages of 500."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from aiobotocore.session import AioSession

from console.backend.config import DUMMY_CREDENTIALS
from console.errors import AccessDenied, BackendError, ConsoleError
from console.heat.capacity import (
    MAX_SHARDS_PER_FETCH,
    STREAM_METRICS,
    CapacitySummary,
    MetricSeries,
    enabled_shard_metrics,
    per_minute,
    shard_metrics,
    stream_metrics,
    unavailable_reason,
)
from console.heat.cloudwatch import SHARD_LEVEL_METRICS, SHARD_METRIC_STATISTICS


async def put_metric(
    endpoint_url: str, stream: str, name: str, value: float, at: datetime, *, shard_id: str | None = None
) -> None:
    """One data point as Kinesis publishes it: stream level, or shard level with `shard_id`."""
    dimensions = [{"Name": "StreamName", "Value": stream}]
    if shard_id is not None:
        dimensions.append({"Name": "ShardId", "Value": shard_id})
    async with AioSession().create_client(
        "cloudwatch",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        aws_access_key_id=DUMMY_CREDENTIALS[0],
        aws_secret_access_key=DUMMY_CREDENTIALS[1],
    ) as cloudwatch:
        await cloudwatch.put_metric_data(
            Namespace="AWS/Kinesis",
            MetricData=[{"MetricName": name, "Dimensions": dimensions, "Timestamp": at, "Value": value}],
        )


async def test_stream_metrics_on_a_minute_grid(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    await put_metric(
        local_kinesis.endpoint_url, stream, "IncomingRecords", 1200, now - timedelta(minutes=3, seconds=-10)
    )
    await put_metric(
        local_kinesis.endpoint_url,
        stream,
        "WriteProvisionedThroughputExceeded",
        7,
        now - timedelta(minutes=1, seconds=-10),
    )
    await put_metric(local_kinesis.endpoint_url, f"other-{stream}", "IncomingRecords", 99, now - timedelta(minutes=2))
    metrics = await stream_metrics(kinesis, stream, minutes=10, now=now)
    assert set(metrics.series) == set(STREAM_METRICS) and metrics.has_data
    assert metrics.series["IncomingRecords"] == (0,) * 7 + (1200.0, 0, 0)
    assert metrics.latest("WriteProvisionedThroughputExceeded") == 7 and metrics.peak("IncomingRecords") == 1200
    quiet = await stream_metrics(kinesis, stream, minutes=10, now=now - timedelta(hours=2))
    assert not quiet.has_data


def test_points_outside_the_window_are_dropped():
    start = datetime(2026, 1, 1, tzinfo=UTC)
    points = [
        (start - timedelta(minutes=1), 5.0),
        (start, 1.0),
        (start + timedelta(minutes=2, seconds=30), 2.0),
        (start + timedelta(minutes=3), 9.0),
    ]
    assert per_minute(points, start, 3) == (1.0, 0.0, 2.0)


async def test_shard_metrics_per_shard_only_the_asked_metrics(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    first, second = (shard.shard_id for shard in await kinesis.all_shards(stream))
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    at = now - timedelta(minutes=2, seconds=-5)
    await put_metric(local_kinesis.endpoint_url, stream, "IncomingBytes", 4096, at, shard_id=first)
    await put_metric(local_kinesis.endpoint_url, stream, "IteratorAgeMilliseconds", 1500, at, shard_id=second)
    await put_metric(local_kinesis.endpoint_url, stream, "IncomingBytes", 99, at)  # stream level: not a shard's
    wanted = enabled_shard_metrics(["IncomingBytes", "IteratorAgeMilliseconds"])
    found = await shard_metrics(kinesis, stream, [first, second], wanted, minutes=5, now=now)
    assert list(found[first].series) == ["IncomingBytes", "IteratorAgeMilliseconds"]
    assert found[first].series["IncomingBytes"] == (0, 0, 0, 4096.0, 0) and not any(
        found[first].series["IteratorAgeMilliseconds"]
    )
    assert found[second].series["IteratorAgeMilliseconds"] == (0, 0, 0, 1500.0, 0) and not any(
        found[second].series["IncomingBytes"]
    )
    assert CapacitySummary.of(found[second]) == CapacitySummary(1500.0, None)  # no throttle metric asked for
    assert await shard_metrics(kinesis, stream, [first], {}, now=now) == {}
    with pytest.raises(ValueError):
        await shard_metrics(kinesis, stream, [f"shardId-{n:012d}" for n in range(MAX_SHARDS_PER_FETCH + 1)], wanted)


async def test_shard_level_queries_go_in_pages_of_500(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    shard_ids = [f"shardId-{n:012d}" for n in range(130)]  # 130 shards x 4 metrics: 520 queries, two pages
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    await put_metric(
        local_kinesis.endpoint_url, stream, "IncomingRecords", 7, now - timedelta(minutes=1), shard_id=shard_ids[-1]
    )
    await put_metric(
        local_kinesis.endpoint_url, stream, "IncomingRecords", 3, now - timedelta(minutes=1), shard_id=shard_ids[0]
    )
    metrics = {metric: SHARD_METRIC_STATISTICS[metric] for metric in SHARD_LEVEL_METRICS}
    series = await kinesis.shard_metrics(stream, shard_ids, metrics, now - timedelta(minutes=5), now)
    assert set(series) == set(shard_ids) and all(set(found) == set(metrics) for found in series.values())
    assert [value for _, value in series[shard_ids[-1]]["IncomingRecords"]] == [7.0]  # from the second page
    assert [value for _, value in series[shard_ids[0]]["IncomingRecords"]] == [3.0]
    assert not any(points for shard_id in shard_ids[1:-1] for points in series[shard_id].values())


def test_enabled_shard_metrics_follow_enhanced_monitoring():
    assert enabled_shard_metrics([]) == {}
    assert enabled_shard_metrics(["OutgoingBytes", "IncomingBytes", "NotAMetric"]) == {
        "IncomingBytes": "Sum",
        "OutgoingBytes": "Sum",
    }
    assert enabled_shard_metrics(["ALL"]) == SHARD_METRIC_STATISTICS
    assert enabled_shard_metrics(["IteratorAgeMilliseconds"]) == {"IteratorAgeMilliseconds": "Maximum"}


def test_summary_of_the_last_minutes():
    minutes = 10
    quiet = MetricSeries(minutes, {name: (0.0,) * minutes for name in STREAM_METRICS})
    assert CapacitySummary.of(quiet) is None
    busy = dict(quiet.series)
    busy["IncomingRecords"] = (5.0,) * minutes
    assert CapacitySummary.of(MetricSeries(minutes, busy)) == CapacitySummary(None, 0)  # no consumer reported
    busy["GetRecords.IteratorAgeMilliseconds"] = (90_000.0,) + (0.0,) * 6 + (2000.0, 3000.0, 0.0)
    busy["WriteProvisionedThroughputExceeded"] = (50.0,) + (0.0,) * 7 + (4.0, 1.0)
    busy["ReadProvisionedThroughputExceeded"] = (0.0,) * 9 + (2.0,)
    # The last 5 minutes only: the spike 10 minutes ago is over.
    assert CapacitySummary.of(MetricSeries(minutes, busy)) == CapacitySummary(3000.0, 7)


def test_why_there_are_no_metrics_is_one_line():
    denied = unavailable_reason(AccessDenied("access denied for cloudwatch:GetMetricData on aws: not authorized"))
    assert "access denied" in denied and "cloudwatch:GetMetricData" in denied and "\n" not in denied
    assert "does not serve CloudWatch" in unavailable_reason(BackendError("HTTP 404", code="not_kinesis"))


@pytest.mark.kinesis_mock
async def test_an_endpoint_without_cloudwatch_says_so(kinesis_mock):
    from console.backend import BackendConfig, open_backend

    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    async with open_backend(config) as backend:
        with pytest.raises(ConsoleError) as raised:
            await stream_metrics(backend, "any-stream", minutes=5)
    assert unavailable_reason(raised.value) == (
        "no CloudWatch metrics: this endpoint does not serve CloudWatch (GetMetricData was not understood)"
    )
