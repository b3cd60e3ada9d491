"""Bounds on every number a user gives, from AWS's own limits, checked before any work starts.

One place for both faces: the CLI passes these to argparse as `type=` callables (`argtype`), and
the console's prompts call the same functions. Each returns the value or raises BadInput: one line,
exit 2, in milliseconds. A number is judged by its digits before int() sees it, so a 5,000-digit
argument costs nothing and a huge shard count never reaches a planner.

AWS's numbers (Amazon Kinesis Data Streams API reference and "Quotas and limits"):
- UpdateShardCount: the target may not exceed 10,000 shards per stream. It may also at most double
  and at least halve the open count; that needs the current count, so the plan reports it
  (console.reshard.limits.check_scale_step, which the console's rescale prompt applies too).
- Shards per account: 20,000 by default in the largest Regions, raisable on request. What kconsole
  will plan is capped at SHARD_COUNT_CEILING, five times that default, so a typo cannot build a
  plan of billions of shards; a raised quota below it is given with --account-shard-limit.
- Retention: 24 to 8,760 hours, so no read reaches further back than 8,760 hours.
- Record size (UpdateMaxRecordSize): MaxRecordSizeInKiB from 1,024 to 10,240; a stream that does not
  say takes 1 MiB. PutRecords: at most 500 records and 10 MiB a request. Every bound on one record
  (put lines, produce --payload-bytes, the producer's batching) comes from the stream's own limit
  (the stream summary's `max_record_bytes`), checked by console.produce before anything is sent.
- Warm throughput (UpdateStreamWarmThroughput): 0 to 10,240 MiB/s (10 GiB/s) on an on-demand stream.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from types import TracebackType
from typing import Any, BinaryIO, NoReturn, Protocol, TypeVar

from console.errors import BadInput

T = TypeVar("T")

UPDATE_SHARD_COUNT_MAX = 10_000  # UpdateShardCount: "not above 10,000 shards in a stream"
DEFAULT_ACCOUNT_SHARD_QUOTA = 20_000  # the largest Regions' default shard quota
SHARD_COUNT_CEILING = 5 * DEFAULT_ACCOUNT_SHARD_QUOTA
MAX_RETENTION_HOURS = 8_760
MAX_RETENTION_SECONDS = MAX_RETENTION_HOURS * 3600
# What AWS accepts as a stream name; checked first so a typo is exit 2, not a server round trip.
_STREAM_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,128}")
MAX_TIMEOUT_SECONDS = 24 * 3600  # a wait longer than a day is a typo, and asyncio's timers overflow far above it
MIN_RECORD_SIZE_KIB = 1024
MAX_RECORD_SIZE_KIB = 10 * 1024
PUT_RECORDS_MAX_BYTES = 10 * 1024 * 1024
PUT_RECORDS_MAX_RECORDS = 500
MAX_WARM_THROUGHPUT_MIBPS = 10 * 1024


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def whole_number(value: object, *, what: str, low: int, high: int) -> int:
    """`value` (text or int) as a whole number in [low, high], judged by its digits first."""
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value
    else:
        text = str(value).strip().replace("_", "")
        digits = text.lstrip("0")
        number = int(text) if text.isascii() and text.isdigit() and len(digits) <= len(str(high)) else None
    if number is None or not low <= number <= high:
        raise BadInput(f"{what} must be a whole number from {low:,} to {high:,}; got {_shown(value)}", code="usage")
    return number


def seconds(value: Any, *, what: str, high: float = MAX_TIMEOUT_SECONDS) -> float:
    """A number of seconds above 0 and at most `high` (never nan or infinity)."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and 0 < number <= high):
        raise BadInput(
            f"{what} must be a number of seconds above 0 and at most {high:g}; got {_shown(value)}", code="usage"
        )
    return number


def shard_count(value: object, what: str = "--shards") -> int:
    """A stream's shard count to plan or predict against."""
    return whole_number(value, what=what, low=1, high=SHARD_COUNT_CEILING)


def scale_target(value: object, what: str = "--to") -> int:
    """UpdateShardCount's TargetShardCount: 1 to 10,000."""
    return whole_number(value, what=what, low=1, high=UPDATE_SHARD_COUNT_MAX)


def timeout(value: object, what: str = "--timeout") -> float:
    return seconds(value, what=what)


def retention_window(value: object, what: str) -> float:
    """How far back to read: no stream keeps records longer than the longest retention."""
    return seconds(value, what=what, high=MAX_RETENTION_SECONDS)


def record_size_kib(value: object, what: str = "--kib") -> int:
    """UpdateMaxRecordSize's MaxRecordSizeInKiB: 1,024 (1 MiB) to 10,240 (10 MiB)."""
    return whole_number(value, what=what, low=MIN_RECORD_SIZE_KIB, high=MAX_RECORD_SIZE_KIB)


