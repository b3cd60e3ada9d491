"""`kconsole heat` as a user runs it: a subprocess against the local Kinesis while a writer writes."""

from __future__ import annotations

import asyncio
import json

import pytest

from console.cli import main
from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key
from tests.cli_zygote import stand_in_path

HOT_KEY = "tenant-hot"


async def kconsole(*argv: str, timeout: float = 60) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode, stdout.decode(), stderr.decode()


async def write_steadily(kinesis, stream: str, stop: asyncio.Event, rate: int = 300) -> None:
    """`rate` records/s in 10 calls/s; 60% carry HOT_KEY."""
    tick = 0
    loop = asyncio.get_running_loop()
    began = loop.time()
    while not stop.is_set():
        keys = [HOT_KEY if i % 5 < 3 else f"cold-{tick}-{i}" for i in range(rate // 10)]
        await kinesis.put_records(stream, [{"Data": b"{}", "PartitionKey": key} for key in keys])
        tick += 1
        await asyncio.sleep(max(0.0, began + tick / 10 - loop.time()))


async def test_heat_json_names_hot_shard_key_split_and_what_if(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=4)
    shards = await kinesis.all_shards(stream)
    index = HashRangeIndex.build((s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in shards)
    hot_shard = index.predict(md5_hash_key(HOT_KEY))
    stop = asyncio.Event()
    # 1,000 records/s, 600 of them HOT_KEY's: the key alone takes over half its shard's limit
    writer = asyncio.create_task(write_steadily(kinesis, stream, stop, rate=1000))
    try:
        code, out, err = await kconsole(
            "heat",
            stream,
            "--seconds",
            "2",
            "--top",
            "2",
            "--hottest",
            "--json",
            "--endpoint-url",
            local_kinesis.endpoint_url,
        )
    finally:
        stop.set()
        await writer
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hottest_shard"] == hot_shard
    first = doc["shards"][0]  # --hottest: hottest first
    assert first["shard_id"] == hot_shard
    assert set(first) >= {"shard_id", "records_per_s", "bytes_per_s", "peak_records_per_s", "utilisation", "top_keys"}
    assert first["top_keys"][0]["key"] == HOT_KEY and len(first["top_keys"]) <= 2
    assert set(first["top_keys"][0]) >= {"key", "records", "share"}
    assert doc["records_per_s"] == pytest.approx(1000, rel=0.15)  # the subprocess starts while writing
    assert doc["split_suggestion"]["command"].startswith(f"kconsole plan split {stream} --shard {hot_shard} --at ")
    what_if = doc["hot_keys"][0]
    assert what_if["key"] == HOT_KEY and what_if["shard_id"] == hot_shard
    assert what_if["suffixes"] >= 2 and what_if["suffixes"] & (what_if["suffixes"] - 1) == 0
    for row in what_if["sharded_keys"]:
        assert row["shard_id"] == index.predict(md5_hash_key(row["partition_key"]))
    assert "sampling" in err  # the progress note goes to stderr, stdout stays one JSON document

    # The hand-off: the suggested command is one the reshard preview accepts as it stands.
    suggested = doc["split_suggestion"]["command"].split()[1:]
    code, out, err = await kconsole(*suggested, "--json", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 0, err
    assert doc["split_suggestion"]["at"] in out


async def test_a_dominant_key_of_a_quiet_shard_is_named_but_not_write_sharded(kinesis, make_stream, local_kinesis):
    """300 records/s, 60% HOT_KEY: it leads its shard's keys, yet takes a fifth of the shard's limit:
    no write-sharding is advised."""
    stream = await make_stream(shards=4)
    stop = asyncio.Event()
    writer = asyncio.create_task(write_steadily(kinesis, stream, stop, rate=300))
    try:
        code, out, err = await kconsole(
            "heat", stream, "--seconds", "1.5", "--read-only", "--endpoint-url", local_kinesis.endpoint_url
        )
    finally:
        stop.set()
        await writer
    assert code == 0, err
    assert HOT_KEY in out and "hottest:" in out
    assert "write-shard" not in out, out


async def test_heat_text_on_an_idle_stream(make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    code, out, err = await kconsole(
        "heat", stream, "--seconds", "0.5", "--read-only", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert "stream total" in out and "nothing is hot" in out
    assert "Traceback" not in err


async def test_heat_unknown_stream_is_one_line(local_kinesis):
    code, out, err = await kconsole(
        "heat", "no-such-stream", "--seconds", "1", "--json", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 1
    assert json.loads(out)["error"]["code"] == "stream_not_found"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--seconds", "0"], "--seconds must be above 0"),
        (["--seconds", "nan"], "--seconds must be above 0"),
        (["--seconds", "99999999999"], "at most 3600; got 99,999,999,999"),  # as typed, never 1e+11
        (["--top", "0"], "--top must be from 1"),
        (["--reads-per-second", "9"], "at most 5"),
        (["--seconds", "ten"], "invalid float value"),
    ],
)
def test_heat_bad_input_exits_2(argv, fragment, capsys):
    assert main(["heat", "s", *argv, "--endpoint-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_enable_enhanced_monitoring_is_refused_read_only_or_unconfirmed(capsys):
    """Both refusals happen before any call: the endpoint here does not even exist."""
    argv = ["heat", "s", "--enable-enhanced-monitoring", "--endpoint-url", "http://127.0.0.1:9"]
    assert main([*argv, "--read-only", "--yes", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "read_only"
    assert main(argv) == 1  # pytest's stdin is no TTY: nobody to confirm
    assert "without confirmation" in capsys.readouterr().err


async def test_enable_enhanced_monitoring_with_yes(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    assert (await kinesis.describe_stream_summary(stream)).enhanced_metrics == ()
    code, out, err = await kconsole(
        "heat", stream, "--enable-enhanced-monitoring", "--yes", "--json", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert set(json.loads(out)["enhanced_metrics"]) >= {"IncomingBytes", "IncomingRecords"}
    assert set((await kinesis.describe_stream_summary(stream)).enhanced_metrics) >= {"IncomingBytes", "IncomingRecords"}
    code, out, err = await kconsole(
        "heat", stream, "--disable-enhanced-monitoring", "--yes", "--json", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert json.loads(out)["enhanced_metrics"] == [], "turned off again, as it was turned on"
    assert (await kinesis.describe_stream_summary(stream)).enhanced_metrics == ()


async def test_cloudwatch_source_reports_every_shard(make_stream, local_kinesis):
    """The local server publishes no Kinesis metrics: every shard is reported, at zero, with a hint."""
    stream = await make_stream(shards=2)
    code, out, err = await kconsole(
        "heat",
        stream,
        "--source",
        "cloudwatch",
        "--seconds",
        "300",
        "--json",
        "--endpoint-url",
        local_kinesis.endpoint_url,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["source"] == "cloudwatch" and len(doc["shards"]) == 2
    assert all(shard["records_per_s"] == 0 and shard["minutes_with_data"] == 0 for shard in doc["shards"])
    assert "--enable-enhanced-monitoring" in err  # monitoring is off on this stream


async def test_cloudwatch_source_as_a_table(make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    code, out, err = await kconsole(
        "heat", stream, "--source", "cloudwatch", "--seconds", "60", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert out.startswith(f"CloudWatch heat of {stream}") and "shardId-000000000001" in out
