"""Shared helpers for command handlers: output in text or JSON, and running async work."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def emit(args: Any, document: Any, text: str | Callable[[], str]) -> None:
    """Print `document` as one JSON document with --json, else the human text."""
    if getattr(args, "json", False):
        json.dump(document, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write((text() if callable(text) else text).rstrip("\n") + "\n")
    sys.stdout.flush()


def run_async(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def note(message: str) -> None:
    """A progress or status line for humans; on stderr so --json stdout stays one document."""
    print(message, file=sys.stderr, flush=True)
