"""Balanced key tree (what `kconsole keytree --count N --existing-file F` runs): next keys after
rehydrating random existing keys. Headline: absolute CPU seconds for 1M next keys (target < 10 s).

Secondary, a weak baseline kept for scale: the reference O(n) algorithm, which recomputes subtree
sizes on every step, so each next key walks the whole tree: O(n),
and with random 128-bit existing keys the tree holds ~113 placeholder nodes per key. The oracle is
that code transcribed (tests/test_keytree.py). It cannot hand out 100k keys in reasonable time, so
at n = 20k existing keys it hands out ORACLE_KEYS keys and we compare time per next key (its cost
only grows as the tree grows, so this understates our lead). `next_keys` plans a whole batch in
closed form; `next_key` one at a time is O(depth) and reported too. Targets: >= 100x faster per key at
n = 20k; 1M next keys in under 10 s.

    python tests/benchmarks/bench_keytree.py     # last line: one JSON document of figures
"""

from __future__ import annotations

import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

sys.setrecursionlimit(10_000)

from console.keyspace.keytree.tree import KeyTree  # noqa: E402
from tests.keyspace.test_keytree import SeedTree  # noqa: E402  (the oracle)

EXISTING = 100_000
NEXT = 100_000
ORACLE_EXISTING = 20_000
ORACLE_KEYS = 20
MILLION = 1_000_000


def cpu(fn, *args):
    """CPU seconds of one call (the machine is shared, wall time would measure the neighbours)."""
    gc.collect()
    started = time.process_time()
    result = fn(*args)
    return time.process_time() - started, result


def main() -> None:
    rng = random.Random(20181222)
    existing = [rng.getrandbits(128) for _ in range(EXISTING)]

    rehydrate_s, tree = cpu(KeyTree.rehydrate, existing)
    next_s, keys = cpu(tree.next_keys, NEXT)
    assert len(set(keys)) == NEXT and not set(keys) & set(existing)

    # n = 20k: ours per next key vs the reference algorithm's per next key, on the same existing keys.
    small = existing[:ORACLE_EXISTING]
    ours_small_rehydrate_s, ours_small = cpu(KeyTree.rehydrate, small)
    ours_small_next_s, ours_keys = cpu(ours_small.next_keys, ORACLE_EXISTING)
    one_by_one = KeyTree.rehydrate(small)
    one_by_one_s, one_by_one_keys = cpu(lambda: [one_by_one.next_key() for _ in range(ORACLE_EXISTING)])
    assert one_by_one_keys == ours_keys
    oracle_rehydrate_s, oracle = cpu(SeedTree, small)
    oracle_next_s, oracle_keys = cpu(lambda: [oracle.next_key() for _ in range(ORACLE_KEYS)])
    assert oracle_keys == ours_keys[:ORACLE_KEYS], "the oracle and the tree disagree"
    ours_per_key = ours_small_next_s / ORACLE_EXISTING
    oracle_per_key = oracle_next_s / ORACLE_KEYS
    oracle = None  # its tree is not needed for the million-key run

    million_empty_s, million = cpu(KeyTree().next_keys, MILLION)
    assert len(set(million)) == MILLION
    del million
    after = KeyTree.rehydrate(existing)
    million_after_s, _ = cpu(after.next_keys, MILLION)

    figures = {
        "benchmark": "keytree",
        "path": "KeyTree.rehydrate(existing).next_keys(n), as kconsole keytree runs it",
        "baseline": "none stronger known; secondary: the reference O(n) tree",
        "rehydrate_100k_s": round(rehydrate_s, 3),
        "next_100k_after_100k_s": round(next_s, 3),
        "n_oracle": ORACLE_EXISTING,
        "oracle_keys_timed": ORACLE_KEYS,
        "oracle_rehydrate_20k_s": round(oracle_rehydrate_s, 3),
        "oracle_s_per_next_key": round(oracle_per_key, 4),
        "ours_rehydrate_20k_s": round(ours_small_rehydrate_s, 3),
        "ours_us_per_next_key": round(ours_per_key * 1e6, 2),
        "ours_us_per_next_key_one_at_a_time": round(one_by_one_s / ORACLE_EXISTING * 1e6, 2),
        "secondary_ratio_vs_reference_tree": round(oracle_per_key / ours_per_key),
        "secondary_ratio_one_at_a_time": round(oracle_per_key / (one_by_one_s / ORACLE_EXISTING)),
        "next_1m_from_empty_s": round(million_empty_s, 2),
        "next_1m_after_100k_s": round(million_after_s, 2),
        "target_1m_s": 10,
    }
    print(
        f"100k next keys after rehydrating 100k: {rehydrate_s:.2f} s + {next_s:.2f} s; at n = 20k the reference tree takes "
        f"{oracle_per_key:.3f} s per next key, we take {ours_per_key * 1e6:.1f} us in a batch, "
        f"{one_by_one_s / ORACLE_EXISTING * 1e6:.1f} us one at a time ({oracle_per_key / ours_per_key:,.0f}x); 1M next keys: {million_empty_s:.2f} s from empty, "
        f"{million_after_s:.2f} s after 100k existing (CPU seconds)"
    )
    emit(figures)


if __name__ == "__main__":
    main()
