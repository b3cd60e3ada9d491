"""Ctrl-C at a confirmation prompt (the stream name typed on a TTY) ends the command at once: one line,
exit 130 as on every command, and nothing changed."""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(60)


async def _read_until(stream: asyncio.StreamReader, wanted: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        chunk = await asyncio.wait_for(stream.read(4096), max(0.1, deadline - time.monotonic()))
        if not chunk:
            break
        seen += chunk
    return seen


async def test_ctrl_c_at_the_stream_name_prompt_aborts_at_once_and_changes_nothing(
    kinesis, make_stream, local_kinesis, tmp_path
):
    stream = await make_stream(shards=1)
    terminal, child_side = pty.openpty()  # the prompt asks only on a TTY
    environment = {**os.environ, "KCONSOLE_CONFIG": str(tmp_path / "config.toml"), "KCONSOLE_DATA_DIR": str(tmp_path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "stream",
        "delete",
        stream,
        "--endpoint-url",
        local_kinesis.endpoint_url,
        stdin=child_side,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    os.close(child_side)
    try:
        assert process.stderr is not None
        prompt = await _read_until(process.stderr, b"to confirm: ", 30)
        assert b"to confirm: " in prompt, prompt
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, rest = await asyncio.wait_for(process.communicate(), 10)
        took = time.monotonic() - started
    finally:
        os.close(terminal)
        if process.returncode is None:
            process.kill()
            await process.wait()
    err = rest.decode()
    assert process.returncode == 130, err
    assert took < 5
    assert "Traceback" not in err and out == b""
    assert err.strip().splitlines() == ["kconsole: error: interrupted at the confirmation; nothing was called"]
    assert (await kinesis.describe_stream_summary(stream)).status == "ACTIVE"  # not deleted
