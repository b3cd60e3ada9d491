"""Who reads what: one row per KCL worker — leases held (open and closed shards), the shards'
throughput, CPU and how old its metrics are, the leader — and the flags an operator looks for.

Flags: `only-closed` (every lease it holds is on a closed shard: after a split, it reads nothing),
`leases>2x` / `throughput>2x` (more than twice the workers' mean), `metrics-stale` (its
WorkerMetricStats item is older than the KCL's expiry: the leader stops giving it leases — a
stopped worker still holding them), `no-metrics` (a KCL 3.x application with no metrics item for a
lease owner), `cpu>range` (above its operating range), `hand-off` (a lease whose checkpointOwner is
still set: a graceful hand-off in progress). Items of the wrong shape mark their row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from console.consumers.kcl3 import (
    KCL_2X,
    METRICS_EXPIRY_S,
    SINGLE_TABLE,
    THREE_TABLES,
    Coordination,
    WorkerMetrics,
    application_of,
    coordinator_items,
    coordinator_table,
    entity_of,
    parse_coordination,
    parse_worker_metrics,
    table_role,
    worker_metric_items,
    worker_metrics_table,
)
from console.consumers.leases import (
    LEASE_KEY,
    Lease,
    is_lease_item,
    is_lease_key_schema,
    looks_like_lease_item,
    parse_lease,
)
from console.consumers.throughput import LEASE, ShardThroughput, ShardThroughputMeter
from console.errors import BadInput
from console.words import counted

ONLY_CLOSED = "only-closed"
LEASES_OVER = "leases>2x"
THROUGHPUT_OVER = "throughput>2x"
METRICS_STALE = "metrics-stale"
NO_METRICS = "no-metrics"
CPU_OVER = "cpu>range"
HAND_OFF = "hand-off"
BAD_ITEM = "bad-item"


@dataclass(frozen=True, slots=True)
class WorkerRow:
    worker_id: str
    leases: int
    open_leases: int
    throughput_kbps: float | None
    cpu: float | None
    metrics_age_s: float | None
    leader: bool
    flags: tuple[str, ...]
    hand_offs: tuple[str, ...] = ()  # lease keys this worker is handing over or taking over
    problem: str | None = None
    throughput_source: str | None = None  # "lease" (KCL 3.x's throughputKBps), "shard metrics", "sampled records"
    throughput_lower_bound: bool = False  # measured by a read that stopped at its bound

    def cells(self) -> tuple[str, ...]:
        """The row as text: worker, leases, open, KB/s, CPU, metrics age, leader, flags."""
        flags = " ".join(f"! {flag}" for flag in self.flags) + (f" ({self.problem})" if self.problem else "")
        return (
            self.worker_id,
            str(self.leases),
            str(self.open_leases),
            "-"
            if self.throughput_kbps is None
            else ("≥" if self.throughput_lower_bound else "") + f"{self.throughput_kbps:.1f}",
            "-" if self.cpu is None else f"{self.cpu:.0f}%",
            "-" if self.metrics_age_s is None else f"{self.metrics_age_s:.0f} s",
            "leader" if self.leader else "",
            flags,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "worker_id": self.worker_id,
            "leases": self.leases,
            "open_leases": self.open_leases,
            "throughput_kbps": None if self.throughput_kbps is None else round(self.throughput_kbps, 3),
            "throughput_source": self.throughput_source,
            "throughput_lower_bound": self.throughput_lower_bound,
            "cpu": self.cpu,
            "metrics_age_s": None if self.metrics_age_s is None else round(self.metrics_age_s, 1),
            "leader": self.leader,
            "flags": list(self.flags),
            "hand_offs": list(self.hand_offs),
            "problem": self.problem,
        }


@dataclass(frozen=True, slots=True)
class WorkersView:
    layout: str
    rows: tuple[WorkerRow, ...]
    leader: str | None
    migration_state: str | None
    table_migration: str | None
    unowned_leases: int
    other_streams: Mapping[str, int]  # stream name -> its leases in the same table (not counted above)
    all_streams: bool
    notes: tuple[str, ...] = field(default=())
    other_leases: tuple[Lease, ...] = field(default=())  # with all_streams: the other streams' leases
    throughput_line: str | None = None  # where measured throughput comes from (None: only leases' own)

    def other_lease_rows(self) -> list[tuple[str, str, str, str]]:
        """(stream, shard, owner, checkpoint) of each other stream's lease."""
        return [
            (lease.stream_name or "?", lease.shard_id, lease.owner or "-", lease.checkpoint or "-")
            for lease in sorted(self.other_leases, key=lambda lease: (lease.stream_name or "", lease.shard_id))
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "migration_state": self.migration_state,
            "table_migration": self.table_migration,
            "leader": self.leader,
            "workers": [row.to_json() for row in self.rows],
            "unowned_leases": self.unowned_leases,
            "other_streams": dict(self.other_streams),
            "all_streams": self.all_streams,
            "other_stream_leases": [
                dict(zip(("stream", "shard_id", "owner", "checkpoint"), row)) for row in self.other_lease_rows()
            ],
            "notes": list(self.notes),
            "throughput_measured": self.throughput_line,
        }

    def summary_lines(self) -> list[str]:
        """The layout, leader and migration state; unowned leases; notes; other streams."""
        state = f"layout {self.layout}"
        if self.layout != KCL_2X:
            state += f", leader {self.leader or 'none'}, migration state {self.migration_state or 'unknown'}" + (
                f", table migration {self.table_migration}" if self.table_migration else ""
            )
        lines = [state]
        if self.unowned_leases:
            lines.append(f"{self.unowned_leases} open lease(s) have no owner")
        if self.throughput_line:
            lines.append(self.throughput_line)
        lines.extend(self.notes)
        other = self.other_streams_line()
        if other:
            lines.append(other)
        return lines

    def other_streams_line(self) -> str | None:
        if not self.other_streams:
            return None
        count = sum(self.other_streams.values())
        named = ", ".join(f"{name} ({n})" for name, n in sorted(self.other_streams.items()))
        verb = "listed below" if self.all_streams else "left out; --all-streams lists them"
        return f"{count} lease(s) of other streams in this table, {verb}: {named}"


