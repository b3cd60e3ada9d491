"""SubscribeToShard on the embedded server, served as AWS serves it: over HTTP/2, as an event stream.

moto has no SubscribeToShard, and its server (waitress) speaks HTTP/1.1 only. A client opens the
subscription with cleartext HTTP/2 by prior knowledge (h2c) on the server's own port: main's waitress
channel sees the connection preface (`PREFACE`) and hands the socket over (`hand_over`), and every
other connection stays waitress's. The connections handed over are served here, on one asyncio loop
in a thread of its own, with the `h2` library's state machine (framing, HPACK, flow control).

A subscription answers as AWS does:
- request errors as the call's JSON error answer (HTTP 400, moto's own exception classes): an unknown
  consumer or shard (ResourceNotFoundException), a consumer not ACTIVE or a second subscription to the
  same consumer and shard within `TAKEOVER_SECONDS` of the first (ResourceInUseException), a bad
  StartingPosition (InvalidArgumentException); a subscription older than that is taken over, and gets a
  ResourceInUseException event;
- then an `initial-response` event, and `SubscribeToShardEvent`s: the shard's records from the
  StartingPosition on (TRIM_HORIZON, LATEST, AT/AFTER_SEQUENCE_NUMBER, AT_TIMESTAMP), at most
  `EVENT_RECORDS_MAX` a event, each with `ContinuationSequenceNumber` and `MillisBehindLatest`; an event
  as soon as records are stored (records.on_stored wakes the loop), one every `HEARTBEAT_SECONDS`
  otherwise, and a final one with `ChildShards` (and no continuation) once a closed shard is read to
  its end;
- the subscription ends after 5 minutes (`KCONSOLE_LOCAL_SUBSCRIPTION_SECONDS`, shorter in tests), at
  the shard's end, or with an exception event when the consumer, stream or shard goes away.

Records are read from moto's models under records.lock(), by the patched Shard.get_records
(fixes.py): the same bisection GetRecords uses. Events are framed by moto's own event-stream encoder
(moto.core.eventstream, which moto's serializer uses; botocore only decodes event streams), and the
initial response is moto's; the event's JSON is written here, as the short path writes GetRecords',
with each record's data as moto stores it (base64 already).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import socket
import threading
import time
import uuid
from datetime import datetime
from typing import Any

from console.localserver import records
from console.localserver.validation import check_member, in_use, invalid, not_found

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # how an HTTP/2 client opens a connection (RFC 9113, 3.4)
TARGET = "Kinesis_20131202.SubscribeToShard"
EVENT_STREAM = "application/vnd.amazon.eventstream"
JSON_11 = "application/x-amz-json-1.1"
SUBSCRIPTION_SECONDS_VARIABLE = "KCONSOLE_LOCAL_SUBSCRIPTION_SECONDS"
SUBSCRIPTION_SECONDS = 300.0  # AWS ends every subscription after 5 minutes
TAKEOVER_SECONDS = 5.0  # AWS: a second subscription within 5 s is refused; after that it takes over
HEARTBEAT_SECONDS = 5.0  # an event at least this often, records or not (clients take silence as a dead link)
# Between wake-ups by a put, how often a subscription looks at its shard anyway: a split closing it, a
# takeover, the stream or consumer deleted, records stored by a path that does not wake it.
POLL_SECONDS = 0.2
EVENT_RECORDS_MAX = 10_000  # as GetRecords (and its 10 MiB, which Shard.get_records keeps)
CONSUMER_ARN = re.compile(r"arn:[^:]+:kinesis:([^:]+):(\d{12}):stream/[^/]+/consumer/[^/:]+(:\d+)?")


def subscription_seconds() -> float:
    """How long a subscription lasts: 5 minutes, or the server's KCONSOLE_LOCAL_SUBSCRIPTION_SECONDS."""
    try:
        seconds = float(os.environ.get(SUBSCRIPTION_SECONDS_VARIABLE) or SUBSCRIPTION_SECONDS)
    except ValueError:
        return SUBSCRIPTION_SECONDS
    return seconds if seconds > 0 else SUBSCRIPTION_SECONDS


def hand_over(sock: socket.socket, received: bytes) -> None:
    """Serve an HTTP/2 connection whose first bytes (`received`, the preface and what followed) are read."""
    _hub().adopt(sock, received)


_the_hub: _Hub | None = None
_hub_lock = threading.Lock()


def _hub() -> _Hub:
    global _the_hub
    with _hub_lock:
        if _the_hub is None:
            _the_hub = _Hub()
        return _the_hub


