"""`kconsole stream ...` as a user runs it, against the embedded server and kinesis-mock over HTTP:
create (both modes), retention up and down, a mode switch and the 24-hour rule, encryption,
describe, delete (typed name on a real pseudo-terminal), and bad input that sends nothing."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys

import pytest

from console.cli import main
from tests.conftest import unique_stream_name


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    """The action log (the mode-switch history) and the config live in the test's own directory."""
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture(params=["moto", "kinesis-mock"])
def endpoint(request, local_kinesis):
    if request.param == "moto":
        return local_kinesis.endpoint_url
    return request.getfixturevalue("kinesis_mock").endpoint_url


async def kconsole(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def stream_json(capsys, endpoint: str, *argv: str) -> dict:
    code, out, err = await kconsole(capsys, "stream", *argv, "--endpoint-url", endpoint, "--json")
    assert code == 0, err
    return json.loads(out)


async def describe(capsys, endpoint: str, name: str) -> dict:
    return await stream_json(capsys, endpoint, "describe", name)


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(lines) == 1, err
    return lines[0]


async def test_create_provisioned_change_retention_both_ways_encrypt_and_delete(endpoint, capsys):
    name = unique_stream_name("life")
    created = await stream_json(capsys, endpoint, "create", name, "--shards", "3", "--retention-hours", "48", "--wait")
    assert created["executed"] and created["status"] == "ACTIVE"
    state = await describe(capsys, endpoint, name)
    assert (state["stream_status"], state["stream_mode"], state["open_shard_count"]) == ("ACTIVE", "PROVISIONED", 3)
    assert state["retention_period_hours"] == 48 and state["tags"] == {} and state["consumer_count"] == 0

    up = await stream_json(capsys, endpoint, "retention", name, "--hours", "96", "--yes", "--wait")
    assert up["plan"]["calls"][0]["operation"] == "IncreaseStreamRetentionPeriod"
    assert (await describe(capsys, endpoint, name))["retention_period_hours"] == 96
    down = await stream_json(capsys, endpoint, "retention", name, "--hours", "24", "--yes", "--wait")
    assert down["plan"]["calls"][0]["operation"] == "DecreaseStreamRetentionPeriod"
    assert any("become unreadable" in line for line in down["plan"]["consequences"])
    assert (await describe(capsys, endpoint, name))["retention_period_hours"] == 24
    same = await stream_json(capsys, endpoint, "retention", name, "--hours", "24", "--yes")
    assert same["plan"]["noop"] and not same["executed"]

    await stream_json(capsys, endpoint, "encryption", name, "--kms-key", "alias/aws/kinesis", "--yes", "--wait")
    assert (await describe(capsys, endpoint, name))["encryption_type"] == "KMS"
    await stream_json(capsys, endpoint, "encryption", name, "--off", "--yes", "--wait")
    assert (await describe(capsys, endpoint, name))["encryption_type"] == "NONE"

    deleted = await stream_json(capsys, endpoint, "delete", name, "--yes", "--wait")
    assert deleted["status"] == "DELETED"
    code, _, err = await kconsole(capsys, "stream", "describe", name, "--endpoint-url", endpoint)
    assert code == 1 and "not found" in one_error_line(err)


async def test_create_on_demand_then_switch_mode_once_and_the_second_switch_is_refused(endpoint, capsys):
    name = unique_stream_name("od")
    await stream_json(capsys, endpoint, "create", name, "--on-demand", "--wait")
    assert (await describe(capsys, endpoint, name))["stream_mode"] == "ON_DEMAND"

    switched = await stream_json(capsys, endpoint, "mode", name, "provisioned", "--yes", "--wait")
    assert [c["operation"] for c in switched["plan"]["calls"]] == ["UpdateStreamMode"]
    assert (await describe(capsys, endpoint, name))["stream_mode"] == "PROVISIONED"

    code, out, err = await kconsole(capsys, "stream", "mode", name, "on-demand", "--yes", "--endpoint-url", endpoint)
    assert code == 1 and out == ""
    assert "AWS allows one switch per 24 hours" in one_error_line(err)
    assert (await describe(capsys, endpoint, name))["stream_mode"] == "PROVISIONED"  # nothing was called
    await stream_json(capsys, endpoint, "delete", name, "--yes")


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["create", "bad name!"], 2, "not a valid stream name"),
        (["create", "x" * 129], 2, "not a valid stream name"),
        (["create", "ok", "--shards", "0"], 2, "--shards must be a whole number from 1 to 10,000"),
        (["create", "ok", "--shards", "10001"], 2, "from 1 to 10,000"),
        (["create", "ok", "--shards", "2", "--on-demand"], 2, "not allowed with argument"),
        (["create", "ok", "--retention-hours", "23"], 2, "from 24 to 8760"),
        (["retention", "ok", "--hours", "8761"], 2, "from 24 to 8760"),
        (["mode", "ok", "sideways"], 2, "on-demand or provisioned"),
        (["mode", "ok", "on-demand", "--shards", "3"], 2, "only to provisioned"),
        (["encryption", "ok"], 2, "one of the arguments --kms-key --off is required"),
        (["delete", "no-such-stream-here", "--yes"], 1, "stream 'no-such-stream-here' not found"),
        (["delete", "ok", "--read-only", "--yes"], 1, "read-only mode (--read-only): refusing to delete stream ok"),
        (["create", "ok", "--read-only"], 1, "read-only mode"),
    ],
)
async def test_bad_input_is_one_line_the_right_exit_code_and_nothing_is_created(
    local_kinesis, capsys, argv, code, message
):
    url = local_kinesis.endpoint_url
    before = await kconsole(capsys, "streams", "--json", "--endpoint-url", url)
    got, out, err = await kconsole(capsys, "stream", *argv, "--endpoint-url", url, "--json")
    assert got == code
    assert message in one_error_line(err)
    assert json.loads(out)["error"]["message"] in err  # --json: the error document, nothing else
    after = await kconsole(capsys, "streams", "--json", "--endpoint-url", url)
    assert {s["name"] for s in json.loads(after[1])} == {s["name"] for s in json.loads(before[1])}


