"""`produce --verify --efo` and `put --verify --efo`: the read-back through enhanced fan-out, against the
embedded server (its SubscribeToShard over HTTP/2 on its one port) and kinesis-mock, with the temporary
consumer's rules (priced, confirmed or --yes, logged, deregistered at the end) or a named consumer."""

from __future__ import annotations

import json

import pytest

from console.backend import BackendConfig, open_backend
from console.produce.settings import ProducerSettings
from console.produce.verify import Verifier, run_and_verify
from console.topology.model import EfoConsumer
from tests.conftest import StreamFactory
from tests.read.test_efo import kconsole, logged_operations, registered


class GetRecordsRefused:
    """The backend as it is, except that polling a shard fails the test: the read-back must subscribe."""

    def __init__(self, backend) -> None:
        self._backend = backend

    def __getattr__(self, name: str):
        if name in ("get_records", "get_shard_iterator"):

            async def refused(*_args, **_kwargs):
                raise AssertionError(f"{name} called: the read-back polled instead of subscribing")

            return refused
        return getattr(self._backend, name)


def live_consumers(consumers: list[EfoConsumer]) -> list[str]:
    return [c.name for c in consumers if not c.deleting]


@pytest.fixture
async def mock_backend(kinesis_mock):
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    async with open_backend(config) as backend:
        factory = StreamFactory(backend)
        yield backend, factory
        await factory.cleanup()


async def test_the_read_back_subscribes_and_reads_a_split_parent_before_its_children(kinesis, make_stream):
    stream = await make_stream(1)
    consumer = await registered(kinesis, stream)
    transport = kinesis.subscriptions()
    settings = ProducerSettings(keys=40, records_per_key=10).validated()
    result, _ = await run_and_verify(kinesis, stream, settings, verify=False)
    parent = (await kinesis.all_shards(stream))[0]
    await kinesis.split_shard(stream, parent.shard_id, 1 << 127)
    await kinesis.wait_for_active(stream)

    refused = GetRecordsRefused(kinesis)
    verifier = Verifier.for_backend(
        refused, subscribe=lambda shard_id, position: transport.subscribe(consumer, shard_id, position)
    )
    report = await verifier.verify(result)

    assert report.ok, report.to_json()
    assert (report.read_back, report.lost, report.duplicated, report.out_of_order) == (400, 0, 0, 0)
    assert next(read.shard_id for read in report.shards) == parent.shard_id, "the parent first"
    assert len(report.shards) == 3


async def test_produce_verify_efo_on_the_embedded_server_registers_reads_and_deregisters(
    kinesis, make_stream, local_kinesis
):
    stream = await make_stream(2)
    code, out, err = await kconsole(
        "produce", stream, "--keys", "20", "--records-per-key", "15", "--verify", "--efo", "--yes", "--json",
        "--endpoint-url", local_kinesis.endpoint_url,
    )  # fmt: skip

    assert code == 0, err
    document = json.loads(out)
    assert document["verified"] and document["ok"]
    assert (document["read_back"], document["lost"], document["duplicated"]) == (300, 0, 0)
    assert "deregistered when produce ends (Ctrl-C included). AWS charges $0.015 per consumer-shard hour" in err
    assert "produce: registered the temporary consumer kconsole-" in err
    assert err.index("registered the temporary consumer") < err.index("producing 300 records")
    assert "produce: deregistered the temporary consumer kconsole-" in err
    arn = (await kinesis.describe_stream_summary(stream)).arn
    assert live_consumers(await kinesis.list_stream_consumers(arn)) == []
    assert logged_operations(stream) == [
        ("intent", "RegisterStreamConsumer"),
        ("outcome", "RegisterStreamConsumer"),
        ("intent", "DeregisterStreamConsumer"),
        ("outcome", "DeregisterStreamConsumer"),
    ]


