"""`kconsole web`: textual-serve on 127.0.0.1 serves the page, and a browser's websocket gets a running
console (whose stdout is then a pipe, not a terminal)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
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
    """Every process whose environment carries `mark`: the web server, each tab's console and embedded
    server, whoever owns them now."""
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


async def _until_only(mark: str, kept: set[int], seconds: float) -> list[int]:
    """The marked processes beyond `kept` still there after up to `seconds`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (left := [pid for pid in _processes_marked(mark) if pid not in kept]) and loop.time() < deadline:
        await asyncio.sleep(0.1)
    return left


def _described(pids: list[int]) -> list[bytes]:
    described = []
    for pid in pids:
        with contextlib.suppress(OSError):
            described.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
    return described


@contextlib.asynccontextmanager
async def _web_server(mark: str, port: int):
    """`kconsole web --local` in a session of its own, as a shell in a terminal starts it; whatever is left
    of it and its tabs is killed on the way out."""
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
        start_new_session=True,
    )
    try:
        await _wait_for_page(f"http://127.0.0.1:{port}/", process)
        yield process
    finally:
        for pid in _processes_marked(mark):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        await process.wait()


def _stop(process, stop_signal: signal.Signals) -> None:
    """Ctrl-C in a terminal reaches the whole foreground group; SIGTERM and SIGKILL are sent to the server."""
    if stop_signal == signal.SIGINT:
        os.killpg(process.pid, stop_signal)
    else:
        process.send_signal(stop_signal)


STOPS = pytest.mark.parametrize(
    "stop_signal", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl-c", "terminated", "killed"]
)


@STOPS
async def test_a_tab_that_left_leaves_no_process_once_the_server_stops(stop_signal):
    mark = uuid.uuid4().hex
    port = free_port()
    async with _web_server(mark, port) as process:
        seen = await _console_output_until(f"http://127.0.0.1:{port}/ws?width=100&height=30", b"kconsole-demo")
        assert b"kconsole-demo" in seen  # the tab's console (and its embedded server) ran, then the tab left
        left = await _until_only(mark, {process.pid}, 5.0)
        assert not left, _described(left)  # the tab's console and its embedded server ended with the tab
        _stop(process, stop_signal)
        await asyncio.wait_for(process.wait(), 10)
        left = await _until_only(mark, set(), 5.0)
        assert not left, _described(left)


@STOPS
async def test_a_tab_whose_browser_reads_nothing_leaves_no_process_once_the_server_stops(stop_signal):
    """A browser that takes no more frames (a frozen or throttled tab): the server can no longer pass the
    console's output on, yet its stop ends the console, the embedded server and itself."""
    mark = uuid.uuid4().hex
    port = free_port()
    async with _web_server(mark, port) as process:
        loop = asyncio.get_running_loop()
        browser = socket.socket()
        browser.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        browser.setblocking(False)
        try:
            await loop.sock_connect(browser, ("127.0.0.1", port))
            key = base64.b64encode(os.urandom(16)).decode()
            await loop.sock_sendall(
                browser,
                f"GET /ws?width=300&height=100 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode(),
            )
            assert b" 101 " in await loop.sock_recv(browser, 200)  # upgraded; nothing is read from here on
            deadline = loop.time() + 30
            while len(_processes_marked(mark)) < 3 and loop.time() < deadline:  # the console and its server
                await asyncio.sleep(0.1)
            assert len(_processes_marked(mark)) >= 3
            await asyncio.sleep(2.0)  # the console's first screens fill what the browser does not read
            _stop(process, stop_signal)
            await asyncio.wait_for(process.wait(), 10)
            left = await _until_only(mark, set(), 5.0)
            assert not left, _described(left)
        finally:
            browser.close()
