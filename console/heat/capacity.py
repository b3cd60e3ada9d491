"""A stream's capacity from CloudWatch, one value per minute for the last hour: the free stream-level
metrics (what comes in, how old the consumers' iterators get, who is throttled) and, when enhanced
monitoring is on, the same per shard. I/O goes through the injected backend's `stream_metrics` and
`shard_metrics`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.errors import AccessDenied, ConsoleError, EndpointUnreachable
from console.heat.cloudwatch import PERIOD, SHARD_METRIC_STATISTICS, minute_window

# Metric -> the statistic that answers "how much / how bad" per minute.
STREAM_METRICS: dict[str, str] = {
    "IncomingRecords": "Sum",
    "IncomingBytes": "Sum",
    "GetRecords.IteratorAgeMilliseconds": "Maximum",
    "WriteProvisionedThroughputExceeded": "Sum",
    "ReadProvisionedThroughputExceeded": "Sum",
    "GetRecords.Latency": "Average",
}
ITERATOR_AGE_METRICS = ("GetRecords.IteratorAgeMilliseconds", "IteratorAgeMilliseconds")  # stream, shard level
THROTTLE_METRICS = ("WriteProvisionedThroughputExceeded", "ReadProvisionedThroughputExceeded")
# CloudWatch's newest minute is often still being filled in: "now" means the last few minutes.
RECENT_MINUTES = 5
# Shard-level series asked for at once: the shards shown, never the whole stream (10,000 shards x 6
# metrics would be 120 GetMetricData calls a minute).
MAX_SHARDS_PER_FETCH = 80


@dataclass(frozen=True)
class MetricSeries:
    """CloudWatch metrics of a stream or of one shard on a minute grid."""

    minutes: int
    series: Mapping[str, tuple[float, ...]]  # oldest first, one value per minute (0 where CloudWatch has none)

    def latest(self, metric: str) -> float:
        values = self.series.get(metric, ())
        return values[-1] if values else 0.0

    def peak(self, metric: str) -> float:
        return max(self.series.get(metric, ()), default=0.0)

    def recent_peak(self, metric: str, minutes: int = RECENT_MINUTES) -> float:
        return max(self.series.get(metric, ())[-minutes:], default=0.0)

    def recent_total(self, metric: str, minutes: int = RECENT_MINUTES) -> float:
        return sum(self.series.get(metric, ())[-minutes:])

    @property
    def has_data(self) -> bool:
        return any(any(values) for values in self.series.values())

    def to_json(self) -> dict[str, Any]:
        return {"period_seconds": PERIOD, "series": {name: list(values) for name, values in self.series.items()}}


@dataclass(frozen=True)
class CapacitySummary:
    """The last few minutes in two figures: how far behind the consumers' iterators are (None when no
    consumer reported) and how many requests were throttled, reads and writes together (None when the
    series has no throttle metric: a shard's with enhanced monitoring on for other metrics only)."""

    iterator_age_ms: float | None
    throttled: int | None

    @classmethod
    def of(cls, metrics: MetricSeries) -> CapacitySummary | None:
        if not metrics.has_data:
            return None
        reported = [metric for metric in ITERATOR_AGE_METRICS if any(metrics.series.get(metric, ()))]
        age = max(metrics.recent_peak(metric) for metric in reported) if reported else None
        counted = [metric for metric in THROTTLE_METRICS if metric in metrics.series]
        return cls(age, int(sum(metrics.recent_total(metric) for metric in counted)) if counted else None)


def per_minute(points: Sequence[tuple[datetime, float]], start: datetime, minutes: int) -> tuple[float, ...]:
    """CloudWatch's points placed on a fixed minute grid from `start` (missing minutes are 0)."""
    values = [0.0] * minutes
    for moment, value in points:
        index = int((moment - start).total_seconds() // PERIOD)
        if 0 <= index < minutes:
            values[index] = float(value)
    return tuple(values)


async def stream_metrics(backend: Any, stream: str, *, minutes: int = 60, now: datetime | None = None) -> MetricSeries:
    start, end = minute_window(minutes, now)
    raw = await backend.stream_metrics(stream, STREAM_METRICS, start, end, PERIOD)
    return MetricSeries(minutes, {name: per_minute(raw.get(name, []), start, minutes) for name in STREAM_METRICS})


def enabled_shard_metrics(enhanced_metrics: Iterable[str]) -> dict[str, str]:
    """The shard-level metrics enhanced monitoring has on (DescribeStreamSummary's EnhancedMonitoring),
    in the console's order, with their statistics; "ALL" stands for every one."""
    enabled = set(enhanced_metrics)
    return {
        metric: statistic
        for metric, statistic in SHARD_METRIC_STATISTICS.items()
        if metric in enabled or "ALL" in enabled
    }


async def shard_metrics(
    backend: Any,
    stream: str,
    shard_ids: Sequence[str],
    metrics: Mapping[str, str],
    *,
    minutes: int = 60,
    now: datetime | None = None,
) -> dict[str, MetricSeries]:
    """Per-shard series of the given shard-level metrics ({metric: statistic}, see enabled_shard_metrics)
    for at most MAX_SHARDS_PER_FETCH shards, in as few GetMetricData calls as the backend can batch."""
    if len(shard_ids) > MAX_SHARDS_PER_FETCH:
        raise ValueError(f"at most {MAX_SHARDS_PER_FETCH} shards per fetch; got {len(shard_ids)}")
    if not shard_ids or not metrics:
        return {}
    start, end = minute_window(minutes, now)
    raw = await backend.shard_metrics(stream, list(shard_ids), dict(metrics), start, end, PERIOD)
    return {
        shard_id: MetricSeries(
            minutes, {metric: per_minute(raw.get(shard_id, {}).get(metric, []), start, minutes) for metric in metrics}
        )
        for shard_id in shard_ids
    }


def unavailable_reason(error: ConsoleError) -> str:
    """One line saying why there are no CloudWatch metrics (the stream itself may be fine)."""
    if isinstance(error, AccessDenied):
        return f"no CloudWatch metrics: access denied (the credentials need cloudwatch:GetMetricData): {error.message}"
    if isinstance(error, EndpointUnreachable):
        return f"no CloudWatch metrics: CloudWatch cannot be reached: {error.message}"
    if error.code == "not_kinesis":  # an HTTP error with no AWS error code: not a CloudWatch API
        return "no CloudWatch metrics: this endpoint does not serve CloudWatch (GetMetricData was not understood)"
    return f"no CloudWatch metrics: {error.message}"
