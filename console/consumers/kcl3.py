"""KCL 3.x's coordination items — worker metrics, the leader lock, migration state — read exactly as
the Kinesis Client Library writes them, and which of its table layouts an application uses.

Names and types are the KCL's own (amazon-kinesis-client, 3.x / 3.5):

- `software.amazon.kinesis.worker.metricstats.WorkerMetricStats`: KEY_WORKER_ID "wid" (S; the
  worker id, the same string as a lease's leaseOwner), KEY_LAST_UPDATE_TIME "lut" (N, epoch
  seconds), "sts" (M of metric -> L of N: the last values, -1 when a read failed), "opr" (M of
  metric -> L of N: the operating range, its first value the maximum), "sup"/"slu" (support code and
  its heartbeat). Metric names are `WorkerMetricType`'s short names: "C" CPU, "M" memory, "NI"/"NO"
  network in/out. The value the KCL balances leases by is `getMetricStat`: an exponential moving
  average (`emaAlpha` 0.2, the first value as it is) over the "sts" list, skipping the -1 of failed
  reads. `LeaseTableWorkerMetricStats` stores the same item in the lease table with the
  worker id under "leaseKey" instead of "wid".
- `MigrationAwareLAMDataManager`: a worker's metrics expire after
  DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD (2) x workerMetricsReporterFreqInMillis
  (`LeaseManagementConfig` default 30 s) = 60 s; expired workers get no new leases.
- `software.amazon.kinesis.coordinator.CoordinatorState` and its subclasses: the dedicated table's
  hash key is "key" (`LegacyTableCoordinatorStateDAODelegate.COORDINATOR_STATE_TABLE_HASH_KEY_ATTRIBUTE_NAME`);
  in the lease table it is "leaseKey" (`LeaseTableCoordinatorStateDAODelegate`). `LeaderLock`
  LEADER_HASH_KEY "Leader", written by the DynamoDB lock client with "ownerName" (S, the leader's
  worker id), "leaseDuration" and "recordVersionNumber" (S). `MigrationState` MIGRATION_HASH_KEY
  "Migration3.0" with "cv" (S, a `ClientVersion`: CLIENT_VERSION_INIT, CLIENT_VERSION_UPGRADE_FROM_2X,
  CLIENT_VERSION_2X, CLIENT_VERSION_3X_WITH_ROLLBACK, CLIENT_VERSION_3X), "mb" (S), "mts" (N, epoch
  millis). `TableMigrationState` TABLE_MIGRATION_HASH_KEY "TableMigration3.5" with "tm" (S, a
  `TableMigrationStatus`).
- `software.amazon.kinesis.leases.EntityType` (3.5, ENTITY_TYPE_ATTRIBUTE_NAME "entityType"): "LEASE",
  "STREAM", "LEADER", "CLIENT_VERSION_MIGRATION", "TABLE_MIGRATION", "WORKER_METRIC_STATS" — how the
  single-table layout tells its items apart.
- `software.amazon.kinesis.common.DdbTableConfig`: the dedicated tables are named
  applicationName + "-" + suffix, the suffixes "WorkerMetricStats" (`LeaseManagementConfig`) and
  "CoordinatorState" (`CoordinatorConfig`); the lease table's default name is the applicationName.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from console.consumers.leases import ENTITY_TYPE, LEASE_KEY, attribute

WORKER_ID = "wid"
LAST_UPDATE = "lut"
METRIC_STATS = "sts"
OPERATING_RANGE = "opr"
COORDINATOR_KEY = "key"
LEADER_KEY = "Leader"
LEADER_OWNER = "ownerName"
MIGRATION_KEY = "Migration3.0"
CLIENT_VERSION = "cv"
TABLE_MIGRATION_KEY = "TableMigration3.5"
TABLE_MIGRATION_STATUS = "tm"
CPU = "C"

WORKER_METRICS_SUFFIX = "WorkerMetricStats"
COORDINATOR_SUFFIX = "CoordinatorState"
METRICS_EXPIRY_S = 2 * 30  # DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD x the 30 s report interval

WORKER_METRIC_ENTITY = "WORKER_METRIC_STATS"
LEADER_ENTITY = "LEADER"
MIGRATION_ENTITY = "CLIENT_VERSION_MIGRATION"
TABLE_MIGRATION_ENTITY = "TABLE_MIGRATION"

# The three layouts an application's KCL state can have.
SINGLE_TABLE = "single-table"  # KCL 3.5: everything in the lease table, told apart by entityType
THREE_TABLES = "three-tables"  # KCL 3.0-3.4: lease, <app>-WorkerMetricStats and <app>-CoordinatorState
KCL_2X = "kcl-2.x"  # leases only: workers are known only as lease owners


def worker_metrics_table(lease_table: str) -> str:
    return f"{lease_table}-{WORKER_METRICS_SUFFIX}"


def coordinator_table(lease_table: str) -> str:
    return f"{lease_table}-{COORDINATOR_SUFFIX}"


def table_role(name: str, key_schema: Iterable[Mapping[str, Any]]) -> str | None:
    """ "worker-metrics" or "coordinator" for KCL 3.x's dedicated tables (by name and key), else None."""
    keys = [k.get("AttributeName") for k in key_schema]
    if name.endswith("-" + WORKER_METRICS_SUFFIX) and keys == [WORKER_ID]:
        return "worker-metrics"
    if name.endswith("-" + COORDINATOR_SUFFIX) and keys == [COORDINATOR_KEY]:
        return "coordinator"
    return None


