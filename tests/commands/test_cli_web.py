"""`kconsole web`: textual-serve on 127.0.0.1 serves the page, and a browser's websocket gets a running
console (whose stdout is then a pipe, not a terminal)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import aiohttp
import pytest

from console import cli
from tests.conftest import free_port, interrupt, kconsole_child


async def _wait_for_page(url: str, process, seconds: float = 30.0) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(url) as response:
                    return await response.text()
            except aiohttp.ClientConnectionError:
                if process.returncode is not None or loop.time() > deadline:
                    raise AssertionError(f"kconsole web did not serve {url}") from None
                await asyncio.sleep(0.2)


async def _console_output_until(url: str, wanted: bytes, seconds: float = 60.0) -> bytes:
    """What a browser tab's console sends over the websocket, until `wanted` shows up (or time is up)."""
    seen = b""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as websocket:
        while wanted not in seen and loop.time() < deadline:
            try:
                message = await asyncio.wait_for(websocket.receive(), deadline - loop.time())
            except TimeoutError:
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                seen += message.data
            elif message.type != aiohttp.WSMsgType.TEXT:  # closed, or an error
                break
    return seen


async def test_web_serves_the_page_and_a_tab_runs_the_console(make_stream, local_kinesis):
    stream = await make_stream(shards=2, prefix="web")
    port = free_port()
    async with kconsole_child(
        "web", "--port", str(port), "--stream", stream, "--endpoint-url", local_kinesis.endpoint_url
    ) as process:
        page = await _wait_for_page(f"http://127.0.0.1:{port}/", process)
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in page
        seen = await _console_output_until(f"http://127.0.0.1:{port}/ws?width=120&height=36", stream.encode())
        assert stream.encode() in seen, seen[-2000:]
        assert b"needs a terminal" not in seen
        _, err = await interrupt(process)
    assert process.returncode == 130
    assert b"Traceback" not in err


def test_web_refuses_a_bad_port_and_output_options(capsys):
    assert cli.main(["web", "--port", "70000"]) == 2
    assert "--port must be from 1 to 65535" in capsys.readouterr().err
    assert cli.main(["web", "--json"]) == 2
    assert "has no --json" in capsys.readouterr().err


def _processes_marked(mark: str) -> list[int]:
    """Every process whose environment carries `mark`: the web server, each tab's shell, console and
    embedded server, whoever owns them now."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if f"KCONSOLE_TEST_MARK={mark}".encode() in environ.read():
                        found.append(int(entry))
            except OSError:
                pass  # gone meanwhile, or not ours to read
    return found


@pytest.mark.parametrize(
    "stop_signal", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl-c", "terminated", "killed"]
)
async def test_a_tab_that_left_leaves_no_process_once_the_server_stops(stop_signal):
    mark = uuid.uuid4().hex
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "web",
        "--local",
        "--port",
        str(port),
        env=dict(os.environ, KCONSOLE_TEST_MARK=mark),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await _wait_for_page(f"http://127.0.0.1:{port}/", process)
        seen = await _console_output_until(f"http://127.0.0.1:{port}/ws?width=100&height=30", b"kconsole-demo")
        assert b"kconsole-demo" in seen  # the tab's console (and its embedded server) ran, then the tab left
        assert len(_processes_marked(mark)) >= 3
        process.send_signal(stop_signal)
        await asyncio.wait_for(process.wait(), 20)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5.0
        while _processes_marked(mark) and loop.time() < deadline:
            await asyncio.sleep(0.1)
        left = _processes_marked(mark)
        assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
    finally:
        for pid in _processes_marked(mark):
            os.kill(pid, signal.SIGKILL)
