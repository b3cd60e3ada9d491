"""Enhanced fan-out reads (SubscribeToShard over HTTP/2) against kinesis-mock, which serves them on its
plain port by HTTP/2 prior knowledge, and against the embedded moto server, which serves them the same
way on its one port (console/localserver/subscribe.py).

Faults are made at the transport: `CuttingProxy` relays TCP both ways and cuts each of its first
connections after a number of bytes from the server, mid-event, so the reader must resubscribe after
the last event it took, and a second reader with the same consumer meets ResourceInUse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from datetime import UTC, datetime

import pytest

from console.backend import BackendConfig, open_backend
from console.read.efo import (
    consumer_problem,
    is_temporary_consumer,
    left_over_consumers,
    temporary_consumer_name,
)
from console.read.tail import TailOptions, TailReader, parse_start
from console.topology.model import EfoConsumer
from tests.cli_zygote import stand_in_path
from tests.conftest import StreamFactory, unique_stream_name

RECORDS = 3000


@pytest.fixture
async def mock_backend(kinesis_mock):
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    async with open_backend(config) as backend:
        factory = StreamFactory(backend)
        yield backend, factory
        await factory.cleanup()


class CuttingProxy:
    """A TCP relay on 127.0.0.1 that cuts each of its first `cuts` connections once `after` bytes came back
    from the server (the rest pass untouched), and counts connections."""

    def __init__(self, upstream_port: int, *, after: int, cuts: int) -> None:
        self.upstream_port = upstream_port
        self.after = after
        self.cuts = cuts
        self.connections = 0
        self.cut = 0
        self._server: asyncio.Server | None = None

    @property
    def endpoint_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, client_reader, client_writer) -> None:
        self.connections += 1
        cut_this = self.cut < self.cuts
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def pump(reader, writer, limit: int | None) -> None:
            sent = 0
            with contextlib.suppress(OSError):
                while data := await reader.read(65536):
                    if limit is not None and sent + len(data) >= limit:
                        writer.write(data[: max(0, limit - sent)])
                        self.cut += 1
                        return
                    sent += len(data)
                    writer.write(data)
                    await writer.drain()

        up = asyncio.create_task(pump(client_reader, upstream_writer, None))
        await pump(upstream_reader, client_writer, self.after if cut_this else None)
        up.cancel()
        for writer in (client_writer, upstream_writer):
            with contextlib.suppress(Exception):
                writer.transport.abort()


async def fill(backend, stream: str, start: int, count: int) -> None:
    for first in range(start, start + count, 500):
        entries = [
            {"Data": json.dumps({"n": n}).encode(), "PartitionKey": f"k{n}"}
            for n in range(first, min(first + 500, start + count))
        ]
        answer = await backend.put_records(stream, entries)
        assert not answer.get("FailedRecordCount")


async def registered(backend, stream: str, name: str = "reader") -> str:
    arn = (await backend.describe_stream_summary(stream)).arn
    consumer = await backend.register_stream_consumer(arn, name)
    for _ in range(100):
        if (await backend.describe_stream_consumer(arn, name)).active:
            return consumer.arn
        await asyncio.sleep(0.1)
    raise AssertionError("the consumer never became ACTIVE")


async def read_with_efo(
    backend, stream: str, consumer_arn: str, *, timeout: float = 90.0, notes: list | None = None
) -> list:
    transport = backend.subscriptions()
    reader = TailReader(
        backend,
        stream,
        TailOptions(start=parse_start("trim-horizon")),
        subscribe=lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position),
        on_trouble=None if notes is None else notes.append,
    )
    records = []

    async def drain() -> None:
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                records.extend(batch.records)

    await asyncio.wait_for(drain(), timeout)
    return records


def check_exactly_once_in_order(records: list, expected: int) -> dict[str, list[int]]:
    numbers = [record.value["n"] for record in records]
    assert sorted(numbers) == list(range(expected)), "every record exactly once"
    by_shard: dict[str, list] = {}
    for record in records:
        by_shard.setdefault(record.shard_id, []).append(record)
    for shard_records in by_shard.values():
        sequence = [int(record.sequence_number) for record in shard_records]
        assert sequence == sorted(sequence), "in order within a shard"
    return {shard: [r.value["n"] for r in shard_records] for shard, shard_records in by_shard.items()}


@pytest.mark.kinesis_mock
async def test_efo_reads_every_record_once_across_a_split(mock_backend):
    backend, streams = mock_backend
    stream = await streams(1)
    await fill(backend, stream, 0, RECORDS // 2)
    parent = (await backend.all_shards(stream))[0]
    await backend.split_shard(stream, parent.shard_id, 1 << 127)
    await backend.wait_for_active(stream)
    await fill(backend, stream, RECORDS // 2, RECORDS // 2)
    consumer = await registered(backend, stream)

    records = await read_with_efo(backend, stream, consumer)

    by_shard = check_exactly_once_in_order(records, RECORDS)
    assert by_shard[parent.shard_id] == list(range(RECORDS // 2))
    last_of_parent = max(i for i, record in enumerate(records) if record.shard_id == parent.shard_id)
    first_of_children = min(i for i, record in enumerate(records) if record.shard_id != parent.shard_id)
    assert last_of_parent < first_of_children, "the parent is read to its end before its children"
    assert len(by_shard) == 3


@pytest.mark.kinesis_mock
async def test_connections_cut_mid_event_are_resubscribed_after_the_last_event(kinesis_mock):
    await check_cut_subscriptions_are_picked_up(kinesis_mock.endpoint_url)


async def check_cut_subscriptions_are_picked_up(endpoint_url: str) -> None:
    """Four subscriptions cut mid-event by a CuttingProxy in front of `endpoint_url`: every record once."""
    upstream = int(endpoint_url.rsplit(":", 1)[1])
    async with CuttingProxy(upstream, after=40_000, cuts=4) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as backend:
            streams = StreamFactory(backend)
            try:
                stream = await streams(2)
                proxy.cuts = 0  # the setup's calls pass; the subscriptions are cut
                await fill(backend, stream, 0, RECORDS)
                consumer = await registered(backend, stream)
                proxy.cuts, proxy.cut = 4, 0
                records = await read_with_efo(backend, stream, consumer)
            finally:
                proxy.cuts = 0
                await streams.cleanup()
    check_exactly_once_in_order(records, RECORDS)
    assert proxy.cut == 4, "four subscriptions were cut mid-event and picked up again"


@pytest.mark.kinesis_mock
async def test_a_second_reader_with_the_same_consumer_waits_out_resource_in_use(mock_backend):
    backend, streams = mock_backend
    stream = await streams(1)
    await fill(backend, stream, 0, 500)
    consumer = await registered(backend, stream)

    notes: list[str] = []
    first, second = await asyncio.gather(
        read_with_efo(backend, stream, consumer, notes=notes), read_with_efo(backend, stream, consumer, notes=notes)
    )

    check_exactly_once_in_order(first, 500)
    check_exactly_once_in_order(second, 500)
    assert any("another subscription with this consumer holds the shard" in note for note in notes), notes


# ---- the command ---------------------------------------------------------------------------------


async def kconsole(*argv: str, timeout: float = 90.0) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode or 0, stdout.decode(), stderr.decode()


def logged_operations(stream: str) -> list[tuple[str, str]]:
    from console.reshard.actionlog import ActionLog

    path = ActionLog.default().path
    entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [(entry["kind"], entry["operation"]) for entry in entries if entry.get("stream") == stream]


@pytest.mark.kinesis_mock
async def test_tail_efo_registers_logs_and_deregisters_a_temporary_consumer(mock_backend, kinesis_mock):
    backend, streams = mock_backend
    stream = await streams(2)
    await fill(backend, stream, 0, 1000)

    code, out, err = await kconsole(
        "tail", stream, "--efo", "--yes", "--json", "--endpoint-url", kinesis_mock.endpoint_url
    )

    assert code == 0, err
    numbers = sorted(json.loads(line)["content"]["n"] for line in out.splitlines())
    assert numbers == list(range(1000))
    assert "AWS charges $0.015 per consumer-shard hour (2 shards: $0.030 for each hour" in err
    assert "$0.013 per GB it reads (us-east-1 list prices" in err
    name = err.split("registered the temporary consumer ", 1)[1].split(";", 1)[0]
    assert is_temporary_consumer(name)
    assert f"deregistered the temporary consumer {name}" in err
    arn = (await backend.describe_stream_summary(stream)).arn
    assert [c for c in await backend.list_stream_consumers(arn) if not c.deleting] == []
    assert logged_operations(stream) == [
        ("intent", "RegisterStreamConsumer"),
        ("outcome", "RegisterStreamConsumer"),
        ("intent", "DeregisterStreamConsumer"),
        ("outcome", "DeregisterStreamConsumer"),
    ]


@pytest.mark.kinesis_mock
async def test_ctrl_c_deregisters_the_temporary_consumer(mock_backend, kinesis_mock):
    from tests.conftest import interrupt, kconsole_child

    backend, streams = mock_backend
    stream = await streams(1)
    arn = (await backend.describe_stream_summary(stream)).arn
    argv = ("tail", stream, "--efo", "--yes", "--follow", "--endpoint-url", kinesis_mock.endpoint_url)
    async with kconsole_child(*argv) as process:
        while b"registered the temporary consumer" not in await asyncio.wait_for(process.stderr.readline(), 60):
            pass
        assert len(await backend.list_stream_consumers(arn)) == 1
        await asyncio.sleep(1.0)
        _, err = await interrupt(process)
    assert process.returncode == 130
    assert b"deregistered the temporary consumer" in err
    assert [c for c in await backend.list_stream_consumers(arn) if not c.deleting] == []


@pytest.mark.kinesis_mock
async def test_a_consumer_of_another_stream_is_one_line(mock_backend, kinesis_mock):
    backend, streams = mock_backend
    stream, other = await streams(1), await streams(1)
    elsewhere = await registered(backend, other, "elsewhere")

    code, _out, err = await kconsole(
        "tail", stream, "--efo", "--consumer", elsewhere, "--endpoint-url", kinesis_mock.endpoint_url
    )

    assert code == 2
    assert err.strip().splitlines() == [
        f"kconsole: error: consumer {elsewhere} is registered on stream {other}, not on {stream}"
    ]


@pytest.mark.kinesis_mock
async def test_tail_efo_with_a_named_consumer_reads_and_leaves_it_registered(mock_backend, kinesis_mock):
    backend, streams = mock_backend
    stream = await streams(1)
    await fill(backend, stream, 0, 200)
    await registered(backend, stream, "mine")

    code, out, err = await kconsole(
        "tail", stream, "--efo", "--consumer", "mine", "--json", "--endpoint-url", kinesis_mock.endpoint_url
    )

    assert code == 0, err
    assert sorted(json.loads(line)["content"]["n"] for line in out.splitlines()) == list(range(200))
    arn = (await backend.describe_stream_summary(stream)).arn
    assert [c.name for c in await backend.list_stream_consumers(arn)] == ["mine"]


def test_a_consumer_still_creating_is_refused_in_one_line():
    arn = "arn:aws:kinesis:us-east-1:000000000000:stream/orders"
    problem = consumer_problem(
        EfoConsumer(name="new", arn=f"{arn}/consumer/new:1", status="CREATING"),
        "new",
        "orders",
        arn,
        ["new"],
    )
    assert problem is not None and "CREATING, not ACTIVE" in problem and "\n" not in problem


def test_temporary_names_are_recognisably_kconsoles_own():
    name = temporary_consumer_name("build host.local", 4242, datetime(2026, 11, 28, 5, 0, tzinfo=UTC))
    assert name == "kconsole-build-host.local-4242-20261128T050000Z"
    assert is_temporary_consumer(name)
    assert not is_temporary_consumer("kconsole-reader")


def test_left_over_consumers_are_this_hosts_whose_kconsole_no_longer_runs():
    moment = datetime(2026, 11, 28, 5, 0, tzinfo=UTC)
    dead = temporary_consumer_name("build host", 111, moment)
    running = temporary_consumer_name("build host", 222, moment)
    elsewhere = temporary_consumer_name("other-host", 111, moment)

    found = left_over_consumers([running, "analytics", elsewhere, dead], "build host", lambda pid: pid == 222)

    assert found == [dead]


# ---- against the embedded server (console/localserver/subscribe.py) ---------------------------------

SUBSCRIPTION_SECONDS = 1.0  # the embedded server's subscription lifetime here: resubscriptions every second


@pytest.fixture(scope="module")
def short_lived_local():
    """An embedded server (as `kconsole local serve` runs it) whose subscriptions end after a second."""
    from console.localserver.subscribe import SUBSCRIPTION_SECONDS_VARIABLE
    from console.localserver.supervision import LocalKinesisServer

    server = LocalKinesisServer()
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SUBSCRIPTION_SECONDS_VARIABLE, str(SUBSCRIPTION_SECONDS))
        server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def local_backend(short_lived_local):
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=short_lived_local.endpoint_url)
    async with open_backend(config) as backend:
        factory = StreamFactory(backend)
        yield backend, factory
        await factory.cleanup()


async def test_efo_on_the_embedded_server_reads_every_record_once_across_a_split_and_resubscriptions(local_backend):
    backend, streams = local_backend
    stream = await streams(1)
    consumer = await registered(backend, stream)
    transport = backend.subscriptions()
    opened: list[str] = []

    def subscribe(shard_id: str, position: dict):
        opened.append(shard_id)
        return transport.subscribe(consumer, shard_id, position)

    options = TailOptions(start=parse_start("trim-horizon"), follow=True)
    reader = TailReader(backend, stream, options, subscribe=subscribe)
    records: list = []
    batches, written = 12, 150

    async def drain() -> None:
        async with contextlib.aclosing(reader.batches()) as pages:
            async for batch in pages:
                records.extend(batch.records)
                if len(records) >= batches * written:
                    return

    async def write() -> None:
        for step in range(batches):
            await fill(backend, stream, step * written, written)
            if step == batches // 2:
                parent = (await backend.all_shards(stream))[0]
                await backend.split_shard(stream, parent.shard_id, 1 << 127)
            await asyncio.sleep(0.25)  # three seconds of writing: subscriptions end and are taken up again

    await asyncio.wait_for(asyncio.gather(drain(), write()), 60)

    by_shard = check_exactly_once_in_order(records, batches * written)
    assert len(by_shard) == 3, "the parent and its two children"
    assert len(opened) > len(set(opened)), f"subscriptions ended and were resubscribed: {opened}"


async def test_connections_to_the_embedded_server_cut_mid_event_are_resubscribed(short_lived_local):
    await check_cut_subscriptions_are_picked_up(short_lived_local.endpoint_url)


async def test_tail_efo_against_the_embedded_server_reads_a_split_stream(local_backend, short_lived_local):
    backend, streams = local_backend
    stream = await streams(1)
    await fill(backend, stream, 0, RECORDS // 2)
    parent = (await backend.all_shards(stream))[0]
    await backend.split_shard(stream, parent.shard_id, 1 << 127)
    await backend.wait_for_active(stream)
    await fill(backend, stream, RECORDS // 2, RECORDS // 2)

    code, out, err = await kconsole(
        "tail", stream, "--efo", "--yes", "--json", "--from", "trim-horizon",
        "--endpoint-url", short_lived_local.endpoint_url,
    )  # fmt: skip

    assert code == 0, err
    numbers = [json.loads(line)["content"]["n"] for line in out.splitlines()]
    assert sorted(numbers) == list(range(RECORDS))
    assert numbers[: RECORDS // 2] == list(range(RECORDS // 2)), "the parent, in order, before its children"


async def test_tail_local_efo_reads_the_embedded_servers_stream():
    stream = unique_stream_name()
    code, _out, err = await kconsole("tail", stream, "--local", "--efo", "--yes", "--from", "trim-horizon")

    assert code == 0, err
    assert "registered the temporary consumer" in err and "deregistered the temporary consumer" in err
    assert "Traceback" not in err


@pytest.mark.kinesis_mock
async def test_copy_efo_copies_every_record_and_deregisters_its_consumer(mock_backend, kinesis_mock):
    backend, streams = mock_backend
    source, destination = await streams(2), await streams(1)
    await fill(backend, source, 0, 600)

    code, _out, err = await kconsole(
        "copy", source, destination, "--from", "trim-horizon", "--efo", "--yes", "--json",
        "--endpoint-url", kinesis_mock.endpoint_url,
    )  # fmt: skip

    assert code == 0, err
    copied = []
    for shard in await backend.all_shards(destination):
        iterator = await backend.get_shard_iterator(destination, shard.shard_id, "TRIM_HORIZON")
        copied.extend(json.loads(record["Data"])["n"] for record in (await backend.get_records(iterator))["Records"])
    assert sorted(copied) == list(range(600))
    assert "deregistered the temporary consumer" in err
    arn = (await backend.describe_stream_summary(source)).arn
    assert [c for c in await backend.list_stream_consumers(arn) if not c.deleting] == []


async def test_tail_efo_removes_this_hosts_left_over_temporary_consumers(local_backend, short_lived_local):
    import os
    import socket

    backend, streams = local_backend
    stream = await streams(1)
    await fill(backend, stream, 0, 10)
    finished = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await finished.wait()  # its pid is one no process has now: a kconsole killed with -9
    moment = datetime.now(UTC)
    killed = temporary_consumer_name(socket.gethostname(), finished.pid, moment)
    running = temporary_consumer_name(socket.gethostname(), os.getpid(), moment)
    elsewhere = temporary_consumer_name("another-host", finished.pid, moment)
    for name in (killed, running, elsewhere):
        await registered(backend, stream, name)
    url = ("--endpoint-url", short_lived_local.endpoint_url)

    code, out, err = await kconsole("consumers", stream, *url)
    assert code == 0, err
    assert f"{killed} (kconsole's own, temporary)" in out

    code, out, err = await kconsole("tail", stream, "--efo", "--json", "--from", "trim-horizon", *url)
    assert code == 1 and "without confirmation" in err, "the removal asks as the registration does"
    code, out, err = await kconsole("tail", stream, "--efo", "--yes", "--json", "--from", "trim-horizon", *url)

    assert code == 0, err
    assert len(out.splitlines()) == 10
    assert f"{killed}; they are deregistered first" in err
    assert f"deregistered the left-over temporary consumer {killed}" in err
    arn = (await backend.describe_stream_summary(stream)).arn
    left = {c.name for c in await backend.list_stream_consumers(arn) if not c.deleting}
    assert left == {running, elsewhere}, "another host's and a running kconsole's are left alone"
    assert logged_operations(stream)[:2] == [
        ("intent", "DeregisterStreamConsumer"),
        ("outcome", "DeregisterStreamConsumer"),
    ]
    code, out, err = await kconsole("consumers", stream, "--json", *url)
    listed = [c for c in json.loads(out)["efo_consumers"] if c["status"] != "DELETING"]
    assert {c["name"]: c["kconsole_temporary"] for c in listed} == {
        running: True,
        elsewhere: True,
    }


async def test_heat_efo_counts_match_a_getrecords_reading_of_the_same_window(local_backend, short_lived_local):
    from collections import Counter

    backend, streams = local_backend
    stream = await streams(2)
    argv = (
        "heat",
        stream,
        "--efo",
        "--yes",
        "--json",
        "--seconds",
        "4",
        "--endpoint-url",
        short_lived_local.endpoint_url,
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.cli", *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    seen = []
    while not any(line.startswith(b"sampling") for line in seen):
        seen.append(await asyncio.wait_for(process.stderr.readline(), 60))
        assert seen[-1], b"".join(seen)
    keys = {"alpha": 9, "beta": 6, "gamma": 3}  # records each batch, three batches a second apart
    for batch in range(3):
        entries = [
            {"Data": json.dumps({"batch": batch}).encode(), "PartitionKey": key}
            for key, count in keys.items()
            for _ in range(count)
        ]
        assert not (await backend.put_records(stream, entries)).get("FailedRecordCount")
        await asyncio.sleep(1.0)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert b"deregistered the temporary consumer" in err

    independent: dict[str, Counter] = {}
    for shard in await backend.all_shards(stream):
        iterator = await backend.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
        page = await backend.get_records(iterator)
        independent[shard.shard_id] = Counter(record["PartitionKey"] for record in page["Records"])
    sampled = {shard["shard_id"]: shard for shard in json.loads(out)["shards"]}
    assert sum(sum(counts.values()) for counts in independent.values()) == 3 * sum(keys.values())
    for shard_id, counts in independent.items():
        assert sampled[shard_id]["records"] == sum(counts.values()), shard_id
        assert {row["key"]: row["records"] for row in sampled[shard_id]["top_keys"]} == dict(counts), shard_id


async def test_heat_efo_refuses_the_cloudwatch_source_and_a_consumer_without_efo():
    code, _, err = await kconsole("heat", "orders", "--efo", "--source", "cloudwatch", "--local")
    assert code == 2 and "--efo samples the records" in err and "Traceback" not in err
    code, _out, err = await kconsole("heat", "orders", "--consumer", "reader", "--local")
    assert code == 2 and "give --efo too" in err and "Traceback" not in err
