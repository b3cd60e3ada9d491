"""The console with a 10,000-shard stream, as a user starts it and leaves it open.

1. Launch: `kconsole --endpoint-url URL --stream big` (10k shards, on `kconsole local serve`) and
   `kconsole --local --stream big --shards 10000` (starts the embedded server, which starts empty,
   and creates the 10k-shard stream on it), each in a pseudo-terminal of 140x45, timed from the
   process start to the first shard row written to the terminal. Baseline, same run and same way:
   a Textual app that only shows one line (the floor of any Textual program here). Secondary:
   `kconsole --local` alone (the demo stream). Targets: < 0.8 s on an endpoint, < 1.0 s with --local.
2. Idle: the console's CPU and the server's CPU over 20 s of 5 s polls after the first load.
   Target: console < 1% of a core.
3. Memory: the console's resident set (VmRSS) at 10k shards after IDLE_SECONDS of polls, against a
   minimal Textual app with a TabbedContent and one DataTable holding the same 10k rows, launched
   and left open the same way. RSS is sampled along the way too (it is flat after the first polls,
   so the run is shorter than a minute). Target: <= 1.5x.
4. In-app (headless, an in-memory transport serving AWS-shaped ListShards pages so only the UI's
   cost is measured): first render of 10k rows, a refresh touching ~1% of rows, the worst stall of
   a 10 ms heartbeat timer on the UI loop; secondary baseline: a plain DataTable adding the same
   rows, then rewriting one column.

    python tests/benchmarks/bench_console.py          # prints figures, one JSON line last
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from console.backend import BackendConfig, KinesisBackend
from console.keyspace.hashkeys import HASH_SPACE, even_split, shard_id_for_index
from console.ui.app import KConsoleApp
from console.ui.format import format_hash_key, format_share
from console.ui.stream_display import StreamRefreshed

SHARDS = 10_000
SPLITS = 50  # 50 parents close and 100 children appear: 150 of ~10k rows touched (1.5%)
PAGE = 1_000
SIZE = (120, 40)
TARGETS = {"first_render_s": 0.6, "refresh_1pct_s": 0.030, "stall_s": 0.050}


def raw_shard(shard_id: str, start: int, end: int, *, parents: tuple[str, ...] = (), closed: bool = False) -> dict:
    raw = {
        "ShardId": shard_id,
        "HashKeyRange": {"StartingHashKey": str(start), "EndingHashKey": str(end)},
        "SequenceNumberRange": {"StartingSequenceNumber": "1" + "0" * 40},
    }
    if closed:
        raw["SequenceNumberRange"]["EndingSequenceNumber"] = "2" + "0" * 40
    if parents:
        raw["ParentShardId"] = parents[0]
    return raw


class MemoryTransport:
    """Stands in for the aiobotocore Kinesis client: the two calls a console poll makes."""

    def __init__(self, shards: list[dict]) -> None:
        self.shards = shards

    async def list_shards(self, **params) -> dict:
        offset = int(params.get("NextToken", "0"))
        await asyncio.sleep(0)  # a network round trip yields to the loop
        page = self.shards[offset : offset + PAGE]
        response = {"Shards": page}
        if offset + PAGE < len(self.shards):
            response["NextToken"] = str(offset + PAGE)
        return response

    async def describe_stream_summary(self, **params) -> dict:
        open_count = sum(1 for s in self.shards if "EndingSequenceNumber" not in s["SequenceNumberRange"])
        return {
            "StreamDescriptionSummary": {
                "StreamName": params["StreamName"],
                "StreamStatus": "ACTIVE",
                "StreamModeDetails": {"StreamMode": "PROVISIONED"},
                "OpenShardCount": open_count,
                "RetentionPeriodHours": 24,
                "EncryptionType": "NONE",
                "StreamARN": "arn:bench",
            }
        }

    def split_some(self, count: int) -> None:
        """Close `count` evenly spread shards and add their two children each, as SplitShard does."""
        next_index = len(self.shards)
        step = len(self.shards) // count
        for n in range(count):
            parent = self.shards[n * step]
            start = int(parent["HashKeyRange"]["StartingHashKey"])
            end = int(parent["HashKeyRange"]["EndingHashKey"])
            middle = start + (end - start + 1) // 2
            parent["SequenceNumberRange"]["EndingSequenceNumber"] = "2" + "0" * 40
            for low, high in ((start, middle - 1), (middle, end)):
                self.shards.append(raw_shard(shard_id_for_index(next_index), low, high, parents=(parent["ShardId"],)))
                next_index += 1


class Heartbeat:
    """A 10 ms interval timer; the worst gap beyond 10 ms is the longest the UI loop was stalled."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.last = time.perf_counter()
        self.worst = 0.0
        self.timer = app.set_interval(0.01, self.beat)

    def beat(self) -> None:
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last - 0.01)
        self.last = now

    def reset(self) -> None:
        self.last = time.perf_counter()
        self.worst = 0.0


