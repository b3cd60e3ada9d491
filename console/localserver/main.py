"""The embedded local Kinesis: moto's server application, patched by moto_compat and served by
waitress, in a process of its own.

    python -m console.localserver.main [--host H] [--port P] [--parent-pid PID] [--unpatched]

Prints one line `READY http://H:P` on stdout once the socket is listening (port 0 picks a free one).
With --parent-pid it exits as soon as its parent goes away: stdin reaching EOF (the parent held the
other end of the pipe) or the parent pid changing, so a crashed or SIGKILLed kconsole leaves no orphan.
SIGTERM and SIGINT stop it cleanly. `kconsole local serve` runs `serve()` in the foreground.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# waitress, not werkzeug's development server: werkzeug closes the connection after every answer (and
# drains the socket, so an HTTP/1.1 handler hangs), which cost every call a TCP connect on both sides
# and a new server thread. With kept-alive connections a console reading a thousand shards does the
# same calls in about 60% of the time, the server's CPU per call halved.
SERVER_THREADS = 8  # moto's Kinesis models take one request at a time anyway (moto_compat's lock)
# waitress reads 8 KiB at a time by default: a 500-record PutRecords (~120 KB) took 15 wake-ups of its
# I/O thread, each taking the GIL from the request being served; 256 KiB takes it in one or two.
RECV_BYTES = 256 * 1024
CONNECTION_LIMIT = 1000  # a client pools up to 64 connections per service; tests run several clients
# A request body the server reads at most (waitress answers 413 beyond it). Kinesis' largest is a
# 10 MiB PutRecords: 14 MiB once base64'd into JSON; DynamoDB's BatchWriteItem takes up to 16 MB.
MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024


def build_server(host: str = "127.0.0.1", port: int = 0, *, patched: bool = True) -> Any:
    """moto's server application bound to (host, port), served by waitress, with the Kinesis fixes
    (and the short path for the hot read calls) unless `patched` is False."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from waitress.server import create_server

    from console.localserver import moto_compat

    if patched:
        moto_compat.apply()
        moto_compat.keep_heap_as_a_store()
    moto_compat.cache_module_listing()
    if port:
        _check_port_free(host, port)
    app: Any = DomainDispatcherApplication(create_backend_app)  # a WSGI app, wrapped below when patched
    if patched:
        from console.localserver.short_path import ShortPath

        app = ShortPath(app, moto_compat.lock())
    # A client that drops a connection mid-answer is normal (a cancelled poll, a closed console):
    # waitress would log it to stderr, into the terminal of `kconsole local serve`.
    logging.getLogger("waitress").setLevel(logging.CRITICAL)
    server = create_server(
        app,
        host=host,
        port=port,
        threads=SERVER_THREADS,
        connection_limit=CONNECTION_LIMIT,
        max_request_body_size=MAX_REQUEST_BODY_BYTES,
        asyncore_use_poll=True,
        recv_bytes=RECV_BYTES,
        ident="amazon.com",
    )
    http2 = None
    if patched:
        from console.localserver.subscribe import hand_over

        http2 = hand_over  # SubscribeToShard over HTTP/2 on the same port (console.localserver.subscribe)
    server.channel_class = _plain_http_channel(http2)
    return server


TLS_HANDSHAKE = b"\x16"  # the first byte of a TLS ClientHello
NOT_TLS_ANSWER = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 35\r\n"
    b"Connection: close\r\n\r\nthis server speaks http://, not TLS"
)


