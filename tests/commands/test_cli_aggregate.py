"""`produce --aggregate` and `put --aggregate` as a user runs them, on both servers: order held per key,
read back through the verifier and through aws-kinesis-agg's deaggregator; the size bounded at once."""

from __future__ import annotations

import base64
import json
import time

from aws_kinesis_agg import deaggregator

from console.read.decoding import MAGIC
from tests.commands.test_cli_put import kconsole
from tests.kpl import server  # noqa: F401 - a fixture


async def everything(kinesis, stream: str) -> list[dict]:
    found = []
    for shard in await kinesis.all_shards(stream):
        iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
        page = await kinesis.get_records(iterator)
        found.extend(page["Records"])
    return found


async def test_produce_aggregate_verify_on_both_servers(server):
    kinesis, make_stream, url = server
    stream = await make_stream(shards=4)
    code, out, err = await kconsole(
        "produce",
        stream,
        "--keys",
        "24",
        "--records-per-key",
        "50",
        "--payload-bytes",
        "100",
        "--aggregate",
        "--max-aggregate-bytes",
        "16384",
        "--verify",
        "--yes",
        "--json",
        "--endpoint-url",
        url,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["verified"] and doc["acknowledged"] == 1200
    assert doc["out_of_order"] == 0 and doc["lost"] == 0 and doc["misplaced"] == 0
    aggregation = doc["aggregation"]
    assert 0 < aggregation["kinesis_records"] <= 1200 // 10
    stored = await everything(kinesis, stream)
    assert len(stored) == aggregation["kinesis_records"] and all(r["Data"][:4] == MAGIC for r in stored)
    assert all(len(r["Data"]) + len(r["PartitionKey"]) <= 16384 for r in stored)
    inner = list(deaggregator.iter_deaggregate_records(stored, data_format="Boto3"))
    assert len(inner) == 1200
    # AWS's own de-aggregator, reading each shard in sequence order, agrees that every key's order held.
    sequences: dict[str, list[int]] = {}
    for record in inner:
        value = json.loads(base64.b64decode(record["kinesis"]["data"]))
        assert value["key"] == record["kinesis"]["partitionKey"]
        sequences.setdefault(value["key"], []).append(value["seq"])
    assert len(sequences) == 24 and all(seqs == list(range(50)) for seqs in sequences.values())


async def test_put_aggregate_keeps_line_order_per_key(server):
    kinesis, make_stream, url = server
    stream = await make_stream(shards=2)
    lines = [json.dumps({"key": f"k{i % 5}", "data": {"line": i}}) for i in range(200)]
    code, out, err = await kconsole(
        "put",
        stream,
        "--aggregate",
        "--verify",
        "--json",
        "--endpoint-url",
        url,
        stdin=("\n".join(lines) + "\n").encode(),
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["verification"]["ok"] and doc["acknowledged"] == 200
    assert doc["aggregation"]["kinesis_records"] < 200
    stored = await everything(kinesis, stream)
    by_key: dict[str, list[int]] = {}
    for record in deaggregator.iter_deaggregate_records(stored, data_format="Boto3"):
        value = json.loads(base64.b64decode(record["kinesis"]["data"]))
        by_key.setdefault(record["kinesis"]["partitionKey"], []).append(value["line"])
    assert by_key == {f"k{k}": list(range(k, 200, 5)) for k in range(5)}


async def test_max_aggregate_bytes_above_the_stream_limit_is_one_line_exit_2(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    code, out, err = await kconsole(
        "produce",
        stream,
        "--keys",
        "2",
        "--records-per-key",
        "2",
        "--aggregate",
        "--max-aggregate-bytes",
        "2000000",
        "--yes",
        "--endpoint-url",
        local_kinesis.endpoint_url,
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "from 1,024 to 1,048,576 (the stream's record size limit); got 2000000" in err
    assert await everything(kinesis, stream) == []


async def test_sizes_no_stream_allows_fail_before_any_connection():
    for argv in (
        ("produce", "s", "--keys", "1", "--records-per-key", "1", "--aggregate", "--max-aggregate-bytes", "20000000"),
        ("put", "s", "--aggregate", "--max-aggregate-bytes", "100"),
        ("produce", "s", "--keys", "1", "--records-per-key", "1", "--max-aggregate-bytes", "4096"),
        ("produce", "s", "--keys", "1", "--records-per-key", "1", "--aggregate", "--mode", "sequential"),
    ):
        began = time.monotonic()
        code, _out, err = await kconsole(*argv, "--endpoint-url", "http://127.0.0.1:9", stdin=b"")
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
        assert time.monotonic() - began < 10


async def test_a_stream_with_a_raised_record_limit_takes_larger_aggregates(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    await kinesis.update_max_record_size(arn, 2048)
    code, out, err = await kconsole(
        "produce",
        stream,
        "--keys",
        "2",
        "--records-per-key",
        "300",
        "--payload-bytes",
        "4000",
        "--no-pace",
        "--aggregate",
        "--max-aggregate-bytes",
        "2000000",
        "--verify",
        "--yes",
        "--json",
        "--endpoint-url",
        local_kinesis.endpoint_url,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["aggregation"]["kinesis_records"] == 2  # one key's 1.2 MB in one aggregate each
    stored = await everything(kinesis, stream)
    assert max(len(r["Data"]) for r in stored) > 1024 * 1024
