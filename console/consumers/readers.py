"""Every reader of a stream, one row each, worst first: Lambda event source mappings (on the stream
and on its EFO consumers), Firehose delivery streams, EventBridge Pipes, Managed Service for Apache
Flink applications that name the stream, EFO consumers and KCL applications (their lease tables).

Each row says how far behind the reader is (time, and records where the leases tell), its errors and
the settings that explain its behaviour. Time behind comes from CloudWatch, the last
METRIC_WINDOW_MINUTES minutes, read in one batched GetMetricData pass for every reader:

    Lambda    AWS/Lambda IteratorAge (Maximum, FunctionName); Errors and Throttles (Sum)
    Firehose  AWS/Firehose KinesisMillisBehindLatest (Maximum), DataReadFromKinesisStream.Records
              and .Bytes (Sum), DeliveryStreamName
    Flink     AWS/KinesisAnalytics millisBehindLatest (Maximum, Application)
    EFO       AWS/Kinesis SubscribeToShardEvent.MillisBehindLatest (Maximum, StreamName + ConsumerName)
    Pipes     publish no iterator age: their lag is unknown
    KCL       from the lease table: records and time between each checkpoint and the tip (lag.py)

A service the endpoint lacks, a permission missing or throttling that outlasts the retries costs one
line in `unavailable` in place of that service's rows. Everything here only reads. I/O goes through
the injected backend (console.backend.protocol.ReaderSources and the Kinesis/DynamoDB calls).

`reshard_impact` says what a reshard does to these readers; `fleet_reader_lag` is the cheap form
for the stream list (mappings and delivery streams of every stream, one metric batch).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.look import consumer_report, find_lease_tables
from console.consumers.report import ConsumerReport, EfoConsumer, format_millis
from console.errors import ConsoleError

T = TypeVar("T")
_LIST_SEPARATORS = re.compile(r"[,;\s]+")

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

    def to_json(self) -> dict:
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
            return "lag unknown" if self.records_behind is None else f"{self.records_behind:,} records"
        records = f", {self.records_behind:,} records" if self.records_behind is not None else ""
        return f"{format_millis(self.millis_behind)}{records}"

    def sort_key(self) -> tuple:
        """Worst first: failed readers, then the furthest behind, then those whose lag is unknown."""
        return (
            not self.failing,
            self.millis_behind is None,
            -(self.millis_behind or 0),
            -(self.records_behind or 0),
            KINDS.index(self.kind) if self.kind in KINDS else len(KINDS),
            self.name,
        )

    def to_json(self) -> dict:
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

    def to_json(self) -> dict:
        return {
            "stream": self.stream,
            "readers": [reader.to_json() for reader in self.readers],
            "unavailable": list(self.unavailable),
            "metric_window_minutes": self.window_minutes,
        }


# ---- gathering ------------------------------------------------------------------------------------


@dataclass
class _Found:
    """What each source gave, before the metrics are read."""

    efo: list[EfoConsumer] = field(default_factory=list)
    mappings: list[tuple[dict, str | None]] = field(default_factory=list)  # (mapping, EFO consumer name)
    missing_functions: set[str] = field(default_factory=set)
    delivery_streams: list[dict] = field(default_factory=list)
    pipes: list[dict] = field(default_factory=list)
    flink: list[tuple[dict, str]] = field(default_factory=list)  # (application, the property naming the stream)
    kcl: list[ConsumerReport] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # source -> its one line


async def _guarded(found: _Found, source: str, work: Awaitable[T]) -> T | None:
    """`work`'s answer, or None with one line in `found.unavailable` when the source cannot be read."""
    try:
        return await work
    except ConsoleError as error:
        found.unavailable.setdefault(source, f"{source}: {error.message}")
        return None


