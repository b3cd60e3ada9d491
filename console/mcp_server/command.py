"""`kconsole mcp [--allow-changes] [--http PORT]`: serve the tools over stdio, or streamable HTTP on
127.0.0.1. The MCP SDK is an optional extra; without it, one line says how to install it."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from console.bounds import validate_stream_name
from console.errors import BadInput, ConsoleError

HOST = "127.0.0.1"  # never another interface: whoever reaches the port may drive the stream


class McpMissing(ConsoleError):
    def __init__(self) -> None:
        super().__init__(
            "kconsole mcp needs the MCP SDK: pip install 'kconsole[mcp]' (or pip install mcp)", code="missing_extra"
        )


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: list[argparse.ArgumentParser]
) -> None:
    parser = subparsers.add_parser(
        "mcp",
        parents=common,
        help="serve the commands as Model Context Protocol tools (stdio, or --http PORT)",
        description="Serve kconsole's what-ifs, reads and readers as MCP tools for an AI assistant: over "
        f"stdio by default, or streamable HTTP on {HOST}:PORT with --http. Read-only unless --allow-changes; "
        "even then a tool only plans a change, and applying it is a second call with the stream's name typed back.",
    )
    parser.add_argument("--http", type=int, default=None, metavar="PORT", help=f"streamable HTTP on {HOST}:PORT")
    parser.add_argument(
        "--allow-changes",
        action="store_true",
        help="let the assistant apply plans it made (each with the stream's name typed back)",
    )
    parser.add_argument(
        "--stream",
        dest="streams",
        action="append",
        default=[],
        type=validate_stream_name,
        metavar="NAME",
        help="with --local: create this stream (4 shards) on the embedded server first (repeatable)",
    )
    parser.set_defaults(handler=serve_mcp, subcommands=subparsers)


def serve_mcp(args: Any) -> int:
    if getattr(args, "output", None) or getattr(args, "max_items", None) is not None:
        raise BadInput("kconsole mcp speaks the MCP protocol; it has no --json, --output, --query or --max-items")
    if args.http is not None and not 1 <= args.http <= 65535:
        raise BadInput(f"--http must be a port from 1 to 65535; got {args.http}", code="usage")
    if importlib.util.find_spec("mcp") is None:
        raise McpMissing()
    if args.streams and not getattr(args, "local", False):
        raise BadInput("--stream creates streams on the embedded server: give --local with it", code="usage")
    if args.allow_changes and args.read_only:
        raise BadInput("--allow-changes and --read-only disagree; give one", code="usage")
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser] = args.subcommands
    from console.mcp_server.server import build_server, embedded_endpoint

    with embedded_endpoint(args):
        server = build_server(args, subcommands)
        if args.http is None:
            server.run("stdio")
        else:
            server.run("streamable-http", host=HOST, port=args.http)
    return 0
