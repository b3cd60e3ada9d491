"""Records written out for other tools: JSON lines, CSV, or the exact bytes.

- `jsonl`: one `DecodedRecord.json_line()` a line, the same lines as `tail --json`.
- `csv`: a header, then one row a record; `--fields` picks columns by name, and `data.a.b` reaches into
  a JSON payload (a nested value is written as compact JSON, a missing one as an empty cell). The
  `data` column itself is the content as `tail` shows it (compact JSON, the text, or hex). Every cell
  is safe to open: control characters are spelled as escapes (`printable`), and a cell a spreadsheet
  would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading
  `'`, as OWASP's CSV-injection guidance says.
- `raw`: each record's payload exactly as it was stored (a gzip payload still compressed; for a KPL
  aggregate, each user record's own bytes), either length-prefixed in one file (a 4-byte big-endian
  length, then the bytes) or one file a record in a directory.

`ExportTarget` owns the one file (or directory) a user names: everything is written under a temporary
name beside it and renamed into place only when the export finished, so an interrupted export never
leaves a half file under the final name. It is created before anything is read: an unwritable
place is bad input before any work.

Every file kconsole writes where a user said (`tail --out`, the Tail tab's export, `copy --checkpoint`)
obeys one rule, `output_path_kind`: a name that exists and is not a regular file is never replaced. A
FIFO or a character device (`/dev/stdout`, a terminal, `/dev/null`) is written to as a stream where
a stream makes sense, and anything else (a directory, a socket, a block device) is bad input before
anything is read. `write_atomically` is the one way a whole small file (a checkpoint) is replaced.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import shutil
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from console.errors import BadInput
from console.read.decoding import DecodedRecord
from console.read.printable import printable
from console.read.where import fields_of
from console.words import counted

# Each export format (as --output takes it), what a chooser calls it, and its files' extension: the CLI
# and the console's export dialog offer these, in this order.
EXPORT_FORMAT_NAMES = {"jsonl": "JSON lines", "csv": "CSV", "raw": "raw bytes, length-prefixed"}
EXPORT_EXTENSIONS = {"jsonl": ".jsonl", "csv": ".csv", "raw": ".bin"}
EXPORT_FORMATS = tuple(EXPORT_FORMAT_NAMES)
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
        raise BadInput(f"--fields names {counted(len(names), 'column')}; the most is {MAX_FIELDS}", code="usage")
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
        self._writer.writerow([spreadsheet_safe(cell) for cell in cells])
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode("utf-8", "surrogateescape")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """A CSV cell that a spreadsheet shows as text and a terminal as itself: a leading `'` before a
    formula's first character (OWASP), and control characters written as visible escapes."""
    if cell.startswith(FORMULA_STARTS):
        cell = "'" + cell
    return printable(cell)


def _cell(record: DecodedRecord, view: dict[str, Any], path: tuple[str, ...]) -> str:
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


OUTPUT_NEW, OUTPUT_FILE, OUTPUT_STREAM = "new", "file", "stream"
FIFO_READER_WAIT = 0.5  # seconds a named FIFO may take to get a reader


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def output_path_kind(path: str | Path, option: str, *, streams: bool = True, hint: str = "give a file name") -> str:
    """What writing to `path` means: OUTPUT_NEW (nothing there), OUTPUT_FILE (a regular file, replaced whole)
    or OUTPUT_STREAM (a FIFO or character device, written to in place, when `streams`). Anything else
    that exists is BadInput naming `option`: kconsole never replaces what is not a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return OUTPUT_NEW
    except OSError as error:
        raise BadInput(f"cannot write {option} {path}: {error.strerror or error}", code="bad_file") from None
    if stat.S_ISREG(mode):
        return OUTPUT_FILE
    if streams and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        return OUTPUT_STREAM
    kind = _kind_of(mode)
    raise BadInput(f"{option} {path} is {kind}, which kconsole never replaces; {hint}", code="bad_file")


def open_output_stream(path: str | Path, option: str) -> Any:
    """A FIFO or character device opened for writing in place, never truncated or replaced. A FIFO
    nobody reads gets a moment for a reader (the caller may start one just after), then is BadInput."""
    deadline = time.monotonic() + FIFO_READER_WAIT
    while True:
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            break
        except OSError as error:
            if error.errno == errno.ENXIO and time.monotonic() < deadline:  # a FIFO with no reader yet
                time.sleep(0.05)
                continue
            reason = "a FIFO nobody reads" if error.errno == errno.ENXIO else (error.strerror or str(error))
            raise BadInput(f"cannot write {option} {path}: {reason}", code="bad_file") from None
    if not (stat.S_ISFIFO(os.fstat(descriptor).st_mode) or stat.S_ISCHR(os.fstat(descriptor).st_mode)):
        os.close(descriptor)  # replaced by something else since it was looked at
        raise BadInput(f"{option} {path} changed while it was opened; give it again", code="bad_file")
    os.set_blocking(descriptor, True)
    return open(descriptor, "wb", buffering=1024 * 1024)


def _replace(temporary: Path, path: Path, option: str) -> None:
    """`temporary` renamed over `path`, unless `path` became something other than a regular file meanwhile."""
    try:
        output_path_kind(path, option, streams=False)
    except BadInput:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.replace(temporary, path)


def write_atomically(path: str | Path, data: bytes, option: str) -> None:
    """`data` as the whole of `path`: written beside it, synced, and renamed over it, so a reader (or a
    process killed at any moment) finds the old content or the new, never part of one."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _replace(temporary, path, option)


