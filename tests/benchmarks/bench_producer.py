"""The ordered producer against its ceiling and against naive PutRecord, on the embedded local Kinesis.

All three write the same kind of record (a 128-byte test record) to the same 4-shard stream
through the same KinesisBackend (aiobotocore), in one run:
(a) ceiling: a raw PutRecords loop — pre-built records, CONCURRENCY requests in flight, BATCH
    records each, no ordering, no retries, no bookkeeping;
(b) naive: PutRecord, one record at a time;
(c) ordered: console.produce.producer.OrderedProducer, 1,000 keys, the same concurrency and batch size
    (1,000 keys / 4 requests = 250 records per request: the one-record-per-key rule costs nothing
    in batch size at this key count).
(a) and (c) run ROUNDS times, alternating which goes first; the best round of each counts (least
disturbed by other processes on the machine). Then the run of (c) is read back with the verifier (records/s).
Targets: ordered >= 0.8 x ceiling (`ratio`), ordered >= 20 x naive (`vs_naive`).
Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.backend import BackendConfig, open_backend  # noqa: E402
from console.produce.producer import OrderedProducer, ProducerSettings  # noqa: E402
from console.produce.testrecords import TestRecord, new_run_id, partition_key_for  # noqa: E402
from console.produce.verify import Verifier  # noqa: E402

KEYS = 1000
RECORDS_PER_KEY = 12
CONCURRENCY = 4
BATCH = 250
PAYLOAD = 128
NAIVE_RECORDS = 400
ROUNDS = 4
SHARDS = 4


async def ceiling(kinesis, stream: str) -> float:
    run = new_run_id()
    records = [{"Data": TestRecord(run, partition_key_for(run, i % KEYS), i // KEYS, time.time()).encode(PAYLOAD),
                "PartitionKey": partition_key_for(run, i % KEYS)} for i in range(KEYS * RECORDS_PER_KEY)]
    batches = [records[i:i + BATCH] for i in range(0, len(records), BATCH)]
    queue = iter(batches)
    written = 0

    async def worker() -> None:
        nonlocal written
        for batch in queue:
            response = await kinesis.put_records(stream, batch)
            written += len(batch) - response.get("FailedRecordCount", 0)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return written / (time.perf_counter() - started)


async def naive(kinesis, stream: str) -> float:
    run = new_run_id()
    started = time.perf_counter()
    for i in range(NAIVE_RECORDS):
        key = partition_key_for(run, i % KEYS)
        await kinesis.put_record(stream, TestRecord(run, key, i // KEYS, time.time()).encode(PAYLOAD), key)
    return NAIVE_RECORDS / (time.perf_counter() - started)


async def ordered(kinesis, stream: str):
    settings = ProducerSettings(keys=KEYS, records_per_key=RECORDS_PER_KEY, payload_bytes=PAYLOAD,
                                concurrency=CONCURRENCY, max_batch_records=BATCH, pacing=False)
    producer = OrderedProducer(stream, settings, put_records=kinesis.put_records)
    started = time.perf_counter()
    result = await producer.run()
    rate = result.acknowledged / (time.perf_counter() - started)
    assert result.acknowledged == KEYS * RECORDS_PER_KEY and not result.failed
    return rate, result


async def main() -> dict:
    async with open_backend(BackendConfig(kind="local")) as kinesis:
        stream = "bench-producer"
        await kinesis.ensure_stream(stream, SHARDS)
        await ceiling(kinesis, stream)  # warm-up: connections, server code paths
        ceilings, ordereds, last = [], [], None
        for round_index in range(ROUNDS):
            # Alternate which goes first, so a drift in machine load does not favour either side.
            if round_index % 2:
                rate, last = await ordered(kinesis, stream)
                ceilings.append(await ceiling(kinesis, stream))
            else:
                ceilings.append(await ceiling(kinesis, stream))
                rate, last = await ordered(kinesis, stream)
            ordereds.append(rate)
            print(f"round: ceiling {ceilings[-1]:.0f} rec/s, ordered {rate:.0f} rec/s", file=sys.stderr)
        naive_rate = await naive(kinesis, stream)
        report = await Verifier.for_backend(kinesis).verify(last)
        assert report.ok, report.to_json()["problems"][:3]
    best_ceiling, best_ordered = max(ceilings), max(ordereds)
    return {
        "bench": "producer",
        "keys": KEYS,
        "records": KEYS * RECORDS_PER_KEY,
        "concurrency": CONCURRENCY,
        "batch": BATCH,
        "ceiling_rps": round(best_ceiling),
        "naive_put_record_rps": round(naive_rate),
        "ordered_rps": round(best_ordered),
        "ratio": round(best_ordered / best_ceiling, 3),
        # Per-round ordered/ceiling, for a feel of how noisy the machine was.
        "round_ratios": [round(o / c, 3) for o, c in zip(ordereds, ceilings)],
        "vs_naive": round(best_ordered / naive_rate, 1),
        "verify_read_rps": round(report.read_records_per_second),
        "verify_ok": report.ok,
        "targets": {"ratio": 0.8, "vs_naive": 20},
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    print(json.dumps(figures))
