"""The ordered producer (`kconsole produce`'s engine) against a raw aiobotocore loop, on the embedded
local Kinesis.

Same records (128-byte test records), same 4-shard stream, same endpoint, one run:
(a) raw loop, the baseline: 8 tasks each making 500 test records and sending them in one PutRecords
    request straight through an aiobotocore client: no ordering, no retries, no bookkeeping. The
    fastest a Python client can write these records here.
(b) ordered: OrderedProducer with the settings `kconsole produce --local` uses (8 requests in
    flight, up to 500 records each, no pace on the embedded server) and 1,000 keys; also 100 and 10
    keys, where the one-record-in-flight-per-key rule caps a request at the number of keys.
(c) paced: the same producer held to each shard's limit (1,000 records/s, as on AWS) against the
    unpaced producer held to the same total rate with --rate: CPU per record of waiting on a pace.
(d) secondary, a weak baseline kept for scale: naive PutRecord, one record at a time.
Throughput is records acknowledged per wall second; client CPU is this process's CPU time (the
server runs in a child process). (a) and (b) alternate for ROUNDS rounds; the best of each counts.
Targets: ordered >= 1.0 x raw (`ratio`), client CPU per record <= 1.2 x raw's (`cpu_ratio`),
paced CPU per record <= 1.3 x the unpaced run at the same throughput (`paced_cpu_ratio`).
Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiobotocore.session import get_session  # noqa: E402

from console.backend import BackendConfig, open_backend  # noqa: E402
from console.produce.producer import OrderedProducer  # noqa: E402
from console.produce.settings import ProducerSettings  # noqa: E402
from console.produce.testrecords import TestRecord, encode_record, new_run_id, partition_key_for  # noqa: E402
from console.produce.verify import Verifier  # noqa: E402

KEYS = 1000
RECORDS = 12_000
TASKS = 8
BATCH = 500
PAYLOAD = 128
NAIVE_RECORDS = 300
ROUNDS = 3
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


async def ordered(kinesis, stream: str, keys: int, **settings):
    options = {"concurrency": TASKS, "max_batch_records": BATCH, "pacing": False, **settings}
    producer = OrderedProducer(
        stream,
        ProducerSettings(keys=keys, records_per_key=RECORDS // keys, payload_bytes=PAYLOAD, **options),
        put_records=kinesis.put_records,
    )
    measured = await timed(RECORDS, producer.run())
    assert producer.result.acknowledged == RECORDS and not producer.result.failed
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
            await raw_loop(client, stream)  # warm-up: connections, server code paths
            await ordered(kinesis, stream, KEYS)
            raws, ordereds, last = [], [], None
            for round_index in range(ROUNDS):
                # Alternate which goes first, so a drift in machine load does not favour either side.
                if round_index % 2:
                    measured, last = await ordered(kinesis, stream, KEYS)
                    raws.append(await raw_loop(client, stream))
                else:
                    raws.append(await raw_loop(client, stream))
                    measured, last = await ordered(kinesis, stream, KEYS)
                ordereds.append(measured)
                print(f"round: raw {raws[-1].rate:.0f} rec/s, ordered {measured.rate:.0f} rec/s", file=sys.stderr)
        fewer_keys = {keys: (await ordered(kinesis, stream, keys))[0] for keys in (100, 10)}
        paced, _ = await ordered(kinesis, stream, KEYS, pacing=True, shard_records_per_second=SHARD_LIMIT)
        # The unpaced run held by --rate to the throughput the paced run reached (its first second
        # is a full bucket per shard), so both send about as many records per request.
        rate_held, _ = await ordered(kinesis, stream, KEYS, rate=round(paced.rate))
        naive_run = await naive(kinesis, stream)
        report = await Verifier.for_backend(kinesis).verify(last)
        assert report.ok, report.to_json()["problems"][:3]
    raw = max(raws, key=lambda m: m.rate)
    best = max(ordereds, key=lambda m: m.rate)
    raw_cpu = min(m.cpu_per_record for m in raws)
    ordered_cpu = min(m.cpu_per_record for m in ordereds)
    return {
        "benchmark": "producer",
        "path": "OrderedProducer as kconsole produce --local runs it (8 in flight, 500 per request)",
        "baseline": "raw aiobotocore loop: 8 tasks x 500-record PutRecords, records made as they go",
        "records": RECORDS,
        "raw": raw.figures,
        "ordered_1000_keys": best.figures,
        "ratio": round(best.rate / raw.rate, 3),
        "cpu_ratio": round(ordered_cpu / raw_cpu, 3),
        "round_ratios": [round(o.rate / r.rate, 3) for o, r in zip(ordereds, raws)],
        "ordered_100_keys": {**fewer_keys[100].figures, "ratio": round(fewer_keys[100].rate / raw.rate, 3)},
        "ordered_10_keys": {**fewer_keys[10].figures, "ratio": round(fewer_keys[10].rate / raw.rate, 3)},
        "paced": {**paced.figures, "shard_limit_rps": SHARD_LIMIT},
        "unpaced_same_rate": {**rate_held.figures, "rate": round(paced.rate)},
        "paced_cpu_ratio": round(paced.cpu_per_record / rate_held.cpu_per_record, 3),
        "paced_cpu_vs_full_speed": round(paced.cpu_per_record / ordered_cpu, 3),
        "secondary_naive_put_record": naive_run.figures,
        "verify_read_rps": round(report.read_records_per_second),
        "targets": {"ratio": 1.0, "cpu_ratio": 1.2, "paced_cpu_ratio": 1.3},
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    print(json.dumps(figures))
