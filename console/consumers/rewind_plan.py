"""The plan of a checkpoint move: where to (`Target`, parsed from the --to words), each lease's move
(`Move`) and the whole plan (`CheckpointPlan`) with the preview lines both the command line and the
console show. Prepared by console.consumers.rewind, run by console.consumers.rewind_run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.consumers.leases import (
    PENDING_CHECKPOINT,
)
from console.errors import BadInput
from console.read.positions import CLOCK_SKEW, parse_duration, parse_time
from console.words import counted

PENDING_ATTRIBUTES = (PENDING_CHECKPOINT, "pendingCheckpointSubSequenceNumber", "pendingCheckpointState")

AGAIN, SKIPPED, SAME = "again", "skipped", "same"


# ---- where to ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """trim-horizon, latest, a moment, or a sequence number per shard (the record read next)."""

    kind: str  # "trim-horizon" | "latest" | "time" | "sequences"
    moment: datetime | None = None
    sequences: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "time" and self.moment is not None:
            return self.moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self.kind == "sequences":
            return ", ".join(f"{shard}={seq}" for shard, seq in self.sequences.items())
        return self.kind


def parse_target(values: Sequence[str], now: datetime, *, option: str = "--to") -> Target:
    """`option` (--to; a dialog names its field): trim-horizon | latest | an ISO-8601 time | -DURATION (e.g. -1h) | shardId-…=SEQ (repeatable)."""
    values = [value.strip() for value in values if value and value.strip()]
    if not values:
        raise BadInput(f"{option} needs trim-horizon, latest, a time (ISO 8601 or -1h) or shardId-…=SEQ", code="usage")
    if any("=" in value for value in values):
        sequences: dict[str, str] = {}
        for value in values:
            shard, _, sequence = value.partition("=")
            if not shard.startswith("shardId-") or not sequence.isdigit() or len(sequence) > 128:
                raise BadInput(f"{option} {value[:80]!r}: per shard, give shardId-…=SEQUENCE_NUMBER (digits)")
            sequences[shard] = sequence
        return Target("sequences", sequences=sequences)
    if len(values) > 1:
        raise BadInput(f"{option} takes one point (or several shardId-…=SEQ)", code="usage")
    raw = values[0]
    lowered = raw.lower().replace("_", "-")
    if lowered in ("trim-horizon", "latest"):
        return Target(lowered)
    if raw.startswith("-"):
        moment = now - parse_duration(raw[1:], option)
    else:
        try:
            moment = parse_time(raw, option)
        except BadInput:
            raise BadInput(
                f"{option} must be trim-horizon, latest, an ISO-8601 time, -DURATION (e.g. -1h) or "
                f"shardId-…=SEQ; got {raw[:80]!r}"
            ) from None
    if moment > now + CLOCK_SKEW:
        raise BadInput(f"{option} {iso_millis(moment)} is in the future (now is {iso_millis(now)})")
    return Target("time", moment=moment)


# ---- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One lease's checkpoint, as read and as planned, and the records between the two."""

    lease_key: str
    shard_id: str
    old: str | None
    new: str
    owner: str | None
    counter: int | None
    old_subsequence: int = 0
    new_subsequence: int = 0
    records: int | None = 0  # read again or skipped; None: more than the scan cap (or not countable)
    direction: str = SAME
    create: dict[str, Any] | None = None  # the whole lease item to write (a parent lease already cleaned up)
    note: str = ""

    @property
    def changes(self) -> bool:
        return self.create is not None or (self.old, self.old_subsequence) != (self.new, self.new_subsequence)

    def records_text(self, cap: int) -> str:
        if self.direction == SAME:
            return "-"
        amount = f"more than {cap:,}" if self.records is None else f"{self.records:,}"
        return f"{amount} {'read again' if self.direction == AGAIN else 'skipped'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "lease_key": self.lease_key,
            "shard_id": self.shard_id,
            "owner": self.owner,
            "lease_counter": self.counter,
            "checkpoint": self.old,
            "new_checkpoint": self.new,
            "new_subsequence": self.new_subsequence,
            "records": self.records,
            "direction": self.direction,
            "recreated": self.create is not None,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class CheckpointPlan:
    """What a rewind, skip, undo, import or clone changes; `lines()` is the preview."""

    action: str  # rewind | skip | undo | import | clone
    stream: str
    table: str
    target: str
    moves: tuple[Move, ...]
    scan_cap: int
    refusal: str | None = None
    record: dict[str, Any] | None = None  # skip: the record skipped, decoded
    record_line: str | None = None
    to_table: str | None = None  # clone: the new application's table
    clone_items: tuple[dict[str, Any], ...] = ()
    undo_of: str | None = None

    @property
    def changed(self) -> tuple[Move, ...]:
        return tuple(move for move in self.moves if move.changes)

    @property
    def summary(self) -> str:
        if self.action == "clone":
            return f"create lease table {self.to_table} with {counted(len(self.clone_items), 'lease')} of {self.stream}"
        return f"move {counted(len(self.changed), 'checkpoint')} in {self.table} ({self.action} to {self.target})"

    def lines(self) -> list[str]:
        """The preview: one row per lease, the records each move reads again or skips, the refusal."""
        head = f"{self.action} {self.stream} in {self.table} to {self.target}" + (
            f" (undoing {self.undo_of})" if self.undo_of else ""
        )
        if self.action == "clone":
            head = f"clone {self.table} to new lease table {self.to_table}: {len(self.clone_items)} lease(s), unowned"
        rows = [
            (
                move.shard_id,
                move.owner or "-",
                move.old or "-",
                move.new + (" (recreated)" if move.create is not None else ""),
                move.records_text(self.scan_cap),
                move.note,
            )
            for move in self.moves
        ]
        lines = [head]
        if self.record_line:
            lines.append(f"record skipped: {self.record_line}")
        lines.append(_table(("SHARD", "OWNER", "CHECKPOINT", "NEW CHECKPOINT", "RECORDS", ""), rows))
        again = [m.records for m in self.changed if m.direction == AGAIN]
        skipped = [m.records for m in self.changed if m.direction == SKIPPED]
        if again:
            lines.append(f"read again: {_total(again, self.scan_cap)} record(s)")
        if skipped:
            lines.append(f"skipped: {_total(skipped, self.scan_cap)} record(s)")
        if self.action != "clone":
            lines.append(
                "the application must be stopped: leases whose counter moves while watched refuse the change; "
                "changed leases are left unowned"
            )
        if self.refusal:
            lines.append(f"refused: {self.refusal}")
        elif not self.changed and self.action != "clone":
            lines.append("nothing to change: every checkpoint is already there")
        return lines

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "action": self.action,
            "stream": self.stream,
            "lease_table": self.table,
            "target": self.target,
            "scan_cap": self.scan_cap,
            "leases": [move.to_json() for move in self.moves],
            "refusal": self.refusal,
        }
        if self.record is not None:
            document["record"] = self.record
        if self.to_table is not None:
            document["to_table"] = self.to_table
        if self.undo_of is not None:
            document["undo_of"] = self.undo_of
        return document


def _total(amounts: list[int | None], cap: int) -> str:
    known = sum(a for a in amounts if a is not None)
    return f"more than {known + cap:,}" if any(a is None for a in amounts) else f"{known:,}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    from console.read.printable import printable  # lease owners and checkpoints come from the table

    cells = [list(header)] + [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def iso_millis(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
