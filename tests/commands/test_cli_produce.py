"""`kconsole produce` as a user runs it: JSON report, progress on stderr, exit codes, bad input."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys

import pytest

from console import cli
from console.backend import KinesisBackend


def run_cli(argv: list[str]) -> int:
    """The CLI in a thread: it runs its own event loop, as from a shell."""
    return asyncio.to_thread(cli.main, argv)


def endpoint_args(local_kinesis) -> list[str]:
    return ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]


def test_local_creates_the_stream_and_verifies(tmp_path):
    command = [
        sys.executable,
        "-m",
        "console.cli",
        "produce",
        "cli-produce-local",
        "--local",
        "--keys",
        "20",
        "--records-per-key",
        "5",
        "--verify",
        "--json",
        "--yes",
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "KCONSOLE_CONFIG": str(tmp_path / "none.toml")},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for field in ("sent", "acknowledged", "read_back", "lost", "duplicated", "out_of_order", "misplaced"):
        assert field in report
    assert (report["sent"], report["acknowledged"], report["read_back"]) == (100, 100, 100)
    assert report["ok"] and report["verified"] and report["lost"] == report["out_of_order"] == 0
    assert "created stream 'cli-produce-local'" in done.stderr and "produce: 100/100 acknowledged" in done.stderr


async def test_sequential_with_key_tree_hash_keys(local_kinesis, make_stream, capsys):
    pytest.importorskip("console.keyspace.keytree.tree")
    stream = await make_stream(shards=2)
    code = await run_cli(
        [
            "produce",
            stream,
            "--keys",
            "6",
            "--records-per-key",
            "4",
            "--mode",
            "sequential",
            "--explicit-hash-keys",
            "keytree",
            "--verify",
            "--json",
            "--yes",
            *endpoint_args(local_kinesis),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert (report["mode"], report["read_back"], report["ok"]) == ("sequential", 24, True)
    assert {read["shard_id"] for read in report["shards_read"]} == {"shardId-000000000000", "shardId-000000000001"}


async def test_text_output_without_verify(local_kinesis, make_stream, capsys):
    stream = await make_stream(shards=1)
    code = await run_cli(
        [
            "produce",
            stream,
            "--keys",
            "3",
            "--records-per-key",
            "2",
            "--payload-bytes",
            "1000",
            "--yes",
            *endpoint_args(local_kinesis),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "6/6 acknowledged" in out and "verification" not in out


async def test_verification_failure_exits_1(local_kinesis, make_stream, capsys, monkeypatch):
    """A transport that acknowledges a record it never stores: the run must fail verification."""
    stream = await make_stream(shards=2)
    real_put_records = KinesisBackend.put_records
    calls = []

    async def swallowing(self, name, records):
        calls.append(len(records))
        if len(calls) != 1:
            return await real_put_records(self, name, records)
        answer = await real_put_records(self, name, records[1:])
        return {"FailedRecordCount": 0, "Records": [dict(answer["Records"][0])] + answer["Records"]}

    monkeypatch.setattr(KinesisBackend, "put_records", swallowing)
    code = await run_cli(
        [
            "produce",
            stream,
            "--keys",
            "10",
            "--records-per-key",
            "3",
            "--verify",
            "--json",
            "--yes",
            *endpoint_args(local_kinesis),
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["ok"] and report["lost"] == 1
    assert report["problems"][0]["kind"] == "lost"


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--keys", "0", "--records-per-key", "1"], 2, "keys must be a whole number"),
        (["--keys", "x", "--records-per-key", "1"], 2, "--keys must be a whole number"),
        (["--keys", "1", "--records-per-key", "1", "--payload-bytes", "11000000"], 2, "payload bytes"),
        (["--keys", "1", "--records-per-key", "1", "--rate", "-5"], 2, "--rate must be a positive number"),
        (["--keys", "1", "--records-per-key", "1", "--mode", "fast"], 2, "invalid choice"),
        (["--keys", "1", "--records-per-key", "1", "--batch-size", "501"], 2, "batch size"),
        (["--records-per-key", "1"], 2, "required: --keys"),
        (["--keys", "1", "--records-per-key", "1", "--give-up-after", "99999"], 2, "(--give-up-after) must be"),
        (["--keys", "1", "--records-per-key", "1", "--give-up-after", "nan"], 2, "--give-up-after must be a positive"),
        (["--keys", "1", "--records-per-key", "1", "--request-timeout", "0"], 2, "--request-timeout must be"),
        (["--keys", "1", "--records-per-key", "1", "--request-timeout", "inf"], 2, "--request-timeout must be"),
        (["--keys", "1", "--records-per-key", "1", "--read-only"], 1, "read-only"),
    ],
)
def test_bad_input_is_one_line(argv, code, message, capsys):
    assert cli.main(["produce", "s", *argv, "--json"]) == code
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1
    assert json.loads(captured.out)["error"]["message"]


async def test_unknown_stream_names_the_ones_there(local_kinesis, capsys):
    code = await run_cli(
        ["produce", "no-such-stream", "--keys", "1", "--records-per-key", "1", *endpoint_args(local_kinesis)]
    )
    err = capsys.readouterr().err
    assert code == 1 and "not found" in err and len(err.strip().splitlines()) == 1


async def test_writing_needs_the_stream_name_or_yes(local_kinesis, make_stream, capsys, monkeypatch):
    """Without a TTY and without --yes nothing is written; on a TTY the typed name must match."""
    import io

    stream = await make_stream(shards=1)

    async def records_in_stream():
        await run_cli(["tail", stream, "--json", *endpoint_args(local_kinesis)])
        return len(capsys.readouterr().out.splitlines())

    argv = ["produce", stream, "--keys", "2", "--records-per-key", "2", "--json", *endpoint_args(local_kinesis)]
    code = await run_cli(argv)
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["error"]["code"] == "needs_confirmation"

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("not-the-name\n"))
    code = await run_cli(argv)
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["error"]["code"] == "not_confirmed"
    assert "Type the stream name to confirm" in captured.err and "write 4 test records" in captured.err
    assert await records_in_stream() == 0
    monkeypatch.setattr(sys, "stdin", Terminal(stream + "\n"))
    code = await run_cli(argv)
    captured = capsys.readouterr()
    assert code == 0 and json.loads(captured.out)["acknowledged"] == 4
    assert await records_in_stream() == 4


async def test_one_of_anything_is_counted_in_the_singular(local_kinesis, make_stream, capsys):
    stream = await make_stream(shards=1)
    argv = ["produce", stream, "--keys", "1", "--records-per-key", "1", "--verify", "--yes"]
    code = await run_cli([*argv, *endpoint_args(local_kinesis)])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 0 and "1 record (1 key x 1)" in said and "1 shard read in" in said, said
    # "1 records" as words: a rate such as "161 records/s" is rightly plural.
    assert not re.search(r"(?<![\d,.])1 (records|keys|shards)\b", said), said


def test_a_one_shard_stream_is_planned_as_one_shard():
    from console.lifecycle.plans import plan_create

    plan = plan_create("one", shards=1, on_demand=False, retention_hours=None, exists=False)
    text = " ".join([plan.summary, *plan.consequences])
    assert "1 shard:" in text and "of 1 shard" in text and "1 shards" not in text, text
