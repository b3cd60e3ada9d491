"""What the benchmarks share: running a command the way a user does and timing its whole cost."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def kconsole_command() -> list[str]:
    """The installed `kconsole` script next to this interpreter (what a user types), else the module."""
    script = Path(sys.executable).with_name("kconsole")
    return [str(script)] if script.exists() else [sys.executable, "-m", "console.cli"]


@dataclass(frozen=True)
class Run:
    wall: float  # seconds, start of the process to its exit
    cpu: float  # user + system seconds of the process (and its children)


def run_process(argv: list[str], *, stdout=subprocess.DEVNULL, env: dict | None = None, stdin=None) -> Run:
    """Run one process to completion; its wall time and the CPU it used. A failure stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, stdin=stdin)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed ({result.returncode}): {result.stderr.decode()[-400:]}")
    return Run(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def fastest(runs) -> Run:
    """The fastest run by wall time: other processes on the machine only ever add time."""
    return min(runs, key=lambda run: run.wall)


def best_of(rounds: int, measure) -> Run:
    return fastest(measure() for _ in range(rounds))


def environment(**overrides: str) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    env.update(overrides)
    return env


def which(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
