"""SubscribeToShard on the embedded server (console/localserver/subscribe.py): HTTP/2 by prior knowledge on
the server's own port, an event stream as AWS sends it.

Every test runs twice, as in test_moto_compat.py: against the patched embedded server (the behaviour
must be there) and against an unpatched moto server, where the HTTP/2 preface goes to waitress and no
event stream comes back (if an upstream release adds SubscribeToShard, the unpatched run fails).

The wire is checked with a client of the test's own (`raw_subscription`: h2 directly, each message
decoded by botocore's EventStreamBuffer), and the reading with kconsole's (console.backend.subscribe,
which parses events with botocore's event-stream parser). The patched server here ends subscriptions
after `LIFETIME` seconds, not AWS's 5 minutes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from types import SimpleNamespace

import pytest

from console.backend import BackendConfig, open_backend
from console.errors import BackendError, ResourceInUse, StreamNotFound
from console.localserver.subscribe import SUBSCRIPTION_SECONDS_VARIABLE, TAKEOVER_SECONDS, TARGET
from console.localserver.supervision import LocalKinesisServer
from tests.conftest import StreamFactory

LIFETIME = 2.0


@pytest.fixture(scope="module")
def short_lived_server():
    server = LocalKinesisServer()
    with pytest.MonkeyPatch.context() as env:  # only this server's: others started meanwhile keep 5 minutes
        env.setenv(SUBSCRIPTION_SECONDS_VARIABLE, str(LIFETIME))
        server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def unpatched_moto():
    with LocalKinesisServer(patched=False) as server:
        yield server


@contextlib.asynccontextmanager
async def serving(endpoint: str, patched: bool):
    """(backend, stream factory, endpoint URL, patched?) for one server."""
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as backend:
        streams = StreamFactory(backend)
        yield SimpleNamespace(backend=backend, streams=streams, endpoint=endpoint, patched=patched)
        await streams.cleanup()


@pytest.fixture(params=["patched", "unpatched"])
async def server(request, short_lived_server, unpatched_moto):
    """The patched server with short subscriptions, or unpatched moto."""
    patched = request.param == "patched"
    async with serving((short_lived_server if patched else unpatched_moto).endpoint_url, patched) as served:
        yield served


@pytest.fixture(params=["patched", "unpatched"])
async def five_minute_server(request, local_kinesis, unpatched_moto):
    """The patched server with AWS's 5-minute subscriptions, or unpatched moto."""
    patched = request.param == "patched"
    async with serving((local_kinesis if patched else unpatched_moto).endpoint_url, patched) as served:
        yield served


def expect_missing(missing: bool, patched: bool, what: str) -> None:
    if patched:
        assert not missing, f"patched server lacks: {what}"
    else:
        assert missing, f"moto now has '{what}': console/localserver/subscribe.py may be obsolete"


async def raw_subscription(
    endpoint: str, params: dict, *, messages: int = 2, timeout: float = 5.0, target: str = TARGET
):
    """SubscribeToShard made with h2 directly, read until `messages` messages, the stream's end or the
    connection's. Returns status (None: no HTTP/2 answer), messages as (headers, JSON payload), the
    error body, and whether the stream ended."""
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    from botocore.eventstream import EventStreamBuffer

    host, port = endpoint.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    stream_id = connection.get_next_available_stream_id()
    headers = [(":method", "POST"), (":authority", f"{host}:{port}"), (":scheme", "http"), (":path", "/")]
    headers += [("x-amz-target", target), ("content-type", "application/x-amz-json-1.1")]
    connection.send_headers(stream_id, headers)
    connection.send_data(stream_id, json.dumps(params).encode(), end_stream=True)
    writer.write(connection.data_to_send())
    answer = SimpleNamespace(status=None, messages=[], error=None, ended=False)
    decoder, error_body = EventStreamBuffer(), b""
    try:
        async with asyncio.timeout(timeout):
            while len(answer.messages) < messages and not answer.ended:
                data = await reader.read(65536)
                if not data:
                    break
                try:
                    events = connection.receive_data(data)
                except h2.exceptions.ProtocolError:  # an HTTP/1.1 answer to the preface
                    break
                for event in events:
                    if isinstance(event, h2.events.ResponseReceived):
                        answer.status = int(dict(event.headers)[":status"])
                    elif isinstance(event, h2.events.DataReceived):
                        connection.acknowledge_received_data(event.flow_controlled_length, stream_id)
                        if answer.status != 200:
                            error_body += event.data
                            continue
                        decoder.add_data(event.data)
                        for message in decoder:
                            payload = json.loads(message.payload) if message.payload else None
                            answer.messages.append((message.headers, payload))
                    elif isinstance(event, h2.events.StreamEnded):
                        answer.ended = True
                writer.write(connection.data_to_send())
    except TimeoutError:
        pass
    finally:
        writer.close()
    answer.error = json.loads(error_body) if error_body else None
    return answer


