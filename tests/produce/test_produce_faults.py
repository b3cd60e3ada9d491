"""Failures no local server produces, injected at the transport boundary around the REAL backend:
per-record failures, throttling bursts, connections dropped after the request reached the server,
and a server restart. Every case must verify with nothing lost and nothing reordered, and report
its duplicates. The naive batcher (the one-record-per-key rule switched off) must be caught."""

from __future__ import annotations

import random
import time

import pytest

from console.errors import EndpointUnreachable, Throttled
from console.produce.producer import THROTTLE_ERROR, OrderedProducer
from console.produce.settings import ProducerSettings
from console.produce.verify import Verifier
from console.topology.shardmap import ShardMap


class FaultyTransport:
    """Wraps a KinesisBackend's put_records / put_record; `fault` picks what happens to each call."""

    def __init__(self, kinesis, fault: str, seed: int = 7) -> None:
        self.kinesis = kinesis
        self.fault = fault
        self.random = random.Random(seed)
        self.calls = 0
        self.injected = 0
        self.outage_until: float | None = None

    async def put_records(self, stream: str, records: list[dict]) -> dict:
        self.calls += 1
        call = self.calls
        if self.fault == "partial":
            return await self._partial(stream, records, rate=0.2)
        if self.fault == "throttle_bursts" and call % 10 in (3, 4, 5, 6):
            self.injected += 1
            if call % 2:
                raise Throttled("injected: rate exceeded for the whole request")
            return {
                "FailedRecordCount": len(records),
                "Records": [
                    {"ErrorCode": THROTTLE_ERROR, "ErrorMessage": "injected: rate exceeded for shard"} for _ in records
                ],
            }
        if self.fault == "drop" and call % 4 == 1:
            await self.kinesis.put_records(stream, records)  # reached the server and was written...
            self.injected += 1
            raise EndpointUnreachable("injected: connection dropped before the response")  # ...answer lost
        if self.fault == "restart":
            await self._outage(call, lambda: self.kinesis.put_records(stream, records))
        return await self.kinesis.put_records(stream, records)

    async def put_record(self, stream: str, data: bytes, partition_key: str, **options) -> dict:
        self.calls += 1
        call = self.calls
        if call % 7 == 3:
            self.injected += 1
            raise Throttled("injected: rate exceeded")
        if call % 5 == 1:
            await self.kinesis.put_record(stream, data, partition_key, **options)
            self.injected += 1
            raise EndpointUnreachable("injected: connection dropped before the response")
        return await self.kinesis.put_record(stream, data, partition_key, **options)

    async def _partial(self, stream: str, records: list[dict], rate: float) -> dict:
        """Fail about `rate` of the records (the rest really go to the server), like AWS's partial failures."""
        failing = {i for i in range(len(records)) if self.random.random() < rate}
        passing = [r for i, r in enumerate(records) if i not in failing]
        answered = iter((await self.kinesis.put_records(stream, passing))["Records"] if passing else ())
        results = []
        for index in range(len(records)):
            if index in failing:
                code = self.random.choice([THROTTLE_ERROR, "InternalFailure"])
                results.append({"ErrorCode": code, "ErrorMessage": "injected"})
            else:
                results.append(next(answered))
        self.injected += len(failing)
        return {"FailedRecordCount": sum("ErrorCode" in r for r in results), "Records": results}

    async def _outage(self, call: int, forward) -> None:
        """From the 4th call the server is 'restarting' for 0.8 s. The call that meets the crash was
        already written; calls during the outage never reach it."""
        now = time.monotonic()
        if self.outage_until is None and call == 4:
            self.outage_until = now + 0.8
            await forward()
            self.injected += 1
            raise EndpointUnreachable("injected: server went away mid-request")
        if self.outage_until is not None and now < self.outage_until:
            self.injected += 1
            raise EndpointUnreachable("injected: connection refused")


