"""Readers follow a closed shard's children however its end is spread over pages (tests/split_pages.py):
its last records with a next iterator and the end on the following call, and empty pages with more to
come. Every record before and after a split is read, parents first, with or without follow."""

from __future__ import annotations

import json

import pytest

from console.read.tail import TailOptions, TailReader, parse_start
from tests.read.test_tail import read_all
from tests.split_pages import SplitPages

PARENT = "shardId-000000000000"
CHILDREN = {"shardId-000000000001", "shardId-000000000002"}


async def split_with_records(kinesis, make_stream) -> str:
    stream = await make_stream(shards=1)
    for index in range(5):
        await kinesis.put_record(stream, json.dumps({"before": index}).encode(), f"k{index}")
    await kinesis.split_shard(stream, PARENT, 2**127)
    await kinesis.wait_for_active(stream)
    for index in range(5):
        await kinesis.put_record(stream, json.dumps({"after": index}).encode(), f"k{index}")
    return stream


@pytest.mark.parametrize("empty_pages", [0, 3])
async def test_tail_reads_the_children_when_the_end_comes_a_page_after_the_last_records(
    kinesis, make_stream, empty_pages
):
    stream = await split_with_records(kinesis, make_stream)
    pages = SplitPages({PARENT}, empty_pages=empty_pages).install(kinesis)

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    assert pages.ends_delayed >= 1 and pages.empty_pages_given >= empty_pages
    assert [r.shard_id for r in records[:5]] == [PARENT] * 5
    assert [r.value for r in records[:5]] == [{"before": index} for index in range(5)]
    assert {r.shard_id for r in records[5:]} <= CHILDREN
    assert sorted(r.value["after"] for r in records[5:]) == list(range(5))


async def test_follow_reads_the_children_when_the_end_comes_a_page_after_the_last_records(kinesis, make_stream):
    stream = await split_with_records(kinesis, make_stream)
    SplitPages({PARENT}, empty_pages=2).install(kinesis)
    options = TailOptions(start=parse_start("trim-horizon"), follow=True, limit=10)

    records = await read_all(TailReader(kinesis, stream, options, refresh_interval=0.2))

    assert [r.shard_id for r in records[:5]] == [PARENT] * 5
    assert sorted(r.value["after"] for r in records[5:]) == list(range(5))


async def test_a_closed_shard_that_never_ends_is_taken_as_ended_after_empty_pages_at_its_tip(kinesis, make_stream):
    """Some emulators hand out iterators for a closed shard forever: after CLOSED_SHARD_PATIENCE empty pages
    with nothing behind, the shard counts as ended and its children (found by ListShards) are read."""
    stream = await split_with_records(kinesis, make_stream)
    SplitPages({PARENT}, empty_pages=0, never_end=True).install(kinesis)

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    assert [r.shard_id for r in records[:5]] == [PARENT] * 5
    assert sorted(r.value["after"] for r in records[5:]) == list(range(5))
