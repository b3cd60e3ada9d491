"""What a payload holds, judged from its bytes: gzip (inflated within bounds), JSON, UTF-8 text or hex.

Hostile payloads stay bounded: gzip inflates at most MAX_INFLATED_BYTES per record and, given an
`InflateBudget`, MAX_BATCH_INFLATED_BYTES per batch (a page of bombs is refused record by record, not
held), and JSON nested deeper than MAX_JSON_DEPTH is a decode error rather than a RecursionError
(here, or later when the value is printed from a deeper stack).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

KIND_JSON = "json"
KIND_TEXT = "text"
KIND_HEX = "hex"
KIND_ERROR = "decode-error"

ENCODING_GZIP = "gzip"

GZIP_MAGIC = b"\x1f\x8b"
MIB = 1024 * 1024
# A 1 MiB record can inflate to gigabytes; beyond this we say so instead of exhausting memory.
MAX_INFLATED_BYTES = 64 * MIB
# What the records of one GetRecords page may inflate in all: twelve records of 63 MiB are one record's worth.
MAX_BATCH_INFLATED_BYTES = 64 * MIB
# JSON deeper than this is not parsed: json's scanner and printer recurse once per level, and a value that
# parses near the interpreter's recursion limit would fail later, when printed from a deeper stack.
MAX_JSON_DEPTH = 256
INFLATE_STEP = 4 * MIB  # gzip output per step while inflating a large payload

# JSON's openers and whitespace, as first-byte integers (data[0]) and as one-byte slices (data[:1]).
JSON_OPENERS = frozenset(b'{["')
JSON_OPENER_BYTES = frozenset((b"{", b"[", b'"'))
WHITESPACE = b" \t\r\n"
WHITESPACE_BYTES = frozenset((b" ", b"\t", b"\r", b"\n"))
# C0 controls other than tab, newline and carriage return (and DEL) mean "not text".
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


# (kind, value, encoding, error, inflated size): what a payload holds, before it meets its record's
# metadata. A plain tuple because this runs once per record and a dataclass costs more than the JSON parse.
Content = tuple[str, Any, tuple[str, ...], "str | None", "int | None"]
GZIP_ONLY = (ENCODING_GZIP,)


@dataclass(slots=True)
class InflateBudget:
    """What the records of one batch may still inflate, in bytes (gzip)."""

    left: int = MAX_BATCH_INFLATED_BYTES


class _OverBudget(ValueError):
    pass


def classify(data: bytes, budget: InflateBudget | None = None) -> Content:
    """Decide what a (non-aggregate) payload is: gzip (then look inside), JSON, text, or hex."""
    if data[:2] == GZIP_MAGIC:
        try:
            inflated = _gunzip(data, budget)
        except _OverBudget as problem:
            return KIND_ERROR, data, GZIP_ONLY, f"not inflated: {problem}", None
        except ValueError as problem:
            return KIND_ERROR, data, GZIP_ONLY, f"corrupt gzip: {problem}", None
        kind, value, _, error, _ = classify_plain(inflated)
        return kind, value, GZIP_ONLY, error, len(inflated)
    return classify_plain(data)


def classify_plain(data: bytes | bytearray) -> Content:
    # One byte decides whether JSON is worth trying; json.loads raising on every text record would
    # cost more than the rest of the decoding.
    body = data
    if bytes(body[:1]) in WHITESPACE_BYTES:  # bytes(): an inflated payload may be a bytearray
        body = body.lstrip(WHITESPACE)  # as json.loads skips it; the value is the same
    if bytes(body[:1]) in JSON_OPENER_BYTES:
        value = json_or_not(body)
        if value is TOO_DEEP:
            return too_deep(data)
        if value is not NOT_JSON:
            return KIND_JSON, value, (), None, None
    return classify_not_json(data)


def too_deep(data: bytes | bytearray) -> Content:
    return KIND_ERROR, data, (), f"JSON nested deeper than {MAX_JSON_DEPTH} levels; not parsed", None


def classify_not_json(data: bytes | bytearray) -> Content:
    """Text if it is UTF-8 without control bytes, otherwise hex (for payloads JSON did not take)."""
    if _CONTROL_BYTES.search(data) is None:
        try:
            return KIND_TEXT, data.decode("utf-8"), (), None, None
        except UnicodeDecodeError:
            pass
    return KIND_HEX, data, (), None, None


# The decoder's scanner (the C one): what JSONDecoder.raw_decode calls, minus its Python frame.
# It returns (value, end) and raises StopIteration when no value starts at the index.
_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # typeshed does not list the scanner
_JSON_SPACE = " \t\n\r"
NOT_JSON = object()
TOO_DEEP = object()
# JSON's nesting brackets, and its strings (skipped whole: brackets inside them do not nest).
_JSON_NESTING = re.compile(rb'[\[{]|[\]}]|"(?:[^"\\]++|\\.)*+"')
_OPENERS = frozenset(b"[{")


def json_or_not(data: bytes | bytearray) -> Any:
    """The parsed value of a payload that opens with `{`, `[` or `"`, or NOT_JSON.

    json.loads minus its wrappers: JSON on the wire is UTF-8 (RFC 8259), so decode it directly
    rather than sniff the encoding, and call the decoder's scanner (json.loads spends about a
    third of its time in the layers around it for a typical 300-byte event). A sentinel rather
    than an exception for "not JSON" because text records starting with `[` are common in logs.
    TOO_DEEP when it nests deeper than MAX_JSON_DEPTH (checked only when it could)."""
    if len(data) > 2 * MAX_JSON_DEPTH and _nests_too_deep(data):  # a value d deep takes 2d bytes
        return TOO_DEEP
    try:
        text = data.decode("utf-8")
        value, end = _scan_json(text, 0)
    except (ValueError, StopIteration):  # UnicodeDecodeError, JSONDecodeError, nothing to scan
        return NOT_JSON
    except RecursionError:  # nested deeper than the stack allows here, however shallow MAX_JSON_DEPTH says
        return TOO_DEEP
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        return NOT_JSON  # extra data after the value
    return value


def _nests_too_deep(data: bytes | bytearray) -> bool:
    """Whether JSON text nests deeper than MAX_JSON_DEPTH: free below that many brackets, and otherwise
    one step per bracket, stopping at the first level too deep."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for match in _JSON_NESTING.finditer(data):
        bracket = match.group()[0]
        if bracket in _OPENERS:
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif bracket != 0x22:  # a closer; strings are skipped
            depth -= 1
    return False


