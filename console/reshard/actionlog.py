"""The local action log: one JSON line per executed change, under console.userdirs.data_dir().

Each entry says who (the caller identity AWS reports, when it does), what (action, API calls),
when (UTC), where (backend label and stream) and the open shards before and after. The log also
answers "how many UpdateShardCount calls did we make on this stream in the last 24 hours?" for the
rolling-quota check (calls made by other tools are invisible to it; the plan says so).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from console.userdirs import data_dir

LOG_NAME = "actions.jsonl"
DAY_SECONDS = 24 * 3600


def log_path() -> Path:
    return data_dir() / LOG_NAME


@dataclass(frozen=True)
class ActionLog:
    path: Path

    @classmethod
    def default(cls) -> "ActionLog":
        return cls(log_path())

    def append(self, entry: dict[str, Any], *, now: float | None = None) -> dict[str, Any]:
        """Add one entry (stamped with `epoch` and `time`) as one whole line, flushed to disk before
        returning: the 24-hour quota check must never undercount. The file is private (mode 0600);
        a torn last line left by a crash is closed off first, so it cannot swallow this entry."""
        stamp = time.time() if now is None else now
        record = {"epoch": stamp, "time": datetime.fromtimestamp(stamp, timezone.utc).isoformat(), **entry}
        line = (json.dumps(record, default=str) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.fchmod(descriptor, 0o600)  # a log created by an older version may be readable by others
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # one writer at a time, so the torn-line check holds
            size = os.fstat(descriptor).st_size
            if size and os.pread(descriptor, 1, size - 1) != b"\n":
                line = b"\n" + line
            os.write(descriptor, line)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)  # closing releases the lock
        return record

    def entries(self) -> list[dict[str, Any]]:
        """All readable entries, oldest first. A foreign or torn line is skipped, never fatal; an entry
        written straight after a torn one (by a version that did not close torn lines) is still found."""
        if not self.path.exists():
            return []
        found = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            found.extend(_entries_in(line))
        return found

    def update_shard_count_calls(self, stream: str, backend: str, *, now: float | None = None,
                                 window: float = DAY_SECONDS) -> int:
        """UpdateShardCount calls this tool made on `stream` at `backend` in the last `window` seconds."""
        cutoff = (time.time() if now is None else now) - window
        return sum(
            int(entry.get("calls", {}).get("UpdateShardCount", 0))
            for entry in self.entries()
            if entry.get("stream") == stream and entry.get("backend") == backend
            and float(entry.get("epoch", 0)) >= cutoff
        )


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
