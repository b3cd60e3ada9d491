"""`kconsole local serve [--port P] [--stream NAME ... --shards N]`: the embedded local Kinesis in the foreground, to share.

Several kconsole windows and scripts can then use one server through `--endpoint-url http://127.0.0.1:P`.
Ctrl-C (or SIGTERM) stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import signal
import sys
import threading
from dataclasses import dataclass, field

from console.bounds import validate_stream_name
from console.commands import Parents, Subparsers, command_help
from console.commands._options import options_from
from console.commands._output import emit
from console.errors import BadInput, ConsoleError
from console.lifecycle.rules import DEFAULT_SHARDS, parse_shard_count
from console.words import counted

DEFAULT_PORT = 4567


def register(subparsers: Subparsers, common: Parents) -> None:
    local = subparsers.add_parser(
        "local",
        parents=common,
        help=command_help("local"),
        description="The embedded local Kinesis: moto's server with kconsole's compatibility fixes, no account "
        "or Docker needed. `kconsole --local ...` starts a private one per command; `kconsole local "
        "serve` runs one in the foreground to share.",
    )
    local.set_defaults(handler=_no_action)
    # The nested parsers use the CLI's own parser class so their usage errors stay one line too.
    actions = local.add_subparsers(dest="local_action", metavar="ACTION", parser_class=type(local))
    serve = actions.add_parser(
        "serve",
        parents=common,
        help="run the local Kinesis in the foreground for --endpoint-url clients",
        description="Run the embedded local Kinesis on 127.0.0.1 until Ctrl-C, so several kconsole windows and "
        "scripts share one server: kconsole --endpoint-url http://127.0.0.1:PORT ... Data lives in "
        'memory until it stops. With --json it prints {"endpoint_url", "region"} on one line.',
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)"
    )
    serve.add_argument(
        "--stream",
        dest="streams",
        action="append",
        type=validate_stream_name,
        default=[],
        metavar="NAME",
        help="create this stream before announcing the endpoint (repeatable)",
    )
    serve.add_argument(
        "--shards",
        type=parse_shard_count,
        default=argparse.SUPPRESS,
        metavar="N",
        help="shard count of the streams --stream creates (1 to 10,000; default 4)",
    )
    serve.set_defaults(handler=serve_command)


def _no_action(_args: argparse.Namespace) -> int:
    raise BadInput("kconsole local: choose an action: serve", code="usage")


@dataclass(frozen=True)
class ServeOptions:
    port: int = DEFAULT_PORT
    streams: list[str] = field(default_factory=list)  # serve's own --stream, repeatable
    stream: str | None = None  # the top-level --stream
    shards: int | None = None  # default DEFAULT_SHARDS


def serve_command(args: argparse.Namespace) -> int:
    from console.backend.launcher import build_server, require_local_extra, serve

    require_local_extra()
    options = options_from(ServeOptions, args)

    for option, given in (
        ("--local", getattr(args, "local", False)),
        ("--endpoint-url", getattr(args, "endpoint_url", None)),
    ):
        if given:  # this command is the server; silently ignoring a client option would mislead
            raise BadInput(f"kconsole local serve runs its own server; {option} does not apply", code="usage")
    port = options.port
    if not 0 <= port <= 65535:
        raise BadInput(f"--port must be from 0 to 65535; got {port}")
    try:
        server = build_server("127.0.0.1", port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise BadInput(
                f"port {port} on 127.0.0.1 is already in use; pick another with --port", code="port_in_use"
            ) from None
        raise BadInput(f"cannot listen on 127.0.0.1:{port}: {error.strerror or error}") from None

    streams = list(dict.fromkeys(options.streams + ([options.stream] if options.stream else [])))
    shards = options.shards or DEFAULT_SHARDS
    failed: list[ConsoleError] = []

    def ready(url: str) -> None:
        if not streams:
            announce(url)
            return

        # The server answers only once serve() runs, so the streams are made from another thread;
        # the endpoint is announced after them, so whoever waits for that line finds them there.
        def create() -> None:
            try:
                asyncio.run(_create_streams(url, args.region, streams, shards))
            except ConsoleError as error:
                failed.append(error)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            announce(url)

        threading.Thread(target=create, name="create-streams", daemon=True).start()

    def announce(url: str) -> None:
        text = "".join(f"created stream {name!r} with {counted(shards, 'shard')}\n" for name in streams)
        emit(
            args,
            {"endpoint_url": url, "region": args.region or "us-east-1", "streams": streams},
            text + f"local Kinesis listening on {url}  (moto, with kconsole's compatibility fixes)\n"
            f"  use it:   kconsole --endpoint-url {url} streams\n"
            f"            kconsole --endpoint-url {url} stream create NAME --shards 4\n"
            f"            kconsole --endpoint-url {url} --stream NAME\n"
            f"            aws kinesis --endpoint-url {url} list-streams\n"
            f"  or:       export AWS_ENDPOINT_URL={url}   (then every kconsole and aws command uses it)\n"
            f"  any credentials and region work; data lives in memory until this stops.\n"
            f"  Ctrl-C stops it.",
        )

    stopped_by = serve(server, on_ready=ready)
    if failed:
        raise failed[0]
    print("local Kinesis stopped", file=sys.stderr, flush=True)
    return 130 if stopped_by == signal.SIGINT else 0  # Ctrl-C exits 130, as on every command


async def _create_streams(url: str, region: str | None, streams: list[str], shards: int) -> None:
    from console.backend import BackendConfig, LocalStream, open_backend

    config = BackendConfig(kind="local", region=region or "us-east-1", endpoint_url=url)
    async with open_backend(config, local_stream=LocalStream(tuple(streams), shards)):
        pass
