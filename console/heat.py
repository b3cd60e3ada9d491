"""Heat per shard: 1-second rates by arrival time, utilisation against the shard limits, and top keys.

Pure: fed records by the sampler (console/heat_sampler.py), no I/O here.

## Top keys: a bounded heavy-hitters summary (Space-Saving, kept in its mergeable offset form)

Space-Saving with k counters answers "which keys are hot" in O(k) memory: every reported count is an
upper bound on the key's true count, over-counting by at most N/k (N = total weight seen), so every
key heavier than N/k is reported. Records arrive in GetRecords batches, so instead of updating one
counter per record in Python we count each batch with `Counter.update` (C speed) straight into the
summary's table and only compact when the table outgrows `capacity * slack` entries. Compaction is
the Misra-Gries/Space-Saving merge of Agarwal et al., "Mergeable Summaries" (2012): subtract the
(k+1)-th largest count from every counter, drop those that reach zero, and add the subtracted
amount to a shared `floor`. Then for every key

    lower(key) = table.get(key, 0) <= true(key) <= lower(key) + floor = count(key)

and `floor <= N / (k + 1)`, which gives the three Space-Saving guarantees (upper bounds, error
bounded by N/k, every key with frequency > N/k present) at every moment, not only after compaction.

`sample_every=m` counts one record in m and scales reported counts by m. The phase is drawn at
random per chunk, which keeps the estimate unbiased even for keys written round-robin with period m
(such patterns only raise its variance). The guarantees then hold for the sampled sub-stream only;
exact mode (m = 1) is the default and what the heat sampler uses.

The rest of the module: `ShardHeat` / `StreamHeat` (buckets, rates, peaks, utilisation, top keys, the
split point at the median hash) and the hot-key write-sharding what-if.
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from console.hashkeys import HashRangeIndex, md5_hash_key
from console.model import Shard
from console.writesharding import spread

# Keys counted per Counter.update call; bounds how far the table may overshoot its limit.
CHUNK = 1024


@dataclass(frozen=True, slots=True)
class KeyCount:
    key: str
    count: int  # upper bound on the true count (scaled by sample_every)
    guaranteed: int  # lower bound on the true count (scaled by sample_every)


class SpaceSaving:
    """Top keys by weight in bounded memory: at most `capacity * slack + CHUNK` table entries."""

    __slots__ = ("capacity", "sample_every", "_limit", "_table", "_floor", "_total", "_random")

    def __init__(self, capacity: int = 256, *, slack: int = 8, sample_every: int = 1,
                 seed: int | None = None) -> None:
        if capacity < 1 or slack < 1 or sample_every < 1:
            raise ValueError("capacity, slack and sample_every must be at least 1")
        self.capacity = capacity
        self.sample_every = sample_every
        self._limit = max(capacity + 1, capacity * slack)
        self._table: Counter[str] = Counter()
        self._floor = 0  # weight subtracted from every counter so far (in sampled units)
        self._total = 0  # weight counted (in sampled units)
        self._random = random.Random(seed)

    # ingestion -----------------------------------------------------------------------------

    def add(self, key: str, weight: int = 1) -> None:
        """Count one key (a record, or `weight` bytes of it)."""
        if weight <= 0:
            return
        self._table[key] += weight
        self._total += weight
        if len(self._table) > self._limit:
            self._compact()

    def add_many(self, keys: Sequence[str]) -> None:
        """Count each key once (one record each). The fast path: C-speed counting per chunk."""
        table, step, limit = self._table, self.sample_every, self._limit
        for begin in range(0, len(keys), CHUNK):
            if step == 1:
                chunk = keys[begin:begin + CHUNK]
            else:
                chunk = keys[begin + self._random.randrange(step):begin + CHUNK:step]
            table.update(chunk)
            self._total += len(chunk)
            if len(table) > limit:
                self._compact()
                table = self._table

    def add_weights(self, weights: Mapping[str, int] | Iterable[tuple[str, int]]) -> None:
        """Count weighted keys, e.g. bytes per key of one batch (a pre-aggregated batch merges in one go)."""
        items = weights.items() if isinstance(weights, Mapping) else weights
        table = self._table
        added = 0
        for key, weight in items:
            if weight > 0:
                table[key] += weight
                added += weight
                if len(table) > self._limit:
                    self._compact()
                    table = self._table
        self._total += added

    def _compact(self) -> None:
        values = sorted(self._table.values(), reverse=True)
        if len(values) <= self.capacity:
            return
        cut = values[self.capacity]  # the (k+1)-th largest count
        self._table = Counter({key: value - cut for key, value in self._table.items() if value > cut})
        self._floor += cut

    # queries --------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Total weight seen (estimated when sampling)."""
        return self._total * self.sample_every

    @property
    def error_bound(self) -> int:
        """How much any reported count may exceed the true one (<= total / (capacity + 1))."""
        return self._floor * self.sample_every

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: str) -> bool:
        return key in self._table

    def count(self, key: str) -> int:
        """Upper bound on `key`'s weight (for an unmonitored key: the floor)."""
        return (self._table.get(key, 0) + self._floor) * self.sample_every

    def guaranteed(self, key: str) -> int:
        """Lower bound on `key`'s weight."""
        return self._table.get(key, 0) * self.sample_every

    def top(self, n: int = 10) -> list[KeyCount]:
        """The n heaviest monitored keys, heaviest first (ties by key for a stable order)."""
        best = heapq.nlargest(n, sorted(self._table.items()), key=itemgetter(1))
        floor, m = self._floor, self.sample_every
        return [KeyCount(key, (value + floor) * m, value * m) for key, value in best]

    def heavier_than(self, share: float) -> list[KeyCount]:
        """Every key whose true weight may exceed `share` of the total (a superset of the true ones)."""
        threshold = share * self._total
        floor, m = self._floor, self.sample_every
        rows = [KeyCount(key, (value + floor) * m, value * m)
                for key, value in self._table.items() if value + floor > threshold]
        return sorted(rows, key=lambda row: (-row.count, row.key))


