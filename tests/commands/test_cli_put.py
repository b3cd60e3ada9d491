"""`kconsole put` as a user runs it: JSON lines from a file and from stdin through the ordered
producer, read back with --verify, against the embedded server and kinesis-mock; bad lines named by
number with nothing sent; --skip-bad, --key-field and --explicit-hash-key-field."""

from __future__ import annotations

import asyncio
import json

import pytest

from console.backend import BackendConfig, open_backend
from console.keyspace.hashkeys import HASH_SPACE
from tests.cli_zygote import stand_in_path

KEY_ORDER = ["a", "b", "a", "c", "a", "b"]


@pytest.fixture(params=["moto", "kinesis-mock"])
def endpoint(request, local_kinesis):
    if request.param == "moto":
        return local_kinesis.endpoint_url
    return request.getfixturevalue("kinesis_mock").endpoint_url


async def kconsole(*argv: str, stdin: bytes | None = None, timeout: float = 90.0) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin or b""), timeout)
    return process.returncode, out.decode(), err.decode()


async def stored_records(endpoint: str, stream: str) -> list[dict]:
    """Everything in the stream, shard by shard from TRIM_HORIZON."""
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    found = []
    async with open_backend(config) as kinesis:
        for shard in await kinesis.all_shards(stream):
            iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
            for _ in range(20):
                page = await kinesis.get_records(iterator)
                found += [dict(raw, ShardId=shard.shard_id) for raw in page["Records"]]
                iterator = page.get("NextShardIterator")
                if not page["Records"] or not iterator:
                    break
    return found


async def make(endpoint: str, stream: str, shards: int = 4) -> None:
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        await kinesis.ensure_stream(stream, shards)


def lines_of(keys: list[str]) -> bytes:
    return b"".join(
        json.dumps({"key": key, "data": {"n": n, "key": key}}).encode() + b"\n" for n, key in enumerate(keys)
    )


