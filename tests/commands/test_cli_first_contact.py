"""First contact on the embedded server, as a new user meets it: every command with `--local` creates
the stream it names (4 shards, or --shards N, bounded at 1..10,000 before anything starts),
`local serve --stream` pre-creates streams before announcing the endpoint, and the console's demo
keeps the shard count asked for."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time

import pytest

from console.backend import BackendConfig, open_backend
from console.ui.launch import prepare_demo_stream

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


async def kconsole(*argv: str, timeout: float = 90.0) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(
    "argv, created",
    [
        (["--local", "plan", "split", "orders", "--shard", "shardId-000000000001"], 4),
        (["--local", "--shards", "8", "plan", "scale", "orders", "--to", "16"], 8),
        (["--local", "plan", "even", "orders", "--shards", "3"], 3),
        (["--local", "reshard", "split", "orders", "--shard", "shardId-000000000001", "--yes", "--json"], 4),
        (["--local", "heat", "orders", "--seconds", "1", "--json", "--shards", "2"], 2),
        (["--local", "--shards", "5", "stream", "describe", "orders", "--json"], 5),
    ],
)
async def test_commands_that_could_never_work_on_local_now_create_the_stream(argv, created):
    code, out, err = await kconsole(*argv)
    assert code == 0, err
    assert f"created stream 'orders' with {created} shards on the embedded local Kinesis" in err
    if "--json" in argv:
        json.loads(out)


@pytest.mark.parametrize(
    "argv",
    [
        ["--local", "--shards", "10001", "heat", "orders"],
        ["--local", "reshard", "split", "orders", "--shard", "x", "--shards", "0"],
        ["--local", "shards", "orders", "--shards", "many"],
        ["--local", "--shards", "0"],
    ],
)
async def test_a_shard_count_out_of_bounds_is_refused_before_the_server_starts(argv):
    began = time.monotonic()
    code, out, err = await kconsole(*argv)
    assert code == 2 and out == ""
    assert err.startswith("kconsole: error: --shards must be a whole number from 1 to 10,000")
    assert "starting the embedded" not in err and time.monotonic() - began < 10


async def test_local_serve_creates_the_streams_then_announces_the_endpoint():
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "local",
        "serve",
        "--port",
        "0",
        "--stream",
        "orders",
        "--stream",
        "clicks",
        "--shards",
        "3",
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        announced = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
        assert announced["streams"] == ["orders", "clicks"]
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=announced["endpoint_url"])
        async with open_backend(config) as kinesis:
            # Announced only once they exist: whoever waits for the line finds them ACTIVE.
            summaries = {s.name: s for s in await kinesis.list_streams()}
        assert {name: (s.status, s.open_shard_count) for name, s in summaries.items()} == {
            "orders": ("ACTIVE", 3),
            "clicks": ("ACTIVE", 3),
        }
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)


async def test_the_demo_splits_a_shard_only_when_no_count_was_asked(kinesis):
    await prepare_demo_stream(kinesis, "demo-asked", 8, split=False)
    assert sum(s.is_open for s in await kinesis.all_shards("demo-asked")) == 8
    await prepare_demo_stream(kinesis, "demo-default", 4)
    shards = await kinesis.all_shards("demo-default")
    assert (sum(s.is_open for s in shards), len(shards)) == (5, 6)  # one split: lineage to show
    for name in ("demo-asked", "demo-default"):
        await kinesis.delete_stream(name)
