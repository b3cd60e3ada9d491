"""Lag for 1,000 leased shards on the embedded local Kinesis: `kconsole consumers STREAM --lease-table T`
against a sequential per-shard loop.

One 1,000-shard stream; a KCL lease table (items as the KCL writes them) with one lease per shard,
checkpointed at TRIM_HORIZON; 3 records on every shard and 12,000 on two of them (a consumer far
behind). Both sides run through the same KinesisBackend (aiobotocore), in the same run:
(a) baseline: for each lease in turn, GetShardIterator from the checkpoint and GetRecords to the tip,
    counting every record (the loop one writes by hand);
(b) kconsole: console.consumers.look.consumer_report, exactly what the command calls: the lease
    table's scan, EFO consumers, the shard list, then every shard read in parallel (paced per shard)
    up to the 10,000-record scan cap.
Each side runs ROUNDS times, alternating which goes first; the best round of each counts. The counts
must agree (the far-behind shards read as over the cap by kconsole, exact by the baseline).
Target: (b) < 2 s. Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

from console.backend import BackendConfig, open_backend
from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.look import consumer_report, read_leases
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items

SHARDS = 1000
RECORDS_PER_SHARD = 3
FAR_BEHIND = 12_000  # on two shards: over the scan cap
ROUNDS = 2
TARGET_SECONDS = 2.0


async def sequential_loop(kinesis, stream: str, table: str) -> dict[str, int]:
    leases = await read_leases(kinesis, table, stream)
    behind = {}
    for lease in leases:
        iterator = await kinesis.get_shard_iterator(stream, lease.shard_id, "TRIM_HORIZON")
        count = 0
        while iterator:
            page = await kinesis.get_records(iterator)
            count += len(page["Records"])
            iterator = page.get("NextShardIterator")
            if page.get("MillisBehindLatest") == 0:
                break
        behind[lease.shard_id] = count
    return behind


async def setup(kinesis, endpoint_url: str) -> tuple[str, str]:
    stream = "bench-consumers"
    await kinesis.ensure_stream(stream, SHARDS)
    shards = await kinesis.all_shards(stream)
    records = [
        {"Data": b"payload-%d" % i, "PartitionKey": "k", "ExplicitHashKey": shard.starting_hash_key}
        for shard in shards
        for i in range(RECORDS_PER_SHARD)
    ]
    records += [
        {"Data": b"x" * 16, "PartitionKey": "hot", "ExplicitHashKey": shard.starting_hash_key}
        for shard in shards[:2]
        for _ in range(FAR_BEHIND)
    ]
    for offset in range(0, len(records), 500):
        await kinesis.put_records(stream, records[offset : offset + 500])
    async with dynamodb(endpoint_url) as client:
        table = await create_lease_table(client, "bench-consumers-leases")
        await put_items(client, table, [kcl_lease(shard.shard_id) for shard in shards])
    return stream, table


async def main() -> dict:
    async with open_backend(BackendConfig(kind="local")) as kinesis:
        stream, table = await setup(kinesis, kinesis.endpoint_url)
        await consumer_report(kinesis, stream, lease_table=table)  # warm-up: server code paths, clients
        loops, ours = [], []
        expected = report = None
        for round_index in range(ROUNDS):

            async def run_loop():
                started = time.perf_counter()
                result = await sequential_loop(kinesis, stream, table)
                loops.append(time.perf_counter() - started)
                return result

            async def run_ours():
                started = time.perf_counter()
                result = await consumer_report(kinesis, stream, lease_table=table)
                ours.append(time.perf_counter() - started)
                return result

            if round_index % 2:
                report, expected = await run_ours(), await run_loop()
            else:
                expected, report = await run_loop(), await run_ours()
            print(f"round: sequential loop {loops[-1]:.2f} s, kconsole {ours[-1]:.2f} s", file=sys.stderr)
    for row in report.rows:
        exact = expected[row.shard_id]
        assert row.records_behind == exact if exact <= DEFAULT_SCAN_CAP else row.records_behind is None, row
    assert len(report.rows) == SHARDS
    best_loop, best_ours = min(loops), min(ours)
    return {
        "bench": "consumers",
        "leased_shards": SHARDS,
        "records_behind_total": sum(expected.values()),
        "scan_cap": DEFAULT_SCAN_CAP,
        "sequential_loop_s": round(best_loop, 3),
        "kconsole_s": round(best_ours, 3),
        "ratio": round(best_loop / best_ours, 2),
        "round_seconds": [[round(a, 2), round(b, 2)] for a, b in zip(loops, ours)],
        "targets": {"kconsole_s": TARGET_SECONDS},
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    emit(figures)