class _Hub:
    """The asyncio loop serving every HTTP/2 connection, and the live subscriptions by consumer and shard."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.lifetime = subscription_seconds()
        self.live: dict[tuple[str, str], _Subscription] = {}
        self._changed = asyncio.Event()
        self._wake_pending = False
        threading.Thread(target=self._run, name="subscribe-to-shard", daemon=True).start()
        records.on_stored = self.stored

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def adopt(self, sock: socket.socket, received: bytes) -> None:
        self.loop.call_soon_threadsafe(lambda: self.loop.create_task(self._serve(sock, received)))

    async def _serve(self, sock: socket.socket, received: bytes) -> None:
        _, connection = await self.loop.connect_accepted_socket(lambda: _Connection(self), sock)
        connection.data_received(received)

    def stored(self) -> None:
        """Records were stored (any thread): wake the subscriptions, once however many puts come first."""
        if self.live and not self._wake_pending:
            self._wake_pending = True
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._wake_pending = False
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def changes(self, timeout: float) -> None:
        """Until records are stored or `timeout` passes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), max(timeout, 0.0))


class _Connection(asyncio.Protocol):
    """One HTTP/2 connection: asyncio's transport below, h2's server state machine above."""

    def __init__(self, hub: _Hub) -> None:
        import h2.config
        import h2.connection

        self.hub = hub
        self.h2 = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        self.transport: asyncio.Transport | None = None
        self.requests: dict[int, tuple[dict[str, str], bytearray]] = {}
        self.tasks: dict[int, asyncio.Task] = {}
        self.window_opened = asyncio.Event()  # a WINDOW_UPDATE or new SETTINGS from the client
        self.writable = asyncio.Event()  # the transport's buffer below its high-water mark
        self.writable.set()
        self.closed = False

    # --- asyncio's side ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.h2.initiate_connection()
        self.flush()

    def data_received(self, data: bytes) -> None:
        import h2.events
        import h2.exceptions

        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self._close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.requests[event.stream_id] = ({_text(n): _text(v) for n, v in event.headers or []}, bytearray())
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in self.requests:
                    self.requests[event.stream_id][1].extend(event.data)
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id in self.requests:
                headers, body = self.requests.pop(event.stream_id)
                task = asyncio.get_running_loop().create_task(self._answer(event.stream_id, headers, bytes(body)))
                self.tasks[event.stream_id] = task
                task.add_done_callback(functools.partial(self._forget, event.stream_id))
            elif isinstance(event, h2.events.StreamReset):
                running = self.tasks.get(event.stream_id)
                if running is not None:
                    running.cancel()
            elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                self.window_opened.set()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._close()
        self.flush()

    def _forget(self, stream_id: int, _task: asyncio.Task) -> None:
        self.tasks.pop(stream_id, None)

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002 - asyncio.Protocol's signature
        self.closed = True
        for task in list(self.tasks.values()):
            task.cancel()
        self.window_opened.set()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.closed:
            self.transport.write(data)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # --- one request ---------------------------------------------------------------------------------

    async def _answer(self, stream_id: int, headers: dict[str, str], body: bytes) -> None:
        import h2.exceptions
        from moto.core.exceptions import JsonRESTError

        subscription: _Subscription | None = None
        try:
            try:
                if headers.get(":method") != "POST" or headers.get("x-amz-target") != TARGET:
                    raise JsonRESTError(
                        "UnknownOperationException",
                        "this server answers only SubscribeToShard over HTTP/2; every other call over HTTP/1.1",
                    )
                with records.lock():
                    subscription = _Subscription.opened(self.hub, _params(body))
            except JsonRESTError as error:
                await self._error_answer(stream_id, error)
                return
            self.h2.send_headers(
                stream_id,
                [(":status", "200"), ("content-type", EVENT_STREAM), ("x-amzn-requestid", str(uuid.uuid4()))],
            )
            await self.send(stream_id, _initial_response())
            await subscription.run(self, stream_id)
        except (h2.exceptions.H2Error, ConnectionError):
            pass  # the client went away or reset the stream: nothing left to tell it
        finally:
            if subscription is not None:
                subscription.finish()

    async def _error_answer(self, stream_id: int, error: Any) -> None:
        body = error.get_body().encode()
        self.h2.send_headers(
            stream_id,
            [
                (":status", str(error.code)),
                ("content-type", JSON_11),
                ("content-length", str(len(body))),
                ("x-amzn-errortype", error.error_type),
                ("x-amzn-requestid", str(uuid.uuid4())),
            ],
        )
        await self.send(stream_id, body, end=True)

    async def send(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        """DATA frames within the client's flow-control window and frame size, waiting for more window."""
        view = memoryview(data)
        while view:
            await self.writable.wait()
            if self.closed:
                raise ConnectionError("the client closed the connection")
            room = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if room <= 0:
                self.window_opened.clear()
                await self.window_opened.wait()
                continue
            chunk, view = view[:room], view[room:]
            self.h2.send_data(stream_id, bytes(chunk))
            self.flush()
        if end:
            self.h2.end_stream(stream_id)
            self.flush()


class _Subscription:
    """One consumer's subscription to one shard: where it is in the shard, until when it lasts."""

    def __init__(self, hub: _Hub, consumer_arn: str, shard_id: str, after: int) -> None:
        self.hub = hub
        self.key = (consumer_arn, shard_id)
        self.shard_id = shard_id
        self.after = after  # the sequence number the next event starts after (0: the shard's start)
        self.started = time.monotonic()
        self.deadline = self.started + hub.lifetime
        self.taken_over = False

    @classmethod
    def opened(cls, hub: _Hub, params: dict[str, Any]) -> _Subscription:
        """A subscription as the request asks, checked as AWS checks it (under the lock)."""
        check_member("SubscribeToShard", "ShardId", params.get("ShardId"))
        check_member("SubscribeToShard", "StartingPosition", params.get("StartingPosition"))
        arn = params.get("ConsumerARN")
        if not isinstance(arn, str) or not CONSUMER_ARN.fullmatch(arn):
            raise invalid(f"ConsumerARN {str(arn)[:200]!r} is not an enhanced fan-out consumer's ARN")
        consumer, stream = _consumer(arn)
        status = consumer.to_json().get("ConsumerStatus")
        if status != "ACTIVE":
            raise in_use(f"Consumer {arn} is {status}; subscriptions need an ACTIVE consumer.")
        shard = stream.shards.get(params["ShardId"])
        if shard is None:
            raise not_found(
                f"Shard {params['ShardId']} in stream {stream.stream_name} under account {stream.account_id} "
                "does not exist"
            )
        after = _starting_after(shard, params["StartingPosition"])
        key = (consumer.consumer_arn, shard.shard_id)
        holder = hub.live.get(key)
        if holder is not None:
            if time.monotonic() - holder.started < TAKEOVER_SECONDS:
                raise in_use(
                    f"Another active subscription exists for consumer {arn} and shard {shard.shard_id}; "
                    f"a new one takes it over {TAKEOVER_SECONDS:.0f} s after it began."
                )
            holder.taken_over = True
        subscription = cls(hub, consumer.consumer_arn, shard.shard_id, after)
        hub.live[key] = subscription
        return subscription

    def finish(self) -> None:
        if self.hub.live.get(self.key) is self:
            del self.hub.live[self.key]

    async def run(self, connection: _Connection, stream_id: int) -> None:
        """Events until the subscription ends: its time is up, the shard ends, or an error."""
        from moto.core.exceptions import JsonRESTError

        last_sent = float("-inf")
        while True:
            now = time.monotonic()
            if self.taken_over:
                error = in_use(f"Another subscription to {self.shard_id} with consumer {self.key[0]} took over.")
                await connection.send(stream_id, _exception_event(error), end=True)
                return
            if now >= self.deadline:
                await connection.send(stream_id, b"", end=True)
                return
            try:
                with records.lock():
                    event, more, ended = self._next_event()
            except JsonRESTError as error:
                await connection.send(stream_id, _exception_event(error), end=True)
                return
            if event["Records"] or ended or now - last_sent >= HEARTBEAT_SECONDS:
                await connection.send(stream_id, _event("SubscribeToShardEvent", event), end=ended)
                last_sent = time.monotonic()
            if ended:
                return
            if not more:
                await self.hub.changes(min(POLL_SECONDS, self.deadline - time.monotonic()))

    def _next_event(self) -> tuple[dict[str, Any], bool, bool]:
        """The next event's members, whether more records wait, whether it is the shard's last event."""
        from console.localserver.fixes import child_shards

        stream, shard = self._shard()
        found, last, behind = shard.get_records(str(self.after), EVENT_RECORDS_MAX)
        index = shard.sequence_index
        newest = index[-1] if index else 0
        ended = not shard.is_open and last >= newest
        event: dict[str, Any] = {
            "Records": [
                {
                    "SequenceNumber": str(record.sequence_number),
                    "ApproximateArrivalTimestamp": round(record.created_at, 3),
                    "Data": record.data,  # base64, as moto stores it and as JSON carries a blob
                    "PartitionKey": record.partition_key,
                }
                for record in found
            ],
            "MillisBehindLatest": behind,
        }
        self.after = last
        if ended:
            event["ChildShards"] = child_shards(stream, shard)
        else:
            # Never below the shard's first number: a subscription continued from here stays in the shard.
            event["ContinuationSequenceNumber"] = str(max(last, shard.starting_sequence))
        return event, last < newest, ended

    def _shard(self) -> tuple[Any, Any]:
        """The consumer's stream and the shard, looked up again: either may have been deleted meanwhile."""
        _, stream = _consumer(self.key[0])
        shard = stream.shards.get(self.shard_id)
        if shard is None:
            raise not_found(f"Shard {self.shard_id} in stream {stream.stream_name} no longer exists")
        return stream, shard


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _params(body: bytes) -> dict[str, Any]:
    try:
        params = json.loads(body or b"{}")
    except ValueError:
        params = None
    if not isinstance(params, dict):
        raise invalid("the SubscribeToShard request is not a JSON object")
    return params


def _consumer(arn: str) -> tuple[Any, Any]:
    """moto's consumer with this ARN and its stream, in the account and region the ARN names."""
    from moto.kinesis.models import kinesis_backends

    match = CONSUMER_ARN.fullmatch(arn)
    region, account = (match.group(1), match.group(2)) if match else ("", "")
    try:
        backend = kinesis_backends[account][region]
    except KeyError:
        backend = None
    for stream in backend.streams.values() if backend is not None else ():
        for consumer in stream.consumers:
            if consumer.consumer_arn == arn:
                return consumer, stream
    raise not_found(f"Consumer {arn} under account {account or '?'} not found.")


def _starting_after(shard: Any, position: dict[str, Any]) -> int:
    """The sequence number a StartingPosition starts after (0: the shard's first record on)."""
    kind = position["Type"]
    if kind == "TRIM_HORIZON":
        return 0
    if kind == "LATEST":
        return int(shard.get_max_sequence_number())
    if kind == "AT_TIMESTAMP":
        moment = position.get("Timestamp")
        if moment is None:
            raise invalid("StartingPosition.Timestamp is required for AT_TIMESTAMP")
        try:
            seconds = datetime.fromisoformat(moment).timestamp() if isinstance(moment, str) else float(moment)
        except (TypeError, ValueError):
            raise invalid(f"StartingPosition.Timestamp {moment!r} is not a timestamp") from None
        return int(shard.get_sequence_number_at(seconds))
    number = position.get("SequenceNumber")
    if number is None:
        raise invalid(f"StartingPosition.SequenceNumber is required for {kind}")
    try:
        sequence = int(number)
    except (TypeError, ValueError):
        raise invalid(f"StartingPosition.SequenceNumber {str(number)[:60]!r} is not a sequence number") from None
    end = shard.ending_sequence if not shard.is_open else None
    if sequence < shard.starting_sequence or (end is not None and sequence > end):
        raise invalid(
            f"Invalid StartingSequenceNumber {sequence}: shard {shard.shard_id} holds sequence numbers "
            f"from {shard.starting_sequence}" + (f" to {end}" if end is not None else " on")
        )
    return sequence - 1 if kind == "AT_SEQUENCE_NUMBER" else sequence


# --- the event stream's messages --------------------------------------------------------------------


def _encoded(headers: dict[str, Any], payload: bytes) -> bytes:
    from moto.core.eventstream import EventStreamEncoder

    return EventStreamEncoder().encode_message(headers, payload)


@functools.cache
def _initial_response() -> bytes:
    """moto's initial-response for SubscribeToShard's output (AWS sends one before the first event)."""
    from moto.core.eventstream import EventStream, EventStreamEncoder
    from moto.core.serialize import EventStreamJSONSerializer
    from moto.core.utils import get_service_model

    operation = get_service_model("kinesis").operation_model("SubscribeToShard")
    stream = EventStream({}, operation.output_shape, EventStreamJSONSerializer(operation))
    return EventStreamEncoder().encode_event(stream.get_initial_response())


def _event(event_type: str, members: dict[str, Any]) -> bytes:
    payload = json.dumps(members, separators=(",", ":")).encode()
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return _encoded(headers, payload)


def _exception_event(error: Any) -> bytes:
    """An error after the subscription began, as AWS sends it: an exception message in the stream."""
    payload = json.dumps({"message": error.message}).encode()
    headers = {":exception-type": error.error_type, ":content-type": "application/json", ":message-type": "exception"}
    return _encoded(headers, payload)