def run_on_a_terminal(argv: list[str], typed: str, env: dict) -> tuple[int, str]:
    """Run kconsole with stdin on a real pseudo-terminal, type a line, return (exit code, all output)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", *argv],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    os.close(follower)
    os.write(leader, typed.encode() + b"\n")
    out, _ = process.communicate(timeout=60)
    os.close(leader)
    return process.returncode, out.decode()


async def test_delete_on_a_terminal_shows_what_is_lost_and_needs_the_typed_name(local_kinesis, make_stream, capsys):
    name = await make_stream(shards=2)
    url = local_kinesis.endpoint_url
    env = dict(os.environ)
    code, out = await asyncio.to_thread(
        run_on_a_terminal, ["stream", "delete", name, "--endpoint-url", url], "not-the-name", env
    )
    assert code == 1 and "confirmation did not match" in out
    assert "every record in it: up to 24 h of data" in out and "2 open shards" in out
    assert (await describe(capsys, url, name))["stream_status"] == "ACTIVE"

    code, out = await asyncio.to_thread(
        run_on_a_terminal, ["stream", "delete", name, "--endpoint-url", url, "--wait"], name, env
    )
    assert code == 0, out
    assert "Done: delete the stream" in out


async def test_without_a_terminal_a_change_is_refused_unless_yes(local_kinesis, make_stream, capsys):
    name = await make_stream(shards=1)
    code, _, err = await kconsole(
        capsys, "stream", "retention", name, "--hours", "48", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 1 and "no TTY to ask on" in one_error_line(err)
    assert (await describe(capsys, local_kinesis.endpoint_url, name))["retention_period_hours"] == 24
