"""The reshard barrier: a KCL worker starts on a child shard only once every parent's lease has reached
SHARD_END. A split or merge closes the shards it changes, so whatever their consumers have not read
yet is put in front of the children, and new records for those keys wait behind it.

`barrier_analysis` says, from the lease rows of a ConsumerReport, which closed parents are still
being read now (their children already wait) and how much lag the planned change would put behind
the barrier. A reshard is held back (needs --force) when a shard it changes still has records to
read, or is itself still waiting for a parent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from console.consumers.report import ConsumerReport, LeaseRow
from console.topology.model import Shard
from console.words import counted


@dataclass(frozen=True, slots=True)
class BarrierShard:
    shard_id: str
    owner: str | None
    state: str
    records_behind: int | None  # None: over the scan cap or not measurable
    millis_behind: int | None
    over_cap: bool

    @classmethod
    def of(cls, row: LeaseRow) -> BarrierShard:
        return cls(
            row.shard_id,
            row.lease.owner,
            row.state,
            row.records_behind,
            row.millis_behind,
            bool(row.lag and row.lag.over_cap),
        )

    @property
    def behind(self) -> bool:
        return self.records_behind is None or self.records_behind > 0

    def describe(self, cap: int) -> str:
        if self.records_behind is None:
            records = f"more than {counted(cap, 'record')}" if self.over_cap else "an unknown number of records"
        else:
            records = f"{counted(self.records_behind, 'record')}"
        age = f", {self.millis_behind / 1000:.1f} s behind" if self.millis_behind else ""
        return f"{self.shard_id}: {records}{age} ({self.state}, owner {self.owner or '-'})"

    def to_json(self) -> dict[str, Any]:
        return {
            "shard_id": self.shard_id,
            "owner": self.owner,
            "state": self.state,
            "records_behind": self.records_behind,
            "millis_behind": self.millis_behind,
        }


@dataclass(frozen=True)
class BarrierReport:
    lease_table: str
    scan_cap: int
    unfinished_parents: tuple[BarrierShard, ...]  # closed shards whose leases are not at SHARD_END
    behind_barrier: tuple[BarrierShard, ...]  # shards the change closes, with lag still to read
    waiting_changed: tuple[str, ...]  # shards the change touches that still wait for their own parents

    @property
    def blocking(self) -> bool:
        return bool(self.behind_barrier or self.waiting_changed)

    @property
    def records_behind(self) -> int | None:
        """Total records put behind the barrier (None when any shard is over the cap)."""
        counts = [shard.records_behind for shard in self.behind_barrier if shard.records_behind is not None]
        return None if len(counts) < len(self.behind_barrier) else sum(counts)

    def reason(self) -> str:
        parts = []
        if self.behind_barrier:
            total = self.records_behind
            amount = f"{counted(total, 'record')}" if total is not None else "records (over the scan cap)"
            parts.append(
                f"consumers in {self.lease_table} still have {amount} to read in "
                f"{', '.join(s.shard_id for s in self.behind_barrier)}; their children would wait "
                "until those are read to SHARD_END"
            )
        if self.waiting_changed:
            parts.append(f"{', '.join(self.waiting_changed)} still wait for unfinished parents")
        return "; ".join(parts)

    def lines(self) -> list[str]:
        out = [
            f"Consumers (lease table {self.lease_table}): children are read only after their parents reach SHARD_END."
        ]
        if self.unfinished_parents:
            out.append("  Parents not yet finished (their children wait now):")
            out += [f"    {shard.describe(self.scan_cap)}" for shard in self.unfinished_parents]
        if self.behind_barrier:
            out.append("  Lag this change puts behind the barrier:")
            out += [f"    {shard.describe(self.scan_cap)}" for shard in self.behind_barrier]
        if self.waiting_changed:
            out.append(f"  Changed shards still waiting for their own parents: {', '.join(self.waiting_changed)}")
        if not self.blocking and not self.unfinished_parents:
            out.append("  No lag in the shards this change closes: nothing would wait behind the barrier.")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "lease_table": self.lease_table,
            "blocking": self.blocking,
            "unfinished_parents": [shard.to_json() for shard in self.unfinished_parents],
            "behind_barrier": [shard.to_json() for shard in self.behind_barrier],
            "records_behind_barrier": self.records_behind,
            "waiting_changed": list(self.waiting_changed),
        }


def changed_shards(before: Iterable[Shard], after_unchanged: Iterable[str]) -> set[str]:
    """The open shards a plan closes: every shard before it that does not survive unchanged."""
    kept = set(after_unchanged)
    return {shard.shard_id for shard in before if shard.shard_id not in kept}


def barrier_analysis(report: ConsumerReport, shards: Sequence[Shard], changed: Iterable[str]) -> BarrierReport:
    by_shard: dict[str, list[LeaseRow]] = {}
    for row in report.rows:
        by_shard.setdefault(row.shard_id, []).append(row)
    known = {shard.shard_id: shard for shard in shards}
    unfinished_parents = tuple(
        BarrierShard.of(row)
        for row in report.rows
        if not row.lease.finished and row.shard_id in known and not known[row.shard_id].is_open
    )
    changed = sorted(set(changed))
    behind = tuple(
        shard
        for shard_id in changed
        for row in by_shard.get(shard_id, ())
        if (shard := BarrierShard.of(row)).behind and not row.lease.finished
    )
    unfinished_ids = {shard.shard_id for shard in unfinished_parents}
    waiting = tuple(
        shard_id
        for shard_id in changed
        if shard_id in known and any(parent in unfinished_ids for parent in known[shard_id].parents)
    )
    return BarrierReport(report.lease_table or "", report.scan_cap, unfinished_parents, behind, waiting)
