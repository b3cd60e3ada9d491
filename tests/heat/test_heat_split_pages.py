"""The heat sampler reads a closed shard to its end and follows its children when GetRecords hands back
empty pages with more to come before the records (tests/split_pages.py)."""

from __future__ import annotations

import asyncio
import time

from console.heat.sampler import HeatSampler
from tests.split_pages import SplitPages


async def test_sampler_counts_the_parents_last_records_and_follows_the_children(kinesis, make_stream):
    stream = await make_stream(shards=1)
    parent = (await kinesis.all_shards(stream))[0]
    pages = SplitPages({parent.shard_id}, empty_pages=2).install(kinesis)
    sampler = HeatSampler(kinesis, stream, reads_per_second=1, drain_grace=0.5)  # 1 s between reads: time to split
    await sampler.start()
    await kinesis.put_records(stream, [{"Data": b"before", "PartitionKey": f"b{i}"} for i in range(30)])
    await kinesis.split_shard(stream, parent.shard_id, (parent.starting_hash_key + parent.ending_hash_key) // 2)
    await kinesis.wait_for_active(stream)
    deadline = time.monotonic() + 20
    while len(sampler.heat.shards) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    await kinesis.put_records(stream, [{"Data": b"after", "PartitionKey": f"a{i}"} for i in range(40)])
    while sum(shard.records for shard in sampler.heat.shards.values()) < 70 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    snapshot = await sampler.stop()

    assert pages.empty_pages_given >= 2
    by_id = {shard.shard_id: shard for shard in snapshot.shards}
    assert by_id[parent.shard_id].records == 30 and sampler.closed_shards == [parent.shard_id]
    assert sum(shard.records for shard_id, shard in by_id.items() if shard_id != parent.shard_id) == 40