def warm_throughput_mibps(value: object, what: str = "--mibps") -> int:
    """UpdateStreamWarmThroughput's WarmThroughputMiBps: 0 to 10,240 (10 GiB/s)."""
    return whole_number(value, what=what, low=0, high=MAX_WARM_THROUGHPUT_MIBPS)


def read_bounded(path: str, limit: int, *, what: str, code: str) -> bytes:
    """A file a user names, read within `limit` bytes (`/dev/zero` is one line, not an OOM); a FIFO
    nobody writes to and a directory are refused at once (open_named_file)."""
    handle = open_named_file(path, what=what, code="bad_file")
    try:
        raw = handle.read(limit + 1)
    except OSError as error:
        raise BadInput(f"cannot read {what} {path}: {error.strerror or error}", code="bad_file") from None
    finally:
        if path != "-":
            handle.close()
    if len(raw) > limit:
        raise BadInput(f"{what} {path} is over {limit:,} bytes", code=code)
    return raw


def validate_stream_name(name: str) -> str:
    if not isinstance(name, str) or not _STREAM_NAME.fullmatch(name):
        shown = name if not isinstance(name, str) or len(name) <= 60 else name[:60] + "..."
        raise BadInput(f"not a valid stream name: {shown!r} (1 to 128 of a-z A-Z 0-9 _ . -)", code="bad_stream_name")
    return name


def argtype(check: Callable[..., T], what: str, **bounds: object) -> Callable[[str], T]:
    """`check` as an argparse `type=`: the option's name in the message, BadInput straight through
    (argparse would reword a ValueError as "invalid value")."""

    def parse(text: str) -> T:
        return check(text, what=what, **bounds)

    parse.__name__ = what
    return parse


# ---- files a user names ---------------------------------------------------------------------------
# A key or sample file is read as a stream of lines under three caps, checked as it is read, so
# /dev/zero (no newline, ever), /dev/urandom (not text) or a huge file costs one line and
# milliseconds, never the machine's memory. A FIFO is opened without blocking and refused if no
# writer comes within half a second; a directory is refused by name.
MAX_LIST_FILE_BYTES = 64 * 1024 * 1024  # a million keys of 64 bytes
MAX_LIST_FILE_LINES = 1_000_000
MAX_LIST_LINE_BYTES = 4096  # a partition key is at most 256 characters (1 KiB of UTF-8); room for comments


def _named(what: str, path: str) -> str:
    """How an error names the file: `keys file '/x'`, or the bare path when `what` is empty."""
    shown = path if len(path) <= 200 else path[:200] + "..."
    return f"{what} {shown!r}" if what else shown


class NamedFile(Protocol):
    """What open_named_file hands back: a binary file opened for reading, or one with a byte put back."""

    def read(self, size: int = -1, /) -> bytes: ...
    def readline(self, size: int = -1, /) -> bytes: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> NamedFile: ...
    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None, /
    ) -> None: ...


def open_named_file(path: str, *, what: str, code: str = "bad_input") -> NamedFile:
    """`path` opened for reading as a binary stream ('-' is stdin), without blocking on a FIFO that
    has no writer; a directory or an unopenable path is BadInput naming it."""
    import os
    import stat
    import sys

    if path == "-":
        return sys.stdin.buffer
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        raise BadInput(f"cannot read {_named(what, path)}: {error.strerror or error}", code=code) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise BadInput(f"cannot read {_named(what, path)}: it is a directory", code=code)
        first = _first_byte_of_fifo(descriptor, path, what, code) if stat.S_ISFIFO(mode) else b""
        os.set_blocking(descriptor, True)  # opened without waiting for a writer; now read as usual
    except BaseException:
        os.close(descriptor)
        raise
    handle = open(descriptor, "rb", closefd=True)  # noqa: SIM115 - the caller reads it and closes it
    return _Prefixed(first, handle) if first else handle


FIFO_WRITER_WAIT = 0.5  # seconds a named FIFO may take to get a writer


def _first_byte_of_fifo(descriptor: int, path: str, what: str, code: str) -> bytes:
    """A FIFO nobody writes to reads as end of file at once: wait a moment for a writer (the caller
    may start one just after), then refuse it. A byte that is already there is read and handed back."""
    import os
    import time

    deadline = time.monotonic() + FIFO_WRITER_WAIT
    while True:
        try:
            first = os.read(descriptor, 1)
        except BlockingIOError:  # a writer, with nothing written yet
            return b""
        if first:
            return first
        if time.monotonic() >= deadline:
            raise BadInput(
                f"cannot read {_named(what, path)}: a FIFO that nothing was written to "
                f"(no writer within {FIFO_WRITER_WAIT:g} s)",
                code=code,
            )
        time.sleep(0.02)