class BenchApp(KConsoleApp):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.refreshes = 0
        self.heartbeat: Heartbeat | None = None
        self.created_at = time.perf_counter()
        self.first_poll_at = 0.0
        self.startup_s = 0.0

    def on_mount(self) -> None:
        self.heartbeat = Heartbeat(self)
        super().on_mount()

    def poll_now(self, **options) -> bool:
        # Stalls are counted from the first poll on: the app's own start-up (compose, first layout)
        # is Textual's fixed cost, the same with 4 shards or 10k, and is reported separately.
        if self.heartbeat is not None and self.shard_poll.count == 0 and not self.shard_poll.running:
            self.first_poll_at = time.perf_counter()
            self.startup_s = self.first_poll_at - self.created_at
            self.heartbeat.reset()
        return super().poll_now(**options)

    def on_stream_refreshed(self, _message: StreamRefreshed) -> None:
        self.refreshes += 1


def render_now(app: App) -> None:
    """Lay out and paint whatever is pending, now (what the screen's refresh timer would do next)."""
    app.screen._on_timer_update()


async def paint(app: App) -> None:
    """Let the refresh requests (messages) of what just changed be processed, then paint."""
    for _ in range(3):
        await asyncio.sleep(0.001)
    render_now(app)


async def settle(pilot) -> None:
    await paint(pilot.app)


async def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError("benchmark condition never became true")
        await asyncio.sleep(0.001)


async def bench_console() -> dict:
    transport = MemoryTransport([raw_shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(SHARDS))])
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url="http://memory.invalid")
    kinesis = KinesisBackend(config, transport, region="us-east-1", endpoint_url="http://memory.invalid")
    app = BenchApp(kinesis, stream="bench", interval=3600)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.table.row_count == SHARDS)
        await paint(app)
        # From asking the transport for the map to the table, ribbon and header showing all 10k shards
        # (the app's own start-up before that, the same for 4 shards, is reported as startup_s).
        first_render = time.perf_counter() - app.first_poll_at
        await wait_for(lambda: app.refreshes >= 1)  # and the lineage is built
        await asyncio.sleep(0.03)
        load_stall = app.heartbeat.worst

        transport.split_some(SPLITS)
        app.heartbeat.reset()
        app.action_refresh()
        await wait_for(lambda: app.refreshes >= 2)
        await settle(pilot)
        await asyncio.sleep(0.03)
        refresh_stall = app.heartbeat.worst
        assert app.table.row_count == SHARDS + 2 * SPLITS, app.table.row_count

        # The apply step alone (diff + in-place row updates + repaint), without the transport and
        # lineage work a poll also does: measured by re-applying a view with 1.5% of rows changed.
        transport.split_some(SPLITS)
        view_before = app.view
        from console.ui.source import fetch_stream, with_lineage

        fresh = await with_lineage(await fetch_stream(kinesis, "bench"))
        await settle(pilot)
        app.heartbeat.reset()
        started = time.perf_counter()
        # The whole poll result shown at once (the poll worker shows it in steps).
        app.stream_display.header(fresh)
        app.table.apply(fresh.shards)
        app.stream_display.selection_and_ribbon(fresh)
        app.stream_display.lineage(fresh)
        await paint(app)
        refresh_apply = time.perf_counter() - started
        await asyncio.sleep(0.03)
        apply_stall = app.heartbeat.worst
        assert view_before is not fresh and app.table.row_count == SHARDS + 4 * SPLITS
    return {
        "startup_s": app.startup_s,
        "first_render_s": first_render,
        "load_stall_s": load_stall,
        "refresh_1pct_s": refresh_apply,
        "refresh_stall_s": max(refresh_stall, apply_stall),
    }


class NaiveTable(App):
    def compose(self) -> ComposeResult:
        yield DataTable()


