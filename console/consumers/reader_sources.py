"""Gathering each kind of reader (Lambda mappings, Firehose delivery streams, EventBridge Pipes,
Flink applications, EFO consumers, KCL lease tables): what each source gave (`Found`), matching a
source to the stream, the one batched CloudWatch read of their lag (`Metrics`) and one `Reader` of
each kind. Only reads, through the backend given."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from console.consumers.reader_model import (
    EFO,
    FAILED_STATES,
    FIREHOSE,
    FLINK,
    FLINK_HEURISTIC,
    FUNCTION_CONCURRENCY,
    KCL,
    LAMBDA,
    METRIC_PERIOD,
    METRIC_WINDOW_MINUTES,
    NO_READER,
    PIPE,
    PIPE_LAG,
    Reader,
    ShardPosition,
)
from console.consumers.report import ConsumerReport
from console.errors import ConsoleError
from console.topology.model import EfoConsumer
from console.words import counted

T = TypeVar("T")
_LIST_SEPARATORS = re.compile(r"[,;\s]+")


# ---- gathering ------------------------------------------------------------------------------------


@dataclass
class Found:
    """What each source gave, before the metrics are read."""

    efo: list[EfoConsumer] = field(default_factory=list)
    mappings: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)  # (mapping, EFO consumer name)
    missing_functions: set[str] = field(default_factory=set)
    delivery_streams: list[dict[str, Any]] = field(default_factory=list)
    pipes: list[dict[str, Any]] = field(default_factory=list)
    flink: list[tuple[dict[str, Any], str]] = field(
        default_factory=list
    )  # (application, the property naming the stream)
    kcl: list[ConsumerReport] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # source -> its one line


async def guarded(found: Found, source: str, work: Awaitable[T]) -> T | None:
    """`work`'s answer, or None with one line in `found.unavailable` when the source cannot be read."""
    try:
        return await work
    except ConsoleError as error:
        found.unavailable.setdefault(source, f"{source}: {error.message}")
        return None


async def lambda_mappings(backend: Any, stream_arn: str, found: Found) -> None:
    """The mappings on the stream and on each EFO consumer (EFO mappings name the consumer's ARN),
    and which of their functions are gone."""
    sources: list[tuple[str, str | None]] = [(stream_arn, None)] + [(c.arn, c.name) for c in found.efo if c.arn]

    async def listed() -> list[tuple[dict[str, Any], str | None]]:
        pages = await asyncio.gather(*(backend.event_source_mappings(arn) for arn, _ in sources))
        return [(mapping, via) for (_, via), mappings in zip(sources, pages) for mapping in mappings]

    mappings = await guarded(found, "Lambda", listed())
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
# A query as a dictionary key: its dimensions as sorted pairs.
MetricQueryKey = tuple[str, str, str, tuple[tuple[str, str], ...]]


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


class Metrics:
    """Queries gathered from every reader, read in one batched pass, then looked up by query."""

    def __init__(self) -> None:
        self.queries: list[MetricQuery] = []
        self._index: dict[MetricQueryKey, int] = {}
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


def _query_key(query: MetricQuery) -> MetricQueryKey:
    namespace, metric, stat, dimensions = query
    return namespace, metric, stat, tuple(sorted(dimensions.items()))


async def with_metrics(backend: Any, stream: str, found: Found, now: datetime | None) -> list[Reader]:
    metrics = Metrics()
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


def lambda_reader(mapping: Mapping[str, Any], via: str | None, missing: set[str], metrics: Metrics) -> Reader:
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
        problems.append(f"{counted(errors, 'error')} in {METRIC_WINDOW_MINUTES} min")
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


def firehose_reader(description: Mapping[str, Any], metrics: Metrics) -> Reader:
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


def flink_reader(application: Mapping[str, Any], named_by: str, metrics: Metrics, via: str | None = None) -> Reader:
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
        unleased = len(report.unleased_shards)
        reasons.append(f"{counted(unleased, 'open shard')} {'has' if unleased == 1 else 'have'} no lease")
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


def efo_reader(consumer: EfoConsumer, stream: str, readers: Sequence[Reader], metrics: Metrics) -> Reader:
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
        {"used_by": users, "created": consumer.created_iso},
        None,
        False,
        None,
    )
