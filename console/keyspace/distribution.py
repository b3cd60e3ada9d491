"""How evenly items spread over buckets (shards, suffixes): counts, shares and the max/mean skew.

Used by `kconsole predict` / `spread` and the UI's placement panel. A skew of 1.0 is perfectly
even; the partition keys "1".."14" on 2 shards (3 vs 11) give 11 / 7 = 1.57.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

# Plain classes, not dataclasses: `kconsole predict` starts without importing dataclasses (and inspect).


class BucketCount:
    __slots__ = ("label", "index", "count", "share", "expected_share")

    def __init__(self, label: str, index: int, count: int, share: float, expected_share: float) -> None:
        self.label = label  # a shard id, or a suffix
        self.index = index  # position in key-space order (shards) or the suffix number
        self.count = count
        self.share = share  # of all items; 0.0 when there are none
        self.expected_share = (
            expected_share  # what an even spread would give this bucket (its key-space share for shards)
        )

    def __eq__(self, other: object) -> bool:
        return self.to_json() == other.to_json() if isinstance(other, BucketCount) else NotImplemented

    def __repr__(self) -> str:
        return f"BucketCount({self.label!r}, count={self.count})"

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "index": self.index,
            "count": self.count,
            "share": self.share,
            "expected_share": self.expected_share,
        }


class Distribution:
    __slots__ = ("buckets", "total")

    def __init__(self, buckets: tuple[BucketCount, ...], total: int) -> None:
        self.buckets = buckets
        self.total = total

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Distribution):
            return NotImplemented
        return (self.buckets, self.total) == (other.buckets, other.total)

    def __repr__(self) -> str:
        return f"Distribution(total={self.total}, buckets={list(self.buckets)!r})"

    @property
    def max_count(self) -> int:
        return max((b.count for b in self.buckets), default=0)

    @property
    def min_count(self) -> int:
        return min((b.count for b in self.buckets), default=0)

    @property
    def mean(self) -> float:
        return self.total / len(self.buckets) if self.buckets else 0.0

    @property
    def skew(self) -> float:
        """max / mean over every bucket, empty ones included (1.0 = even; 0.0 with no items)."""
        return self.max_count / self.mean if self.total else 0.0

    @property
    def empty_buckets(self) -> int:
        return sum(1 for b in self.buckets if not b.count)

    @property
    def busiest(self) -> BucketCount | None:
        return max(self.buckets, key=lambda b: (b.count, -b.index), default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "buckets": [b.to_json() for b in self.buckets],
            "max": self.max_count,
            "min": self.min_count,
            "mean": self.mean,
            "skew": self.skew,
            "empty_buckets": self.empty_buckets,
        }


def summarize(
    labels: Sequence[str],
    counts: Sequence[int],
    expected_shares: Sequence[float] | None = None,
) -> Distribution:
    """A distribution over buckets named `labels` (in their order) holding `counts` items."""
    if len(labels) != len(counts):
        raise ValueError("one count per label")
    total = sum(counts)
    if expected_shares is None:
        expected_shares = [1 / len(labels)] * len(labels) if labels else []
    buckets = tuple(
        BucketCount(label=label, index=i, count=count, share=count / total if total else 0.0, expected_share=expected)
        for i, (label, count, expected) in enumerate(zip(labels, counts, expected_shares))
    )
    return Distribution(buckets=buckets, total=total)


def count_indices(indices: Iterable[int], bucket_count: int) -> list[int]:
    """How many of `indices` fall on each of 0 .. bucket_count-1."""
    tally = Counter(indices)
    return [tally.get(i, 0) for i in range(bucket_count)]


def format_distribution(
    dist: Distribution, *, noun: str = "keys", bucket_noun: str = "shards", bar_width: int = 30, max_rows: int = 32
) -> str:
    """A text table with a bar per bucket and a one-line verdict. Long tables keep their busiest and
    emptiest rows, so the skew still shows."""
    buckets = list(dist.buckets)
    elided = 0
    if len(buckets) > max_rows:
        by_load = sorted(buckets, key=lambda b: (-b.count, b.index))
        emptiest = max_rows // 4
        keep = {b.index for b in by_load[: max_rows - emptiest]} | {b.index for b in by_load[-emptiest:]}
        elided = len(buckets) - len(keep)
        buckets = [b for b in buckets if b.index in keep]
    label_header = _SINGULAR.get(bucket_noun, bucket_noun).upper()
    width = max([len(label_header)] + [len(b.label) for b in buckets])
    count_width = max(len(noun), len(str(dist.max_count)))
    peak = max(dist.max_count, 1)
    lines = [f"{label_header:<{width}}  {noun.upper():>{count_width}}   SHARE    EVEN"]
    for b in buckets:
        bar = "#" * round(b.count / peak * bar_width)
        lines.append(
            f"{b.label:<{width}}  {b.count:>{count_width}}  {b.share:6.1%}  {b.expected_share:6.1%}  {bar}".rstrip()
        )
    if elided:
        lines.append(f"... {elided} more {bucket_noun} not shown (the busiest and the emptiest are)")
    lines.append(
        f"{dist.total} {noun} on {len(dist.buckets)} {bucket_noun}: max {dist.max_count}, min {dist.min_count}, "
        f"mean {dist.mean:.1f}, max/mean skew {dist.skew:.2f}"
        + (f", {dist.empty_buckets} empty" if dist.empty_buckets else "")
    )
    return "\n".join(lines)


_SINGULAR = {"shards": "shard", "suffixes": "suffix"}
