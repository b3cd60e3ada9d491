"""Every file a user names is read within a bound before any work: /dev/zero (no newline, ever),
/dev/urandom (not text), a FIFO nobody writes to and a directory are each one line, exit 2, in
under a second; the config file is read up to 1 MiB (beyond: one warning line, read-only on);
`--query` is bounded in length and in the digits of its numbers, and quotes at most 80 characters."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from console.cli import main

SPLIT = ["plan", "split", "--shards", "4", "--shard", "shardId-000000000000"]
OPTIONS = {
    "--keys-file": ["predict", "--shards", "4", "--keys-file"],
    "--sample-keys": [*SPLIT, "--sample-keys"],
    "--at-median-of": [*SPLIT, "--at-median-of"],
    "--existing-file": ["keytree", "--existing-file"],
    "--sort-keys-file": ["spread", "pk", "--suffixes", "4", "--sort-keys-file"],
    "put --file": ["put", "s", "--endpoint-url", "http://127.0.0.1:9", "--region", "us-east-1", "--file"],
    "stream policy --put": [
        *("stream", "policy", "s", "--endpoint-url", "http://127.0.0.1:9", "--region", "us-east-1", "--yes", "--put")
    ],
    "channels create --config": [
        *("channels", "create", "--endpoint-url", "http://127.0.0.1:9", "--region", "us-east-1", "--yes", "--config")
    ],
}


@pytest.fixture
def hostile(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom", "FIFO": str(fifo), "directory": str(tmp_path)}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.mark.parametrize("kind", ["/dev/zero", "/dev/urandom", "FIFO", "directory"])
@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_a_hostile_file_is_one_line_and_exit_2_at_once(option, kind, hostile, capsys):
    started = time.monotonic()
    code = main([*OPTIONS[option], hostile[kind]])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kconsole: error: ") and "internal error" not in err, err
    assert hostile[kind] in err
    # Alone each answers in well under a second (put --file /dev/zero, the longest, scans its 60 MiB
    # line bound in ~0.25 s as a whole process); the margin is for a suite sharing two cores.
    assert elapsed < 2.0


def test_a_fifo_written_to_in_time_is_read(tmp_path, capsys):
    fifo = tmp_path / "keys"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'sleep 0.2; printf "a\\nb\\n" > "{fifo}"'])
    try:
        code = main(["predict", "--shards", "4", "--keys-file", str(fifo), "--json"])
    finally:
        writer.wait(5)
    assert code == 0
    assert [row["key"] for row in json.loads(capsys.readouterr().out)["keys"]] == ["a", "b"]


def test_a_file_past_the_line_cap_is_refused_before_it_is_all_read(tmp_path, capsys, monkeypatch):
    import console.bounds

    monkeypatch.setattr(console.bounds, "MAX_LIST_FILE_LINES", 1000)
    monkeypatch.setattr(
        console.bounds.read_text_lines,
        "__kwdefaults__",
        {**console.bounds.read_text_lines.__kwdefaults__, "max_lines": 1000},
    )
    keys = tmp_path / "keys"
    keys.write_text("k\n" * 1001)
    assert main(["predict", "--shards", "4", "--keys-file", str(keys)]) == 2
    assert "longer than 1,000 lines" in capsys.readouterr().err


def _limited_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2_000_000 * 1024, 2_000_000 * 1024))


def kconsole_limited(*argv, env=None):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", *argv],
        capture_output=True,
        text=True,
        timeout=20,
        preexec_fn=_limited_memory,
        env={**os.environ, **(env or {})},
    )
    return done, time.monotonic() - started


def test_dev_zero_as_the_config_is_one_warning_and_read_only_stays_on(tmp_path):
    done, elapsed = kconsole_limited("predict", "k", "--shards", "4", env={"KCONSOLE_CONFIG": "/dev/zero"})
    assert done.returncode == 0 and elapsed < 5
    assert done.stderr.count("\n") == 1 and "/dev/zero" in done.stderr and "read-only" in done.stderr
    big = tmp_path / "big.toml"
    big.write_text("read_only = false\n" + "# padding\n" * 120_000)  # over 1 MiB, and says read_only = false
    done, _ = kconsole_limited(
        "reshard",
        "split",
        "s",
        "--shard",
        "shardId-000000000000",
        "--yes",
        "--endpoint-url",
        "http://127.0.0.1:9",
        "--region",
        "us-east-1",
        env={"KCONSOLE_CONFIG": str(big)},
    )
    assert done.returncode == 1 and "larger than 1 MiB" in done.stderr and "read-only" in done.stderr.splitlines()[-1]


def test_dev_zero_as_a_keys_file_under_a_memory_limit():
    done, elapsed = kconsole_limited("predict", "--shards", "4", "--keys-file", "/dev/zero")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert elapsed < 5


@pytest.mark.parametrize(
    "query, says",
    [
        ("keys[?shard_index > `" + "9" * 5000 + "`]", "characters; at most"),
        ("keys[?shard_index > `" + "9" * 30 + "`]", "more than 20 digits"),
        ("keys[" + "9" * 3000 + "]", "more than 20 digits"),
        ("keys." + "x" * 3000 + " ||| b", "not a valid JMESPath expression"),
    ],
    ids=["5000-digit literal", "30-digit literal", "3000-digit index", "long bad expression"],
)
def test_a_hostile_query_is_one_short_line(query, says, capsys):
    assert main(["predict", "k", "--shards", "4", "--query", query]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "internal error" not in err
    quoted = err[err.index("'") :].strip()
    assert len(quoted) <= 80 + 5  # at most 80 characters of it, in quotes, with "..."
