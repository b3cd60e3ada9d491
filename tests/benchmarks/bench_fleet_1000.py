"""The fleet (the console started without --stream) on 1,000 one-shard streams, as a user opens it and
moves around while it fills.

The real console (KConsoleApp, headless at 160x45) on `kconsole local serve` (the embedded server in a
process of its own), 1,000 one-shard streams, each with a minute of IncomingRecords and IncomingBytes
in CloudWatch. Measured in one run, on the console's own loop:

  first_rows_s      from the app starting to the fleet holding a row per stream
  all_columns_s     from the app starting to every row having its rates (CloudWatch) and its shard
                    and EFO counts (one DescribeStreamSummary a stream)
  fill_key_s        ↓ pressed while the fleet fills (from FILL_KEYS_AFTER_S on): key sent to the
                    cursor moved and the screen painted
  key_s             ↓ once every column is filled: the same
  stall_s           the worst stall of a 10 ms timer on the UI loop while the fleet fills
  idle_cpu_percent  CPU of the console's loop once filled, over IDLE_S seconds of no keys
  quit_s            `q` once every column is filled: key sent to the app ended
  streams_cli_s     the baseline: `kconsole streams --endpoint-url URL` on the same server, the same
                    ListStreams, DescribeStreamSummary per stream and CloudWatch read, in a process of
                    its own (the server's own speed: on a loaded machine both take longer)

Key latencies are the median and the worst of KEYS presses, spaced irregularly. Targets: every key
(filling or filled) < 100 ms; all_columns_s < 10 s. Prints one JSON line last.

    python tests/benchmarks/bench_fleet_1000.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import aws_environment, emit, kconsole_command, local_serve, run_process
from bench_console import Heartbeat, render_now
from textual import events

from console.backend import BackendConfig, open_backend
from console.ui.app import KConsoleApp
from console.ui.screens.stream_picker import COLUMNS, StreamPickerScreen
from console.ui.widgets.fleet_table import FleetTable

STREAMS = 1000
KEYS = 15
FILL_KEYS_AFTER_S = 3.0
IDLE_S = 5.0
SIZE = (160, 45)
TARGETS = {"key_s": 0.100, "all_columns_s": 10.0}
SHARDS_COLUMN, EFO_COLUMN = COLUMNS.index("Shards"), COLUMNS.index("EFO")
RATE_COLUMN = next(index for index, label in enumerate(COLUMNS) if label.startswith("In rec/s"))


async def prepare(endpoint: str) -> None:
    """STREAMS one-shard streams, 16 creations at once, and a minute of incoming traffic on each."""
    from aiobotocore.session import AioSession

    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        names = [f"fleet-{index:04d}" for index in range(STREAMS)]
        existing = set(await kinesis.stream_names())
        gate = asyncio.Semaphore(16)

        async def create(name: str) -> None:
            async with gate:
                await kinesis.create_stream(name, 1)

        await asyncio.gather(*(create(name) for name in names if name not in existing))
    minute = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2)
    data = [
        {"MetricName": metric, "Dimensions": [{"Name": "StreamName", "Value": name}], "Timestamp": minute, "Value": v}
        for index, name in enumerate(names)
        for metric, v in (("IncomingRecords", 60.0 * (index % 50)), ("IncomingBytes", 6_000.0 * (index % 50)))
    ]
    async with AioSession().create_client("cloudwatch", region_name="us-east-1", endpoint_url=endpoint) as cloudwatch:
        for offset in range(0, len(data), 1000):
            await cloudwatch.put_metric_data(Namespace="AWS/Kinesis", MetricData=data[offset : offset + 1000])


def picker(app: KConsoleApp) -> StreamPickerScreen | None:
    screen = app.screen
    return screen if isinstance(screen, StreamPickerScreen) else None


def table_of(app: KConsoleApp) -> FleetTable:
    screen = picker(app)
    assert screen is not None
    return screen.query_one("#picker-list", FleetTable)


def all_filled(app: KConsoleApp) -> bool:
    screen = picker(app)
    if screen is None or len(screen.streams) < STREAMS:
        return False
    table = screen.query_one("#picker-list", FleetTable)
    for key in table.keys:
        cells = table.line(key).cells
        if "-" in (cells[SHARDS_COLUMN], cells[EFO_COLUMN], cells[RATE_COLUMN]):
            return False
    return True


async def press(app: KConsoleApp, key: str, done, timeout: float = 300.0) -> float:
    """Seconds from the key reaching the app's driver to `done()` and the screen painted."""
    started = time.perf_counter()
    app._driver.send_message(events.Key(key, key))
    while not done():
        if time.perf_counter() - started > timeout:
            return float("inf")
        await asyncio.sleep(0.0005)
    if app.is_running:
        render_now(app)
    return time.perf_counter() - started


