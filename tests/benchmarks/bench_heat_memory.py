"""The Heat tab left open on a 10,000-shard stream: the console's memory stays flat.

The real console (KConsoleApp, headless at 140x45) on `kconsole local serve` (the embedded server in a
process of its own), a stream `big` of 10,000 shards and a paced writer in a thread of its own putting
50 records a second on five shards (bench_heat_scale's writer). The console polls the stream as it
does by default, Heat samples in turn. The console's resident set size (its process: the server's is
not counted) is read at 1/6 of the run and at its end (10 and 60 minutes with the default 60).

Target: the RSS at the end within 10% of the first checkpoint's. With --trace, tracemalloc's
allocations at the two checkpoints are compared and the lines that grew most go to stderr (the run is
slower then, and its RSS includes tracemalloc's own tables). Prints one JSON line last.

    python tests/benchmarks/bench_heat_memory.py --minutes 60
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import aws_environment, local_serve, process_rss
from bench_console import wait_for
from bench_heat_scale import HOT_SHARDS, SHARDS, SIZE, Writer

from console.backend import BackendConfig, open_backend
from console.ui.app import KConsoleApp
from console.ui.widgets.heat_map import HeatMap

TARGET = 1.10  # the end's RSS at most this times the first checkpoint's
MIB = 1024 * 1024


def rss_mib() -> float:
    gc.collect()
    return process_rss(os.getpid()) / MIB


async def bench(endpoint: str, minutes: float, trace: bool, shards: int) -> dict:
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        await kinesis.ensure_stream("big", shards)
        writer = Writer(config)
        writer.start()
        try:
            app = KConsoleApp(kinesis, stream="big")
            async with app.run_test(size=SIZE) as pilot:
                await wait_for(lambda: app.table.row_count == shards, timeout=180)
                await pilot.press("7")

                def heat_rows_shown() -> bool:
                    maps = app.query(HeatMap)
                    return bool(maps) and len(maps.first().rows) == shards

                await wait_for(heat_rows_shown, timeout=60)
                began = time.monotonic()
                opened_mib = rss_mib()
                if trace:
                    tracemalloc.start(8)
                await asyncio.sleep(max(0.0, began + 60 * minutes / 6 - time.monotonic()))
                first_mib = rss_mib()
                first_snapshot = tracemalloc.take_snapshot() if trace else None
                await asyncio.sleep(max(0.0, began + 60 * minutes - time.monotonic()))
                end_mib = rss_mib()
                if first_snapshot is not None:
                    grown = tracemalloc.take_snapshot().compare_to(first_snapshot, "traceback")
                    for stat in grown[:12]:
                        print(f"{stat.size_diff / 1024:+.0f} KiB ({stat.count_diff:+d} blocks)", file=sys.stderr)
                        for line in stat.traceback.format()[-8:]:
                            print("   ", line, file=sys.stderr)
                    tracemalloc.stop()
                panel = app.lazy_pane("heat").panel
                header = str(panel.query_one("#heat-total").render())
                await pilot.press("1")  # Heat stopped, and its HeatStopped handled, before the app closes
                await wait_for(lambda: app.table.heat_stale, timeout=60)
        finally:
            writer.stopping.set()
            writer.join(timeout=10)
    return {
        "opened_mib": opened_mib,
        "first_mib": first_mib,
        "end_mib": end_mib,
        "header": header.splitlines()[0],
        "written": writer.written,
    }


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long Heat samples (default 60)")
    parser.add_argument("--trace", action="store_true", help="list what grew between the checkpoints (stderr)")
    parser.add_argument("--shards", type=int, default=SHARDS, help=f"the stream's shards (default {SHARDS:,})")
    args = parser.parse_args()
    if args.shards < len(HOT_SHARDS):
        parser.error(f"--shards must be at least {len(HOT_SHARDS)} (the writer's hot shards); got {args.shards}")
    if args.minutes <= 0:
        parser.error(f"--minutes must be above 0; got {args.minutes:g}")
    os.environ.update(aws_environment())
    with local_serve() as endpoint:
        raw = asyncio.run(bench(endpoint, args.minutes, args.trace, args.shards))
    ratio = raw["end_mib"] / raw["first_mib"]
    return {
        "benchmark": "heat_memory",
        "path": f"the console's Heat tab sampling a {args.shards:,}-shard stream on `kconsole local serve`, 50 rec/s written",
        "baseline": f"the same console's RSS at {args.minutes / 6:g} minutes",
        "minutes": args.minutes,
        "traced": args.trace,
        "rss_opened_mib": round(raw["opened_mib"], 1),
        "rss_first_mib": round(raw["first_mib"], 1),
        "rss_end_mib": round(raw["end_mib"], 1),
        "ratio": round(ratio, 3),
        "growth_mib_per_minute": round((raw["end_mib"] - raw["first_mib"]) / (args.minutes * 5 / 6), 2),
        "header": raw["header"],
        "written": raw["written"],
        "target_met": ratio <= TARGET,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
