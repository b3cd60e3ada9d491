"""A TCP fault proxy on 127.0.0.1 that sits between kconsole and a real local Kinesis server.

It understands just enough HTTP/1.1 to see where each request ends, so it can fail requests the
way a network does, one request at a time:

    latency        every request waits this long before it is forwarded
    reset_before   the connection is reset before the request is forwarded (nothing was written)
    reset_after    the request is forwarded and answered, then the connection is reset instead of
                   relaying the answer (the write happened; the client never hears of it): with
                   `operations=MUTATING_OPERATIONS`, "drop the reply after the server acted" for
                   every call kconsole makes that changes a stream (`Faults.drop_reply(...)`)
    fail_after     the request is forwarded and answered, and the client is told HTTP 500
                   InternalFailure instead (a server failing after it acted)
    hold_reply     the request is forwarded and answered, then the answer is held `hold_seconds`
                   (more than the client's read timeout) and the connection reset: a read timeout
                   after the server acted
    stall          the request is held `stall_seconds` (less than the client's timeout), then forwarded
    late           the request is held `late_seconds` (more than the client's timeout: the client gives
                   up and resends), then forwarded anyway; the answer goes nowhere
    refuse         every answer closes its connection, and the listener is down `refuse_down` seconds
                   out of every `refuse_period`: new connections are refused (nothing was sent)
    invalid        the proxy answers for the server, refusing the request as an InvalidArgumentException
                   (a server refusing one record; nothing is forwarded)
    unknown        the proxy answers for the server as one that lacks the operation does, with an
                   UnknownOperationException (nothing is forwarded)
    throttle       the proxy answers for the server as a shard over its limits does, with a
                   ProvisionedThroughputExceededException (nothing is forwarded)
    outage()       the listener closes and every open connection is reset for some seconds, like a
                   server restart

Rates are probabilities per request, drawn from a seeded generator; `operations` limits the faults
to requests whose X-Amz-Target names one of them (reads pass untouched when only puts are listed),
`skip` lets that many targeted requests pass first and `limit` caps how many are failed.
`down_after_fault` closes the listener for good after the first fault, like a network that dies
right after a request went out (the client's read-back then fails too). `stats` counts what was
done to how many requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections import Counter
from dataclasses import dataclass

HOST = "127.0.0.1"

# Every call kconsole makes that changes a stream (not the puts: the producer settles those itself).
MUTATING_OPERATIONS = frozenset(
    {
        "SplitShard",
        "MergeShards",
        "UpdateShardCount",
        "CreateStream",
        "DeleteStream",
        "IncreaseStreamRetentionPeriod",
        "DecreaseStreamRetentionPeriod",
        "UpdateStreamMode",
        "StartStreamEncryption",
        "StopStreamEncryption",
        "RegisterStreamConsumer",
        "DeregisterStreamConsumer",
        "EnableEnhancedMonitoring",
        "DisableEnhancedMonitoring",
        "TagResource",
        "UntagResource",
        "PutResourcePolicy",
        "DeleteResourcePolicy",
        "UpdateMaxRecordSize",
        "UpdateStreamRecordDistributionStrategy",
        "CreateChannel",
        "UpdateChannel",
        "DeleteChannel",
        "UpdateStreamWarmThroughput",
        "UpdateAccountSettings",
    }
)


@dataclass
class Faults:
    latency: float = 0.0
    reset_before: float = 0.0
    reset_after: float = 0.0
    stall: float = 0.0
    stall_seconds: float = 0.0
    late: float = 0.0
    late_seconds: float = 0.0
    invalid: float = 0.0
    unknown: float = 0.0
    throttle: float = 0.0
    hold_reply: float = 0.0
    fail_after: float = 0.0
    hold_seconds: float = 0.0
    down_after_fault: bool = False
    refuse_down: float = 0.0
    refuse_period: float = 1.0
    operations: frozenset[str] | None = None  # None: every operation
    skip: int = 0
    limit: int | None = None

    @classmethod
    def lacking(cls, *operations: str) -> Faults:
        """A server that does not know these operations at all."""
        return cls(unknown=1.0, operations=frozenset(operations))

    @classmethod
    def drop_reply(cls, *operations: str, times: int = 1, **more) -> Faults:
        """The server acts on the first `times` of these calls, and their replies are lost."""
        return cls(reset_after=1.0, operations=frozenset(operations), limit=times, **more)


@dataclass
class _Request:
    head: bytes
    body: bytes
    operation: str


class FaultProxy:
    """`async with FaultProxy(upstream_port, Faults(...)) as proxy:` then talk to `proxy.endpoint_url`."""

    def __init__(self, upstream_port: int, faults: Faults | None = None, *, seed: int = 1) -> None:
        self.upstream_port = upstream_port
        self.faults = faults or Faults()
        self.random = random.Random(seed)
        self.port = 0
        self.stats: Counter[str] = Counter()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()
        self._flapper: asyncio.Task | None = None
        self._down = False
        self._flap_lock = asyncio.Lock()

    @property
    def endpoint_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def __aenter__(self) -> FaultProxy:
        await self._listen()
        if self.faults.refuse_down > 0:
            self._flapper = asyncio.create_task(self._flap())
        return self

    async def __aexit__(self, *exc_info) -> None:
        if self._flapper is not None:
            self._flapper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flapper
        self._close_listener()
        for writer in list(self._connections):
            _reset(writer)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- the listener ------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self.port == 0:
            self.port = await self._first_port()
        self._server = await asyncio.start_server(self._serve, HOST, self.port, reuse_address=True)
        self._down = False

    async def _first_port(self) -> int:
        """A port below the kernel's ephemeral range: the listener goes down and comes back on the same
        port, and while it is down an ephemeral port could be handed to some outgoing connection."""
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as port_range:
                low = int(port_range.read().split()[0])
        except (OSError, ValueError, IndexError):
            low = 32768  # Linux's default
        chooser = random.Random()
        for _ in range(200):
            port = chooser.randrange(max(1024, low - 12000), low)
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind((HOST, port))
                except OSError:
                    continue
            return port
        raise OSError("no free port below the ephemeral range")

    def _close_listener(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._down = True

    def down(self) -> None:
        """Like a server that died: new connections refused, open ones reset mid-whatever."""
        self._close_listener()
        for writer in list(self._connections):
            _reset(writer)

    async def up(self) -> None:
        await self._listen()

    async def outage(self, seconds: float) -> None:
        self.stats["outages"] += 1
        self.down()
        await asyncio.sleep(seconds)
        await self.up()

    async def refuse(self, seconds: float) -> None:
        """The listener down for `seconds`, open connections left alone: only new connections fail."""
        async with self._flap_lock:  # never while the flapper has it down: the two would both bind the port
            self._close_listener()
            self.stats["refusing"] += 1
            await asyncio.sleep(seconds)
            await self._listen()

    async def _flap(self) -> None:
        while True:
            await asyncio.sleep(self.faults.refuse_period - self.faults.refuse_down)
            async with self._flap_lock:
                self._close_listener()
                self.stats["refusing"] += 1
                await asyncio.sleep(self.faults.refuse_down)
                await self._listen()

    # ---- one client connection ----------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self._connections.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                if not await self._relay(request, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            return
        finally:
            self._connections.discard(writer)
            self._tasks.discard(task)
            _close(writer)

    async def _relay(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        """Forward one request (or not) and relay its answer (or not). False: the connection is done."""
        faults = self.faults
        self.stats["requests"] += 1
        targeted = faults.operations is None or request.operation in faults.operations
        if targeted:
            self.stats["targeted"] += 1
            if self.stats["targeted"] <= faults.skip or (
                faults.limit is not None and self.stats["faults"] >= faults.limit
            ):
                targeted = False
        draw = self.random.random() if targeted else 1.0
        if faults.latency:
            await asyncio.sleep(faults.latency)
        edge = 0.0
        kinds = (
            ("reset_before", faults.reset_before),
            ("reset_after", faults.reset_after),
            ("stall", faults.stall),
            ("late", faults.late),
            ("invalid", faults.invalid),
            ("unknown", faults.unknown),
            ("throttle", faults.throttle),
            ("hold_reply", faults.hold_reply),
            ("fail_after", faults.fail_after),
        )
        for name, rate in kinds:  # noqa: B007 - the kind drawn is the name the loop stops at, read after it
            edge += rate
            if draw < edge:
                break
        else:
            name = "pass"
        self.stats[name] += 1
        self.stats[f"{name}:{request.operation}"] += 1
        self.stats["faults"] += name != "pass"
        if name in ("invalid", "unknown", "throttle"):
            body = {
                "invalid": b'{"__type":"InvalidArgumentException","message":"refused by the fault proxy"}',
                "unknown": b'{"__type":"UnknownOperationException","message":"unknown operation"}',
                "throttle": b'{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded for shard"}',
            }[name]
            writer.write(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.1\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            return True
        if name == "reset_before":
            _reset(writer)
            if faults.down_after_fault:
                self.down()
            return False
        if name == "stall":
            await asyncio.sleep(faults.stall_seconds)
        if name == "late":
            # The client gives up on this connection meanwhile; deliver anyway, answer nobody.
            await asyncio.sleep(faults.late_seconds)
            await self._forward(request)
            self.stats["late_delivered"] += 1
            _reset(writer)
            return False
        answer = await self._forward(request)
        if answer is None:  # the server itself is gone
            _reset(writer)
            return False
        if name == "reset_after":
            _reset(writer)
            if faults.down_after_fault:
                self.down()
            return False
        if name == "fail_after":
            body = b'{"__type":"InternalFailure","message":"failed by the fault proxy after the server acted"}'
            writer.write(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/x-amz-json-1.1\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            return True
        if name == "hold_reply":
            await asyncio.sleep(faults.hold_seconds)
            _reset(writer)
            return False
        closing = faults.refuse_down > 0
        if closing:  # one request per connection, so the next one has to connect (and may be refused)
            answer = _with_connection_close(answer)
        writer.write(answer)
        await writer.drain()
        return not closing

    async def _forward(self, request: _Request) -> bytes | None:
        try:
            reader, writer = await asyncio.open_connection(HOST, self.upstream_port)
        except OSError:
            return None
        try:
            writer.write(request.head + request.body)
            await writer.drain()
            return await _read_response(reader)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return None
        finally:
            _close(writer)


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    headers = _headers(head)
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    target = headers.get("x-amz-target", "")
    if not target:  # Smithy RPC v2 (CloudWatch's CBOR): POST /service/<service>/operation/<operation>
        path = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[1] if b" " in head else ""
        target = path.rpartition("/operation/")[2] if "/operation/" in path else ""
    return _Request(head, body, target.rsplit(".", 1)[-1])


async def _read_response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    headers = _headers(head)
    if "content-length" in headers:
        return head + await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            chunks.append(size_line)
            size = int(size_line.split(b";")[0], 16)
            chunks.append(await reader.readexactly(size + 2))
            if size == 0:
                return head + b"".join(chunks)
    return head + await reader.read()  # delimited by the server closing


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines) if name}


def _with_connection_close(answer: bytes) -> bytes:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to the client."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


__all__ = ["MUTATING_OPERATIONS", "FaultProxy", "Faults"]
