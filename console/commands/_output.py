"""The commands' one output path, with the AWS CLI's conventions.

Every command builds one JSON-able document and a human rendering of it; `emit` prints it as
`--output json` (`--json` for short), `text` (tab-separated, no header: for awk and cut), `table` (a
rich table), or, by default, the human view. `--query EXPR` is JMESPath over the JSON document, as in
the AWS CLI (and implies JSON unless --output says otherwise); `--max-items N` keeps the first N of
each list. `configure` checks those options once, before any work starts."""

from __future__ import annotations

import contextvars
import json
import re
import shutil
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from console.document_sink import output_stream
from console.errors import BadInput
from console.read.printable import printable, printable_json

T = TypeVar("T")

OUTPUT_FORMATS = ("json", "text", "table")
# No AWS limit applies to a local option; this bound only keeps a typo from reading as "everything".
MAX_ITEMS_LIMIT = 10_000_000

# --max-items for the human views, which render from objects rather than the document.
_max_rows: contextvars.ContextVar[int | None] = contextvars.ContextVar("max_rows", default=None)


def configure(args: Any) -> None:
    """Check --output/--json/--query/--max-items and settle `args.output`; `args.json` then says
    whether JSON goes out, so a command's own JSON path (tail's JSON lines, say) follows --output."""
    output = getattr(args, "output", None)
    if output is not None and output not in OUTPUT_FORMATS and output not in getattr(args, "export_formats", ()):
        raise BadInput(
            f"--output {output} is for exporting records (kconsole tail); use json, text or table", code="usage"
        )
    if getattr(args, "json", False):
        if output not in (None, "json"):
            raise BadInput(f"--json and --output {output} disagree; give one", code="usage")
        output = "json"
    query = getattr(args, "query", None)
    if query is not None:
        compile_query(query)
        output = output or "json"
    max_items = getattr(args, "max_items", None)
    if max_items is not None and not 1 <= max_items <= MAX_ITEMS_LIMIT:
        raise BadInput(f"--max-items must be from 1 to {MAX_ITEMS_LIMIT:,}; got {max_items}", code="usage")
    if max_items is not None and getattr(args, "limit", "absent") is None:
        args.limit = max_items  # a streaming command (tail) stops after N records
    args.output = output
    args.json = output == "json"


MAX_QUERY_CHARS = 4096  # a --query is a line of JMESPath, not a program
MAX_QUERY_NUMBER_DIGITS = 20  # any index or number in a document fits in 20 digits
QUERY_SHOWN_CHARS = 80  # how much of a bad --query an error line quotes
_DIGIT_RUN = re.compile(rf"\d{{{MAX_QUERY_NUMBER_DIGITS + 1},}}")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")  # raw strings and quoted identifiers


def _shown_query(expression: str) -> str:
    shown = expression if len(expression) <= QUERY_SHOWN_CHARS else expression[:QUERY_SHOWN_CHARS] + "..."
    return repr(shown)


