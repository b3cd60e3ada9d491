"""The local action log, written ahead: one JSON line per event, under console.userdirs.data_dir().

Every call that changes a stream goes through `logged_change` (or `logged_call`, which adds the one
re-checked resend). Before the call, an `intent` entry is written and flushed to disk (operation,
plan, who, when); if it cannot be written, nothing is called. After the call, an `outcome` entry
says what became of it:

    applied       the call returned, or its reply was lost and reading the state back shows the change
    not applied   the server refused it, or its reply was lost and the state shows no change
    unknown       its reply was lost and the state could not tell (or we were interrupted)

A lost reply is never settled by sending the call again blindly: the caller gives `settle`, a read
of the state the call would change, and only a "not applied" reading allows one resend, after the
caller has checked its plan against fresh state.

    async with logged_change(log, "SplitShard", plan={...}, stream=s, backend=kinesis.label,
                             settle=shard_was_split, check=f"kconsole shards {s}") as change:
        await kinesis.split_shard(...)
    if change.reply_lost: note("the reply was lost; the stream shows the change")

`log.change(...)` and `log.call(...)` are the same two functions as methods, for the packages beside
this one (lifecycle, consumers) that are handed the log instead of importing it. A `settle` returns
(True | False | None, evidence): applied, not applied, cannot tell.

Older entries (one per executed plan, with `calls`) are still read. The log answers "how many
UpdateShardCount calls did we make on this stream in the last 24 hours?" for the rolling-quota
check: intents whose outcome is applied or unknown (or never written: a crash) count; calls made by
other tools are invisible to it, and the plan says so.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import json
import os
import stat
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.errors import BackendError, ConsoleError, EndpointUnreachable
from console.userdirs import data_dir

LOG_NAME = "actions.jsonl"
DAY_SECONDS = 24 * 3600

APPLIED, NOT_APPLIED, UNKNOWN = "applied", "not applied", "unknown"
# Outcomes that may have used a quota: an unknown outcome counts, so the 24-hour rule never undercounts.
MAY_HAVE_HAPPENED = frozenset({APPLIED, UNKNOWN})

# What the state says about a change whose reply was lost: True applied, False not applied,
# None cannot tell; with the evidence in words.
Reading = tuple[bool | None, str]
Settle = Callable[[], Awaitable[Reading]]


def log_path() -> Path:
    return data_dir() / LOG_NAME


class ActionLogUnwritable(ConsoleError):
    """The intent could not be written, so nothing was called (exit 1)."""

    code = "action_log_unwritable"


class OutcomeUnknown(ConsoleError):
    """The reply was lost and reading the state back could not tell whether the change happened."""

    code = "outcome_unknown"


class ChangeNotApplied(ConsoleError):
    """The reply was lost and the state read back shows no change: safe to try again after re-checking."""

    code = "not_applied"


def reply_lost(error: BaseException) -> bool:
    """An error after which the server may have acted: the request went out and no answer came back
    (a dropped connection, a read timeout), or the server failed as a whole (HTTP 5xx)."""
    if isinstance(error, EndpointUnreachable):
        return error.request_sent
    return isinstance(error, BackendError) and error.code == "server_error"


@dataclass(frozen=True)
class ActionLog:
    path: Path

    @classmethod
    def default(cls) -> ActionLog:
        return cls(log_path())

    def append(self, entry: dict[str, Any], *, now: float | None = None) -> dict[str, Any]:
        """Add one entry (stamped with `epoch` and `time`) as one whole line, flushed to disk before
        returning: the 24-hour quota check must never undercount. The file is private (mode 0600)
        and must be a regular file (a FIFO or a device is refused, as OSError); a torn last line
        left by a crash is closed off first, so it cannot swallow this entry."""
        stamp = time.time() if now is None else now
        record = {"epoch": stamp, "time": datetime.fromtimestamp(stamp, UTC).isoformat(), **entry}
        line = (json.dumps(record, default=str) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise OSError(errno.EINVAL, "not a regular file: a FIFO or a device cannot hold the log")
            os.fchmod(descriptor, 0o600)  # a log created by an older version may be readable by others
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # one writer at a time, so the torn-line check holds
            size = os.fstat(descriptor).st_size
            if size and os.pread(descriptor, 1, size - 1) != b"\n":
                line = b"\n" + line
            written = os.write(descriptor, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, f"only {written} of {len(line)} bytes written")
            os.fsync(descriptor)
        finally:
            os.close(descriptor)  # closing releases the lock
        return record

    def masking_off(self, *, stream: str | None, rules: tuple[str, ...], where: str) -> None:
        """Note that the configured masking was turned off (`where`: the command or the console), before
        anything is shown unmasked; ActionLogUnwritable when it cannot be written (masking then stays on)."""
        entry = {
            "kind": "masking_off",
            "stream": stream,
            "rules": list(rules),
            "where": where,
            "user": _local_user(),
            "pid": os.getpid(),
        }
        try:
            self.append(entry)
        except OSError as error:
            raise ActionLogUnwritable(
                f"cannot write the action log {self.path} ({error.strerror or error}); masking stays on: turning "
                "it off is logged first (set KCONSOLE_DATA_DIR to a writable folder)"
            ) from None

    def entries(self) -> list[dict[str, Any]]:
        """All readable entries, oldest first. A foreign or torn line is skipped, never fatal; an entry
        written straight after a torn one (by a version that did not close torn lines) is still found."""
        try:
            if not self.path.is_file():
                return []
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        found = []
        for line in text.splitlines():
            found.extend(_entries_in(line))
        return found

    def calls_that_may_have_happened(
        self, operation: str, stream: str, backend: str, *, now: float | None = None, window: float = DAY_SECONDS
    ) -> list[float]:
        """Epoch times of `operation` calls on `stream` at `backend` in the last `window` seconds whose
        outcome is applied or unknown (an intent with no outcome, say after a crash, is unknown)."""
        cutoff = (time.time() if now is None else now) - window
        entries = self.entries()
        outcomes = {entry.get("intent"): entry.get("outcome") for entry in entries if entry.get("kind") == "outcome"}
        times: list[float] = []
        for entry in entries:
            if entry.get("stream") != stream or entry.get("backend") != backend:
                continue
            epoch = float(entry.get("epoch", 0))
            if epoch < cutoff:
                continue
            if entry.get("kind") == "intent":
                if entry.get("operation") == operation and outcomes.get(entry.get("id"), UNKNOWN) in MAY_HAVE_HAPPENED:
                    times.append(epoch)
            elif "kind" not in entry:  # an entry of an older version: one per executed plan, with its calls
                times.extend([epoch] * int((entry.get("calls") or {}).get(operation, 0)))
        return times

    def change(
        self, operation: str, plan: dict[str, Any], **options: Any
    ) -> contextlib.AbstractAsyncContextManager[Change]:
        """`async with log.change(operation, plan, stream=..., backend=..., settle=...) as change:`
        (logged_change on this log): for packages that are handed the log rather than importing it."""
        return logged_change(self, operation, plan, **options)

    async def call(
        self, operation: str, plan: dict[str, Any], call: Callable[[], Awaitable[Any]], **options: Any
    ) -> Change:
        """logged_call on this log."""
        return await logged_call(self, operation, plan, call, **options)

    def update_shard_count_calls(
        self, stream: str, backend: str, *, now: float | None = None, window: float = DAY_SECONDS
    ) -> int:
        """UpdateShardCount calls this tool made (or may have made) on `stream` at `backend` in the
        last `window` seconds."""
        return len(self.calls_that_may_have_happened("UpdateShardCount", stream, backend, now=now, window=window))


@dataclass
class Change:
    """One mutating call's life in the log: its intent, then its outcome (see logged_change)."""

    log: ActionLog
    operation: str
    stream: str
    backend: str
    plan: dict[str, Any]
    who: str | None = None
    check: str | None = None  # the command that shows whether it happened, for an unknown outcome
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    outcome: str | None = None
    evidence: str | None = None
    reply_lost: bool = False
    unlogged: str | None = None  # why the outcome entry could not be written, if it could not

    def write_intent(self) -> None:
        entry = {
            "kind": "intent",
            "id": self.id,
            "operation": self.operation,
            "stream": self.stream,
            "backend": self.backend,
            "who": self.who,
            "user": _local_user(),
            "pid": os.getpid(),
            "plan": self.plan,
        }
        try:
            self.log.append(entry)
        except OSError as error:
            reason = error.strerror or str(error)
            raise ActionLogUnwritable(
                f"cannot write the action log {self.log.path} ({reason}); nothing was "
                f"called: {self.operation} on {self.stream} needs its intent logged first "
                "(set KCONSOLE_DATA_DIR to a writable folder)"
            ) from None

    def record(self, outcome: str, evidence: str) -> None:
        self.outcome, self.evidence = outcome, evidence
        entry = {
            "kind": "outcome",
            "intent": self.id,
            "operation": self.operation,
            "stream": self.stream,
            "backend": self.backend,
            "outcome": outcome,
            "evidence": evidence,
        }
        try:
            self.log.append(entry)
        except OSError as error:  # the intent is there: an outcome that cannot be written counts as unknown
            self.unlogged = f"cannot write the outcome to {self.log.path} ({error.strerror or error})"

    def describe(self) -> str:
        return f"{self.operation} on {self.stream}"


