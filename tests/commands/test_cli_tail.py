"""`kconsole tail` as a user runs it: a real process against the embedded local Kinesis over HTTP."""

from __future__ import annotations

import asyncio
import gzip
import json
import signal
import sys

from aws_kinesis_agg.aggregator import AggRecord

from tests.cli_zygote import stand_in_path


async def kconsole(*argv: str, endpoint: str | None = None, timeout: float = 30.0) -> tuple[int, str, str]:
    args = [*argv, "--endpoint-url", endpoint] if endpoint else list(argv)
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode, out.decode(), err.decode()


async def seed(kinesis, stream: str) -> None:
    packer = AggRecord()
    packer.add_user_record("inner-a", b'{"inner": "a"}')
    packer.add_user_record("inner-b", b"inner text", "42")
    key, _, blob = packer.get_contents()
    for partition_key, data in [
        ("doc", b'{"id": 1, "note": "multi\\nline"}'),
        ("zipped", gzip.compress(b'{"id": 2}', mtime=0)),
        ("words", b"first line\nsecond line"),
        ("bytes", b"\x00\x01\x02\xff"),
        (key, blob),
        ("bad-gz", b"\x1f\x8b\x08\x00garbage"),
    ]:
        await kinesis.put_record(stream, data, partition_key)


