"""SubscribeToShard over HTTP/2: the one Kinesis read botocore cannot make (it speaks HTTP/1.1 only).

`SubscribeTransport.subscribe(consumer_arn, shard_id, starting_position)` is an async context manager
giving an async iterator of SubscribeToShardEvent payloads, shaped as botocore shapes GetRecords'
answer (Data as bytes, ApproximateArrivalTimestamp as a datetime), so records from either path decode
the same way. It ends when the server ends the subscription (AWS does after 5 minutes); a dropped
connection, an exception event or an error status raise a ConsoleError (ResourceInUse when another
subscription holds the consumer's shard). Pacing, continuation and lineage are console.read.efo's.

Nothing here is hand-written protocol: the request is signed by botocore's SigV4Auth with the
credentials of the backend's own session, the event stream is split into messages by botocore's
EventStreamBuffer and each message parsed against the service model's event-stream shape by botocore's
EventStreamJSONParser (errors by its JSONParser, then translated as every other call's errors), and
HTTP/2 framing, HPACK and flow control are the `h2` library's.

Why h2 (hyper's sans-I/O HTTP/2 state machine, the one httpx and many servers use) over the
alternatives, measured against kinesis-mock 0.6.2 on this machine:
- httpx[http2] (httpcore over h2) reads kinesis-mock's small events but not a 500-record one: the
  read stalls until it times out. kinesis-mock sends each event as a single DATA frame of any size
  (479 KB for a 1,500-record event), beyond the 16 KiB frame and 64 KiB window httpcore advertises, and
  httpcore's HTTP/2 settings cannot be changed. With h2 directly the connection's first SETTINGS ask
  for the largest frames and a 16 MiB window, and every event arrives.
- awscrt (AWS's native client, 0.38) is a 12 MB native library whose HTTP/2 API runs callbacks on its
  own event-loop threads, to be bridged into asyncio; `import awscrt.http` took 2-3x as long as
  `import h2.connection` here (-X importtime on a loaded 2-core machine: 250-390 ms against 60-140 ms;
  `import httpx` 490-700 ms).
- h2 is pure Python, already the HTTP/2 of httpx[http2], and leaves the socket to asyncio: one
  connection per subscription, TLS by the standard library with ALPN "h2", cleartext by prior
  knowledge (h2c) for a local http:// endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from console.backend.errors import translate
from console.errors import BackendError, ConsoleError, EndpointUnreachable

TARGET = "Kinesis_20131202.SubscribeToShard"
CONTENT_TYPE = "application/x-amz-json-1.1"
# The receive window advertised for each subscription and the connection: an event holds up to
# 10,000 records (up to 10 MiB of data, more once base64-encoded in JSON), and a server that waits for
# a WINDOW_UPDATE mid-event (kinesis-mock does) stalls. Acknowledged as the events are taken.
RECEIVE_WINDOW = 16 * 1024 * 1024
# The largest frame HTTP/2 allows: kinesis-mock sends each event as one DATA frame, whatever size the
# client asked for (a 3,000-record event is a 479 KB frame against the protocol's default 16 KiB).
MAX_FRAME_SIZE = (1 << 24) - 1
READ_CHUNK = 256 * 1024
# AWS sends an event at least every 5 seconds (records or a heartbeat with MillisBehindLatest); a
# subscription silent for this long is taken as a dead connection and resubscribed.
SILENCE_TIMEOUT = 30.0
UNSUPPORTED = "this endpoint does not serve SubscribeToShard over HTTP/2"


class SubscribeTransport:
    """Opens SubscribeToShard subscriptions on one endpoint with one set of credentials."""

    def __init__(
        self,
        *,
        endpoint_url: str,
        region: str,
        credentials: Callable[[], Awaitable[Any]],
        service_model: Any,
        where: str,
        connect_timeout: float = 10.0,
        verify: bool | str = True,
        silence_timeout: float = SILENCE_TIMEOUT,
        timestamp_parser: Callable[[Any], Any] | None = None,
    ) -> None:
        parts = urlsplit(endpoint_url)
        self.endpoint_url = endpoint_url
        self.region = region
        self.where = where
        self.tls = parts.scheme.lower() == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.tls else 80)
        self.authority = parts.netloc
        self._credentials = credentials  # () -> botocore credentials with access_key/secret_key/token
        self._operation = service_model.operation_model("SubscribeToShard")
        self._connect_timeout = connect_timeout
        self._verify = verify
        self.silence_timeout = silence_timeout
        self._timestamp_parser = timestamp_parser  # the one GetRecords answers are parsed with (None: botocore's)

    async def check(self) -> None:
        """Fail with one line, before anything is registered, when the endpoint does not speak HTTP/2: the
        connection is opened and the server's SETTINGS awaited."""
        import h2.events

        connection = await self._connect()
        try:
            while True:
                for event in await connection.receive():
                    if isinstance(event, h2.events.RemoteSettingsChanged):
                        return
        except EndpointUnreachable:
            # An HTTP/1.1 server that drops a connection opening with the HTTP/2 preface.
            raise BackendError(f"{UNSUPPORTED} ({self.where})", code="unsupported") from None
        finally:
            connection.close()

    @contextlib.asynccontextmanager
    async def subscribe(
        self, consumer_arn: str, shard_id: str, starting_position: dict[str, Any]
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        body = json.dumps(
            {"ConsumerARN": consumer_arn, "ShardId": shard_id, "StartingPosition": starting_position}
        ).encode()
        headers = await self._signed_headers(body)
        connection = await self._connect()
        try:
            stream_id = connection.h2.get_next_available_stream_id()
            connection.h2.send_headers(stream_id, headers)
            connection.h2.send_data(stream_id, body, end_stream=True)
            connection.h2.increment_flow_control_window(RECEIVE_WINDOW - 65_535)
            await connection.flush()
            yield self._events(connection, stream_id)
        finally:
            connection.close()

    # --- the request ---------------------------------------------------------------------------------

    async def _signed_headers(self, body: bytes) -> list[tuple[str, str]]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = await self._credentials()
        request = AWSRequest(
            method="POST",
            url=self.endpoint_url.rstrip("/") + "/",
            data=body,
            headers={"X-Amz-Target": TARGET, "Content-Type": CONTENT_TYPE},
        )
        SigV4Auth(credentials, "kinesis", self.region).add_auth(request)
        signed = [(name.lower(), value) for name, value in request.headers.items() if name.lower() != "host"]
        return [
            (":method", "POST"),
            (":authority", self.authority),
            (":scheme", "https" if self.tls else "http"),
            (":path", "/"),
            *signed,
        ]

    async def _connect(self) -> _Connection:
        import h2.config
        import h2.connection
        import h2.settings

        context = None
        if self.tls:
            context = ssl.create_default_context(cafile=self._verify if isinstance(self._verify, str) else None)
            if self._verify is False:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(["h2"])
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host, self.port, ssl=context, server_hostname=self.host if context else None
                ),
                self._connect_timeout,
            )
        except ssl.SSLError as error:
            raise EndpointUnreachable(f"TLS handshake with {self.endpoint_url} failed ({error.reason})") from None
        except (OSError, TimeoutError) as error:
            raise EndpointUnreachable(
                f"cannot reach {self.endpoint_url}: {error.strerror or error or 'connection timed out'}",
                request_sent=False,
            ) from None
        if context is not None and writer.get_extra_info("ssl_object").selected_alpn_protocol() != "h2":
            writer.close()
            raise BackendError(f"{UNSUPPORTED} ({self.where} offers no h2 over TLS)", code="unsupported")
        h2_connection = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        # The window goes in the first SETTINGS frame, before any stream exists.
        h2_connection.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: RECEIVE_WINDOW,
                h2.settings.SettingCodes.MAX_FRAME_SIZE: MAX_FRAME_SIZE,
            },
        )
        h2_connection.max_inbound_frame_size = MAX_FRAME_SIZE
        h2_connection.initiate_connection()
        connection = _Connection(reader, writer, h2_connection, self)
        await connection.flush()
        return connection

    # --- the answer ----------------------------------------------------------------------------------

    async def _events(self, connection: _Connection, stream_id: int) -> AsyncIterator[dict[str, Any]]:
        import h2.events
        from botocore.eventstream import EventStreamBuffer

        status: int | None = None
        error_body = bytearray()
        messages = EventStreamBuffer()
        while True:
            for event in await connection.receive():
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
                    status = int(
                        next((value for name, value in event.headers or [] if name in (b":status", ":status")), "0")
                    )
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                    connection.h2.acknowledge_received_data(event.flow_controlled_length, stream_id)
                    if status != 200:
                        error_body += event.data
                        continue
                    messages.add_data(event.data)
                    for message in messages:
                        payload = self._parse(message)
                        if payload is not None:
                            yield payload
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                    if status != 200:
                        raise self._error_answer(status, bytes(error_body))
                    return  # the server ended the subscription (AWS: after 5 minutes)
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream_id:
                    raise EndpointUnreachable(f"{self.where} reset the subscription (HTTP/2 error {event.error_code})")
                elif isinstance(event, h2.events.ConnectionTerminated):
                    raise EndpointUnreachable(f"{self.where} closed the subscription's connection")
            await connection.flush()

    def _parse(self, message: Any) -> dict[str, Any] | None:
        """A SubscribeToShardEvent's payload, shaped by botocore; None for the initial response (AWS sends
        one first, kinesis-mock none). An exception event raises as the call's error would."""
        from botocore.exceptions import ClientError
        from botocore.parsers import EventStreamJSONParser

        if message.headers.get(":event-type") == "initial-response":
            return None
        response = message.to_response_dict()
        parser = EventStreamJSONParser(timestamp_parser=self._timestamp_parser)
        parsed = parser.parse(response, self._operation.output_shape.members["EventStream"])
        if response["status_code"] != 200:
            raise self._translated(ClientError(parsed, "SubscribeToShard"))
        event: dict[str, Any] | None = parsed.get("SubscribeToShardEvent")
        return event

    def _error_answer(self, status: int | None, body: bytes) -> ConsoleError:
        from botocore.exceptions import ClientError
        from botocore.parsers import JSONParser

        if status in (None, 505) or (status == 400 and not body):
            return BackendError(f"{UNSUPPORTED} ({self.where} answered HTTP {status})", code="unsupported")
        parsed = JSONParser().parse({"status_code": status, "headers": {}, "body": body}, self._operation.output_shape)
        return self._translated(ClientError(parsed, "SubscribeToShard"))

    def _translated(self, error: Exception) -> ConsoleError:
        translated = translate(error, operation="SubscribeToShard", where=self.where, endpoint_url=self.endpoint_url)
        return translated if translated is not None else BackendError(str(error))


