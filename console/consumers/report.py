"""One look at a stream's consumers: EFO registrations, KCL leases with their lag and state, and the
open shards nobody holds a lease on.

Lease states: `finished` (checkpoint SHARD_END), `unowned` (no leaseOwner), `stalled` (an owner, but
leaseCounter has not moved since the previous poll while records are waiting: KCL workers bump the
counter on every renewal, so a live worker's counter always moves), else `owned`. Stalling needs two
polls; `StallTracker` carries the counters from one to the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.consumers.lag import ShardLag
from console.consumers.leases import Lease
from console.read.efo import is_temporary_consumer
from console.topology.model import EfoConsumer, Shard

OWNED, UNOWNED, STALLED, FINISHED = "owned", "unowned", "stalled", "finished"


class StallTracker:
    """leaseCounter per lease key from the previous poll."""

    def __init__(self) -> None:
        self._counters: dict[str, int | None] = {}

    def previous(self, lease_key: str) -> int | None:
        return self._counters.get(lease_key)

    def remember(self, leases: Iterable[Lease]) -> None:
        self._counters = {lease.lease_key: lease.counter for lease in leases}


def format_millis(millis: int | None) -> str:
    """Time behind for people: 850 ms, 12.5 s, 3.2 min, 1.5 h; "?" when unknown."""
    if millis is None:
        return "?"
    if millis < 1000:
        return f"{millis} ms"
    seconds = millis / 1000
    return (
        f"{seconds:.1f} s"
        if seconds < 120
        else f"{seconds / 60:.1f} min"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h"
    )


def lease_state(lease: Lease, lag: ShardLag | None, previous_counter: int | None) -> str:
    if lease.finished:
        return FINISHED
    if lease.owner is None:
        return UNOWNED
    behind = lag is not None and ((lag.records_behind is None and lag.over_cap) or (lag.records_behind or 0) > 0)
    if behind and previous_counter is not None and lease.counter == previous_counter:
        return STALLED
    return OWNED


@dataclass(frozen=True, slots=True)
class LeaseRow:
    lease: Lease
    lag: ShardLag | None  # None for finished leases (nothing left to read)
    state: str
    problem: str | None = None

    @property
    def shard_id(self) -> str:
        return self.lease.shard_id

    @property
    def records_behind(self) -> int | None:
        return 0 if self.lease.finished else (self.lag.records_behind if self.lag else None)

    @property
    def millis_behind(self) -> int | None:
        return 0 if self.lease.finished else (self.lag.millis_behind if self.lag else None)

    def records_text(self, cap: int) -> str:
        """Records behind for people: "1,234", ">10,000" over the cap, "?" when not measurable."""
        if self.records_behind is not None:
            return f"{self.records_behind:,}"
        return f">{cap:,}" if self.lag is not None and self.lag.over_cap else "?"

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "owner": self.lease.owner,
            "checkpoint": self.lease.checkpoint,
            "records_behind": self.records_behind,
            "millis_behind": self.millis_behind,
            "state": self.state,
        }


@dataclass(frozen=True)
class ConsumerReport:
    stream: str
    lease_table: str | None
    efo_consumers: tuple[EfoConsumer, ...]
    rows: tuple[LeaseRow, ...]
    unleased_shards: tuple[str, ...]
    scan_cap: int
    waiting_on_parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # unleased child -> parents
    efo_unknown: str | None = None  # why the EFO consumers could not be listed (the endpoint lacks the call)

    @property
    def problems(self) -> list[dict[str, Any]]:
        return [
            {"shard_id": row.shard_id, "lease_key": row.lease.lease_key, "problem": row.problem}
            for row in self.rows
            if row.problem
        ]

    def worst_millis_by_shard(self) -> dict[str, int | None]:
        """The Lag column: per shard, the largest time behind over its leases."""
        worst: dict[str, int | None] = {}
        for row in self.rows:
            millis = row.millis_behind
            if row.shard_id not in worst or (millis is not None and (worst[row.shard_id] or -1) < millis):
                worst[row.shard_id] = millis
        return worst

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "efo_consumers": None
            if self.efo_unknown
            else [
                consumer.to_json() | {"kconsole_temporary": is_temporary_consumer(consumer.name)}
                for consumer in self.efo_consumers
            ],
            "efo_consumers_unknown": self.efo_unknown,
            "leases": [row.to_json() for row in self.rows],
            "unleased_shards": list(self.unleased_shards),
            "lease_table": self.lease_table,
            "scan_cap": self.scan_cap,
            "problems": self.problems,
        }


def build_report(
    stream: str,
    lease_table: str | None,
    leases: Sequence[Lease],
    shards: Sequence[Shard],
    lags: Mapping[str, ShardLag],
    efo: Sequence[EfoConsumer],
    *,
    scan_cap: int,
    tracker: StallTracker | None = None,
) -> ConsumerReport:
    known = {shard.shard_id: shard for shard in shards}
    rows = []
    for lease in leases:
        lag = lags.get(lease.shard_id)
        problem = lease.problem
        if lease.shard_id not in known:
            problem = "the stream has no such shard (trimmed past retention, or another stream's lease)"
        elif lag is not None and lag.problem:
            problem = lag.problem
        previous = tracker.previous(lease.lease_key) if tracker else None
        rows.append(LeaseRow(lease, lag, lease_state(lease, lag, previous), problem))
    if tracker is not None:
        tracker.remember(leases)
    if lease_table is None:
        return ConsumerReport(stream, None, tuple(efo), (), (), scan_cap)
    leased = {lease.shard_id for lease in leases}
    unfinished = {lease.shard_id for lease in leases if not lease.finished}
    unleased = tuple(shard.shard_id for shard in shards if shard.is_open and shard.shard_id not in leased)
    waiting = {
        shard_id: parents
        for shard_id in unleased
        if (parents := tuple(p for p in known[shard_id].parents if p in unfinished))
    }
    return ConsumerReport(stream, lease_table, tuple(efo), tuple(rows), unleased, scan_cap, waiting)
