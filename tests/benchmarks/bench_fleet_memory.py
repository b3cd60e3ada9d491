"""The fleet (the console started without --stream) left open on 300 streams for an hour: does its memory
stay flat?

`kconsole --endpoint-url URL` in a pseudo-terminal (140x45), as a user starts it, on `kconsole local
serve` (the embedded server in a process of its own) holding 300 one-shard streams, each with a minute
of IncomingRecords and IncomingBytes in CloudWatch. The fleet re-reads every stream's metrics once a
minute (FLEET_REFRESH_S); nothing is pressed. Measured on the console's process (Linux /proc):

  rss_early_mib     resident memory at the first checkpoint (a sixth of the run: 10 minutes of 60)
  rss_end_mib       resident memory at the end of the run
  growth_percent    how much the end is above the first checkpoint
  idle_cpu_percent  the console's CPU (user + system) between the two checkpoints, refreshes included

Target: rss_end_mib within 10% of rss_early_mib. Prints one JSON line per checkpoint as it is reached
(`"checkpoint"`), then the result.

    python tests/benchmarks/bench_fleet_memory.py               # an hour
    python tests/benchmarks/bench_fleet_memory.py --minutes 12  # checkpoints at 2 and 12 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import Terminal, aws_environment, kconsole_command, local_serve, process_cpu, process_rss

from console.heat.fleet import FLEET_REFRESH_S

STREAMS = 300
SIZE = (140, 45)
TARGET_GROWTH = 0.10
MIB = 1024 * 1024


def prepare(endpoint: str) -> None:
    """STREAMS one-shard streams with a minute of traffic each, written the way bench_fleet_1000 does."""
    import asyncio

    import bench_fleet_1000

    bench_fleet_1000.STREAMS = STREAMS
    asyncio.run(bench_fleet_1000.prepare(endpoint))


def checkpoint(terminal: Terminal, label: str, started: float) -> dict:
    figures = {
        "benchmark": "fleet_memory",
        "checkpoint": label,
        "minutes": round((time.perf_counter() - started) / 60, 2),
        "rss_mib": round(process_rss(terminal.pid) / MIB, 1),
        "cpu_s": round(process_cpu(terminal.pid), 2),
    }
    print(json.dumps(figures), flush=True)
    return figures


def main(minutes: float) -> dict:
    os.environ.update(aws_environment())
    with local_serve() as endpoint:
        prepare(endpoint)
        argv = [*kconsole_command(), "--endpoint-url", endpoint, "--region", "us-east-1"]
        terminal = Terminal(argv, columns=SIZE[0], rows=SIZE[1], env=aws_environment())
        try:
            terminal.wait_for(f"{STREAMS} streams,".encode(), timeout=120)  # the first metrics read is shown
            started = time.perf_counter()
            terminal.drain(minutes * 60 / 6)
            early = checkpoint(terminal, "early", started)
            terminal.drain(minutes * 60 - (time.perf_counter() - started))
            end = checkpoint(terminal, "end", started)
        finally:
            terminal.close()
    growth = (end["rss_mib"] - early["rss_mib"]) / early["rss_mib"]
    between = (end["minutes"] - early["minutes"]) * 60
    return {
        "benchmark": "fleet_memory",
        "path": f"the console without --stream (the fleet) on {STREAMS} one-shard streams on `kconsole local serve`, "
        f"left refreshing every {FLEET_REFRESH_S:g} s",
        "streams": STREAMS,
        "minutes": minutes,
        "rss_early_mib": early["rss_mib"],
        "rss_early_at_min": early["minutes"],
        "rss_end_mib": end["rss_mib"],
        "rss_end_at_min": end["minutes"],
        "growth_percent": round(100 * growth, 1),
        "idle_cpu_percent": round(100 * (end["cpu_s"] - early["cpu_s"]) / between, 1),
        "target_growth_percent": round(100 * TARGET_GROWTH),
        "targets_met": abs(growth) <= TARGET_GROWTH,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="length of the run (default 60)")
    options = parser.parse_args()
    if options.minutes <= 0:
        parser.error("--minutes must be above 0")
    print(json.dumps(main(options.minutes)))
