"""What the key-space commands need to know about a stream's record distribution: whether Kinesis
follows the keys at all (AUTO ignores them) and, from the action log, since when it has not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

DISTRIBUTION_ACTION = "stream distribution"


def switched_to_auto_at(entries: Iterable[dict], stream: str, backend: str) -> str | None:
    """When (UTC, to the minute) this tool last switched `stream` at `backend` to AUTO, if that switch
    is the latest one it made; None when the log does not know (switched by another tool, say)."""
    latest = None
    for entry in entries:
        if entry.get("action") == DISTRIBUTION_ACTION and entry.get("stream") == stream \
                and entry.get("backend") == backend:
            latest = entry
    if latest is None or latest.get("target") != "AUTO":
        return None
    return str(latest.get("time", ""))[:16].replace("T", " ") + " UTC" if latest.get("time") else None


async def distribution_since(kinesis: Any, stream: str) -> str | None:
    from console.reshard.actionlog import ActionLog

    return switched_to_auto_at(ActionLog.default().entries(), stream, kinesis.label)
