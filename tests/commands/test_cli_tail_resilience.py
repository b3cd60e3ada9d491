"""`kconsole tail --follow` never gives up: through an outage and a lossy network it backs off, says so in one
line, and goes on from its last record per shard — no record skipped, none repeated. Faults are made at the
transport (tests/faultproxy.py) in front of the real embedded server."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

from tests.conftest import interrupt, kconsole_child
from tests.faultproxy import FaultProxy, Faults


async def read_numbers(process, wanted: set[int], seen: list[int], timeout: float) -> None:
    async def collect() -> None:
        while not wanted <= set(seen):
            line = await process.stdout.readline()
            if not line:
                return
            seen.append(json.loads(line)["content"]["n"])

    await asyncio.wait_for(collect(), timeout)


async def put(kinesis, stream: str, numbers: range) -> None:
    for number in numbers:
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number % 4}")


async def test_follow_goes_on_after_an_outage_without_gaps_or_repeats(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    shards = [shard.shard_id for shard in await kinesis.all_shards(stream)]
    await put(kinesis, stream, range(0, 4))
    async with (
        FaultProxy(urlsplit(local_kinesis.endpoint_url).port) as proxy,
        kconsole_child(
            "tail", stream, "--follow", "--from", "trim-horizon", "--json", "--endpoint-url", proxy.endpoint_url
        ) as process,
    ):
        seen: list[int] = []
        await read_numbers(process, set(range(4)), seen, 30)
        proxy.down()
        await put(kinesis, stream, range(4, 8))  # written while the reader cannot reach the server
        await asyncio.sleep(18)  # long past the backend's own retries of one call, for every shard
        assert process.returncode is None, "tail --follow gave up"
        await proxy.up()
        await read_numbers(process, set(range(8)), seen, 60)
        await put(kinesis, stream, range(8, 10))
        await read_numbers(process, set(range(10)), seen, 30)
        _, err = await interrupt(process)
    assert sorted(seen) == list(range(10)), "every record once, none repeated"
    said = err.decode()
    assert "cannot be read" in said and "retrying" in said
    every = [line for line in said.splitlines() if "2 shards cannot be read" in line]
    assert every and all(shard in every[0] for shard in shards), "the report names every shard that cannot be read"
    assert "lag unknown" in every[0]
    assert "backing off to 30 s" in said, "the pause grows to its cap: the line says the cap, not the first pause"
    assert said.count("cannot be read") <= 2, "one line a minute, not one a retry"
    assert "reading again" in said
    lines = said.splitlines()
    first_said = next(i for i, line in enumerate(lines) if "cannot be read" in line)
    healed = next(i for i, line in enumerate(lines) if "reading again" in line)
    retry_lines = [line for line in lines[first_said:healed] if line.startswith("kconsole:")]
    assert not retry_lines, f"once the reader has said it, the call path's retry lines are held back: {retry_lines}"


async def test_follow_keeps_reading_through_half_the_replies_lost(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    faults = Faults(reset_after=0.8, operations=frozenset({"GetRecords"}))
    async with (
        FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults, seed=3) as proxy,
        kconsole_child(
            "tail", stream, "--follow", "--from", "trim-horizon", "--json", "--endpoint-url", proxy.endpoint_url
        ) as process,
    ):
        seen: list[int] = []
        for first in range(0, 30, 10):
            await put(kinesis, stream, range(first, first + 10))
            await read_numbers(process, set(range(first + 10)), seen, 90)
        assert process.returncode is None
        await interrupt(process)
    assert seen == list(range(30)), "in order, every record once"
    assert proxy.stats, "the proxy did lose replies"
