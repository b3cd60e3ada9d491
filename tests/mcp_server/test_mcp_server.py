"""`kconsole mcp` driven by the MCP SDK's own client over stdio, against the embedded local Kinesis:
each tool answers with the document `kconsole CMD --json` prints for the same arguments; a change is
planned, refused read-only, applied with --allow-changes and the stream's name typed back, and logged
with the client's name; bad input is one clear error and the server lives on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from console.reshard.actionlog import ActionLog
from tests.cli_zygote import stand_in_path
from tests.conftest import free_port, kconsole_child

ROOT = Path(__file__).resolve().parents[2]
CLIENT = "kconsole-tests"


@contextlib.asynccontextmanager
async def mcp_session(*argv: str):
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable, args=["-m", "console.cli", "mcp", *argv], env=environment)
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session,
        ):
            await session.initialize()
            yield session


async def cli_json(*argv: str):
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        argv[0],
        "--json",
        *argv[1:],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode in (0, 1), err.decode()
    return json.loads(out)


def unmoving(document):
    """A document with each millis_behind figure, which grows as time passes, only said to be there or not."""
    if isinstance(document, dict):
        return {
            key: (value is not None) if key == "millis_behind" else unmoving(value) for key, value in document.items()
        }
    if isinstance(document, list):
        return [unmoving(value) for value in document]
    return document


def unsalted(content) -> str:
    """A masked record's content without the masks' hashes, which each process salts anew."""
    return re.sub(r"#[0-9a-f]+>", "#>", json.dumps(content, sort_keys=True))


async def answer(session: ClientSession, tool: str, arguments: dict):
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def refusal(session: ClientSession, tool: str, arguments: dict) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_tools_answer_as_the_cli_and_a_split_is_refused_read_only(local_kinesis, make_stream, kinesis):
    stream = await make_stream(shards=2)
    records = [
        {"Data": f'{{"n": {n}, "email": "user{n}@example.com"}}'.encode(), "PartitionKey": f"k{n}"} for n in range(120)
    ]
    await kinesis.put_records(stream, records)
    endpoint = ["--endpoint-url", local_kinesis.endpoint_url]
    keys = [f"user-{n}" for n in range(1000)]
    async with mcp_session(*endpoint) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"predict", "shards", "streams", "describe", "plan_split", "apply_plan", "readers", "tail"} <= names
        assert await answer(session, "predict", {"keys": keys, "stream": stream}) == await cli_json(
            "predict", *endpoint, "--stream", stream, "--", *keys
        )
        assert await answer(session, "shards", {"stream": stream}) == await cli_json("shards", stream, *endpoint)
        assert await answer(session, "describe", {"stream": stream}) == await cli_json(
            "stream", "describe", stream, *endpoint
        )
        # Other tests' KCL lease tables on this server name the same shard ids, so they are this stream's
        # readers too; how far behind each is moves between the two reads.
        assert unmoving(await answer(session, "readers", {"stream": stream})) == unmoving(
            await cli_json("readers", stream, *endpoint)
        )
        tailed = await answer(session, "tail", {"stream": stream, "limit": 100, "mask": ["email"]})
        assert len(tailed["records"]) == 100
        assert {record["content"]["n"] for record in tailed["records"]} <= set(range(120))
        assert not any("@example.com" in json.dumps(record) for record in tailed["records"])
        async with kconsole_child("tail", stream, *endpoint, "--json", "--limit", "1000", "--mask", "email") as process:
            out, _ = await process.communicate()
        masked_by_cli = {unsalted(json.loads(line)["content"]) for line in out.decode().splitlines()}
        assert {unsalted(record["content"]) for record in tailed["records"]} <= masked_by_cli
        everything = await answer(session, "tail", {"stream": stream, "limit": 1000})
        async with kconsole_child("tail", stream, *endpoint, "--json", "--limit", "1000") as process:
            out, _ = await process.communicate()
        by_cli = [json.loads(line) for line in out.decode().splitlines()]
        key = lambda record: (record["shard_id"], record["sequence_number"])  # shards interleave
        assert sorted(everything["records"], key=key) == sorted(by_cli, key=key) and len(by_cli) == 120

        shard = (await kinesis.all_shards(stream))[0].shard_id
        planned = await answer(session, "plan_split", {"stream": stream, "shard": shard})
        assert planned["plan"] == await cli_json(
            "plan", "split", stream, *endpoint, "--shard", shard, "--at", "midpoint"
        )
        refused = await refusal(session, "apply_plan", {"plan_id": planned["plan_id"], "stream": stream})
        assert "read-only" in refused
    assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 2  # nothing applied


async def test_a_plan_applies_with_the_stream_name_typed_back_and_is_logged_with_the_client(
    local_kinesis, make_stream, kinesis
):
    stream = await make_stream(shards=2)
    shard = (await kinesis.all_shards(stream))[0].shard_id
    async with mcp_session("--endpoint-url", local_kinesis.endpoint_url, "--allow-changes") as session:
        planned = await answer(session, "plan_split", {"stream": stream, "shard": shard})
        wrong = await refusal(session, "apply_plan", {"plan_id": planned["plan_id"], "stream": stream + "x"})
        assert "wrong_stream" in wrong
        assert "unknown_plan" in await refusal(session, "apply_plan", {"plan_id": "feedface", "stream": stream})
        assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 2
        applied = await answer(session, "apply_plan", {"plan_id": planned["plan_id"], "stream": stream})
        assert applied["executed"] is True
        again = await refusal(session, "apply_plan", {"plan_id": planned["plan_id"], "stream": stream})
        assert "unknown_plan" in again  # a plan applies once
    assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 3
    logged = [entry for entry in ActionLog.default().entries() if entry.get("stream") == stream]
    assert logged and all(entry.get("who") == f"mcp:{CLIENT}" for entry in logged if "who" in entry)
    assert any(entry.get("who") == f"mcp:{CLIENT}" for entry in logged)


async def test_a_plan_made_stale_by_a_change_of_the_stream_is_refused(local_kinesis, make_stream, kinesis):
    stream = await make_stream(shards=2)
    first, second = [shard.shard_id for shard in await kinesis.all_shards(stream)]
    async with mcp_session("--endpoint-url", local_kinesis.endpoint_url, "--allow-changes") as session:
        planned = await answer(session, "plan_split", {"stream": stream, "shard": first})
        await answer(
            session,
            "apply_plan",
            {
                "plan_id": (await answer(session, "plan_split", {"stream": stream, "shard": second}))["plan_id"],
                "stream": stream,
            },
        )
        stale = await refusal(session, "apply_plan", {"plan_id": planned["plan_id"], "stream": stream})
        assert "stale_plan" in stale
    assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 3  # the stale plan was not applied


async def test_bad_input_is_one_error_and_the_server_lives_on(local_kinesis):
    async with mcp_session("--endpoint-url", local_kinesis.endpoint_url) as session:
        assert "Unknown tool" in await refusal(session, "no_such_tool", {})
        wrong_type = await refusal(session, "predict", {"keys": "not-a-list", "shard_count": 4})
        assert wrong_type == "bad_arguments: predict: keys: Input should be a valid list"
        oversized = await refusal(session, "predict", {"keys": ["a"], "shard_count": 10**30})
        assert oversized.startswith("bad_arguments: predict: shard_count: ") and "\n" not in oversized
        assert await refusal(session, "tail", {"stream": "s", "limit": 10**9}) == (
            "bad_arguments: tail: limit: Input should be less than or equal to 10000"
        )
        assert "no-such-stream" in await refusal(session, "shards", {"stream": "no-such-stream"})
        assert await answer(session, "predict", {"keys": ["a"], "shard_count": 4}) == await cli_json(
            "predict", "--shards", "4", "a"
        )


async def test_the_other_tools_answer_as_the_cli(local_kinesis, make_stream):
    stream = await make_stream(shards=2)
    endpoint = ["--endpoint-url", local_kinesis.endpoint_url]
    async with mcp_session(*endpoint) as session:
        for tool, arguments, argv in (
            ("streams", {}, ["streams"]),
            ("account", {}, ["account"]),
            ("channels", {}, ["channels", "list"]),
            ("consumers_lag", {"stream": stream}, ["consumers", "lag", stream]),
        ):
            result = await session.call_tool(tool, arguments)
            async with kconsole_child(argv[0], "--json", *argv[1:], *endpoint) as process:
                out, err = await process.communicate()
            if result.is_error:  # a server lacking the operation: the same one line as the CLI's
                assert (
                    process.returncode != 0 and err.decode().split("error: ", 1)[-1].strip() in result.content[0].text
                )
            else:
                mine, theirs = steady(json.loads(result.content[0].text), stream), steady(json.loads(out), stream)
                assert mine == theirs, (tool, mine, theirs)


async def test_streamable_http_on_localhost_answers_as_stdio_does(local_kinesis, make_stream):
    from mcp.client.streamable_http import streamable_http_client

    stream = await make_stream(shards=2)
    endpoint = ["--endpoint-url", local_kinesis.endpoint_url]
    port = free_port()
    async with kconsole_child("mcp", "--http", str(port), *endpoint) as server:
        for _ in range(100):  # the server listens once uvicorn is up
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            await asyncio.sleep(0.2)
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            found = await answer(session, "predict", {"keys": ["a", "b"], "stream": stream})
        server.terminate()
        await server.wait()
    assert found == await cli_json("predict", *endpoint, "--stream", stream, "a", "b")


LIVE_METRICS = ("incoming_records_per_s", "incoming_bytes_per_s", "utilisation", "max_iterator_age_ms")


def steady(document, stream: str):
    """`streams`: this test's stream without its live metrics (other tests' streams come and go, and
    the rates move between two reads); any other document as it is."""
    if isinstance(document, list) and all(isinstance(row, dict) and "name" in row for row in document):
        return [{k: v for k, v in row.items() if k not in LIVE_METRICS} for row in document if row["name"] == stream]
    return document


async def test_concurrent_calls_each_get_their_own_document_and_the_resources_answer(local_kinesis, make_stream):
    stream = await make_stream(shards=3)
    async with mcp_session("--endpoint-url", local_kinesis.endpoint_url) as session:
        keys = [[f"key-{n}-{m}" for m in range(50)] for n in range(6)]
        answers = await asyncio.gather(
            *(answer(session, "predict", {"keys": batch, "stream": stream}) for batch in keys),
            answer(session, "shards", {"stream": stream}),
        )
        assert [[row["key"] for row in found["keys"]] for found in answers[:-1]] == keys
        summary = await session.read_resource(f"kconsole://stream/{stream}/summary")
        assert json.loads(summary.contents[0].text) == await answer(session, "describe", {"stream": stream})
        log = await session.read_resource("kconsole://action-log")
        assert isinstance(json.loads(log.contents[0].text), list)


def test_without_the_sdk_one_line_says_how_to_install():
    script = "import sys; sys.modules['mcp'] = None; from console.cli import main; sys.exit(main(['mcp']))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "kconsole: error: kconsole mcp needs the MCP SDK: pip install 'kconsole[mcp]' (or pip install mcp)"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--http", "70000"], "--http must be a port from 1 to 65535"),
        (["--stream", "orders"], "--stream creates streams on the embedded server"),
        (["--allow-changes", "--read-only"], "--allow-changes and --read-only disagree"),
        (["--json"], "speaks the MCP protocol"),
    ],
)
def test_bad_options_are_one_line(argv, message):
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "mcp", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
