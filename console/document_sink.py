"""Where a command's document goes: stdout, unless a caller collects it for itself.

The MCP server runs a command's own handler and answers with the document it would have printed, so
an agent's answer and `kconsole CMD --json` cannot differ. The sink is per context, so concurrent calls
each keep their own document."""

from __future__ import annotations

import contextvars
import io
import sys
from collections.abc import Callable
from typing import TextIO, TypeVar

T = TypeVar("T")

_document_sink: contextvars.ContextVar[io.StringIO | None] = contextvars.ContextVar("document_sink", default=None)


def output_stream() -> TextIO:
    """The stream a command writes its document to: stdout, or the collecting caller's buffer."""
    sink = _document_sink.get()
    return sys.stdout if sink is None else sink


def collect_document(function: Callable[[], T]) -> tuple[T, str]:
    """Run `function` (a command's handler) with its document written to a buffer, not stdout:
    its return value and every character it would have printed."""
    sink = io.StringIO()
    token = _document_sink.set(sink)
    try:
        return function(), sink.getvalue()
    finally:
        _document_sink.reset(token)
