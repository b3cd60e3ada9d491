"""CloudWatch, for Kinesis's own metrics: per-shard and per-stream series from GetMetricData."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from console.backend.calls import CallPath
from console.backend.protocol import StreamsMetrics
from console.errors import ConsoleError

QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries
POINTS_PER_PUT = 1000  # PutMetricData's limit on MetricData


class CloudWatchBackend:
    """AWS/Kinesis metrics read through the backend's CloudWatch client (opened on first use)."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def put_metric_data(self, namespace: str, points: list[dict[str, Any]]) -> None:
        """Publish points (PutMetricData's MetricData entries) under `namespace`, as a service would:
        example data on the embedded server, in calls of at most 1,000 points."""
        client = await self._client("cloudwatch")
        for offset in range(0, len(points), POINTS_PER_PUT):
            await self._calls.call(
                client,
                "PutMetricData",
                service="cloudwatch",
                Namespace=namespace,
                MetricData=points[offset : offset + POINTS_PER_PUT],
            )

    async def shard_metrics(
        self,
        stream: str,
        shard_ids: list[str],
        metrics: dict[str, str],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> dict[str, dict[str, list[tuple[datetime, float]]]]:
        """Per-shard CloudWatch series ({shard id: {metric: points}}) of shard-level metrics
        ({metric name: statistic}; they need enhanced monitoring on AWS). One GetMetricData query per
        shard and metric, sent in pages of 500 (its limit): 10,000 shards x 4 metrics is 80 calls."""
        pairs = [(shard_id, metric) for shard_id in shard_ids for metric in metrics]
        result: dict[str, dict[str, list[Any]]] = {
            shard_id: {metric: [] for metric in metrics} for shard_id in shard_ids
        }
        for offset in range(0, len(pairs), QUERIES_PER_CALL):
            batch = pairs[offset : offset + QUERIES_PER_CALL]
            queries = [
                _metric_query(index, metric, metrics[metric], period, StreamName=stream, ShardId=shard_id)
                for index, (shard_id, metric) in enumerate(batch)
            ]
            for index, points in (await self._metric_data(queries, start, end)).items():
                shard_id, metric = batch[index]
                result[shard_id][metric].extend(points)
        return {
            shard_id: {metric: sorted(points) for metric, points in series.items()}
            for shard_id, series in result.items()
        }

    async def stream_metrics(
        self, stream: str, metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> dict[str, list[tuple[datetime, float]]]:
        """Stream-level CloudWatch series (free, no enhanced monitoring): {metric name: statistic}."""
        names = list(metrics)
        queries = [
            _metric_query(index, name, metrics[name], period, StreamName=stream) for index, name in enumerate(names)
        ]
        found = await self._metric_data(queries, start, end)
        return {name: sorted(found.get(index, [])) for index, name in enumerate(names)}

    async def streams_metrics(
        self, streams: list[str], metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> StreamsMetrics:
        """Stream-level series of many streams ({stream: {metric: points}}): one query per stream and
        metric, 500 to a GetMetricData call (its limit), so 1,000 streams x 5 metrics is 10 calls. A
        query CloudWatch answers Forbidden or InternalError marks its stream; the others keep theirs.
        So does a call that fails once an earlier one was answered (CloudWatch is there: the failure is
        that call's); a first call that fails raises (no CloudWatch, no permission: one reason for all)."""
        pairs = [(stream, metric) for stream in streams for metric in metrics]
        found = StreamsMetrics({stream: {metric: [] for metric in metrics} for stream in streams}, {}, 0)
        for offset in range(0, len(pairs), QUERIES_PER_CALL):
            batch = pairs[offset : offset + QUERIES_PER_CALL]
            queries = [
                _metric_query(index, metric, metrics[metric], period, StreamName=stream)
                for index, (stream, metric) in enumerate(batch)
            ]
            statuses: dict[int, str] = {}
            try:
                points, calls = await self._metric_pages(queries, start, end, statuses)
            except ConsoleError as error:
                if offset == 0:
                    raise
                found.calls += 1
                for stream, _ in batch:
                    found.problems.setdefault(stream, f"CloudWatch: {error.message}")
                continue
            found.calls += calls
            for index, series in points.items():
                stream, metric = batch[index]
                found.series[stream][metric].extend(series)
            for index, message in statuses.items():
                found.problems.setdefault(batch[index][0], message)
        for by_metric in found.series.values():
            for metric in by_metric:
                by_metric[metric].sort()
        return found

    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[list[tuple[datetime, float]]]:
        """The points of each (namespace, metric, statistic, dimensions) query, in order, whatever the
        namespace (the readers' AWS/Lambda, AWS/Firehose...): 500 queries to a GetMetricData call, so
        the lag of a thousand readers is two or three calls."""
        found: list[list[tuple[datetime, float]]] = [[] for _ in queries]
        for offset in range(0, len(queries), QUERIES_PER_CALL):
            batch = queries[offset : offset + QUERIES_PER_CALL]
            requests = [
                metric_query(index, namespace, metric, stat, period, dimensions)
                for index, (namespace, metric, stat, dimensions) in enumerate(batch)
            ]
            for index, series in (await self._metric_data(requests, start, end)).items():
                found[offset + index] = sorted(series)
        return found

    async def _metric_data(self, queries: list[dict[str, Any]], start: datetime, end: datetime) -> dict[int, list[Any]]:
        """GetMetricData over every page: the points of query number i (its Id is f"m{i}")."""
        return (await self._metric_pages(queries, start, end))[0]

    async def _metric_pages(
        self, queries: list[dict[str, Any]], start: datetime, end: datetime, statuses: dict[int, str] | None = None
    ) -> tuple[dict[int, list[Any]], int]:
        """(points per query number, calls made); queries CloudWatch did not answer go into `statuses`."""
        cloudwatch = await self._client("cloudwatch")
        found: dict[int, list[tuple[datetime, float]]] = {}
        params: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        calls = 0
        while True:
            page = await self._calls.call(cloudwatch, "GetMetricData", service="cloudwatch", **params)
            calls += 1
            for series in page.get("MetricDataResults", []):
                index = int(series["Id"][1:])
                found.setdefault(index, []).extend(zip(series.get("Timestamps", []), series.get("Values", [])))
                if statuses is not None and series.get("StatusCode") in ("Forbidden", "InternalError"):
                    messages = [m.get("Value", "") for m in series.get("Messages", []) if m.get("Value")]
                    statuses[index] = f"CloudWatch: {series['StatusCode']}" + (f" ({messages[0]})" if messages else "")
            if not page.get("NextToken"):
                return found, calls
            params["NextToken"] = page["NextToken"]


def _metric_query(index: int, metric: str, stat: str, period: int, **dimensions: str) -> dict[str, Any]:
    return metric_query(index, "AWS/Kinesis", metric, stat, period, dimensions)


def metric_query(
    index: int, namespace: str, metric: str, stat: str, period: int, dimensions: dict[str, str]
) -> dict[str, Any]:
    return {
        "Id": f"m{index}",
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()],
            },
            "Period": period,
            "Stat": stat,
        },
    }


def minute_points(
    metric: str, unit: str, dimensions: dict[str, str], newest_first: list[float], minute: datetime
) -> list[dict[str, Any]]:
    """PutMetricData entries, one a minute back from the minute before `minute` (a whole minute)."""
    return [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()],
            "Timestamp": minute - timedelta(minutes=ago + 1),
            "Value": value,
            "Unit": unit,
        }
        for ago, value in enumerate(newest_first)
    ]
