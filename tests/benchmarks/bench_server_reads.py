"""Embedded server: the cost of one GetRecords at the tip of a shard, as the shard's history grows.

The embedded server (`kconsole local serve`, patched moto in its own process) holds two one-shard
streams of 1,000 and 100,000 records (100 B each). A botocore client, over HTTP as kconsole talks to
it, asks GetRecords for the newest record (an AT_SEQUENCE_NUMBER iterator on the last record,
Limit 1) again and again; each round times 50 calls per stream, interleaved; a round's figure is its
median call, and the best round per stream counts (other processes on the machine only ever add time). `ratio` = time at 100k / time at
1k; the target is <= 1.5x: the server finds the iterator's place by bisection, not by a scan.

Secondary, for scale: unpatched moto (which scans the shard from its first record on every call),
measured the same way at 1,000 and 10,000 records (its own PutRecords slows quadratically, so
100,000 would take minutes to fill).

    python tests/benchmarks/bench_server_reads.py     # last line: one JSON document of figures
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import botocore.session
from _measure import emit
from botocore.config import Config

from console.localserver.supervision import LocalKinesisServer

SIZES = (1_000, 100_000)
UNPATCHED_SIZES = (1_000, 10_000)
RECORD = b"r" * 100
BATCH = 500
CALLS_PER_ROUND = 50
ROUNDS = 15


def client(endpoint: str):
    return botocore.session.get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(retries={"total_max_attempts": 1}),
    )


def filled(kinesis, records: int) -> str:
    """A one-shard stream of `records` records; an iterator at its newest record."""
    name = f"reads-{records}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    last = None
    for start in range(0, records, BATCH):
        reply = kinesis.put_records(
            StreamName=name,
            Records=[{"Data": RECORD, "PartitionKey": f"k{n}"} for n in range(start, min(records, start + BATCH))],
        )
        last = reply["Records"][-1]["SequenceNumber"]
    return kinesis.get_shard_iterator(
        StreamName=name,
        ShardId="shardId-000000000000",
        ShardIteratorType="AT_SEQUENCE_NUMBER",
        StartingSequenceNumber=last,
    )["ShardIterator"]


def seconds_per_call(kinesis, iterator: str) -> float:
    """The median of one round's calls: a call that met a busy moment does not move it."""
    times = []
    for _ in range(CALLS_PER_ROUND):
        started = time.perf_counter()
        records = kinesis.get_records(ShardIterator=iterator, Limit=1)["Records"]
        times.append(time.perf_counter() - started)
        assert len(records) == 1
    return statistics.median(times)


def best_per_call(kinesis, iterators: dict[int, str]) -> dict[int, float]:
    best = {size: float("inf") for size in iterators}
    for _ in range(ROUNDS):
        for size, iterator in iterators.items():  # interleaved: a busy moment hits both sizes alike
            best[size] = min(best[size], seconds_per_call(kinesis, iterator))
    return best


def measure(patched: bool, sizes: tuple[int, ...]) -> dict[int, float]:
    with LocalKinesisServer(patched=patched) as server:
        kinesis = client(server.endpoint_url)
        iterators = {size: filled(kinesis, size) for size in sizes}
        seconds_per_call(kinesis, iterators[sizes[0]])  # warm the connection
        return best_per_call(kinesis, iterators)


def main() -> None:
    ours = measure(True, SIZES)
    moto = measure(False, UNPATCHED_SIZES)
    small, large = SIZES
    figures = {
        "benchmark": "server_reads",
        f"get_records_at_tip_{small}_ms": round(ours[small] * 1000, 3),
        f"get_records_at_tip_{large}_ms": round(ours[large] * 1000, 3),
        "ratio": round(ours[large] / ours[small], 3),
        f"moto_unpatched_at_tip_{UNPATCHED_SIZES[0]}_ms": round(moto[UNPATCHED_SIZES[0]] * 1000, 3),
        f"moto_unpatched_at_tip_{UNPATCHED_SIZES[1]}_ms": round(moto[UNPATCHED_SIZES[1]] * 1000, 3),
        "secondary_ratio_moto_unpatched": round(moto[UNPATCHED_SIZES[1]] / moto[UNPATCHED_SIZES[0]], 3),
        "path": "GetRecords (Limit 1) at a one-shard stream's newest record on the embedded server, botocore over HTTP",
        "baseline": f"the same call on the same server with {small} records in the shard "
        f"(best of {ROUNDS} interleaved rounds, each the median of {CALLS_PER_ROUND} calls)",
        "target_met": ours[large] / ours[small] <= 1.5,
    }
    emit(figures)


if __name__ == "__main__":
    main()
