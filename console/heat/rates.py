"""Heat per shard: 1-second rates by arrival time, utilisation against the shard limits, top keys
and the split point at the median hash.

Pure: fed records by the sampler (console.heat.sampler), no I/O here. The pieces live apart:
console.heat.heavyhitters counts the top keys, console.heat.snapshot holds what a reading reports,
console.heat.hotkey works out the write-sharding what-if, and console.heat.stream_heat holds a whole
stream's shards over one window.

KPL aggregates (opened by console.heat.aggregates) count twice over, each for what it is: as one
Kinesis record of its full size (what the shard limits and the placement of records count: an
aggregate lands by its outer key) and as the user records inside it, each under its own partition
key (what the top keys and the dominant key count). The split point is therefore found from where
the aggregates land, never from the MD5 of keys that travelled inside them.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from aws_kinesis_agg import MAGIC

from console.heat.aggregates import Aggregate, split_page
from console.heat.heavyhitters import SpaceSaving
from console.heat.snapshot import (
    RECENT_SECONDS,
    ShardHeatSnapshot,
    SplitSuggestion,
    TopKey,
    utilisation,
)
from console.keyspace.hashkeys import md5_hash_key
from console.topology.model import Shard

MAGIC_FIRST = MAGIC[0]  # a KPL aggregate's first byte: most records are told apart by it alone
HISTORY_SECONDS = 300  # 1-second buckets kept per shard (sparklines, peaks)
HASH_BINS = 512  # resolution of the per-shard traffic histogram over its hash range
HASH_CACHE_SIZE = 4096  # MD5s of recently seen keys (hot keys repeat; cleared when full)
DOMINANT_SHARE = 0.25  # a key above this share of its shard is named by the split suggestion
MEDIAN_ATOMS = 32  # heaviest keys placed exactly (not smeared over a bin) when finding the median

# (arrival epoch seconds, partition key (None: sent without one), size counted against the shard limit)
Observation = tuple[float, str | None, int]


def record_arrival(record: Mapping[str, Any]) -> Callable[[Any], float]:
    """How to read the arrival of records like `record`: botocore hands datetimes over, a test or a
    replay may hand epoch seconds."""
    return datetime.timestamp if isinstance(record["ApproximateArrivalTimestamp"], datetime) else float


Figure = TypeVar("Figure", int, float)


@functools.cache
def _zeros(length: int) -> tuple[Any, ...]:
    return (0,) * length


def _bound_like(record: Mapping[str, Any]) -> Callable[[int], Any]:
    """A whole second as the records give arrival: a UTC datetime, or epoch seconds."""
    if isinstance(record["ApproximateArrivalTimestamp"], datetime):
        return lambda second: datetime.fromtimestamp(second, UTC)
    return float


def observations_from_records(records: Iterable[Mapping[str, Any]]) -> list[Observation]:
    """GetRecords' `Records` as observations. Size = data blob + UTF-8 partition key, as the
    1 MiB/s write limit counts it."""
    rows = []
    for record in records:
        arrival = record["ApproximateArrivalTimestamp"]
        arrival = arrival.timestamp() if hasattr(arrival, "timestamp") else float(arrival)
        key = record.get("PartitionKey")  # optional on an AUTO stream
        rows.append((arrival, key, len(record["Data"]) + (len(key.encode("utf-8")) if key else 0)))
    return rows


class ShardHeat:
    """Everything observed on one shard, in bounded memory: at most HISTORY_SECONDS buckets, two
    Space-Saving summaries, a fixed histogram and a small hash cache."""

    def __init__(self, shard: Shard, *, top_capacity: int = 256, history_seconds: int = HISTORY_SECONDS) -> None:
        self.shard = shard
        self.history_seconds = history_seconds
        self.records = 0  # Kinesis records (an aggregate is one)
        self.bytes = 0
        self.user_records = 0  # plain records plus the user records inside aggregates
        self.aggregates = 0
        self.decode_errors = 0  # malformed aggregates: counted as Kinesis records, holding no user records
        self.unplaced = 0
        self.keyless = 0  # records without a partition key (AUTO distribution): load, but no key
        # The summaries and the histogram are made at the first record: a 10,000-shard view starts
        # with most shards unread, and each would cost ~30 µs up front.
        self._top_capacity = top_capacity
        self._by_records: SpaceSaving | None = None
        self._by_bytes: SpaceSaving | None = None
        self._by_inner: SpaceSaving | None = None
        # Kinesis records per placing key (outer key of an aggregate): kept apart from by_records only
        # once an aggregate arrives; until then the two are the same summary.
        self.by_placement: SpaceSaving | None = None
        self._buckets: dict[int, list[int]] = {}  # second -> [records, bytes, user records]
        self._newest = -1  # the newest second history was trimmed for
        self._latest = -1  # the newest second seen
        self._histogram: list[int] | None = None
        self._hashes: dict[str, int] = {}
        self.version = 0  # goes up with every observation that counted: a snapshot of it can be reused

    @property
    def by_records(self) -> SpaceSaving:
        """User records per partition key."""
        return self._summary("_by_records")

    @property
    def by_bytes(self) -> SpaceSaving:
        return self._summary("_by_bytes")

    @property
    def by_inner(self) -> SpaceSaving:
        """User records that came out of aggregates, per key."""
        return self._summary("_by_inner")

    def _summary(self, slot: str) -> SpaceSaving:
        summary: SpaceSaving | None = getattr(self, slot)
        if summary is None:
            summary = SpaceSaving(self._top_capacity)
            setattr(self, slot, summary)
        return summary

    @property
    def _bins(self) -> list[int]:
        """Records placed per HASH_BINS-th of the shard's hash range."""
        if self._histogram is None:
            self._histogram = [0] * HASH_BINS
        return self._histogram

    def observe(
        self,
        observations: Iterable[Observation],
        start: float = float("-inf"),
        end: float = float("inf"),
        aggregates: Iterable[Aggregate] = (),
    ) -> int:
        """Count the plain records (`observations`) and the KPL aggregates whose arrival lies in
        [start, end); returns how many Kinesis records counted."""
        buckets = self._buckets
        keys: list[str] = []
        key_bytes: dict[str, int] = {}
        total_bytes = keyless = 0
        for arrival, key, size in observations:
            if not start <= arrival < end:
                continue
            second = int(arrival)
            bucket = buckets.get(second) or self._new_bucket(second)
            bucket[0] += 1
            bucket[1] += size
            bucket[2] += 1
            total_bytes += size
            if key is None:
                keyless += 1
                continue
            keys.append(key)
            key_bytes[key] = key_bytes.get(key, 0) + size
        return self._book(keys, key_bytes, total_bytes, keyless, aggregates, start, end)

    def observe_page(
        self, records: Sequence[Mapping[str, Any]], start: float = float("-inf"), end: float = float("inf")
    ) -> int:
        """Count a GetRecords page (its `Records`, as the backend hands them over) whose arrival lies in
        [start, end); KPL aggregates are opened to their user records. Returns how many Kinesis records
        counted. One pass over the plain records, each second's figures added to its bucket at once:
        this runs for every record the sampler reads."""
        if not records:
            return 0
        arrival_of = record_arrival(records[0])
        bound = _bound_like(records[0])
        keys: list[str] = []
        append = keys.append
        key_bytes: dict[str, int] = {}
        wrapped: list[Mapping[str, Any]] = []
        total_bytes = keyless = 0
        # The second being added up (not yet in its bucket), and its bounds as the records give arrival
        # (datetimes from botocore): a record inside them needs no conversion, only two comparisons.
        current, in_second, bytes_in_second = -1, 0, 0
        low = high = bound(0)
        for record in records:
            data = record["Data"]
            if data and data[0] == MAGIC_FIRST and data[:4] == MAGIC:
                wrapped.append(record)
                continue
            arrival = record["ApproximateArrivalTimestamp"]
            if not low <= arrival < high:  # another second: its bounds, and the window checked
                seconds = arrival_of(arrival)
                if not start <= seconds < end:
                    continue
                second = int(seconds)
                if second != current:
                    if in_second:
                        self._add_to_second(current, in_second, bytes_in_second)
                        total_bytes += bytes_in_second
                    current, in_second, bytes_in_second = second, 0, 0
                    # Only a second wholly inside the window is taken by its bounds alone.
                    low, high = (
                        (bound(second), bound(second + 1)) if start <= second and second + 1 <= end else (low, low)
                    )
            key = record.get("PartitionKey")  # optional on an AUTO stream
            if key is None:
                keyless += 1
                size = len(data)
            else:
                size = len(data) + len(key.encode())
                append(key)
                key_bytes[key] = key_bytes.get(key, 0) + size
            in_second += 1
            bytes_in_second += size
        if in_second:
            self._add_to_second(current, in_second, bytes_in_second)
            total_bytes += bytes_in_second
        aggregates = split_page(wrapped)[1] if wrapped else ()
        return self._book(keys, key_bytes, total_bytes, keyless, aggregates, start, end)

    def _add_to_second(self, second: int, records: int, nbytes: int) -> None:
        bucket = self._buckets.get(second) or self._new_bucket(second)
        bucket[0] += records
        bucket[1] += nbytes
        bucket[2] += records

    def _book(
        self,
        keys: list[str],
        key_bytes: dict[str, int],
        total_bytes: int,
        keyless: int,
        aggregates: Iterable[Aggregate],
        start: float,
        end: float,
    ) -> int:
        """What a batch's plain records came to (their seconds already counted), with its aggregates:
        the totals, the top keys and the placement."""
        buckets = self._buckets
        outer_keys: list[str] = []
        inner_keys: list[str] = []
        aggregates_counted = 0
        for arrival, key, size, inner in [row for row in aggregates if start <= row[0] < end]:
            bucket = buckets.get(int(arrival)) or self._new_bucket(int(arrival))
            bucket[0] += 1  # one Kinesis record, its full size: what the shard limits count
            bucket[1] += size
            total_bytes += size
            aggregates_counted += 1
            if key is not None:  # a keyless aggregate (AUTO distribution) places nothing
                outer_keys.append(key)
            if inner is None:
                self.decode_errors += 1
                continue
            bucket[2] += len(inner)
            for inner_key, inner_size in inner:
                inner_keys.append(inner_key)
                key_bytes[inner_key] = key_bytes.get(inner_key, 0) + inner_size
        counted = len(keys) + keyless + aggregates_counted
        if not counted:
            return 0
        self.version += 1
        if aggregates_counted and self.by_placement is None:
            self.by_placement = self.by_records.copy()  # every record so far was plain: the same counts
        self.records += counted
        self.bytes += total_bytes
        self.keyless += keyless
        self.aggregates += aggregates_counted
        if aggregates_counted and self.by_placement is not None:  # set just above
            placing = keys + outer_keys
            self.user_records += len(keys) + keyless + len(inner_keys)
            self.by_records.add_many(keys + inner_keys if keys else inner_keys)
            self.by_inner.add_many(inner_keys)
            self.by_placement.add_many(placing)
        else:
            placing = keys
            self.user_records += len(keys) + keyless
            if keys:
                self.by_records.add_many(keys)
                if self.by_placement is not None:
                    self.by_placement.add_many(keys)
        if key_bytes:
            self.by_bytes.add_weights(key_bytes)
        if placing:
            self._place(Counter(placing))
        if self._latest != self._newest:
            self._newest = self._latest
            self._forget_before(self._newest - self.history_seconds)
        return counted

    def _new_bucket(self, second: int) -> list[int]:
        bucket = self._buckets[second] = [0, 0, 0]
        if second > self._latest:
            self._latest = second
        return bucket

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

    def utilisation_series(self, until_second: int, seconds: int) -> list[float]:
        """Utilisation of the shard limits per second, for the same seconds as `series`."""
        buckets = self._buckets
        return [
            utilisation(buckets[s][0], buckets[s][1]) if s in buckets else 0.0
            for s in range(until_second - seconds, until_second)
        ]

    def _series_tuple(
        self, until_second: int, seconds: int, made_by: Callable[[int, int], Sequence[Figure]]
    ) -> tuple[Figure, ...]:
        """A series for a snapshot; an idle stretch is one shared tuple of zeros per length (a
        10,000-shard view holds two series per shard, most of them idle)."""
        buckets = self._buckets
        if not buckets or not any(until_second - seconds <= second < until_second for second in buckets):
            return _zeros(seconds)
        return tuple(made_by(until_second, seconds))

    def recent_rates(self, first_second: int, until_second: int) -> tuple[float, float]:
        """Records/s and bytes/s over the last RECENT_SECONDS whole seconds before `until_second`
        (not before `first_second`); falls back to nothing-yet (0, 0) in the first second."""
        records, nbytes, _ = self.recent_rates_with_users(first_second, until_second)
        return records, nbytes

    def recent_rates_with_users(self, first_second: int, until_second: int) -> tuple[float, float, float]:
        """Kinesis records/s, bytes/s and user records/s over the last RECENT_SECONDS whole seconds."""
        begin = max(first_second, until_second - RECENT_SECONDS)
        seconds = until_second - begin
        if seconds <= 0:
            return 0.0, 0.0, 0.0
        buckets = self._buckets
        present = [buckets[s] for s in range(begin, until_second) if s in buckets]
        return (
            sum(bucket[0] for bucket in present) / seconds,
            sum(bucket[1] for bucket in present) / seconds,
            sum(bucket[2] for bucket in present) / seconds,
        )

    def split_suggestion(self) -> SplitSuggestion | None:
        start, end = self.shard.starting_hash_key, self.shard.ending_hash_key
        if self._histogram is None:  # nothing placed yet (not made for a snapshot: most shards are idle)
            return None
        placed = sum(self._histogram)
        if placed == 0 or end - start < 4:
            return None
        at, below = self._median_hash(placed)
        at = min(max(at, start + 2), end - 1)  # SplitShard needs start+1 < at < end
        dominant = self.by_records.top(1)
        dominant_key, dominant_share = None, 0.0
        if dominant and self.user_records:
            share = dominant[0].guaranteed / self.user_records
            if share >= DOMINANT_SHARE:
                dominant_key, dominant_share = dominant[0].key, share
        return SplitSuggestion(
            self.shard.shard_id,
            at,
            placed,
            dominant_key,
            dominant_share,
            below / placed,
            by_aggregates=self.aggregates > 0,
            dominant_aggregated=dominant_key is not None and dominant_key in self.by_inner,
        )

    def _median_hash(self, placed: int) -> tuple[int, float]:
        """The hash key that best halves the observed records, and the record count below it.

        The heaviest keys are point masses at their exact MD5 (a split can only put a key wholly on
        one side); the rest of each histogram bin is taken as spread evenly across the bin.
        """
        start = self.shard.starting_hash_key
        width = self.shard.ending_hash_key - start + 1
        atoms: dict[int, list[tuple[int, int]]] = {}
        # Point masses are keys that place records: with aggregates, their outer keys (never inner keys).
        placement = self.by_records if self.by_placement is None else self.by_placement
        for row in placement.top(MEDIAN_ATOMS):
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
            for hash_key, weight in [*points, (high, 0)]:
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

    def snapshot(
        self,
        window_start: float,
        window_end: float,
        *,
        top: int = 5,
        series_seconds: int = 60,
        is_open: bool = True,
        keys_place: bool = True,
        sampled_at: float | None = None,
    ) -> ShardHeatSnapshot:
        """`keys_place` False (an AUTO stream): keys say nothing about where records went, so no
        split at their median is suggested and no record counts as outside its key's range."""
        if not self.records and window_end <= window_start:
            return self._unread(is_open, sampled_at)
        window = max(window_end - window_start, 1e-9)
        records_per_s, bytes_per_s = self.records / window, self.bytes / window
        first_second, last_second = int(window_start), int(window_end)
        peak_records = peak_bytes = 0
        for second, (records, nbytes, _) in self._buckets.items():
            if first_second <= second <= last_second:
                peak_records = max(peak_records, records)
                peak_bytes = max(peak_bytes, nbytes)
        span = min(series_seconds, max(1, last_second - first_second))
        recent_records, recent_bytes, recent_users = self.recent_rates_with_users(first_second, last_second)
        # A shard without keys yet (idle, or keyless records only) gets no summaries made for its snapshot.
        top_keys = (
            tuple(self._top_key(row.key, row.count, row.guaranteed) for row in self.by_records.top(top))
            if self._by_records is not None
            else ()
        )
        by_bytes = (
            tuple(
                self._top_key(
                    row.key, self.by_records.count(row.key), self.by_records.guaranteed(row.key), nbytes=row.count
                )
                for row in self.by_bytes.top(top)
            )
            if self._by_bytes is not None
            else ()
        )
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
            series=self._series_tuple(last_second, span, self.series),
            utilisation_series=self._series_tuple(last_second, span, self.utilisation_series),
            top_keys=top_keys,
            top_keys_by_bytes=by_bytes,
            split=self.split_suggestion() if keys_place else None,
            unplaced_records=self.unplaced if keys_place else 0,
            key_error_bound=self._by_records.error_bound if self._by_records is not None else 0,
            is_open=is_open,
            user_records=self.user_records,
            user_records_per_s=self.user_records / window,
            recent_user_records_per_s=recent_users,
            aggregates=self.aggregates,
            decode_errors=self.decode_errors,
            keyless_records=self.keyless,
            sampled_at=sampled_at,
        )

    def _unread(self, is_open: bool, sampled_at: float | None) -> ShardHeatSnapshot:
        """The snapshot of a shard not read yet: nothing known (cheap: a 10,000-shard view starts so)."""
        shard = self.shard
        return ShardHeatSnapshot(
            shard.shard_id,
            shard.starting_hash_key,
            shard.ending_hash_key,
            0,
            0,
            0.0,
            0.0,
            0.0,
            0,
            0,
            0.0,
            0.0,
            0.0,
            0.0,
            (),
            (),
            (),
            None,
            0,
            0,
            is_open=is_open,
            sampled_at=sampled_at,
        )

    def _top_key(self, key: str, records: int, guaranteed: int, nbytes: int | None = None) -> TopKey:
        share = min(1.0, records / self.user_records) if self.user_records else 0.0
        return TopKey(
            key,
            records,
            share,
            guaranteed,
            self.by_bytes.count(key) if nbytes is None else nbytes,
            aggregated=key in self.by_inner,
        )
