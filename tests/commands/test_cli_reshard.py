"""`kconsole plan` and `kconsole reshard` as a user runs them, against the embedded local Kinesis.

Every refusal must be one clear line on stderr, exit 1 (or 2 for bad input), no traceback, and no
call: the server's shard list is unchanged and the action log has no entry.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys

import pytest

from console.cli import main
from console.keyspace.hashkeys import even_split, md5_hash_key
from console.reshard.actionlog import ActionLog
from console.reshard.execute import open_in_order
from tests.reshard.helpers_reshard import keys_hashing_into


def results(log):
    """The plans' summary entries (each call also has its intent and outcome entries)."""
    return [entry for entry in log.entries() if entry.get("kind", "result") == "result"]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path


@pytest.fixture
def log(isolated):
    return ActionLog(isolated / "data" / "actions.jsonl")


async def kconsole(capsys, *argv):
    code = await asyncio.to_thread(main, [str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_clean_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(lines) == 1, err
    return lines[0]


async def open_ranges(kinesis, stream):
    return [
        (s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in open_in_order(await kinesis.all_shards(stream))
    ]


def endpoint(local_kinesis):
    return ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]


# ---------------------------------------------------------------- plan


async def test_offline_plan_needs_no_backend(capsys):
    code, out, _err = await kconsole(capsys, "plan", "scale", "--shards", "4", "--to", "8", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["breaches"] == []
    assert [(int(s["starting_hash_key"]), int(s["ending_hash_key"])) for s in doc["after"]] == even_split(8)
    assert all(s["shard_id"] is None for s in doc["after"])


async def test_offline_plan_with_breach_prints_plan_and_exits_1(capsys):
    code, out, err = await kconsole(capsys, "plan", "scale", "--shards", "4", "--to", "9")
    assert code == 1 and "REJECTED" in out and "at most double" in out and "Traceback" not in err


async def test_plan_against_stream_lists_after_shards_and_changes_nothing(
    capsys, local_kinesis, kinesis, make_stream, log, tmp_path
):
    stream = await make_stream(shards=4)
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join(f"user-{i}" for i in range(200)) + "\n")
    before = await open_ranges(kinesis, stream)
    code, out, _ = await kconsole(
        capsys,
        "plan",
        "split",
        stream,
        "--shard",
        "shardId-000000000002",
        "--at-median-of",
        keys,
        "--sample-keys",
        keys,
        "--json",
        *endpoint(local_kinesis),
    )
    doc = json.loads(out)
    assert code == 0 and doc["after_count"] == 5
    new = [s for s in doc["after"] if not s["unchanged"]]
    assert [s["shard_id"] for s in new] == ["shardId-000000000004", "shardId-000000000005"]
    assert doc["key_movement"]["sample_size"] == 200 and doc["key_movement"]["moved"] > 0
    assert await open_ranges(kinesis, stream) == before and log.entries() == []


async def test_plan_usage_errors_exit_2(capsys, tmp_path):
    cases = [
        ("plan", "scale", "--to", "4"),  # neither stream nor --shards
        ("plan", "split", "--shards", "4", "--shard", "shardId-000000000001", "--at", "12x"),
        ("plan", "split", "--shards", "4", "--shard", "nope"),
        ("plan", "scale", "--shards", "4", "--to", "0"),
        ("plan", "split", "--shards", "4", "--shard", "shardId-000000000001", "--at-median-of", tmp_path / "missing"),
        ("plan", "merge", "--shards", "4", "--shard", "shardId-000000000001", "--adjacent", "shardId-000000000001"),
        ("plan", "split", "--shards", "4", "--shard", "shardId-000000000001", "--at-median-of-recent"),
        ("plan", "split", "s", "--shard", "shardId-000000000001", "--sample-seconds", "60"),
        ("plan", "split", "s", "--shard", "shardId-000000000001", "--at-median-of-recent", "--sample-seconds", "0"),
        ("reshard", "split", "s", "--shard", "shardId-000000000001", "--at-median-of-recent", "--sample-limit", "0"),
    ]
    for argv in cases:
        code, _out, err = await kconsole(capsys, *argv)
        assert code == 2, (argv, err)
        one_clean_line(err)


# ---------------------------------------------------------------- split at the median of recent records


async def test_split_at_median_of_recent_records_plans_then_runs(capsys, local_kinesis, kinesis, make_stream, log):
    stream = await make_stream(shards=2)
    start, end = even_split(2)[1]
    tenth = start + (end - start) // 10
    written = keys_hashing_into(start, tenth, 90, "hot") + keys_hashing_into(
        tenth + 1, end, 30, "cool"
    )  # skewed to the bottom
    await kinesis.put_records(stream, [{"Data": b"x", "PartitionKey": k} for k in written])
    split = ["split", stream, "--shard", "shardId-000000000001", "--at-median-of-recent", *endpoint(local_kinesis)]

    code, out, err = await kconsole(capsys, "plan", *split, "--sample-seconds", "120")
    assert code == 0, err
    assert "median of 120 sampled records (120 distinct keys)" in out and "50.0% / 50.0% (60 / 60)" in out
    assert "shardId-000000000001's records of the last 120 s" in out and err == ""

    code, out, err = await kconsole(capsys, "reshard", *split, "--yes", "--wait", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["matches_plan"] is True and doc["plan"]["median_split"]["sampled"] == 120
    key = int(doc["plan"]["operations"][0]["new_starting_hash_key"])
    assert start < key <= end and sum(md5_hash_key(k) < key for k in written) == 60
    ranges = await open_ranges(kinesis, stream)
    assert [(s, e) for _, s, e in ranges] == [even_split(2)[0], (start, key - 1), (key, end)]
    assert results(log)[0]["calls"] == {"SplitShard": 1}


async def test_median_of_recent_on_an_idle_shard_is_one_line_and_no_call(
    capsys, local_kinesis, kinesis, make_stream, log
):
    stream = await make_stream(shards=2)
    for verb in ("plan", "reshard"):
        line = await refused(
            capsys,
            kinesis,
            stream,
            log,
            [
                verb,
                "split",
                stream,
                "--shard",
                "shardId-000000000000",
                "--at-median-of-recent",
                "--yes" if verb == "reshard" else "--json",
                *endpoint(local_kinesis),
            ],
            match="--at midpoint",
        )
        assert "no records from the last 300 s" in line


# ---------------------------------------------------------------- reshard


async def test_reshard_split_with_yes_and_wait_matches_plan_and_logs(capsys, local_kinesis, kinesis, make_stream, log):
    stream = await make_stream(shards=4)
    code, out, err = await kconsole(
        capsys,
        "reshard",
        "split",
        stream,
        "--shard",
        "shardId-000000000001",
        "--yes",
        "--wait",
        "--json",
        *endpoint(local_kinesis),
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["executed"] and doc["matches_plan"] is True
    planned = [(s["shard_id"], int(s["starting_hash_key"]), int(s["ending_hash_key"])) for s in doc["plan"]["after"]]
    assert await open_ranges(kinesis, stream) == planned
    [entry] = results(log)
    assert entry["action"] == "split" and entry["stream"] == stream and entry["calls"] == {"SplitShard": 1}
    assert "who" in entry and entry["time"] and len(entry["after"]) == 5


async def test_reshard_merge_text_output(capsys, local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=3)
    code, out, err = await kconsole(
        capsys,
        "reshard",
        "merge",
        stream,
        "--shard",
        "shardId-000000000001",
        "--adjacent",
        "shardId-000000000002",
        "--yes",
        "--wait",
        *endpoint(local_kinesis),
    )
    assert code == 0, err
    assert "MergeShards shardId-000000000001 + shardId-000000000002" in out and "exactly as planned" in out
    assert len(await open_ranges(kinesis, stream)) == 2
    # --yes asked nothing, so no prompt showed the plan: the output does, before what was called
    assert out.index("Before: 3 open shards") < out.index("After: 2 open shards") < out.index("Called: MergeShards")


async def refused(capsys, kinesis, stream, log, argv, *, code=1, match=""):
    before = await open_ranges(kinesis, stream)
    got, _out, err = await kconsole(capsys, *argv)
    assert got == code, err
    line = one_clean_line(err)
    assert match in line, line
    assert await open_ranges(kinesis, stream) == before
    assert log.entries() == []
    return line


async def test_every_refusal_makes_no_call(capsys, local_kinesis, kinesis, make_stream, log):
    stream = await make_stream(shards=4)
    e = endpoint(local_kinesis)
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        [
            "reshard",
            "merge",
            stream,
            "--shard",
            "shardId-000000000000",
            "--adjacent",
            "shardId-000000000002",
            "--yes",
            *e,
        ],
        match="not adjacent",
    )
    await refused(
        capsys, kinesis, stream, log, ["reshard", "scale", stream, "--to", "9", "--yes", *e], match="more than double"
    )
    await refused(
        capsys, kinesis, stream, log, ["reshard", "scale", stream, "--to", "1", "--yes", *e], match="less than half"
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "split", stream, "--shard", "shardId-000000000001", "--at", "0", "--yes", *e],
        match="outside",
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        [
            "reshard",
            "split",
            stream,
            "--shard",
            "shardId-000000000001",
            "--at",
            "85070591730234615865843651857942052864",
            "--yes",
            *e,
        ],
        match="at the start of",
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "scale", stream, "--to", "8", "--yes", "--account-shard-limit", "6", *e],
        match="shard quota (6)",
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "split", stream, "--shard", "shardId-000000000001", "--at", "-5", "--yes", *e],
        code=2,
        match="--at hash key",
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "split", stream, "--shard", "shardId-000000000042", "--yes", *e],
        code=2,
        match="no shard",
    )
    await refused(
        capsys, kinesis, stream, log, ["reshard", "scale", stream, "--to", "8", *e], match="without confirmation"
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "scale", stream, "--to", "8", "--yes", "--read-only", *e],
        match="read-only",
    )
    await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["--read-only", "reshard", "scale", stream, "--to", "8", "--yes", *e],
        match="read-only",
    )


