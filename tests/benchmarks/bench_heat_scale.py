"""The Heat tab on a 10,000-shard stream, as an on-call engineer opens it and moves around while it samples.

The real console (KConsoleApp, headless at 140x45) on `kconsole local serve` (the embedded server in a
process of its own), a stream `big` of 10,000 shards, and a paced writer in a thread of its own
(its own loop and client: it is the traffic, not the console) putting 50 records a second on five
shards. Measured in one run, on the console's own loop:

  shards_key_s      `j` on the Shards tab before Heat was ever opened: key sent to the selection
                    moved and the screen painted (the baseline: what the console costs without heat)
  heat_open_s       `7`: key sent to the heat map holding its 10,000 rows, painted
  heat_key_s        `j` on the Heat tab while it samples: key sent to the marker moved and painted
  heat_stall_s      the worst stall of a 10 ms timer on the UI loop while Heat samples
  switch_to_shards_s  `1` from the sampling Heat tab: key sent to the Shards tab shown and painted
  heat_cpu_percent  CPU of the console's loop (its thread: the writer's is not counted) while Heat
                    samples, per wall second

Key latencies are the median and the worst of KEYS presses, spaced irregularly so they fall at every
phase of the sampler's second. The sampler reads and counts in a worker thread (its own loop and
backend), so a key on the Heat tab should cost what it costs on the Shards tab. Targets: heat_open_s
< 1 s; `ratio` = heat_key_s median / shards_key_s median <= 1.3; heat_key_s worst < 50 ms.
Prints one JSON line last.

    python tests/benchmarks/bench_heat_scale.py
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import aws_environment, local_serve
from bench_console import Heartbeat, render_now, wait_for
from textual import events
from textual.widgets import TabbedContent

from console.backend import BackendConfig, open_backend
from console.ui.app import KConsoleApp
from console.ui.widgets.heat_map import HeatMap

SHARDS = 10_000
KEYS = 25
SIZE = (140, 45)
WRITE_PER_SECOND = 50
HOT_SHARDS = (17, 2_500, 5_000, 7_500, 9_990)
TARGETS = {"heat_open_s": 1.0, "ratio": 1.3, "heat_key_worst_s": 0.050}


class Writer(threading.Thread):
    """Puts WRITE_PER_SECOND records a second on HOT_SHARDS (by ExplicitHashKey) until stopped."""

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(daemon=True)
        self.config = config
        self.stopping = threading.Event()
        self.written = 0

    def run(self) -> None:
        asyncio.run(self._write())

    async def _write(self) -> None:
        async with open_backend(self.config) as kinesis:
            shards = await kinesis.all_shards("big")
            targets = [shards[index * len(shards) // SHARDS] for index in HOT_SHARDS]  # as placed on a smaller stream
            tick = 0
            began = time.monotonic()
            while not self.stopping.is_set():
                records = [
                    {
                        "Data": b"x" * 200,
                        "PartitionKey": f"key-{n % 7}",
                        "ExplicitHashKey": str(targets[n % len(targets)].starting_hash_key),
                    }
                    for n in range(WRITE_PER_SECOND)
                ]
                await kinesis.put_records("big", records)
                self.written += len(records)
                tick += 1
                await asyncio.sleep(max(0.0, began + tick - time.monotonic()))


async def press(app: KConsoleApp, key: str, done) -> float:
    """Seconds from the key reaching the app's driver to `done()` and the screen painted."""
    started = time.perf_counter()
    app._driver.send_message(events.Key(key, key))
    while not done():
        await asyncio.sleep(0.0005)
    render_now(app)
    return time.perf_counter() - started


async def key_latencies(app: KConsoleApp, key: str, selection) -> list[float]:
    rng = random.Random(3)
    figures = []
    for _ in range(KEYS):
        before = selection()
        figures.append(await press(app, key, lambda: selection() != before))
        await asyncio.sleep(rng.uniform(0.05, 0.4))
    return figures


async def bench(endpoint: str) -> dict:
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        await kinesis.ensure_stream("big", SHARDS)
        writer = Writer(config)
        writer.start()
        try:
            app = KConsoleApp(kinesis, stream="big", interval=3600)
            async with app.run_test(size=SIZE):
                await wait_for(lambda: app.table.row_count == SHARDS, timeout=120)
                await asyncio.sleep(1.0)
                app.table.focus()
                render_now(app)
                shards_keys = await key_latencies(app, "j", lambda: app.table.selected_shard_id)

                def heat_rows_shown() -> bool:  # the tab (and its map) is built when first shown
                    maps = app.query(HeatMap)
                    return bool(maps) and len(maps.first().rows) == SHARDS

                heat_open = await press(app, "7", heat_rows_shown)
                panel = app.lazy_pane("heat").panel
                panel.focus()
                await asyncio.sleep(3.0)  # sampling is under way: hot shards found, the pass going on
                heartbeat = Heartbeat(app)
                cpu_began, wall_began = time.thread_time(), time.perf_counter()
                heat_keys = await key_latencies(app, "j", lambda: panel.selected_shard)
                cpu = (time.thread_time() - cpu_began) / (time.perf_counter() - wall_began)
                stall = heartbeat.worst
                header = str(panel.query_one("#heat-total").render())
                tabs = app.query_one(TabbedContent)
                switch = await press(app, "1", lambda: tabs.active == "shards")
                heartbeat.timer.stop()
                # The hidden tab's HeatStopped handled before the app closes (slow on a loaded machine).
                await wait_for(lambda: app.table.heat_stale, timeout=60)
        finally:
            writer.stopping.set()
            writer.join(timeout=10)
    return {
        "shards_key_s": shards_keys,
        "heat_open_s": heat_open,
        "heat_key_s": heat_keys,
        "heat_stall_s": stall,
        "switch_to_shards_s": switch,
        "heat_cpu": cpu,
        "coverage": header.splitlines()[-1],
        "written": writer.written,
    }


def main() -> dict:
    import os

    os.environ.update(aws_environment())
    with local_serve() as endpoint:
        raw = asyncio.run(bench(endpoint))
    shards_median = statistics.median(raw["shards_key_s"])
    heat_median, heat_worst = statistics.median(raw["heat_key_s"]), max(raw["heat_key_s"])
    figures = {
        "benchmark": "heat_scale",
        "path": "the console's Heat tab on a 10,000-shard stream on `kconsole local serve`, 50 rec/s written",
        "baseline": "the same console's Shards tab, same run, before Heat was opened",
        "shards": SHARDS,
        "coverage": raw["coverage"],
        "heat_open_s": round(raw["heat_open_s"], 4),
        "shards_key_median_s": round(shards_median, 4),
        "shards_key_worst_s": round(max(raw["shards_key_s"]), 4),
        "heat_key_median_s": round(heat_median, 4),
        "heat_key_worst_s": round(heat_worst, 4),
        "heat_stall_s": round(raw["heat_stall_s"], 4),
        "switch_to_shards_s": round(raw["switch_to_shards_s"], 4),
        "heat_cpu_percent": round(100 * raw["heat_cpu"], 1),
        "ratio": round(heat_median / shards_median, 2) if shards_median else None,
        "heat_key_worst_ms": round(1000 * heat_worst, 1),
    }
    figures["targets_met"] = (
        raw["heat_open_s"] < TARGETS["heat_open_s"]
        and figures["ratio"] is not None
        and figures["ratio"] <= TARGETS["ratio"]
        and heat_worst < TARGETS["heat_key_worst_s"]
    )
    return figures


if __name__ == "__main__":
    print(json.dumps(main()))