class _Connection:
    """One HTTP/2 connection: asyncio's streams below, h2's state machine above."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, h2: Any, owner: SubscribeTransport):
        self.reader = reader
        self.writer = writer
        self.h2 = h2
        self.owner = owner

    async def flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.writer.write(data)
            try:
                await self.writer.drain()
            except OSError as error:
                raise EndpointUnreachable(
                    f"{self.owner.where} closed the subscription's connection ({error})"
                ) from None

    async def receive(self) -> list[Any]:
        import h2.exceptions

        try:
            data = await asyncio.wait_for(self.reader.read(READ_CHUNK), self.owner.silence_timeout)
        except TimeoutError:
            raise EndpointUnreachable(
                f"no event from {self.owner.where} in {self.owner.silence_timeout:.0f} s (SubscribeToShard)"
            ) from None
        except OSError as error:
            raise EndpointUnreachable(f"{self.owner.where} closed the subscription's connection ({error})") from None
        if not data:
            raise EndpointUnreachable(f"{self.owner.where} closed the subscription's connection")
        try:
            events: list[Any] = self.h2.receive_data(data)
            return events
        except h2.exceptions.ProtocolError:
            # An HTTP/1.1 server answers the HTTP/2 preface with an HTTP/1.1 status line.
            raise BackendError(f"{UNSUPPORTED} ({self.owner.where})", code="unsupported") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.h2.close_connection()
            self.writer.write(self.h2.data_to_send())
        self.writer.close()
