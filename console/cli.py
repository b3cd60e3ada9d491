"""The `kconsole` entry point.

`kconsole [--stream NAME] [--local]` opens the live console; every what-if and operation is also a
non-interactive subcommand with `--json` output. Each subcommand lives in its own module under
console/commands/ and registers itself through `register(subparsers, common)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from console import __version__
from console.errors import BadInput, ConsoleError

# Order here is the order in `kconsole --help`.
COMMAND_MODULES = (
    "console.commands.keyspace",  # predict, keytree, spread
    "console.commands.streams",  # streams, shards
    "console.commands.reshard",  # plan, reshard
    "console.commands.produce",  # produce
    "console.commands.heat",  # heat
    "console.commands.tail",  # tail
    "console.commands.local",  # local serve
    "console.commands.completion",  # completion bash|zsh|fish
    "console.commands.web",  # web
)


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line (and JSON)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # "kconsole: error: predict: argument --shards: ..." names the subcommand once, not the program twice.
        command = self.prog.removeprefix("kconsole").strip()
        raise BadInput(f"{command}: {message}" if command else message, code="usage")


def add_common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted by every command. Subcommand copies use SUPPRESS so they never clobber
    a value given before the subcommand name (`kconsole --local streams` and `kconsole streams --local`)."""

    def default(value):
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("backend and output")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="print one JSON document on stdout (short for --output json)")
    group.add_argument("--output", choices=("json", "text", "table"), default=default(None),
                       help="json, text (tab-separated, for awk) or table; default: the human view")
    group.add_argument("--query", default=default(None), metavar="EXPR",
                       help="JMESPath expression over the JSON document, as in the AWS CLI")
    group.add_argument("--max-items", type=int, default=default(None), metavar="N",
                       help="show only the first N items of each list")
    group.add_argument("--local", action="store_true", default=default(False),
                       help="start and use the embedded local Kinesis on 127.0.0.1")
    group.add_argument("--endpoint-url", default=default(None), metavar="URL", help="any Kinesis-compatible endpoint")
    group.add_argument("--region", default=default(None), help="AWS region (default: from the AWS config/environment)")
    group.add_argument("--profile", default=default(None), help="AWS named profile")
    group.add_argument("--cli-read-timeout", type=float, default=default(None), metavar="SECONDS",
                       help="socket read timeout (default 20; 0 waits without limit)")
    group.add_argument("--cli-connect-timeout", type=float, default=default(None), metavar="SECONDS",
                       help="socket connect timeout (default 3; 0 waits without limit)")
    group.add_argument("--read-only", action="store_true", default=default(False),
                       help="refuse every action that changes a stream")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="kconsole",
        description="Terminal console for Amazon Kinesis Data Streams. Without a command, opens the live console.",
    )
    parser.add_argument("--version", action="version", version=f"kconsole {__version__}")
    parser.add_argument("--stream", help="stream to open in the console")
    parser.add_argument("--interval", type=float, default=None, metavar="SECONDS",
                        help="shard-map poll interval in the console (default 5, or the config's)")
    parser.add_argument("--shards", type=int, default=None, metavar="N",
                        help="with --local: shard count for a stream that has to be created (default 4)")
    add_common_options(parser, suppress=False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)

    common = ArgumentParser(add_help=False)
    add_common_options(common, suppress=True)

    import importlib

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers, [common])
    return parser


def _wants_json(argv: Sequence[str]) -> bool:
    pairs = zip(argv, argv[1:])
    return "--json" in argv or "--output=json" in argv or ("--output", "json") in pairs


def emit_error(error: ConsoleError, *, as_json: bool) -> None:
    print(f"kconsole: error: {error.message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": {"code": error.code, "message": error.message}}))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(argv)
    try:
        parser = build_parser()
        if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer and exit
            from console.commands.completion import autocomplete

            autocomplete(parser)
        args = parser.parse_args(argv)
        handler = getattr(args, "handler", None)
        from console.commands._output import configure

        configure(args)
        if handler is None:
            if args.output or args.max_items is not None:
                raise BadInput("the live console has no --json output (nor --output, --query, --max-items); "
                               "use a subcommand (kconsole --help)", code="usage")
            from console.ui.launch import launch_console

            return launch_console(args)
        return int(handler(args) or 0)
    except ConsoleError as error:
        try:
            emit_error(error, as_json=as_json)
        except BrokenPipeError:  # `kconsole ... | head` closed early: nothing left to tell
            pass
        return error.exit_code
    except KeyboardInterrupt:
        try:
            emit_error(ConsoleError("interrupted", code="interrupted"), as_json=as_json)
        except BrokenPipeError:
            pass
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        if os.environ.get("KCONSOLE_DEBUG"):
            raise
        emit_error(ConsoleError(f"internal error: {type(error).__name__}: {error} "
                                "(set KCONSOLE_DEBUG=1 for the traceback)", code="internal"), as_json=as_json)
        return 1


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