def _gunzip(data: bytes, budget: InflateBudget | None = None) -> bytes | bytearray:
    """Inflate every gzip member, bounded per record and by the batch's budget; raise ValueError with a
    readable reason (_OverBudget when the batch's budget is what ran out). Large payloads inflate step by
    step into one growing buffer, so a bomb costs its cap, not twice it."""
    limit = MAX_INFLATED_BYTES if budget is None else min(MAX_INFLATED_BYTES, budget.left)
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        first = inflater.decompress(data, INFLATE_STEP)
    except zlib.error as problem:
        raise ValueError(_zlib_reason(problem)) from None
    if inflater.eof and len(first) <= limit and inflater.unused_data[:2] != GZIP_MAGIC:
        inflated: bytes | bytearray = first  # the usual case: one small member
    else:
        inflated = bytearray(first)
        del first
        _inflate_rest(inflater, inflated, limit, len(data))
    if budget is not None:
        budget.left -= len(inflated)
    return inflated


def _inflate_rest(inflater: zlib._Decompress, inflated: bytearray, limit: int, size: int) -> None:
    """Go on inflating into `inflated`: this member, then any members after it."""
    while True:
        over = len(inflated) > limit
        while not inflater.eof and not over:
            try:
                piece = inflater.decompress(inflater.unconsumed_tail, INFLATE_STEP)
            except zlib.error as problem:
                raise ValueError(_zlib_reason(problem)) from None
            if not piece and not inflater.unconsumed_tail:
                break  # nothing more to read: the stream stops short
            over = len(inflated) + len(piece) > limit
            if not over:
                inflated += piece
        if over:
            if limit < MAX_INFLATED_BYTES:
                raise _OverBudget(
                    f"this batch's other records inflated {(MAX_BATCH_INFLATED_BYTES - limit) / MIB:.0f} "
                    f"MiB, the most one batch holds is {MAX_BATCH_INFLATED_BYTES // MIB} MiB"
                )
            raise ValueError(f"inflates past {MAX_INFLATED_BYTES // MIB} MiB; not shown")
        if not inflater.eof:
            raise ValueError(f"truncated stream ({size} bytes in, {len(inflated)} inflated before the end)")
        following = inflater.unused_data
        if following[:2] != GZIP_MAGIC:
            return  # the last member (trailing padding after it is tolerated, as gzip(1) does)
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            inflated += inflater.decompress(following, INFLATE_STEP)
        except zlib.error as problem:
            raise ValueError(_zlib_reason(problem)) from None


def _zlib_reason(problem: zlib.error) -> str:
    text = str(problem)
    # "Error -3 while decompressing data: incorrect header check" -> "incorrect header check"
    return text.split(": ", 1)[1] if ": " in text else text
