"""Decode Kinesis record payloads for people: KPL aggregates, gzip, JSON, UTF-8 text, otherwise hex.

Detection is per record and cheap: the first bytes decide (KPL magic 0xF3899AC2, gzip 1F 8B, an
opening `{`, `[` or `"`), so plain JSON costs one JSON parse plus a few byte compares. A payload
that claims a format but is broken (an aggregate whose MD5 trailer does not match, a truncated
gzip stream) becomes a `decode-error` record carrying the reason, never an exception.

Hostile payloads stay bounded: gzip inflates at most MAX_INFLATED_BYTES per record and, given an
`InflateBudget`, MAX_BATCH_INFLATED_BYTES per batch (a page of bombs is refused record by record, not
held), and JSON nested deeper than MAX_JSON_DEPTH is a decode error rather than a RecursionError
(here, or later when the value is printed from a deeper stack).

KPL aggregates are parsed with aws-kinesis-agg's own protobuf schema and framing constants. We do
not route them through its `iter_deaggregate_records` because that function passes a malformed
aggregate through silently as if it were a plain record, prints errors to stderr (which would tear
the terminal UI), re-base64-encodes every inner record, and reads `explicit_hash_key_index` without
checking presence (an inner record without an explicit hash key gets the table's first one).
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# `messages_pb2` imports its sibling `config_pb2` as a top-level module; importing the
# deaggregator first puts the package directory on sys.path, as the library expects.
from aws_kinesis_agg import DIGEST_SIZE, MAGIC, deaggregator, messages_pb2  # noqa: F401
from google.protobuf.message import DecodeError

from console.read.printable import printable, printable_json
from console.read.schemas import HEADER_VERSION, SchemaCatalog, SchemaDecodeError, decode_payload, schema_version_id
from console.topology.model import NO_KEY

KIND_JSON = "json"
KIND_TEXT = "text"
KIND_HEX = "hex"
KIND_ERROR = "decode-error"

ENCODING_KPL = "kpl"
ENCODING_GZIP = "gzip"
ENCODING_GLUE = "glue"  # the Glue Schema Registry serializer's header
ENCODING_ZLIB = "zlib"

GZIP_MAGIC = b"\x1f\x8b"
# First bytes of the KPL and gzip magics: one integer compare routes most records.
_MAGIC_FIRST = MAGIC[0]
_GZIP_FIRST = GZIP_MAGIC[0]
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
_JSON_OPENERS = frozenset(b'{["')
_JSON_OPENER_BYTES = frozenset((b"{", b"[", b'"'))
_WHITESPACE = b" \t\r\n"
_WHITESPACE_BYTES = frozenset((b" ", b"\t", b"\r", b"\n"))
# C0 controls other than tab, newline and carriage return (and DEL) mean "not text".
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(slots=True)
class DecodedRecord:
    """One user record as shown: where it came from and what it holds. Treat it as immutable
    (not `frozen=True` only because a frozen dataclass's __init__ costs as much as parsing the JSON).

    `value` is the parsed JSON value (kind json), the text (kind text) or the raw bytes (kind hex
    and decode-error, so hex is only spelled out when shown). `encoding` lists the wrappers peeled
    off, outermost first, e.g. ("kpl", "gzip").
    """

    shard_id: str
    sequence_number: str
    partition_key: str | None  # None: sent without one (an AUTO stream's records may be)
    arrival: datetime | None
    size: int
    kind: str
    value: Any
    encoding: tuple[str, ...] = ()
    sub_sequence_number: int | None = None
    explicit_hash_key: str | None = None
    error: str | None = None
    inflated_size: int | None = None  # bytes a gzip payload inflated to
    data: bytes | None = None  # the payload exactly as stored (an aggregate's inner record: its own bytes)
    schema: str | None = None  # REGISTRY/NAME vN of a Glue Schema Registry record

    @property
    def key_text(self) -> str:
        """The partition key as shown to people: a keyless record's is an em dash."""
        return NO_KEY if self.partition_key is None else self.partition_key

    @property
    def weight(self) -> int:
        """Roughly the bytes the record holds: its payload, or what the payload inflated to."""
        return self.inflated_size or self.size

    @property
    def position(self) -> str:
        """Sequence number, with the sub-sequence for a record that came out of an aggregate."""
        if self.sub_sequence_number is None:
            return self.sequence_number
        return f"{self.sequence_number}/{self.sub_sequence_number}"

    @property
    def kind_label(self) -> str:
        """'json', 'gzip+json', 'kpl+gzip+json', 'decode-error'."""
        return "+".join((*self.encoding, self.kind)) if self.encoding else self.kind

    def content_json(self) -> Any:
        """The content as a JSON-able value: the parsed JSON, the text, or the bytes in hex."""
        if isinstance(self.value, (bytes, bytearray)):
            return self.value.hex()
        return self.value

    def content_text(self, *, pretty: bool = False, max_hex_bytes: int | None = None) -> str:
        """The content as one string (compact, or indented JSON with `pretty`)."""
        if self.kind == KIND_JSON:
            if pretty:
                return json.dumps(self.value, indent=2, ensure_ascii=False)
            return _COMPACT.encode(self.value)
        if self.kind == KIND_TEXT:
            return self.value
        raw = bytes(self.value)
        if max_hex_bytes is not None and len(raw) > max_hex_bytes:
            return f"{raw[:max_hex_bytes].hex()}… ({len(raw)} bytes)"
        return raw.hex()

    def json_line(self) -> str:
        """`to_json()` as one JSON line (no newline), with `printable_json`'s guarantee: the same value as
        `printable_json(json.dumps(self.to_json(), ensure_ascii=False))`, and nothing a terminal acts on.

        Done once per record and cheaply: a JSON payload whose text is already printable (most are)
        is the content as it came, not parsed-then-printed again; everything else is encoded."""
        content = None
        if (
            self.kind == KIND_JSON
            and self.schema is None
            and ENCODING_GZIP not in self.encoding
            and self.data is not None
        ):
            text = self.data.decode("utf-8").strip(" ")  # it parsed as JSON, so it is UTF-8
            if text.isprintable():  # no control character, not even whitespace between tokens
                content = text
        if content is None:
            content = _ENCODER.encode(self.content_json())
        hash_key = self.explicit_hash_key
        line = "".join(
            (
                '{"shard_id": ',
                _string(self.shard_id),
                ', "sequence_number": ',
                _string(self.sequence_number),
                ', "sub_sequence_number": ',
                "null" if self.sub_sequence_number is None else str(self.sub_sequence_number),
                ', "partition_key": ',
                "null" if self.partition_key is None else _string(self.partition_key),
                ', "explicit_hash_key": ',
                "null" if hash_key is None else _string(hash_key),
                ', "arrival": ',
                "null" if self.arrival is None else f'"{iso_time(self.arrival)}"',
                ', "size": ',
                str(self.size),
                ', "kind": ',
                _string(self.kind),
                ', "encoding": ',
                _ENCODINGS.get(self.encoding) or _ENCODER.encode(list(self.encoding)),
                ', "content": ',
                content,
                "" if self.schema is None else ', "schema": ' + _string(self.schema),
                "}" if self.error is None else ', "error": ' + _string(self.error) + "}",
            )
        )
        if line.isprintable():
            return line
        return printable_json(line)

    def to_json(self) -> dict:
        doc = {
            "shard_id": self.shard_id,
            "sequence_number": self.sequence_number,
            "sub_sequence_number": self.sub_sequence_number,
            "partition_key": self.partition_key,
            "explicit_hash_key": self.explicit_hash_key,
            "arrival": iso_time(self.arrival),
            "size": self.size,
            "kind": self.kind,
            "encoding": list(self.encoding),
            "content": self.content_json(),
        }
        if self.schema is not None:
            doc["schema"] = self.schema
        if self.error is not None:
            doc["error"] = self.error
        return doc


def iso_time(moment: datetime | None) -> str | None:
    """An arrival time as ISO-8601 UTC to the millisecond (`2026-11-22T20:00:00.123Z`). Records of one page
    mostly share their arrival millisecond, so recent answers are remembered."""
    if moment is None:
        return None
    text = _ISO_CACHE.get(moment)
    if text is None:
        if len(_ISO_CACHE) >= _ISO_CACHE_LIMIT:
            _ISO_CACHE.clear()
        aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        text = _ISO_CACHE[moment] = aware.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text


_ISO_CACHE: dict[datetime, str] = {}
_ISO_CACHE_LIMIT = 4096
# The encoders json.dumps(..., ensure_ascii=False) uses, made once: a string, and any other value.
_string = json.encoder.encode_basestring
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
# Made once: json.dumps with any option builds a new encoder per call, a third of a small value's cost.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_ENCODINGS = {(): "[]", ("gzip",): '["gzip"]', ("kpl",): '["kpl"]', ("kpl", "gzip"): '["kpl", "gzip"]'}


# (kind, value, encoding, error, inflated size): what a payload holds, before it meets its record's
# metadata. A plain tuple because this runs once per record and a dataclass costs more than the JSON parse.
Content = tuple[str, Any, tuple[str, ...], "str | None", "int | None"]
_GZIP_ONLY = (ENCODING_GZIP,)
_KPL_ONLY = (ENCODING_KPL,)
_KPL_GZIP = (ENCODING_KPL, ENCODING_GZIP)


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
            return KIND_ERROR, data, _GZIP_ONLY, f"not inflated: {problem}", None
        except ValueError as problem:
            return KIND_ERROR, data, _GZIP_ONLY, f"corrupt gzip: {problem}", None
        kind, value, _, error, _ = _classify_plain(inflated)
        return kind, value, _GZIP_ONLY, error, len(inflated)
    return _classify_plain(data)


def _classify_plain(data: bytes | bytearray) -> Content:
    # One byte decides whether JSON is worth trying; json.loads raising on every text record would
    # cost more than the rest of the decoding.
    body = data
    if bytes(body[:1]) in _WHITESPACE_BYTES:  # bytes(): an inflated payload may be a bytearray
        body = body.lstrip(_WHITESPACE)  # as json.loads skips it; the value is the same
    if bytes(body[:1]) in _JSON_OPENER_BYTES:
        value = _json_or_not(body)
        if value is _TOO_DEEP:
            return _too_deep(data)
        if value is not _NOT_JSON:
            return KIND_JSON, value, (), None, None
    return _classify_not_json(data)


def _too_deep(data: bytes | bytearray) -> Content:
    return KIND_ERROR, data, (), f"JSON nested deeper than {MAX_JSON_DEPTH} levels; not parsed", None


def _classify_not_json(data: bytes | bytearray) -> Content:
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
_NOT_JSON = object()
_TOO_DEEP = object()
# JSON's nesting brackets, and its strings (skipped whole: brackets inside them do not nest).
_JSON_NESTING = re.compile(rb'[\[{]|[\]}]|"(?:[^"\\]++|\\.)*+"')
_OPENERS = frozenset(b"[{")


def _json_or_not(data: bytes | bytearray) -> Any:
    """The parsed value of a payload that opens with `{`, `[` or `"`, or _NOT_JSON.

    json.loads minus its wrappers: JSON on the wire is UTF-8 (RFC 8259), so decode it directly
    rather than sniff the encoding, and call the decoder's scanner (json.loads spends about a
    third of its time in the layers around it for a typical 300-byte event). A sentinel rather
    than an exception for "not JSON" because text records starting with `[` are common in logs.
    _TOO_DEEP when it nests deeper than MAX_JSON_DEPTH (checked only when it could)."""
    if len(data) > 2 * MAX_JSON_DEPTH and _nests_too_deep(data):  # a value d deep takes 2d bytes
        return _TOO_DEEP
    try:
        text = data.decode("utf-8")
        value, end = _scan_json(text, 0)
    except (ValueError, StopIteration):  # UnicodeDecodeError, JSONDecodeError, nothing to scan
        return _NOT_JSON
    except RecursionError:  # nested deeper than the stack allows here, however shallow MAX_JSON_DEPTH says
        return _TOO_DEEP
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        return _NOT_JSON  # extra data after the value
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


def _inflate_rest(inflater, inflated: bytearray, limit: int, size: int) -> None:
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


def decode_record(
    data: bytes,
    *,
    shard_id: str,
    sequence_number: str,
    partition_key: str | None,
    arrival: datetime | None = None,
    budget: InflateBudget | None = None,
    schemas: SchemaCatalog | None = None,
) -> list[DecodedRecord]:
    """Decode one Kinesis record into the user records it holds (several for a KPL aggregate). Give the
    records of one batch the same `budget` to bound what they inflate together, and `schemas` (holding the
    versions the batch names) to decode Glue Schema Registry records."""
    # Most records are JSON: its first byte is checked first and parsed without further calls.
    first = data[0] if data else 0
    if first in _JSON_OPENERS:
        value = _json_or_not(data)
        if value is _TOO_DEEP:
            kind, value, encoding, error, inflated = _too_deep(data)
        elif value is not _NOT_JSON:
            return [
                DecodedRecord(
                    shard_id,
                    sequence_number,
                    partition_key,
                    arrival,
                    len(data),
                    KIND_JSON,
                    value,
                    (),
                    None,
                    None,
                    None,
                    None,
                    data,
                )
            ]
        else:
            kind, value, encoding, error, inflated = _classify_not_json(data)
    elif first == _MAGIC_FIRST and data[:4] == MAGIC:
        return _deaggregate(data, shard_id, sequence_number, partition_key, arrival, budget)
    elif first == _GZIP_FIRST:
        kind, value, encoding, error, inflated = classify(data, budget)
    elif first == HEADER_VERSION and schemas is not None and schema_version_id(data) is not None:
        return [_schema_record(data, schemas, shard_id, sequence_number, partition_key, arrival)]
    elif first in _WHITESPACE:  # JSON may still follow the whitespace
        kind, value, encoding, error, inflated = _classify_plain(data)
    else:
        kind, value, encoding, error, inflated = _classify_not_json(data)
    return [
        DecodedRecord(
            shard_id,
            sequence_number,
            partition_key,
            arrival,
            len(data),
            kind,
            value,
            encoding,
            None,
            None,
            error,
            inflated,
            data,
        )
    ]


def _schema_record(
    data: bytes,
    schemas: SchemaCatalog,
    shard_id: str,
    sequence_number: str,
    partition_key: str | None,
    arrival: datetime | None,
) -> DecodedRecord:
    """A Glue Schema Registry record decoded with its schema, or shown raw with the reason it is not."""
    try:
        value, schema, compressed = decode_payload(data, schemas)
    except SchemaDecodeError as problem:
        return DecodedRecord(
            shard_id,
            sequence_number,
            partition_key,
            arrival,
            len(data),
            KIND_ERROR,
            data,
            (ENCODING_GLUE,),
            error=str(problem),
            data=data,
        )
    return DecodedRecord(
        shard_id,
        sequence_number,
        partition_key,
        arrival,
        len(data),
        KIND_JSON,
        value,
        _GLUE_ZLIB if compressed else _GLUE_ONLY,
        data=data,
        schema=schema.label,
    )


_GLUE_ONLY = (ENCODING_GLUE,)
_GLUE_ZLIB = (ENCODING_GLUE, ENCODING_ZLIB)


def decode_api_record(
    raw: dict, shard_id: str, budget: InflateBudget | None = None, schemas: SchemaCatalog | None = None
) -> list[DecodedRecord]:
    """Decode one element of GetRecords' `Records` (botocore has already base64-decoded `Data`)."""
    return decode_record(
        raw["Data"],
        shard_id=shard_id,
        sequence_number=raw["SequenceNumber"],
        partition_key=raw.get("PartitionKey"),
        arrival=raw.get("ApproximateArrivalTimestamp"),
        budget=budget,
        schemas=schemas,
    )


# More user records than this in one aggregate is refused: an honest aggregate of a 1 MiB record holds
# a few thousand (KPL's own default caps an aggregate at 51,200 bytes), and a record claiming hundreds of
# thousands of empty entries would cost a reader a Python object each.
MAX_USER_RECORDS_PER_AGGREGATE = 100_000


class MalformedAggregate(ValueError):
    """A payload with the KPL magic that is not a well-formed aggregate; the message says why."""


def parse_aggregate(data: bytes) -> tuple[Any, Any, Any]:
    """Check a KPL aggregate's framing (magic, MD5 trailer, protobuf, key tables) and return its
    (user records, partition key table, explicit hash key table); MalformedAggregate otherwise.
    Each user record's indexes into the tables are the caller's to check (an IndexError is malformed)."""
    body = data[len(MAGIC) :]
    if len(body) <= DIGEST_SIZE:
        raise MalformedAggregate(f"{len(data)} bytes is too short for a message and its MD5 digest")
    message, digest = body[:-DIGEST_SIZE], body[-DIGEST_SIZE:]
    if hashlib.md5(message).digest() != digest:
        raise MalformedAggregate("MD5 digest does not match the message (corrupt or truncated record)")
    aggregate = messages_pb2.AggregatedRecord()
    try:
        aggregate.ParseFromString(message)
    except DecodeError as problem:
        raise MalformedAggregate(f"protobuf message does not parse ({problem})") from None
    if not aggregate.IsInitialized():
        missing = ", ".join(aggregate.FindInitializationErrors())
        raise MalformedAggregate(f"protobuf message lacks required fields ({missing})")
    keys, hash_keys = aggregate.partition_key_table, aggregate.explicit_hash_key_table
    # protobuf hands back a `string` field that is not UTF-8 as bytes
    for table, what in ((keys, "partition key"), (hash_keys, "explicit hash key")):
        for index, entry in enumerate(table):
            if not isinstance(entry, str):
                raise MalformedAggregate(f"{what} #{index} is not UTF-8")
    records = aggregate.records
    if not records:
        raise MalformedAggregate("it holds no user records")
    if len(records) > MAX_USER_RECORDS_PER_AGGREGATE:
        raise MalformedAggregate(
            f"it nests {len(records):,} user records, more than the "
            f"{MAX_USER_RECORDS_PER_AGGREGATE:,} one aggregate may hold"
        )
    return records, keys, hash_keys


def user_records(data: bytes) -> list[tuple[str, str | None, bytes]]:
    """(partition key, explicit hash key, data) of each user record in a KPL aggregate, in order;
    MalformedAggregate when it is not a well-formed one."""
    records, keys, hash_keys = parse_aggregate(data)
    try:
        return [
            (
                keys[inner.partition_key_index],
                hash_keys[inner.explicit_hash_key_index] if inner.HasField("explicit_hash_key_index") else None,
                inner.data,
            )
            for inner in records
        ]
    except IndexError:
        raise MalformedAggregate("a user record names a key past its table") from None


def _deaggregate(
    data: bytes,
    shard_id: str,
    sequence_number: str,
    partition_key: str | None,
    arrival: datetime | None,
    budget: InflateBudget | None = None,
) -> list[DecodedRecord]:
    def broken(reason: str) -> list[DecodedRecord]:
        return [
            DecodedRecord(
                shard_id,
                sequence_number,
                partition_key,
                arrival,
                len(data),
                KIND_ERROR,
                data,
                (ENCODING_KPL,),
                error=f"malformed KPL aggregate: {reason}",
                data=data,
            )
        ]

    try:
        records, keys, hash_keys = parse_aggregate(data)
    except MalformedAggregate as problem:
        return broken(str(problem))
    key_count, hash_key_count = len(keys), len(hash_keys)
    decoded: list[DecodedRecord] = []
    for sub_sequence, inner in enumerate(records):
        key_index = inner.partition_key_index
        if key_index >= key_count:
            return broken(f"user record {sub_sequence} names partition key #{key_index} of a {key_count}-entry table")
        explicit_hash_key = None
        if inner.HasField("explicit_hash_key_index"):
            hash_key_index = inner.explicit_hash_key_index
            if hash_key_index >= hash_key_count:
                return broken(
                    f"user record {sub_sequence} names explicit hash key "
                    f"#{hash_key_index} of a {hash_key_count}-entry table"
                )
            explicit_hash_key = hash_keys[hash_key_index]
        payload = inner.data
        # Same JSON-first shortcut as decode_record: inner records of an aggregate are mostly JSON.
        value = _json_or_not(payload) if payload[:1] in _JSON_OPENER_BYTES else _NOT_JSON
        if value is _TOO_DEEP:
            kind, value, encoding, error, inflated = _too_deep(payload)
        elif value is not _NOT_JSON:
            kind, encoding, error, inflated = KIND_JSON, (), None, None
        else:
            kind, value, encoding, error, inflated = classify(payload, budget)
        decoded.append(
            DecodedRecord(
                shard_id,
                sequence_number,
                keys[key_index],
                arrival,
                len(payload),
                kind,
                value,
                _KPL_GZIP if encoding else _KPL_ONLY,
                sub_sequence,
                explicit_hash_key,
                error,
                inflated,
                payload,
            )
        )
    return decoded


TEXT_HEX_BYTES = 64  # binary content shown per record in text mode (--json carries it all)


def text_line(record: DecodedRecord) -> str:
    """One line per record: arrival, shard, sequence[/sub], key [ehk], kind, size, content. What came from the
    stream (key, content, a decode error's reason) is escaped: a producer's escape sequences never reach the
    terminal, and a record never takes more than its line."""
    arrival = iso_time(record.arrival) or "-"
    key = record.key_text + (f" ehk={record.explicit_hash_key}" if record.explicit_hash_key else "")
    content = record.content_text(max_hex_bytes=TEXT_HEX_BYTES)
    if record.schema is not None:
        content = f"[{record.schema}] {content}"
    if record.kind == KIND_ERROR:
        content = f"{record.error}: {content}"
    return printable(
        f"{arrival} {record.shard_id} {record.position} {key} {record.kind_label} {record.size}B {content}"
    )
