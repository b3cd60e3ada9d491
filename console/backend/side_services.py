"""The other services the console reaches through the backend object (DynamoDB lease tables,
CloudWatch metrics, STS identity, the stream's other readers, the Glue Schema Registry), each in its
own module and class, on the one call path of console.backend.kinesis_calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from console.backend.kinesis_calls import KinesisCalls
from console.backend.protocol import StreamsMetrics


class SideServiceCalls(KinesisCalls):
    async def table_names(self) -> list[str]:
        return await self._dynamodb.table_names()

    async def describe_table(self, table: str) -> dict[str, Any]:
        return await self._dynamodb.describe_table(table)

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        return await self._dynamodb.scan_table(table, limit=limit)

    def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict[str, Any]]]:
        return self._dynamodb.scan_pages(table, page_size=page_size)

    async def create_lease_table(self, table: str) -> None:
        await self._dynamodb.create_lease_table(table)

    async def put_table_items(self, table: str, items: list[dict[str, Any]]) -> None:
        await self._dynamodb.put_items(table, items)

    async def get_item(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return await self._dynamodb.get_item(table, key)

    async def update_item_if(
        self,
        table: str,
        key: dict[str, Any],
        *,
        set_values: dict[str, dict[str, Any]],
        remove: list[str],
        add_numbers: dict[str, int],
        expected: dict[str, dict[str, Any] | None],
    ) -> None:
        await self._dynamodb.update_item_if(
            table, key, set_values=set_values, remove=remove, add_numbers=add_numbers, expected=expected
        )

    async def put_item_if_absent(self, table: str, item: dict[str, Any], key_attribute: str) -> None:
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

    async def put_metric_data(self, namespace: str, points: list[dict[str, Any]]) -> None:
        await self._cloudwatch.put_metric_data(namespace, points)

    async def caller_identity(self) -> str | None:
        return await self._sts.caller_identity()

    # ---- the stream's other readers (Lambda, Firehose, Pipes, Flink) and their metrics -----------

    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict[str, Any]]:
        return await self._readers.event_source_mappings(source_arn)

    async def function_configuration(self, function: str) -> dict[str, Any] | None:
        return await self._readers.function_configuration(function)

    async def delivery_streams_from_kinesis(self) -> list[dict[str, Any]]:
        return await self._readers.delivery_streams_from_kinesis()

    async def pipes_from(self, source_prefix: str | None = None) -> list[dict[str, Any]]:
        return await self._readers.pipes_from(source_prefix)

    async def schema_version(self, version_id: str) -> dict[str, Any]:
        """A Glue Schema Registry version by its id (GetSchemaVersion)."""
        return await self.glue.schema_version(version_id)

    async def flink_applications(self) -> list[dict[str, Any]]:
        return await self._readers.flink_applications()

    async def event_source_mapping(self, uuid: str) -> dict[str, Any]:
        return await self._readers.event_source_mapping(uuid)

    async def set_event_source_mapping_enabled(self, uuid: str, enabled: bool) -> dict[str, Any]:
        return await self._readers.set_event_source_mapping_enabled(uuid, enabled)

    async def create_event_source_mapping(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self._readers.create_event_source_mapping(request)

    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[list[tuple[datetime, float]]]:
        return await self._cloudwatch.metric_series(queries, start, end, period)
