"""The stream's free CloudWatch metrics (stream level, no enhanced monitoring needed), one value per
minute for the last hour: what comes in, how old the consumers' iterators get, and who is throttled.
I/O goes through the injected backend's `stream_metrics`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

# Metric -> the statistic that answers "how much / how bad" per minute.
STREAM_METRICS: dict[str, str] = {
    "IncomingRecords": "Sum",
    "IncomingBytes": "Sum",
    "GetRecords.IteratorAgeMilliseconds": "Maximum",
    "WriteProvisionedThroughputExceeded": "Sum",
    "ReadProvisionedThroughputExceeded": "Sum",
    "GetRecords.Latency": "Average",
}
PERIOD = 60


@dataclass(frozen=True)
class StreamMetrics:
    minutes: int
    series: Mapping[str, tuple[float, ...]]  # oldest first, one value per minute (0 where CloudWatch has none)

    def latest(self, metric: str) -> float:
        values = self.series.get(metric, ())
        return values[-1] if values else 0.0

    def peak(self, metric: str) -> float:
        return max(self.series.get(metric, ()), default=0.0)

    @property
    def has_data(self) -> bool:
        return any(any(values) for values in self.series.values())

    def to_json(self) -> dict:
        return {"period_seconds": PERIOD, "series": {name: list(values) for name, values in self.series.items()}}


def per_minute(points: Sequence[tuple[datetime, float]], start: datetime, minutes: int) -> tuple[float, ...]:
    """CloudWatch's points placed on a fixed minute grid from `start` (missing minutes are 0)."""
    values = [0.0] * minutes
    for moment, value in points:
        index = int((moment - start).total_seconds() // PERIOD)
        if 0 <= index < minutes:
            values[index] = float(value)
    return tuple(values)


async def stream_metrics(backend: Any, stream: str, *, minutes: int = 60, now: datetime | None = None) -> StreamMetrics:
    end = (now or datetime.now(timezone.utc)).replace(second=0, microsecond=0)
    start = end - timedelta(minutes=minutes)
    raw = await backend.stream_metrics(stream, STREAM_METRICS, start, end, PERIOD)
    return StreamMetrics(minutes, {name: per_minute(raw.get(name, []), start, minutes) for name in STREAM_METRICS})
