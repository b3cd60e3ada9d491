"""Starting the console as a user does, in a pseudo-terminal: read-only is total on the embedded
server too (no demo stream is created), and a stream name AWS would refuse never opens a console."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(90)


def screen_text(argv, tmp_path, until, seconds=40.0):
    """Run kconsole on a pseudo-terminal and return what it drew (escape sequences stripped of
    nothing: the words are searched as they were written) once `until` appears, or at the timeout."""
    leader, follower = pty.openpty()
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": "120",
        "LINES": "40",
        "KCONSOLE_CONFIG": str(tmp_path / "none.toml"),
        "KCONSOLE_DATA_DIR": str(tmp_path / "data"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", *argv],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not any(word.encode() in seen for word in until):
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
        os.close(leader)
    return seen.decode("utf-8", errors="replace")


def test_local_read_only_creates_no_demo_stream(tmp_path):
    text = screen_text(["--local", "--read-only"], tmp_path, until=("has no streams", "kconsole-demo"))
    assert "has no streams" in text and "kconsole-demo" not in text


def test_a_bad_stream_name_never_opens_the_console(tmp_path):
    text = screen_text(
        ["--stream", "bad name!", "--endpoint-url", "http://127.0.0.1:9"], tmp_path, until=("error",), seconds=20
    )
    assert "not a valid stream name: 'bad name!'" in text


def test_local_console_is_built_while_the_server_boots_and_shows_the_new_stream(tmp_path):
    # The embedded server starts alongside the UI; the stream is made once it answers, then polled.
    text = screen_text(
        ["--local", "--stream", "launched", "--shards", "2"], tmp_path, until=("shardId-000000000001",), seconds=60
    )
    assert "shardId-000000000000" in text and "shardId-000000000001" in text