@contextlib.asynccontextmanager
async def logged_change(
    log: ActionLog,
    operation: str,
    plan: dict[str, Any],
    *,
    stream: str,
    backend: str,
    settle: Settle | None = None,
    who: str | None = None,
    check: str | None = None,
) -> AsyncIterator[Change]:
    """Write the intent (or raise ActionLogUnwritable: nothing is called), run the body (the one
    mutating call), then write the outcome. A refusal by the server is `not applied` and re-raised.
    A lost reply (see reply_lost) is settled with `settle`: applied is not an error (the body's
    exception is swallowed and `change.reply_lost` is set); not applied raises ChangeNotApplied; a
    reading that cannot tell, or no `settle`, raises OutcomeUnknown naming `check`."""
    change = Change(log, operation, stream, backend, plan, who=who, check=check)
    change.write_intent()
    try:
        yield change
    except ConsoleError as error:
        if not reply_lost(error):
            change.record(NOT_APPLIED, f"refused: {error.message}")
            raise
        change.reply_lost = True
        applied, evidence = await _read_back(settle)
        if applied is True:
            change.record(APPLIED, f"the reply was lost ({error.message}); {evidence}")
            return
        if applied is False:
            change.record(NOT_APPLIED, f"the reply was lost ({error.message}); {evidence}")
            raise ChangeNotApplied(
                f"{change.describe()}: the reply was lost ({error.message}) and {evidence}: the change was not applied"
            ) from None
        change.record(UNKNOWN, f"the reply was lost ({error.message}); {evidence}")
        raise OutcomeUnknown(unknown_message(change, error.message, evidence)) from None
    except BaseException:  # interrupted (Ctrl-C, cancelled) while the call was out: it may have happened
        change.record(UNKNOWN, "interrupted while the call was in flight")
        raise
    else:
        if change.outcome is None:
            change.record(APPLIED, "the call returned")


