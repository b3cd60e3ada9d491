"""`kconsole completion bash|zsh|fish`: shell completion with argcomplete.

    eval "$(kconsole completion bash)"          # in ~/.bashrc; zsh the same; fish: | source

Options and commands complete from the parser; stream names complete from the backend the line
names (--endpoint-url, --profile, --region, the AWS environment) when that is cheap: one ListStreams
with short timeouts and no retries, remembered for a minute. The embedded server (--local) is never
started for a completion.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from console.commands import Parents, Subparsers, command_help
from console.commands._options import options_from

if TYPE_CHECKING:
    from console.backend import BackendConfig

SHELLS = ("bash", "zsh", "fish")
CACHE_SECONDS = 60.0
LOOKUP_SECONDS = 2.0  # the whole listing, connection included; a slow backend completes nothing


def register(subparsers: Subparsers, _common: Parents) -> None:
    parser = subparsers.add_parser(
        "completion",
        help=command_help("completion"),
        description='Print the completion script for your shell. bash and zsh: eval "$(kconsole completion '
        'bash)" in ~/.bashrc (or zsh in ~/.zshrc); fish: kconsole completion fish | source in '
        "~/.config/fish/config.fish. Stream names complete from the backend the command line "
        "names, cached for a minute.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=print_script)


@dataclass(frozen=True)
class CompletionOptions:
    shell: str  # one of SHELLS


def print_script(args: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["kconsole"], shell=options_from(CompletionOptions, args).shell), end="")
    return 0


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a completion request from the shell script and exit; called only when _ARGCOMPLETE is set."""
    import argcomplete

    for action in parser._actions:  # the CLI builds command parsers on use; completion needs them all
        if hasattr(action, "load_all"):
            action.load_all()
    _attach(parser, stream_names)
    argcomplete.autocomplete(parser)


def _attach(parser: argparse.ArgumentParser, completer: Any) -> None:
    """Every STREAM argument and --stream option, in every (sub)command, completes stream names."""
    for action in parser._actions:  # argparse keeps no public list; argcomplete itself walks this one
        if action.dest == "stream":
            action.completer = completer  # type: ignore[attr-defined]  # argcomplete reads this attribute
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _attach(subparser, completer)


def stream_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    try:
        names = _cached_stream_names(parsed_args)
    except Exception:  # a completion that cannot list streams offers none, silently
        return []
    return [name for name in names if name.startswith(prefix)]


def _cached_stream_names(parsed_args: argparse.Namespace) -> list[str]:
    from console.commands._backend import backend_config
    from console.userdirs import cache_dir

    if getattr(parsed_args, "local", False):
        return []  # starting the embedded server takes seconds, and it would start empty anyway
    config = backend_config(parsed_args)
    key = hashlib.sha256(config.label.encode()).hexdigest()[:16]
    path = cache_dir() / f"streams-{key}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if time.time() - cached["time"] < CACHE_SECONDS and cached["label"] == config.label:
            return list(cached["names"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    names = _list_now(parsed_args, replace(config, connect_timeout=1.0, read_timeout=LOOKUP_SECONDS, max_attempts=1))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"label": config.label, "time": time.time(), "names": names}), encoding="utf-8")
    temporary.replace(path)
    return names


def _list_now(parsed_args: argparse.Namespace, config: BackendConfig) -> list[str]:
    import asyncio

    from console.commands._backend import with_backend

    async def listing() -> list[str]:
        async with with_backend(parsed_args, config=config) as kinesis:
            kinesis.on_retry = None
            return await kinesis.stream_names()

    async def bounded() -> list[str]:
        return await asyncio.wait_for(listing(), LOOKUP_SECONDS)

    return asyncio.run(bounded())
