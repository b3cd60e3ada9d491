"""The embedded server's CloudWatch: GetMetricData from an index, against a patched and an unpatched
server. The index must answer what moto's own scan answers (the same points put into both), in a
fraction of its time; and a metric is its namespace, name and dimensions together, so a query with
dimensions no longer takes another namespace's points (the defect must show on the unpatched one)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import botocore.session
import pytest
from botocore.config import Config

from tests.backend.test_moto_compat_reads import unpatched_moto  # noqa: F401 - the same fixture


def cloudwatch_for(endpoint: str):
    return botocore.session.get_session().create_client(
        "cloudwatch",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )


def window(minutes: int) -> tuple[datetime, datetime]:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    return end - timedelta(minutes=minutes), end


def query(index: int, namespace: str, metric: str, stat: str, **dimensions: str) -> dict:
    return {
        "Id": f"m{index}",
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()],
            },
            "Period": 60,
            "Stat": stat,
        },
    }


def answers(cloudwatch, queries: list[dict], start: datetime, end: datetime) -> dict:
    reply = cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=start, EndTime=end)
    return {series["Id"]: list(zip(series["Timestamps"], series["Values"])) for series in reply["MetricDataResults"]}


def put_fleet(cloudwatch, prefix: str, streams: int, minutes: int, start: datetime) -> list[dict]:
    """Per stream and minute, three metrics (two points in some minutes, a unit on one): the queries."""
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": "StreamName", "Value": f"{prefix}{s}"}],
            "Timestamp": start + timedelta(minutes=m, seconds=10 + extra),
            "Value": float(s * 100 + m * 3 + extra),
            **({"Unit": "Bytes"} if metric == "IncomingBytes" else {}),
        }
        for s in range(streams)
        for m in range(minutes)
        for metric in ("IncomingRecords", "IncomingBytes", "IteratorAgeMilliseconds")
        for extra in ((0, 7) if m % 3 == 0 else (0,))
    ]
    for offset in range(0, len(data), 1000):
        cloudwatch.put_metric_data(Namespace="AWS/Kinesis", MetricData=data[offset : offset + 1000])
    return [
        query(i, "AWS/Kinesis", metric, stat, StreamName=f"{prefix}{i // 3}")
        for i, (metric, stat) in enumerate(
            [("IncomingRecords", "Sum"), ("IncomingBytes", "Average"), ("IteratorAgeMilliseconds", "Maximum")] * streams
        )
    ]


def test_get_metric_data_answers_as_moto_does_in_a_fraction_of_the_time(local_kinesis, unpatched_moto):
    start, end = window(10)
    prefix = f"fleet-{uuid.uuid4().hex[:8]}-"
    timings, found = {}, {}
    for name, server in (("patched", local_kinesis), ("unpatched", unpatched_moto)):
        cloudwatch = cloudwatch_for(server.endpoint_url)
        queries = put_fleet(cloudwatch, prefix, streams=60, minutes=10, start=start)
        began = time.perf_counter()
        found[name] = answers(cloudwatch, queries, start, end)
        timings[name] = time.perf_counter() - began
    assert found["patched"] == found["unpatched"]
    assert len(found["patched"]) == 180 and all(len(points) == 10 for points in found["patched"].values())
    assert timings["unpatched"] > 3 * timings["patched"], timings


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "unpatched"])
def test_a_query_with_dimensions_takes_only_its_own_namespace(patched, local_kinesis, unpatched_moto):
    cloudwatch = cloudwatch_for((local_kinesis if patched else unpatched_moto).endpoint_url)
    start, end = window(3)
    stream = f"ns-{uuid.uuid4().hex[:8]}"
    for namespace, value in (("AWS/Kinesis", 5.0), ("Custom/Mirror", 1000.0)):
        cloudwatch.put_metric_data(
            Namespace=namespace,
            MetricData=[
                {
                    "MetricName": "IncomingRecords",
                    "Dimensions": [{"Name": "StreamName", "Value": stream}],
                    "Timestamp": start + timedelta(minutes=1, seconds=5),
                    "Value": value,
                }
            ],
        )
    found = answers(cloudwatch, [query(0, "AWS/Kinesis", "IncomingRecords", "Sum", StreamName=stream)], start, end)
    values = [value for _, value in found["m0"]]
    if patched:
        assert values == [5.0]
    else:
        assert values == [1005.0]  # moto's defect: the other namespace's point is summed in
