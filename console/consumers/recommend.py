"""The scaling recommendation: from each open shard's observed peak, the shard count and the concrete
plan (split these, merge those, or rescale) that keeps peak utilisation under a target.

A shard's utilisation is the larger of its write utilisation (records against 1,000/s, bytes
against 1 MiB/s, computed by the caller from the heat limits) and its read utilisation: the peak
bytes/s times the number of shared-throughput (polling) consumers against the 2 MiB/s a shard
serves them together. Enhanced fan-out consumers get 2 MiB/s each and do not count.

Peaks come from CloudWatch's shard-level metrics (per-minute averages) or from reading the window's
records (`window_peaks`: per-second buckets of ApproximateArrivalTimestamp), through the injected
backend.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.backend.protocol import ConsoleBackend
from console.errors import ConsoleError
from console.read.cursor import ShardCursor
from console.topology.model import Shard
from console.words import counted

SHARD_READ_BYTES_LIMIT = 2 * 1024 * 1024  # bytes/s a shard serves its shared-throughput consumers together
MERGE_HEADROOM = 0.5  # merge two shards only if together they stay under half the target
DEFAULT_WINDOW_CAP = 100_000  # records read per shard for the sampled peak
AT_TIMESTAMP = "AT_TIMESTAMP"


@dataclass(frozen=True, slots=True)
class ShardLoad:
    shard_id: str
    write_utilisation: float  # peak, as a fraction of the shard's write limits
    peak_bytes_per_s: float
    peak_records_per_s: float

    def utilisation(self, shared_readers: int) -> float:
        return max(self.write_utilisation, self.peak_bytes_per_s * shared_readers / SHARD_READ_BYTES_LIMIT)


@dataclass(frozen=True)
class Recommendation:
    stream: str
    target: float
    shared_readers: int
    current_shards: int
    recommended_shards: int
    peak_utilisation: float
    commands: tuple[str, ...]
    reasons: tuple[str, ...]
    shards: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "target": self.target,
            "shared_readers": self.shared_readers,
            "current_shards": self.current_shards,
            "recommended_shards": self.recommended_shards,
            "peak_utilisation": round(self.peak_utilisation, 4),
            "commands": list(self.commands),
            "reasons": list(self.reasons),
            "shards": list(self.shards),
        }


def recommend(
    stream: str,
    open_shards: Sequence[Shard],
    loads: Mapping[str, ShardLoad],
    *,
    target: float,
    shared_readers: int = 1,
    on_demand: bool = False,
) -> Recommendation:
    """`open_shards` in key order; a shard missing from `loads` counts as idle. An ON_DEMAND stream
    gets the figures but no plan: AWS sizes it, and it cannot be split, merged or rescaled."""
    shards = sorted(open_shards, key=lambda s: s.starting_hash_key)
    idle = ShardLoad("", 0.0, 0.0, 0.0)
    use = {s.shard_id: loads.get(s.shard_id, idle).utilisation(shared_readers) for s in shards}
    pieces = {shard_id: max(1, math.ceil(u / target - 1e-9)) for shard_id, u in use.items()}
    peak = max(use.values(), default=0.0)
    rows = tuple(
        {
            "shard_id": s.shard_id,
            "peak_utilisation": round(use[s.shard_id], 4),
            "peak_records_per_s": round(loads.get(s.shard_id, idle).peak_records_per_s, 3),
            "peak_bytes_per_s": round(loads.get(s.shard_id, idle).peak_bytes_per_s, 3),
            "pieces_needed": pieces[s.shard_id],
        }
        for s in shards
    )
    commands: list[str] = []
    reasons: list[str] = []
    count = len(shards)
    hot = [s for s in shards if pieces[s.shard_id] > 1]
    if on_demand:
        reasons.append(
            "an ON_DEMAND stream: AWS adds and removes shards itself; to reshard by hand, "
            "switch it to PROVISIONED first"
        )
        recommended = count
    elif not any(loads.get(s.shard_id, idle).peak_records_per_s for s in shards):
        reasons.append("no traffic observed in the window: nothing to size from")
        recommended = count
    elif hot and len(hot) * 2 > count:
        factor = peak / target
        recommended = math.ceil(count * factor)
        commands.append(f"kconsole plan scale {stream} --to {recommended}")
        reasons.append(
            f"{len(hot)} of {counted(count, 'shard')} peak above {target:.0%}; the hottest at {peak:.0%} needs "
            f"{factor:.2f}x the shards: rescale evenly"
        )
    elif hot:
        recommended = count + sum(pieces[s.shard_id] - 1 for s in hot)
        for shard in hot:
            commands.append(f"kconsole plan split {stream} --shard {shard.shard_id} --at-median-of-recent")
            more = pieces[shard.shard_id]
            note = f"; needs {more} pieces: split the children again after this" if more > 2 else ""
            reasons.append(f"{shard.shard_id} peaks at {use[shard.shard_id]:.0%}{note}")
    else:
        merges = _merge_pairs(shards, use, target * MERGE_HEADROOM)
        recommended = count - len(merges)
        for lower, upper in merges:
            commands.append(f"kconsole plan merge {stream} --shard {lower.shard_id} --adjacent {upper.shard_id}")
            reasons.append(
                f"{lower.shard_id} + {upper.shard_id} peak at {use[lower.shard_id] + use[upper.shard_id]:.0%} "
                f"together (under {target * MERGE_HEADROOM:.0%})"
            )
        if not merges:
            reasons.append(f"peak utilisation {peak:.0%} is under the {target:.0%} target: no change")
    return Recommendation(
        stream, target, shared_readers, count, recommended, peak, tuple(commands), tuple(reasons), rows
    )


def _merge_pairs(shards: Sequence[Shard], use: Mapping[str, float], limit: float) -> list[tuple[Shard, Shard]]:
    """Adjacent pairs (in key order, each shard at most once) whose summed peak stays under `limit`."""
    pairs = []
    index = 0
    while index + 1 < len(shards):
        lower, upper = shards[index], shards[index + 1]
        if lower.ending_hash_key + 1 == upper.starting_hash_key and use[lower.shard_id] + use[upper.shard_id] <= limit:
            pairs.append((lower, upper))
            index += 2
        else:
            index += 1
    return pairs


@dataclass(frozen=True, slots=True)
class WindowPeak:
    shard_id: str
    peak_records_per_s: float
    peak_bytes_per_s: float
    records_read: int
    capped: bool  # stopped at the cap: the peak is over the part of the window read
    problem: str | None = None


async def window_peaks(
    backend: ConsoleBackend,
    stream: str,
    shards: Sequence[Shard],
    start: datetime,
    *,
    cap: int = DEFAULT_WINDOW_CAP,
    concurrency: int = 32,
    min_interval: float = 0.25,
) -> dict[str, WindowPeak]:
    """Each shard's busiest second since `start`, read from AT_TIMESTAMP (paced, bounded by `cap`)."""
    limit = asyncio.Semaphore(concurrency)

    async def one(shard: Shard) -> WindowPeak:
        async with limit:
            try:
                return await _shard_peak(backend, stream, shard.shard_id, start, cap, min_interval)
            except ConsoleError as error:
                return WindowPeak(shard.shard_id, 0.0, 0.0, 0, False, problem=str(error))

    return {peak.shard_id: peak for peak in await asyncio.gather(*(one(shard) for shard in shards))}