def build_workers(
    leases: Sequence[Lease],
    *,
    stream: str,
    open_shard_ids: Iterable[str] | None,
    metrics: Sequence[WorkerMetrics],
    coordination: Coordination | None,
    layout: str,
    now: float,
    all_streams: bool = False,
    measured: ShardThroughput | None = None,
) -> WorkersView:
    """The worker view from a lease table's leases (every stream's), the worker metrics and the
    coordinator state. `open_shard_ids` are this stream's open shards (None: judge by SHARD_END).
    `measured` is this stream's shards' throughput, for leases that carry none of their own."""
    open_ids = set(open_shard_ids) if open_shard_ids is not None else None
    mine = [lease for lease in leases if lease.stream_name in (None, stream)]
    others = Counter(lease.stream_name or "?" for lease in leases if lease.stream_name not in (None, stream))
    counted = list(leases) if all_streams else mine

    def is_open(lease: Lease) -> bool:
        if lease.finished:
            return False
        if open_ids is None or lease.stream_name not in (None, stream):
            return True
        return lease.shard_id in open_ids

    by_owner: dict[str, list[Lease]] = {}
    for lease in counted:
        if lease.owner is not None:
            by_owner.setdefault(lease.owner, []).append(lease)
    hand_offs: dict[str, list[str]] = {}
    for lease in counted:
        if isinstance(lease.checkpoint_owner, str) and lease.checkpoint_owner and lease.checkpoint_owner != lease.owner:
            for worker in (lease.checkpoint_owner, lease.owner):
                if worker:
                    hand_offs.setdefault(worker, []).append(lease.lease_key)
    metrics_by_id = {m.worker_id: m for m in metrics}
    workers = sorted(set(by_owner) | set(metrics_by_id) | set(hand_offs))
    leader = coordination.leader if coordination else None

    def throughput(held: list[Lease]) -> tuple[float | None, str | None, bool]:
        """(KB/s, its sources, lower bound): a lease's own throughputKBps, else its shard's measure
        (a closed shard takes nothing in: 0)."""
        values, sources, lower = [], [], False
        for lease in held:
            if lease.throughput_kbps is not None:
                values.append(lease.throughput_kbps)
                sources.append(LEASE)
            elif measured is not None and lease.stream_name in (None, stream):
                rate = measured.rates.get(lease.shard_id)
                if rate is not None:
                    values.append(rate.kbps)
                    sources.append(rate.source)
                    lower = lower or rate.lower_bound
                elif not is_open(lease):
                    values.append(0.0)
        named = "+".join(dict.fromkeys(sources)) or None
        return (sum(values) if values else None), named, lower

    counts = {w: len(by_owner.get(w, [])) for w in workers}
    measures = {w: throughput(by_owner.get(w, [])) for w in workers}
    rates = {w: measure[0] for w, measure in measures.items()}
    mean_count = fmean(counts.values()) if counts else 0.0
    known_rates = [r for r in rates.values() if r is not None]
    mean_rate = fmean(known_rates) if known_rates else 0.0
    rows = []
    for worker in workers:
        held = by_owner.get(worker, [])
        open_count = sum(1 for lease in held if is_open(lease))
        m = metrics_by_id.get(worker)
        flags = []
        if held and open_count == 0:
            flags.append(ONLY_CLOSED)
        if len(workers) > 1 and counts[worker] > 2 * mean_count:
            flags.append(LEASES_OVER)
        if len(known_rates) > 1 and mean_rate > 0 and (rates[worker] or 0.0) > 2 * mean_rate:
            flags.append(THROUGHPUT_OVER)
        age = m.age(now) if m else None
        if m is not None and (age is None or age > METRICS_EXPIRY_S):
            flags.append(METRICS_STALE)
        if m is None and layout != KCL_2X:
            flags.append(NO_METRICS)
        if m is not None and m.cpu is not None and m.cpu_limit and m.cpu > m.cpu_limit:
            flags.append(CPU_OVER)
        if worker in hand_offs:
            flags.append(HAND_OFF)
        problem = m.problem if m is not None else None
        if problem:
            flags.append(BAD_ITEM)
        rows.append(
            WorkerRow(
                worker,
                len(held),
                open_count,
                rates[worker],
                m.cpu if m else None,
                age,
                worker == leader,
                tuple(flags),
                tuple(sorted(hand_offs.get(worker, ()))),
                problem,
                measures[worker][1],
                measures[worker][2],
            )
        )
    notes = []
    if layout == KCL_2X:
        notes.append("no worker-metrics or coordinator state (KCL 2.x): workers are the lease owners")
    if coordination is not None and coordination.found_items and not coordination.leader_item:
        notes.append("no leader: the coordinator state has no Leader lock item")
    elif coordination is not None and not coordination.found_items and layout != KCL_2X:
        notes.append("no leader or migration state: no coordinator items found")
    if coordination is not None:
        notes.extend(coordination.problems)
    if measured is not None:
        notes.extend(measured.notes)
    return WorkersView(
        layout,
        tuple(rows),
        leader,
        coordination.client_version if coordination else None,
        coordination.table_migration if coordination else None,
        sum(1 for lease in counted if lease.owner is None and not lease.finished),
        dict(others),
        all_streams,
        tuple(notes),
        tuple(lease for lease in leases if lease.stream_name not in (None, stream)) if all_streams else (),
        measured.sources_line() if measured is not None else None,
    )


