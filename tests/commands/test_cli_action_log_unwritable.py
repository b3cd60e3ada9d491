"""No log, no call: when the intent cannot be written (a read-only home, a full disk, a log that is
a FIFO), kconsole calls nothing, says where and why in one line, and exits 1. An independent reader
(plain botocore) checks the stream is as it was."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys

import botocore.session
import pytest

from console.cli import main

COMMANDS = {
    "split": lambda s: ["reshard", "split", s, "--shard", "shardId-000000000000"],
    "scale": lambda s: ["reshard", "scale", s, "--to", "4"],
    "retention": lambda s: ["stream", "retention", s, "--hours", "48"],
    "register": lambda s: ["consumers", "register", s, "--name", "app"],
}


def state(local_kinesis, stream):
    client = botocore.session.get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=local_kinesis.endpoint_url,
        aws_access_key_id="truth",
        aws_secret_access_key="truth",
    )
    described = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
    shards = client.list_shards(StreamName=stream)["Shards"]
    consumers = client.list_stream_consumers(StreamARN=described["StreamARN"])["Consumers"]
    return ([s["ShardId"] for s in shards], described["RetentionPeriodHours"], [c["ConsumerName"] for c in consumers])


def argv_for(command, stream, local_kinesis):
    return [*COMMANDS[command](stream), "--yes", "--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]


def the_error(err: str) -> str:
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("stand_in", ["/dev/full", "fifo"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
async def test_a_log_that_takes_no_bytes_means_no_call(
    stand_in, command, tmp_path, monkeypatch, capsys, local_kinesis, make_stream
):
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    log = data / "actions.jsonl"
    if stand_in == "fifo":
        os.mkfifo(log)
    else:
        log.symlink_to("/dev/full")
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(data))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    stream = await make_stream(shards=2)
    before = state(local_kinesis, stream)
    code = await asyncio.wait_for(asyncio.to_thread(main, argv_for(command, stream, local_kinesis)), 30)
    line = the_error(capsys.readouterr().err)
    assert code == 1
    assert str(log) in line and "nothing was called" in line
    assert state(local_kinesis, stream) == before


def _read_only_home_runner() -> list[str] | None:
    """A way to run a child whose home is on a read-only file system: a private mount namespace
    (root), else a folder without write permission (anyone else)."""
    if os.geteuid() == 0:
        unshare = shutil.which("unshare")
        if unshare and subprocess.run([unshare, "-m", "true"], capture_output=True).returncode == 0:
            return [unshare, "-m", "sh", "-c", 'mount -t tmpfs -o ro tmpfs "$HOME" && exec "$@"', "sh"]
        return None
    return []


@pytest.mark.parametrize("command", ["split", "scale", "retention"])
async def test_a_read_only_home_means_no_call(command, tmp_path, local_kinesis, make_stream):
    runner = _read_only_home_runner()
    if runner is None:
        pytest.skip("no way to make a read-only home here (root without mount namespaces)")
    home = tmp_path / "home"
    home.mkdir()
    if not runner:
        home.chmod(0o500)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("KCONSOLE_", "XDG_"))}
    env.update(HOME=str(home), AWS_EC2_METADATA_DISABLED="true")
    stream = await make_stream(shards=2)
    before = state(local_kinesis, stream)
    done = await asyncio.to_thread(
        subprocess.run,
        [*runner, sys.executable, "-m", "console.cli", *argv_for(command, stream, local_kinesis)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = the_error(done.stderr)
    assert done.returncode == 1, done.stderr
    assert str(home) in line and ("Read-only file system" in line or "Permission denied" in line)
    assert "nothing was called" in line
    assert state(local_kinesis, stream) == before
