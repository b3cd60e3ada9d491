"""The ordered producer (`kconsole produce`'s engine) against a plain aiobotocore loop keeping the same
ordering rule, on the embedded local Kinesis.

Same records (128-byte test records, made as they go out), same 4-shard stream, same endpoint, one run:
(a) the baseline, a same-rule loop: what a user writes to keep each key in order with PutRecords.
    A key's next record becomes ready only when its previous one is acknowledged (one record per key
    in flight, so at most one per key in a request); 8 tasks each take up to 500 ready keys, send one
    PutRecords straight through an aiobotocore client and put each acknowledged key back in line (a
    failed record would be sent again first). No retries beyond that, no bookkeeping, no proof.
(b) ordered: OrderedProducer with the settings `kconsole produce --local` uses (8 requests in
    flight, up to 500 records each, no pace on the embedded server), through the backend's put path,
    keeping its ledger for verification.
Both send RECORDS records at 1,000 and at 100 keys, each run into a new, empty stream; (a) and (b)
alternate for ROUNDS rounds (which goes first alternates too) and the best of each counts.
(c) paced: the same producer held to each shard's limit (1,000 records/s, as on AWS) against the
    unpaced producer held to the same total rate with --rate: CPU per record of waiting on a pace.
(d) secondary, a weak baseline kept for scale: naive PutRecord, one record at a time.
(e) secondary: the unordered raw loop (8 tasks x 500-record PutRecords, no rule): the ceiling.
Throughput is records acknowledged per wall second; client CPU is this process's CPU time (the
server runs in a child process). Targets at both key counts: ordered >= 1.0 x the same-rule loop
(`ratio`), client CPU per record <= 1.2 x its (`cpu_ratio`); paced CPU per record <= 1.3 x the
unpaced run at the same throughput (`paced_cpu_ratio`). Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit
from aiobotocore.session import get_session

from console.backend import BackendConfig, open_backend
from console.commands.produce import settle_heap
from console.produce.producer import OrderedProducer
from console.produce.settings import ProducerSettings
from console.produce.testrecords import TestRecord, encode_record, new_run_id, partition_key_for
from console.produce.verify import Verifier

KEYS = 1000
KEY_COUNTS = (1000, 100)
RECORDS = 100_000
PACED_RECORDS = 12_000
TASKS = 8
BATCH = 500
PAYLOAD = 128
NAIVE_RECORDS = 300
ROUNDS = 5
SHARDS = 4
SHARD_LIMIT = 1000.0  # records/s per shard, AWS's


class Measured:
    def __init__(self, records: int, wall: float, cpu: float) -> None:
        self.rate = records / wall
        self.cpu_per_record = cpu / records

    @property
    def figures(self) -> dict:
        return {"rps": round(self.rate), "cpu_us_per_record": round(self.cpu_per_record * 1e6, 1)}


async def timed(records: int, work) -> Measured:
    wall, cpu = time.perf_counter(), time.process_time()
    await work
    return Measured(records, time.perf_counter() - wall, time.process_time() - cpu)


async def raw_loop(client, stream: str) -> Measured:
    run = new_run_id()
    keys = [partition_key_for(run, i) for i in range(KEYS)]
    starts = iter(range(0, RECORDS, BATCH))

    async def task() -> None:
        for start in starts:  # the records are made as they go out, as any producer has to
            batch = [
                {
                    "Data": encode_record(run, keys[i % KEYS], i // KEYS, time.time(), PAYLOAD),
                    "PartitionKey": keys[i % KEYS],
                }
                for i in range(start, start + BATCH)
            ]
            response = await client.put_records(StreamName=stream, Records=batch)
            assert not response.get("FailedRecordCount")

    return await timed(RECORDS, asyncio.gather(*(task() for _ in range(TASKS))))


async def same_rule_loop(client, stream: str, keys: int, records: int = RECORDS) -> Measured:
    run = new_run_id()
    names = [partition_key_for(run, i) for i in range(keys)]
    per_key = records // keys
    sent = [0] * keys  # records of each key acknowledged so far
    ready = deque(range(keys))  # keys with nothing in flight and a record to send
    moved = asyncio.Event()
    left = keys  # keys with records still to send

    async def task() -> None:
        nonlocal left
        while left:
            if not ready:
                moved.clear()
                await moved.wait()
                continue
            taken = [ready.popleft() for _ in range(min(BATCH, len(ready)))]
            batch = [
                {"Data": encode_record(run, names[k], sent[k], time.time(), PAYLOAD), "PartitionKey": names[k]}
                for k in taken
            ]
            response = await client.put_records(StreamName=stream, Records=batch)
            for k, outcome in zip(taken, response["Records"]):
                if "ErrorCode" in outcome:  # sent again before any later record of its key
                    ready.append(k)
                    continue
                sent[k] += 1
                if sent[k] < per_key:
                    ready.append(k)
                else:
                    left -= 1
            moved.set()

    measured = await timed(records, asyncio.gather(*(task() for _ in range(TASKS))))
    assert sum(sent) == records
    return measured


async def fresh_stream(kinesis, stream: str | None, name: str) -> str:
    """A new 4-shard stream for the next run, the last one deleted: every run writes into an empty
    stream (the embedded server keeps every record in memory, and a fuller one is slower to feed), and
    starts from the same heap here (what the last run left is collected first)."""
    if stream is not None:
        await kinesis.delete_stream(stream)
    await kinesis.ensure_stream(name, SHARDS)
    gc.collect()
    return name


async def ordered(kinesis, stream: str, keys: int, records: int = RECORDS, **settings):
    options = {"concurrency": TASKS, "max_batch_records": BATCH, "pacing": False, **settings}
    producer = OrderedProducer(
        stream,
        ProducerSettings(keys=keys, records_per_key=records // keys, payload_bytes=PAYLOAD, **options),
        put_records=kinesis.put_records,
    )
    settle_heap()  # as `kconsole produce` does before a run
    try:
        measured = await timed(records, producer.run())
    finally:
        gc.unfreeze()  # the baseline runs on the heap as it is
    assert producer.result.acknowledged == records and not producer.result.failed
    return measured, producer.result


async def naive(kinesis, stream: str) -> Measured:
    run = new_run_id()

    async def one_at_a_time() -> None:
        for i in range(NAIVE_RECORDS):
            key = partition_key_for(run, i % KEYS)
            await kinesis.put_record(stream, TestRecord(run, key, i // KEYS, time.time()).encode(PAYLOAD), key)

    return await timed(NAIVE_RECORDS, one_at_a_time())


async def main() -> dict:
    async with open_backend(BackendConfig(kind="local")) as kinesis:
        stream = "bench-producer"
        await kinesis.ensure_stream(stream, SHARDS)
        async with get_session().create_client(
            "kinesis",
            region_name=kinesis.region,
            endpoint_url=kinesis.endpoint_url,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ) as client:
            await same_rule_loop(client, stream, KEYS, PACED_RECORDS)  # warm-up: connections, server code paths
            await ordered(kinesis, stream, KEYS, PACED_RECORDS)
            loops: dict[int, list[Measured]] = {keys: [] for keys in KEY_COUNTS}
            ordereds: dict[int, list[Measured]] = {keys: [] for keys in KEY_COUNTS}
            for round_index in range(ROUNDS):
                for keys in KEY_COUNTS:
                    # Alternate which goes first, so a drift in machine load does not favour either side.
                    for side in ("ordered", "loop") if round_index % 2 else ("loop", "ordered"):
                        stream = await fresh_stream(kinesis, stream, f"bench-producer-{round_index}-{keys}-{side}")
                        if side == "ordered":
                            measured, result = await ordered(kinesis, stream, keys)
                            ordereds[keys].append(measured)
                            # Every timed run proves its order (outside the timing), before its stream goes.
                            report = await Verifier.for_backend(kinesis).verify(result)
                            assert report.ok, report.to_json()["problems"][:3]
                        else:
                            loops[keys].append(await same_rule_loop(client, stream, keys))
                    print(
                        f"round {round_index + 1}, {keys} keys: same-rule loop {loops[keys][-1].rate:.0f} rec/s, "
                        f"ordered {ordereds[keys][-1].rate:.0f} rec/s",
                        file=sys.stderr,
                    )
            raw = await raw_loop(client, stream)
        paced, _ = await ordered(
            kinesis, stream, KEYS, PACED_RECORDS, pacing=True, shard_records_per_second=SHARD_LIMIT
        )
        # The unpaced run held by --rate to the throughput the paced run reached (its first second
        # is a full bucket per shard), so both send about as many records per request.
        rate_held, _ = await ordered(kinesis, stream, KEYS, PACED_RECORDS, rate=round(paced.rate))
        naive_run = await naive(kinesis, stream)
    by_keys = {}
    for keys in KEY_COUNTS:
        loop, best = max(loops[keys], key=lambda m: m.rate), max(ordereds[keys], key=lambda m: m.rate)
        loop_cpu = min(m.cpu_per_record for m in loops[keys])
        ordered_cpu = min(m.cpu_per_record for m in ordereds[keys])
        by_keys[str(keys)] = {
            "same_rule_loop": loop.figures,
            "ordered": best.figures,
            "ratio": round(best.rate / loop.rate, 3),
            "cpu_ratio": round(ordered_cpu / loop_cpu, 3),
            "round_ratios": [round(o.rate / r.rate, 3) for o, r in zip(ordereds[keys], loops[keys])],
        }
    full_speed_cpu = min(m.cpu_per_record for m in ordereds[KEYS])
    return {
        "benchmark": "producer",
        "path": "OrderedProducer as kconsole produce --local runs it (8 in flight, up to 500 per request), "
        "through the backend's put path",
        "baseline": "a plain aiobotocore loop with the same rule: a key's next record only after its previous "
        "one is acknowledged, 8 tasks x up to 500 ready keys per PutRecords, records made as they go",
        "records": RECORDS,
        "payload_bytes": PAYLOAD,
        "keys": by_keys,
        "ratios": {keys: figures["ratio"] for keys, figures in by_keys.items()},
        "cpu_ratios": {keys: figures["cpu_ratio"] for keys, figures in by_keys.items()},
        "paced": {**paced.figures, "shard_limit_rps": SHARD_LIMIT, "records": PACED_RECORDS},
        "unpaced_same_rate": {**rate_held.figures, "rate": round(paced.rate)},
        "paced_cpu_ratio": round(paced.cpu_per_record / rate_held.cpu_per_record, 3),
        "paced_cpu_vs_full_speed": round(paced.cpu_per_record / full_speed_cpu, 3),
        "secondary_unordered_raw_loop": raw.figures,
        "secondary_naive_put_record": naive_run.figures,
        "verify_read_rps": round(report.read_records_per_second),
        "targets": {"ratio": 1.0, "cpu_ratio": 1.2, "paced_cpu_ratio": 1.3},
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    emit(figures)
