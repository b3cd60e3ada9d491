"""Shard map on a 10,000-shard listing served by an injected transport, 1,000 shards a page.

Measures a full refresh (paging, parsing, index, lineage: what the producer's shard map does on
every reshard) in wall and CPU time; target under 0.5 s CPU. Predictions per second are reported
with a linear scan over the same shards as a secondary, weak baseline kept for scale.

    python tests/benchmarks/bench_shardmap.py     # last line: one JSON document of figures
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

from console.keyspace.hashkeys import HASH_SPACE, even_split, shard_id_for_index
from console.topology.shardmap import ShardMap

SHARDS = 10_000
PAGE = 1_000
REFRESHES = 5
PREDICT_KEYS = 200_000
LINEAR_KEYS = 2_000


def listing(count: int) -> list[dict]:
    """`count` open shards tiling the key space, each naming a parent (trimmed, as after many reshards)."""
    return [
        {
            "ShardId": shard_id_for_index(count + i),
            "ParentShardId": shard_id_for_index(i // 2),
            "HashKeyRange": {"StartingHashKey": str(start), "EndingHashKey": str(end)},
            "SequenceNumberRange": {"StartingSequenceNumber": str(49_600_000_000_000_000_000_000_000_000 + i)},
        }
        for i, (start, end) in enumerate(even_split(count))
    ]


def paged_transport(shards: list[dict], page_size: int):
    async def list_shards(**kwargs) -> dict:
        begin = int(kwargs.get("NextToken", 0))
        page = {"Shards": shards[begin : begin + page_size]}
        if begin + page_size < len(shards):
            page["NextToken"] = str(begin + page_size)
        return page

    return list_shards


def linear_owner(rows: list[tuple[int, int, str]], hash_key: int) -> str | None:
    for start, end, shard_id in rows:
        if start <= hash_key <= end:
            return shard_id
    return None


async def main() -> dict:
    raw = listing(SHARDS)
    random.Random(7).shuffle(raw)  # servers list in creation order, not key order
    async with ShardMap("bench", paged_transport(raw, PAGE)) as shard_map:
        await shard_map.wait_ready(timeout=30)
        walls, cpus = [], []
        for _ in range(REFRESHES):
            wall, cpu = time.perf_counter(), time.process_time()
            snapshot = await shard_map.refresh()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert len(snapshot.open_shards) == SHARDS and snapshot.problem is None

        rng = random.Random(11)
        keys = [rng.randrange(HASH_SPACE) for _ in range(PREDICT_KEYS)]
        predict = shard_map.predict
        started = time.perf_counter()
        predicted = [predict(h) for h in keys]
        predict_rate = PREDICT_KEYS / (time.perf_counter() - started)

        rows = [(s.starting_hash_key, s.ending_hash_key, s.shard_id) for s in snapshot.shards]
        sample = keys[:LINEAR_KEYS]
        started = time.perf_counter()
        scanned = [linear_owner(rows, h) for h in sample]
        linear_rate = LINEAR_KEYS / (time.perf_counter() - started)
        assert scanned == predicted[:LINEAR_KEYS], "bisect and linear scan disagree"

    refresh_cpu = statistics.median(cpus)
    ratio = predict_rate / linear_rate
    return {
        "benchmark": "shardmap",
        "path": "ShardMap full refresh of a 10k-shard listing (1,000 a page) and ShardMap.predict",
        "baseline": "target: 0.5 s CPU per refresh; secondary: a linear scan for prediction",
        "shards": SHARDS,
        "page_size": PAGE,
        "refresh_wall_s": round(statistics.median(walls), 4),
        "refresh_cpu_s": round(refresh_cpu, 4),
        "refresh_cpu_max_s": round(max(cpus), 4),
        "predict_per_s": round(predict_rate),
        "linear_scan_per_s": round(linear_rate),
        "secondary_ratio_vs_linear_scan": round(ratio, 1),
        "refresh_target_met": refresh_cpu < 0.5,
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    print(
        f"full refresh of {SHARDS} shards: {figures['refresh_cpu_s']} s CPU (target < 0.5 s); "
        f"predict {figures['predict_per_s']:,}/s vs linear {figures['linear_scan_per_s']:,}/s"
    )
    emit(figures)