async def key_latencies(app: KConsoleApp, count: int, until=None) -> list[float]:
    """↓ `count` times (or until `until()`), the cursor back at the top when it reaches the bottom."""
    rng = random.Random(7)
    figures: list[float] = []
    while len(figures) < count and not (until and until()):
        table = table_of(app)
        before = table.cursor_row
        key = "down" if before < table.row_count - 1 else "home"
        figures.append(await press(app, key, lambda: table_of(app).cursor_row != before))
        await asyncio.sleep(rng.uniform(0.05, 0.3))
    return figures


async def bench(endpoint: str) -> dict:
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        app = KConsoleApp(kinesis, stream=None, interval=3600)
        started = time.perf_counter()
        async with app.run_test(size=SIZE) as pilot:
            heartbeat = Heartbeat(app)
            while not ((screen := picker(app)) and len(screen.streams) >= STREAMS):
                await asyncio.sleep(0.005)
            first_rows = time.perf_counter() - started
            await asyncio.sleep(max(0.0, FILL_KEYS_AFTER_S - first_rows))
            filling = await key_latencies(app, KEYS, until=lambda: all_filled(app))
            while not all_filled(app):
                if time.perf_counter() - started > 600:
                    raise SystemExit("the fleet's columns were not filled in 10 minutes")
                await asyncio.sleep(0.05)
            all_columns = time.perf_counter() - started
            stall = heartbeat.worst
            heartbeat.timer.stop()
            filled = await key_latencies(app, KEYS)
            cpu_began, wall_began = time.thread_time(), time.perf_counter()
            await asyncio.sleep(IDLE_S)
            idle_cpu = (time.thread_time() - cpu_began) / (time.perf_counter() - wall_began)
            quit_s = await press(app, "q", lambda: app.return_code is not None or not app.is_running, 120.0)
            await pilot.pause()
    return {
        "first_rows_s": first_rows,
        "all_columns_s": all_columns,
        "fill_key_s": filling,
        "key_s": filled,
        "stall_s": stall,
        "idle_cpu": idle_cpu,
        "quit_s": quit_s,
    }


def summary(figures: list[float]) -> dict:
    if not figures:
        return {"median": None, "worst": None, "count": 0}
    return {"median": round(statistics.median(figures), 4), "worst": round(max(figures), 4), "count": len(figures)}


def main() -> dict:
    import os

    os.environ.update(aws_environment())
    with local_serve() as endpoint:
        asyncio.run(prepare(endpoint))
        raw = asyncio.run(bench(endpoint))
        argv = [*kconsole_command(), "streams", "--endpoint-url", endpoint, "--region", "us-east-1", "--json"]
        cli = run_process(argv, env=aws_environment()).wall
    keys = raw["fill_key_s"] + raw["key_s"]
    figures = {
        "benchmark": "fleet_1000",
        "path": f"the console without --stream (the fleet) on {STREAMS:,} one-shard streams on `kconsole local serve`",
        "streams": STREAMS,
        "first_rows_s": round(raw["first_rows_s"], 3),
        "all_columns_s": round(raw["all_columns_s"], 3),
        "fill_key_s": summary(raw["fill_key_s"]),
        "key_s": summary(raw["key_s"]),
        "stall_s": round(raw["stall_s"], 4),
        "idle_cpu_percent": round(100 * raw["idle_cpu"], 1),
        "quit_s": round(raw["quit_s"], 4),
        "streams_cli_s": round(cli, 3),
        "targets": TARGETS,
    }
    figures["targets_met"] = (
        bool(keys) and max(keys) < TARGETS["key_s"] and raw["all_columns_s"] < TARGETS["all_columns_s"]
    )
    return figures


if __name__ == "__main__":
    emit(main())
