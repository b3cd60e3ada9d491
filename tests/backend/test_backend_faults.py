"""The backend under network faults, through the TCP fault proxy in front of the embedded server:
reads are asked again after a dropped connection or a timeout, and say so; a put whose answer was
lost is never resent by the backend (the server holds exactly one copy); a refused connection is
known to have sent nothing."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from console.backend import BackendConfig, open_backend
from console.errors import EndpointUnreachable
from tests.faultproxy import FaultProxy, Faults
from tests.server_truth import read_run


def proxy_for(local_kinesis, faults: Faults) -> FaultProxy:
    return FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults)


def backend_on(proxy: FaultProxy, timeout: float = 2.0):
    return open_backend(
        BackendConfig(
            kind="endpoint",
            region="us-east-1",
            endpoint_url=proxy.endpoint_url,
            read_timeout=timeout,
            connect_timeout=min(3.0, timeout),
        )
    )


@pytest.mark.parametrize("fault", ["reset_before", "reset_after", "late"])
async def test_reads_are_retried_after_a_dropped_connection_or_timeout(local_kinesis, make_stream, fault):
    """A dropped read is asked again as throttling is; one that timed out only once, and only after
    the endpoint has answered something (so it failed twice here, in a row, the first call passing)."""
    stream = await make_stream(shards=3)
    timed_out = fault == "late"
    faults = Faults(
        **{fault: 1.0},
        late_seconds=1.5,
        limit=1 if timed_out else 2,
        skip=1 if timed_out else 0,
        operations=frozenset({"ListShards", "GetShardIterator", "GetRecords", "DescribeStreamSummary"}),
    )
    async with proxy_for(local_kinesis, faults) as proxy, backend_on(proxy, timeout=1.0) as kinesis:
        events = []
        kinesis.on_retry = events.append
        shards = await kinesis.all_shards(stream)
        summary = await kinesis.describe_stream_summary(stream)
        iterator = await kinesis.get_shard_iterator(stream, shards[0].shard_id, "TRIM_HORIZON")
        page = await kinesis.get_records(iterator)
    assert len(shards) == 3 and summary.open_shard_count == 3 and page["Records"] == []
    retried = "DescribeStreamSummary" if timed_out else "ListShards"
    assert proxy.stats["faults"] == kinesis.retries == len(events) == (1 if timed_out else 2)
    assert all((e.operation, e.connection) == (retried, True) for e in events)
    expected = "no answer in time" if timed_out else "connection dropped"
    assert events[0].describe().startswith(f"{expected} on {retried}; retry 1 in ")


async def test_a_silent_endpoint_is_one_line_after_one_read_timeout_naming_both_timeouts():
    """An endpoint that accepts connections and never answers: no retries at first contact, so the
    error comes after one read timeout (default 20 s: within 30 s), not seven."""
    import time

    held: list[asyncio.StreamWriter] = []

    async def accept_and_say_nothing(_reader, writer):
        held.append(writer)

    server = await asyncio.start_server(accept_and_say_nothing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = BackendConfig(
        kind="endpoint",
        region="us-east-1",
        endpoint_url=f"http://127.0.0.1:{port}",
        read_timeout=1.0,
        connect_timeout=0.5,
    )
    try:
        async with open_backend(config) as kinesis:
            started = time.monotonic()
            with pytest.raises(EndpointUnreachable) as caught:
                await kinesis.all_shards("s")
            elapsed = time.monotonic() - started
    finally:
        server.close()
        for writer in held:
            writer.close()
    assert elapsed < 2 * config.read_timeout
    message = caught.value.message
    assert "read timeout ran out" in message and "read timeout 1 s" in message and "connect timeout 0.5 s" in message


@pytest.mark.parametrize("operation", ["PutRecords", "PutRecord"])
async def test_a_put_whose_answer_was_lost_is_not_resent(local_kinesis, make_stream, operation):
    stream = await make_stream(shards=1)
    faults = Faults(reset_after=1.0, limit=1, operations=frozenset({operation}))
    async with proxy_for(local_kinesis, faults) as proxy, backend_on(proxy) as kinesis:
        with pytest.raises(EndpointUnreachable) as caught:
            if operation == "PutRecords":
                await kinesis.put_records(stream, [{"Data": b'{"run":"r","key":"k","seq":0}', "PartitionKey": "k"}])
            else:
                await kinesis.put_record(stream, b'{"run":"r","key":"k","seq":0}', "k")
    assert caught.value.request_sent and kinesis.retries == 0
    assert proxy.stats["requests"] == 1
    truth = read_run(local_kinesis.endpoint_url, stream, "r", keys=["k"], records_per_key=1)
    assert (truth.records, truth.lost, truth.duplicated) == (1, 0, 0)  # written once, answer lost


async def test_a_refused_connection_sent_nothing(local_kinesis, make_stream):
    stream = await make_stream(shards=1)
    async with proxy_for(local_kinesis, Faults()) as proxy, backend_on(proxy) as kinesis:
        await kinesis.all_shards(stream)  # reached once: an outage now is retried and reported
        proxy.down()
        await asyncio.sleep(0.1)  # the client sees its kept-alive connection reset, as it would a moment later
        events = []
        kinesis.on_retry = events.append
        with pytest.raises(EndpointUnreachable) as caught:
            await kinesis.put_records(stream, [{"Data": b"x", "PartitionKey": "k"}])
        assert not caught.value.request_sent and kinesis.retries == 0  # the producer retries puts
        kinesis.backoff_cap = 0.05
        with pytest.raises(EndpointUnreachable) as caught:
            await kinesis.all_shards(stream)
    assert not caught.value.request_sent and caught.value.message.endswith("connection failed")
    assert len(events) == kinesis.max_retries and all(e.code == "could not connect" for e in events)