async def readers_report(
    backend: Any,
    stream: str,
    *,
    lease_tables: Sequence[str] | None = None,
    now: datetime | None = None,
    scan_cap: int = DEFAULT_SCAN_CAP,
) -> ReadersReport:
    """Every reader of `stream`, worst first. `lease_tables`: the KCL applications' tables (None: find
    them, as `consumers --find-lease-tables` does; an empty list: no KCL applications)."""
    summary = await backend.describe_stream_summary(stream)  # a missing stream is the command's error
    stream_arn = summary.arn
    shards = await backend.all_shards(stream)
    found = _Found()

    async def efo_then_mappings() -> None:
        consumers = await _guarded(found, "EFO consumers", backend.list_stream_consumers(stream_arn))
        found.efo = sorted((EfoConsumer.from_api(raw) for raw in consumers or ()), key=lambda c: c.name)
        await _lambda_mappings(backend, stream_arn, found)

    async def firehose() -> None:
        described = await _guarded(found, "Firehose", backend.delivery_streams_from_kinesis())
        found.delivery_streams = [d for d in described or () if delivery_source(d) == stream_arn]

    async def pipes() -> None:
        described = await _guarded(found, "EventBridge Pipes", backend.pipes_from(stream_arn))
        found.pipes = [p for p in described or () if reads_stream_arn(p.get("Source"), stream_arn)]

    async def flink() -> None:
        applications = await _guarded(found, "Managed Service for Apache Flink", backend.flink_applications())
        found.flink = [
            (app, named) for app in applications or () if (named := flink_names_stream(app, stream, stream_arn))
        ]

    async def kcl() -> None:
        tables = lease_tables
        if tables is None:
            tables = await _guarded(found, "KCL lease tables", find_lease_tables(backend, stream, shards))
        for table in tables or ():
            report = await _guarded(
                found,
                f"KCL lease table {table}",
                consumer_report(
                    backend,
                    stream,
                    lease_table=table,
                    shards=shards,
                    stream_arn=stream_arn,
                    efo=(),  # the EFO consumers are listed once, for their own rows
                    cap=scan_cap,
                    now=now,
                ),
            )
            if report is not None:
                found.kcl.append(report)

    await asyncio.gather(efo_then_mappings(), firehose(), pipes(), flink(), kcl())
    readers = await _with_metrics(backend, stream, found, now)
    return ReadersReport(
        stream,
        tuple(sorted(readers, key=Reader.sort_key)),
        tuple(found.unavailable[source] for source in sorted(found.unavailable)),
    )


async def _lambda_mappings(backend: Any, stream_arn: str, found: _Found) -> None:
    """The mappings on the stream and on each EFO consumer (EFO mappings name the consumer's ARN),
    and which of their functions are gone."""
    sources: list[tuple[str, str | None]] = [(stream_arn, None)] + [(c.arn, c.name) for c in found.efo if c.arn]

    async def listed() -> list[tuple[dict, str | None]]:
        pages = await asyncio.gather(*(backend.event_source_mappings(arn) for arn, _ in sources))
        return [(mapping, via) for (_, via), mappings in zip(sources, pages) for mapping in mappings]

    mappings = await _guarded(found, "Lambda", listed())
    found.mappings = mappings or []
    functions = sorted({function_name(mapping.get("FunctionArn")) for mapping, _ in found.mappings} - {""})
    limit = asyncio.Semaphore(FUNCTION_CONCURRENCY)

    async def gone(function: str) -> bool:
        async with limit:
            try:
                return await backend.function_configuration(function) is None
            except ConsoleError:  # cannot tell (no lambda:GetFunction): the mapping's own result says
                return False

    missing = await asyncio.gather(*(gone(function) for function in functions))
    found.missing_functions = {function for function, is_gone in zip(functions, missing) if is_gone}


# ---- matching -------------------------------------------------------------------------------------


def function_name(arn: Any) -> str:
    """The function's name from its ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER])."""
    parts = str(arn or "").split(":")
    if len(parts) >= 7 and parts[5] == "function":
        return parts[6]
    return str(arn or "")


def reads_stream_arn(source: Any, stream_arn: str) -> bool:
    """`source` is the stream's ARN or one of its EFO consumers' (STREAM_ARN/consumer/NAME:EPOCH)."""
    text = str(source or "")
    return bool(stream_arn) and (text == stream_arn or text.startswith(stream_arn + "/consumer/"))


def stream_of_source(source: Any) -> str | None:
    """The stream name in a Kinesis stream's or EFO consumer's ARN (None: not a Kinesis stream)."""
    parts = str(source or "").split(":", 5)
    if len(parts) < 6 or parts[2] != "kinesis" or not parts[5].startswith("stream/"):
        return None
    return parts[5].removeprefix("stream/").split("/", 1)[0]


def delivery_source(description: Mapping[str, Any]) -> str | None:
    source = (description.get("Source") or {}).get("KinesisStreamSourceDescription") or {}
    return source.get("KinesisStreamARN")


