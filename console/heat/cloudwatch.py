"""Heat from CloudWatch's shard-level metrics (needs enhanced monitoring on the stream).

CloudWatch sums each metric per minute, so it hides bursts inside a minute that the sampler's
1-second buckets show; in exchange it needs no reads and covers the past. Rates here are per
second averaged over each minute; `peak_records_per_s` is the busiest minute's average.
I/O goes through the injected backend's `shard_metrics` (GetMetricData, batched).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from console.heat.snapshot import SHARD_BYTES_LIMIT, SHARD_RECORDS_LIMIT, utilisation

# Every shard-level metric the console shows, with the statistic that answers "how much / how bad"
# per minute; the heat summary needs the first four (and `e` turns those on).
SHARD_METRIC_STATISTICS: dict[str, str] = {
    "IncomingBytes": "Sum",
    "IncomingRecords": "Sum",
    "WriteProvisionedThroughputExceeded": "Sum",
    "IteratorAgeMilliseconds": "Maximum",
    "OutgoingBytes": "Sum",
    "ReadProvisionedThroughputExceeded": "Sum",
}
SHARD_LEVEL_METRICS = tuple(SHARD_METRIC_STATISTICS)[:4]
PERIOD = 60  # the finest period for shard-level metrics

Series = Sequence[tuple[datetime, float]]


@dataclass(frozen=True, slots=True)
class ShardMetricsHeat:
    shard_id: str
    records_per_s: float
    bytes_per_s: float
    peak_records_per_s: float  # the busiest minute, per second
    peak_bytes_per_s: float
    throttled_records: int  # WriteProvisionedThroughputExceeded over the window
    iterator_age_ms: float | None  # the largest IteratorAgeMilliseconds (None: no consumer reported)
    minutes_with_data: int

    @property
    def utilisation(self) -> float:
        return utilisation(self.records_per_s, self.bytes_per_s)

    @property
    def peak_utilisation(self) -> float:
        return utilisation(self.peak_records_per_s, self.peak_bytes_per_s)

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "peak_records_per_s": round(self.peak_records_per_s, 3),
            "peak_bytes_per_s": round(self.peak_bytes_per_s, 3),
            "utilisation": round(self.utilisation, 4),
            "peak_utilisation": round(self.peak_utilisation, 4),
            "throttled_records": self.throttled_records,
            "iterator_age_ms": self.iterator_age_ms,
            "minutes_with_data": self.minutes_with_data,
            "top_keys": [],  # CloudWatch knows nothing of partition keys; sample for those
        }


def summarise_shard(shard_id: str, metrics: Mapping[str, Series], window_seconds: float) -> ShardMetricsHeat:
    """One shard's heat from its per-minute series (sums per PERIOD; iterator age: maxima)."""
    records = [value for _, value in metrics.get("IncomingRecords", ())]
    nbytes = [value for _, value in metrics.get("IncomingBytes", ())]
    throttled = [value for _, value in metrics.get("WriteProvisionedThroughputExceeded", ())]
    ages = [value for _, value in metrics.get("IteratorAgeMilliseconds", ())]
    window = max(window_seconds, PERIOD)
    return ShardMetricsHeat(
        shard_id=shard_id,
        records_per_s=sum(records) / window,
        bytes_per_s=sum(nbytes) / window,
        peak_records_per_s=max(records, default=0.0) / PERIOD,
        peak_bytes_per_s=max(nbytes, default=0.0) / PERIOD,
        throttled_records=int(sum(throttled)),
        iterator_age_ms=max(ages) if ages else None,
        minutes_with_data=max(len(records), len(nbytes)),
    )


def minute_window(minutes: int, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The last `minutes` whole minutes (start, end): CloudWatch's per-minute points fall on them."""
    end = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    return end - timedelta(minutes=minutes), end


async def cloudwatch_heat(
    backend: Any, stream: str, shard_ids: Sequence[str], *, seconds: float, now: datetime | None = None
) -> list[ShardMetricsHeat]:
    """Fetch the four shard-level metrics for the last `seconds` and summarise each shard."""
    minutes = max(1, int(-(-seconds // PERIOD)))
    start, end = minute_window(minutes, now)
    by_shard = await backend.shard_metrics(
        stream,
        list(shard_ids),
        {metric: SHARD_METRIC_STATISTICS[metric] for metric in SHARD_LEVEL_METRICS},
        start,
        end,
        PERIOD,
    )
    window = minutes * PERIOD
    return [summarise_shard(shard_id, by_shard.get(shard_id, {}), window) for shard_id in shard_ids]


async def shard_utilisation(
    backend: Any, stream: str, shard_ids: Sequence[str], *, minutes: int = 5, now: datetime | None = None
) -> dict[str, float]:
    """Each shard's utilisation of its write limits in its busiest minute of the last `minutes`, by
    CloudWatch's IncomingRecords and IncomingBytes (what ranks the hottest shards for a live view that
    reads the shards in turn; two queries a shard, 20 GetMetricData calls for 5,000 shards)."""
    start, end = minute_window(minutes, now)
    by_shard = await backend.shard_metrics(
        stream,
        list(shard_ids),
        {metric: SHARD_METRIC_STATISTICS[metric] for metric in ("IncomingRecords", "IncomingBytes")},
        start,
        end,
        PERIOD,
    )
    return {
        shard_id: summarise_shard(shard_id, by_shard.get(shard_id, {}), minutes * PERIOD).peak_utilisation
        for shard_id in shard_ids
    }


def limits_json() -> dict[str, Any]:
    return {"records_per_s": SHARD_RECORDS_LIMIT, "bytes_per_s": SHARD_BYTES_LIMIT}