def compile_query(expression: str) -> Any:
    """The compiled --query, checked within bounds first: at most MAX_QUERY_CHARS characters and no
    number longer than MAX_QUERY_NUMBER_DIGITS digits (outside quotes), so a 5,000-digit literal is
    one line, not Python's int-conversion error. An error quotes at most 80 characters of it."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    if len(expression) > MAX_QUERY_CHARS:
        raise BadInput(
            f"--query is {len(expression):,} characters; at most {MAX_QUERY_CHARS:,}: {_shown_query(expression)}",
            code="usage",
        )
    if _DIGIT_RUN.search(_QUOTED.sub("''", expression)):
        raise BadInput(
            f"--query holds a number of more than {MAX_QUERY_NUMBER_DIGITS} digits: {_shown_query(expression)}",
            code="usage",
        )
    try:
        return jmespath.compile(expression)
    except (JMESPathError, ValueError, RecursionError) as error:
        reason = getattr(error, "msg", None) or type(error).__name__
        position = getattr(error, "lex_position", None)
        where = f" at character {position}" if isinstance(position, int) else ""
        reason = " ".join(str(reason).split())[:80]
        raise BadInput(
            f"--query is not a valid JMESPath expression ({reason}{where}): {_shown_query(expression)}", code="usage"
        ) from None


def emit(args: Any, document: Any, text: str | Callable[[], str]) -> None:
    """Print `document` in the chosen --output (after --max-items and --query), else the human text.
    Every line of the human text is escaped (`printable`), so a key or message quoted anywhere in it
    draws as itself (JSON escapes all but ASCII already)."""
    output = getattr(args, "output", None) or ("json" if getattr(args, "json", False) else None)
    max_items = getattr(args, "max_items", None)
    if output is None:
        token = _max_rows.set(max_items)
        try:
            lines = (text() if callable(text) else text).rstrip("\n").split("\n")
            output_stream().write("\n".join(printable(line) for line in lines) + "\n")
        finally:
            _max_rows.reset(token)
    else:
        document = shape(document, max_items=max_items, query=getattr(args, "query", None))
        output_stream().write(render(document, output))
    output_stream().flush()


def plain_json(args: Any) -> bool:
    """--json (or --output json) with neither --query nor --max-items: the document goes out as it is,
    so a command may stream it (`emit_json_with_rows`)."""
    return (
        (getattr(args, "output", None) == "json" or getattr(args, "json", False))
        and getattr(args, "query", None) is None
        and getattr(args, "max_items", None) is None
    )


def shape(document: Any, *, max_items: int | None, query: str | None) -> Any:
    """The document as plain JSON values, its lists cut to `max_items` (said on stderr), then queried.
    Plain `--json` skips the round trip: a million-key document is not encoded twice."""
    if max_items is None and query is None:
        return document
    document = json.loads(json.dumps(document, default=str))
    if max_items is not None:
        document = _first_items(document, max_items)
    if query is not None:
        document = compile_query(query).search(document)
    return document


def _first_items(document: Any, limit: int) -> Any:
    """The first `limit` items of the document if it is a list, else of each list at its top level."""
    cut = {}
    if isinstance(document, list):
        if len(document) > limit:
            cut["items"] = len(document)
            document = document[:limit]
    elif isinstance(document, dict):
        for key, value in list(document.items()):
            if isinstance(value, list) and len(value) > limit:
                cut[key] = len(value)
                document[key] = value[:limit]
    if cut:
        note(
            "kconsole: --max-items "
            + str(limit)
            + ": showing the first "
            + str(limit)
            + " of "
            + ", ".join(f"{total} {key}" for key, total in cut.items())
        )
    return document


def render(document: Any, output: str) -> str:
    if output == "json":
        return json.dumps(document, default=str) + "\n"
    if output == "text":
        return "".join(line + "\n" for line in text_lines(document))
    return render_rich_table(document)


def emit_record(args: Any, record: dict[str, Any], human_line: Callable[[], str]) -> str:
    """One record of a streaming command (tail) as one line in the chosen --output; "" when --query
    selects nothing from it. (A table cannot stream; the command refuses --output table first.)"""
    output = getattr(args, "output", None)
    if output is None:
        return human_line() + "\n"
    query = getattr(args, "query", None)
    if query is not None:
        record = compile_query(query).search(json.loads(json.dumps(record, default=str)))
        if record is None:
            return ""
    if output == "json":  # the exact value, with controls as JSON escapes (printable_json)
        return printable_json(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
    return "".join(line + "\n" for line in text_lines(record))


# -- --output text: the AWS CLI's tab-separated layout ---------------------------------------------


def text_lines(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """A dict's scalar fields on one line (tab-separated, in order), then each nested list or dict
    under its key in capitals; a list of scalars on one line; a list of objects one line each."""
    if isinstance(value, dict):
        scalars = [item for item in value.values() if not isinstance(item, (dict, list))]
        if scalars:
            yield "\t".join(prefix + tuple(_text_cell(item) for item in scalars))
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                yield from text_lines(item, (key.upper(),))
    elif isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            if value:
                yield "\t".join(prefix + tuple(_text_cell(item) for item in value))
        else:
            for item in value:
                yield from text_lines(item, prefix)
    else:
        yield "\t".join((*prefix, _text_cell(value)))


def _text_cell(value: Any) -> str:
    return printable("None" if value is None else str(value))


# -- --output table: rich ---------------------------------------------------------------------------


def render_rich_table(document: Any) -> str:
    from rich.console import Console, Group

    document = json.loads(json.dumps(document, default=str))  # datetimes and the like as text
    parts = list(_rich_parts(document, title=None))
    terminal = sys.stdout.isatty()
    # Off a terminal nothing is wrapped: long hash keys stay on one line for whoever reads the file.
    width = shutil.get_terminal_size().columns if terminal else 100_000
    console = Console(width=width, highlight=False, markup=False, emoji=False, color_system=None, force_terminal=False)
    with console.capture() as capture:
        console.print(Group(*parts))
    return "\n".join(line.rstrip() for line in capture.get().splitlines()) + "\n"


def _rich_parts(value: Any, title: str | None) -> Iterator[Any]:
    from rich.table import Table
    from rich.text import Text

    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        columns = list(dict.fromkeys(key for item in value for key in item))
        table = Table(*columns, title=title, title_justify="left")
        for item in value:
            table.add_row(*(Text(_table_cell(item.get(column))) for column in columns))
        yield table
    elif isinstance(value, list):
        table = Table(title or "value", title_justify="left")
        for item in value:
            table.add_row(Text(_table_cell(item)))
        yield table
    elif isinstance(value, dict):
        scalars = {key: item for key, item in value.items() if not _is_nested_table(item)}
        if scalars:
            table = Table("key", "value", title=title, title_justify="left")
            for key, item in scalars.items():
                table.add_row(Text(printable(key)), Text(_table_cell(item)))
            yield table
        for key, item in value.items():
            if _is_nested_table(item):
                yield from _rich_parts(item, title=key if title is None else f"{title}.{key}")
    else:
        yield Text(_table_cell(value))


def _is_nested_table(value: Any) -> bool:
    return (isinstance(value, list) and any(isinstance(item, dict) for item in value)) or (
        isinstance(value, dict) and any(isinstance(item, (dict, list)) for item in value.values())
    )


def _table_cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return printable(json.dumps(value, ensure_ascii=False, default=str))
    return printable("" if value is None else str(value))


def emit_json_with_rows(document: dict[str, Any], rows_key: str, encoded_rows: Iterable[str]) -> None:
    """Print `document` as json.dumps would, its `rows_key` holding a long list whose items arrive
    already encoded, a chunk (comma-joined items) at a time. Large writes keep the cost down even when
    stdout is unbuffered (PYTHONUNBUFFERED), where json.dump's many small writes are one syscall each."""
    out = output_stream()
    fields: list[str] = []
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

    return asyncio.run(coro)  # type: ignore[arg-type]  # callers pass coroutines; Awaitable keeps their types loose


def note(message: str) -> None:
    """A progress or status line for humans; on stderr so --json stdout stays one document. Escaped: it may
    quote a key or a server's words."""
    print(printable(message), file=sys.stderr, flush=True)


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right_aligned: AbstractSet[int] = frozenset(),
    max_rows: int | None = None,
    total_rows: int | None = None,
) -> str:
    """A plain-text table: columns as wide as their widest cell, two spaces apart; with `max_rows`,
    the head of a long table and a line saying how many rows were left out. `total_rows` says how
    long the table is when `rows` is only its head (so nobody builds rows that are never printed).
    Cells are escaped (`printable`): keys and other text from a stream draw as themselves and never
    break the table's lines."""
    limit = _max_rows.get()  # --max-items, in the human view
    if limit is not None:
        max_rows = limit if max_rows is None else min(max_rows, limit)
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
