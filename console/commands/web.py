"""`kconsole web [--port P]`: the live console in a browser tab, served by textual-serve on 127.0.0.1.

Each browser tab runs its own `kconsole` console process with the options given here (--stream,
--local, --endpoint-url, --read-only, ...); Ctrl-C stops the server and every tab's process.
"""

from __future__ import annotations

import argparse
import errno
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Any

from console.commands import Parents, Subparsers, command_help
from console.commands._mask_args import add_mask_arguments
from console.commands._options import options_from
from console.errors import BadInput

DEFAULT_PORT = 8000
HOST = "127.0.0.1"  # never another interface: whoever reaches the page drives the console

# Console options handed to each tab's process: (attribute, option, takes a value).
_FORWARDED = (
    ("stream", "--stream", True),
    ("interval", "--interval", True),
    ("shards", "--shards", True),
    ("local", "--local", False),
    ("endpoint_url", "--endpoint-url", True),
    ("region", "--region", True),
    ("profile", "--profile", True),
    ("read_only", "--read-only", False),
    ("cli_read_timeout", "--cli-read-timeout", True),
    ("cli_connect_timeout", "--cli-connect-timeout", True),
    ("mask_keys", "--mask-keys", False),
    ("no_mask", "--no-mask", False),
)


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "web",
        parents=common,
        help=command_help("web"),
        description=f"Serve the live console on http://{HOST}:PORT with textual-serve: each browser tab gets "
        "its own console, opened with the options given here (kconsole web --local, kconsole "
        "web --stream orders --read-only). Ctrl-C stops it.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on {HOST} (default {DEFAULT_PORT})")
    parser.add_argument("--stream", default=argparse.SUPPRESS, help="stream each tab opens")
    add_mask_arguments(parser)
    parser.set_defaults(handler=serve_web)


def console_command(args: Any) -> str:
    """The shell command each tab runs: this interpreter's kconsole with the console's options."""
    argv = [sys.executable, "-m", "console.cli"]
    for attribute, option, takes_value in _FORWARDED:
        value = getattr(args, attribute, None)
        if takes_value and value is not None:
            argv += [option, str(value)]
        elif not takes_value and value:
            argv.append(option)
    for rule in getattr(args, "mask_rules", None) or ():  # each tab's console masks as asked here
        argv += ["--mask", rule]
    return shlex.join(argv)


@dataclass(frozen=True)
class WebOptions:
    port: int = DEFAULT_PORT


def serve_web(args: argparse.Namespace) -> int:
    options = options_from(WebOptions, args)
    if getattr(args, "output", None) or getattr(args, "max_items", None) is not None:
        raise BadInput(
            "kconsole web serves the live console, which has no --json, --output, --query or --max-items", code="usage"
        )
    if not 1 <= options.port <= 65535:
        raise BadInput(f"--port must be from 1 to 65535; got {options.port}", code="usage")
    if getattr(args, "local", False):
        from console.backend.launcher import require_local_extra

        require_local_extra()  # say it here, not in every browser tab
    if args.no_mask and (args.mask_rules or args.mask_keys):
        raise BadInput("--mask or --mask-keys and --no-mask contradict each other: give one", code="usage")
    if args.mask_rules:
        from console.read.masking import MaskRuleError, parse_rules

        try:
            parse_rules(args.mask_rules)  # a bad rule is one line here, not an error page in every tab
        except MaskRuleError as problem:
            raise BadInput(str(problem)) from None
    _check_port_free(options.port)
    from textual_serve.server import Server

    server = Server(console_command(args), host=HOST, port=options.port, title="kconsole")
    server.serve()
    return 130  # textual-serve stops on Ctrl-C (or SIGTERM) only


def _check_port_free(port: int) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise BadInput(
                    f"port {port} on {HOST} is already in use; pick another with --port", code="port_in_use"
                ) from None
            raise BadInput(f"cannot listen on {HOST}:{port}: {error.strerror or error}") from None
