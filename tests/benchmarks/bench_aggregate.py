"""The aggregating producer (`kconsole produce --aggregate`'s engine) on the embedded local Kinesis, against
the same producer without aggregation and against what a user would write with aws-kinesis-agg.

Same 4-shard stream, same 100-byte test records (encode_record, as both producers write them), one run:
(a) plain: OrderedProducer, 1,000 keys, unpaced (`kconsole produce --local`), 12k records.
(b) aggregating: AggregatingProducer with KPL's default 51,200-byte aggregates, the same settings, 120k
    records: user records acknowledged per wall second, against (a): `ratio_vs_plain` (target >= 5x).
(c) paced: both producers held to each shard's limits (1,000 records/s, 1 MiB/s): user records/s, and
    for (b) the Kinesis records/s each shard took (target < 1,000: the pace counts aggregates and bytes).
(d) baseline: aws-kinesis-agg's RecordAggregator fed the same records (made as they go), every full
    aggregate collected into PutRecords requests of up to 500 records / 5 MiB, sent by boto3's
    put_records on 8 threads (8 requests in flight): no ordering, no retries, no bookkeeping.
    `ratio_vs_aws_kinesis_agg` (target >= 1.2x) is (b) over (d) in user records per wall second, both
    whole cost: making, aggregating and sending the records; `cpu_ratio_vs_aws_kinesis_agg` (target
    <= 0.9x) is this process's CPU per user record, (b) over (d) (the server is a child process).
(b) and (d) run at two aggregate sizes: KPL's default 51,200 bytes and 1 MiB (`max_aggregate_bytes`).
(a), (b) and (d) take turns for ROUNDS rounds (who goes first rotates); the best of each counts.
Before them, `settle_heap()` (gc.freeze, as `kconsole produce` calls it once the backend is open) moves
the start-up heap out of the collector's way for all three. Figures from a shared machine vary.
Prints one JSON line of figures last.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import boto3
from _measure import emit
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
SIZES = {"51200": DEFAULT_MAX_AGGREGATE_BYTES, "1MiB": 1_048_576}


async def timed(records: int, work) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    await work
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rps": round(records / wall), "cpu_us_per_record": round(cpu / records * 1e6, 2), "seconds": wall}


async def produce(
    kinesis,
    stream: str,
    shard_map,
    records: int,
    *,
    aggregate: bool,
    paced: bool,
    max_aggregate_bytes: int = DEFAULT_MAX_AGGREGATE_BYTES,
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
            max_aggregate_bytes=max_aggregate_bytes,
        )
    else:
        producer = OrderedProducer(stream, settings, put_records=kinesis.put_records, shard_map=shard_map)
    measured = await timed(records, producer.run())
    assert producer.result.complete, producer.result.to_json()
    return measured, producer.result


def aws_kinesis_agg_loop(client, stream: str, records: int, max_aggregate_bytes: int) -> None:
    """What a user writes: RecordAggregator per record, full aggregates batched into boto3 PutRecords
    requests that TASKS threads send."""
    run = new_run_id()
    keys = [partition_key_for(run, i) for i in range(KEYS)]
    requests: queue.Queue = queue.Queue(maxsize=TASKS * 2)
    failures: list[int] = []

    def sender() -> None:
        while (entries := requests.get()) is not None:
            response = client.put_records(StreamName=stream, Records=entries)
            if response.get("FailedRecordCount"):
                failures.append(response["FailedRecordCount"])

    senders = [threading.Thread(target=sender) for _ in range(TASKS)]
    for thread in senders:
        thread.start()
    aggregator = RecordAggregator(max_aggregate_bytes)
    entries: list[dict] = []
    size = 0

    def collect(aggregate) -> None:
        nonlocal entries, size
        key, hash_key, data = aggregate.get_contents()
        if len(entries) == 500 or size + len(data) + len(key) > MAX_BATCH_BYTES:
            requests.put(entries)
            entries, size = [], 0
        entries.append({"Data": data, "PartitionKey": key} | ({"ExplicitHashKey": hash_key} if hash_key else {}))
        size += len(data) + len(key)

    for i in range(records):
        key = keys[i % KEYS]
        full = aggregator.add_user_record(key, encode_record(run, key, i // KEYS, time.time(), PAYLOAD))
        if full is not None:
            collect(full)
    last = aggregator.clear_and_get()
    if last is not None:
        collect(last)
    if entries:
        requests.put(entries)
    for _ in senders:
        requests.put(None)
    for thread in senders:
        thread.join()
    assert not failures, f"{sum(failures)} records refused"


async def boto3_baseline(client, stream: str, records: int, max_aggregate_bytes: int) -> dict:
    return await timed(records, asyncio.to_thread(aws_kinesis_agg_loop, client, stream, records, max_aggregate_bytes))


def kinesis_rates(result, seconds: float) -> dict[str, float]:
    return {shard: round(count / seconds, 1) for shard, count in sorted(result.aggregation.kinesis_records.items())}


async def main(rounds: int, records: int) -> dict:
    async with open_backend(BackendConfig(kind="local")) as kinesis:
        stream = "bench-aggregate"
        await kinesis.ensure_stream(stream, SHARDS)
        client = boto3.client(
            "kinesis",
            region_name=kinesis.region,
            endpoint_url=kinesis.endpoint_url,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        async with ShardMap.for_backend(kinesis, stream) as shard_map:
            await shard_map.wait_ready(timeout=60)
            settle_heap()  # as `kconsole produce` does once the backend is open; for all contenders
            await produce(kinesis, stream, shard_map, PLAIN_RECORDS, aggregate=True, paced=False)  # warm-up
            await boto3_baseline(client, stream, PLAIN_RECORDS, DEFAULT_MAX_AGGREGATE_BYTES)
            plains: list[dict] = []
            ours: dict[str, list[dict]] = {size: [] for size in SIZES}
            theirs: dict[str, list[dict]] = {size: [] for size in SIZES}
            last = None
            for round_index in range(rounds):
                contenders = [
                    (
                        "plain",
                        "",
                        lambda: produce(kinesis, stream, shard_map, PLAIN_RECORDS, aggregate=False, paced=False),
                    )
                ]
                for size, limit in SIZES.items():
                    contenders.append(
                        (
                            "ours",
                            size,
                            lambda limit=limit: produce(
                                kinesis,
                                stream,
                                shard_map,
                                records,
                                aggregate=True,
                                paced=False,
                                max_aggregate_bytes=limit,
                            ),
                        )
                    )
                    contenders.append(
                        ("theirs", size, lambda limit=limit: boto3_baseline(client, stream, records, limit))
                    )
                # Rotate who goes first, so a drift in machine load does not favour any of them.
                first = round_index % len(contenders)
                for name, size, run in contenders[first:] + contenders[:first]:
                    outcome = await run()
                    if name == "plain":
                        plains.append(outcome[0])
                    elif name == "ours":
                        ours[size].append(outcome[0])
                        last = outcome[1]
                    else:
                        theirs[size].append(outcome)
                print(
                    f"round: plain {plains[-1]['rps']}; "
                    + "; ".join(
                        f"{size}: aggregating {ours[size][-1]['rps']}, aws-kinesis-agg + boto3 {theirs[size][-1]['rps']}"
                        for size in SIZES
                    )
                    + " user records/s",
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
    plain = max(plains, key=lambda m: m["rps"])
    by_size = {}
    for size in SIZES:
        best, baseline = max(ours[size], key=lambda m: m["rps"]), max(theirs[size], key=lambda m: m["rps"])
        least_cpu = min(m["cpu_us_per_record"] for m in ours[size])
        baseline_cpu = min(m["cpu_us_per_record"] for m in theirs[size])
        by_size[size] = {
            "aggregating": {k: v for k, v in best.items() if k != "seconds"},
            "aws_kinesis_agg_boto3": {k: v for k, v in baseline.items() if k != "seconds"},
            "ratio_vs_aws_kinesis_agg": round(best["rps"] / baseline["rps"], 3),
            "cpu_ratio_vs_aws_kinesis_agg": round(least_cpu / baseline_cpu, 3),
            "round_ratios_vs_aws_kinesis_agg": [
                round(o["rps"] / t["rps"], 3) for o, t in zip(ours[size], theirs[size])
            ],
        }
    default = by_size["51200"]
    by_shard = kinesis_rates(paced_result, paced_ours["seconds"])
    return {
        "benchmark": "aggregate",
        "path": "AggregatingProducer as kconsole produce --local --aggregate runs it (1,000 keys, 51,200-byte "
        "and 1 MiB aggregates, 8 requests in flight)",
        "baseline": "aws-kinesis-agg RecordAggregator + boto3 put_records on 8 threads (500 / 5 MiB a request), "
        "same aggregate size; the plain producer (ratio_vs_plain)",
        "shards": SHARDS,
        "payload_bytes": PAYLOAD,
        "user_records": records,
        "rounds": rounds,
        "plain": {k: v for k, v in plain.items() if k != "seconds"},
        "sizes": by_size,
        "ratio_vs_plain": round(default["aggregating"]["rps"] / plain["rps"], 2),
        "round_ratios_vs_plain": [round(o["rps"] / p["rps"], 2) for o, p in zip(ours["51200"], plains)],
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
            "ratio_vs_aws_kinesis_agg": 1.2,
            "cpu_ratio_vs_aws_kinesis_agg": 0.9,
            "max_shard_kinesis_records_per_second": f"< {SHARD_LIMIT:,.0f}",
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--records", type=int, default=AGGREGATED_RECORDS, help="user records per aggregating run")
    options = parser.parse_args()
    emit(asyncio.run(main(options.rounds, options.records)))