async def test_put_from_a_file_and_from_stdin_lands_in_order_and_verifies(endpoint, tmp_path):
    stream = f"put-{abs(hash(endpoint)) % 10**6}-{tmp_path.name[-6:]}"
    await make(endpoint, stream)
    path = tmp_path / "events.jsonl"
    path.write_bytes(lines_of(KEY_ORDER))
    code, out, err = await kconsole(
        "put", stream, "--file", str(path), "--verify", "--json", "--endpoint-url", endpoint
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["acknowledged"] == 6 and document["ok"] and document["verification"]["ok"]
    assert document["verification"]["read_back"] == 6 and document["verification"]["lost"] == 0
    assert sorted(row["line"] for row in document["landed"]) == [1, 2, 3, 4, 5, 6]
    assert sum(entry["records"] for entry in document["shards"].values()) == 6
    assert "put: 6/6 acknowledged" in err  # progress on stderr

    code, out, err = await kconsole(
        "put", stream, "-", "--verify", "--endpoint-url", endpoint, stdin=lines_of(["z", "z", "y"])
    )
    assert code == 0, err
    assert out.startswith("put 3/3 records to ") and "verification OK: read back 3" in out

    stored = await stored_records(endpoint, stream)
    assert len(stored) == 9
    # Per key, the stream holds the records in line order (one shard per key, sequence numbers ascend).
    of_a = sorted((r for r in stored if r["PartitionKey"] == "a"), key=lambda r: int(r["SequenceNumber"]))
    assert [json.loads(r["Data"])["n"] for r in of_a] == [0, 2, 4]
    landed = {row["line"]: row["shard_id"] for row in document["landed"]}
    assert {r["ShardId"] for r in of_a} == {landed[1]}


@pytest.mark.parametrize(
    "bad_line, message",
    [
        (b"{not json\n", "line 2: not JSON"),
        (b"[1, 2]\n", "line 2: expected a JSON object"),
        (json.dumps({"key": "k" * 257, "data": "x"}).encode() + b"\n", "line 2: partition key is 257 characters"),
        (json.dumps({"key": "big", "data": "x" * (1024 * 1024)}).encode() + b"\n", "line 2: record is 1,048,579 bytes"),
        (json.dumps({"data": "no key"}).encode() + b"\n", "line 2: no partition key; stream"),
        (b"\xff\xfe\n", "line 2: not UTF-8"),
    ],
    ids=["malformed", "not-an-object", "key-over-256", "record-over-1MiB", "no-key", "not-utf8"],
)
async def test_a_bad_line_is_named_and_nothing_is_sent(local_kinesis, tmp_path, bad_line, message):
    stream = f"bad-{tmp_path.name[-8:]}"
    await make(local_kinesis.endpoint_url, stream, shards=1)
    data = lines_of(["a"]) + bad_line + lines_of(["b"])
    code, out, err = await kconsole("put", stream, "--endpoint-url", local_kinesis.endpoint_url, "--json", stdin=data)
    assert code == 2
    error_lines = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(error_lines) == 1 and message in error_lines[0] and "nothing was sent" in error_lines[0]
    assert "Traceback" not in err and json.loads(out)["error"]["code"] == "bad_lines"
    assert await stored_records(local_kinesis.endpoint_url, stream) == []

    code, out, err = await kconsole(
        "put", stream, "--skip-bad", "--verify", "--json", "--endpoint-url", local_kinesis.endpoint_url, stdin=data
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["skipped_bad_lines"] == 1 and document["bad_lines"][0]["line"] == 2
    assert sorted(row["line"] for row in document["landed"]) == [1, 3]
    assert len(await stored_records(local_kinesis.endpoint_url, stream)) == 2


async def test_key_field_and_explicit_hash_key_field_place_records(local_kinesis, tmp_path):
    stream = f"ehk-{tmp_path.name[-8:]}"
    await make(local_kinesis.endpoint_url, stream, shards=4)
    top = HASH_SPACE - 1  # the last hash key: the fourth shard, whatever the key's MD5
    documents = [{"user": {"id": "u1"}, "ehk": str(top), "n": 0}, {"user": {"id": "u2"}, "ehk": "0", "n": 1}]
    data = b"".join(json.dumps(d).encode() + b"\n" for d in documents)
    code, out, err = await kconsole(
        "put",
        stream,
        "--key-field",
        "user.id",
        "--explicit-hash-key-field",
        "ehk",
        "--verify",
        "--json",
        "--endpoint-url",
        local_kinesis.endpoint_url,
        stdin=data,
    )
    assert code == 0, err
    landed = {row["line"]: row["shard_id"] for row in json.loads(out)["landed"]}
    assert landed == {1: "shardId-000000000003", 2: "shardId-000000000000"}
    stored = {r["PartitionKey"]: r["Data"] for r in await stored_records(local_kinesis.endpoint_url, stream)}
    assert json.loads(stored["u1"]) == documents[0]  # the line itself is the data

    code, _, err = await kconsole(
        "put",
        stream,
        "--explicit-hash-key-field",
        "ehk",
        "--endpoint-url",
        local_kinesis.endpoint_url,
        stdin=b'{"key": "k", "data": 1, "ehk": "1"}\n{"key": "k", "data": 2, "ehk": "2"}\n',
    )
    assert code == 2 and "line 2: key 'k' has explicit hash key 2 here but 1 on line 1" in err


async def test_put_is_refused_read_only_and_needs_input(local_kinesis):
    code, _, err = await kconsole(
        "put", "s", "--read-only", "--endpoint-url", local_kinesis.endpoint_url, stdin=lines_of(["a"])
    )
    assert code == 1 and "read-only mode" in err
    code, _, err = await kconsole("put", "s", "--file", "/no/such/file", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 2 and "cannot read /no/such/file" in err
    code, _, err = await kconsole("put", "s", "--endpoint-url", local_kinesis.endpoint_url, stdin=b"\n\n")
    assert code == 2 and "no records to put" in err


async def test_put_with_local_creates_the_stream_first():
    code, out, err = await kconsole("--local", "--shards", "2", "put", "fresh", "--verify", stdin=lines_of(KEY_ORDER))
    assert code == 0, err
    assert "created stream 'fresh' with 2 shards" in err and "verification OK: read back 6" in out


async def test_put_verify_never_reports_a_read_back_that_failed_as_passed(endpoint, tmp_path):
    """The puts go through; every GetShardIterator of the read-back is refused: the run is not ok, exit 1."""
    from urllib.parse import urlsplit

    from tests.faultproxy import FaultProxy, Faults

    stream = f"put-unverified-{tmp_path.name[-6:]}"
    await make(endpoint, stream, shards=1)
    path = tmp_path / "events.jsonl"
    path.write_bytes(lines_of(KEY_ORDER))
    refuse_reads = Faults(invalid=1.0, operations=frozenset({"GetShardIterator"}))
    async with FaultProxy(urlsplit(endpoint).port, refuse_reads) as proxy:
        code, out, err = await kconsole(
            "put", stream, "--file", str(path), "--verify", "--json", "--endpoint-url", proxy.endpoint_url
        )
        text_code, text_out, _ = await kconsole(
            "put", stream, "--file", str(path), "--verify", "--endpoint-url", proxy.endpoint_url
        )
    document = json.loads(out)
    assert document["acknowledged"] == 6, err
    assert code == 1 and document["ok"] is False, out
    assert document["verification"]["ok"] is False and "verification failed" in document["verification"]["error"]
    assert text_code == 1 and "verification failed" in text_out and "verification OK" not in text_out
