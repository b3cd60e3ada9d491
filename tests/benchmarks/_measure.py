"""What the benchmarks share: running a command the way a user does and timing its whole cost."""

from __future__ import annotations

import contextlib
import json
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


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a live process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss(pid: int) -> int:
    """Resident set size of a live process, in bytes (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Terminal:
    """A program in a pseudo-terminal of a given size, as a user starts it in a real terminal."""

    def __init__(self, argv: list[str], *, columns: int = 140, rows: int = 45, env: dict | None = None) -> None:
        import fcntl
        import pty
        import struct
        import termios

        self.started = time.perf_counter()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the program
            os.execvpe(
                argv[0],
                argv,
                {**(env or os.environ), "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)},
            )
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.output = b""

    def wait_for(self, needle: bytes, timeout: float = 60.0) -> float:
        """Seconds from the start until `needle` was written to the terminal."""
        import select

        deadline = time.perf_counter() + timeout
        while needle not in self.output:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise SystemExit(f"never saw {needle!r} on the terminal; last output {self.output[-300:]!r}")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    self.output += os.read(self.fd, 1 << 16)
                except OSError:
                    raise SystemExit(f"the program ended before {needle!r}: {self.output[-300:]!r}") from None
        return time.perf_counter() - self.started

    def drain(self, seconds: float) -> None:
        """Keep reading (a terminal that is not read blocks the program) for `seconds`."""
        import select

        deadline = time.perf_counter() + seconds
        while (remaining := deadline - time.perf_counter()) > 0:
            if select.select([self.fd], [], [], remaining)[0]:
                try:
                    os.read(self.fd, 1 << 16)
                except OSError:
                    return

    def close(self) -> None:
        import signal

        try:
            os.write(self.fd, b"q")
            self.drain(1.0)
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def aws_environment() -> dict:
    """The same dummy credentials and region for every AWS client; no user config file is read."""
    return environment(
        AWS_ACCESS_KEY_ID="local",
        AWS_SECRET_ACCESS_KEY="local",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )


def compiled_like_an_install() -> None:
    """kconsole's modules compiled to bytecode, as `pip install` leaves them (and the AWS CLI's are).
    Run from a checkout with PYTHONDONTWRITEBYTECODE=1 (common in containers and CI), every process
    would otherwise compile them from source again: ~35 ms of a `kconsole streams` that no installed
    copy spends."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "console"), quiet=1)


@contextlib.contextmanager
def local_serve():
    """`kconsole local serve` on a free port, as a user starts it: its endpoint URL, stopped on exit."""
    server = subprocess.Popen(
        [*kconsole_command(), "local", "serve", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield json.loads(server.stdout.readline())["endpoint_url"]
    finally:
        server.terminate()
        server.wait()


RANGES_FILE = Path(__file__).with_name("readme_ranges.toml")


@dataclass(frozen=True)
class ReadmeRange:
    """One figure's range as the README's benchmark table prints it: the min to max of at least five runs."""

    script: str  # the benchmark's file, the first cell of its README row
    benchmark: str  # the "benchmark" field of its JSON line
    figure: str  # a dotted path into the JSON line
    low: str  # as printed, so "0.80" stays "0.80"
    high: str
    unit: str = "×"

    @property
    def text(self) -> str:
        return f"{self.low}\N{EN DASH}{self.high}{self.unit}"

    def holds(self, value: float) -> bool:
        return float(self.low) <= value <= float(self.high)


def readme_ranges() -> list[ReadmeRange]:
    import tomllib

    with RANGES_FILE.open("rb") as file:
        return [ReadmeRange(**entry) for entry in tomllib.load(file)["range"]]


def figure_at(figures: dict, path: str):
    """The figure at a dotted path; a number in the path is also a whole-number key (as JSON prints it)."""
    value = figures
    for part in path.split("."):
        value = value[part] if part in value or not part.isdigit() else value[int(part)]
    return value


def emit(figures: dict) -> None:
    """Print the figures as the benchmark's one JSON line, with whether each figure the README prints a
    range for falls inside it today (and a line on stderr for each that does not)."""
    checked = {}
    for entry in readme_ranges():
        if entry.benchmark != figures.get("benchmark"):
            continue
        try:
            today = figure_at(figures, entry.figure)
        except (KeyError, TypeError):
            continue  # a figure this run did not measure (a peer missing, a shorter configuration)
        checked[entry.figure] = {"readme": entry.text, "today": today, "inside": entry.holds(today)}
        if not entry.holds(today):
            print(f"{entry.figure}: {today} is outside the README's {entry.text}", file=sys.stderr)
    figures["readme_ranges"] = checked
    figures["inside_readme_ranges"] = all(check["inside"] for check in checked.values())
    print(json.dumps(figures))
