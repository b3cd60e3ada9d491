"""The embedded local Kinesis: moto's server, patched by moto_compat, in a process of its own.

    python -m console.backend.server_main [--host H] [--port P] [--parent-pid PID] [--unpatched]

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
import sys
import threading
import time
from collections.abc import Callable

from werkzeug.serving import BaseWSGIServer


def build_server(host: str = "127.0.0.1", port: int = 0, *, patched: bool = True) -> BaseWSGIServer:
    """A threaded moto server bound to (host, port), with the Kinesis fixes applied unless `patched` is False."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    if patched:
        from console.backend import moto_compat

        moto_compat.apply()
    _cache_moto_module_listing()
    # Request lines would otherwise go to stderr on every call (and into the terminal UI).
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if port:
        _check_port_free(host, port)
    app = DomainDispatcherApplication(create_backend_app)
    if patched:
        from console.backend.fast_reads import ShortPathReads

        app = ShortPathReads(app, moto_compat.lock())
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    server.handle_error = _quiet_on_disconnect(server.handle_error)
    server.daemon_threads = True  # a request stuck in a handler must not keep the process alive on exit
    return server


def _quiet_on_disconnect(handle_error: Callable) -> Callable:
    """A client that goes away mid-request (a cancelled poll, a closed console) is normal: say nothing,
    where socketserver would print a traceback into the terminal of `kconsole local serve`."""

    def handle(request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        handle_error(request, client_address)

    return handle


def _cache_moto_module_listing() -> None:
    """moto lists its package directory (about 180 stat calls) on every request to route it; the
    listing cannot change while the server runs, so list once. Roughly halves the time per request."""
    from moto import backends

    if getattr(backends.list_of_moto_modules, "kconsole_cached", False):
        return
    modules = tuple(backends.list_of_moto_modules())

    def list_of_moto_modules():
        return iter(modules)

    list_of_moto_modules.kconsole_cached = True
    backends.list_of_moto_modules = list_of_moto_modules


def _check_port_free(host: str, port: int) -> None:
    """Raise OSError(EADDRINUSE) ourselves: werkzeug's make_server prints a paragraph and exits instead."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug binds
        probe.bind((host, port))


def endpoint_of(server: BaseWSGIServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def serve(server: BaseWSGIServer, *, on_ready: Callable[[str], None]) -> int | None:
    """Serve until SIGTERM/SIGINT; returns the signal that stopped it, after closing the socket."""
    stopped_by: list[int] = []

    def stop(signum, frame):  # noqa: ARG001 - signal handler signature
        stopped_by.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        on_ready(endpoint_of(server))  # inside: a SIGTERM right at READY must stop quietly too
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.backend.server_main")
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

    serve(server, on_ready=announce)
    return 0


if __name__ == "__main__":
    sys.exit(main())
