"""Regenerate screenshots/*.svg from the real console on the embedded local Kinesis.

    python tests/screenshots.py [--out screenshots] [--view heat ...]
    python tests/screenshots.py --web [--chromium /usr/bin/chromium]   # screenshots/web.png

Starts the embedded backend, creates the demo stream (as `kconsole --local` does), writes a few
hundred records and half an hour of the stream-level CloudWatch metrics Kinesis would publish for
them, then drives the app with Pilot through its main views and saves an SVG of each. The Heat view
is taken after HEAT_SECONDS of paced traffic written while the tab samples (a hot customer whose
rate climbs past its shard's limit, a warm one, the rest spread): the map shows minutes of history.

`--web` runs `kconsole web --local` and opens it in headless Chromium driven over the DevTools
protocol (aiohttp's websocket client, which textual-serve brings): textual-serve shows its own splash
until the console's first bytes arrive, and the console then draws its first poll, so the PNG is
taken only once the bytes the page received hold the header's "refreshed" (the first poll is drawn)
and the page has had a moment to paint them on its canvas.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

VIEWS = (
    "shards",
    "shards-80-columns",
    "lineage",
    "placement",
    "keytree",
    "help",
    "split-preview",
    "tail",
    "heat",
    "producer",
    "stream-actions",
    "fleet",
    "readers",
)
HEAT_SECONDS = 135  # of paced traffic before the Heat view is taken (the script's longest wait)


async def wait_until(pilot, predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            status = pilot.app.screen.query("#picker-status")
            said = f"; the fleet says {str(status.first().render())!r}" if status else ""
            raise RuntimeError(f"the console never reached the state to capture{said}")
        await pilot.pause(0.05)


async def write_records(kinesis, stream: str, count: int, *, hot_key: str | None = None) -> None:
    for start in range(0, count, 250):
        batch = []
        for n in range(start, min(count, start + 250)):
            key = hot_key if hot_key and n % 2 else f"user-{n % 97}"
            batch.append({"Data": json.dumps({"user": key, "n": n}).encode(), "PartitionKey": key})
        await kinesis.put_records(stream, batch)


async def paced_traffic(kinesis, stream: str, seconds: float) -> None:
    """Records at a set rate per second for `seconds`: `hot-customer` at 150, then 600, then 1,100
    records/s (past its shard's 1,000), `warm-customer` at 300, and 40 spread over many keys."""
    began = time.monotonic()
    second = 0
    while (elapsed := time.monotonic() - began) < seconds:
        third = min(2, int(3 * elapsed / seconds))
        rates = {"hot-customer": (150, 600, 1100)[third], "warm-customer": 300}
        keys = [key for key, rate in rates.items() for _ in range(rate)]
        keys += [f"user-{(second * 40 + n) % 997}" for n in range(40)]
        records = [{"Data": json.dumps({"user": key, "s": second}).encode(), "PartitionKey": key} for key in keys]
        for offset in range(0, len(records), 500):
            await kinesis.put_records(stream, records[offset : offset + 500])
        second += 1
        await asyncio.sleep(max(0.0, began + second - time.monotonic()))


async def publish_demo_metrics(kinesis, stream: str, minutes: int = 30) -> None:
    """Stream-level metrics as Kinesis publishes them (AWS/Kinesis, dimension StreamName), one point a
    minute: steady traffic with a busier spell, consumers a little behind, a few throttled writes."""
    from datetime import datetime, timedelta

    now = datetime.now(UTC).replace(second=30, microsecond=0)
    data = []
    for ago in range(1, minutes + 1):
        busy = 2.0 if 8 <= ago <= 14 else 1.0
        values = {
            "IncomingRecords": 6000 * busy + 450 * (ago % 4),
            "IncomingBytes": 420_000 * busy + 9000 * (ago % 5),
            "GetRecords.IteratorAgeMilliseconds": 900 * busy + 120 * (ago % 3),
            "WriteProvisionedThroughputExceeded": 14 if 9 <= ago <= 11 else 0,
            "ReadProvisionedThroughputExceeded": 0,
            "GetRecords.Latency": 18 + ago % 5,
        }
        data += [
            {
                "MetricName": name,
                "Dimensions": [{"Name": "StreamName", "Value": stream}],
                "Timestamp": now - timedelta(minutes=ago),
                "Value": value,
            }
            for name, value in values.items()
        ]
    await kinesis.put_metric_data("AWS/Kinesis", data)


async def add_fleet(kinesis) -> None:
    """A few more streams for the fleet view: a quiet one, one whose consumers fell behind, an idle one."""
    from datetime import datetime, timedelta

    for name, shards in (("clicks", 2), ("payments", 1), ("audit-log", 1)):
        await kinesis.ensure_stream(name, shards)
    now = datetime.now(UTC).replace(second=30, microsecond=0)
    points = []
    for ago in range(1, 31):
        at = now - timedelta(minutes=ago)
        points += [
            ("clicks", "IncomingRecords", 900 + 40 * (ago % 6), at),
            ("clicks", "IncomingBytes", 90_000 + 4000 * (ago % 6), at),
            ("payments", "IncomingRecords", 120.0, at),
            ("payments", "IncomingBytes", 30_000.0 + 500 * ago, at),
            ("payments", "GetRecords.IteratorAgeMilliseconds", 60_000.0 * (31 - ago) / 3, at),
        ]
    data = [
        {"MetricName": metric, "Dimensions": [{"Name": "StreamName", "Value": name}], "Timestamp": at, "Value": value}
        for name, metric, value, at in points
    ]
    await kinesis.put_metric_data("AWS/Kinesis", data)


async def make_demo_readers(endpoint_url: str, stream: str) -> None:
    command = [sys.executable, "-m", "console.cli", "demo", "readers", stream, "--endpoint-url", endpoint_url]
    process = await asyncio.create_subprocess_exec(*command, "--region", "us-east-1", stdout=asyncio.subprocess.DEVNULL)
    if await process.wait() != 0:
        raise RuntimeError(f"kconsole demo readers {stream} failed")


async def capture(kinesis, stream: str, view: str, out: Path) -> Path:
    from console.ui.app import KConsoleApp
    from console.ui.screens.prompt import PromptScreen
    from console.ui.screens.reshard import ReshardPreviewScreen

    size = (80, 30) if view == "shards-80-columns" else (120, 36)
    app = KConsoleApp(kinesis, stream=stream, interval=60)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.view is not None and app.view.lineage is not None)
        if view == "lineage":
            await pilot.press("2")
        elif view == "placement":
            await pilot.press("3")
            app.placement.set_keys("\n".join(f"customer-{n}" for n in range(1, 41)))
            await pilot.press("escape")
        elif view == "keytree":
            await pilot.press("4")
            app.query_one("#keytree-panel").set_keys("\n".join(str(k) for k in (2**127, 2**126, 2**125, 2**124 * 11)))
            await pilot.press("escape")
        elif view == "help":
            await pilot.press("question_mark")
        elif view == "fleet":
            from console.ui.screens.stream_picker import StreamPickerScreen

            await pilot.press("p")
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, StreamPickerScreen)
                    and "in trouble" in str(app.screen.query_one("#picker-status").render())
                    and all(f.open_shards is not None for f in app.screen.streams)
                ),
            )
        elif view == "stream-actions":
            from console.ui.screens.stream_actions import StreamActionsScreen

            await pilot.press("S")
            await wait_until(pilot, lambda: isinstance(app.screen, StreamActionsScreen))
        elif view == "split-preview":
            await pilot.press("s")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen))
        elif view == "tail":
            await pilot.press("6")
            await pilot.press("h")
            await wait_until(pilot, lambda: app.query_one("#tail-view").received >= 100)
            await pilot.pause(0.3)
        elif view == "heat":
            await pilot.press("7")
            await wait_until(pilot, lambda: "in records" in str(app.query_one("#heat-capacity").render()))
            await pilot.pause(1.0)
            print(f"heat: {HEAT_SECONDS} s of paced traffic …", file=sys.stderr)
            await paced_traffic(kinesis, stream, HEAT_SECONDS)
            panel = app.query_one("#heat-panel")
            hot = panel.snapshot.hottest if panel.snapshot else None
            if hot is not None:
                panel.select_shard(hot.shard_id)  # the shard worth looking at, as the operator would pick it
            await pilot.pause(1.5)
        elif view == "readers":
            await pilot.press("9")
            panel = app.query_one("#readers-panel")
            await wait_until(pilot, lambda: panel.report is not None and len(panel.report.readers) >= 5, timeout=60)
            await pilot.press("down")
        elif view == "producer":
            await pilot.press("5")
            app.query_one("#producer-keys").value = "50"
            app.query_one("#producer-per-key").value = "4"
            await pilot.click("#producer-start")
            # Writing to a stream asks for its name first, as a reshard does.
            await wait_until(pilot, lambda: bool(app.screen.query("#confirm-input")))
            app.screen.query_one("#confirm-input").value = stream
            await pilot.press("enter")
            panel = app.query_one("#producer-panel")
            await wait_until(pilot, lambda: panel.report is not None, timeout=60)
        await pilot.pause(0.3)
        path = out / f"{view}.svg"
        save(path, app.export_screenshot(title=f"kconsole — {view}").encode("utf-8"))
        return path


