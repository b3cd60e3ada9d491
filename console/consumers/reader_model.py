"""One reader of a stream and where it is: `Reader` (worst first by `sort_key`), its position on each
shard (`ShardPosition`) and every reader of one stream (`ReadersReport`). Gathered by
console.consumers.readers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.consumers.report import format_millis
from console.words import counted

LAMBDA, FIREHOSE, PIPE, FLINK, EFO, KCL = "lambda", "firehose", "pipe", "flink", "efo", "kcl"
KINDS = (LAMBDA, FIREHOSE, PIPE, FLINK, EFO, KCL)
METRIC_WINDOW_MINUTES = 5
METRIC_PERIOD = 60
FUNCTION_CONCURRENCY = 8  # GetFunction calls in flight when checking that mapped functions exist
NO_READER = "no known reader uses it"
PIPE_LAG = "unknown: Pipes publish no iterator age"
FLINK_HEURISTIC = "found by its runtime properties naming the stream; its source is in its code"

# States in which a reader reads nothing until someone acts.
FAILED_STATES = frozenset(
    {
        "CREATING_FAILED",
        "DELETING_FAILED",
        "SUSPENDED",
        "FAILED",
        "CREATE_FAILED",
        "UPDATE_FAILED",
        "START_FAILED",
        "STOP_FAILED",
        "CREATE_ROLLBACK_FAILED",
        "UPDATE_ROLLBACK_FAILED",
        "DELETE_FAILED",
        "FORCE_STOPPING",
        "function deleted",
    }
)


@dataclass(frozen=True)
class ShardPosition:
    shard_id: str
    millis_behind: int | None
    records_behind: int | None
    checkpoint: str | None  # sequence number / TRIM_HORIZON / SHARD_END / None

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "millis_behind": self.millis_behind,
            "records_behind": self.records_behind,
            "checkpoint": self.checkpoint,
        }


@dataclass(frozen=True)
class Reader:
    kind: str  # "lambda" | "firehose" | "pipe" | "flink" | "efo" | "kcl"
    name: str
    arn: str | None
    state: str
    reason: str | None
    millis_behind: int | None  # worst; None = unknown
    records_behind: int | None
    errors: str | None
    settings: dict[str, object]
    via: str | None  # the EFO consumer it reads through
    heuristic: bool  # True for Flink: found by its properties, not by its source
    shards: tuple[ShardPosition, ...] | None  # None: known only as a whole

    @property
    def failing(self) -> bool:
        return self.state in FAILED_STATES

    @property
    def label(self) -> str:
        """'lambda orders-fn', with the EFO consumer it reads through: two mappings of one function
        (on the stream and on a consumer) are two readers."""
        return f"{self.kind} {self.name}" + (f" (via {self.via})" if self.via else "")

    def behind_text(self) -> str:
        """'3.2 min' (and records where known), or 'lag unknown'."""
        if self.millis_behind is None:
            return "lag unknown" if self.records_behind is None else f"{counted(self.records_behind, 'record')}"
        records = f", {counted(self.records_behind, 'record')}" if self.records_behind is not None else ""
        return f"{format_millis(self.millis_behind)}{records}"

    def sort_key(self) -> tuple[bool, bool, int, int, int, str]:
        """Worst first: failed readers, then the furthest behind, then those whose lag is unknown."""
        return (
            not self.failing,
            self.millis_behind is None,
            -(self.millis_behind or 0),
            -(self.records_behind or 0),
            KINDS.index(self.kind) if self.kind in KINDS else len(KINDS),
            self.name,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "arn": self.arn,
            "state": self.state,
            "reason": self.reason,
            "millis_behind": self.millis_behind,
            "records_behind": self.records_behind,
            "errors": self.errors,
            "settings": dict(self.settings),
            "via": self.via,
            "heuristic": self.heuristic,
            "shards": None if self.shards is None else [position.to_json() for position in self.shards],
        }


@dataclass(frozen=True)
class ReadersReport:
    stream: str
    readers: tuple[Reader, ...]  # worst first
    unavailable: tuple[str, ...]  # one line each: a service or permission missing in place of its rows
    window_minutes: int = METRIC_WINDOW_MINUTES

    def positions_on(self, shard_id: str) -> list[tuple[Reader, ShardPosition | None]]:
        """Every reader with its position on one shard (None: the reader is known only as a whole,
        or holds no lease on that shard)."""
        found: list[tuple[Reader, ShardPosition | None]] = []
        for reader in self.readers:
            position = next((p for p in reader.shards or () if p.shard_id == shard_id), None)
            found.append((reader, position))
        return found

    def worst(self) -> Reader | None:
        """The reader furthest behind (by time), None when no reader's lag is known."""
        behind = [reader for reader in self.readers if reader.millis_behind is not None]
        return max(behind, key=lambda reader: reader.millis_behind or 0) if behind else None

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "readers": [reader.to_json() for reader in self.readers],
            "unavailable": list(self.unavailable),
            "metric_window_minutes": self.window_minutes,
        }
