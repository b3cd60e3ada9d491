"""What a sample of partition keys says about a reshard: the split key at the sample's median, and
which sampled keys land on another shard after the change."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from itertools import compress

from console.errors import BadInput
from console.keyspace.hashkeys import owners_among
from console.reshard.model import MAX_LISTED_MOVES, KeyMove, KeyMovement, KeySample, MedianSplit, PlannedShard
from console.topology.model import Shard

# How much of a stream's recent traffic --at-median-of-recent reads (console.reshard.execute).
DEFAULT_SAMPLE_SECONDS = 300.0
DEFAULT_SAMPLE_LIMIT = 10_000


def median_split(shard: Shard, sample: KeySample, source: str = "the sample", unit: str = "keys") -> MedianSplit:
    """The split key that divides the sample entries hashing into `shard` as evenly as possible.

    Entries are weighted one each, so a key seen in 500 records pulls the median 500 times: this
    divides observed traffic, not key counts. Many entries can share one hash key (a hot partition
    key), and a split cannot cut through one hash key, so the best lower-child count is either the
    number of entries below the median's hash key or the number up to and including it. The key
    itself is put halfway into the gap between the two neighbouring sampled hash keys rather than
    on the upper one, so unseen keys near the boundary are not all pushed to one side.
    """
    entries = sorted((h, k) for h, k in zip(sample.hash_keys, _keys_or_hashes(sample)) if shard.contains(h))
    inside = [h for h, _ in entries]
    total = len(inside)
    if total < 2:
        raise BadInput(
            f"{total} of the {len(sample)} sampled {unit} fall in {shard.shard_id}; need at least 2 to find a median",
            code="too_few_keys",
        )
    middle = inside[total // 2]
    first, after = bisect.bisect_left(inside, middle), bisect.bisect_right(inside, middle)
    candidates = [first, after]
    lower = min((c for c in candidates if 0 < c < total), key=lambda c: abs(2 * c - total), default=None)
    if lower is None:
        raise BadInput(
            f"all {total} sampled {unit} in {shard.shard_id} have the same hash key (partition key "
            f"{str(entries[0][1])!r}); no split key divides them",
            code="one_hash_key",
        )
    below, above = inside[lower - 1], inside[lower]
    key = below + (above - below + 1) // 2  # below < key <= above, so exactly `lower` entries fall below it
    uncut = (str(entries[first][1]), after - first) if abs(2 * lower - total) > 1 else (None, 0)
    return MedianSplit(
        shard.shard_id,
        key,
        source,
        len(sample),
        total,
        len({k for _, k in entries}),
        lower,
        total - lower,
        unit,
        *uncut,
    )


def _keys_or_hashes(sample: KeySample) -> Sequence[str | int]:
    """Partition keys to count distinct ones by; hash keys where a sample carries no keys."""
    return sample.keys if len(sample.keys) == len(sample.hash_keys) else sample.hash_keys


def median_hash_key(shard: Shard, sample: KeySample) -> int:
    """The split key that puts half of the sample keys falling in `shard` on each side."""
    return median_split(shard, sample).key


def key_movement(
    before: Sequence[Shard], after: Sequence[PlannedShard], sample: KeySample | None
) -> KeyMovement | None:
    """Which sample keys land on another shard after the change, and where.

    A key moves when the shard that serves it is replaced: its before-shard's range is not an open
    range afterwards. The before and after boundaries together cut the key space into at most N+M
    segments, each inside exactly one before-shard and one after-shard. Each key's segment comes from
    one table lookup (owners_among), the counts per segment from one Counter, and the listed moves
    (the first in key order) from the few segments that hold them: no sort of the whole sample.
    """
    if sample is None:
        return None
    before_ends = [s.ending_hash_key for s in before]
    after_ends = [s.ending_hash_key for s in after]
    after_ranges = {s.range for s in after}
    changed = [(s.starting_hash_key, s.ending_hash_key) not in after_ranges for s in before]
    ends = sorted(set(before_ends) | set(after_ends))
    segments = owners_among(ends, sample.hash_keys)
    per_segment = Counter(segments)
    per_route: Counter[tuple[int, int]] = Counter()
    listed_segments: list[int] = []  # the first segments whose keys move, until they hold enough to list
    to_list = 0
    for segment in sorted(per_segment):
        end = ends[segment]
        old = bisect.bisect_left(before_ends, end)
        if changed[old]:
            per_route[(old, bisect.bisect_left(after_ends, end))] += per_segment[segment]
            if to_list < MAX_LISTED_MOVES:
                listed_segments.append(segment)
                to_list += per_segment[segment]
    moves: list[KeyMove] = []
    if listed_segments:
        last, hash_keys, keys = listed_segments[-1], sample.hash_keys, sample.keys
        wanted = set(listed_segments)
        # In key order, ties in sample order: what a sort of the whole sample would list first. Segments
        # follow hash-key order, so the keys up to the last listed segment are those at or below its
        # end: found in one C-level pass over the sample rather than a Python loop over every key.
        below = compress(range(len(hash_keys)), map(ends[last].__ge__, hash_keys))
        first = sorted((hash_keys[position], position) for position in below if segments[position] in wanted)
        for hash_key, position in first[:MAX_LISTED_MOVES]:
            end = ends[segments[position]]
            old, new = bisect.bisect_left(before_ends, end), bisect.bisect_left(after_ends, end)
            moves.append(
                KeyMove(
                    keys[position] if position < len(keys) else "",
                    hash_key,
                    before[old].shard_id,
                    after[new].shard_id,
                    new,
                )
            )
    routes = tuple(
        (before[o].shard_id, after[n].shard_id, n, count)
        for (o, n), count in sorted(per_route.items(), key=lambda item: (-item[1], item[0]))
    )
    return KeyMovement(len(sample.hash_keys), sum(per_route.values()), routes, tuple(moves))