async def main(out: Path, views: tuple[str, ...] = VIEWS) -> None:
    from console.backend import BackendConfig, open_backend
    from console.ui.launch import DEMO_STREAM, prepare_demo_stream

    out.mkdir(parents=True, exist_ok=True)
    async with open_backend(BackendConfig(kind="local", region="us-east-1")) as kinesis:
        await prepare_demo_stream(kinesis)
        await write_records(kinesis, DEMO_STREAM, 500)
        await publish_demo_metrics(kinesis, DEMO_STREAM)
        await add_fleet(kinesis)
        for view in views:
            if view == "readers":  # one reader of each kind, as `kconsole demo readers` makes them
                await make_demo_readers(kinesis.local_server.endpoint_url, DEMO_STREAM)
            path = await capture(kinesis, DEMO_STREAM, view, out)
            print(f"wrote {path}", file=sys.stderr)


WEB_WINDOW = (1400, 760)
WEB_DRAWN = "refreshed"  # the header's "refreshed Ns ago": the console has drawn its first poll
WEB_PAINT_SECONDS = 1.5  # textual-serve fades the terminal in over 0.3 s; xterm paints on animation frames


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def wait_for_port(port: int, process, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited ({process.returncode}) before listening on {port}")
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout:g} s") from None
            await asyncio.sleep(0.1)
        else:
            writer.close()
            return


