"""Shared helpers for command handlers: output in text or JSON, and running async work."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from console.read.printable import printable

T = TypeVar("T")


def emit(args: Any, document: Any, text: str | Callable[[], str]) -> None:
    """Print `document` as one JSON document with --json, else the human text. Every line of the text is
    escaped (`printable`), so a key or message quoted anywhere in it draws as itself (JSON escapes all
    but ASCII already)."""
    if getattr(args, "json", False):
        json.dump(document, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        lines = (text() if callable(text) else text).rstrip("\n").split("\n")
        sys.stdout.write("\n".join(printable(line) for line in lines) + "\n")
    sys.stdout.flush()


def run_async(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def note(message: str) -> None:
    """A progress or status line for humans; on stderr so --json stdout stays one document. Escaped: it may
    quote a key or a server's words."""
    print(printable(message), file=sys.stderr, flush=True)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, right_aligned: set[int] = frozenset(),
                 max_rows: int | None = None) -> str:
    """A plain-text table: columns as wide as their widest cell, two spaces apart; with `max_rows`,
    the head of a long table and a line saying how many rows were left out. Cells are escaped (`printable`):
    keys and other text from a stream draw as themselves and never break the table's lines."""
    shown = [[printable(str(cell)) for cell in row] for row in (rows if max_rows is None else rows[:max_rows])]
    header = [printable(str(cell)) for cell in header]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *shown)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(cell).rjust(width) if i in right_aligned else str(cell).ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [line(header)] + [line(row) for row in shown]
    if len(rows) > len(shown):
        out.append(f"... {len(rows) - len(shown)} more rows (use --json for all)")
    return "\n".join(out)
