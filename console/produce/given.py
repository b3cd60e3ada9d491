"""Records a user gives (`kconsole put`): JSON lines checked against AWS's record limits before
anything is sent, and matched again when they are read back.

A line is one JSON object: either `{"key": ..., "data": ...}` (a string `data` is sent as its UTF-8
bytes, anything else as compact JSON), or — with a key field — any document, sent as the line's own
bytes, whose partition key is that field (a dotted path: `user.id`). An explicit hash key field, when
named, places the record by hash key instead of by the MD5 of its key. Every problem names its line.

A line without its key (`{"data": ...}`, a document without the key field, or every line with
`no_key`) is a keyless record: only an AUTO stream takes those. Lines are read against AWS's largest
record (10 MiB) before any connection; `check_against_stream` then holds them to the stream's own
limit and distribution before anything is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from console.errors import BadInput
from console.keyspace.hashkeys import MAX_PARTITION_KEY_CHARS, parse_hash_key, validate_partition_key
from console.produce.report import ProduceResult
from console.produce.testrecords import LARGEST_RECORD_BYTES, ledger_key

MAX_GIVEN_RECORDS = 1_000_000  # one run of the ordered producer holds every record in memory
MAX_PROBLEMS_SHOWN = 20
# A line longer than this cannot hold a record of at most 10 MiB (its JSON escapes take up to 6 bytes
# per byte of data); such a line is reported without being read into memory whole.
MAX_LINE_BYTES = 6 * LARGEST_RECORD_BYTES + 4096
_READ_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class OverlongLine:
    """Stands for a line too long to hold any record; only its length was kept. `whole` False: reading
    stopped inside it (the input is refused anyway), so `length` is only how much of it was read."""

    length: int
    whole: bool = True


def bounded_lines(
    handle: Any, limit: int = MAX_LINE_BYTES, *, read_past_overlong: bool = True
) -> Iterator[bytes | OverlongLine]:
    """The lines of a binary file, never holding more than `limit` bytes of one line in memory. Without
    `read_past_overlong` (a bad line refuses the whole input) reading ends at the first overlong line, as
    soon as it passes `limit`: a huge file without newlines is not read to its end to be refused."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        if not read_past_overlong:
            yield OverlongLine(len(line), whole=False)
            return
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
    key: str | None  # None: sent without a partition key (AUTO streams only)
    data: bytes
    explicit_hash_key: int | None = None

    @property
    def size(self) -> int:
        """What counts against the record limit: data plus the partition key's UTF-8 bytes."""
        return len(self.data) + (len(self.key.encode("utf-8")) if self.key is not None else 0)


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
            name = ledger_key(record)
            position = seen.get(name, 0)
            seen[name] = position + 1
            found[(name, position)] = record.line
        return found

    @property
    def keyless(self) -> int:
        return sum(1 for record in self.records if record.key is None)


