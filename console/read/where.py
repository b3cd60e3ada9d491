"""Field filters: a JMESPath expression over a decoded record, e.g.
`data.tenant == '42' && data.total > \\`100\\``.

The expression sees one object per user record:

    key       partition key                 shard_id  the shard it was read from
    seq       sequence number (a string)    sub_seq   position inside a KPL aggregate, or null
    ehk       explicit hash key, or null    arrival   ISO-8601 arrival time (UTC, milliseconds)
    size      payload bytes                 kind      json | text | hex | decode-error
    data      the parsed JSON value (kind json), the text (kind text), otherwise null

A record passes when the expression's value is truthy in JMESPath's sense (not null, false, empty).
The expression is compiled once, before any read, with the same bounds as `--query`: a long or
malformed one is one line quoting at most its first 80 characters.
"""

from __future__ import annotations

from typing import Any

from console.errors import BadInput
from console.read.decoding import DecodedRecord, iso_time
from console.read.payloads import KIND_JSON, KIND_TEXT

# Long enough for any filter a person types; a pasted file is not an expression.
MAX_EXPRESSION_CHARS = 4096
# jmespath turns a number literal with int(): a 5,000-digit literal costs quadratic time to read.
MAX_NUMBER_DIGITS = 40
SHOWN_CHARS = 80


class RecordFilter:
    """`RecordFilter(expression)(record)` says whether the record passes."""

    def __init__(self, expression: str, option: str = "--where") -> None:
        self.expression = expression
        self._compiled = compile_expression(expression, option)

    def __call__(self, record: DecodedRecord) -> bool:
        value = self._compiled.search(fields_of(record))
        return not (value is None or value is False or value == "" or value == [] or value == {})


def fields_of(record: DecodedRecord) -> dict[str, Any]:
    """What a filter sees of a record (module docstring)."""
    return {
        "key": record.partition_key,
        "shard_id": record.shard_id,
        "seq": record.sequence_number,
        "sub_seq": record.sub_sequence_number,
        "ehk": record.explicit_hash_key,
        "arrival": iso_time(record.arrival),
        "size": record.size,
        "kind": record.kind,
        "data": record.value if record.kind in (KIND_JSON, KIND_TEXT) else None,
    }


def compile_expression(expression: str, option: str = "--where") -> Any:
    import jmespath
    from jmespath.exceptions import JMESPathError

    shown = expression if len(expression) <= SHOWN_CHARS else expression[:SHOWN_CHARS] + "…"
    if not expression.strip():
        raise BadInput(f"{option} needs an expression, e.g. {option} \"data.tenant == '42'\"", code="usage")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise BadInput(
            f"{option} is {len(expression):,} characters; the most is {MAX_EXPRESSION_CHARS:,} ({shown!r})",
            code="usage",
        )
    if _longest_digit_run(expression) > MAX_NUMBER_DIGITS:
        raise BadInput(f"{option} holds a number longer than {MAX_NUMBER_DIGITS} digits ({shown!r})", code="usage")
    try:
        return jmespath.compile(expression)
    except (JMESPathError, ValueError, RecursionError) as error:
        reason = " ".join(str(error).split())[:200]
        raise BadInput(f"{option} is not a valid JMESPath expression: {reason} ({shown!r})", code="usage") from None


def _longest_digit_run(text: str) -> int:
    longest = run = 0
    for character in text:
        run = run + 1 if character.isdigit() else 0
        longest = max(longest, run)
    return longest