def flink_names_stream(application: Mapping[str, Any], stream: str, stream_arn: str) -> str | None:
    """'GROUP.KEY' of the first runtime property that names the stream: its name or its ARN (or one
    of its consumers' ARNs), alone or in a list separated by commas, semicolons or spaces; None when
    no property names it."""
    for group_id, properties in flink_properties(application):
        for key, value in sorted(properties.items()):
            for word in _LIST_SEPARATORS.split(str(value).strip()):
                if word == stream or reads_stream_arn(word, stream_arn):
                    return f"{group_id}.{key}"
    return None


def flink_streams(application: Mapping[str, Any]) -> set[str]:
    """Every stream a Flink application's runtime properties name, by name or by ARN (the fleet's
    form of flink_names_stream: one pass over the properties for all streams)."""
    named: set[str] = set()
    for _, properties in flink_properties(application):
        for value in properties.values():
            for word in _LIST_SEPARATORS.split(str(value).strip()):
                named.add(stream_of_source(word) or word)
    return named - {""}


def flink_properties(application: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    configuration = application.get("ApplicationConfigurationDescription") or {}
    groups = (configuration.get("EnvironmentPropertyDescriptions") or {}).get("PropertyGroupDescriptions") or []
    return [(str(group.get("PropertyGroupId", "")), dict(group.get("PropertyMap") or {})) for group in groups]


# ---- metrics --------------------------------------------------------------------------------------

MetricQuery = tuple[str, str, str, dict[str, str]]


def lambda_queries(function: str) -> list[MetricQuery]:
    dimensions = {"FunctionName": function}
    return [
        ("AWS/Lambda", "IteratorAge", "Maximum", dimensions),
        ("AWS/Lambda", "Errors", "Sum", dimensions),
        ("AWS/Lambda", "Throttles", "Sum", dimensions),
    ]


def firehose_queries(delivery_stream: str) -> list[MetricQuery]:
    dimensions = {"DeliveryStreamName": delivery_stream}
    return [
        ("AWS/Firehose", "KinesisMillisBehindLatest", "Maximum", dimensions),
        ("AWS/Firehose", "DataReadFromKinesisStream.Records", "Sum", dimensions),
        ("AWS/Firehose", "DataReadFromKinesisStream.Bytes", "Sum", dimensions),
    ]


def flink_queries(application: str) -> list[MetricQuery]:
    return [("AWS/KinesisAnalytics", "millisBehindLatest", "Maximum", {"Application": application})]


def efo_queries(stream: str, consumer: str) -> list[MetricQuery]:
    dimensions = {"StreamName": stream, "ConsumerName": consumer}
    return [("AWS/Kinesis", "SubscribeToShardEvent.MillisBehindLatest", "Maximum", dimensions)]


class _Metrics:
    """Queries gathered from every reader, read in one batched pass, then looked up by query."""

    def __init__(self) -> None:
        self.queries: list[MetricQuery] = []
        self._index: dict[tuple, int] = {}
        self.series: list[list[tuple[datetime, float]]] = []
        self.problem: str | None = None

    def want(self, queries: Iterable[MetricQuery]) -> None:
        for query in queries:
            key = _query_key(query)
            if key not in self._index:
                self._index[key] = len(self.queries)
                self.queries.append(query)

    async def read(self, backend: Any, now: datetime | None) -> None:
        if not self.queries:
            return
        end = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
        start = end - timedelta(minutes=METRIC_WINDOW_MINUTES)
        try:
            self.series = await backend.metric_series(self.queries, start, end, METRIC_PERIOD)
        except ConsoleError as error:
            self.problem = f"CloudWatch: {error.message} (time behind unknown)"

    def points(self, query: MetricQuery) -> list[tuple[datetime, float]]:
        index = self._index.get(_query_key(query))
        return self.series[index] if index is not None and index < len(self.series) else []

    def latest(self, query: MetricQuery) -> int | None:
        """The latest point (the reader's position now), in whole units; None without a point."""
        points = self.points(query)
        return int(max(points)[1]) if points else None

    def total(self, query: MetricQuery) -> int | None:
        points = self.points(query)
        return int(sum(value for _, value in points)) if points else None


def _query_key(query: MetricQuery) -> tuple:
    namespace, metric, stat, dimensions = query
    return namespace, metric, stat, tuple(sorted(dimensions.items()))


async def _with_metrics(backend: Any, stream: str, found: _Found, now: datetime | None) -> list[Reader]:
    metrics = _Metrics()
    functions = {function_name(mapping.get("FunctionArn")) for mapping, _ in found.mappings}
    for function in sorted(functions - {""}):
        metrics.want(lambda_queries(function))
    for description in found.delivery_streams:
        metrics.want(firehose_queries(description.get("DeliveryStreamName", "")))
    for application, _ in found.flink:
        metrics.want(flink_queries(flink_name(application)))
    for consumer in found.efo:
        metrics.want(efo_queries(stream, consumer.name))
    await metrics.read(backend, now)
    if metrics.problem:
        found.unavailable.setdefault("CloudWatch", metrics.problem)
    readers = (
        [lambda_reader(m, via, found.missing_functions, metrics) for m, via in found.mappings]
        + [firehose_reader(d, metrics) for d in found.delivery_streams]
        + [pipe_reader(p) for p in found.pipes]
        + [flink_reader(app, named, metrics, flink_via(app, found.efo)) for app, named in found.flink]
        + [kcl_reader(report, {consumer.name for consumer in found.efo}) for report in found.kcl]
    )
    return readers + [efo_reader(consumer, stream, readers, metrics) for consumer in found.efo]


# ---- one reader of each kind ----------------------------------------------------------------------


def lambda_reader(mapping: Mapping[str, Any], via: str | None, missing: set[str], metrics: _Metrics) -> Reader:
    function = function_name(mapping.get("FunctionArn"))
    age_query, errors_query, throttles_query = lambda_queries(function)
    age, errors, throttles = metrics.latest(age_query), metrics.total(errors_query), metrics.total(throttles_query)
    result = mapping.get("LastProcessingResult")
    problems = []
    state = str(mapping.get("State") or "unknown")
    if function in missing:
        state = "function deleted"
        problems.append(f"function {function} no longer exists (GetFunction finds none)")
    if result and str(result).upper().startswith("PROBLEM"):
        problems.append(f"last result: {result}")
    if errors:
        problems.append(f"{errors:,} errors in {METRIC_WINDOW_MINUTES} min")
    if throttles:
        problems.append(f"{throttles:,} throttles in {METRIC_WINDOW_MINUTES} min")
    destination = ((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    settings: dict[str, object] = {
        "function": function,
        "batch_size": mapping.get("BatchSize"),
        "batching_window_s": mapping.get("MaximumBatchingWindowInSeconds"),
        "parallelization_factor": mapping.get("ParallelizationFactor") or 1,
        "starting_position": mapping.get("StartingPosition"),
        "bisect_on_error": mapping.get("BisectBatchOnFunctionError"),
        "retries": mapping.get("MaximumRetryAttempts"),
        "max_record_age_s": mapping.get("MaximumRecordAgeInSeconds"),
        "on_failure": destination,
        "filters": [f.get("Pattern") for f in (mapping.get("FilterCriteria") or {}).get("Filters") or []] or None,
        "report_batch_item_failures": "ReportBatchItemFailures" in (mapping.get("FunctionResponseTypes") or ()),
        "last_processing_result": result,
    }
    return Reader(
        LAMBDA,
        function or str(mapping.get("UUID", "")),
        mapping.get("EventSourceMappingArn") or mapping.get("UUID"),
        state,
        mapping.get("StateTransitionReason"),
        age,
        None,
        "; ".join(problems) or None,
        settings,
        via,
        False,
        None,
    )


def destination_kind(description: Mapping[str, Any]) -> str | None:
    """'S3', 'Redshift', 'HttpEndpoint'... from the first destination's description member."""
    for destination in description.get("Destinations") or []:
        for member in destination:
            if member.endswith("DestinationDescription"):
                kind = member.removesuffix("DestinationDescription")
                return "S3" if kind in ("S3", "ExtendedS3") else kind
    return None


def firehose_reader(description: Mapping[str, Any], metrics: _Metrics) -> Reader:
    name = str(description.get("DeliveryStreamName", ""))
    behind, records, nbytes = firehose_queries(name)
    failure = description.get("FailureDescription") or {}
    reason = ": ".join(str(part) for part in (failure.get("Type"), failure.get("Details")) if part) or None
    source = (description.get("Source") or {}).get("KinesisStreamSourceDescription") or {}
    settings: dict[str, object] = {
        "destination": destination_kind(description),
        "read_records": metrics.total(records),
        "read_bytes": metrics.total(nbytes),
        "delivery_start": _iso(source.get("DeliveryStartTimestamp")),
    }
    status = str(description.get("DeliveryStreamStatus") or "unknown")
    return Reader(
        FIREHOSE,
        name,
        description.get("DeliveryStreamARN"),
        status,
        reason,
        metrics.latest(behind),
        None,
        reason if status in FAILED_STATES else None,
        settings,
        None,
        False,
        None,
    )


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if isinstance(moment, datetime) else (str(moment) if moment else None)


def pipe_reader(pipe: Mapping[str, Any]) -> Reader:
    parameters = (pipe.get("SourceParameters") or {}).get("KinesisStreamParameters") or {}
    desired, current = pipe.get("DesiredState"), pipe.get("CurrentState")
    settings: dict[str, object] = {
        "desired_state": desired,
        "target": pipe.get("Target"),
        "batch_size": parameters.get("BatchSize"),
        "starting_position": parameters.get("StartingPosition"),
        "parallelization_factor": parameters.get("ParallelizationFactor") or 1,
        "lag": PIPE_LAG,
    }
    return Reader(
        PIPE,
        str(pipe.get("Name", "")),
        pipe.get("Arn"),
        str(current or "unknown"),
        pipe.get("StateReason") or None,
        None,
        None,
        pipe.get("StateReason") if str(current) in FAILED_STATES else None,
        settings,
        None,
        False,
        None,
    )


def flink_name(application: Mapping[str, Any]) -> str:
    """ApplicationName, or the name in its ARN (arn:...:application/NAME) when a server leaves it out."""
    return str(application.get("ApplicationName") or str(application.get("ApplicationARN", "")).rpartition("/")[2])


def flink_via(application: Mapping[str, Any], consumers: Sequence[EfoConsumer]) -> str | None:
    """The EFO consumer a Flink application's properties name (its connector's consumer name or
    ARN setting), None when they name none."""
    words = {
        word
        for _, properties in flink_properties(application)
        for value in properties.values()
        for word in _LIST_SEPARATORS.split(str(value).strip())
    }
    return next((c.name for c in consumers if c.name in words or (c.arn and c.arn in words)), None)


def flink_reader(application: Mapping[str, Any], named_by: str, metrics: _Metrics, via: str | None = None) -> Reader:
    name = flink_name(application)
    (behind,) = flink_queries(name)
    settings: dict[str, object] = {
        "runtime": application.get("RuntimeEnvironment"),
        "named_by": named_by,
        "found": FLINK_HEURISTIC,
    }
    return Reader(
        FLINK,
        name,
        application.get("ApplicationARN"),
        str(application.get("ApplicationStatus") or "unknown"),
        None,
        metrics.latest(behind),
        None,
        None,
        settings,
        via,
        True,
        None,
    )


def kcl_reader(report: ConsumerReport, consumers: AbstractSet[str] = frozenset()) -> Reader:
    """A KCL application from its lease table: time behind is its worst lease's, records behind the
    sum over its leases (unknown when any lease's count is). The KCL registers its EFO consumer
    under the application's name, which is its lease table's: a consumer of that name is its `via`."""
    open_rows = [row for row in report.rows if not row.lease.finished]
    owners = {row.lease.owner for row in open_rows if row.lease.owner}
    unowned = [row for row in open_rows if row.lease.owner is None]
    millis = [row.millis_behind for row in open_rows if row.millis_behind is not None]
    records = [row.records_behind for row in open_rows]
    problems = [f"{row.shard_id}: {row.problem}" for row in report.rows if row.problem]
    reasons = []
    if unowned:
        reasons.append(f"{len(unowned)} of {len(open_rows)} unfinished leases have no owner")
    if report.unleased_shards:
        reasons.append(f"{len(report.unleased_shards)} open shards have no lease")
    positions = tuple(
        ShardPosition(row.shard_id, row.millis_behind, row.records_behind, row.lease.checkpoint)
        for row in sorted(report.rows, key=lambda row: row.shard_id)
    )
    shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
    return Reader(
        KCL,
        report.lease_table or "",
        None,
        "no leases" if not report.rows else "unowned leases" if unowned else "running",
        "; ".join(reasons) or None,
        max(millis) if millis else (0 if report.rows and not open_rows else None),
        sum(r for r in records if r is not None) if all(r is not None for r in records) else None,
        shown or None,
        {
            "lease_table": report.lease_table,
            "leases": len(report.rows),
            "workers": len(owners),
            "scan_cap": report.scan_cap,
        },
        report.lease_table if report.lease_table in consumers else None,
        False,
        positions,
    )


def efo_reader(consumer: EfoConsumer, stream: str, readers: Sequence[Reader], metrics: _Metrics) -> Reader:
    """An EFO consumer and who reads through it (the readers whose `via` it is): the Lambda mappings
    on its ARN, a KCL application of its name (the KCL registers its consumer under the
    application's name), a Flink application whose properties name it."""
    users = [f"{reader.kind} {reader.name}" for reader in readers if reader.via == consumer.name]
    (behind,) = efo_queries(stream, consumer.name)
    return Reader(
        EFO,
        consumer.name,
        consumer.arn or None,
        consumer.status or "unknown",
        None if users else NO_READER,
        metrics.latest(behind),
        None,
        None,
        {"used_by": users, "created": consumer.created},
        None,
        False,
        None,
    )


# ---- what a reshard does to the readers -----------------------------------------------------------


@dataclass(frozen=True)
class ReaderImpact:
    reader: str  # "lambda orders-fn"
    lines: tuple[str, ...]

    def to_json(self) -> dict:
        return {"reader": self.reader, "lines": list(self.lines)}


def reshard_impact(
    report: ReadersReport,
    *,
    parents: Sequence[str],
    shards_before: int,
    shards_after: int,
    workers: Mapping[str, tuple[int, int | None]] | None = None,
) -> list[ReaderImpact]:
    """What a reshard from `shards_before` to `shards_after` open shards, closing `parents`, does to
    each reader: every reader that follows the parent-first rule (KCL, Lambda, Firehose, Pipes) reads a
    child only once its parents are drained, so a reader behind on a parent reaches the children that
    much later; a KCL application whose workers cannot hold the new lease count (maxLeasesForWorker is
    the application's setting, not in its lease table: without it, what it must be at least); a Lambda
    or pipe whose concurrency changes with the shard count. `workers`: per lease table, (workers,
    maxLeasesForWorker or None when unknown); without it the lease owners seen are the workers."""
    impacts: list[ReaderImpact] = []
    for reader in report.readers:
        if reader.kind == EFO:
            continue  # the readers through it are listed themselves
        lines = []
        backlog = _parents_backlog(reader, parents)
        if parents and reader.kind == FLINK:
            lines.append(
                "reads the children as its connector does: KinesisStreamsSource after the parents are "
                f"drained, the older FlinkKinesisConsumer at once{backlog}"
            )
        elif parents:
            lines.append(f"reads the children only after the parents are drained{backlog}")
        if reader.kind == LAMBDA:
            factor = reader.settings.get("parallelization_factor") or 1
            if isinstance(factor, int) and shards_before != shards_after:
                lines.append(
                    f"concurrency {factor * shards_before} → {factor * shards_after} "
                    f"(parallelization factor {factor} × shards)"
                )
        if reader.kind == PIPE and shards_before != shards_after:
            factor = reader.settings.get("parallelization_factor") or 1
            if isinstance(factor, int):
                lines.append(f"concurrency {factor * shards_before} → {factor * shards_after}")
        if reader.kind == KCL:
            leased_by = reader.settings.get("workers")
            seen, most = (workers or {}).get(reader.name, (leased_by if isinstance(leased_by, int) else 0, None))
            if most is not None and seen and seen * most < shards_after:
                lines.append(
                    f"{seen} workers × maxLeasesForWorker {most} hold {seen * most} leases, fewer than "
                    f"{shards_after} shards: {shards_after - seen * most} would go unread"
                )
            elif seen and shards_after > shards_before:
                each = -(-shards_after // seen)
                lines.append(
                    f"{seen} workers will hold {shards_after} leases: each worker's maxLeasesForWorker "
                    f"must be at least {each}, or shards go unread"
                )
        if reader.failing:
            lines.append(f"is {reader.state} now: it reads neither parents nor children until fixed")
        if lines:
            impacts.append(ReaderImpact(reader.label, tuple(lines)))
    return impacts


@dataclass(frozen=True)
class ReshardReaders:
    """The readers a planned reshard affects, for its preview (the CLI's plan and the console's)."""

    impacts: tuple[ReaderImpact, ...]
    unavailable: tuple[str, ...]

    def lines(self) -> list[str]:
        """One line per effect on a reader, and one for the services that could not be read (none
        when no reader was found)."""
        lines = [f"reader {impact.reader}: {line}" for impact in self.impacts for line in impact.lines]
        if self.unavailable:
            lines.append("readers not checked: " + "; ".join(self.unavailable))
        return lines

    def to_json(self) -> dict:
        return {"affected": [impact.to_json() for impact in self.impacts], "unavailable": list(self.unavailable)}


async def readers_for_reshard(
    backend: Any,
    stream: str,
    *,
    closes: Iterable[str],
    shards_before: int,
    shards_after: int,
    lease_tables: Sequence[str] | None = None,
    now: datetime | None = None,
) -> ReshardReaders:
    """Every reader of `stream` (readers_report) and what a reshard closing `closes` and going from
    `shards_before` to `shards_after` open shards does to each (reshard_impact)."""
    report = await readers_report(backend, stream, lease_tables=lease_tables, now=now)
    impacts = reshard_impact(report, parents=sorted(closes), shards_before=shards_before, shards_after=shards_after)
    return ReshardReaders(tuple(impacts), report.unavailable)


def _parents_backlog(reader: Reader, parents: Sequence[str]) -> str:
    if reader.shards is not None:
        positions = [p for p in reader.shards if p.shard_id in parents]
        records = [p.records_behind for p in positions]
        millis = [p.millis_behind for p in positions if p.millis_behind is not None]
        if positions and all(r is not None for r in records):
            total = sum(r for r in records if r is not None)
            return f" (the parents' backlog: {total:,} records, {format_millis(max(millis, default=0))})"
        if millis:
            return f" (the parents' backlog: {format_millis(max(millis))})"
        return ""
    if reader.millis_behind is not None:
        return f" (now {format_millis(reader.millis_behind)} behind)"
    return " (its backlog is unknown)"


# ---- the fleet: the worst reader of every stream, cheaply -----------------------------------------


@dataclass(frozen=True)
class FleetReaders:
    """The worst known reader of each stream ({stream: (reader label, millis behind)}), from the
    mappings and delivery streams of the whole region and one metric batch; `unavailable` as above."""

    worst: Mapping[str, tuple[str, int]]
    unavailable: tuple[str, ...]


async def fleet_reader_lag(backend: Any, streams: Sequence[str], *, now: datetime | None = None) -> FleetReaders:
    """The worst Lambda, Firehose or Flink reader of each of `streams`, in a number of calls that grows
    with the readers, not the streams: one page-through of every event source mapping in the region
    (EFO mappings name their stream in the consumer's ARN), one of the delivery streams with a
    Kinesis source and one of the Flink applications (each described, a few at once), and one
    batched GetMetricData pass for all their lag. EFO consumers and KCL applications are left to
    `kconsole readers STREAM` (finding them costs calls per stream), and Pipes publish no lag."""
    wanted = set(streams)
    found = _Found()
    mappings, delivery, applications = await asyncio.gather(
        _guarded(found, "Lambda", backend.event_source_mappings(None)),
        _guarded(found, "Firehose", backend.delivery_streams_from_kinesis()),
        _guarded(found, "Managed Service for Apache Flink", backend.flink_applications()),
    )
    metrics = _Metrics()
    readers: list[tuple[str, str, MetricQuery]] = []  # (stream, label, lag query)
    for mapping in mappings or ():
        stream = stream_of_source(mapping.get("EventSourceArn"))
        function = function_name(mapping.get("FunctionArn"))
        if stream in wanted and function:
            readers.append((stream, f"lambda {function}", lambda_queries(function)[0]))
    for description in delivery or ():
        stream = stream_of_source(delivery_source(description))
        name = str(description.get("DeliveryStreamName", ""))
        if stream in wanted and name:
            readers.append((stream, f"firehose {name}", firehose_queries(name)[0]))
    for application in applications or ():
        name = flink_name(application)
        for stream in sorted(flink_streams(application) & wanted):
            readers.append((stream, f"flink {name}", flink_queries(name)[0]))
    metrics.want(query for _, _, query in readers)
    await metrics.read(backend, now)
    worst: dict[str, tuple[str, int]] = {}
    for stream, label, query in readers:
        millis = metrics.latest(query)
        if millis is not None and (stream not in worst or worst[stream][1] < millis):
            worst[stream] = (label, millis)
    if metrics.problem:
        found.unavailable.setdefault("CloudWatch", metrics.problem)
    return FleetReaders(worst, tuple(found.unavailable[s] for s in sorted(found.unavailable)))
