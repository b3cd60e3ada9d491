"""The verifier reads a closed shard to its end however the end is spread over pages (tests/split_pages.py):
empty pages with nothing behind on a closed shard are not its end."""

from __future__ import annotations

from console.produce.verify import Verifier
from tests.produce.test_verify import produce
from tests.split_pages import SplitPages

PARENT = "shardId-000000000000"


async def test_records_in_a_closed_parent_behind_empty_pages_are_read_back(kinesis, make_stream):
    stream = await make_stream(shards=1)
    result, report, _ = await produce(kinesis, stream, kinesis.put_records)
    assert report.ok and report.read_back == 100
    await kinesis.split_shard(stream, PARENT, 2**127)  # the run's records now sit in a closed shard
    await kinesis.wait_for_active(stream)
    pages = SplitPages({PARENT}, empty_pages=3).install(kinesis)

    report = await Verifier.for_backend(kinesis).verify(result)

    assert pages.empty_pages_given >= 3 and pages.ends_delayed >= 1
    assert report.read_back == 100 and report.lost == 0 and report.ok
