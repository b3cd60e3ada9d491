"""The aggregating producer (`kconsole produce --aggregate`'s engine) on the embedded local Kinesis, against
the same producer without aggregation and against what a user would write with aws-kinesis-agg.

Same 4-shard stream, same 100-byte test records (encode_record, as both producers write them), one run:
(a) plain: OrderedProducer, 1,000 keys, unpaced (`kconsole produce --local`), 12k records.
(b) aggregating: AggregatingProducer with KPL's default 51,200-byte aggregates, the same settings, 120k
    records: user records acknowledged per wall second, against (a): `ratio_vs_plain` (target >= 5x).
(c) paced: both producers held to each shard's limits (1,000 records/s, 1 MiB/s): user records/s, and
    for (b) the Kinesis records/s each shard took (target < 1,000: the pace counts aggregates and bytes).
(d) baseline: aws-kinesis-agg's RecordAggregator fed the same records (made as they go), every full
    aggregate collected into PutRecords requests of up to 500 records / 5 MiB, 8 requests in flight
    through a plain aiobotocore client: no ordering, no retries, no bookkeeping. `ratio_vs_aws_kinesis_agg`
    (target >= 1.0x) is (b) over (d), both whole cost: making, aggregating and sending the records.
(a), (b) and (d) take turns for ROUNDS rounds (who goes first rotates); the best of each counts.
Before them, `settle_heap()` (gc.freeze, as `kconsole produce` calls it once the backend is open) moves
the start-up heap out of the collector's way for all three. Figures from a shared machine vary.
Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiobotocore.session import get_session
from aws_kinesis_agg.aggregator import RecordAggregator

from console.backend import BackendConfig, open_backend
from console.commands.produce import settle_heap
from console.produce.aggregate import DEFAULT_MAX_AGGREGATE_BYTES, AggregatingProducer
from console.produce.producer import OrderedProducer
from console.produce.settings import MAX_BATCH_BYTES, ProducerSettings
from console.produce.testrecords import encode_record, new_run_id, partition_key_for
from console.produce.verify import Verifier
from console.topology.shardmap import ShardMap

SHARDS = 4
KEYS = 1000
PAYLOAD = 100
PLAIN_RECORDS = 12_000
AGGREGATED_RECORDS = 120_000
PACED_SECONDS = 3  # about this long for each paced run at the shard limits
TASKS = 8
ROUNDS = 3
SHARD_LIMIT = 1000.0


async def timed(records: int, work) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    await work
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rps": round(records / wall), "cpu_us_per_record": round(cpu / records * 1e6, 2), "seconds": wall}


async def produce(
    kinesis, stream: str, shard_map, records: int, *, aggregate: bool, paced: bool
) -> tuple[dict, object]:
    settings = ProducerSettings(
        keys=KEYS,
        records_per_key=records // KEYS,
        payload_bytes=PAYLOAD,
        concurrency=TASKS,
        pacing=paced,
        shard_records_per_second=SHARD_LIMIT,
    )
    if aggregate:
        producer = AggregatingProducer(
            stream,
            settings,
            put_records=kinesis.put_records,
            shard_map=shard_map,
            max_aggregate_bytes=DEFAULT_MAX_AGGREGATE_BYTES,
        )
    else:
        producer = OrderedProducer(stream, settings, put_records=kinesis.put_records, shard_map=shard_map)
    measured = await timed(records, producer.run())
    assert producer.result.complete, producer.result.to_json()
    return measured, producer.result


async def aws_kinesis_agg_loop(client, stream: str, records: int) -> dict:
    """What a user writes: RecordAggregator per record, full aggregates batched into PutRecords."""
    run = new_run_id()
    keys = [partition_key_for(run, i) for i in range(KEYS)]
    queue: asyncio.Queue = asyncio.Queue(maxsize=TASKS * 2)

    async def sender() -> None:
        while (entries := await queue.get()) is not None:
            response = await client.put_records(StreamName=stream, Records=entries)
            assert not response.get("FailedRecordCount")

    async def make() -> None:
        aggregator = RecordAggregator(DEFAULT_MAX_AGGREGATE_BYTES)
        entries, size = [], 0

        async def flush() -> None:
            nonlocal entries, size
            if entries:
                await queue.put(entries)
            entries, size = [], 0

        async def collect(aggregate) -> None:
            nonlocal size
            key, hash_key, data = aggregate.get_contents()
            if len(entries) == 500 or size + len(data) + len(key) > MAX_BATCH_BYTES:
                await flush()
            entries.append({"Data": data, "PartitionKey": key} | ({"ExplicitHashKey": hash_key} if hash_key else {}))
            size += len(data) + len(key)

        for i in range(records):
            key = keys[i % KEYS]
            full = aggregator.add_user_record(key, encode_record(run, key, i // KEYS, time.time(), PAYLOAD))
            if full is not None:
                await collect(full)
        last = aggregator.clear_and_get()
        if last is not None:
            await collect(last)
        await flush()
        for _ in range(TASKS):
            await queue.put(None)

    async def everything() -> None:
        await asyncio.gather(make(), *(sender() for _ in range(TASKS)))

    return await timed(records, everything())


def kinesis_rates(result, seconds: float) -> dict[str, float]:
    return {shard: round(count / seconds, 1) for shard, count in sorted(result.aggregation.kinesis_records.items())}


async def main() -> dict:
    async with open_backend(BackendConfig(kind="local")) as kinesis:
        stream = "bench-aggregate"
        await kinesis.ensure_stream(stream, SHARDS)
        async with (
            ShardMap.for_backend(kinesis, stream) as shard_map,
            get_session().create_client(
                "kinesis",
                region_name=kinesis.region,
                endpoint_url=kinesis.endpoint_url,
                aws_access_key_id="bench",
                aws_secret_access_key="bench",
            ) as client,
        ):
            await shard_map.wait_ready(timeout=60)
            settle_heap()  # as `kconsole produce` does once the backend is open; for all three contenders
            await produce(kinesis, stream, shard_map, PLAIN_RECORDS, aggregate=True, paced=False)  # warm-up
            await aws_kinesis_agg_loop(client, stream, PLAIN_RECORDS)
            plains, ours, theirs, last = [], [], [], None
            for round_index in range(ROUNDS):
                contenders = [
                    ("plain", lambda: produce(kinesis, stream, shard_map, PLAIN_RECORDS, aggregate=False, paced=False)),
                    (
                        "ours",
                        lambda: produce(kinesis, stream, shard_map, AGGREGATED_RECORDS, aggregate=True, paced=False),
                    ),
                    ("theirs", lambda: aws_kinesis_agg_loop(client, stream, AGGREGATED_RECORDS)),
                ]
                # Rotate who goes first, so a drift in machine load does not favour any of them.
                for name, run in contenders[round_index % 3 :] + contenders[: round_index % 3]:
                    outcome = await run()
                    if name == "plain":
                        plains.append(outcome[0])
                    elif name == "ours":
                        ours.append(outcome[0])
                        last = outcome[1]
                    else:
                        theirs.append(outcome)
                print(
                    f"round: plain {plains[-1]['rps']}, aggregating {ours[-1]['rps']}, "
                    f"aws-kinesis-agg loop {theirs[-1]['rps']} user records/s",
                    file=sys.stderr,
                )
            paced_plain, _ = await produce(
                kinesis, stream, shard_map, int(SHARDS * SHARD_LIMIT * PACED_SECONDS), aggregate=False, paced=True
            )
            paced_records = int(SHARDS * 7000 * PACED_SECONDS) // KEYS * KEYS  # ~1 MiB/s of 100-byte records a shard
            paced_ours, paced_result = await produce(
                kinesis, stream, shard_map, paced_records, aggregate=True, paced=True
            )
        report = await Verifier.for_backend(kinesis).verify(last)
        assert report.ok, report.to_json()["problems"][:3]
    best, baseline = max(ours, key=lambda m: m["rps"]), max(theirs, key=lambda m: m["rps"])
    plain = max(plains, key=lambda m: m["rps"])
    by_shard = kinesis_rates(paced_result, paced_ours["seconds"])
    return {
        "benchmark": "aggregate",
        "path": "AggregatingProducer as kconsole produce --local --aggregate runs it (1,000 keys, 51,200-byte "
        "aggregates, 8 requests in flight)",
        "baseline": "aws-kinesis-agg RecordAggregator + plain aiobotocore PutRecords (500 / 5 MiB, 8 in flight)",
        "shards": SHARDS,
        "payload_bytes": PAYLOAD,
        "plain": {k: v for k, v in plain.items() if k != "seconds"},
        "aggregating": {k: v for k, v in best.items() if k != "seconds"},
        "aws_kinesis_agg_loop": {k: v for k, v in baseline.items() if k != "seconds"},
        "ratio_vs_plain": round(best["rps"] / plain["rps"], 2),
        "ratio_vs_aws_kinesis_agg": round(best["rps"] / baseline["rps"], 3),
        "round_ratios_vs_aws_kinesis_agg": [round(o["rps"] / t["rps"], 3) for o, t in zip(ours, theirs)],
        "round_ratios_vs_plain": [round(o["rps"] / p["rps"], 2) for o, p in zip(ours, plains)],
        "paced": {
            "plain_rps": paced_plain["rps"],
            "aggregating_rps": paced_ours["rps"],
            "ratio": round(paced_ours["rps"] / paced_plain["rps"], 2),
            "kinesis_records_per_second_by_shard": by_shard,
            "max_shard_kinesis_records_per_second": max(by_shard.values()),
        },
        "verify_read_rps": round(report.read_records_per_second),
        "targets": {
            "ratio_vs_plain": 5.0,
            "ratio_vs_aws_kinesis_agg": 1.0,
            "max_shard_kinesis_records_per_second": f"< {SHARD_LIMIT:,.0f}",
        },
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    print(json.dumps(figures))