async def bench_naive_datatable() -> dict:
    rows = [
        (
            shard_id_for_index(i),
            "open",
            format_hash_key(s),
            format_hash_key(e),
            format_share((e - s + 1) / HASH_SPACE),
            "-",
        )
        for i, (s, e) in enumerate(even_split(SHARDS))
    ]
    app = NaiveTable()
    async with app.run_test(size=SIZE):
        table = app.query_one(DataTable)
        heartbeat = Heartbeat(app)
        columns = table.add_columns("Shard", "State", "Start", "End", "Share", "Parents")
        began = time.perf_counter()
        table.add_rows(rows)
        await wait_for(lambda: not table._require_update_dimensions)  # measured on its idle pass
        await paint(app)
        first_render = time.perf_counter() - began
        await asyncio.sleep(0.03)
        load_stall = heartbeat.worst
        heartbeat.reset()
        began = time.perf_counter()
        for row_key in list(table.rows):
            table.update_cell(row_key, columns[1], "closed")
        await paint(app)
        rewrite = time.perf_counter() - began
        await asyncio.sleep(0.03)
        return {
            "first_render_s": first_render,
            "rewrite_column_s": rewrite,
            "stall_s": max(load_stall, heartbeat.worst),
        }


def clean_heap() -> None:
    """Each contender starts with the garbage of the previous one collected and out of the way."""
    gc.collect()
    gc.freeze()


FLOOR_APP = """
from textual.app import App
from textual.widgets import Static

class Floor(App):
    def compose(self):
        yield Static("shardId-000000000000")

Floor().run()
"""
# The baseline of the memory figure: what a user would write to show 10k shard rows in tabs.
TABLE_APP = """
from textual.app import App
from textual.widgets import DataTable, TabbedContent, TabPane

SHARDS = 10_000
STEP = 2**128 // SHARDS

class Tabbed(App):
    def compose(self):
        with TabbedContent():
            with TabPane("Shards"):
                yield DataTable()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("Shard", "State", "Start", "End", "Share", "Parents")
        table.add_rows(
            (f"shardId-{i:012d}", "open", str(i * STEP), str(2**128 - 1 if i == SHARDS - 1 else (i + 1) * STEP - 1),
             f"{100 / SHARDS:.2f}%", "-")
            for i in range(SHARDS)
        )

Tabbed().run()
"""
LAUNCH_ROUNDS = 3
IDLE_SECONDS = 20.0
RSS_SAMPLES = (0.0, 5.0, 10.0, 20.0)  # seconds after the first poll's settling drain