async def run_with(kinesis, stream, transport, **overrides):
    settings = ProducerSettings(
        **{
            "keys": 40,
            "records_per_key": 15,
            "pacing": False,
            "concurrency": 4,
            "max_batch_records": 25,
            "retry_base": 0.01,
            "retry_cap": 0.2,
            **overrides,
        }
    )
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        producer = OrderedProducer(
            stream, settings, put_records=transport.put_records, put_record=transport.put_record, shard_map=shard_map
        )
        result = await producer.run()
    return result, await Verifier.for_backend(kinesis).verify(result)


@pytest.mark.parametrize("fault", ["partial", "throttle_bursts", "drop", "restart"])
async def test_faults_lose_and_reorder_nothing(kinesis, make_stream, fault):
    stream = await make_stream(shards=2)
    transport = FaultyTransport(kinesis, fault)
    result, report = await run_with(kinesis, stream, transport)
    assert transport.injected > 0 and result.retries > 0
    assert report.ok, report.to_json()["problems"][:5]
    assert (report.lost, report.out_of_order, report.misplaced, result.acknowledged, report.read_back) == (
        0,
        0,
        0,
        600,
        600,
    )
    assert result.max_in_flight_per_key == 1
    # Duplicates: only where an outcome was unknown, and every one of them counted and reported.
    assert report.duplicated <= report.possible_duplicates == result.possible_duplicates
    if fault in ("partial", "throttle_bursts"):
        assert report.possible_duplicates == 0 and report.duplicated == 0
        assert result.throttled > 0
    else:
        assert report.duplicated > 0 and report.possible_duplicates > 0
        # The first request's answer was lost before any ack: its shards are read from the start.
        if fault == "drop":
            assert "TRIM_HORIZON" in {read.start for read in report.shards}


async def test_sequential_mode_survives_drops_and_throttling(kinesis, make_stream):
    stream = await make_stream(shards=2)
    transport = FaultyTransport(kinesis, "sequential")
    result, report = await run_with(kinesis, stream, transport, mode="sequential", keys=8, records_per_key=8)
    assert report.ok and (report.lost, report.out_of_order, report.read_back) == (0, 0, 64)
    assert result.throttled > 0 and 0 < report.duplicated <= report.possible_duplicates


async def test_naive_batcher_is_caught_reordering(kinesis, make_stream):
    """The same code path with the one-record-per-key rule off, under the same injected failures."""
    stream = await make_stream(shards=2)
    transport = FaultyTransport(kinesis, "partial")
    result, report = await run_with(kinesis, stream, transport, one_record_per_key=False)
    assert result.max_in_flight_per_key > 1
    assert report.out_of_order > 0 and not report.ok
    first = report.first_out_of_order
    assert first["seq"] < first["after_seq"]
    rows = report.records_for(first["key"])
    assert rows[first["position"]]["seq"] == first["seq"]
    assert any(p.kind == "out_of_order" and p.key == first["key"] for p in report.problems)


async def test_a_key_that_keeps_failing_is_abandoned_not_reordered(kinesis, make_stream):
    """After give_up_after seconds of failures the record is failed and its key stopped: sending the
    key's later records would break its order. Other keys finish; the report says the run failed."""
    stream = await make_stream(shards=2)
    doomed = None

    async def one_key_always_fails(name, records):
        nonlocal doomed
        doomed = doomed or records[0]["PartitionKey"]
        passing = [r for r in records if r["PartitionKey"] != doomed]
        answered = iter((await kinesis.put_records(name, passing))["Records"] if passing else ())
        results = [
            {"ErrorCode": "InternalFailure", "ErrorMessage": "injected"}
            if r["PartitionKey"] == doomed
            else next(answered)
            for r in records
        ]
        return {"FailedRecordCount": sum("ErrorCode" in r for r in results), "Records": results}

    class Transport:
        put_records = staticmethod(one_key_always_fails)
        put_record = None

    result, report = await run_with(kinesis, stream, Transport, keys=5, records_per_key=4, give_up_after=0.3)
    assert [(key, seq) for key, seq, _ in result.failed] == [(doomed, 0)]
    assert result.abandoned == 3 and result.acknowledged == 16
    assert report.failed == 1 and not report.ok and report.lost == report.out_of_order == 0
