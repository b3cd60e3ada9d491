"""The two guards every changing command passes before its first call: read-only mode, then the
operator's confirmation (--yes, or the stream name typed on a TTY). Both refuse with one line that
says nothing was called."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

from console.errors import ConsoleError, Interrupted, ReadOnlyRefusal


def read_only_source(args: argparse.Namespace) -> str | None:
    """Where read-only mode was set (None: it is off). The flag is checked first, so --read-only
    decides without reading the config at all."""
    if getattr(args, "read_only", False):
        return "--read-only"
    from console.config import load_config  # here: `kconsole predict` and other offline commands never read it

    if load_config()[0].read_only:
        return "read_only in the config"
    return None


def refuse_if_read_only(args: argparse.Namespace, change: str) -> None:
    """Refuse `change` (e.g. "split my-stream") in read-only mode, naming where the mode was set."""
    source = read_only_source(args)
    if source is not None:
        raise ReadOnlyRefusal(f"read-only mode ({source}): refusing to {change}; nothing was called")


def confirm_by_stream_name(
    args: argparse.Namespace,
    *,
    change: str,
    consequence: str,
    advice: str = "",
    preview: str | None = None,
    stream: str | None = None,
) -> None:
    """Go ahead on --yes or when the operator types the stream name (`stream`, else the command's
    STREAM argument); otherwise refuse.

    `change` names the change in the refusal ("split my-stream"), `consequence` ends the prompt's
    "This will ..." sentence, `advice` comes before "pass --yes" when there is no TTY, and
    `preview` (e.g. the plan) is shown on stderr before the prompt."""
    stream = stream or args.stream
    # "switch clicks from provisioned to on-demand" names the stream already: no "... on clicks" after it.
    named = consequence if stream in consequence.split() else f"{consequence} on {stream}"
    confirm_by_typing(
        args, stream, what="the stream name", change=change, consequence=named, advice=advice, preview=preview
    )


def confirm_by_typing(
    args: argparse.Namespace,
    expected: str,
    *,
    what: str,
    change: str,
    consequence: str,
    advice: str = "",
    preview: str | None = None,
) -> None:
    """Go ahead on --yes or when the operator types `expected` (`what` names it in the prompt)."""
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise ConsoleError(
            f"refusing to {change} without confirmation: no TTY to ask on; {advice}pass --yes",
            code="needs_confirmation",
        )
    try:
        with _ctrl_c_interrupts():  # from before the prompt shows: a Ctrl-C as it appears counts too
            if preview is not None:
                print(preview, file=sys.stderr)
            print(f"This will {consequence}. Type {what} to confirm: ", end="", file=sys.stderr, flush=True)
            answer = sys.stdin.readline()
    except KeyboardInterrupt:
        print(file=sys.stderr)  # the error's line starts under the prompt, not after it
        raise Interrupted("interrupted at the confirmation; nothing was called") from None
    if answer.strip() != expected:
        raise ConsoleError(f"confirmation did not match {expected!r}; nothing was called", code="not_confirmed")


@contextlib.contextmanager
def _ctrl_c_interrupts() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in the read at once. Under asyncio.run (most commands ask from
    inside their event loop) SIGINT only cancels the main task, which a blocking read holds off until
    Enter: for the prompt's time Python's own handler is back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
