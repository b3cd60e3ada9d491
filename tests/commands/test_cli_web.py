"""`kconsole web`: textual-serve on 127.0.0.1 serves the page, and a browser's websocket gets a running
console (whose stdout is then a pipe, not a terminal)."""

from __future__ import annotations

import asyncio

import aiohttp

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
            except asyncio.TimeoutError:
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                seen += message.data
            elif message.type != aiohttp.WSMsgType.TEXT:  # closed, or an error
                break
    return seen


async def test_web_serves_the_page_and_a_tab_runs_the_console(make_stream, local_kinesis):
    stream = await make_stream(shards=2, prefix="web")
    port = free_port()
    async with kconsole_child("web", "--port", str(port), "--stream", stream,
                              "--endpoint-url", local_kinesis.endpoint_url) as process:
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
