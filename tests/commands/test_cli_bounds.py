"""Every size a user gives is bounded by AWS's own limits before any work starts: one line, exit 2,
in milliseconds, whatever the number (console.bounds, shared with the console's prompts)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import pytest

from console import cli
from tests.conftest import free_port

CLOSED = f"http://127.0.0.1:{free_port()}"  # nothing listens: a command that reached the network would say so


def run(argv, capsys):
    started = time.monotonic()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err, time.monotonic() - started


def _one_gigabyte_cap():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "scale", "--shards", "4", "--to", "99999999999"],
        ["plan", "even", "--shards", "4", "--to", "99999999999"],
        ["plan", "scale", "--shards", "99999999999", "--to", "8"],
    ],
)
def test_a_huge_shard_count_is_refused_under_a_memory_cap_in_milliseconds(argv):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", *argv],
        capture_output=True,
        text=True,
        timeout=5,
        preexec_fn=_one_gigabyte_cap,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "must be a whole number from 1 to" in done.stderr
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "argv, words",
    [
        (["plan", "scale", "orders", "--to", "99999999999"], "--to must be a whole number from 1 to 10,000"),
        (["plan", "scale", "orders", "--to", "0"], "--to must be a whole number from 1 to 10,000"),
        (["plan", "even", "orders", "--to", "9" * 5000], "--to must be a whole number from 1 to 100,000"),
        (["plan", "scale", "orders", "--to", "8", "--account-shard-limit", "0"], "--account-shard-limit must be"),
        (
            ["reshard", "scale", "orders", "--to", "8", "--timeout", "-5", "--yes"],
            "--timeout must be a number of seconds",
        ),
        (
            ["reshard", "scale", "orders", "--to", "8", "--timeout", "nan", "--yes"],
            "--timeout must be a number of seconds",
        ),
        (
            ["reshard", "scale", "orders", "--to", "8", "--timeout", "inf", "--yes"],
            "--timeout must be a number of seconds",
        ),
        (
            ["plan", "split", "orders", "--shard", "s", "--at-median-of-recent", "--sample-seconds", "1e12"],
            "--sample-seconds must be a number of seconds above 0 and at most 3.1536e+07",
        ),
        (
            ["plan", "split", "orders", "--shard", "s", "--at-median-of-recent", "--sample-limit", "0"],
            "--sample-limit must be a whole number from 1 to",
        ),
    ],
)
def test_bounds_are_checked_before_any_connection(argv, words, capsys):
    code, out, err, seconds = run([*argv, "--endpoint-url", CLOSED, "--json"], capsys)
    assert code == 2, err
    assert words in err and err.count("\n") == 1
    assert json.loads(out)["error"]["code"] == "usage"
    assert seconds < 0.5


def test_the_largest_allowed_rescale_still_plans_quickly(capsys):
    code, out, err, seconds = run(["plan", "scale", "--shards", "5000", "--to", "10000", "--json"], capsys)
    assert code == 0, err
    assert len(json.loads(out)["after"]) == 10_000 and seconds < 5
