"""The one seam between the console (console/ui) and the backend: what the console asks of it, by role.

Each role protocol lists the calls one part of the console makes, itself or through the domain work
it runs there: `StreamReads` (the poll and the stream picker), `ShardsBackend` (resharding),
`RecordsBackend` (the producer and the tail), `StreamSettingsBackend` (the Stream actions menu),
`ConsumersBackend` (EFO registrations and KCL lease tables), `MetricsBackend` (CloudWatch) and
`ReaderSources` (the stream's other readers). A panel names the narrowest role it uses;
`ConsoleBackend` is their union, what the app is handed and the backend implements. The in-memory
source of the screenshots offers its `StreamReads`.

What crosses the seam is the project's own models (console.topology.model) where one exists, not
AWS-shaped dicts: a UI module indexes no AWS field (tests/test_architecture.py).

What not every source offers is said, not probed: `capabilities` holds the names below, so the
console asks `CLOUDWATCH in backend.capabilities` rather than whether some method happens to exist.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from console.topology.model import ChannelSummary, Shard, StreamSummary

# The stream's CloudWatch metrics (stream level, and shard level with enhanced monitoring).
CLOUDWATCH = "cloudwatch"
# The services that read a stream besides the KCL (ReaderSources: Lambda, Firehose, Pipes, Flink).
READERS = "readers"
# Every backend call may be retried; the console shows each retry in its header through `on_retry`.
RETRY_EVENTS = "retry-events"

MetricPoints = list[tuple[datetime, float]]


class BackendConnection(Protocol):
    """Where the console is connected (for its header) and what the source offers."""

    # Which optional parts this source offers (CLOUDWATCH, READERS, RETRY_EVENTS).
    capabilities: frozenset[str]
    # Called with each retried call (a console.backend.calls.RetryEvent), when RETRY_EVENTS is offered.
    on_retry: Callable[[Any], None] | None

    @property
    def label(self) -> str: ...

    @property
    def region(self) -> str | None: ...

    @property
    def profile(self) -> str | None: ...


class StreamReads(Protocol):
    """What the console's own loops read: the stream list, a stream's summary and its shards."""

    async def list_streams(self) -> list[StreamSummary]: ...

    async def list_stream_summaries(self, *, page_size: int = 100) -> list[StreamSummary]: ...

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    # `listed` filled in by DescribeStreamSummary, `concurrency` at once; a stream gone is left out.
    async def describe_streams(self, listed: list[StreamSummary], *, concurrency: int = 16) -> list[StreamSummary]: ...

    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]: ...


class ShardsBackend(Protocol):
    """Resharding: the shard map's pages, the account's shard limits, who is calling (for the action
    log), and the three resharding calls."""

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]: ...

    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary: ...

    async def list_shards(
        self,
        *,
        stream: str | None = None,
        next_token: str | None = None,
        shard_filter: dict[str, Any] | None = None,
        max_results: int | None = None,
    ) -> dict[str, Any]: ...

    async def describe_limits(self) -> dict[str, Any]: ...

    async def caller_identity(self) -> str | None: ...

    async def split_shard(self, stream: str, shard_id: str, new_starting_hash_key: int) -> None: ...

    async def merge_shards(self, stream: str, shard_id: str, adjacent_shard_id: str) -> None: ...

    async def update_shard_count(self, stream: str, target: int) -> dict[str, Any]: ...


class RecordsBackend(Protocol):
    """Writing records and reading them back (console.read.tail's ReadBackend is the reading half)."""

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]: ...

    async def put_record(
        self,
        stream: str,
        data: bytes,
        partition_key: str | None,
        *,
        explicit_hash_key: int | None = None,
        sequence_number_for_ordering: str | None = None,
    ) -> dict[str, Any]: ...

    async def put_records(self, stream: str, records: list[dict[str, Any]]) -> dict[str, Any]: ...

    async def get_shard_iterator(
        self,
        stream: str,
        shard_id: str,
        iterator_type: str,
        *,
        sequence_number: str | None = None,
        timestamp: datetime | None = None,
    ) -> str: ...

    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict[str, Any]: ...


class StreamSettingsBackend(Protocol):
    """The stream's settings, tags, resource policy and channels, and the account's (the Stream
    actions menu; each read back after a lost reply)."""

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    async def describe_stream_details(self, stream: str) -> dict[str, Any]: ...

    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary: ...

    async def increase_retention(self, stream: str, hours: int) -> None: ...

    async def decrease_retention(self, stream: str, hours: int) -> None: ...

    async def update_stream_mode(self, stream_arn: str, mode: str) -> None: ...

    async def start_encryption(self, stream: str, key_id: str) -> None: ...

    async def stop_encryption(self, stream: str, key_id: str) -> None: ...

    async def delete_stream(self, stream: str, *, enforce_consumer_deletion: bool = True) -> None: ...

    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None: ...

    async def update_max_record_size(self, stream_arn: str, kib: int) -> None: ...

    async def update_warm_throughput(self, stream_arn: str, mibps: int) -> dict[str, Any]: ...

    async def update_record_distribution(self, stream_arn: str, strategy: str) -> None: ...

    async def account_settings(self) -> dict[str, Any]: ...

    async def update_account_settings(self, status: str) -> dict[str, Any]: ...

    async def resource_tags(self, arn: str) -> dict[str, str]: ...

    async def tag_resource(self, arn: str, tags: dict[str, str]) -> None: ...

    async def untag_resource(self, arn: str, keys: list[str]) -> None: ...

    async def resource_policy(self, arn: str) -> str | None: ...

    async def put_resource_policy(self, arn: str, policy: str) -> None: ...

    async def delete_resource_policy(self, arn: str) -> None: ...

    async def stream_channels(self, stream_arn: str) -> list[ChannelSummary]: ...

    async def list_channels(self, *, stream_arn: str | None = None) -> list[dict[str, Any]]: ...

    async def describe_channel(self, channel_arn: str) -> dict[str, Any]: ...

    async def create_channel(self, request: dict[str, Any]) -> dict[str, Any]: ...

    async def update_channel(self, request: dict[str, Any]) -> dict[str, Any]: ...

    async def delete_channel(self, channel_arn: str) -> None: ...


