"""`kconsole streams` against `aws kinesis list-streams`, cold, at 1 and at 100 streams, and against a
16-thread botocore loop doing the same describes at 100 and at 1,000 streams.

Each run is a fresh process against one `kconsole local serve`: first holding 1 stream, then 100. The
AWS CLI (v1, in the cached venv bench_startup makes) pages ListStreams to the end and prints names,
statuses and modes (StreamSummaries). kconsole does the whole of what a user sees: the same
ListStreams page-through, one DescribeStreamSummary per stream (open shards, retention, encryption,
distribution; DESCRIBE_CONCURRENCY at once) and one batched CloudWatch read of the last 30 minutes.
`names` is kconsole with a --query that needs no describe (the listing alone, the AWS CLI's own work).
kconsole's modules are compiled to bytecode first, as an install leaves them (the AWS CLI's are).
Rounds are interleaved (kconsole, then the AWS CLI, then the names-only kconsole), so a busy moment of
the shared machine lands on every side; the ratio is of medians. Target: ratio <= 1.0 at 1 and at 100.
`threads` is what a user writes to see the same describes (the AWS CLI's list-streams describes none):
a fresh process, botocore's ListStreams paged to the end, then DescribeStreamSummary of every stream on
16 threads; `threads_ratio` is kconsole over it (target <= 1.0 at 1,000 streams).
One JSON line of figures last.

    python tests/benchmarks/bench_streams.py [--counts 1,100,1000] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import aws_environment, compiled_like_an_install, emit, kconsole_command, local_serve, run_process
from bench_startup import aws_cli

ROUNDS = 7
COUNTS = (1, 100, 1000)
TARGET_RATIO = 1.0
THREADS_FROM = 100  # the thread loop runs from this many streams up
DESCRIBE_THREADS = """
import sys
from concurrent.futures import ThreadPoolExecutor

import botocore.session

client = botocore.session.get_session().create_client(
    "kinesis", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="local",
    aws_secret_access_key="local")
names = [name for page in client.get_paginator("list_streams").paginate() for name in page["StreamNames"]]
with ThreadPoolExecutor(16) as pool:
    summaries = list(pool.map(lambda name: client.describe_stream_summary(StreamName=name), names))
for summary in summaries:
    found = summary["StreamDescriptionSummary"]
    print(found["StreamName"], found["StreamStatus"], found["OpenShardCount"], found["RetentionPeriodHours"])
"""


async def create_streams(endpoint: str, first: int, count: int) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        gate = asyncio.Semaphore(16)

        async def create(index: int) -> None:
            async with gate:
                await kinesis.create_stream(f"bench-{index:03d}", 1)

        names = range(first, count)
        await asyncio.gather(*(create(index) for index in names))
        for index in names:
            await kinesis.wait_for_active(f"bench-{index:03d}")


def measure(endpoint: str, aws: str | None, env: dict, count: int, rounds: int, threads_script: Path) -> dict:
    common = ["--endpoint-url", endpoint, "--region", "us-east-1"]
    commands = {
        "kconsole": [*kconsole_command(), "streams", *common],
        "names": [*kconsole_command(), "streams", *common, "--query", "[].name"],
    }
    if aws is not None:
        commands["aws"] = [aws, "kinesis", "list-streams", *common]
    if count >= THREADS_FROM:
        commands["threads"] = [sys.executable, str(threads_script), endpoint]
    listed = subprocess.run(commands["kconsole"] + ["--json"], capture_output=True, env=env, check=True)
    shown = json.loads(listed.stdout)
    assert len(shown) == count, f"kconsole streams listed {len(shown)} of {count} streams"
    assert all(row["open_shard_count"] == 1 for row in shown), "a stream was not described"
    if aws is not None:
        peer = json.loads(subprocess.run(commands["aws"], capture_output=True, env=env, check=True).stdout)
        assert len(peer["StreamNames"]) == count, "the AWS CLI did not list every stream"
    runs: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            run = run_process(argv, env=env)
            runs[name].append(run.wall)
            cpus[name].append(run.cpu)
    figures = {f"{name}_s": round(statistics.median(walls), 4) for name, walls in runs.items()}
    figures |= {f"{name}_best_s": round(min(walls), 4) for name, walls in runs.items()}
    # CPU of each process (user + system): less disturbed than wall time by a busy machine.
    figures |= {f"{name}_cpu_s": round(statistics.median(used), 4) for name, used in cpus.items()}
    if aws is not None:
        figures["ratio"] = round(statistics.median(runs["kconsole"]) / statistics.median(runs["aws"]), 2)
        figures["names_ratio"] = round(statistics.median(runs["names"]) / statistics.median(runs["aws"]), 2)
        figures["cpu_ratio"] = round(statistics.median(cpus["kconsole"]) / statistics.median(cpus["aws"]), 2)
    if "threads" in runs:
        figures["threads_ratio"] = round(statistics.median(runs["kconsole"]) / statistics.median(runs["threads"]), 2)
        figures["threads_cpu_ratio"] = round(
            statistics.median(cpus["kconsole"]) / statistics.median(cpus["threads"]), 2
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)), help="stream counts, ascending")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    options = parser.parse_args()
    counts = [int(count) for count in options.counts.split(",")]
    compiled_like_an_install()
    env = aws_environment()
    aws = aws_cli()
    results = {}
    with local_serve() as endpoint, tempfile.TemporaryDirectory() as folder:
        threads_script = Path(folder) / "describe_threads.py"
        threads_script.write_text(DESCRIBE_THREADS)
        made = 0
        for count in counts:
            asyncio.run(create_streams(endpoint, made, count))
            made = count
            results[str(count)] = measure(endpoint, aws, env, count, options.rounds, threads_script)
    figures = {
        "benchmark": "streams",
        "path": "fresh `kconsole streams --endpoint-url URL`: one ListStreams page-through, one "
        "DescribeStreamSummary per stream (concurrently), one batched CloudWatch read; medians of "
        f"{options.rounds} interleaved rounds",
        "baseline": "aws kinesis list-streams --endpoint-url URL on the same server (AWS CLI v1); from "
        f"{THREADS_FROM} streams, a fresh botocore process: ListStreams, then DescribeStreamSummary on 16 threads",
        "streams": results,
        "ratios": {count: figures.get("ratio") for count, figures in results.items()},
        "threads_ratios": {
            count: figures["threads_ratio"] for count, figures in results.items() if "threads_ratio" in figures
        },
        "target_ratio": TARGET_RATIO,
        "within_target": all(
            (figures.get("ratio") or 99) <= TARGET_RATIO and figures.get("threads_ratio", 0) <= TARGET_RATIO
            for figures in results.values()
        ),
    }
    emit(figures)


if __name__ == "__main__":
    main()
