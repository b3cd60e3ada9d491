"""`kconsole copy` end to end against a raw read-then-PutRecords loop, on the embedded local Kinesis.

Source: a 4-shard stream holding RECORDS records of ~200 bytes under 1,000 partition keys. Each run copies
all of it into a fresh 4-shard stream (so no run writes into a stream another run already filled).

- copy: `kconsole copy SRC DST --from trim-horizon --to now --yes` as a process: reading every source shard
  concurrently, the ordered producer (one record in flight per key, 8 requests in flight, up to 500 records
  each), the checkpoint written after every chunk.
- baseline (this file run with --baseline): a process with one aiobotocore client that reads every shard
  concurrently into memory, then sends the records in 500-record PutRecords requests from 8 tasks, with no
  ordering rule, no retries and no bookkeeping: the fastest a plain Python copy is here.
After one warm-up of each, rounds alternate which goes first; the fastest of each side counts.
Target: copy >= 0.8x the baseline's records per second (`ratio`).

    python tests/benchmarks/bench_copy.py [--records N] [--rounds R]

Prints one JSON line of figures last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

RECORDS = 100_000
ROUNDS = 3
SHARDS = 4
KEYS = 1000
SOURCE = "bench-copy-source"
TASKS = 8
BATCH = 500


def payload(index: int) -> bytes:
    return json.dumps(
        {
            "event_id": f"evt-{index:010d}",
            "user": f"user-{index % 9973:05d}",
            "type": "page_view",
            "amount": round((index * 7919) % 100000 / 100, 2),
            "ua": "Mozilla/5.0 (X11; Linux x86_64)",
            "tags": ["a", "b", "c"],
        }
    ).encode()


async def fill(endpoint: str, records: int, destinations: list[str]) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        for stream in [SOURCE, *destinations]:
            await kinesis.ensure_stream(stream, SHARDS)
        starts = iter(range(0, records, BATCH))

        async def task() -> None:
            for start in starts:
                batch = [
                    {"Data": payload(i), "PartitionKey": f"key-{i % KEYS}"}
                    for i in range(start, min(records, start + BATCH))
                ]
                response = await kinesis.put_records(SOURCE, batch)
                assert not response.get("FailedRecordCount")

        await asyncio.gather(*(task() for _ in range(TASKS)))


async def count(endpoint: str, stream: str) -> int:
    from console.backend import BackendConfig, open_backend

    total = 0
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        for shard in await kinesis.all_shards(stream):
            iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
            while iterator:
                page = await kinesis.get_records(iterator)
                total += len(page["Records"])
                iterator = page.get("NextShardIterator")
                if not page["Records"]:
                    break
    return total


async def baseline_copy(endpoint: str, destination: str) -> None:
    from aiobotocore.session import get_session

    async with get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    ) as client:
        shards = (await client.list_shards(StreamName=SOURCE))["Shards"]
        records: list[dict] = []

        async def read(shard_id: str) -> None:
            iterator = (
                await client.get_shard_iterator(StreamName=SOURCE, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")
            )["ShardIterator"]
            while iterator:
                page = await client.get_records(ShardIterator=iterator, Limit=10_000)
                records.extend({"Data": r["Data"], "PartitionKey": r["PartitionKey"]} for r in page["Records"])
                iterator = page.get("NextShardIterator")
                if page.get("MillisBehindLatest") == 0 and len(page["Records"]) < 10_000:
                    break

        await asyncio.gather(*(read(shard["ShardId"]) for shard in shards))
        starts = iter(range(0, len(records), BATCH))

        async def send() -> None:
            for start in starts:
                response = await client.put_records(StreamName=destination, Records=records[start : start + BATCH])
                assert not response.get("FailedRecordCount")

        await asyncio.gather(*(send() for _ in range(TASKS)))


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])} ... failed: {result.stderr.decode()[-500:]}")
    return time.perf_counter() - started


def main() -> None:
    import tempfile

    from console.localserver.supervision import LocalKinesisServer
    from tests.benchmarks._measure import kconsole_command

    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--baseline", metavar="DST")
    parser.add_argument("--endpoint")
    options = parser.parse_args()
    if options.baseline:
        asyncio.run(baseline_copy(options.endpoint, options.baseline))
        return
    runs = options.rounds + 1
    copies = [f"bench-copy-{n}" for n in range(runs)]
    plains = [f"bench-plain-{n}" for n in range(runs)]
    me = [sys.executable, str(Path(__file__).resolve())]
    with LocalKinesisServer() as server, tempfile.TemporaryDirectory() as folder:
        endpoint = server.endpoint_url
        asyncio.run(fill(endpoint, options.records, copies + plains))
        common = ["--endpoint-url", endpoint, "--region", "us-east-1"]

        def copy(n: int) -> float:
            return timed(
                [
                    *kconsole_command(),
                    "copy",
                    SOURCE,
                    copies[n],
                    "--from",
                    "trim-horizon",
                    "--to",
                    "now",
                    "--yes",
                    "--checkpoint",
                    f"{folder}/copy-{n}.json",
                    *common,
                ]
            )

        def plain(n: int) -> float:
            return timed([*me, "--baseline", plains[n], "--endpoint", endpoint])

        copy(0), plain(0)  # warm-up
        copy_times, plain_times = [], []
        for n in range(1, runs):
            if n % 2:
                copy_times.append(copy(n))
                plain_times.append(plain(n))
            else:
                plain_times.append(plain(n))
                copy_times.append(copy(n))
            print(
                f"round: copy {options.records / copy_times[-1]:,.0f} rec/s, "
                f"baseline {options.records / plain_times[-1]:,.0f} rec/s",
                file=sys.stderr,
            )
        landed = asyncio.run(count(endpoint, copies[-1]))
        assert landed == options.records, landed
    best_copy, best_plain = min(copy_times), min(plain_times)
    emit(
        {
            "benchmark": "copy",
            "path": "kconsole copy SRC DST --from trim-horizon --to now --yes, a whole process (ordered producer)",
            "baseline": "a whole process: aiobotocore reads every shard concurrently, then 8 tasks x 500-record "
            "PutRecords, no ordering",
            "records": options.records,
            "shards": SHARDS,
            "keys": KEYS,
            "copy_rps": round(options.records / best_copy),
            "baseline_rps": round(options.records / best_plain),
            "ratio": round(best_plain / best_copy, 3),
            "round_ratios": [round(p / c, 3) for p, c in zip(plain_times, copy_times)],
            "targets": {"ratio": 0.8},
        }
    )


if __name__ == "__main__":
    main()