async def put(backend, stream: str, first: int, count: int) -> list[dict]:
    entries = [{"Data": json.dumps({"n": n}).encode(), "PartitionKey": f"k{n}"} for n in range(first, first + count)]
    return (await backend.put_records(stream, entries))["Records"]


async def one_shard_with_consumer(server, name: str = "reader") -> tuple[str, str, str]:
    """(stream, its one shard, an ACTIVE consumer's ARN)."""
    stream = await server.streams(1)
    arn = (await server.backend.describe_stream_summary(stream)).arn
    consumer = await server.backend.register_stream_consumer(arn, name)
    shard = (await server.backend.all_shards(stream))[0].shard_id
    return stream, shard, consumer.arn


def request(consumer: str, shard: str, position: dict) -> dict:
    return {"ConsumerARN": consumer, "ShardId": shard, "StartingPosition": position}


def numbers(records: list[dict]) -> list[int]:
    return [json.loads(base64.b64decode(record["Data"]))["n"] for record in records]


async def events_until(backend, consumer: str, shard: str, position: dict, *, records: int, timeout: float = 10.0):
    """SubscribeToShardEvent payloads through kconsole's client until `records` records came (or the end)."""
    events = []
    async with asyncio.timeout(timeout):
        async with backend.subscriptions().subscribe(consumer, shard, position) as stream:
            async for event in stream:
                events.append(event)
                if sum(len(e["Records"]) for e in events) >= records or event.get("ChildShards"):
                    break
    return events


def records_of(events: list[dict]) -> list[int]:
    return [json.loads(record["Data"])["n"] for event in events for record in event["Records"]]


# ---- the event stream --------------------------------------------------------------------------------


async def test_an_initial_response_then_the_shards_records_in_order(server):
    stream, shard, consumer = await one_shard_with_consumer(server)
    stored = await put(server.backend, stream, 0, 30)

    answer = await raw_subscription(server.endpoint, request(consumer, shard, {"Type": "TRIM_HORIZON"}))

    expect_missing(answer.status is None, server.patched, "SubscribeToShard over HTTP/2")
    if server.patched:
        assert answer.status == 200
        (first, _), (second, event) = answer.messages[:2]
        assert first[":event-type"] == "initial-response" and first[":message-type"] == "event"
        assert second[":event-type"] == "SubscribeToShardEvent"
        assert numbers(event["Records"]) == list(range(30))
        assert [r["SequenceNumber"] for r in event["Records"]] == [r["SequenceNumber"] for r in stored]
        assert event["ContinuationSequenceNumber"] == stored[-1]["SequenceNumber"]
        assert event["MillisBehindLatest"] == 0


async def test_starting_positions_as_get_shard_iterator_has_them(server):
    stream, shard, consumer = await one_shard_with_consumer(server)
    first = await put(server.backend, stream, 0, 10)
    await asyncio.sleep(0.05)
    moment = time.time()
    await put(server.backend, stream, 10, 10)
    positions = {
        "AT_SEQUENCE_NUMBER": ({"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": first[4]["SequenceNumber"]}, 4),
        "AFTER_SEQUENCE_NUMBER": ({"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": first[4]["SequenceNumber"]}, 5),
        "AT_TIMESTAMP": ({"Type": "AT_TIMESTAMP", "Timestamp": moment}, 10),
    }
    read = {}
    for kind, (position, start) in positions.items():
        with contextlib.suppress(BackendError):  # unpatched: waitress drops the connection
            read[kind] = records_of(await events_until(server.backend, consumer, shard, position, records=20 - start))
    expect_missing(not read, server.patched, "SubscribeToShard's starting positions")
    if server.patched:
        assert read == {kind: list(range(start, 20)) for kind, (_, start) in positions.items()}