# ---- reading the tables (through the injected backend's DynamoDB methods) -------------------------


async def check_lease_table(backend: Any, table: str) -> None:
    """BadInput (one line) unless `table` is keyed as a KCL lease table; KCL 3.x's worker-metrics and
    coordinator tables are named for what they are, with the lease table to pass instead."""
    description = await backend.describe_table(table)
    role = table_role(table, description.get("KeySchema") or [])
    if role:
        raise BadInput(
            f"table {table!r} is KCL 3.x's {role} table of application {application_of(table)!r}; "
            f"pass its lease table (by default {application_of(table)!r}) as --lease-table",
            code="not_a_lease_table",
        )
    if not is_lease_key_schema(description):
        keys = ", ".join(f"{k.get('AttributeName')} ({k.get('KeyType')})" for k in description.get("KeySchema", []))
        raise BadInput(
            f"table {table!r} is not a KCL lease table: its key is {keys or 'unknown'}; "
            f"a lease table's is {LEASE_KEY} (HASH)",
            code="not_a_lease_table",
        )


async def read_workers(
    backend: Any,
    table: str,
    stream: str,
    *,
    open_shard_ids: Iterable[str] | None,
    now: float,
    all_streams: bool = False,
    table_names: Sequence[str] | None = None,
    meter: ShardThroughputMeter | None = None,
) -> WorkersView:
    """The worker view of lease table `table`: its items, and KCL 3.x's worker-metrics and
    coordinator state from the same table (3.5) or from the tables named after it. With a `meter`,
    the open shards of owned leases that carry no throughputKBps are measured (shard metrics, or
    their records read back)."""
    await check_lease_table(backend, table)
    items = await backend.scan_table(table)
    kcl_items = [item for item in items if looks_like_lease_item(item) or entity_of(item)]
    if items and not kcl_items:
        raise BadInput(
            f"table {table!r} is not a KCL lease table: of {counted(len(items), 'item')} read, none has "
            "leaseKey, leaseCounter and checkpoint, or a KCL entityType",
            code="not_a_lease_table",
        )
    leases = [parse_lease(item) for item in items if is_lease_item(item)]
    metric_items = worker_metric_items(items)
    coordinator = coordinator_items(items)
    names = set(table_names if table_names is not None else await backend.table_names())
    if metric_items or coordinator:
        layout = SINGLE_TABLE
        metrics = [parse_worker_metrics(item, in_lease_table=True) for item in metric_items]
        coordination = parse_coordination(coordinator, in_lease_table=True)
    elif worker_metrics_table(table) in names or coordinator_table(table) in names:
        layout = THREE_TABLES
        metrics = []
        if worker_metrics_table(table) in names:
            metrics = [
                parse_worker_metrics(item, in_lease_table=False)
                for item in await backend.scan_table(worker_metrics_table(table))
            ]
        coordination = Coordination(None, None, None, 0)
        if coordinator_table(table) in names:
            coordination = parse_coordination(await backend.scan_table(coordinator_table(table)), in_lease_table=False)
    else:
        layout, metrics, coordination = KCL_2X, [], None
    measured = None
    if meter is not None:
        open_ids = set(open_shard_ids) if open_shard_ids is not None else None
        unmeasured = [
            lease.shard_id
            for lease in leases
            if lease.stream_name in (None, stream)
            and lease.owner is not None
            and lease.throughput_kbps is None
            and not lease.finished
            and (open_ids is None or lease.shard_id in open_ids)
        ]
        if unmeasured:
            measured = await meter.measure(unmeasured)
    return build_workers(
        leases,
        stream=stream,
        open_shard_ids=open_shard_ids,
        metrics=metrics,
        coordination=coordination,
        layout=layout,
        now=now,
        all_streams=all_streams,
        measured=measured,
    )