def application_of(name: str) -> str:
    """The application (and default lease table) name a dedicated table belongs to."""
    for suffix in (WORKER_METRICS_SUFFIX, COORDINATOR_SUFFIX):
        if name.endswith("-" + suffix):
            return name[: -len(suffix) - 1]
    return name


def entity_of(item: Mapping[str, Any]) -> str | None:
    value = attribute(item.get(ENTITY_TYPE))
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class WorkerMetrics:
    worker_id: str
    last_update: float | None  # epoch seconds
    cpu: float | None  # percent, the KCL's own smoothed value of its readings (None: none reported or all failed)
    cpu_limit: float | None  # the operating range's maximum
    problem: str | None = None  # why some of it could not be read (the row is marked, not dropped)

    def age(self, now: float) -> float | None:
        return None if self.last_update is None else max(0.0, now - self.last_update)


def parse_worker_metrics(item: Mapping[str, Any], *, in_lease_table: bool) -> WorkerMetrics:
    """One WorkerMetricStats item; attributes of the wrong type give `problem`, never an exception."""
    key = LEASE_KEY if in_lease_table else WORKER_ID
    worker_id = attribute(item.get(key))
    problems = []
    if not isinstance(worker_id, str) or not worker_id:
        problems.append(f"{key} is not a string")
        worker_id = str(worker_id)
    last_update = _read(item, LAST_UPDATE, (int, float), problems)
    stats = _read(item, METRIC_STATS, dict, problems) or {}
    ranges = _read(item, OPERATING_RANGE, dict, problems) or {}
    cpu = None
    values = stats.get(CPU)
    if values is not None:
        if isinstance(values, list) and all(isinstance(v, (int, float)) for v in values):
            cpu = kcl_metric_value(values)
        else:
            problems.append(f"{METRIC_STATS}.{CPU} is not a list of numbers")
    limit = ranges.get(CPU)
    cpu_limit = float(limit[0]) if isinstance(limit, list) and limit and isinstance(limit[0], (int, float)) else None
    return WorkerMetrics(
        worker_id, float(last_update) if last_update is not None else None, cpu, cpu_limit, "; ".join(problems) or None
    )


KCL_EMA_ALPHA = 0.2  # WorkerMetricStats.emaAlpha


def kcl_metric_value(readings: list[float]) -> float | None:
    """What the KCL makes of a metric's readings (WorkerMetricStats.getMetricStat): their exponential
    moving average, failed readings (-1) skipped; None when no reading succeeded."""
    average = None
    for reading in readings:
        if reading == -1:
            continue
        average = float(reading) if average is None else KCL_EMA_ALPHA * reading + (1 - KCL_EMA_ALPHA) * average
    return average


def _read(item: Mapping[str, Any], name: str, kinds: type | tuple[type, ...], problems: list[str]) -> Any:
    raw = item.get(name)
    if raw is None:
        return None
    value = attribute(raw) if isinstance(raw, Mapping) else raw
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = next(iter(raw)) if isinstance(raw, Mapping) and raw else type(raw).__name__
        problems.append(f"{name} has the wrong type ({kind})")
        return None
    return value


@dataclass(frozen=True, slots=True)
class Coordination:
    """What the coordinator items say: the leader and the migration states (None: no such item)."""

    leader: str | None
    client_version: str | None
    table_migration: str | None
    found_items: int  # coordinator items read at all (0: the table or items are missing)
    problems: tuple[str, ...] = ()
    leader_item: bool = False  # the Leader lock item is there (its owner may still be unreadable)


def parse_coordination(items: Iterable[Mapping[str, Any]], *, in_lease_table: bool) -> Coordination:
    key = LEASE_KEY if in_lease_table else COORDINATOR_KEY
    leader = version = table_status = None
    found, problems, leader_item = 0, [], False
    for item in items:
        name = attribute(item.get(key))
        if name == LEADER_KEY:
            found += 1
            leader_item = True
            owner = attribute(item.get(LEADER_OWNER))
            if isinstance(owner, str) and owner:
                leader = owner
            else:
                problems.append(f"the {LEADER_KEY} lock item has no {LEADER_OWNER} string")
        elif name == MIGRATION_KEY:
            found += 1
            value = attribute(item.get(CLIENT_VERSION))
            version = value if isinstance(value, str) else None
            if version is None:
                problems.append(f"the {MIGRATION_KEY} item has no {CLIENT_VERSION} string")
        elif name == TABLE_MIGRATION_KEY:
            found += 1
            value = attribute(item.get(TABLE_MIGRATION_STATUS))
            table_status = value if isinstance(value, str) else None
    return Coordination(leader, version, table_status, found, tuple(problems), leader_item)


def coordinator_items(items: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The coordinator entities of a 3.5 lease table (by entityType, or by their fixed keys)."""
    return [
        item
        for item in items
        if entity_of(item) in (LEADER_ENTITY, MIGRATION_ENTITY, TABLE_MIGRATION_ENTITY)
        or attribute(item.get(LEASE_KEY)) in (LEADER_KEY, MIGRATION_KEY, TABLE_MIGRATION_KEY)
    ]


def worker_metric_items(items: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [item for item in items if entity_of(item) == WORKER_METRIC_ENTITY]