async def test_latest_starts_after_the_last_record_and_new_records_are_pushed_at_once(server):
    stream, shard, consumer = await one_shard_with_consumer(server)
    await put(server.backend, stream, 0, 5)
    latencies, pushed = [], []
    try:
        async with asyncio.timeout(8):
            async with server.backend.subscriptions().subscribe(consumer, shard, {"Type": "LATEST"}) as events:
                put_at = None
                async for event in events:
                    if event["Records"]:
                        latencies.append(time.monotonic() - put_at)
                        pushed.extend(json.loads(record["Data"])["n"] for record in event["Records"])
                    if len(pushed) >= 3:
                        break
                    put_at = time.monotonic()
                    await put(server.backend, stream, 5 + len(pushed), 1)
    except BackendError:  # unpatched: waitress drops the connection
        pass
    expect_missing(not pushed, server.patched, "records pushed to a subscription")
    if server.patched:
        assert pushed == [5, 6, 7], "LATEST: only records stored after the subscription began"
        assert max(latencies) < 0.15, f"a stored record reaches its subscription at once (took {latencies})"


async def test_a_closed_shards_last_event_names_its_children_and_ends_the_subscription(server):
    stream, parent, consumer = await one_shard_with_consumer(server)
    await put(server.backend, stream, 0, 20)
    await server.backend.split_shard(stream, parent, 1 << 127)
    await server.backend.wait_for_active(stream)

    answer = await raw_subscription(server.endpoint, request(consumer, parent, {"Type": "TRIM_HORIZON"}), messages=5)

    expect_missing(answer.status is None, server.patched, "ChildShards at a closed shard's end")
    if server.patched:
        assert answer.ended, "the subscription ends at the shard's end"
        last = answer.messages[-1][1]
        assert numbers([r for _, event in answer.messages[1:] for r in event["Records"]]) == list(range(20))
        assert last.get("ContinuationSequenceNumber") is None
        children = {child["ShardId"] for child in last["ChildShards"]}
        shards = {shard.shard_id for shard in await server.backend.all_shards(stream)}
        assert children == shards - {parent} and len(children) == 2
        assert all(child["ParentShards"] == [parent] for child in last["ChildShards"])


async def test_a_subscription_ends_when_its_time_is_up(server):
    _stream, shard, consumer = await one_shard_with_consumer(server)

    began = time.monotonic()
    answer = await raw_subscription(
        server.endpoint, request(consumer, shard, {"Type": "LATEST"}), messages=100, timeout=LIFETIME + 3
    )

    expect_missing(answer.status is None, server.patched, "a subscription's lifetime")
    if server.patched:
        assert answer.ended
        assert LIFETIME - 0.1 <= time.monotonic() - began < LIFETIME + 1.0
        assert [headers[":event-type"] for headers, _ in answer.messages][:2] == [
            "initial-response",
            "SubscribeToShardEvent",
        ]


# ---- errors as AWS answers them --------------------------------------------------------------------


async def test_a_second_subscription_within_5_s_is_refused_and_a_later_one_takes_over(five_minute_server):
    server = five_minute_server
    _stream, shard, consumer = await one_shard_with_consumer(server)
    latest = request(consumer, shard, {"Type": "LATEST"})
    began = time.monotonic()
    first = asyncio.create_task(raw_subscription(server.endpoint, latest, messages=100, timeout=TAKEOVER_SECONDS + 3))
    await asyncio.sleep(0.3)

    second = await raw_subscription(server.endpoint, latest)

    expect_missing(second.status is None, server.patched, "ResourceInUseException for a second subscription")
    if not server.patched:
        await first
        return
    assert (second.status, second.error["__type"]) == (400, "ResourceInUseException")
    with pytest.raises(ResourceInUse):  # as kconsole's client reports it
        await events_until(server.backend, consumer, shard, {"Type": "LATEST"}, records=1)
    await asyncio.sleep(began + TAKEOVER_SECONDS + 0.2 - time.monotonic())
    third = await raw_subscription(server.endpoint, latest)
    assert third.status == 200 and third.messages[1][0][":event-type"] == "SubscribeToShardEvent"
    taken = await first
    assert taken.ended
    headers, _payload = taken.messages[-1]
    assert (headers[":message-type"], headers[":exception-type"]) == ("exception", "ResourceInUseException")


