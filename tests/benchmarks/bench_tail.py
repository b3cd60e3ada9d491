"""`kconsole tail` end to end, as a user runs it, against a plain concurrent aiobotocore reader doing the same
work, on the embedded local Kinesis (8 shards, RECORDS JSON records of ~204 bytes).

Both sides are whole processes started the same way, reading the same stream from the same server, their
output going to a file; the time is the process's wall time from start to exit, everything included.

- tail --json: `kconsole tail S --from trim-horizon --json > file` (one JSON object a record: shard, sequence
  numbers, key, explicit hash key, ISO-8601 arrival, size, kind, encoding, content, with no character a
  terminal acts on).
- tail text: `kconsole tail S --from trim-horizon > file` (one escaped line a record).
- export: `kconsole tail S --from trim-horizon --to now --out file.jsonl` (the same JSON lines, written to a
  temporary file and renamed, progress on stderr).
- baseline (this file run with --baseline json|text): an aiobotocore client reading every shard
  concurrently (one task a shard, GetRecords of 10,000 until the shard's tip), botocore's base64 decoding,
  an epoch timestamp parser installed in botocore (its default builds a dateutil tzlocal per timestamp),
  `json.loads` of every payload, and one line per record with the same fields: JSON lines with
  `json.dumps(..., ensure_ascii=True)` (the standard library's own way to a line with no character a
  terminal acts on: every non-ASCII character escaped), and text lines with the compact JSON content. It does
  not handle what kconsole handles (gzip, KPL, text and binary payloads, splits, throttles, expired
  iterators); every payload here is JSON, so it loses nothing by that.
After one warm-up read, rounds alternate the order of the runs; the fastest run of each side counts (load on a shared machine only
ever adds time). Targets (issue figures): tail --json >= 1.0x, text >= 1.0x, export >= 1.0x the baseline.

    python tests/benchmarks/bench_tail.py [--records N] [--rounds R]

Prints one JSON line of figures last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

SHARDS = 8
RECORDS = 200_000
ROUNDS = 3
PUT_BATCH = 500
STREAM = "bench-tail"


def payload(index: int) -> bytes:
    """A ~204-byte JSON event."""
    doc = {
        "event_id": f"evt-{index:010d}",
        "user": f"user-{index % 9973:05d}",
        "type": "page_view",
        "amount": round((index * 7919) % 100000 / 100, 2),
        "tags": ["a", "b", "c"],
        "ua": "Mozilla/5.0 (X11; Linux x86_64)",
        "ok": True,
    }
    return json.dumps(doc).encode()


async def fill(endpoint: str, records: int) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        await kinesis.ensure_stream(STREAM, SHARDS)
        starts = iter(range(0, records, PUT_BATCH))

        async def task() -> None:
            for start in starts:
                batch = [
                    {"Data": payload(i), "PartitionKey": f"key-{i % 1000}"}
                    for i in range(start, min(records, start + PUT_BATCH))
                ]
                response = await kinesis.put_records(STREAM, batch)
                assert not response.get("FailedRecordCount"), response.get("FailedRecordCount")

        await asyncio.gather(*(task() for _ in range(8)))


# -- the baseline reader (run as its own process) --------------------------------------------------


async def baseline_reader(endpoint: str, mode: str) -> int:
    from datetime import datetime

    from aiobotocore.session import get_session

    def epoch(value):
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(value, UTC)
        from botocore.utils import parse_timestamp

        return parse_timestamp(value)

    session = get_session()
    session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=epoch)
    out = sys.stdout
    count = 0
    dumps, loads = json.dumps, json.loads
    async with session.create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    ) as client:
        shards = (await client.list_shards(StreamName=STREAM))["Shards"]

        async def read(shard_id: str) -> None:
            nonlocal count
            iterator = (
                await client.get_shard_iterator(StreamName=STREAM, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")
            )["ShardIterator"]
            while iterator:
                page = await client.get_records(ShardIterator=iterator, Limit=10_000)
                lines = []
                for record in page["Records"]:
                    data = record["Data"]
                    value = loads(data)
                    arrival = record["ApproximateArrivalTimestamp"].isoformat(timespec="milliseconds")[:-6] + "Z"
                    if mode == "json":
                        lines.append(
                            dumps(
                                {
                                    "shard_id": shard_id,
                                    "sequence_number": record["SequenceNumber"],
                                    "sub_sequence_number": None,
                                    "partition_key": record["PartitionKey"],
                                    "explicit_hash_key": None,
                                    "arrival": arrival,
                                    "size": len(data),
                                    "kind": "json",
                                    "encoding": [],
                                    "content": value,
                                }
                            )
                        )
                    else:
                        lines.append(
                            f"{arrival} {shard_id} {record['SequenceNumber']} {record['PartitionKey']} json "
                            f"{len(data)}B {dumps(value, separators=(',', ':'))}"
                        )
                count += len(lines)
                if lines:
                    out.write("\n".join(lines) + "\n")
                iterator = page.get("NextShardIterator")
                if page.get("MillisBehindLatest") == 0 and len(page["Records"]) < 10_000:
                    break

        await asyncio.gather(*(read(shard["ShardId"]) for shard in shards))
    return count


# -- timing -----------------------------------------------------------------------------------------


def run(argv: list[str], stdout_path: str) -> float:
    with open(stdout_path, "wb") as out:
        started = time.perf_counter()
        result = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE)
        wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])} ... failed: {result.stderr.decode()[-500:]}")
    return wall


def lines_in(path: str) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def main() -> None:
    from console.localserver.supervision import LocalKinesisServer
    from tests.benchmarks._measure import kconsole_command

    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--baseline", choices=("json", "text"))
    parser.add_argument("--endpoint")
    options = parser.parse_args()
    if options.baseline:
        asyncio.run(baseline_reader(options.endpoint, options.baseline))
        return

    kconsole = kconsole_command()
    me = [sys.executable, str(Path(__file__).resolve())]
    with LocalKinesisServer() as server, tempfile.TemporaryDirectory() as folder:
        endpoint = server.endpoint_url
        filled = time.perf_counter()
        asyncio.run(fill(endpoint, options.records))
        print(f"filled {options.records:,} records in {time.perf_counter() - filled:.1f} s", file=sys.stderr)
        common = ["--endpoint-url", endpoint, "--region", "us-east-1"]
        env_out = os.path.join(folder, "out")
        export = os.path.join(folder, "export.jsonl")
        sides = {
            "tail_json": [*kconsole, "tail", STREAM, "--from", "trim-horizon", "--json", *common],
            "baseline_json": [*me, "--baseline", "json", "--endpoint", endpoint],
            "tail_text": [*kconsole, "tail", STREAM, "--from", "trim-horizon", *common],
            "baseline_text": [*me, "--baseline", "text", "--endpoint", endpoint],
            "export": [*kconsole, "tail", STREAM, "--from", "trim-horizon", "--to", "now", "--out", export, *common],
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        run(sides["baseline_json"], env_out)  # warm-up: the server's first full read of the stream is slower
        for round_index in range(options.rounds):
            order = names if round_index % 2 == 0 else list(reversed(names))
            for name in order:
                times[name].append(run(sides[name], env_out))
                written = lines_in(export if name == "export" else env_out)
                assert written == options.records, (name, written)
            print(
                "round: " + ", ".join(f"{name} {options.records / times[name][-1]:,.0f} rec/s" for name in names),
                file=sys.stderr,
            )
    best = {name: min(values) for name, values in times.items()}
    rate = {name: round(options.records / seconds) for name, seconds in best.items()}
    emit(
        {
            "benchmark": "tail",
            "path": "kconsole tail S --from trim-horizon [--json | --to now --out F.jsonl] > file, a whole process",
            "baseline": "a whole process: aiobotocore reading every shard concurrently, json.loads per record, ISO "
            "arrival, one line per record (json.dumps ensure_ascii=True, or text)",
            "records": options.records,
            "shards": SHARDS,
            "rps": rate,
            "ratio_json": round(best["baseline_json"] / best["tail_json"], 3),
            "ratio_text": round(best["baseline_text"] / best["tail_text"], 3),
            "ratio_export": round(best["baseline_json"] / best["export"], 3),
            "round_ratios_json": [round(b / t, 3) for b, t in zip(times["baseline_json"], times["tail_json"])],
            "targets": {"ratio_json": 1.0, "ratio_text": 1.0, "ratio_export": 1.0},
        }
    )


if __name__ == "__main__":
    main()
