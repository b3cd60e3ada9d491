"""`kconsole streams` and `kconsole shards` against the embedded local Kinesis (real HTTP), plus bad input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from console.cli import main
from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY

SPLIT_AT = HASH_SPACE // 4  # splits shardId-000000000000 of a 2-shard stream in half


async def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run kconsole in a worker thread (it starts its own event loop), capturing its output."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def json_cli(capsys, endpoint: str, *argv: str):
    code, out, err = await run_cli(capsys, *argv, "--json", "--endpoint-url", endpoint)
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1  # one JSON document
    return json.loads(out)


async def split_first_shard(kinesis, stream: str) -> None:
    await kinesis.split_shard(stream, "shardId-000000000000", SPLIT_AT)
    await kinesis.wait_for_active(stream)


async def test_streams_lists_status_mode_shards_retention_encryption(local_kinesis, make_stream, capsys):
    name = await make_stream(shards=3)
    listed = await json_cli(capsys, local_kinesis.endpoint_url, "streams")
    mine = next(entry for entry in listed if entry["name"] == name)
    assert (mine["status"], mine["mode"], mine["open_shard_count"]) == ("ACTIVE", "PROVISIONED", 3)
    assert (mine["retention_hours"], mine["encryption"]) == (24, "NONE")

    code, out, _ = await run_cli(capsys, "streams", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["NAME", "STATUS", "MODE"]
    assert next(row for row in rows if row.startswith(name + " ")).split()[:7] == [
        name,
        "ACTIVE",
        "PROVISIONED",
        "3",
        "24",
        "h",
        "NONE",
    ]


async def test_streams_is_one_listing_page_through_and_one_describe_per_shown_stream(kinesis, make_stream):
    """Counted on the wire (botocore's before-call event of the real client), over several pages."""
    from console.commands.streams import listed_fleet

    async def list_streams(kinesis, **options):
        return (await listed_fleet(kinesis, **options))[0]

    names = [await make_stream(shards=1, prefix="many") for _ in range(9)]
    calls: list[str] = []
    kinesis._client.meta.events.register("before-call.kinesis.*", lambda model, **_: calls.append(model.name))
    listed = await list_streams(kinesis, page_size=4)
    total = len(listed)
    assert set(names) <= {s.name for s in listed} and all(s.open_shard_count is not None for s in listed)
    pages = calls.count("ListStreams")
    assert pages == -(-total // 4) and calls.count("DescribeStreamSummary") == total
    assert calls[:pages] == ["ListStreams"] * pages  # listing first, then the describes

    calls.clear()
    first_three = await list_streams(kinesis, shown=3, page_size=100)
    assert calls == ["ListStreams"] + ["DescribeStreamSummary"] * 3
    assert [s.open_shard_count is not None for s in first_three[:4]] == [True, True, True, False]
    calls.clear()
    names_only = await list_streams(kinesis, describe=False)
    assert calls == ["ListStreams"] and {s.status for s in names_only} <= {"ACTIVE", "CREATING", "UPDATING", "DELETING"}
    assert all(s.arn.startswith("arn:aws:kinesis:") for s in names_only)


async def test_shards_after_a_split_show_the_closed_parent_and_linked_children(
    local_kinesis, kinesis, make_stream, capsys
):
    name = await make_stream(shards=2)
    await split_first_shard(kinesis, name)
    document = await json_cli(capsys, local_kinesis.endpoint_url, "shards", name)
    shards = {row["shard_id"]: row for row in document["shards"]}
    assert document["problem"] is None and document["which"] == "all"
    assert set(shards) == {f"shardId-00000000000{i}" for i in range(4)}
    parent, low, high = shards["shardId-000000000000"], shards["shardId-000000000002"], shards["shardId-000000000003"]
    assert parent["state"] == "closed" and low["state"] == high["state"] == "open"
    assert parent["children"] == [low["shard_id"], high["shard_id"]]
    assert low["parent_shard_id"] == high["parent_shard_id"] == parent["shard_id"]
    assert low["adjacent_parent_shard_id"] is None and low["children"] == []
    # decimal strings, and the children cut the parent's range exactly at the split point
    assert (low["starting_hash_key"], low["ending_hash_key"]) == (parent["starting_hash_key"], str(SPLIT_AT - 1))
    assert (high["starting_hash_key"], high["ending_hash_key"]) == (str(SPLIT_AT), parent["ending_hash_key"])
    assert shards["shardId-000000000001"]["ending_hash_key"] == str(MAX_HASH_KEY)
    assert sum(row["share"] for row in shards.values() if row["state"] == "open") == pytest.approx(1.0)

    only_open = await json_cli(capsys, local_kinesis.endpoint_url, "shards", name, "--open")
    assert sorted(row["shard_id"] for row in only_open["shards"]) == [
        "shardId-000000000001",
        "shardId-000000000002",
        "shardId-000000000003",
    ]
    assert all(row["state"] == "open" for row in only_open["shards"])


async def test_shards_tree_nests_children_under_parents_after_split_and_merge(
    local_kinesis, kinesis, make_stream, capsys
):
    name = await make_stream(shards=2)
    await split_first_shard(kinesis, name)
    await kinesis.merge_shards(name, "shardId-000000000003", "shardId-000000000001")
    await kinesis.wait_for_active(name)

    document = await json_cli(capsys, local_kinesis.endpoint_url, "shards", name, "--tree")
    roots = {root["shard_id"]: root for root in document["tree"]}
    assert set(roots) == {"shardId-000000000000", "shardId-000000000001"}
    first = roots["shardId-000000000000"]
    assert [child["shard_id"] for child in first["subtree"]] == ["shardId-000000000002", "shardId-000000000003"]
    merged = first["subtree"][1]["subtree"][0]
    assert merged["shard_id"] == "shardId-000000000004" and merged["state"] == "open"
    assert (merged["parent_shard_id"], merged["adjacent_parent_shard_id"]) == (
        "shardId-000000000003",
        "shardId-000000000001",
    )
    assert roots["shardId-000000000001"]["children"] == ["shardId-000000000004"]
    assert roots["shardId-000000000001"]["subtree"] == []  # drawn once, under its first parent

    code, out, _ = await run_cli(capsys, "shards", name, "--tree", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("5 shards (2 open)")
    assert lines[1].startswith("shardId-000000000000  closed")
    assert lines[2].startswith("├── shardId-000000000002  open")
    assert lines[4].startswith("    └── shardId-000000000004  open")
    assert lines[-1] == "└── shardId-000000000004 (merged; shown under shardId-000000000003)"


async def test_unknown_stream_is_one_line_naming_the_streams_that_exist(local_kinesis, make_stream, capsys):
    existing = await make_stream(shards=1)
    code, out, err = await run_cli(capsys, "shards", "no-such-stream", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "no-such-stream" in err and existing in err

    code, out, err = await run_cli(
        capsys, "shards", "no-such-stream", "--json", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 1 and json.loads(out)["error"]["code"] == "stream_not_found"


@pytest.mark.parametrize(
    "argv, exit_code, words",
    [
        (["shards", "bad name!"], 2, "not a valid stream name"),
        (["shards", "s", "--open", "--all"], 2, "not allowed with"),
        (["shards"], 2, "STREAM"),
        (["shards", "s", "--endpoint-url", "http://127.0.0.1:9"], 1, "127.0.0.1:9"),
        (["streams", "--endpoint-url", "http://127.0.0.1:9"], 1, "127.0.0.1:9"),
        (["streams", "--endpoint-url", "not-a-url"], 2, "--endpoint-url"),
        # checked before the embedded server starts, naming the option (not the API's "shard count")
        (["--local", "shards", "s", "--shards", "0"], 2, "--shards must be a whole number from 1 to 10,000; got '0'"),
        (["--local", "--shards", "20000", "streams"], 2, "--shards must be a whole number from 1 to 10,000"),
    ],
)
async def test_bad_input_is_one_line_and_an_exit_code(argv, exit_code, words, capsys):
    code, out, err = await run_cli(capsys, *argv)
    assert code == exit_code
    assert out == "" and err.count("\n") == 1 and words in err
    assert "Traceback" not in err


def test_a_user_sees_no_traceback_from_the_real_entry_point(local_kinesis):
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "shards", "gone", "--endpoint-url", local_kinesis.endpoint_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith("kconsole: error: stream 'gone' not found")


def test_local_creates_the_named_stream_on_the_embedded_server():
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "--local", "shards", "demo", "--shards", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [row["share"] for row in document["shards"]] == pytest.approx([1 / 3] * 3)
    assert "created stream 'demo' with 3 shards" in result.stderr