async def test_unknown_consumers_and_shards_are_resource_not_found(server):
    _stream, shard, consumer = await one_shard_with_consumer(server)
    other, other_shard, _ = await one_shard_with_consumer(server, "elsewhere")
    await server.backend.split_shard(other, other_shard, 1 << 127)  # a shard id the first stream lacks
    await server.backend.wait_for_active(other)
    missing_shard = (await server.backend.all_shards(other))[-1].shard_id

    answers = [
        await raw_subscription(server.endpoint, request(consumer + "x", shard, {"Type": "LATEST"})),
        await raw_subscription(server.endpoint, request(consumer, missing_shard, {"Type": "LATEST"})),
    ]

    expect_missing(answers[0].status is None, server.patched, "ResourceNotFoundException for SubscribeToShard")
    if server.patched:
        assert [(a.status, a.error["__type"]) for a in answers] == [(400, "ResourceNotFoundException")] * 2
        assert missing_shard in answers[1].error["message"]
        with pytest.raises(StreamNotFound):  # as kconsole's client reports it
            await events_until(server.backend, consumer + "x", shard, {"Type": "LATEST"}, records=1)


async def test_bad_starting_positions_are_invalid_argument(server):
    stream, shard, consumer = await one_shard_with_consumer(server)
    await put(server.backend, stream, 0, 3)
    bad = [
        {"Type": "AT_SEQUENCE_NUMBER"},
        {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": "1"},  # below the shard's first
        {"Type": "AT_TIMESTAMP"},
        {"Type": "AT_TIMESTAMP", "Timestamp": "yesterday"},
    ]

    answers = [await raw_subscription(server.endpoint, request(consumer, shard, position)) for position in bad]

    expect_missing(answers[0].status is None, server.patched, "InvalidArgumentException for SubscribeToShard")
    if server.patched:
        assert [(a.status, a.error["__type"]) for a in answers] == [(400, "InvalidArgumentException")] * len(bad)
        # What the model itself rules out is refused at AWS's front door, as a ValidationException.
        malformed = [{"Type": "FIRST"}, {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": "not-a-number"}]
        for position in malformed:
            answer = await raw_subscription(server.endpoint, request(consumer, shard, position))
            assert (answer.status, answer.error["__type"]) == (400, "ValidationException")


async def test_a_consumer_deregistered_mid_subscription_gets_an_exception_event(server):
    stream, shard, consumer = await one_shard_with_consumer(server)
    reading = asyncio.create_task(
        raw_subscription(server.endpoint, request(consumer, shard, {"Type": "LATEST"}), messages=100, timeout=4)
    )
    await asyncio.sleep(0.3)
    arn = (await server.backend.describe_stream_summary(stream)).arn
    await server.backend.deregister_stream_consumer(arn, "reader")

    answer = await reading

    expect_missing(answer.status is None, server.patched, "an exception event when the consumer goes")
    if server.patched:
        headers, payload = answer.messages[-1]
        assert answer.ended
        assert (headers[":message-type"], headers[":exception-type"]) == ("exception", "ResourceNotFoundException")
        assert consumer in payload["message"]


async def test_other_calls_over_http2_are_refused_and_http11_is_unchanged(server):
    stream, _, _ = await one_shard_with_consumer(server)

    answer = await raw_subscription(server.endpoint, {"StreamName": stream}, target="Kinesis_20131202.ListShards")

    expect_missing(answer.status is None, server.patched, "HTTP/2 on the embedded server's port")
    if server.patched:
        assert (answer.status, answer.error["__type"]) == (400, "UnknownOperationException")
    # HTTP/1.1 on the same port serves as before, on both servers.
    assert len(await server.backend.all_shards(stream)) == 1
