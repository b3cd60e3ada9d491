"""The local action log: one JSON line per executed change, under console.config.data_dir().

Each entry says who (the caller identity AWS reports, when it does), what (action, API calls),
when (UTC), where (backend label and stream) and the open shards before and after. The log also
answers "how many UpdateShardCount calls did we make on this stream in the last 24 hours?" for the
rolling-quota check (calls made by other tools are invisible to it; the plan says so).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from console.config import data_dir

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
        """Add one entry (stamped with `epoch` and `time`); one write so concurrent appends stay whole lines."""
        stamp = time.time() if now is None else now
        record = {"epoch": stamp, "time": datetime.fromtimestamp(stamp, timezone.utc).isoformat(), **entry}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str) + "\n")
        return record

    def entries(self) -> list[dict[str, Any]]:
        """All readable entries, oldest first; a torn or foreign line is skipped, never fatal."""
        if not self.path.exists():
            return []
        found = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                found.append(entry)
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