class DevTools:
    """A minimal Chrome DevTools protocol session over one websocket: commands by id, events queued."""

    def __init__(self, socket) -> None:
        self.socket = socket
        self.ids = iter(range(1, 1 << 30))
        self.waiting: dict[int, asyncio.Future] = {}
        self.events: asyncio.Queue = asyncio.Queue()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.socket:
            body = json.loads(message.data)
            if "id" in body:
                future = self.waiting.pop(body["id"], None)
                if future is not None and not future.done():
                    if "error" in body:
                        future.set_exception(RuntimeError(f"DevTools: {body['error']}"))
                    else:
                        future.set_result(body.get("result", {}))
            else:
                await self.events.put(body)

    async def send(self, method: str, **params) -> dict:
        number = next(self.ids)
        self.waiting[number] = asyncio.get_running_loop().create_future()
        await self.socket.send_json({"id": number, "method": method, "params": params})
        return await asyncio.wait_for(self.waiting[number], 30)


async def wait_for_console_text(devtools: DevTools, text: str, timeout: float) -> None:
    """Until the console's bytes received by the page (textual-serve's binary websocket frames, which
    DevTools reports base64-encoded) hold `text`."""
    import base64

    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"the console never drew {text!r} in the browser within {timeout:g} s")
        try:
            event = await asyncio.wait_for(devtools.events.get(), left)
        except TimeoutError:
            continue
        if event.get("method") != "Network.webSocketFrameReceived":
            continue
        frame = event["params"]["response"]
        payload = frame.get("payloadData", "")
        data = base64.b64decode(payload) if frame.get("opcode") == 2 else payload.encode()
        seen = (seen + data.decode("utf-8", "replace"))[-200_000:]


