"""CloudWatch, for Kinesis's own metrics: per-shard and per-stream series from GetMetricData."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from console.backend.calls import CallPath

QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries


class CloudWatchBackend:
    """AWS/Kinesis metrics read through the backend's CloudWatch client (opened on first use)."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def shard_metrics(self, stream: str, shard_ids: list[str], metrics: dict[str, str],
                            start: datetime, end: datetime,
                            period: int = 60) -> dict[str, dict[str, list[tuple[datetime, float]]]]:
        """Per-shard CloudWatch series ({shard id: {metric: points}}) of shard-level metrics
        ({metric name: statistic}; they need enhanced monitoring on AWS). One GetMetricData query per
        shard and metric, sent in pages of 500 (its limit): 10,000 shards x 4 metrics is 80 calls."""
        pairs = [(shard_id, metric) for shard_id in shard_ids for metric in metrics]
        result: dict[str, dict[str, list]] = {shard_id: {metric: [] for metric in metrics} for shard_id in shard_ids}
        for offset in range(0, len(pairs), QUERIES_PER_CALL):
            batch = pairs[offset:offset + QUERIES_PER_CALL]
            queries = [_metric_query(index, metric, metrics[metric], period, StreamName=stream, ShardId=shard_id)
                       for index, (shard_id, metric) in enumerate(batch)]
            for index, points in (await self._metric_data(queries, start, end)).items():
                shard_id, metric = batch[index]
                result[shard_id][metric].extend(points)
        return {shard_id: {metric: sorted(points) for metric, points in series.items()}
                for shard_id, series in result.items()}

    async def stream_metrics(self, stream: str, metrics: dict[str, str], start: datetime, end: datetime,
                             period: int = 60) -> dict[str, list[tuple[datetime, float]]]:
        """Stream-level CloudWatch series (free, no enhanced monitoring): {metric name: statistic}."""
        names = list(metrics)
        queries = [_metric_query(index, name, metrics[name], period, StreamName=stream)
                   for index, name in enumerate(names)]
        found = await self._metric_data(queries, start, end)
        return {name: sorted(found.get(index, [])) for index, name in enumerate(names)}

    async def _metric_data(self, queries: list[dict], start: datetime, end: datetime) -> dict[int, list]:
        """GetMetricData over every page: the points of query number i (its Id is f"m{i}")."""
        cloudwatch = await self._client("cloudwatch")
        found: dict[int, list[tuple[datetime, float]]] = {}
        params: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        while True:
            page = await self._calls.call(cloudwatch, "GetMetricData", service="cloudwatch", **params)
            for series in page.get("MetricDataResults", []):
                found.setdefault(int(series["Id"][1:]), []).extend(
                    zip(series.get("Timestamps", []), series.get("Values", [])))
            if not page.get("NextToken"):
                return found
            params["NextToken"] = page["NextToken"]


def _metric_query(index: int, metric: str, stat: str, period: int, **dimensions: str) -> dict:
    return {"Id": f"m{index}", "MetricStat": {
        "Metric": {"Namespace": "AWS/Kinesis", "MetricName": metric,
                   "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()]},
        "Period": period, "Stat": stat}}