def layout_of(table: str, names: Iterable[str]) -> tuple[str | None, str | None]:
    """(worker-metrics table, coordinator table) that belong to lease table `table` by KCL's naming
    rule, each None when absent."""
    names = set(names)
    return (
        worker_metrics_table(table) if worker_metrics_table(table) in names else None,
        coordinator_table(table) if coordinator_table(table) in names else None,
    )


@dataclass(frozen=True, slots=True)
class KclTables:
    lease_table: str
    worker_metrics_table: str | None
    coordinator_table: str | None
    layout: str

    def to_json(self) -> dict[str, Any]:
        return {
            "lease_table": self.lease_table,
            "worker_metrics_table": self.worker_metrics_table,
            "coordinator_table": self.coordinator_table,
            "layout": self.layout,
        }

    def describe(self) -> str:
        if self.layout == SINGLE_TABLE:
            return f"{self.lease_table}  (KCL 3.5 single table: leases, worker metrics and coordinator state by entityType)"
        if self.layout == THREE_TABLES:
            parts = [name for name in (self.worker_metrics_table, self.coordinator_table) if name]
            return f"{self.lease_table}  (KCL 3.x three tables: with {' and '.join(parts)})"
        return f"{self.lease_table}  (leases only: KCL 2.x, or 3.x before its first worker reported)"


async def kcl_tables_of(backend: Any, lease_table: str, names: Iterable[str]) -> KclTables:
    """Which layout a lease table's application uses: its dedicated 3.x tables by KCL's naming rule,
    else KCL 3.5's entities in the table itself (read until the first one), else leases only."""
    metrics_table, coordinator = layout_of(lease_table, names)
    if metrics_table or coordinator:
        return KclTables(lease_table, metrics_table, coordinator, THREE_TABLES)
    async for page in backend.scan_pages(lease_table, page_size=500):
        if any(entity_of(item) not in (None, "LEASE") for item in page):
            return KclTables(lease_table, None, None, SINGLE_TABLE)
    return KclTables(lease_table, None, None, KCL_2X)