# ---------------------------------------------------------------------------------------------
# Heat per shard
# ---------------------------------------------------------------------------------------------

SHARD_RECORDS_LIMIT = 1000  # records/s a shard accepts
SHARD_BYTES_LIMIT = 1024 * 1024  # bytes/s a shard accepts (data blob + partition key)
HISTORY_SECONDS = 300  # 1-second buckets kept per shard (sparklines, peaks)
HASH_BINS = 512  # resolution of the per-shard traffic histogram over its hash range
HASH_CACHE_SIZE = 4096  # MD5s of recently seen keys (hot keys repeat; cleared when full)
RECENT_SECONDS = 10  # the live view's "now": rates over the last whole seconds
DOMINANT_SHARE = 0.25
MEDIAN_ATOMS = 32  # heaviest keys placed exactly (not smeared over a bin) when finding the median  # a key above this share of its shard is named by the split suggestion

# (arrival epoch seconds, partition key, size in bytes counted against the shard limit)
Observation = tuple[float, str, int]


def observations_from_records(records: Iterable[Mapping]) -> list[Observation]:
    """GetRecords' `Records` as observations. Size = data blob + UTF-8 partition key, as the
    1 MiB/s write limit counts it."""
    rows = []
    for record in records:
        arrival = record["ApproximateArrivalTimestamp"]
        arrival = arrival.timestamp() if hasattr(arrival, "timestamp") else float(arrival)
        key = record["PartitionKey"]
        rows.append((arrival, key, len(record["Data"]) + len(key.encode("utf-8"))))
    return rows


