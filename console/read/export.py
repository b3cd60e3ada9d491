"""Records written out for other tools: JSON lines, CSV, or the exact bytes.

- `jsonl`: one `DecodedRecord.json_line()` a line, the same lines as `tail --json`.
- `csv`: a header, then one row a record; `--fields` picks columns by name, and `data.a.b` reaches into
  a JSON payload (a nested value is written as compact JSON, a missing one as an empty cell). The
  `data` column itself is the content as `tail` shows it (compact JSON, the text, or hex).
- `raw`: each record's payload exactly as it was stored (a gzip payload still compressed; for a KPL
  aggregate, each user record's own bytes), either length-prefixed in one file (a 4-byte big-endian
  length, then the bytes) or one file a record in a directory.

`ExportTarget` owns the one file (or directory) a user names: everything is written under a temporary
name beside it and renamed into place only when the export finished, so an interrupted export never
leaves a half file under the final name. It is created before anything is read: an unwritable
place is bad input before any work.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from console.errors import BadInput
from console.read.decoding import DecodedRecord
from console.read.where import fields_of

EXPORT_FORMATS = ("jsonl", "csv", "raw")
CSV_COLUMNS = ("arrival", "shard_id", "seq", "sub_seq", "key", "ehk", "size", "kind", "encoding", "data")
DEFAULT_CSV_FIELDS = ("arrival", "shard_id", "seq", "sub_seq", "key", "kind", "size", "data")
MAX_FIELDS = 100
LENGTH_PREFIX_BYTES = 4  # a record is at most 10 MiB: four bytes hold any length
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def parse_fields(text: str | None) -> tuple[tuple[str, ...], ...]:
    """--fields a,b,data.c: column paths, each checked against what a record has."""
    if text is None:
        return tuple((name,) for name in DEFAULT_CSV_FIELDS)
    names = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise BadInput(
            f"--fields must name columns separated by commas (e.g. arrival,key,data.total); got {text[:80]!r}",
            code="usage",
        )
    if len(names) > MAX_FIELDS:
        raise BadInput(f"--fields names {len(names)} columns; the most is {MAX_FIELDS}", code="usage")
    paths = []
    for name in names:
        path = tuple(name.split("."))
        if path[0] not in CSV_COLUMNS or (len(path) > 1 and path[0] != "data") or any(not step for step in path):
            raise BadInput(
                f"--fields: unknown column {name[:80]!r} (columns: {', '.join(CSV_COLUMNS)}, "
                "and data.PATH inside a JSON payload)",
                code="usage",
            )
        paths.append(path)
    return tuple(paths)


class CsvEncoder:
    def __init__(self, fields: Sequence[tuple[str, ...]]) -> None:
        self.fields = tuple(fields)
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\n")

    def header(self) -> bytes:
        return self._row([".".join(path) for path in self.fields])

    def encode(self, record: DecodedRecord) -> bytes:
        view = fields_of(record)
        return self._row([_cell(record, view, path) for path in self.fields])

    def _row(self, cells: list[str]) -> bytes:
        self._writer.writerow(cells)
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode("utf-8", "surrogateescape")


def _cell(record: DecodedRecord, view: dict, path: tuple[str, ...]) -> str:
    head = path[0]
    if head == "data" and len(path) == 1:
        return record.content_text()
    if head == "encoding":
        return "+".join(record.encoding)
    value: Any = view.get(head)
    for step in path[1:]:
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            value = None
        if value is None:
            break
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return _COMPACT.encode(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def encode_jsonl(record: DecodedRecord) -> bytes:
    return (record.json_line() + "\n").encode("utf-8", "surrogateescape")


def payload_of(record: DecodedRecord) -> bytes:
    """The record's bytes as stored."""
    if record.data is not None:
        return bytes(record.data)
    value = record.value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return record.content_text().encode("utf-8", "surrogatepass")


def encode_length_prefixed(record: DecodedRecord) -> bytes:
    data = payload_of(record)
    return len(data).to_bytes(LENGTH_PREFIX_BYTES, "big") + data


def record_file_name(index: int, record: DecodedRecord) -> str:
    sub = "" if record.sub_sequence_number is None else f"-{record.sub_sequence_number}"
    return f"{index:09d}-{record.shard_id}-{record.sequence_number}{sub}.bin"


class ExportTarget:
    """The file (or, for raw one-file-a-record, the directory) a user named, written under a temporary
    name until `commit()`. `discard()` removes what was written; the final name is never touched then."""

    def __init__(self, path: str, *, directory: bool = False) -> None:
        self.path = Path(path)
        self.directory = directory
        self.temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        self.records = 0
        self.bytes = 0
        self._handle: Any = None
        if directory and self.path.exists():
            raise BadInput(
                f"--out {path}: it already exists; raw one-file-a-record export makes a new directory", code="bad_file"
            )
        if not directory and self.path.is_dir():
            raise BadInput(
                f"--out {path} is a directory; give a file name (or a new directory with a trailing / "
                "for raw one-file-a-record)",
                code="bad_file",
            )
        try:
            if directory:
                self.temporary.mkdir()
            else:
                self._handle = open(self.temporary, "wb", buffering=1024 * 1024)
        except OSError as error:
            raise BadInput(f"cannot write --out {path}: {error.strerror or error}", code="bad_file") from None

    def write(self, chunk: bytes, records: int = 0) -> None:
        self._handle.write(chunk)
        self.bytes += len(chunk)
        self.records += records

    def write_file(self, name: str, data: bytes) -> None:
        (self.temporary / name).write_bytes(data)
        self.bytes += len(data)
        self.records += 1

    def commit(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        if self._handle is not None:
            self._handle.close()
        if self.directory:
            shutil.rmtree(self.temporary, ignore_errors=True)
        else:
            try:
                self.temporary.unlink()
            except FileNotFoundError:
                pass
