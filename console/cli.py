"""The `kconsole` entry point.

`kconsole [--stream NAME] [--local]` opens the live console; every what-if and operation is also a
non-interactive subcommand with `--json` output. Each subcommand lives in its own module under
console/commands/ and registers itself through `register(subparsers, common)`; the parser imports that
module only when its command is the one being run, so `kconsole predict` starts without the network
stack and `kconsole --help` still lists every command (console/commands/__init__.py names them).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from console import __version__
from console.commands import COMMANDS
from console.errors import BadInput, ConsoleError
from console.lifecycle.rules import parse_shard_count
from console.patches import add_subcommands
from console.read.printable import printable


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line (and JSON)."""

    def error(self, message: str) -> NoReturn:
        # "kconsole: error: predict: argument --shards: ..." names the subcommand once, not the program twice.
        command = self.prog.removeprefix("kconsole").strip()
        raise BadInput(f"{command}: {message}" if command else message, code="usage")


def add_common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted by every command. Subcommand copies use SUPPRESS so they never clobber
    a value given before the subcommand name (`kconsole --local streams` and `kconsole streams --local`)."""

    def default(value):
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("backend and output")
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print one JSON document on stdout (short for --output json)",
    )
    group.add_argument(
        "--output",
        choices=("json", "text", "table", "jsonl", "csv", "raw"),
        default=default(None),
        help="json, text (tab-separated, for awk) or table; default: the human view "
        "(tail also writes jsonl, csv and raw)",
    )
    group.add_argument(
        "--query",
        default=default(None),
        metavar="EXPR",
        help="JMESPath expression over the JSON document, as in the AWS CLI",
    )
    group.add_argument(
        "--max-items", type=int, default=default(None), metavar="N", help="show only the first N items of each list"
    )
    group.add_argument(
        "--local",
        action="store_true",
        default=default(False),
        help="start and use the embedded local Kinesis on 127.0.0.1",
    )
    group.add_argument("--endpoint-url", default=default(None), metavar="URL", help="any Kinesis-compatible endpoint")
    group.add_argument("--region", default=default(None), help="AWS region (default: from the AWS config/environment)")
    group.add_argument("--profile", default=default(None), help="AWS named profile")
    group.add_argument(
        "--cli-read-timeout",
        type=float,
        default=default(None),
        metavar="SECONDS",
        help="socket read timeout (default 20; 0 waits without limit)",
    )
    group.add_argument(
        "--cli-connect-timeout",
        type=float,
        default=default(None),
        metavar="SECONDS",
        help="socket connect timeout (default 3; 0 waits without limit)",
    )
    group.add_argument(
        "--read-only", action="store_true", default=default(False), help="refuse every action that changes a stream"
    )
    group.add_argument(
        "--request-timeout",
        type=_request_timeout,
        default=default(None),
        metavar="SECONDS",
        help="seconds without an answer before a request fails (default 20)",
    )


def _request_timeout(text: str) -> float:
    """Checked as it is parsed, so a bad value is exit 2 before anything connects."""
    from console.backend.config import validate_request_timeout

    try:
        seconds = float(text)
    except ValueError:
        raise BadInput(f"--request-timeout must be a number of seconds; got {text!r}", code="usage") from None
    return validate_request_timeout(seconds)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="kconsole",
        description="Terminal console for Amazon Kinesis Data Streams. Without a command, opens the live console.",
    )
    parser.add_argument("--version", action="version", version=f"kconsole {__version__}")
    parser.add_argument("--stream", help="stream to open in the console")
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="shard-map poll interval in the console (default 5, or the config's)",
    )
    parser.add_argument(
        "--shards",
        type=parse_shard_count,
        default=None,
        metavar="N",
        help="with --local: shard count (1 to 10,000) for a stream that has to be created (default 4)",
    )
    parser.add_argument(
        "--mask",
        dest="console_mask_rules",
        action="append",
        default=[],
        metavar="RULE",
        help="mask a field path, re:REGEX, @cards, @emails or @keys in what the console shows (repeatable; "
        "added to the config's mask rules)",
    )
    parser.add_argument(
        "--mask-keys", dest="console_mask_keys", action="store_true", help="mask partition keys in the console too"
    )
    parser.add_argument(
        "--no-mask",
        dest="console_no_mask",
        action="store_true",
        help="start the console with masking off (said in its header, written to the action log)",
    )
    add_common_options(parser, suppress=False)
    common = ArgumentParser(add_help=False)
    add_common_options(common, suppress=True)
    add_subcommands(parser, COMMANDS, [common], dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    return parser


def _wants_json(argv: Sequence[str]) -> bool:
    pairs = itertools.pairwise(argv)
    return "--json" in argv or "--output=json" in argv or ("--output", "json") in pairs


def emit_error(error: ConsoleError, *, as_json: bool) -> None:
    print(f"kconsole: error: {printable(error.message)}", file=sys.stderr)  # one line, whatever it quotes
    if as_json:
        import json

        print(json.dumps({"error": {"code": error.code, "message": error.message}}))


def report_config_problems() -> None:
    """A bad config file is named in one line on stderr, whatever the command (the console shows it too).
    Without a config file there is nothing to parse, so the TOML reader is never loaded."""
    from console.userdirs import config_file

    try:
        os.stat(config_file())
    except FileNotFoundError:
        return
    except OSError:  # unreadable or in a folder we may not enter: load_config says so
        pass
    from console.config import load_config

    warning = load_config()[1]
    if warning:
        print(f"kconsole: warning: {warning}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(argv)
    try:
        parser = build_parser()
        if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer and exit
            from console.commands.completion import autocomplete

            autocomplete(parser)
        args = parser.parse_args(argv)
        if getattr(args, "local", False) or getattr(args, "endpoint_url", None) is not None:
            from console.backend.config import check_backend_options

            check_backend_options(args)
        report_config_problems()
        handler = getattr(args, "handler", None)
        from console.commands._output import configure

        configure(args)
        if handler is None:
            if args.output or args.max_items is not None:
                raise BadInput(
                    "the live console has no --json output (nor --output, --query, --max-items); "
                    "use a subcommand (kconsole --help)",
                    code="usage",
                )
            from console.ui.launch import launch_console

            return launch_console(args)
        return int(handler(args) or 0)
    except ConsoleError as error:
        with contextlib.suppress(BrokenPipeError):  # `kconsole ... | head` closed early: nothing left to tell
            emit_error(error, as_json=as_json)
        return error.exit_code
    except KeyboardInterrupt:
        with contextlib.suppress(BrokenPipeError):
            emit_error(ConsoleError("interrupted", code="interrupted"), as_json=as_json)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # the last line of defence: one line, never a traceback
        if os.environ.get("KCONSOLE_DEBUG"):
            raise
        emit_error(
            ConsoleError(
                f"internal error: {type(error).__name__}: {error} (set KCONSOLE_DEBUG=1 for the traceback)",
                code="internal",
            ),
            as_json=as_json,
        )
        return 1


def entry() -> None:
    code = main()
    # The interpreter's exit runs full collections over every object still alive (botocore's models,
    # the modules): ~60 ms of a `kconsole streams`. Frozen, they are skipped; nothing is left to them
    # (files, clients and servers are closed by the commands, atexit handlers still run).
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()
