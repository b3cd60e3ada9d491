"""Benchmark: planning big reshards with key movement for 1M sample keys.

    python tests/benchmarks/bench_plan.py

1. rescale 5,000 -> 10,000 open shards (UpdateShardCount model) with movement of 1M keys;
2. "make even" on 2,000 uneven shards (explicit splits and merges) with movement of 1M keys.
Target: each under 2 s. Baseline, measured in the same run: the naive per-key computation (a linear
scan over the shards for each key, before and after) on a 2,000-key subsample, scaled to 1M keys.
Preparing the sample (MD5 of every key, then one sort) is timed separately: it happens once when
keys are loaded and every later plan reuses it; both plans here share one sample.
The last line printed is one JSON document of figures.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.keyspace.hashkeys import MAX_HASH_KEY, even_split, shard_id_for_index, md5_hash_key  # noqa: E402
from console.topology.model import Shard  # noqa: E402
from console.reshard.plan import KeySample, plan_even, plan_scale  # noqa: E402

KEYS = 1_000_000
BASELINE_KEYS = 2_000
TARGET_SECONDS = 2.0


def even_stream(count: int) -> list[Shard]:
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count))]


def uneven_stream(count: int, rng: random.Random) -> list[Shard]:
    cuts = sorted({rng.getrandbits(64) or 1 for _ in range(count - 1)})
    assert len(cuts) == count - 1
    starts = [0] + [c << 64 for c in cuts]
    ends = [s - 1 for s in starts[1:]] + [MAX_HASH_KEY]
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(zip(starts, ends))]


def naive_moves(before: list[Shard], after_ranges: list[tuple[int, int]], hashes: list[int]) -> int:
    """The obvious way: for every key scan the shard lists for its owner before and after."""
    kept = set(after_ranges)
    moved = 0
    for h in hashes:
        old = next(s for s in before if s.starting_hash_key <= h <= s.ending_hash_key)
        if (old.starting_hash_key, old.ending_hash_key) not in kept:
            next(r for r in after_ranges if r[0] <= h <= r[1])
            moved += 1
    return moved


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def main() -> None:
    rng = random.Random(20261122)
    keys = [f"user-{rng.getrandbits(40):x}-{i}" for i in range(KEYS)]
    sample, hash_seconds = timed(lambda: KeySample(keys, [md5_hash_key(k) for k in keys]))

    scale_before = even_stream(5_000)
    scale_plan, scale_seconds = timed(lambda: plan_scale(scale_before, 10_000, sample=sample))
    even_before = uneven_stream(2_000, rng)
    even_plan, even_seconds = timed(lambda: plan_even(even_before, sample=sample))

    subsample = sample.hash_keys[:BASELINE_KEYS]
    naive_scale, naive_scale_seconds = timed(lambda: naive_moves(scale_before, [s.range for s in scale_plan.after], subsample))
    naive_even, naive_even_seconds = timed(lambda: naive_moves(even_before, [s.range for s in even_plan.after], subsample))
    # The fast path must agree with the naive one on the subsample.
    fast_scale = plan_scale(scale_before, 10_000, sample=KeySample(keys[:BASELINE_KEYS], subsample)).key_movement.moved
    fast_even = plan_even(even_before, sample=KeySample(keys[:BASELINE_KEYS], subsample)).key_movement.moved
    assert (fast_scale, fast_even) == (naive_scale, naive_even), "fast and naive movement disagree"

    scale_naive_1m = naive_scale_seconds * KEYS / BASELINE_KEYS
    even_naive_1m = naive_even_seconds * KEYS / BASELINE_KEYS
    print(f"prepare 1M keys (md5 + sort, once): {hash_seconds:.2f} s")
    print(f"rescale 5000 -> 10000: {scale_seconds:.2f} s ({scale_plan.split_steps} splits, "
          f"{scale_plan.merge_steps} merges, {scale_plan.short_lived_shards} short-lived; "
          f"{scale_plan.key_movement.moved} keys move); naive est. {scale_naive_1m:.0f} s")
    print(f"make even on 2000 uneven: {even_seconds:.2f} s ({len(even_plan.operations)} calls, "
          f"{even_plan.key_movement.moved} keys move); naive est. {even_naive_1m:.0f} s")
    figures = {
        "bench": "plan",
        "keys": KEYS,
        "prepare_sample_seconds": round(hash_seconds, 3),
        "scale_5000_to_10000_seconds": round(scale_seconds, 3),
        "even_2000_seconds": round(even_seconds, 3),
        "naive_scale_seconds_est": round(scale_naive_1m, 1),
        "naive_even_seconds_est": round(even_naive_1m, 1),
        "target_seconds": TARGET_SECONDS,
        "within_target": scale_seconds < TARGET_SECONDS and even_seconds < TARGET_SECONDS,
        "ratio": round((scale_naive_1m + even_naive_1m) / (scale_seconds + even_seconds), 1),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