@pytest.mark.kinesis_mock
async def test_produce_verify_efo_against_kinesis_mock(mock_backend, kinesis_mock):
    backend, streams = mock_backend
    stream = await streams(2)
    code, out, err = await kconsole(
        "produce", stream, "--keys", "10", "--records-per-key", "20", "--verify", "--efo", "--yes", "--json",
        "--endpoint-url", kinesis_mock.endpoint_url,
    )  # fmt: skip

    assert code == 0, err
    document = json.loads(out)
    assert document["verified"] and document["ok"] and document["read_back"] == 200
    assert "produce: deregistered the temporary consumer" in err
    arn = (await backend.describe_stream_summary(stream)).arn
    assert live_consumers(await backend.list_stream_consumers(arn)) == []


@pytest.mark.kinesis_mock
async def test_put_verify_efo_with_a_named_consumer_leaves_it_registered(mock_backend, kinesis_mock, tmp_path):
    backend, streams = mock_backend
    stream = await streams(2)
    await registered(backend, stream, "checker")
    lines = tmp_path / "orders.jsonl"
    lines.write_text("".join(json.dumps({"key": f"order-{n}", "data": {"n": n}}) + "\n" for n in range(50)))

    code, out, err = await kconsole(
        "put", stream, "--file", str(lines), "--verify", "--efo", "--consumer", "checker", "--json",
        "--endpoint-url", kinesis_mock.endpoint_url,
    )  # fmt: skip

    assert code == 0, err
    document = json.loads(out)
    assert document["ok"] and document["verification"]["read_back"] == 50, document
    assert "temporary consumer" not in err
    arn = (await backend.describe_stream_summary(stream)).arn
    assert live_consumers(await backend.list_stream_consumers(arn)) == ["checker"]


async def test_put_verify_efo_on_the_embedded_server_with_a_temporary_consumer(kinesis, make_stream, local_kinesis):
    stream = await make_stream(1)
    lines = "".join(json.dumps({"key": f"k{n % 3}", "data": {"n": n}}) + "\n" for n in range(12))
    process_argv = ("put", stream, "--verify", "--efo", "--yes", "--json", "--endpoint-url", local_kinesis.endpoint_url)
    code, out, err = await kconsole_with_input(lines, *process_argv)

    assert code == 0, err
    assert json.loads(out)["verification"]["read_back"] == 12
    assert "deregistered when put ends" in err and "put: deregistered the temporary consumer" in err
    arn = (await kinesis.describe_stream_summary(stream)).arn
    assert live_consumers(await kinesis.list_stream_consumers(arn)) == []


async def test_without_yes_nothing_is_registered_or_sent(kinesis, make_stream, local_kinesis):
    stream = await make_stream(1)
    code, _out, err = await kconsole_with_input(
        '{"key": "a", "data": 1}\n', "put", stream, "--verify", "--efo", "--endpoint-url", local_kinesis.endpoint_url
    )

    assert code == 1 and "without confirmation" in err and "Traceback" not in err
    iterator = await kinesis.get_shard_iterator(stream, "shardId-000000000000", "TRIM_HORIZON")
    assert (await kinesis.get_records(iterator))["Records"] == []
    arn = (await kinesis.describe_stream_summary(stream)).arn
    assert live_consumers(await kinesis.list_stream_consumers(arn)) == []


async def test_efo_options_out_of_place_are_one_line():
    code, _out, err = await kconsole("produce", "orders", "--keys", "1", "--records-per-key", "1", "--efo", "--local")
    assert (
        code == 2
        and err.strip() == "kconsole: error: --efo reads the run back through enhanced fan-out: give --verify too"
    )
    code, _out, err = await kconsole_with_input('{"key": "a", "data": 1}\n', "put", "orders", "--yes", "--local")
    assert code == 2 and "--yes confirms the temporary consumer of --efo" in err and "Traceback" not in err
    code, _out, err = await kconsole_with_input(
        '{"key": "a", "data": 1}\n', "put", "orders", "--verify", "--consumer", "c", "--local"
    )
    assert code == 2 and "give --efo too" in err and "Traceback" not in err


async def kconsole_with_input(text: str, *argv: str) -> tuple[int, str, str]:
    import asyncio
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(text.encode()), 90)
    return process.returncode or 0, stdout.decode(), stderr.decode()
