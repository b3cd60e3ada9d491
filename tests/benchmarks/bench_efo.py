"""`kconsole tail --efo` (SubscribeToShard over HTTP/2) against the GetRecords tail, on the same data, on
kinesis-mock (npm kinesis-local, the only local server that serves SubscribeToShard), whole processes.

- read: `kconsole tail S --from trim-horizon --json > file` with and without `--efo --consumer C` (a
  consumer registered beforehand), and `--efo --yes` (a temporary consumer registered, waited for and
  deregistered inside the run): wall time, records/s and the process's CPU.
- delivery latency: `kconsole tail S --follow --json` (with and without `--efo --consumer C`) runs while
  this script puts one record every DELIVERY_GAP seconds, each carrying the moment it was put; the latency
  is the moment its line reached this script minus that. GetRecords tail polls an idle shard once a
  second; kinesis-mock pushes an event a second (AWS pushes records as they arrive, ~70 ms).
Rounds alternate the order of the sides; the fastest read of each counts (load on a shared machine only
ever adds time).

    python tests/benchmarks/bench_efo.py [--records N] [--rounds R] [--endpoint URL]

Without --endpoint a kinesis-mock is started as tests/conftest.py starts it. Prints one JSON line of
figures last.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit

SHARDS = 4
RECORDS = 10_000
ROUNDS = 3
PUT_BATCH = 500
DELIVERIES = 40
DELIVERY_GAP = 0.25
STREAM = f"bench-efo-{os.getpid()}"  # a stream of this run's own on a shared --endpoint
CONSUMER = "bench-efo-reader"


def start_kinesis_mock() -> tuple[subprocess.Popen, str]:
    from tests.conftest import KINESIS_MOCK_MAIN, free_port

    node = shutil.which("node")
    if node is None or not KINESIS_MOCK_MAIN.exists():
        raise SystemExit("kinesis-mock is not installed (run the kinesis_mock tests once, or give --endpoint)")
    port = free_port()
    env = dict(
        os.environ,
        KINESIS_MOCK_CERT_PATH=str(KINESIS_MOCK_MAIN.parent / "server.json"),
        KINESIS_MOCK_PLAIN_PORT=str(port),
        KINESIS_MOCK_TLS_PORT=str(free_port()),
        AWS_REGION="us-east-1",
        LOG_LEVEL="ERROR",
        ROOT_LOG_LEVEL="ERROR",
        CREATE_STREAM_DURATION="50ms",
        REGISTER_STREAM_CONSUMER_DURATION="50ms",
        DEREGISTER_STREAM_CONSUMER_DURATION="50ms",
    )
    process = subprocess.Popen(
        [node, str(KINESIS_MOCK_MAIN)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import http.client

    deadline = time.monotonic() + 90
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/healthcheck")
            connection.getresponse().read()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise SystemExit("kinesis-mock did not answer in 90 s") from None
            time.sleep(0.2)


async def prepare(endpoint: str, records: int) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        await kinesis.ensure_stream(STREAM, SHARDS)
        await kinesis.wait_for_active(STREAM)
        starts = iter(range(0, records, PUT_BATCH))

        async def task() -> None:
            for start in starts:
                batch = [
                    {"Data": json.dumps({"n": i, "pad": "x" * 150}).encode(), "PartitionKey": f"key-{i % 1000}"}
                    for i in range(start, min(records, start + PUT_BATCH))
                ]
                response = await kinesis.put_records(STREAM, batch)
                assert not response.get("FailedRecordCount")

        await task()  # one put at a time: kinesis-mock times out under concurrent 500-record puts
        arn = (await kinesis.describe_stream_summary(STREAM)).arn
        from console.errors import ResourceInUse

        with contextlib.suppress(ResourceInUse):  # a slow reply to the first call was retried: it is registered
            await kinesis.register_stream_consumer(arn, CONSUMER)
        while not (await kinesis.describe_stream_consumer(arn, CONSUMER)).active:
            await asyncio.sleep(0.1)


def timed_read(argv: list[str], out_path: str) -> tuple[float, float, int]:
    from tests.benchmarks._measure import run_process

    with open(out_path, "wb") as out:
        run = run_process(argv, stdout=out)
    with open(out_path, "rb") as handle:
        lines = sum(1 for _ in handle)
    return run.wall, run.cpu, lines


async def delivery_latency(argv: list[str], endpoint: str) -> list[float]:
    """Seconds from each put to its line on the follower's stdout."""
    from datetime import UTC, datetime

    from console.backend import BackendConfig, open_backend

    # From this moment (not LATEST): a follower slow to start on a busy machine still sees every record.
    since = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    follower = await asyncio.create_subprocess_exec(
        *argv, "--from", since, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        await asyncio.sleep(6.0)  # started, positioned, subscriptions open (with --json no line says so)
        latencies: list[float] = []

        async def collect() -> None:
            while len(latencies) < DELIVERIES:
                line = await follower.stdout.readline()  # type: ignore[union-attr]
                if not line:
                    return
                content = json.loads(line)["content"]
                if isinstance(content, dict) and "sent" in content:
                    latencies.append(time.time() - content["sent"])

        collector = asyncio.create_task(collect())
        async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
            for index in range(DELIVERIES):
                data = json.dumps({"sent": time.time(), "i": index}).encode()
                await kinesis.put_record(STREAM, data, f"latency-{index}")
                await asyncio.sleep(DELIVERY_GAP)
        try:
            await asyncio.wait_for(collector, 30)
        except TimeoutError:
            print(f"only {len(latencies)} of {DELIVERIES} records reached the follower", file=sys.stderr)
        return latencies
    finally:
        follower.terminate()
        await follower.wait()


def main() -> None:
    from tests.benchmarks._measure import kconsole_command

    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--endpoint")
    options = parser.parse_args()
    process = None
    endpoint = options.endpoint
    if endpoint is None:
        process, endpoint = start_kinesis_mock()
    try:
        asyncio.run(prepare(endpoint, options.records))
        common = [*kconsole_command(), "--endpoint-url", endpoint, "--region", "us-east-1", "tail", STREAM, "--json"]
        sides = {
            "getrecords": [*common, "--from", "trim-horizon"],
            "efo": [*common, "--from", "trim-horizon", "--efo", "--consumer", CONSUMER],
            "efo_temporary": [*common, "--from", "trim-horizon", "--efo", "--yes"],
        }
        runs: dict[str, list[tuple[float, float, int]]] = {side: [] for side in sides}
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "out")
            timed_read(sides["getrecords"], out)  # warm-up
            for round_index in range(options.rounds):
                order = list(sides) if round_index % 2 == 0 else list(reversed(sides))
                for side in order:
                    runs[side].append(timed_read(sides[side], out))
        for side, measured in runs.items():
            assert all(lines == options.records for _, _, lines in measured), (side, measured)
        best = {side: min(measured) for side, measured in runs.items()}
        print(json.dumps({"reads": best}), file=sys.stderr)
        follow = {
            "getrecords": [*common, "--follow"],
            "efo": [*common, "--follow", "--efo", "--consumer", CONSUMER],
        }
        latency = {side: asyncio.run(delivery_latency(argv, endpoint)) for side, argv in follow.items()}
        figures = {
            "benchmark": "efo",
            "records": options.records,
            "shards": SHARDS,
            **{
                f"{side}_{name}": value
                for side, (wall, cpu, _) in best.items()
                for name, value in (
                    ("seconds", round(wall, 3)),
                    ("records_per_second", round(options.records / wall)),
                    ("cpu_seconds", round(cpu, 3)),
                    ("cpu_us_per_record", round(cpu / options.records * 1e6, 1)),
                )
            },
            "efo_over_getrecords": round(best["getrecords"][0] / best["efo"][0], 2),
            # The reading process's CPU per record, EFO over GetRecords (below 1: EFO costs the client less).
            "efo_cpu_per_record_ratio": round(best["efo"][1] / best["getrecords"][1], 2),
            **{
                f"{side}_latency_ms_{name}": round(value * 1000)
                for side, values in latency.items()
                for name, value in (
                    ("median", statistics.median(values)),
                    ("p95", sorted(values)[int(len(values) * 0.95) - 1]),
                )
            },
        }
        figures["efo_latency_over_getrecords"] = round(
            figures["efo_latency_ms_median"] / figures["getrecords_latency_ms_median"], 2
        )
        emit(figures)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:  # a busy machine: it is stopped, not left behind
                process.kill()
                process.wait()


if __name__ == "__main__":
    main()