def launch_figures() -> dict:
    """Launch to the first shard row, idle CPU and resident memory of the real command in a
    pseudo-terminal, each against its baseline launched the same way in the same run."""
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _measure import Terminal, kconsole_command, process_cpu, process_rss

    row = b"shardId-000000000000"
    server = subprocess.Popen(
        [*kconsole_command(), "local", "serve", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        endpoint = json.loads(server.stdout.readline())["endpoint_url"]
        asyncio.run(_create_stream(endpoint))
        with tempfile.TemporaryDirectory() as folder:
            floor_script = Path(folder) / "floor.py"
            floor_script.write_text(FLOOR_APP)
            table_script = Path(folder) / "table.py"
            table_script.write_text(TABLE_APP)
            endpoint_args = ["--endpoint-url", endpoint, "--region", "us-east-1", "--stream", "big"]
            launches: dict[str, list[float]] = {"floor": [], "endpoint": [], "local": [], "local_demo": []}
            commands = {
                "floor": [sys.executable, str(floor_script)],
                "endpoint": kconsole_command() + endpoint_args,
                "local": [*kconsole_command(), "--local", "--stream", "big", "--shards", str(SHARDS)],
                "local_demo": [*kconsole_command(), "--local"],
            }
            for _ in range(LAUNCH_ROUNDS):
                for name, argv in commands.items():
                    terminal = Terminal(argv)
                    try:
                        launches[name].append(terminal.wait_for(row))
                    finally:
                        terminal.close()
            # Idle CPU and memory: the console and the DataTable app, one after the other.
            terminal = Terminal(kconsole_command() + endpoint_args)
            try:
                terminal.wait_for(row)
                terminal.drain(6.0)  # the lineage and the first timed poll
                console_before, server_before = process_cpu(terminal.pid), process_cpu(server.pid)
                console_rss = _rss_over_time(terminal, process_rss)
                console_cpu = (process_cpu(terminal.pid) - console_before) / IDLE_SECONDS
                server_cpu = (process_cpu(server.pid) - server_before) / IDLE_SECONDS
            finally:
                terminal.close()
            terminal = Terminal([sys.executable, str(table_script)])
            try:
                terminal.wait_for(row)
                terminal.drain(6.0)
                table_rss = _rss_over_time(terminal, process_rss)
            finally:
                terminal.close()
    finally:
        server.terminate()
        server.wait()
    return {
        "launch_floor_s": min(launches["floor"]),
        "launch_endpoint_s": min(launches["endpoint"]),
        "launch_local_s": min(launches["local"]),
        "launch_local_demo_s": min(launches["local_demo"]),
        "launch_rounds": {name: [round(seconds, 3) for seconds in runs] for name, runs in launches.items()},
        "idle_console_cpu_percent": round(console_cpu * 100, 2),
        "idle_server_cpu_percent": round(server_cpu * 100, 2),
        "console_rss_mib": console_rss[-1],
        "table_app_rss_mib": table_rss[-1],
        "console_rss_samples_mib": console_rss,
        "table_app_rss_samples_mib": table_rss,
    }


def _rss_over_time(terminal, process_rss) -> list[float]:
    """The process's RSS in MiB at each of RSS_SAMPLES seconds, over IDLE_SECONDS in all."""
    samples, waited = [], 0.0
    for at in RSS_SAMPLES:
        terminal.drain(at - waited)
        waited = at
        samples.append(round(process_rss(terminal.pid) / 2**20, 1))
    terminal.drain(IDLE_SECONDS - waited)
    samples.append(round(process_rss(terminal.pid) / 2**20, 1))
    return samples


async def _create_stream(endpoint: str) -> None:
    from console.backend import open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        await kinesis.ensure_stream("big", SHARDS)


async def main() -> dict:
    clean_heap()
    console = await bench_console()
    clean_heap()
    naive = await bench_naive_datatable()
    figures = {
        "benchmark": "console",
        "path": "kconsole --endpoint-url URL --stream big / kconsole --local, in a 140x45 pseudo-terminal",
        "baseline": "a one-line Textual app launched the same way (launch); a plain DataTable (in-app render)",
        "shards": SHARDS,
        "console_startup_s": round(console["startup_s"], 4),
        "console_first_render_s": round(console["first_render_s"], 4),
        "console_refresh_1pct_s": round(console["refresh_1pct_s"], 4),
        "console_load_stall_s": round(console["load_stall_s"], 4),
        "console_refresh_stall_s": round(console["refresh_stall_s"], 4),
        "naive_first_render_s": round(naive["first_render_s"], 4),
        "naive_rewrite_column_s": round(naive["rewrite_column_s"], 4),
        "naive_stall_s": round(naive["stall_s"], 4),
        "ratio": round(naive["first_render_s"] / console["first_render_s"], 2),
        "refresh_ratio": round(naive["rewrite_column_s"] / console["refresh_1pct_s"], 2),
    }
    figures["targets_met"] = (
        console["first_render_s"] < TARGETS["first_render_s"]
        and console["refresh_1pct_s"] < TARGETS["refresh_1pct_s"]
        and max(console["load_stall_s"], console["refresh_stall_s"]) < TARGETS["stall_s"]
    )
    return figures


if __name__ == "__main__":
    result = asyncio.run(main())
    launch = launch_figures()
    result.update({key: round(value, 3) if isinstance(value, float) else value for key, value in launch.items()})
    result["launch_endpoint_vs_floor"] = round(launch["launch_endpoint_s"] / launch["launch_floor_s"], 2)
    result["launch_local_vs_floor"] = round(launch["launch_local_s"] / launch["launch_floor_s"], 2)
    result["rss_ratio"] = round(launch["console_rss_mib"] / launch["table_app_rss_mib"], 2)
    result["launch_targets_met"] = (
        launch["launch_endpoint_s"] < 0.8
        and launch["launch_local_s"] < 1.0
        and launch["idle_console_cpu_percent"] < 1.0
    )
    result["rss_target_met"] = result["rss_ratio"] <= 1.5
    print(
        f"naive DataTable: add+render {result['naive_first_render_s']}s, rewrite a column "
        f"{result['naive_rewrite_column_s']}s, worst stall {result['naive_stall_s']}s",
        file=sys.stderr,
    )
    print(
        f"console: first render {result['console_first_render_s']}s, 1% refresh {result['console_refresh_1pct_s']}s,"
        f" worst stall load {result['console_load_stall_s']}s / refresh {result['console_refresh_stall_s']}s",
        file=sys.stderr,
    )
    from _measure import emit

    emit(result)
