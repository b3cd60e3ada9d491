"""GetMetricData on the embedded server from an index (tests in
tests/backend/test_moto_compat_cloudwatch.py, against a patched and an unpatched server).

moto's CloudWatch compares every query's every period with every stored point (1,000 streams x 5
metrics over 30 minutes: seconds a call), and a query with dimensions matches points of any
namespace: here the points are indexed by namespace, metric name and the exact dimension set (as
CloudWatch identifies a metric), each series kept in time order and its periods found by bisection.
"""

from __future__ import annotations

import bisect
import threading
from datetime import datetime, timedelta
from typing import Any

_cloudwatch_lock = threading.Lock()


class _MetricIndex:
    """A CloudWatch backend's stored points by (namespace, metric name, dimension set), each series in
    time order. Points are only ever appended to the backend's list, so the index catches up with
    what was added since it last looked."""

    def __init__(self) -> None:
        self.indexed = 0
        self.series: dict[tuple, tuple[list, list]] = {}  # key -> (timestamps, points), both in time order

    def catch_up(self, stored: list) -> None:
        if len(stored) < self.indexed:  # the list was replaced or cut: index it again
            self.indexed, self.series = 0, {}
        for datum in stored[self.indexed :]:
            key = _metric_key(datum.namespace, datum.name, ((d.name, d.value) for d in datum.dimensions))
            times, points = self.series.setdefault(key, ([], []))
            at = bisect.bisect_right(times, datum.timestamp)
            times.insert(at, datum.timestamp)
            points.insert(at, datum)
        self.indexed = len(stored)


def _metric_key(namespace: str, name: str, dimensions: Any) -> tuple:
    return namespace, name, frozenset(dimensions)


def patch(models: Any) -> None:
    CloudWatchBackend = models.CloudWatchBackend
    original = CloudWatchBackend.get_metric_data

    def get_metric_data(self, queries, start_time, end_time, scan_by="TimestampAscending"):
        if any("MetricStat" not in query for query in queries):
            return original(self, queries, start_time, end_time, scan_by)  # metric math: moto's own way
        start_time = start_time.replace(microsecond=0)
        end_time = end_time.replace(microsecond=0)
        if start_time >= end_time:
            return original(self, queries, start_time, end_time, scan_by)  # its validation errors
        with _cloudwatch_lock:
            index = self.__dict__.setdefault("_console_metric_index", _MetricIndex())
            index.catch_up(self.metric_data)
            # Other services' metrics (moto computes them on demand; usually none): indexed per call.
            provided = _MetricIndex()
            provided.catch_up(self.aws_metric_data)
            results = []
            for query in queries:
                values, timestamps = _metric_stat(models, query["MetricStat"], start_time, end_time, index, provided)
                if scan_by == "TimestampDescending":
                    values.reverse()
                    timestamps.reverse()
                if query.get("ReturnData", True):
                    stat = query["MetricStat"]
                    results.append(
                        {
                            "id": query["Id"],
                            "label": query.get("Label") or f"{stat['Metric']['MetricName']} {stat['Stat']}",
                            "values": values,
                            "timestamps": timestamps,
                            "status_code": "Complete",
                        }
                    )
            return results

    CloudWatchBackend.get_metric_data = get_metric_data


def _metric_stat(
    models: Any, metric_stat: dict, start: datetime, end: datetime, *indexes: _MetricIndex
) -> tuple[list, list]:
    """One MetricStat query's (values, period starts) from the indexes: a value per period that has points."""
    metric = metric_stat["Metric"]
    key = _metric_key(
        metric["Namespace"], metric["MetricName"], ((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
    )
    found = [index.series[key] for index in indexes if key in index.series]
    period = timedelta(seconds=int(metric_stat["Period"]))
    unit, stat = metric_stat.get("Unit"), metric_stat["Stat"]
    values: list = []
    timestamps: list = []
    if not found:
        return values, timestamps
    moment = start
    while moment <= end:
        upper = min(moment + period, end)  # points at or after EndTime are outside the window
        points = [
            datum
            for times, series in found
            for datum in series[bisect.bisect_left(times, moment) : bisect.bisect_left(times, upper)]
            if not unit or datum.unit == unit
        ]
        if points:
            statistics = models.Statistics([stat], moment)
            statistics.metric_data = points
            values.append(statistics.get_statistics_for_type(stat))
            timestamps.append(statistics.timestamp)
        moment += period
    return values, timestamps
