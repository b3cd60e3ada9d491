"""Shared helpers for command handlers: output in text or JSON, and running async work."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
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


def emit_json_with_rows(document: dict, rows_key: str, encoded_rows: Iterable[str]) -> None:
    """Print `document` as json.dumps would, its `rows_key` holding a long list whose items arrive
    already encoded, a chunk (comma-joined items) at a time. Large writes keep the cost down even when
    stdout is unbuffered (PYTHONUNBUFFERED), where json.dump's many small writes are one syscall each."""
    out = sys.stdout
    fields = []
    for key, value in document.items():
        if key == rows_key:
            out.write("{" + ", ".join(fields) + (", " if fields else "") + json.dumps(key) + ": [")
            fields = []
            for number, chunk in enumerate(encoded_rows):
                out.write(", " + chunk if number else chunk)
            out.write("]")
        else:
            fields.append(json.dumps(key) + ": " + json.dumps(value, default=str))
    out.write("".join(", " + field for field in fields) + "}\n")
    out.flush()


def run_async(coro: Awaitable[T]) -> T:
    import asyncio  # here, not at the top: offline commands such as `predict` never load it

    return asyncio.run(coro)  # type: ignore[arg-type]


def note(message: str) -> None:
    """A progress or status line for humans; on stderr so --json stdout stays one document. Escaped: it may
    quote a key or a server's words."""
    print(printable(message), file=sys.stderr, flush=True)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, right_aligned: set[int] = frozenset(),
                 max_rows: int | None = None, total_rows: int | None = None) -> str:
    """A plain-text table: columns as wide as their widest cell, two spaces apart; with `max_rows`,
    the head of a long table and a line saying how many rows were left out. `total_rows` says how
    long the table is when `rows` is only its head (so nobody builds rows that are never printed).
    Cells are escaped (`printable`): keys and other text from a stream draw as themselves and never
    break the table's lines."""
    shown = [[printable(str(cell)) for cell in row] for row in (rows if max_rows is None else rows[:max_rows])]
    header = [printable(str(cell)) for cell in header]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *shown)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(cell).rjust(width) if i in right_aligned else str(cell).ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [line(header)] + [line(row) for row in shown]
    total = len(rows) if total_rows is None else total_rows
    if total > len(shown):
        out.append(f"... {total - len(shown)} more rows (use --json for all)")
    return "\n".join(out)