async def test_read_only_from_config(capsys, local_kinesis, kinesis, make_stream, log, isolated):
    stream = await make_stream(shards=2)
    (isolated / "config.toml").write_text("read_only = true\n")
    line = await refused(
        capsys,
        kinesis,
        stream,
        log,
        ["reshard", "scale", stream, "--to", "4", "--yes", "--json", *endpoint(local_kinesis)],
        match="read-only",
    )
    assert "config" in line


async def test_daily_quota_counted_from_action_log(capsys, local_kinesis, kinesis, make_stream, log):
    stream = await make_stream(shards=2)
    label = f"endpoint {local_kinesis.endpoint_url}"
    for _ in range(10):
        log.append({"stream": stream, "backend": label, "calls": {"UpdateShardCount": 1}})
    before = await open_ranges(kinesis, stream)
    code, _, err = await kconsole(capsys, "reshard", "scale", stream, "--to", "4", "--yes", *endpoint(local_kinesis))
    assert code == 1 and "10 times per rolling 24 hours" in one_clean_line(err)
    assert await open_ranges(kinesis, stream) == before and len(log.entries()) == 10


async def test_unknown_stream_is_one_line(capsys, local_kinesis, log):
    code, _, err = await kconsole(
        capsys, "reshard", "scale", "no-such-stream", "--to", "4", "--yes", *endpoint(local_kinesis)
    )
    assert code == 1 and "not found" in one_clean_line(err) and log.entries() == []


