"""Kinesis: every stream, shard, record and consumer call the console makes, and the object
`open_backend` yields.

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("orders")

`KinesisBackend` is also where the console reaches the other services it needs (DynamoDB lease
tables, CloudWatch metrics, STS identity): one object to pass around, each service in its own
module and class, all on one call path so retries are counted and reported in one place.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from console.backend.calls import CallPath
from console.backend.cloudwatch import CloudWatchBackend, StreamsMetrics
from console.backend.config import BackendConfig
from console.backend.dynamodb import DynamoDBBackend
from console.backend.glue import GlueBackend
from console.backend.protocol import CLOUDWATCH, READERS, RETRY_EVENTS
from console.backend.readers import ReadersBackend
from console.backend.sts import STSBackend
from console.backend.subscribe import SubscribeTransport
from console.errors import BackendError, BadInput, ConsoleError, ResourceInUse, StreamNotFound
from console.topology.model import Shard, StreamSummary, put_records_entry

if TYPE_CHECKING:
    from console.backend.launcher import LocalKinesisServer


class KinesisBackend(CallPath):
    """One open connection to a Kinesis endpoint. Create through `open_backend`."""

    # What the console may use beyond the streams (console.backend.protocol): CloudWatch, the other
    # readers' services, retry events.
    capabilities = frozenset({CLOUDWATCH, READERS, RETRY_EVENTS})

    @property
    def profile(self) -> str | None:
        """The AWS profile the credentials come from (None: the default chain)."""
        return self.config.profile

    def __init__(
        self,
        config: BackendConfig,
        client: Any,
        *,
        region: str,
        endpoint_url: str | None,
        side_client: Callable[[str], Awaitable[Any]] | None = None,
        checked_puts_client: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        super().__init__(config, endpoint_url=endpoint_url)
        self.region = region
        self._client = client
        self._open_side_client = side_client  # (service) -> its client; see clients.SideClients
        # PutRecords whose entries put_records has checked go through this client (see there), opened on
        # first use; None: every put takes the main client.
        self._open_checked_puts_client = checked_puts_client
        self._checked_puts_client: asyncio.Future[Any] | None = None
        self.local_server: LocalKinesisServer | None = None  # the embedded server for kind "local"
        # () -> the credentials this backend's calls are signed with (set by open_backend), for the
        # SubscribeToShard requests made outside botocore's HTTP/1.1 client.
        self.signing_credentials: Callable[[], Awaitable[Any]] | None = None
        self.timestamp_parser: Callable[[Any], Any] | None = None  # the client's, for the events' timestamps
        self._subscriptions: SubscribeTransport | None = None
        self._dynamodb = DynamoDBBackend(self, self._side_client)
        self._cloudwatch = CloudWatchBackend(self, self._side_client)
        self._sts = STSBackend(self, self._side_client)
        self._readers = ReadersBackend(self, self._side_client)
        self.glue = GlueBackend(self, self._side_client)

    async def _call(self, operation: str, *, client: Any = None, **params: Any) -> dict:
        try:
            return await self.call(client or self._client, operation, **params)
        except StreamNotFound as error:
            stream = params.get("StreamName")
            if not stream:
                raise
            raise await self._stream_not_found(stream, error) from None

    async def _stream_not_found(self, stream: str, error: StreamNotFound) -> Exception:
        """A missing stream names the streams there are; a missing shard or consumer on a stream that
        is there says so instead."""
        names = await self._stream_names_or_none()
        if names is not None and stream in names:
            return BadInput(f"not found on {self.label}: {error}", code="not_found")
        return StreamNotFound(f"stream {stream!r} not found on {self.label}; {_streams_text(names)}")

    async def _stream_names_or_none(self) -> list[str] | None:
        try:
            return await self.stream_names()
        except Exception:  # the listing is a courtesy; the not-found error stands alone
            return None

    async def _side_client(self, service: str) -> Any:
        """The backend's client for another service (CloudWatch, DynamoDB, STS), opened on first use."""
        if self._open_side_client is None:
            raise BackendError(f"{service} is not available on this backend")
        return await self._open_side_client(service)

    # ---- streams -------------------------------------------------------------------------------

    async def stream_names(self) -> list[str]:
        return [summary.name for summary in await self.list_stream_summaries()]

    async def list_streams(self) -> list[StreamSummary]:
        """Every stream, described: one ListStreams page-through, then DescribeStreamSummary per stream."""
        return await self.describe_streams(await self.list_stream_summaries())

    async def describe_streams(self, listed: list[StreamSummary], *, concurrency: int = 16) -> list[StreamSummary]:
        """`listed` (from ListStreams) filled in by DescribeStreamSummary, at most `concurrency` at once
        and one per stream; a stream deleted in between is left out."""
        limit = asyncio.Semaphore(concurrency)

        async def describe(name: str) -> StreamSummary | None:
            async with limit:
                try:
                    return await self.describe_stream_summary(name)
                except StreamNotFound:  # deleted between the listing and the describe
                    return None

        summaries = await asyncio.gather(*(describe(summary.name) for summary in listed))
        return [summary for summary in summaries if summary is not None]

    async def describe_stream_summary(self, stream: str) -> StreamSummary:
        raw = (await self._call("DescribeStreamSummary", StreamName=stream))["StreamDescriptionSummary"]
        return StreamSummary.from_api(raw)

    async def list_stream_summaries(self, *, page_size: int = 100) -> list[StreamSummary]:
        """Every stream as ListStreams' StreamSummaries give it (name, status, mode, ARN, creation), in
        one page-through and no describe; a server that answers only StreamNames gives the names alone."""
        found: list[StreamSummary] = []
        params: dict[str, Any] = {"Limit": page_size}
        while True:
            page = await self._call("ListStreams", **params)
            # The page's names decide what it holds (moto, say, sends every stream's summary each page).
            names = page.get("StreamNames", [])
            summaries = {raw.get("StreamName"): raw for raw in page.get("StreamSummaries") or []}
            found.extend(StreamSummary.from_listing(summaries.get(name) or {"StreamName": name}) for name in names)
            if not page.get("HasMoreStreams") or not names:
                return found
            params = {
                "Limit": page_size,
                **(
                    {"NextToken": page["NextToken"]}
                    if page.get("NextToken")
                    else {"ExclusiveStartStreamName": names[-1]}
                ),
            }

    async def create_stream(self, stream: str, shard_count: int | None, *, on_demand: bool = False) -> None:
        """CreateStream: `shard_count` shards in provisioned mode, or on-demand (no count: AWS sizes it)."""
        if on_demand:
            await self._call("CreateStream", StreamName=stream, StreamModeDetails={"StreamMode": "ON_DEMAND"})
            return
        if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
            raise BadInput(f"shard count must be a whole number of at least 1; got {shard_count!r}")
        await self._call("CreateStream", StreamName=stream, ShardCount=shard_count)

    async def describe_stream_details(self, stream: str) -> dict:
        """DescribeStreamSummary's whole answer, AWS-shaped (the summary above keeps what the console shows)."""
        return (await self._call("DescribeStreamSummary", StreamName=stream))["StreamDescriptionSummary"]

    async def stream_tags(self, stream: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        params: dict[str, Any] = {"StreamName": stream}
        while True:
            page = await self._call("ListTagsForStream", **params)
            tags.update({tag["Key"]: tag.get("Value", "") for tag in page.get("Tags", [])})
            if not page.get("HasMoreTags") or not page.get("Tags"):
                return tags
            params["ExclusiveStartTagKey"] = page["Tags"][-1]["Key"]

    async def increase_retention(self, stream: str, hours: int) -> None:
        await self._call("IncreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def decrease_retention(self, stream: str, hours: int) -> None:
        await self._call("DecreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def update_stream_mode(self, stream_arn: str, mode: str) -> None:
        await self._call("UpdateStreamMode", StreamARN=stream_arn, StreamModeDetails={"StreamMode": mode})

    async def start_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StartStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def stop_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StopStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def ensure_stream(self, stream: str, shard_count: int = 4) -> bool:
        """Create `stream` with `shard_count` shards unless it exists; wait until ACTIVE. True if created."""
        try:
            summary = await self.describe_stream_summary(stream)
        except StreamNotFound:
            try:
                await self.create_stream(stream, shard_count)
                created = True
            except ResourceInUse:  # someone else created it in the meantime
                created = False
            await self.wait_for_active(stream)
            return created
        if summary.status != "ACTIVE":
            await self.wait_for_active(stream)
        return False

    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.05
        while True:
            summary = await self.describe_stream_summary(stream)
            if summary.status == "ACTIVE":
                return summary
            if loop.time() + delay > deadline:
                raise BackendError(f"stream {stream!r} is still {summary.status} after {timeout:g} s", code="timeout")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def delete_stream(self, stream: str, *, enforce_consumer_deletion: bool = True) -> None:
        await self._call("DeleteStream", StreamName=stream, EnforceConsumerDeletion=enforce_consumer_deletion)

    # ---- shards --------------------------------------------------------------------------------

    async def list_shards(
        self,
        *,
        stream: str | None = None,
        next_token: str | None = None,
        shard_filter: dict[str, Any] | None = None,
        max_results: int | None = None,
    ) -> dict[str, Any]:
        """One ListShards page, AWS-shaped. With `next_token` only NextToken (and MaxResults) are sent:
        AWS rejects StreamName or ShardFilter next to a NextToken."""
        params: dict[str, Any] = {}
        if next_token:
            params["NextToken"] = next_token
        else:
            if not stream:
                raise BadInput("list_shards needs a stream name or a next token")
            params["StreamName"] = stream
            if shard_filter:
                params["ShardFilter"] = shard_filter
        if max_results:
            params["MaxResults"] = max_results
        return await self._call("ListShards", **params)

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]:
        shards: list[Shard] = []
        page = await self.list_shards(stream=stream, shard_filter=shard_filter)
        while True:
            shards.extend(Shard.from_api(raw) for raw in page.get("Shards", []))
            token = page.get("NextToken")
            if not token:
                return shards
            page = await self.list_shards(next_token=token)

    # ---- writes --------------------------------------------------------------------------------

    async def put_record(
        self,
        stream: str,
        data: bytes,
        partition_key: str | None,
        *,
        explicit_hash_key: int | None = None,
        sequence_number_for_ordering: str | None = None,
    ) -> dict:
        params: dict[str, Any] = {"StreamName": stream, "Data": data}
        if partition_key is not None:  # optional on an AUTO stream
            params["PartitionKey"] = partition_key
        if explicit_hash_key is not None:
            params["ExplicitHashKey"] = str(explicit_hash_key)
        if sequence_number_for_ordering is not None:
            params["SequenceNumberForOrdering"] = sequence_number_for_ordering
        return await self._call("PutRecord", **params)

    async def put_records(self, stream: str, records: list[dict]) -> dict:
        """`records` are AWS-shaped: {Data, PartitionKey?, ExplicitHashKey?} (an int hash key is accepted;
        no PartitionKey only on an AUTO stream). Per-record failures come back in the response's Records
        (ErrorCode), as from AWS."""
        # Each entry is checked here as botocore would check it (a partition key of at least one
        # character, bytes, nothing else); when all pass, the request goes through a client that does
        # not check them again: the producer sends hundreds a request, and botocore's check walks each
        # one. Any other entry is rebuilt as AWS takes it and the request keeps botocore's check.
        checked = bool(records) and type(stream) is str and stream != ""
        entries = []
        for record in records:
            key = record.get("PartitionKey")
            if len(record) == 2 and type(key) is str and key and type(record.get("Data")) is bytes:
                entries.append(record)
            else:
                checked = False
                entries.append(put_records_entry(record["Data"], key, record.get("ExplicitHashKey")))
        client = await self._checked_puts() if checked else None
        return await self._call("PutRecords", client=client, StreamName=stream, Records=entries)

    async def _checked_puts(self) -> Any:
        """The client for checked PutRecords (None: the main one), opened once however many ask at once."""
        if self._open_checked_puts_client is None:
            return None
        opened = self._checked_puts_client
        if opened is not None and opened.done() and not opened.cancelled() and opened.exception() is None:
            return opened.result()  # the usual case, without a shield per request
        if self._checked_puts_client is None:
            self._checked_puts_client = asyncio.ensure_future(self._open_checked_puts_client())
        try:
            return await asyncio.shield(self._checked_puts_client)
        except Exception:  # without it, the main client sends the puts as before
            self._open_checked_puts_client = None
            return None

    # ---- today's settings: record size, warm throughput, distribution, account ------------------

    async def _today(self, operation: str, **params: Any) -> dict:
        """An operation some servers lack (those added in 2025-26, ListStreamConsumers on older
        Kinesis-compatible servers, UpdateShardCount on some): a server without it says so in one line."""
        try:
            return await self._call(operation, **params)
        except ConsoleError as error:
            if is_unsupported(error):
                raise BackendError(
                    f"this endpoint does not support {operation} ({self.label})", code="unsupported_operation"
                ) from None
            raise

    async def update_max_record_size(self, stream_arn: str, kib: int) -> None:
        await self._today("UpdateMaxRecordSize", StreamARN=stream_arn, MaxRecordSizeInKiB=kib)

    async def update_warm_throughput(self, stream_arn: str, mibps: int) -> dict:
        return await self._today("UpdateStreamWarmThroughput", StreamARN=stream_arn, WarmThroughputMiBps=mibps)

    async def update_record_distribution(self, stream_arn: str, strategy: str) -> None:
        await self._today(
            "UpdateStreamRecordDistributionStrategy", StreamARN=stream_arn, RecordDistributionStrategy=strategy
        )

    async def account_settings(self) -> dict:
        """DescribeAccountSettings' MinimumThroughputBillingCommitment ({} when the server says nothing)."""
        return (await self._today("DescribeAccountSettings")).get("MinimumThroughputBillingCommitment") or {}

    async def update_account_settings(self, status: str) -> dict:
        answer = await self._today("UpdateAccountSettings", MinimumThroughputBillingCommitment={"Status": status})
        return answer.get("MinimumThroughputBillingCommitment") or {}

    # ---- tags v2 and resource policies (streams, consumers, channels by ARN) --------------------

    # A server that predates tagging by ARN (2024) tags a stream with the calls it always had:
    # ListTagsForStream, AddTagsToStream and RemoveTagsFromStream, by the stream's name.

    async def resource_tags(self, arn: str) -> dict[str, str]:
        try:
            tags = (await self._today("ListTagsForResource", ResourceARN=arn)).get("Tags", [])
        except BackendError as error:
            return await self.stream_tags(_legacy_stream_of(arn, error))
        return {tag["Key"]: tag.get("Value", "") for tag in tags}

    async def tag_resource(self, arn: str, tags: dict[str, str]) -> None:
        try:
            await self._today("TagResource", ResourceARN=arn, Tags=tags)
        except BackendError as error:
            await self._call("AddTagsToStream", StreamName=_legacy_stream_of(arn, error), Tags=tags)

    async def untag_resource(self, arn: str, keys: list[str]) -> None:
        try:
            await self._today("UntagResource", ResourceARN=arn, TagKeys=keys)
        except BackendError as error:
            await self._call("RemoveTagsFromStream", StreamName=_legacy_stream_of(arn, error), TagKeys=keys)

    async def resource_policy(self, arn: str) -> str | None:
        """The policy document, or None when there is none (some servers answer ResourceNotFound)."""
        try:
            return (await self._today("GetResourcePolicy", ResourceARN=arn)).get("Policy")
        except StreamNotFound as error:
            if "policy" in error.message.lower():
                return None
            raise

    async def put_resource_policy(self, arn: str, policy: str) -> None:
        await self._today("PutResourcePolicy", ResourceARN=arn, Policy=policy)

    async def delete_resource_policy(self, arn: str) -> None:
        await self._today("DeleteResourcePolicy", ResourceARN=arn)

    # ---- channels -------------------------------------------------------------------------------

    async def list_channels(self, *, stream_arn: str | None = None) -> list[dict]:
        """Every channel (ChannelSummaries), or those reading from one stream."""
        found: list[dict] = []
        params: dict[str, Any] = {"MaxResults": 100}
        if stream_arn:
            params["StreamFilter"] = [{"StreamARN": stream_arn}]
        while True:
            page = await self._today("ListChannels", **params)
            found.extend(page.get("ChannelSummaries", []))
            if not page.get("NextToken"):
                return found
            params["NextToken"] = page["NextToken"]

    async def describe_channel(self, channel_arn: str) -> dict:
        return (await self._today("DescribeChannel", ChannelARN=channel_arn))["ChannelDescription"]

    async def create_channel(self, request: dict) -> dict:
        return (await self._today("CreateChannel", **request)).get("ChannelDescription") or {}

    async def delete_channel(self, channel_arn: str) -> None:
        await self._today("DeleteChannel", ChannelARN=channel_arn)

    # ---- reads ---------------------------------------------------------------------------------

    async def get_shard_iterator(
        self,
        stream: str,
        shard_id: str,
        iterator_type: str,
        *,
        sequence_number: str | None = None,
        timestamp: datetime | None = None,
    ) -> str:
        params: dict[str, Any] = {"StreamName": stream, "ShardId": shard_id, "ShardIteratorType": iterator_type}
        if sequence_number is not None:
            params["StartingSequenceNumber"] = sequence_number
        if timestamp is not None:
            params["Timestamp"] = timestamp
        return (await self._call("GetShardIterator", **params))["ShardIterator"]

    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict:
        return await self._call("GetRecords", ShardIterator=shard_iterator, Limit=limit)

    # ---- resharding ----------------------------------------------------------------------------

    async def split_shard(self, stream: str, shard_id: str, new_starting_hash_key: int) -> None:
        await self._call(
            "SplitShard", StreamName=stream, ShardToSplit=shard_id, NewStartingHashKey=str(new_starting_hash_key)
        )

    async def merge_shards(self, stream: str, shard_id: str, adjacent_shard_id: str) -> None:
        await self._call(
            "MergeShards", StreamName=stream, ShardToMerge=shard_id, AdjacentShardToMerge=adjacent_shard_id
        )

    async def update_shard_count(self, stream: str, target: int) -> dict:
        return await self._today(
            "UpdateShardCount", StreamName=stream, TargetShardCount=target, ScalingType="UNIFORM_SCALING"
        )

    async def describe_limits(self) -> dict:
        """The account's ShardLimit, OpenShardCount and on-demand stream counts (DescribeLimits)."""
        return await self._call("DescribeLimits")

    # ---- enhanced fan-out consumers ------------------------------------------------------------

    async def list_stream_consumers(self, stream_arn: str) -> list[dict]:
        """Every EFO consumer registered on the stream, AWS-shaped (ConsumerName, ConsumerARN,
        ConsumerStatus, ConsumerCreationTimestamp)."""
        consumers: list[dict] = []
        params: dict[str, Any] = {"StreamARN": stream_arn}
        while True:
            page = await self._today("ListStreamConsumers", **params)
            consumers.extend(page.get("Consumers", []))
            if not page.get("NextToken"):
                return consumers
            params = {"StreamARN": stream_arn, "NextToken": page["NextToken"]}

    async def describe_stream_consumer(self, stream_arn: str, name: str) -> dict:
        answer = await self._call("DescribeStreamConsumer", StreamARN=stream_arn, ConsumerName=name)
        return answer["ConsumerDescription"]

    async def register_stream_consumer(self, stream_arn: str, name: str) -> dict:
        return (await self._call("RegisterStreamConsumer", StreamARN=stream_arn, ConsumerName=name))["Consumer"]

    async def deregister_stream_consumer(self, stream_arn: str, name: str) -> None:
        await self._call("DeregisterStreamConsumer", StreamARN=stream_arn, ConsumerName=name)

    def subscriptions(self) -> SubscribeTransport:
        """SubscribeToShard over HTTP/2 on this backend's endpoint (console.backend.subscribe)."""
        if self._subscriptions is None:
            import os

            if self.signing_credentials is None:
                raise BackendError("SubscribeToShard needs a backend opened by open_backend")
            endpoint = self.endpoint_url or self._client.meta.endpoint_url
            self._subscriptions = SubscribeTransport(
                endpoint_url=endpoint,
                region=self.region,
                credentials=self.signing_credentials,
                service_model=self._client.meta.service_model,
                where=self.label,
                connect_timeout=self.config.connect_timeout,
                verify=os.environ.get("AWS_CA_BUNDLE") or True,
                timestamp_parser=self.timestamp_parser,
            )
        return self._subscriptions

    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._call("EnableEnhancedMonitoring", StreamName=stream, ShardLevelMetrics=metrics)

    async def disable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._call("DisableEnhancedMonitoring", StreamName=stream, ShardLevelMetrics=metrics)

    # ---- the other services, through their own classes ---------------------------------------

    async def table_names(self) -> list[str]:
        return await self._dynamodb.table_names()

    async def describe_table(self, table: str) -> dict:
        return await self._dynamodb.describe_table(table)

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict]:
        return await self._dynamodb.scan_table(table, limit=limit)

    def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict]]:
        return self._dynamodb.scan_pages(table, page_size=page_size)

    async def create_lease_table(self, table: str) -> None:
        await self._dynamodb.create_lease_table(table)

    async def put_table_items(self, table: str, items: list[dict]) -> None:
        await self._dynamodb.put_items(table, items)

    async def get_item(self, table: str, key: dict) -> dict | None:
        return await self._dynamodb.get_item(table, key)

    async def update_item_if(self, table: str, key: dict, **change: Any) -> None:
        await self._dynamodb.update_item_if(table, key, **change)

    async def put_item_if_absent(self, table: str, item: dict, key_attribute: str) -> None:
        await self._dynamodb.put_item_if_absent(table, item, key_attribute)

    async def shard_metrics(
        self,
        stream: str,
        shard_ids: list[str],
        metrics: dict[str, str],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> dict[str, dict[str, list[tuple[datetime, float]]]]:
        return await self._cloudwatch.shard_metrics(stream, shard_ids, metrics, start, end, period)

    async def stream_metrics(
        self, stream: str, metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> dict[str, list[tuple[datetime, float]]]:
        return await self._cloudwatch.stream_metrics(stream, metrics, start, end, period)

    async def streams_metrics(
        self, streams: list[str], metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> StreamsMetrics:
        return await self._cloudwatch.streams_metrics(streams, metrics, start, end, period)

    async def put_metric_data(self, namespace: str, points: list[dict]) -> None:
        await self._cloudwatch.put_metric_data(namespace, points)

    async def caller_identity(self) -> str | None:
        return await self._sts.caller_identity()

    # ---- the stream's other readers (Lambda, Firehose, Pipes, Flink) and their metrics -----------

    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict]:
        return await self._readers.event_source_mappings(source_arn)

    async def function_configuration(self, function: str) -> dict | None:
        return await self._readers.function_configuration(function)

    async def delivery_streams_from_kinesis(self) -> list[dict]:
        return await self._readers.delivery_streams_from_kinesis()

    async def pipes_from(self, source_prefix: str | None = None) -> list[dict]:
        return await self._readers.pipes_from(source_prefix)

    async def schema_version(self, version_id: str) -> dict:
        """A Glue Schema Registry version by its id (GetSchemaVersion)."""
        return await self.glue.schema_version(version_id)

    async def flink_applications(self) -> list[dict]:
        return await self._readers.flink_applications()

    async def event_source_mapping(self, uuid: str) -> dict:
        return await self._readers.event_source_mapping(uuid)

    async def set_event_source_mapping_enabled(self, uuid: str, enabled: bool) -> dict:
        return await self._readers.set_event_source_mapping_enabled(uuid, enabled)

    async def create_event_source_mapping(self, request: dict[str, Any]) -> dict:
        return await self._readers.create_event_source_mapping(request)

    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[list[tuple[datetime, float]]]:
        return await self._cloudwatch.metric_series(queries, start, end, period)


# How servers that predate an operation answer it: kinesis-mock cannot route it ("Unable to determine
# service/operation name", as AccessDenied), others name an unknown operation or action, moto has not
# implemented it.
_UNSUPPORTED_MARKERS = (
    "Unable to determine service/operation name",
    "UnknownOperation",
    "InvalidAction",
    "UnsupportedOperation",
    "not yet implemented",
    "is not implemented",
)


_STREAM_ARN = re.compile(r"^arn:[\w-]+:kinesis:[\w-]*:\d*:stream/(?P<name>[A-Za-z0-9_.-]+)$")


def _legacy_stream_of(arn: str, error: BackendError) -> str:
    """The stream a by-ARN call that the endpoint lacks can be made for by name; else the error stands."""
    match = _STREAM_ARN.match(arn)
    if error.code != "unsupported_operation" or match is None:
        raise error
    return match.group("name")


def is_unsupported(error: ConsoleError) -> bool:
    return error.code in ("access_denied", "backend_error", "not_kinesis", "invalid_argument") and any(
        marker.lower() in error.message.lower() for marker in _UNSUPPORTED_MARKERS
    )


def _streams_text(names: list[str] | None) -> str:
    if names is None:
        return "could not list the streams there"
    if not names:
        return "there are no streams there"
    shown = ", ".join(names[:20]) + (f" (+{len(names) - 20} more)" if len(names) > 20 else "")
    return f"streams there: {shown}"


if TYPE_CHECKING:
    from console.backend.protocol import ConsoleBackend
    from console.backend.subscribe import SubscribeTransport

    def _serves_the_console(backend: KinesisBackend) -> ConsoleBackend:
        return backend  # mypy checks here that KinesisBackend has every call the console makes
