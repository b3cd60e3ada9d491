"""The AWS CLI's output conventions on every command: --output json|text|table, --query, --max-items,
and exit 130 on Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from console import cli
from console.keyspace.hashkeys import md5_hash_key
from tests.conftest import interrupt, kconsole_child


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output_is_tab_separated_without_a_header(capsys):
    code, out, err = run(["predict", "a", "b", "c", "--shards", "4", "--output", "text"], capsys)
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines() if line.startswith("KEYS\t")]
    # awk '$1 == "KEYS" {print $2, $4}': key, hash key, shard, index, in the JSON document's order
    assert [(row[1], row[2], row[3]) for row in rows] == [
        (key, str(md5_hash_key(key)), shard)
        for key, shard in [("a", "shardId-000000000000"), ("b", "shardId-000000000002"), ("c", "shardId-000000000001")]
    ]


def test_query_selects_from_the_json_document_like_the_aws_cli(capsys):
    code, out, _ = run(["predict", "a", "b", "c", "--shards", "4", "--query", "keys[?shard_index > `0`].key"], capsys)
    assert code == 0 and json.loads(out) == ["b", "c"]
    # A list of scalars in text is one tab-separated line, as `aws ... --output text` prints it.
    code, out, _ = run(
        ["predict", "a", "b", "c", "--shards", "4", "--query", "keys[].shard_index", "--output", "text"], capsys
    )
    assert out == "0\t2\t1\n"


def test_table_output_is_a_rich_table_of_the_document(capsys):
    code, out, _ = run(["keytree", "--count", "3", "--output", "table"], capsys)
    assert code == 0
    document = json.loads(run(["keytree", "--count", "3", "--json"], capsys)[1])
    keys = document["keys"]
    assert keys and all(str(key["hash_key"] if isinstance(key, dict) else key) in out for key in keys)
    assert "┏" in out and "┃" in out and "\x1b" not in out  # box drawing, and no colour codes off a TTY


def test_text_and_table_never_pass_control_sequences_through(capsys):
    evil = "k\x1b[2Jx\tq"
    for output in ("text", "table"):
        code, out, _ = run(["predict", evil, "--shards", "2", "--output", output], capsys)
        assert code == 0 and "\x1b" not in out and "k\\x1b[2Jx\\tq" in out


def test_max_items_cuts_every_view_and_says_so(capsys):
    keys = [f"k{i}" for i in range(30)]
    code, out, err = run(["predict", *keys, "--shards", "4", "--max-items", "5", "--json"], capsys)
    assert code == 0 and [row["key"] for row in json.loads(out)["keys"]] == keys[:5]
    assert "showing the first 5 of 30 keys" in err
    code, out, _ = run(["predict", *keys, "--shards", "4", "--max-items", "5"], capsys)
    assert "... 25 more rows" in out and "k5 " not in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--query", "keys["], "--query is not a valid JMESPath expression"),
        (["--max-items", "0"], "--max-items must be from 1 to 10,000,000; got 0"),
        (["--json", "--output", "table"], "--json and --output table disagree"),
        (["--output", "yaml"], "invalid choice: 'yaml'"),
    ],
)
def test_bad_output_options_are_one_line_exit_2(argv, message, capsys):
    full = ["predict", "a", "--shards", "2", *argv] + ([] if "--output" in argv else ["--json"])
    code, out, err = run(full, capsys)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if "--json" in full:
        assert json.loads(out)["error"]["code"] == "usage"


def test_the_live_console_refuses_output_options(capsys):
    code, _, err = run(["--output", "table"], capsys)
    assert code == 2 and "use a subcommand" in err


async def _kconsole(*argv: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.cli", *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, out.decode(), err.decode()


async def test_tail_text_output_and_max_items(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    for n in range(4):
        await kinesis.put_record(stream, json.dumps({"n": n}).encode(), f"key\x1b]{n}")
    code, out, err = await _kconsole(
        "tail",
        stream,
        "--output",
        "text",
        "--max-items",
        "3",
        "--query",
        "partition_key",
        "--endpoint-url",
        local_kinesis.endpoint_url,
    )
    assert code == 0, err
    assert out.splitlines() == ["key\\x1b]0", "key\\x1b]1", "key\\x1b]2"]
    code, _, err = await _kconsole("tail", stream, "--output", "table", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 2 and "use --output text or json" in err


async def test_ctrl_c_exits_130_on_a_command_that_is_working(make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    async with kconsole_child(
        "heat", stream, "--seconds", "60", "--endpoint-url", local_kinesis.endpoint_url
    ) as process:
        await asyncio.sleep(3)  # imported, connected and sampling
        assert process.returncode is None
        _, err = await interrupt(process)
    assert process.returncode == 130, err
    assert b"Traceback" not in err and err.decode().strip().splitlines()[-1] == "kconsole: error: interrupted"