# ---------------------------------------------------------------- confirmation on a real TTY


def run_on_tty(argv, answer: str, env: dict) -> tuple[int, str]:
    """Run kconsole with a pseudo-terminal as stdin; type `answer` when it asks."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", *argv],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(slave)
    os.write(master, (answer + "\n").encode())
    try:
        _out, err = process.communicate(timeout=60)
    finally:
        os.close(master)
    return process.returncode, err.decode()


async def test_tty_confirmation_requires_the_stream_name(local_kinesis, kinesis, make_stream, log):
    stream = await make_stream(shards=2)
    env = dict(os.environ)
    argv = ["reshard", "scale", stream, "--to", "4", "--wait", *endpoint(local_kinesis)]
    before = await open_ranges(kinesis, stream)
    code, err = await asyncio.to_thread(run_on_tty, argv, "wrong-name", env)
    assert code == 1 and "did not match" in err and "Type the stream name" in err and "Traceback" not in err
    assert await open_ranges(kinesis, stream) == before and log.entries() == []
    code, err = await asyncio.to_thread(run_on_tty, argv, stream, env)
    assert code == 0, err
    assert len(await open_ranges(kinesis, stream)) == 4 and results(log)[0]["calls"] == {"UpdateShardCount": 1}


@pytest.mark.kinesis_mock
async def test_reshard_exits_1_and_prints_the_difference_when_the_result_is_not_the_plan(kinesis_mock, capsys):
    """kinesis-mock's UpdateShardCount 4 -> 6 does not end with AWS's equal shares: the command says
    where the result differs and exits 1 rather than 0."""
    from console.backend import BackendConfig, open_backend
    from tests.conftest import unique_stream_name

    stream = unique_stream_name("differs")
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    async with open_backend(config) as backend:
        await backend.create_stream(stream, 4)
        await backend.wait_for_active(stream)
        try:
            code, out, err = await kconsole(
                capsys,
                "reshard",
                "scale",
                stream,
                "--to",
                "6",
                "--yes",
                "--wait",
                "--endpoint-url",
                kinesis_mock.endpoint_url,
                "--region",
                "us-east-1",
            )
            observed = [
                (s.starting_hash_key, s.ending_hash_key) for s in open_in_order(await backend.all_shards(stream))
            ]
        finally:
            await backend.delete_stream(stream)
    assert observed != even_split(6)  # the server's departure this test relies on
    assert code == 1, err
    assert "Observed open shards differ from the plan:" in out and "planned [" in out
    assert "differ from the plan" in err


async def test_median_headline_counts_only_the_keys_inside_the_shard(capsys, tmp_path):
    shard_one = even_split(4)[1]
    inside = keys_hashing_into(*shard_one, count=2, prefix="in")
    outside = [key for key in (f"k-{n}" for n in range(200)) if not shard_one[0] <= md5_hash_key(key) <= shard_one[1]][
        :6
    ]
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join(inside + outside) + "\n")
    code, out, _ = await kconsole(
        capsys, "plan", "split", "--shards", "4", "--shard", "shardId-000000000001", "--at-median-of", keys, "--json"
    )
    doc = json.loads(out)
    assert code == 0
    assert f"median of 2 keys in {keys}; 6 more hash outside the shard)" in doc["summary"], doc["summary"]
    assert "median of 8" not in json.dumps(doc)