class _Prefixed:
    """A binary file with one byte already read from it put back in front (readline, as files do)."""

    def __init__(self, first: bytes, handle: BinaryIO) -> None:
        self._first, self._handle = first, handle

    def read(self, size: int = -1) -> bytes:
        if not self._first:
            return self._handle.read(size)
        first, self._first = self._first, b""
        if size == 1:
            return first
        return first + self._handle.read(-1 if size is None or size < 0 else size - 1)

    def readline(self, size: int = -1) -> bytes:
        if not self._first:
            return self._handle.readline(size)
        first, self._first = self._first, b""
        if first == b"\n" or size == 1:
            return first
        return first + self._handle.readline(-1 if size is None or size < 0 else size - 1)

    def fileno(self) -> int:
        return self._handle.fileno()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> _Prefixed:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


READ_CHUNK_BYTES = 1 << 20  # lines are checked and decoded a block at a time: a million keys in ~25 blocks


def read_text_lines(
    path: str,
    *,
    what: str,
    max_bytes: int = MAX_LIST_FILE_BYTES,
    max_lines: int = MAX_LIST_FILE_LINES,
    max_line_bytes: int = MAX_LIST_LINE_BYTES,
    code: str = "bad_input",
) -> list[str]:
    """The lines of a UTF-8 text file ('-' = stdin) without their endings, read under the caps: a
    line longer than `max_line_bytes`, more than `max_lines` lines or `max_bytes` bytes, or bytes
    that are not UTF-8, are BadInput (exit 2) naming the file and the line, before more is read.

    The file is read a block of whole lines at a time; a block within every cap is decoded and split
    in one go, and only a block that breaks one is walked line by line, so the error names the same
    first offending line (and byte offset) a line-at-a-time read would."""
    reader = _LineReader(_named(what, path), max_bytes, max_lines, max_line_bytes, code)
    pending = b""  # the start of a line whose end has not been read yet
    handle = open_named_file(path, what=what, code=code)
    try:
        while True:
            try:
                chunk = handle.read(READ_CHUNK_BYTES)
            except OSError as error:
                raise BadInput(f"cannot read {reader.shown}: {error.strerror or error}", code=code) from None
            if not chunk:
                if pending:  # a last line without a newline
                    reader.take_line(pending)
                return reader.lines
            data = pending + chunk
            cut = data.rfind(b"\n") + 1
            if cut:
                reader.take_block(data[:cut])
            pending = data[cut:]
            if len(pending) > max_line_bytes:  # no newline within the line limit
                reader.take_line(pending)  # raises: the line is too long
    finally:
        if path != "-":
            handle.close()


class _LineReader:
    """The lines read so far and the caps they are held to (read_text_lines)."""

    def __init__(self, shown: str, max_bytes: int, max_lines: int, max_line_bytes: int, code: str) -> None:
        self.shown, self.code = shown, code
        self.max_bytes, self.max_lines, self.max_line_bytes = max_bytes, max_lines, max_line_bytes
        self.lines: list[str] = []
        self.total = 0  # bytes of the lines taken

    def take_block(self, block: bytes) -> None:
        """Whole lines, each ending in a newline."""
        parts = block.split(b"\n")
        parts.pop()  # the empty piece after the last newline
        if (
            max(map(len, parts)) >= self.max_line_bytes  # a line plus its newline over the limit
            or len(self.lines) + len(parts) > self.max_lines
            or self.total + len(block) > self.max_bytes
        ):
            for part in parts:  # a cap breaks in this block: find the first line that breaks it
                self.take_line(part + b"\n")
            return
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as error:  # no cap breaks before it, so this is the first problem
            self._not_utf8(block, error, self.total)
        lines = text.split("\n")
        lines.pop()
        self.lines.extend([line.removesuffix("\r") for line in lines] if "\r" in text else lines)
        self.total += len(block)

    def take_line(self, raw: bytes) -> None:
        """One line, with its newline if it has one."""
        number = len(self.lines) + 1
        self.total += len(raw)
        if len(raw) > self.max_line_bytes:
            raise BadInput(
                f"{self.shown}: line {number:,} is longer than {self.max_line_bytes:,} bytes "
                "(is it a text file of one item per line?)",
                code=self.code,
            )
        if number > self.max_lines or self.total > self.max_bytes:
            raise BadInput(
                f"{self.shown} is longer than {self.max_lines:,} lines or {self.max_bytes // 2**20} MiB; give fewer",
                code=self.code,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            self._not_utf8(raw, error, self.total - len(raw))
        self.lines.append(text.rstrip("\n").removesuffix("\r"))

    def _not_utf8(self, raw: bytes, error: UnicodeDecodeError, start: int) -> NoReturn:
        raise BadInput(
            f"cannot read {self.shown}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {start + error.start})",
            code=self.code,
        ) from None