async def _shard_peak(
    backend: ConsoleBackend, stream: str, shard_id: str, start: datetime, cap: int, min_interval: float
) -> WindowPeak:
    async def at_start() -> str:
        return await backend.get_shard_iterator(stream, shard_id, AT_TIMESTAMP, timestamp=start)

    cursor = ShardCursor(
        stream=stream,
        shard_id=shard_id,
        iterator=await at_start(),
        get_shard_iterator=backend.get_shard_iterator,
        get_records=backend.get_records,
        restart=at_start,
        limit=min(10_000, cap),
        min_interval=min_interval,
    )
    records: Counter[int] = Counter()
    nbytes: Counter[int] = Counter()
    read = 0
    while read < cap:
        page = await cursor.read()
        for record in page.records:
            arrival = record.get("ApproximateArrivalTimestamp")
            second = int(arrival.timestamp() if isinstance(arrival, datetime) else datetime.now(UTC).timestamp())
            records[second] += 1
            # AWS counts the data blob and the partition key's UTF-8 bytes against the shard limit.
            nbytes[second] += len(record.get("Data") or b"") + len((record.get("PartitionKey") or "").encode())
        read += len(page.records)
        if page.ended or page.millis_behind == 0 or (not page.records and page.millis_behind is None):
            break
        cursor.limit = min(10_000, cap - read)
    return WindowPeak(
        shard_id, float(max(records.values(), default=0)), float(max(nbytes.values(), default=0)), read, read >= cap
    )
