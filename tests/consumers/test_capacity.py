"""Stream-level CloudWatch metrics from the embedded server's CloudWatch: data points put over HTTP
under AWS/Kinesis with the stream's dimension come back on a per-minute grid."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from aiobotocore.session import AioSession

from console.backend.client import DUMMY_CREDENTIALS
from console.consumers.capacity import STREAM_METRICS, per_minute, stream_metrics


async def put_metric(endpoint_url: str, stream: str, name: str, value: float, at: datetime) -> None:
    async with AioSession().create_client("cloudwatch", region_name="us-east-1", endpoint_url=endpoint_url,
                                          aws_access_key_id=DUMMY_CREDENTIALS[0],
                                          aws_secret_access_key=DUMMY_CREDENTIALS[1]) as cloudwatch:
        await cloudwatch.put_metric_data(Namespace="AWS/Kinesis", MetricData=[{
            "MetricName": name, "Dimensions": [{"Name": "StreamName", "Value": stream}],
            "Timestamp": at, "Value": value}])


async def test_stream_metrics_on_a_minute_grid(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    await put_metric(local_kinesis.endpoint_url, stream, "IncomingRecords", 1200, now - timedelta(minutes=3, seconds=-10))
    await put_metric(local_kinesis.endpoint_url, stream, "WriteProvisionedThroughputExceeded", 7,
                     now - timedelta(minutes=1, seconds=-10))
    await put_metric(local_kinesis.endpoint_url, f"other-{stream}", "IncomingRecords", 99, now - timedelta(minutes=2))
    metrics = await stream_metrics(kinesis, stream, minutes=10, now=now)
    assert set(metrics.series) == set(STREAM_METRICS) and metrics.has_data
    assert metrics.series["IncomingRecords"] == (0,) * 7 + (1200.0, 0, 0)
    assert metrics.latest("WriteProvisionedThroughputExceeded") == 7 and metrics.peak("IncomingRecords") == 1200
    quiet = await stream_metrics(kinesis, stream, minutes=10, now=now - timedelta(hours=2))
    assert not quiet.has_data


def test_points_outside_the_window_are_dropped():
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    points = [(start - timedelta(minutes=1), 5.0), (start, 1.0), (start + timedelta(minutes=2, seconds=30), 2.0),
              (start + timedelta(minutes=3), 9.0)]
    assert per_minute(points, start, 3) == (1.0, 0.0, 2.0)