def check_against_stream(parsed: ParsedLines, *, stream: str, max_record_bytes: int, auto_distribution: bool) -> None:
    """Hold the lines to the stream's record size and distribution: a bad line moves from the
    records to the problems, by its number, with the rule and the command that changes it."""
    from console.topology.model import format_kib

    kept = []
    limit_kib = max_record_bytes // 1024
    for record in parsed.records:
        size = record.size
        if size > max_record_bytes:
            raise_to = min(10240, -(-size // 1024))
            parsed.problems.append(
                LineProblem(
                    record.line,
                    (
                        f"record is {size:,} bytes (data plus partition key); stream {stream} takes at most "
                        f"{max_record_bytes:,} ({format_kib(limit_kib)}): raise it with "
                        f"`kconsole stream max-record-size {stream} --kib {raise_to}`"
                    ),
                )
            )
        elif record.key is None and not auto_distribution:
            parsed.problems.append(
                LineProblem(
                    record.line,
                    (
                        f"no partition key; stream {stream} places records by key (USER_PARTITION_KEY), so each needs "
                        f"one (`kconsole stream distribution {stream} auto` lets Kinesis spread keyless records)"
                    ),
                )
            )
        else:
            kept.append(record)
    parsed.records = kept
    parsed.problems.sort(key=lambda problem: problem.line)


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


def parse_line(
    number: int, raw: bytes | str, *, key_field: str | None, explicit_hash_key_field: str | None, no_key: bool = False
) -> GivenRecord:
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
    key: str | None
    if no_key:
        key, data = None, text.strip().encode("utf-8")
    elif key_field is None:
        if "data" not in document:
            raise _Problem(
                'no \'data\' field (give {"key": ..., "data": ...}, {"data": ...} for a keyless '
                "record, or name the key with --key-field)"
            )
        key = _key_text(document["key"], "key") if "key" in document else None
        payload = document["data"]
        data = (
            payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        ).encode("utf-8")
    else:
        try:
            value = _field(document, key_field)
        except _Problem:
            value = None  # no key field: a keyless record, which only an AUTO stream takes
        key = None if value is None else _key_text(value, f"field {key_field!r}")
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
    if explicit is not None and key is None:
        raise _Problem("an explicit hash key needs a partition key (AUTO streams ignore both)")
    record = GivenRecord(number, key, data, explicit)
    if record.size > LARGEST_RECORD_BYTES:
        raise _Problem(
            f"record is {record.size:,} bytes (data plus partition key); AWS allows at most "
            f"{LARGEST_RECORD_BYTES:,} (10 MiB) on any stream"
        )
    return record


def parse_json_lines(
    lines: Iterable[bytes | str | OverlongLine],
    *,
    key_field: str | None = None,
    explicit_hash_key_field: str | None = None,
    no_key: bool = False,
) -> ParsedLines:
    """Every line checked; the records and, separately, each bad line with its number."""
    parsed = ParsedLines()
    explicit_of: dict[str, tuple[int | None, int]] = {}  # key -> (its explicit hash key, first line)
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, OverlongLine):
            parsed.problems.append(
                LineProblem(
                    number,
                    (f"line is {raw.length:,} bytes" if raw.whole else f"line is over {raw.length - 1:,} bytes")
                    + f": too long to hold a record of at most {LARGEST_RECORD_BYTES:,} bytes (10 MiB)"
                    + ("" if raw.whole else "; the input was not read further"),
                )
            )
            continue
        if not raw.strip():
            parsed.blank += 1
            continue
        try:
            record = parse_line(
                number, raw, key_field=key_field, explicit_hash_key_field=explicit_hash_key_field, no_key=no_key
            )
            first = explicit_of.setdefault(ledger_key(record), (record.explicit_hash_key, number))
            if first[0] != record.explicit_hash_key:
                raise _Problem(
                    f"key {ledger_key(record)[:40]!r} has explicit hash key {record.explicit_hash_key} here but "
                    f"{first[0]} on line {first[1]}: one key's records must share a placement to "
                    "keep their order"
                )
        except _Problem as problem:
            parsed.problems.append(LineProblem(number, str(problem)))
            continue
        if len(parsed.records) >= MAX_GIVEN_RECORDS:
            raise BadInput(
                f"more than {MAX_GIVEN_RECORDS:,} records in one put; split the input", code="too_many_records"
            )
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
        # Keyless records are each their own ledger key; read back, only their bytes tell them apart.
        self._keyless: dict[bytes, list[str]] = {}
        counts: dict[str, int] = {}
        for record in records:
            name = ledger_key(record)
            if record.key is None:
                self._keyless.setdefault(record.data, []).append(name)
                continue
            position = counts.get(name, 0)
            counts[name] = position + 1
            self._positions.setdefault((name, record.data), []).append(position)

    def __call__(self, run: ProduceResult, raw: dict[str, Any]) -> Identified | None:
        key = raw.get("PartitionKey")
        data = bytes(raw.get("Data", b""))
        if key is None:
            return self._keyless_record(run, raw, data)
        positions = self._positions.get((key, data))
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

    def _keyless_record(self, run: ProduceResult, raw: dict[str, Any], data: bytes) -> Identified | None:
        names = self._keyless.get(data)
        if not names:
            return None
        chosen = names[0]
        if len(names) > 1:  # the same bytes given twice: the acknowledged sequence number decides
            for name in names:
                ack = run.acks.get((name, 0))
                if ack is not None and ack.sequence_number == raw.get("SequenceNumber"):
                    chosen = name
                    break
        ack = run.acks.get((chosen, 0))
        return Identified(chosen, 0, ack.sent_at if ack is not None else 0.0)