async def test_text_output_is_one_line_per_record(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    await seed(kinesis, stream)

    code, out, err = await kconsole("tail", stream, endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 7
    by_key = {line.split()[3]: line for line in lines}
    assert by_key["doc"].endswith('json 32B {"id":1,"note":"multi\\nline"}')
    assert by_key["zipped"].split()[4] == "gzip+json" and by_key["zipped"].endswith('{"id":2}')
    assert by_key["words"].endswith("text 22B first line\\nsecond line")
    assert by_key["bytes"].endswith("hex 4B 000102ff")
    assert " inner-b ehk=42 kpl+text " in by_key["inner-b"] and by_key["inner-b"].split()[2].endswith("/1")
    assert "decode-error" in by_key["bad-gz"] and "corrupt gzip" in by_key["bad-gz"]
    assert "7 records" in err


async def test_json_lines_carry_the_decoded_content(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    await seed(kinesis, stream)

    code, out, err = await kconsole(
        "tail", stream, "--from", "trim-horizon", "--json", endpoint=local_kinesis.endpoint_url
    )

    assert code == 0, err
    docs = [json.loads(line) for line in out.splitlines()]
    by_key = {doc["partition_key"]: doc for doc in docs}
    assert len(docs) == 7
    assert by_key["doc"]["content"] == {"id": 1, "note": "multi\nline"}
    assert by_key["zipped"]["encoding"] == ["gzip"] and by_key["zipped"]["content"] == {"id": 2}
    assert by_key["bytes"] == {**by_key["bytes"], "kind": "hex", "content": "000102ff", "size": 4}
    assert by_key["inner-b"]["explicit_hash_key"] == "42" and by_key["inner-b"]["sub_sequence_number"] == 1
    assert by_key["inner-a"]["sequence_number"] == by_key["inner-b"]["sequence_number"]
    assert by_key["bad-gz"]["kind"] == "decode-error" and by_key["bad-gz"]["error"].startswith("corrupt gzip")
    assert all(doc["arrival"].endswith("Z") for doc in docs)


async def test_bad_input_is_one_line_and_exit_2(make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    url = local_kinesis.endpoint_url
    for argv in (["--from", "last tuesday"], ["--shard", "shardId-000000000007"], ["--limit", "-3"]):
        code, out, err = await kconsole("tail", stream, *argv, endpoint=url)
        assert code == 2, (argv, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith("kconsole: error: "), err
        assert out == ""
    code, out, _ = await kconsole("tail", stream, "--shard", "shardId-000000000007", "--json", endpoint=url)
    assert code == 2 and json.loads(out)["error"]["code"] == "bad_input"
    code, _, err = await kconsole("tail", "no-such-stream", endpoint=url)
    assert code == 1 and "not found" in err and len(err.strip().splitlines()) == 1


async def test_follow_prints_new_records_and_stops_cleanly_on_ctrl_c(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    await kinesis.put_record(stream, b"old, not shown", "old")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "tail",
        stream,
        "--follow",
        "--json",
        "--endpoint-url",
        local_kinesis.endpoint_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        first = asyncio.ensure_future(process.stdout.readline())
        # Until the reader has its LATEST iterators nothing put counts; keep putting until one shows up.
        for attempt in range(60):
            await kinesis.put_record(stream, json.dumps({"live": attempt}).encode(), f"k{attempt}")
            done, _ = await asyncio.wait({first}, timeout=0.5)
            if done:
                break
        if not first.result():
            _, err = await asyncio.wait_for(process.communicate(), 15)
            raise AssertionError(f"tail exited early ({process.returncode}): {err.decode()}")
        line = json.loads(first.result())
        assert "live" in line["content"]
        process.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(process.communicate(), 15)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130, err  # Ctrl-C ends a --follow as it ends every command
    assert "Traceback" not in err.decode() and "stopped after" in err.decode()
    assert all("live" in json.loads(row)["content"] for row in rest.decode().splitlines())


async def test_a_malformed_stream_name_is_bad_input_before_any_call():
    code, out, err = await kconsole("tail", "bad name!", endpoint="http://127.0.0.1:9")  # nothing listens there
    assert code == 2 and out == ""
    assert err == "kconsole: error: not a valid stream name: 'bad name!' (1 to 128 of a-z A-Z 0-9 _ . -)\n"


async def test_local_creates_the_stream_with_the_top_level_shard_count():
    """--local starts an empty server: tail creates the stream (as shards does) with `kconsole --shards N`,
    which tail's own --shard list must not clobber."""
    code, _, err = await kconsole("--local", "--shards", "2", "tail", "fresh", timeout=90)
    assert code == 0, err
    assert "created stream 'fresh' with 2 shards" in err
    assert "tail fresh from trim-horizon: shards shardId-000000000000, shardId-000000000001\n" in err
    code, _out, err = await kconsole("--local", "--shards", "0", "tail", "fresh")
    assert code == 2 and err == "kconsole: error: --shards must be a whole number from 1 to 10,000; got '0'\n"


async def test_key_that_finds_nothing_says_where_it_looked(make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    code, out, err = await kconsole(
        "tail", stream, "--key", "nobody", "--placement-only", endpoint=local_kinesis.endpoint_url
    )
    assert code == 0 and out == ""
    assert "--placement-only read only the shard 'nobody' hashes to" in err


async def test_text_lines_never_pass_control_characters_to_the_terminal(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    await kinesis.put_record(stream, "tab\there\u2028next".encode(), "key\x1b[2J")

    code, out, err = await kconsole("tail", stream, endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    assert out.count("\n") == 1 and "\x1b" not in out and "\u2028" not in out
    assert " key\\x1b[2J text " in out and out.endswith("tab\\there\\u2028next\n")
    assert "1 record (shardId-000000000000 1 rec 0 ms behind)" in err


async def test_shard_option_before_the_stream_name_and_comma_separated(make_stream, local_kinesis):
    """`--shard ID STREAM` must not swallow STREAM as a second shard ID."""
    stream = await make_stream(shards=3)
    code, _, err = await kconsole(
        "tail", "--shard", "shardId-000000000000,shardId-000000000002", stream, endpoint=local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert f"tail {stream} from trim-horizon: shards shardId-000000000000, shardId-000000000002\n" in err
    code, _out, err = await kconsole("tail", stream, "--shard", ",", endpoint=local_kinesis.endpoint_url)
    assert code == 2 and err == "kconsole: error: --shard needs a shard ID, e.g. --shard shardId-000000000000\n"
