"""--read-share: kconsole's own GetRecords rate per shard, bounded and said; when its calls are throttled it
backs off and says so, offering EFO. Throttles are made at the transport (tests/faultproxy.py) in front of
the real embedded server."""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlsplit

from tests.commands.test_cli_tail import kconsole
from tests.faultproxy import FaultProxy, Faults

BACKING_OFF = "throttled: kconsole reads less; --efo reads without sharing"


async def test_tail_backs_off_when_its_reads_are_throttled_and_says_so(
    kinesis, make_stream, local_kinesis, monkeypatch
):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # the throttle reaches kconsole, not only botocore's retries
    stream = await make_stream(shards=1)
    for number in range(3):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), "k")
    faults = Faults(throttle=1.0, operations=frozenset({"GetRecords"}), limit=1)
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults) as proxy:
        began = time.monotonic()
        code, out, err = await kconsole(
            "tail", stream, "--from", "trim-horizon", "--json", "--read-share", "0.2", endpoint=proxy.endpoint_url
        )
        took = time.monotonic() - began
    assert code == 0, err
    assert [json.loads(line)["content"]["n"] for line in out.splitlines()] == [0, 1, 2]
    assert proxy.stats["throttle:GetRecords"] == 1
    assert BACKING_OFF in err
    assert "(read share 0.2)" in err and "of the shared budget" in err
    assert took >= 2.0, "after the throttle the share's one call a second halves: the next call waits 2 s"


async def test_tail_unthrottled_says_its_share_without_backing_off(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    await kinesis.put_record(stream, b'{"n": 0}', "k")
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port) as proxy:
        code, _, err = await kconsole(
            "tail", stream, "--from", "trim-horizon", "--read-share", "0.5", endpoint=proxy.endpoint_url
        )
    assert code == 0, err
    line = next(line for line in err.splitlines() if "kconsole reads" in line)
    assert "calls/s" in line and "MiB/s a shard" in line and "(read share 0.5)" in line
    assert BACKING_OFF not in err


async def test_a_loopback_endpoint_is_unbounded_by_default(make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    code, _, err = await kconsole("tail", stream, endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert "(read share unbounded)" in err


async def test_heat_json_carries_kconsoles_own_reads(make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    code, out, err = await kconsole(
        "heat", stream, "--seconds", "1", "--read-share", "0.4", "--json", endpoint=local_kinesis.endpoint_url
    )
    assert code == 0, err
    reads = json.loads(out)["kconsole_reads"]
    assert reads["read_share"] == 0.4
    assert reads["calls_per_second"] > 0 and reads["fraction_of_budget"] <= 0.4 + 1e-9
    assert reads["backing_off"] is False


async def test_bad_read_share_is_one_line(local_kinesis):
    code, _, err = await kconsole("tail", "any", "--read-share", "2", endpoint=local_kinesis.endpoint_url)
    assert code == 2
    assert "--read-share must be above 0 and at most 1" in err and "Traceback" not in err


async def put_read_throttles(endpoint_url: str, stream: str, count: float) -> None:
    """ReadProvisionedThroughputExceeded as Kinesis publishes it, in each of the last three minutes: the
    newest whole minute a reading takes has it, whenever the minute turns."""
    from datetime import UTC, datetime, timedelta

    from tests.heat.test_capacity import put_metric

    now = datetime.now(UTC)
    for minutes_ago in range(3):
        moment = now - timedelta(minutes=minutes_ago, seconds=1)
        await put_metric(endpoint_url, stream, "ReadProvisionedThroughputExceeded", count, moment)


async def test_tail_follow_backs_off_when_the_streams_readers_are_throttled(make_stream, local_kinesis):
    from tests.conftest import interrupt, kconsole_child

    stream = await make_stream(shards=1)
    await put_read_throttles(local_kinesis.endpoint_url, stream, 12)
    argv = ("tail", stream, "--follow", "--read-share", "0.2", "--endpoint-url", local_kinesis.endpoint_url)
    async with kconsole_child(*argv) as process:
        said = []
        while not said or BACKING_OFF not in said[-1]:
            said.append((await asyncio.wait_for(process.stderr.readline(), 30)).decode())
            assert said[-1], "".join(said)
        _, err = await interrupt(process)
    assert "(read share 0.2)" in said[-1], said[-1]
    assert process.returncode == 130, err.decode()


async def test_tail_follow_on_quiet_readers_does_not_back_off(kinesis, make_stream, local_kinesis):
    from tests.conftest import interrupt, kconsole_child

    stream = await make_stream(shards=1)
    await put_read_throttles(local_kinesis.endpoint_url, stream, 0)
    argv = ("tail", stream, "--follow", "--read-share", "0.2", "--endpoint-url", local_kinesis.endpoint_url)
    async with kconsole_child(*argv) as process:
        while b"following; Ctrl-C stops" not in await asyncio.wait_for(process.stderr.readline(), 30):
            pass
        await asyncio.sleep(2.0)  # the stream's throttles read meanwhile: none
        await kinesis.put_record(stream, b'{"n": 1}', "k")
        out = await asyncio.wait_for(process.stdout.readline(), 30)
        _, err = await interrupt(process)
    assert out, "the record written after the stream's throttles were read"
    assert BACKING_OFF not in err.decode()


async def test_the_fleet_says_it_reads_no_records_and_reads_none(kinesis, make_stream, local_kinesis):
    from console.heat.fleet import FLEET_READ_COST

    stream = await make_stream(shards=2)
    await kinesis.put_record(stream, b'{"n": 0}', "k")
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port) as proxy:
        code, out, err = await kconsole("streams", endpoint=proxy.endpoint_url)
    assert code == 0, err
    assert stream in out and FLEET_READ_COST in out.splitlines()
    assert proxy.stats["pass:DescribeStreamSummary"] >= 1, "the proxy saw the fleet's calls"
    assert not [operation for operation in proxy.stats if "GetRecords" in operation or "GetShardIterator" in operation]
