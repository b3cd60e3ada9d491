"""--read-share: kconsole's own GetRecords rate per shard, bounded and said; when its calls are throttled it
backs off and says so, offering EFO. Throttles are made at the transport (tests/faultproxy.py) in front of
the real embedded server."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from tests.commands.test_cli_tail import kconsole
from tests.faultproxy import FaultProxy, Faults

BACKING_OFF = "backing off: readers are throttled (try --efo)"


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