def unknown_message(change: Change, reason: str, evidence: str) -> str:
    check = f"; check with `{change.check}`" if change.check else ""
    return (
        f"{change.describe()}: the reply was lost ({reason}) and the outcome is unknown ({evidence}); "
        f"it may or may not have happened, so it was not sent again{check}"
    )


async def _read_back(settle: Settle | None) -> Reading:
    if settle is None:
        return None, "nothing can read this change back"
    try:
        return await settle()
    except ConsoleError as error:
        return None, f"reading the state back failed: {error.message}"


async def logged_call(
    log: ActionLog,
    operation: str,
    plan: dict[str, Any],
    call: Callable[[], Awaitable[Any]],
    *,
    stream: str,
    backend: str,
    settle: Settle | None = None,
    who: str | None = None,
    check: str | None = None,
    again: Callable[[], Awaitable[Callable[[], Awaitable[Any]] | None]] | None = None,
) -> Change:
    """`call` through logged_change; when its reply was lost and the state shows it not applied, ask
    `again` (which re-checks the plan against fresh state) for the call to make instead, and make it
    once, logged as a new intent. `again` returning None (the plan no longer holds) leaves it not
    applied. Returns the Change that settled it (its `reply_lost` says a note is due)."""
    try:
        async with logged_change(
            log, operation, plan, stream=stream, backend=backend, settle=settle, who=who, check=check
        ) as change:
            await call()
        return change
    except ChangeNotApplied:
        if again is None:
            raise
        retry = await again()
        if retry is None:
            raise
    async with logged_change(
        log,
        operation,
        {**plan, "resend": "reply lost, state showed no change"},
        stream=stream,
        backend=backend,
        settle=settle,
        who=who,
        check=check,
    ) as change:
        await retry()
    return change


def _local_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


_ENTRY_START = '{"epoch"'


def _entries_in(line: str) -> list[dict[str, Any]]:
    """The entry a line holds; for a line that is not one JSON object, any whole entry that starts
    inside it (what a torn entry glued to the next one looks like)."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        entry = None
    if isinstance(entry, dict):
        return [entry]
    decoder, found, start = json.JSONDecoder(), [], line.find(_ENTRY_START, 1)
    while start != -1:
        try:
            candidate, end = decoder.raw_decode(line, start)
        except json.JSONDecodeError:
            start = line.find(_ENTRY_START, start + 1)
            continue
        if isinstance(candidate, dict):
            found.append(candidate)
        start = line.find(_ENTRY_START, end)
    return found
