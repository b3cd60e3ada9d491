"""kconsole's own share of a shard's read budget: counting, pacing, backing off and recovering."""

import asyncio
import contextlib
import itertools

import pytest

from console.errors import BadInput, Throttled
from console.read.cursor import ShardCursor
from console.read.share import MIB, ReadShare, parse_read_share, share_for_endpoint


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_default_share_paces_one_call_a_second_per_shard():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)
    assert share.wait("s-0") == 0.0
    share.record("s-0", 1000)
    assert share.wait("s-0") == pytest.approx(1.0)
    assert share.wait("s-1") == 0.0  # another shard has its own budget
    clock.now += 0.4
    assert share.wait("s-0") == pytest.approx(0.6)


def test_a_large_page_waits_for_its_bytes():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)  # 0.4 MiB a second per shard
    share.record("s-0", 2 * MIB)
    assert share.wait("s-0") == pytest.approx(5.0)


def test_rates_over_the_window_against_the_shared_budget():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)
    for _ in range(10):
        clock.now += 1.0
        share.record("s-0", MIB // 10)
    rates = share.rates("s-0")
    assert rates.calls_per_second == pytest.approx(1.0)
    assert rates.mib_per_second == pytest.approx(0.1, rel=1e-3)
    assert rates.fraction == pytest.approx(0.2)  # 1 of the shard's 5 calls a second
    assert "1.0 calls/s, 0.1 MiB/s a shard: 20% of the shared budget" in share.summary()
    clock.now += 20.0
    assert share.rates("s-0").calls_per_second == 0.0  # out of the window


def test_a_throttle_halves_the_pace_and_it_recovers_slowly():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)
    share.throttled("s-0")
    assert share.backing_off
    assert share.calls_per_second == pytest.approx(0.5)
    assert share.wait("s-0") == pytest.approx(2.0)
    share.throttled("s-0")
    assert share.calls_per_second == pytest.approx(0.25)
    assert "throttled: kconsole reads less; --efo reads without sharing" in share.summary()
    clock.now += 9.0
    assert share.calls_per_second == pytest.approx(0.25)  # not yet
    clock.now += 1.0
    assert share.calls_per_second == pytest.approx(0.25 * 1.25)
    clock.now += 100.0
    assert share.calls_per_second == pytest.approx(1.0)
    assert not share.backing_off


def test_the_streams_read_throttles_back_off_while_there_are_any():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)
    share.stream_throttled(0)
    assert not share.backing_off
    share.stream_throttled(3)
    assert share.calls_per_second == pytest.approx(0.5)
    share.stream_throttled(3)  # the next minute still has throttled reads
    assert share.calls_per_second == pytest.approx(0.25)
    share.stream_throttled(0)
    assert share.calls_per_second == pytest.approx(0.25)


def test_unbounded_share_counts_but_never_waits():
    clock = FakeClock()
    share = ReadShare(None, clock=clock)
    share.record("s-0", 50 * MIB)
    assert share.wait("s-0") == 0.0
    assert share.rates("s-0").mib_per_second == pytest.approx(5.0)
    assert "unbounded" in share.summary()


def test_read_share_input():
    assert parse_read_share("0.5") == 0.5
    for bad in ("0", "1.5", "x", "-0.1"):
        with pytest.raises(BadInput):
            parse_read_share(bad)


def test_the_cursor_reads_within_the_share_and_backs_off_on_a_throttle():
    clock = FakeClock()
    share = ReadShare(0.2, clock=clock)
    calls: list[float] = []
    throttle_at = {2}

    async def get_records(iterator, limit):  # noqa: ARG001 - the backend's signature, called by keyword
        calls.append(clock.now)
        if len(calls) in throttle_at:
            raise Throttled("Rate exceeded for shard")
        return {"Records": [{"SequenceNumber": str(len(calls)), "Data": b"x" * 100}], "NextShardIterator": "it"}

    async def unused(*_args, **_kwargs):
        raise AssertionError("not called")

    cursor = ShardCursor(
        stream="s",
        shard_id="shard-0",
        iterator="it",
        get_shard_iterator=unused,
        get_records=get_records,
        restart=unused,
        sleep=clock.sleep,
        clock=clock,
        share=share,
    )

    async def read_four():
        for _ in range(4):
            with contextlib.suppress(Throttled):
                await cursor.read()

    asyncio.run(read_four())
    gaps = [round(later - earlier, 3) for earlier, later in itertools.pairwise(calls)]
    assert gaps == [1.0, 2.0, 2.0]  # one a second, then half that after the throttle
    assert share.throttles == 1
    assert share.rates("shard-0").calls_per_second == pytest.approx(0.4)


def test_the_default_share_is_unbounded_only_where_no_production_reader_can_be():
    assert share_for_endpoint(None, local=False, endpoint_url=None) == 0.2  # AWS
    assert share_for_endpoint(None, local=False, endpoint_url="https://kinesis.example.com") == 0.2
    assert share_for_endpoint(None, local=True, endpoint_url=None) is None
    assert share_for_endpoint(None, local=False, endpoint_url="http://127.0.0.1:4567") is None
    assert share_for_endpoint(None, local=False, endpoint_url="http://localhost:4567") is None
    assert share_for_endpoint(0.5, local=True, endpoint_url=None) == 0.5