class ConsumersBackend(Protocol):
    """The stream's EFO registrations and its KCL applications' lease tables."""

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]: ...

    async def list_stream_consumers(self, stream_arn: str) -> list[dict[str, Any]]: ...

    async def describe_table(self, table: str) -> dict[str, Any]: ...

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict[str, Any]]: ...

    def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict[str, Any]]]: ...

    async def table_names(self) -> list[str]: ...


class MetricsBackend(Protocol):
    """CloudWatch, when CLOUDWATCH is offered: a stream's metrics, its shards' (with enhanced
    monitoring), many streams' at once, and any series by query."""

    async def stream_metrics(
        self, stream: str, metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> dict[str, MetricPoints]: ...

    async def shard_metrics(
        self,
        stream: str,
        shard_ids: list[str],
        metrics: dict[str, str],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> dict[str, dict[str, MetricPoints]]: ...

    async def streams_metrics(
        self, streams: list[str], metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> StreamsMetrics: ...

    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[MetricPoints]: ...


@dataclass
class StreamsMetrics:
    """Many streams' stream-level series (MetricsBackend.streams_metrics)."""

    series: dict[str, dict[str, MetricPoints]]
    problems: dict[str, str]  # stream -> why its metrics are missing
    calls: int  # GetMetricData calls made, pages included


class ReaderSources(Protocol):
    """The services that read a stream besides its KCL applications and EFO consumers, and the
    CloudWatch metrics of their lag (console.consumers.readers asks these; every call only reads).
    A service the endpoint does not serve, a missing permission or lasting throttling raises one
    ConsoleError, which costs that service's readers one line."""

    # Lambda event source mappings of a stream's (or an EFO consumer's) ARN; None: every mapping there.
    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict[str, Any]]: ...

    # GetFunction's Configuration; None when the function is gone.
    async def function_configuration(self, function: str) -> dict[str, Any] | None: ...

    # Every Firehose delivery stream with a Kinesis stream as its source, described.
    async def delivery_streams_from_kinesis(self) -> list[dict[str, Any]]: ...

    # Every EventBridge pipe whose source ARN starts with the prefix, described.
    async def pipes_from(self, source_prefix: str | None = None) -> list[dict[str, Any]]: ...

    # Every Managed Service for Apache Flink application, described.
    async def flink_applications(self) -> list[dict[str, Any]]: ...

    # The points of each (namespace, metric, statistic, dimensions) query, in the queries' order.
    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[MetricPoints]: ...


class LeaseTableWrites(Protocol):
    """What moving a KCL application's checkpoints asks of a backend (console.consumers.rewind): reads
    of the lease table, a consistent read of one item, and the conditional writes."""

    async def describe_table(self, table: str) -> dict[str, Any]: ...

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict[str, Any]]: ...

    async def get_item(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None: ...

    async def update_item_if(
        self,
        table: str,
        key: dict[str, Any],
        *,
        set_values: dict[str, dict[str, Any]],
        remove: list[str],
        add_numbers: dict[str, int],
        expected: dict[str, dict[str, Any] | None],
    ) -> None: ...

    async def put_item_if_absent(self, table: str, item: dict[str, Any], key_attribute: str) -> None: ...

    async def create_lease_table(self, table: str) -> None: ...


class MappingWrites(Protocol):
    """What pausing, resuming and replaying a Lambda event source mapping asks of a backend
    (console.consumers.mappings)."""

    # Where the calls go, for the action log.
    @property
    def label(self) -> str: ...

    async def describe_stream_summary(self, stream: str) -> StreamSummary: ...

    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict[str, Any]]: ...

    async def event_source_mapping(self, uuid: str) -> dict[str, Any]: ...

    async def set_event_source_mapping_enabled(self, uuid: str, enabled: bool) -> dict[str, Any]: ...

    async def create_event_source_mapping(self, request: dict[str, Any]) -> dict[str, Any]: ...


class ConsoleBackend(
    BackendConnection,
    StreamReads,
    ShardsBackend,
    RecordsBackend,
    StreamSettingsBackend,
    ConsumersBackend,
    MetricsBackend,
    ReaderSources,
    LeaseTableWrites,
    MappingWrites,
    Protocol,
):
    """Every call the console makes on a backend: the union of the roles (see the module's docstring),
    the Readers tab's changes (a KCL application's checkpoints, a Lambda mapping's state) among them."""
