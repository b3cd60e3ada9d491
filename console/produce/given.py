"""Records a user gives (`kconsole put`): JSON lines checked against AWS's record limits before
anything is sent, and matched again when they are read back.

A line is one JSON object: either `{"key": ..., "data": ...}` (a string `data` is sent as its UTF-8
bytes, anything else as compact JSON), or — with a key field — any document, sent as the line's own
bytes, whose partition key is that field (a dotted path: `user.id`). An explicit hash key field, when
named, places the record by hash key instead of by the MD5 of its key. Every problem names its line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from console.errors import BadInput
from console.keyspace.hashkeys import MAX_PARTITION_KEY_CHARS, parse_hash_key, validate_partition_key
from console.produce.report import ProduceResult
from console.produce.testrecords import MAX_RECORD_BYTES

MAX_GIVEN_RECORDS = 1_000_000  # one run of the ordered producer holds every record in memory
MAX_PROBLEMS_SHOWN = 20
# A line longer than this cannot hold a record of at most 1 MiB (its JSON escapes take up to 6 bytes
# per byte of data); such a line is reported without being read into memory whole.
MAX_LINE_BYTES = 6 * MAX_RECORD_BYTES + 4096
_READ_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class OverlongLine:
    """Stands for a line too long to hold any record; only its length was kept."""

    length: int


def bounded_lines(handle: Any, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | OverlongLine]:
    """The lines of a binary file, never holding more than `limit` bytes of one line in memory."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        length = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(_READ_CHUNK)
            if not line:
                break
            length += len(line)
        yield OverlongLine(length)


@dataclass(frozen=True, slots=True)
class GivenRecord:
    line: int  # 1-based line number in the input
    key: str
    data: bytes
    explicit_hash_key: int | None = None


@dataclass(frozen=True, slots=True)
class LineProblem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParsedLines:
    records: list[GivenRecord] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    blank: int = 0

    def line_of(self) -> dict[tuple[str, int], int]:
        """(key, per-key position) -> input line: what the producer's acks are keyed by."""
        seen: dict[str, int] = {}
        found = {}
        for record in self.records:
            position = seen.get(record.key, 0)
            seen[record.key] = position + 1
            found[(record.key, position)] = record.line
        return found


class _Problem(Exception):
    pass


def _field(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise _Problem(f"no field {path!r}")
        value = value[part]
    return value


def _key_text(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Problem(f"{what} must be a string (or a whole number); got {type(value).__name__}")
    key = str(value)
    if len(key) > MAX_PARTITION_KEY_CHARS:
        raise _Problem(f"partition key is {len(key)} characters; AWS allows 1 to {MAX_PARTITION_KEY_CHARS}")
    try:
        return validate_partition_key(key)
    except BadInput as error:
        raise _Problem(error.message) from None


def parse_line(number: int, raw: bytes | str, *, key_field: str | None,
               explicit_hash_key_field: str | None) -> GivenRecord:
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as error:
        raise _Problem(f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    text = text.rstrip("\r\n")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise _Problem(f"not JSON: {getattr(error, 'msg', error)} at column {getattr(error, 'colno', '?')}") from None
    if not isinstance(document, dict):
        raise _Problem(f"expected a JSON object; got {type(document).__name__}")
    if key_field is None:
        missing = [name for name in ("key", "data") if name not in document]
        if missing:
            raise _Problem(f"no {' or '.join(repr(m) for m in missing)} field (give {{\"key\": ..., \"data\": ...}} "
                           "or name the key with --key-field)")
        key = _key_text(document["key"], "key")
        payload = document["data"]
        data = (payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"),
                                                                     ensure_ascii=False)).encode("utf-8")
    else:
        key = _key_text(_field(document, key_field), f"field {key_field!r}")
        data = text.strip().encode("utf-8")
    explicit = None
    if explicit_hash_key_field is not None:
        value = _field(document, explicit_hash_key_field)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Problem(f"explicit hash key {explicit_hash_key_field!r} must be a decimal string or number")
        try:
            explicit = parse_hash_key(value, what="explicit hash key")
        except BadInput as error:
            raise _Problem(error.message) from None
    size = len(data) + len(key.encode("utf-8"))
    if size > MAX_RECORD_BYTES:
        raise _Problem(f"record is {size:,} bytes (data plus partition key); AWS allows at most "
                       f"{MAX_RECORD_BYTES:,} (1 MiB)")
    return GivenRecord(number, key, data, explicit)


def parse_json_lines(lines: Iterable[bytes | str | OverlongLine], *, key_field: str | None = None,
                     explicit_hash_key_field: str | None = None) -> ParsedLines:
    """Every line checked; the records and, separately, each bad line with its number."""
    parsed = ParsedLines()
    explicit_of: dict[str, tuple[int | None, int]] = {}  # key -> (its explicit hash key, first line)
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, OverlongLine):
            parsed.problems.append(LineProblem(number, f"line is {raw.length:,} bytes: too long to hold a record "
                                                       f"of at most {MAX_RECORD_BYTES:,} bytes (1 MiB)"))
            continue
        if not raw.strip():
            parsed.blank += 1
            continue
        try:
            record = parse_line(number, raw, key_field=key_field, explicit_hash_key_field=explicit_hash_key_field)
            first = explicit_of.setdefault(record.key, (record.explicit_hash_key, number))
            if first[0] != record.explicit_hash_key:
                raise _Problem(f"key {record.key[:40]!r} has explicit hash key {record.explicit_hash_key} here but "
                               f"{first[0]} on line {first[1]}: one key's records must share a placement to "
                               "keep their order")
        except _Problem as problem:
            parsed.problems.append(LineProblem(number, str(problem)))
            continue
        if len(parsed.records) >= MAX_GIVEN_RECORDS:
            raise BadInput(f"more than {MAX_GIVEN_RECORDS:,} records in one put; split the input", code="too_many_records")
        parsed.records.append(record)
    return parsed


class Identified(NamedTuple):
    key: str
    seq: int
    sent_at: float


class GivenRecordMatcher:
    """Which given record a record read back is: its partition key and bytes, and — when the same
    record was given twice — the sequence number the put was acknowledged with."""

    def __init__(self, records: Iterable[GivenRecord]) -> None:
        self._positions: dict[tuple[str, bytes], list[int]] = {}
        counts: dict[str, int] = {}
        for record in records:
            position = counts.get(record.key, 0)
            counts[record.key] = position + 1
            self._positions.setdefault((record.key, record.data), []).append(position)

    def __call__(self, run: ProduceResult, raw: dict[str, Any]) -> Identified | None:
        key = raw.get("PartitionKey")
        if not isinstance(key, str):  # no given record has another key
            return None
        positions = self._positions.get((key, bytes(raw.get("Data", b""))))
        if not positions:
            return None
        chosen = positions[0]
        if len(positions) > 1:
            for position in positions:
                ack = run.acks.get((key, position))
                if ack is not None and ack.sequence_number == raw.get("SequenceNumber"):
                    chosen = position
                    break
        ack = run.acks.get((key, chosen))
        return Identified(key, chosen, ack.sent_at if ack is not None else 0.0)
