"""`kconsole consumers`' options, shared by its listing (console.commands.consumers) and its
checkpoint actions (console.commands.checkpoints)."""

from __future__ import annotations

from dataclasses import dataclass

from console.consumers.lag import DEFAULT_SCAN_CAP


@dataclass(frozen=True)
class ConsumersOptions:
    """`kconsole consumers` (and its register|deregister|rewind|skip|clone|checkpoints actions)."""

    words: list[str]  # [ACTION] STREAM [FILE]
    stream_name: str = ""  # from `words`, once read (`stream` is the top-level --stream)
    lease_table: str | None = None
    find_lease_tables: bool = False
    scan_cap: int = DEFAULT_SCAN_CAP
    watch: float | None = None
    to: list[str] | None = None
    shard: list[str] | None = None
    sequence: str | None = None
    to_table: str | None = None
    undo: str | None = None
    plan: bool = False
    workers: bool = False
    all_streams: bool = False
    name: str | None = None