async def capture_web(out: Path, chromium: str, timeout: float = 90.0) -> Path:
    import signal
    import subprocess

    import aiohttp

    out.mkdir(parents=True, exist_ok=True)
    port, debug_port = free_port(), free_port()
    profile = tempfile.mkdtemp(prefix="kconsole-chromium-")
    server = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "web", "--local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    browser = None
    try:
        await wait_for_port(port, server, timeout)
        browser = subprocess.Popen(
            [
                chromium,
                "--headless",
                f"--remote-debugging-port={debug_port}",
                "--remote-allow-origins=*",
                f"--user-data-dir={profile}",
                f"--window-size={WEB_WINDOW[0]},{WEB_WINDOW[1]}",
                "--hide-scrollbars",
                "--no-first-run",
                "--no-default-browser-check",
                *(["--no-sandbox"] if os.geteuid() == 0 else []),  # Chromium refuses to run as root sandboxed
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await wait_for_port(debug_port, browser, timeout)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{debug_port}/json/list") as reply:
                page = next(target for target in await reply.json() if target.get("type") == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                devtools = DevTools(socket)
                await devtools.send("Network.enable")
                await devtools.send("Page.enable")
                await devtools.send("Page.navigate", url=f"http://127.0.0.1:{port}/")
                await wait_for_console_text(devtools, WEB_DRAWN, timeout)
                started = await devtools.send(
                    "Runtime.evaluate", expression="document.body.classList.contains('-first-byte')"
                )
                if started.get("result", {}).get("value") is not True:
                    raise RuntimeError("the page still shows textual-serve's splash (no -first-byte on its body)")
                await asyncio.sleep(WEB_PAINT_SECONDS)
                shot = await devtools.send("Page.captureScreenshot", format="png")
                devtools.reader.cancel()
        path = out / "web.png"
        import base64

        save(path, base64.b64decode(shot["data"]))
        return path
    finally:
        # The browser first (its tab's console ends with the connection), then the server, as Ctrl-C.
        for process, stop in ((browser, signal.SIGTERM), (server, signal.SIGINT)):
            if process is None or process.poll() is not None:
                continue
            process.send_signal(stop)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def save(path: Path, data: bytes) -> None:
    """A screenshot file as every file kconsole writes: whole or not at all, and a name that is not a
    regular file (a FIFO, a device, a directory) is never replaced (console.read.export)."""
    from console.read.export import write_atomically

    write_atomically(path, data, "screenshot")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "screenshots")
    parser.add_argument("--view", action="append", choices=VIEWS, help="only this view (repeatable); all by default")
    parser.add_argument("--web", action="store_true", help="only web.png: kconsole web --local in headless Chromium")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium to drive (--web)")
    arguments = parser.parse_args()
    # The action log and config of a screenshot run stay out of the user's own files.
    scratch = tempfile.mkdtemp(prefix="kconsole-screenshots-")
    os.environ.setdefault("KCONSOLE_DATA_DIR", scratch)
    os.environ.setdefault("KCONSOLE_CONFIG", str(Path(scratch) / "config.toml"))
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    if arguments.web:
        print(f"wrote {asyncio.run(capture_web(arguments.out, arguments.chromium))}", file=sys.stderr)
    else:
        asyncio.run(main(arguments.out, tuple(arguments.view or VIEWS)))