@dataclass(frozen=True, slots=True)
class TopKey:
    key: str
    records: int  # upper bound (Space-Saving count)
    share: float  # of the shard's observed records
    guaranteed_records: int
    bytes: int  # upper bound from the by-bytes summary

    def to_json(self) -> dict:
        return {"key": self.key, "records": self.records, "share": round(self.share, 4),
                "guaranteed_records": self.guaranteed_records, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class SplitSuggestion:
    """Where to split a hot shard so each child gets about half of its observed traffic."""

    shard_id: str
    at: int  # NewStartingHashKey: the median hash key of the observed records
    placed_records: int  # records whose key's MD5 falls in this shard (the histogram's basis)
    dominant_key: str | None  # a single key a split cannot divide (write-shard it instead)
    dominant_share: float
    lower_share: float = 0.5  # estimated share of the observed records below `at` (the lower child's)

    def command(self, stream: str) -> str:
        return f"kconsole plan split {stream} --shard {self.shard_id} --at {self.at}"

    def to_json(self, stream: str | None = None) -> dict:
        doc = {"shard_id": self.shard_id, "at": str(self.at), "placed_records": self.placed_records,
               "lower_share": round(self.lower_share, 4),
               "dominant_key": self.dominant_key, "dominant_share": round(self.dominant_share, 4)}
        if stream is not None:
            doc["command"] = self.command(stream)
        return doc


@dataclass(frozen=True, slots=True)
class ShardHeatSnapshot:
    shard_id: str
    starting_hash_key: int
    ending_hash_key: int
    records: int
    bytes: int
    window_seconds: float
    records_per_s: float
    bytes_per_s: float
    peak_records_per_s: int
    peak_bytes_per_s: int
    utilisation: float  # average over the window: max of the records and bytes shares of the limits
    peak_utilisation: float
    recent_records_per_s: float  # the last RECENT_SECONDS whole seconds (what a live view shows)
    recent_bytes_per_s: float
    series: tuple[int, ...]  # records per second, oldest first (the last complete seconds)
    top_keys: tuple[TopKey, ...]
    top_keys_by_bytes: tuple[TopKey, ...]
    split: SplitSuggestion | None
    unplaced_records: int  # records whose key's MD5 is outside the shard: written with ExplicitHashKey
    key_error_bound: int  # any top-key count may exceed the truth by at most this
    is_open: bool = True  # False: closed by a reshard during the window (its rates end at the close)

    @property
    def recent_utilisation(self) -> float:
        """Utilisation over the last RECENT_SECONDS: what a live view should colour by."""
        return utilisation(self.recent_records_per_s, self.recent_bytes_per_s)

    def to_json(self, stream: str | None = None) -> dict:
        return {
            "shard_id": self.shard_id,
            "state": "open" if self.is_open else "closed",
            "records": self.records,
            "bytes": self.bytes,
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "peak_records_per_s": self.peak_records_per_s,
            "peak_bytes_per_s": self.peak_bytes_per_s,
            "utilisation": round(self.utilisation, 4),
            "peak_utilisation": round(self.peak_utilisation, 4),
            "recent_records_per_s": round(self.recent_records_per_s, 3),
            "recent_bytes_per_s": round(self.recent_bytes_per_s, 3),
            "top_keys": [row.to_json() for row in self.top_keys],
            "top_keys_by_bytes": [row.to_json() for row in self.top_keys_by_bytes],
            "key_error_bound": self.key_error_bound,
            "unplaced_records": self.unplaced_records,
            "split": self.split.to_json(stream) if self.split else None,
            "series": list(self.series),
        }


def utilisation(records_per_s: float, bytes_per_s: float) -> float:
    """The larger of the two shares of a shard's write limits (1.0 = at the limit)."""
    return max(records_per_s / SHARD_RECORDS_LIMIT, bytes_per_s / SHARD_BYTES_LIMIT)


class ShardHeat:
    """Everything observed on one shard, in bounded memory: at most HISTORY_SECONDS buckets, two
    Space-Saving summaries, a fixed histogram and a small hash cache."""

    def __init__(self, shard: Shard, *, top_capacity: int = 256,
                 history_seconds: int = HISTORY_SECONDS) -> None:
        self.shard = shard
        self.history_seconds = history_seconds
        self.records = 0
        self.bytes = 0
        self.unplaced = 0
        self.by_records = SpaceSaving(top_capacity)
        self.by_bytes = SpaceSaving(top_capacity)
        self._buckets: dict[int, list[int]] = {}  # second -> [records, bytes]
        self._newest = -1
        self._bins = [0] * HASH_BINS
        self._hashes: dict[str, int] = {}

    def observe(self, observations: Iterable[Observation], start: float = float("-inf"),
                end: float = float("inf")) -> int:
        """Count the observations whose arrival lies in [start, end); returns how many counted."""
        buckets = self._buckets
        keys: list[str] = []
        key_bytes: dict[str, int] = {}
        total_bytes = 0
        newest = self._newest
        for arrival, key, size in observations:
            if not start <= arrival < end:
                continue
            second = int(arrival)
            bucket = buckets.get(second)
            if bucket is None:
                bucket = buckets[second] = [0, 0]
                if second > newest:
                    newest = second
            bucket[0] += 1
            bucket[1] += size
            total_bytes += size
            keys.append(key)
            key_bytes[key] = key_bytes.get(key, 0) + size
        if not keys:
            return 0
        self.records += len(keys)
        self.bytes += total_bytes
        self.by_records.add_many(keys)
        self.by_bytes.add_weights(key_bytes)
        self._place(Counter(keys))
        if newest != self._newest:
            self._newest = newest
            self._forget_before(newest - self.history_seconds)
        return len(keys)

    def _place(self, key_counts: Mapping[str, int]) -> None:
        """Histogram the batch's keys over this shard's hash range (for the median split point)."""
        start = self.shard.starting_hash_key
        width = self.shard.ending_hash_key - start + 1
        bins, hashes = self._bins, self._hashes
        md5, from_bytes = hashlib.md5, int.from_bytes
        for key, count in key_counts.items():
            hash_key = hashes.get(key)
            if hash_key is None:
                if len(hashes) >= HASH_CACHE_SIZE:
                    hashes.clear()
                # md5_hash_key inlined: this loop runs once per distinct key of every batch.
                hash_key = hashes[key] = from_bytes(md5(key.encode("utf-8")).digest(), "big")
            offset = hash_key - start
            if 0 <= offset < width:
                bins[offset * HASH_BINS // width] += count
            else:
                self.unplaced += count

    def _forget_before(self, cutoff: int) -> None:
        if len(self._buckets) > self.history_seconds:
            for second in [s for s in self._buckets if s < cutoff]:
                del self._buckets[second]

    def series(self, until_second: int, seconds: int) -> list[int]:
        """Records per second for the `seconds` whole seconds before `until_second`, oldest first."""
        buckets = self._buckets
        return [buckets.get(s, (0, 0))[0] for s in range(until_second - seconds, until_second)]

    def recent_rates(self, first_second: int, until_second: int) -> tuple[float, float]:
        """Records/s and bytes/s over the last RECENT_SECONDS whole seconds before `until_second`
        (not before `first_second`); falls back to nothing-yet (0, 0) in the first second."""
        begin = max(first_second, until_second - RECENT_SECONDS)
        seconds = until_second - begin
        if seconds <= 0:
            return 0.0, 0.0
        buckets = self._buckets
        records = sum(buckets[s][0] for s in range(begin, until_second) if s in buckets)
        nbytes = sum(buckets[s][1] for s in range(begin, until_second) if s in buckets)
        return records / seconds, nbytes / seconds

    def split_suggestion(self) -> SplitSuggestion | None:
        start, end = self.shard.starting_hash_key, self.shard.ending_hash_key
        placed = sum(self._bins)
        if placed == 0 or end - start < 4:
            return None
        at, below = self._median_hash(placed)
        at = min(max(at, start + 2), end - 1)  # SplitShard needs start+1 < at < end
        dominant = self.by_records.top(1)
        dominant_key, dominant_share = None, 0.0
        if dominant and self.records:
            share = dominant[0].guaranteed / self.records
            if share >= DOMINANT_SHARE:
                dominant_key, dominant_share = dominant[0].key, share
        return SplitSuggestion(self.shard.shard_id, at, placed, dominant_key, dominant_share, below / placed)

    def _median_hash(self, placed: int) -> tuple[int, float]:
        """The hash key that best halves the observed records, and the record count below it.

        The heaviest keys are point masses at their exact MD5 (a split can only put a key wholly on
        one side); the rest of each histogram bin is taken as spread evenly across the bin.
        """
        start = self.shard.starting_hash_key
        width = self.shard.ending_hash_key - start + 1
        atoms: dict[int, list[tuple[int, int]]] = {}
        for row in self.by_records.top(MEDIAN_ATOMS):
            hash_key = self._hashes.get(row.key)
            hash_key = md5_hash_key(row.key) if hash_key is None else hash_key
            if row.guaranteed and 0 <= hash_key - start < width:
                atoms.setdefault((hash_key - start) * HASH_BINS // width, []).append((hash_key, row.guaranteed))
        half, below = placed / 2, 0.0
        best_at, best_below, best_gap = start, 0.0, float("inf")
        for index, count in enumerate(self._bins):
            if not count:
                continue
            low, high = start + width * index // HASH_BINS, start + width * (index + 1) // HASH_BINS
            points = sorted(atoms.get(index, ()))
            density = max(0, count - sum(weight for _, weight in points)) / (high - low)
            position = low
            for hash_key, weight in points + [(high, 0)]:
                spread_mass = density * (hash_key - position)
                if spread_mass and below <= half <= below + spread_mass:
                    return position + int((half - below) / density), half
                below += spread_mass
                if weight:
                    # Split at the key (it goes up) or just after it (it goes down): the nearer to half.
                    for at, lower in ((hash_key, below), (hash_key + 1, below + weight)):
                        if abs(lower - half) < best_gap:
                            best_at, best_below, best_gap = at, lower, abs(lower - half)
                    below += weight
                    if below >= half:
                        return best_at, best_below
                position = hash_key + 1 if weight else hash_key
        return best_at, best_below

    def snapshot(self, window_start: float, window_end: float, *, top: int = 5,
                 series_seconds: int = 60, is_open: bool = True) -> ShardHeatSnapshot:
        window = max(window_end - window_start, 1e-9)
        records_per_s, bytes_per_s = self.records / window, self.bytes / window
        first_second, last_second = int(window_start), int(window_end)
        peak_records = peak_bytes = 0
        for second, (records, nbytes) in self._buckets.items():
            if first_second <= second <= last_second:
                peak_records = max(peak_records, records)
                peak_bytes = max(peak_bytes, nbytes)
        span = min(series_seconds, max(1, last_second - first_second))
        recent_records, recent_bytes = self.recent_rates(first_second, last_second)
        top_keys = tuple(self._top_key(row.key, row.count, row.guaranteed) for row in self.by_records.top(top))
        by_bytes = tuple(self._top_key(row.key, self.by_records.count(row.key), self.by_records.guaranteed(row.key),
                                       nbytes=row.count) for row in self.by_bytes.top(top))
        return ShardHeatSnapshot(
            shard_id=self.shard.shard_id,
            starting_hash_key=self.shard.starting_hash_key,
            ending_hash_key=self.shard.ending_hash_key,
            records=self.records,
            bytes=self.bytes,
            window_seconds=window,
            records_per_s=records_per_s,
            bytes_per_s=bytes_per_s,
            peak_records_per_s=peak_records,
            peak_bytes_per_s=peak_bytes,
            utilisation=utilisation(records_per_s, bytes_per_s),
            peak_utilisation=utilisation(peak_records, peak_bytes),
            recent_records_per_s=recent_records,
            recent_bytes_per_s=recent_bytes,
            series=tuple(self.series(last_second, span)),
            top_keys=top_keys,
            top_keys_by_bytes=by_bytes,
            split=self.split_suggestion(),
            unplaced_records=self.unplaced,
            key_error_bound=self.by_records.error_bound,
            is_open=is_open,
        )

    def _top_key(self, key: str, records: int, guaranteed: int, nbytes: int | None = None) -> TopKey:
        share = min(1.0, records / self.records) if self.records else 0.0
        return TopKey(key, records, share, guaranteed, self.by_bytes.count(key) if nbytes is None else nbytes)


@dataclass(frozen=True, slots=True)
class StreamHeatSnapshot:
    stream: str
    window_start: float
    window_end: float
    shards: tuple[ShardHeatSnapshot, ...]  # key-space order

    @property
    def records_per_s(self) -> float:
        return sum(shard.records_per_s for shard in self.shards)

    @property
    def bytes_per_s(self) -> float:
        return sum(shard.bytes_per_s for shard in self.shards)

    @property
    def series(self) -> tuple[int, ...]:
        """Stream total records per second (sum of the shards' series)."""
        if not self.shards:
            return ()
        return tuple(sum(column) for column in zip(*(shard.series for shard in self.shards)))

    @property
    def open_shards(self) -> tuple[ShardHeatSnapshot, ...]:
        return tuple(shard for shard in self.shards if shard.is_open)

    def hottest_first(self) -> list[ShardHeatSnapshot]:
        return sorted(self.shards, key=lambda shard: (-shard.utilisation, -shard.records, shard.shard_id))

    @property
    def hottest(self) -> ShardHeatSnapshot | None:
        """The hottest open shard (a closed one cannot be split any more)."""
        ranked = [shard for shard in self.hottest_first() if shard.is_open]
        return ranked[0] if ranked and ranked[0].records else None

    def to_json(self) -> dict:
        return {
            "stream": self.stream,
            "window_seconds": round(self.window_end - self.window_start, 3),
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "limits": {"records_per_s": SHARD_RECORDS_LIMIT, "bytes_per_s": SHARD_BYTES_LIMIT},
            "hottest_shard": self.hottest.shard_id if self.hottest else None,
            "shards": [shard.to_json(self.stream) for shard in self.shards],
        }


class StreamHeat:
    """Heat of every sampled shard of one stream over a window of arrival time [start, end)."""

    def __init__(self, stream: str, shards: Iterable[Shard], *, window_start: float,
                 top_capacity: int = 256, history_seconds: int = HISTORY_SECONDS) -> None:
        self.stream = stream
        self.window_start = window_start
        self.window_end: float | None = None
        # Shards whose life began or ended inside the window: their rates cover only their part of it.
        self.closed: dict[str, float] = {}
        self.born: dict[str, float] = {}
        self._top_capacity, self._history_seconds = top_capacity, history_seconds
        ordered = sorted(shards, key=lambda shard: shard.starting_hash_key)
        self.shards: dict[str, ShardHeat] = {
            shard.shard_id: ShardHeat(shard, top_capacity=top_capacity, history_seconds=history_seconds)
            for shard in ordered
        }

    def add_shard(self, shard: Shard, since: float) -> None:
        """A shard born during the window (a reshard's child), sampled from `since`; key-space order kept."""
        if shard.shard_id in self.shards:
            return
        self.born[shard.shard_id] = since
        self.shards[shard.shard_id] = ShardHeat(shard, top_capacity=self._top_capacity,
                                                history_seconds=self._history_seconds)
        self.shards = dict(sorted(self.shards.items(), key=lambda item: (item[1].shard.starting_hash_key,
                                                                         item[1].shard.ending_hash_key)))

    def mark_closed(self, shard_id: str, at: float) -> None:
        """The shard closed under a reshard; its rates cover the window up to `at`."""
        self.closed[shard_id] = at

    def observe(self, shard_id: str, observations: Iterable[Observation]) -> int:
        end = self.window_end if self.window_end is not None else float("inf")
        return self.shards[shard_id].observe(observations, self.window_start, end)

    def close(self, window_end: float) -> None:
        """Stop counting arrivals at `window_end` (later reads are drained but not counted)."""
        self.window_end = window_end

    def snapshot(self, now: float, *, top: int = 5, series_seconds: int = 60) -> StreamHeatSnapshot:
        end = self.window_end if self.window_end is not None else now
        return StreamHeatSnapshot(
            self.stream, self.window_start, end,
            tuple(heat.snapshot(max(self.window_start, self.born.get(shard_id, self.window_start)),
                                min(end, self.closed.get(shard_id, end)),
                                top=top, series_seconds=series_seconds, is_open=shard_id not in self.closed)
                  for shard_id, heat in self.shards.items()),
        )


# ---------------------------------------------------------------------------------------------
# What to do about a hot key: write sharding (seed 004)
# ---------------------------------------------------------------------------------------------

TARGET_UTILISATION = 0.5  # leave each sharded key half a shard, room for the shard's other keys


@dataclass(frozen=True, slots=True)
class HotKeyWhatIf:
    key: str
    records_per_s: float
    bytes_per_s: float
    suffixes: int  # a power of two (the suffix is xxh64("PK:SK") & (n-1))
    landing: tuple[tuple[str, str], ...]  # (sharded partition key, shard id) per suffix

    @property
    def shards_hit(self) -> dict[str, int]:
        hits: dict[str, int] = {}
        for _, shard_id in self.landing:
            hits[shard_id] = hits.get(shard_id, 0) + 1
        return hits

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "suffixes": self.suffixes,
            "shards_hit": self.shards_hit,
            "sharded_keys": [{"partition_key": key, "shard_id": shard_id} for key, shard_id in self.landing],
        }


def suffixes_needed(records_per_s: float, bytes_per_s: float, target: float = TARGET_UTILISATION) -> int:
    """The smallest power of two n >= 2 such that 1/n of the key's traffic stays under `target` of a shard."""
    needed = max(records_per_s / (target * SHARD_RECORDS_LIMIT), bytes_per_s / (target * SHARD_BYTES_LIMIT))
    suffixes = 2
    while suffixes < needed:
        suffixes *= 2
    return suffixes


def hot_key_what_if(key: str, records_per_s: float, bytes_per_s: float, index: HashRangeIndex, *,
                    target: float = TARGET_UTILISATION) -> HotKeyWhatIf:
    """How many suffixes the key needs and which shards the sharded keys `key:0..n-1` land on
    (the placement is console.writesharding's, seed 004)."""
    suffixes = suffixes_needed(records_per_s, bytes_per_s, target)
    placement = spread(key, suffixes, index)
    landing = tuple((row.partition_key, row.shard_id) for row in placement.suffixes)
    return HotKeyWhatIf(key, records_per_s, bytes_per_s, suffixes, landing)