def _plain_http_channel(http2: Callable[[socket.socket, bytes], None] | None = None) -> type:
    """waitress's connection, answering an https:// client at once, and handing a connection that opens
    with the HTTP/2 preface to `http2` (the patched server's SubscribeToShard). waitress would wait for
    an HTTP request line that never comes from a TLS client, and the client would report a timeout; a
    plain answer makes its TLS handshake fail at once, which kconsole reports as "use an http:// URL"."""
    from waitress.channel import HTTPChannel

    from console.localserver.subscribe import PREFACE

    class PlainHTTPChannel(HTTPChannel):
        first_bytes_seen = False
        opening = b""  # the first bytes, while they may still be the HTTP/2 preface

        def received(self, data: bytes) -> bool:
            if not self.first_bytes_seen and data:
                if data[:1] == TLS_HANDSHAKE and not self.opening:
                    self.first_bytes_seen = True
                    with self.outbuf_lock:  # as waitress queues its own "100 Continue"
                        self.outbufs[-1].append(NOT_TLS_ANSWER)
                        self.current_outbuf_count += len(NOT_TLS_ANSWER)
                        self.total_outbufs_len += len(NOT_TLS_ANSWER)
                        self.close_when_flushed = True
                    return False
                if http2 is not None:
                    data = self.opening + data
                    if len(data) < len(PREFACE) and PREFACE.startswith(data):
                        self.opening = data  # the preface may come in pieces
                        return True
                    if data.startswith(PREFACE):
                        self.first_bytes_seen = True
                        self._hand_over(data)
                        return True
                self.first_bytes_seen = True
            return super().received(data)

        def _hand_over(self, data: bytes) -> None:
            """Out of waitress's loop and its channel count, the socket's descriptor detached from this
            channel so that nothing waitress does later closes it, and given to `http2`."""
            assert http2 is not None
            self.del_channel()
            self.connected = False
            http2(socket.socket(fileno=self.socket.detach()), data)

    return PlainHTTPChannel


def _check_port_free(host: str, port: int) -> None:
    """Raise OSError(EADDRINUSE) at once, before the server is set up, for one clear line."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress binds
        probe.bind((host, port))


def endpoint_of(server: Any) -> str:
    return f"http://{server.effective_host}:{server.effective_port}"


def serve(server: Any, *, on_ready: Callable[[str], None]) -> int | None:
    """Serve until SIGTERM/SIGINT; returns the signal that stopped it, after closing the socket."""
    stopped_by: list[int] = []

    def stop(signum, frame):  # noqa: ARG001 - signal handler signature
        stopped_by.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        on_ready(endpoint_of(server))  # inside: a SIGTERM right at READY must stop quietly too
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return stopped_by[0] if stopped_by else None


def watch_parent(parent_pid: int) -> None:
    """Exit the moment the parent is gone: EOF on stdin (pipe from the parent) or a changed parent pid."""

    def stdin_eof() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside the buffered reader holds its lock
        # and makes interpreter shutdown abort ("could not acquire lock ... at interpreter shutdown").
        try:
            while os.read(0, 4096):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    def parent_pid_changed() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=stdin_eof, name="parent-eof", daemon=True).start()
    threading.Thread(target=parent_pid_changed, name="parent-pid", daemon=True).start()


def warm_up() -> None:
    """Build now what moto builds on the first Kinesis request (the backends of every region, which
    reads botocore's endpoint data, and the IAM module its account lookup imports): ~0.2 s that the
    first call of a console starting with --local would otherwise wait for, done while that console
    is still starting. moto builds them under its own lock; a request arriving meanwhile waits for it."""
    try:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.iam import models as _iam_models  # noqa: F401 - imported for its side of the work
        from moto.kinesis.models import kinesis_backends

        kinesis_backends[DEFAULT_ACCOUNT_ID]
    except Exception:  # only a head start: the first request builds whatever is missing
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.localserver.main")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--unpatched", action="store_true", help="plain moto, to show its defects in tests")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    server = build_server(args.host, args.port, patched=not args.unpatched)

    def announce(url: str) -> None:
        sys.stdout.write(f"READY {url}\n")
        sys.stdout.flush()
        if args.parent_pid is not None:
            # Nobody reads the stdout pipe after READY; moto prints now and then, and a full pipe would
            # block the server. Send anything later to stderr (the parent's log file) instead.
            os.dup2(2, 1)

    def ready(url: str) -> None:
        announce(url)
        threading.Thread(target=warm_up, name="warm-up", daemon=True).start()

    serve(server, on_ready=ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
