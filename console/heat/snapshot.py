"""What a heat reading reports: per-shard and per-stream snapshots, top keys, the split suggestion,
and utilisation against the shard write limits. Frozen values built by console.heat.rates, read by the
CLI and the heat panel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

SHARD_RECORDS_LIMIT = 1000  # records/s a shard accepts
SHARD_BYTES_LIMIT = 1024 * 1024  # bytes/s a shard accepts (data blob + partition key)
RECENT_SECONDS = 10  # the live view's "now": rates over the last whole seconds


def utilisation(records_per_s: float, bytes_per_s: float) -> float:
    """The larger of the two shares of a shard's write limits (1.0 = at the limit)."""
    return max(records_per_s / SHARD_RECORDS_LIMIT, bytes_per_s / SHARD_BYTES_LIMIT)


@dataclass(frozen=True, slots=True)
class TopKey:
    key: str
    records: int  # upper bound (Space-Saving count)
    share: float  # of the shard's observed records
    guaranteed_records: int
    bytes: int  # upper bound from the by-bytes summary
    aggregated: bool = False  # (some of) its records came out of KPL aggregates

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "share": round(self.share, 4),
            "guaranteed_records": self.guaranteed_records,
            "bytes": self.bytes,
            "aggregated": self.aggregated,
        }

    def with_key(self, rename: Callable[[str], str]) -> TopKey:
        return replace(self, key=rename(self.key))


@dataclass(frozen=True, slots=True)
class SplitSuggestion:
    """Where to split a hot shard so each child gets about half of its observed traffic."""

    shard_id: str
    at: int  # NewStartingHashKey: the median hash key of the observed records
    placed_records: int  # records whose key's MD5 falls in this shard (the histogram's basis)
    dominant_key: str | None  # a single key a split cannot divide (write-shard it instead)
    dominant_share: float
    lower_share: float = 0.5  # estimated share of the observed records below `at` (the lower child's)
    # The shard carried KPL aggregates: `at` halves the Kinesis records by where they land (outer keys),
    # since an aggregate moves whole; the keys inside it do not place it.
    by_aggregates: bool = False
    dominant_aggregated: bool = False  # the dominant key is a user key inside aggregates

    def with_keys(self, rename: Callable[[str], str]) -> SplitSuggestion:
        return replace(self, dominant_key=None if self.dominant_key is None else rename(self.dominant_key))

    @property
    def placement(self) -> str:
        """What the split point divides: 'aggregates' (outer keys) or 'partition keys'."""
        return "aggregates" if self.by_aggregates else "partition keys"

    def command(self, stream: str) -> str:
        return f"kconsole plan split {stream} --shard {self.shard_id} --at {self.at}"

    def to_json(self, stream: str | None = None) -> dict[str, Any]:
        doc = {
            "shard_id": self.shard_id,
            "at": str(self.at),
            "placed_records": self.placed_records,
            "lower_share": round(self.lower_share, 4),
            "placed_by": self.placement,
            "dominant_key": self.dominant_key,
            "dominant_share": round(self.dominant_share, 4),
            "dominant_aggregated": self.dominant_aggregated,
        }
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
    utilisation_series: tuple[float, ...] = ()  # per second, aligned with `series` (the heat map's cells)
    # User records: the plain records plus those inside KPL aggregates (= records without aggregates).
    user_records: int = 0
    user_records_per_s: float = 0.0
    recent_user_records_per_s: float = 0.0
    aggregates: int = 0  # Kinesis records that were KPL aggregates
    decode_errors: int = 0  # malformed aggregates (counted as Kinesis records, no user records)
    keyless_records: int = 0  # sent without a partition key (AUTO distribution): load, but no key
    # Up to when the shard was read (epoch seconds; None: not yet). A view that samples a bounded set
    # of shards per second reads each in turn: its figures end here, and are as old as this is.
    sampled_at: float | None = None

    def with_keys(self, rename: Callable[[str], str]) -> ShardHeatSnapshot:
        """The same figures with every partition key shown through `rename` (masking)."""
        return replace(
            self,
            top_keys=tuple(row.with_key(rename) for row in self.top_keys),
            top_keys_by_bytes=tuple(row.with_key(rename) for row in self.top_keys_by_bytes),
            split=self.split.with_keys(rename) if self.split else None,
        )

    @property
    def recent_utilisation(self) -> float:
        """Utilisation over the last RECENT_SECONDS: what a live view should colour by."""
        return utilisation(self.recent_records_per_s, self.recent_bytes_per_s)

    def to_json(self, stream: str | None = None) -> dict[str, Any]:
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
            "user_records": self.user_records,
            "user_records_per_s": round(self.user_records_per_s, 3),
            "recent_user_records_per_s": round(self.recent_user_records_per_s, 3),
            "aggregates": self.aggregates,
            "decode_errors": self.decode_errors,
            "top_keys": [row.to_json() for row in self.top_keys],
            "top_keys_by_bytes": [row.to_json() for row in self.top_keys_by_bytes],
            "key_error_bound": self.key_error_bound,
            "unplaced_records": self.unplaced_records,
            "keyless_records": self.keyless_records,
            "split": self.split.to_json(stream) if self.split else None,
            "series": list(self.series),
        }


@dataclass(frozen=True, slots=True)
class StreamHeatSnapshot:
    stream: str
    window_start: float
    window_end: float
    shards: tuple[ShardHeatSnapshot, ...]  # key-space order
    # AUTO: the service spread the records, not their keys: top keys are only the keys as sent,
    # and no split is suggested by them.
    auto_distribution: bool = False

    def with_keys(self, rename: Callable[[str], str]) -> StreamHeatSnapshot:
        """The same figures with every partition key shown through `rename` (masking)."""
        return replace(self, shards=tuple(shard.with_keys(rename) for shard in self.shards))

    @property
    def records_per_s(self) -> float:
        return sum(shard.records_per_s for shard in self.shards)

    @property
    def bytes_per_s(self) -> float:
        return sum(shard.bytes_per_s for shard in self.shards)

    @property
    def user_records_per_s(self) -> float:
        return sum(shard.user_records_per_s for shard in self.shards)

    @property
    def aggregates(self) -> int:
        return sum(shard.aggregates for shard in self.shards)

    @property
    def decode_errors(self) -> int:
        return sum(shard.decode_errors for shard in self.shards)

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

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "window_seconds": round(self.window_end - self.window_start, 3),
            "records_per_s": round(self.records_per_s, 3),
            "bytes_per_s": round(self.bytes_per_s, 3),
            "user_records_per_s": round(self.user_records_per_s, 3),
            "aggregates": self.aggregates,
            "decode_errors": self.decode_errors,
            "limits": {"records_per_s": SHARD_RECORDS_LIMIT, "bytes_per_s": SHARD_BYTES_LIMIT},
            "hottest_shard": self.hottest.shard_id if self.hottest else None,
            "record_distribution": "AUTO" if self.auto_distribution else "USER_PARTITION_KEY",
            "keyless_records": sum(shard.keyless_records for shard in self.shards),
            "shards": [shard.to_json(self.stream) for shard in self.shards],
        }
