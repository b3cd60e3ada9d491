"""Kinesis: every stream, shard, record and consumer call the console makes, and the object
`open_backend` yields.

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("orders")

`KinesisBackend` is also where the console reaches the other services it needs (DynamoDB lease
tables, CloudWatch metrics, STS identity): one object to pass around, each service in its own
module and class, all on one call path (console.backend.kinesis_calls) so retries are counted and
reported in one place. The stream's settings are in console.backend.kinesis_settings, the other
services' calls in console.backend.side_services.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from console.backend.kinesis_settings import StreamSettingsCalls
from console.backend.protocol import CLOUDWATCH, OWN_LOOP, READERS, RETRY_EVENTS
from console.backend.side_services import SideServiceCalls
from console.backend.subscribe import SubscribeTransport
from console.errors import BackendError, BadInput, ResourceInUse, StreamNotFound
from console.topology.model import EfoConsumer, Shard, StreamSummary, put_records_entry


class KinesisBackend(StreamSettingsCalls, SideServiceCalls):
    """One open connection to a Kinesis endpoint. Create through `open_backend`."""

    # What the console may use beyond the streams (console.backend.protocol): CloudWatch, the other
    # readers' services, retry events, another backend for a thread's own loop.
    capabilities = frozenset({CLOUDWATCH, READERS, RETRY_EVENTS, OWN_LOOP})

    def opened_again(self) -> AbstractAsyncContextManager[KinesisBackend]:
        """Another backend on the same endpoint, region and credentials, opened by `open_backend` as
        this one was, to be entered on another event loop (a worker thread's): aiobotocore's clients
        belong to the loop that made them. On the embedded server it attaches to the running server."""
        if self.opener is None:
            raise BackendError("another backend can only be opened from one that open_backend opened")
        config = replace(self.config, region=self.region)
        if config.kind == "local":
            config = replace(config, endpoint_url=self.endpoint_url)
        return self.opener(config)

    # ---- streams -------------------------------------------------------------------------------

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

    async def create_stream(self, stream: str, shard_count: int | None, *, on_demand: bool = False) -> None:
        """CreateStream: `shard_count` shards in provisioned mode, or on-demand (no count: AWS sizes it)."""
        if on_demand:
            await self._call("CreateStream", StreamName=stream, StreamModeDetails={"StreamMode": "ON_DEMAND"})
            return
        if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
            raise BadInput(f"shard count must be a whole number of at least 1; got {shard_count!r}")
        await self._call("CreateStream", StreamName=stream, ShardCount=shard_count)

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

    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]:
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
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"StreamName": stream, "Data": data}
        if partition_key is not None:  # optional on an AUTO stream
            params["PartitionKey"] = partition_key
        if explicit_hash_key is not None:
            params["ExplicitHashKey"] = str(explicit_hash_key)
        if sequence_number_for_ordering is not None:
            params["SequenceNumberForOrdering"] = sequence_number_for_ordering
        return await self._call("PutRecord", **params)

    async def put_records(self, stream: str, records: list[dict[str, Any]]) -> dict[str, Any]:
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
        iterator: str = (await self._call("GetShardIterator", **params))["ShardIterator"]
        return iterator

    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict[str, Any]:
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

    async def update_shard_count(self, stream: str, target: int) -> dict[str, Any]:
        return await self._today(
            "UpdateShardCount", StreamName=stream, TargetShardCount=target, ScalingType="UNIFORM_SCALING"
        )

    async def describe_limits(self) -> dict[str, Any]:
        """The account's ShardLimit, OpenShardCount and on-demand stream counts (DescribeLimits)."""
        return await self._call("DescribeLimits")

    # ---- enhanced fan-out consumers ------------------------------------------------------------

    async def list_stream_consumers(self, stream_arn: str) -> list[EfoConsumer]:
        """Every EFO consumer registered on the stream, every page of ListStreamConsumers."""
        consumers: list[EfoConsumer] = []
        params: dict[str, Any] = {"StreamARN": stream_arn}
        while True:
            page = await self._today("ListStreamConsumers", **params)
            consumers.extend(EfoConsumer.from_api(raw) for raw in page.get("Consumers", []))
            if not page.get("NextToken"):
                return consumers
            params = {"StreamARN": stream_arn, "NextToken": page["NextToken"]}

    async def describe_stream_consumer(self, stream_arn: str, name: str) -> EfoConsumer:
        answer = await self._call("DescribeStreamConsumer", StreamARN=stream_arn, ConsumerName=name)
        return EfoConsumer.from_api(answer["ConsumerDescription"])

    async def register_stream_consumer(self, stream_arn: str, name: str) -> EfoConsumer:
        answer = await self._call("RegisterStreamConsumer", StreamARN=stream_arn, ConsumerName=name)
        return EfoConsumer.from_api(answer["Consumer"])

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


if TYPE_CHECKING:
    from console.backend.protocol import ConsoleBackend

    def _serves_the_console(backend: KinesisBackend) -> ConsoleBackend:
        return backend  # mypy checks here that KinesisBackend has every call the console makes