class ExportTarget:
    """The file (or, for raw one-file-a-record, the directory) a user named, written under a temporary
    name until `commit()`. `discard()` removes what was written; the final name is never touched then.
    A FIFO or character device is written to in place as the records come (module docstring)."""

    def __init__(self, path: str, *, directory: bool = False, option: str = "--out") -> None:
        self.path = Path(path)
        self.directory = directory
        self.option = option
        self.temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        self.records = 0
        self.bytes = 0
        self._handle: Any = None
        if directory and self.path.exists():
            raise BadInput(
                f"{option} {path}: it already exists; raw one-file-a-record export makes a new directory",
                code="bad_file",
            )
        self.streaming = (
            not directory
            and output_path_kind(
                path,
                option,
                hint="give a file name (or a new directory with a trailing / for raw one-file-a-record)",
            )
            == OUTPUT_STREAM
        )
        if self.streaming:
            self._handle = open_output_stream(path, option)
            return
        try:
            if directory:
                self.temporary.mkdir()
            else:
                self._handle = open(self.temporary, "wb", buffering=1024 * 1024)  # noqa: SIM115 - closed by commit() or discard()
        except OSError as error:
            raise BadInput(f"cannot write {option} {path}: {error.strerror or error}", code="bad_file") from None

    def write(self, chunk: bytes, records: int = 0) -> None:
        self._handle.write(chunk)
        self.bytes += len(chunk)
        self.records += records

    def write_file(self, name: str, data: bytes) -> None:
        (self.temporary / name).write_bytes(data)
        self.bytes += len(data)
        self.records += 1

    def commit(self) -> None:
        if self.streaming:
            self._handle.close()  # flushes; a device or FIFO has nothing to sync or rename
            return
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
        _replace(self.temporary, self.path, self.option)

    def discard(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):  # a FIFO whose reader went away
                self._handle.close()
        if self.streaming:
            return
        if self.directory:
            shutil.rmtree(self.temporary, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.temporary.unlink()


class ExportWriter:
    """Records written in one of `EXPORT_FORMATS`, the one way both `kconsole tail --out` (or its stdout)
    and the Tail tab's export write them: JSON lines; CSV, its header first and every cell
    `spreadsheet_safe`; raw, length-prefixed in one file, or one file a record when the target is a
    directory. Into an `ExportTarget` (a temporary name until `commit()`), or, without one, into `stream`,
    flushed after every batch so a pipe sees each page as it comes."""

    def __init__(
        self,
        output: str,
        *,
        target: ExportTarget | None = None,
        stream: BinaryIO | None = None,
        fields: str | None = None,
    ) -> None:
        if (target is None) == (stream is None):
            raise ValueError("an export writes to a target or to a stream, one of them")
        self.output = output
        self.target = target
        self.stream = stream
        self.csv = _csv_encoder(output, fields)
        self.records = 0
        self.bytes = 0
        if self.csv is not None:
            self._write(self.csv.header(), 0)

    @classmethod
    def to_path(cls, output: str, path: str, *, fields: str | None = None, option: str = "--out") -> ExportWriter:
        """Writing to `path` (for raw, a name ending in / is a new directory of one file a record), checked
        before anything is read: a path that exists and is not a regular file is never replaced."""
        _csv_encoder(output, fields)  # a bad format or --fields is bad input before a file is made
        directory = output == "raw" and path.endswith(("/", os.sep))
        target = ExportTarget(path.rstrip("/" + os.sep) if directory else path, directory=directory, option=option)
        try:
            return cls(output, target=target, fields=fields)
        except BaseException:
            target.discard()
            raise

    def write_batch(self, records: Sequence[DecodedRecord]) -> None:
        if self.target is not None and self.target.directory:
            for record in records:
                data = payload_of(record)
                self.target.write_file(record_file_name(self.records, record), data)
                self.records += 1
                self.bytes += len(data)
            return
        if self.csv is not None:
            chunk = b"".join(self.csv.encode(record) for record in records)
        elif self.output == "jsonl":
            chunk = b"".join(encode_jsonl(record) for record in records)
        else:
            chunk = b"".join(encode_length_prefixed(record) for record in records)
        self._write(chunk, len(records))

    def _write(self, chunk: bytes, records: int) -> None:
        if self.target is not None:
            self.target.write(chunk, records)
        elif self.stream is not None:
            self.stream.write(chunk)
            self.stream.flush()
        self.records += records
        self.bytes += len(chunk)

    def commit(self) -> None:
        """Everything written in place under its final name (a stream: flushed)."""
        if self.target is not None:
            self.target.commit()
        elif self.stream is not None:
            self.stream.flush()

    def discard(self) -> None:
        """What was written removed; the final name never touched."""
        if self.target is not None:
            self.target.discard()


def _csv_encoder(output: str, fields: str | None) -> CsvEncoder | None:
    """The CSV encoder of `fields` for --output csv (None for the other formats); BadInput for a format
    not in `EXPORT_FORMATS`, or --fields without csv."""
    if output not in EXPORT_FORMATS:
        raise BadInput(f"export formats are {', '.join(EXPORT_FORMATS)}; got {output!r}", code="usage")
    if fields is not None and output != "csv":
        raise BadInput("--fields picks the columns of --output csv", code="usage")
    return CsvEncoder(parse_fields(fields)) if output == "csv" else None
