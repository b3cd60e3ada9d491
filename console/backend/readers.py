"""The services that read a Kinesis stream besides the KCL: Lambda event source mappings, Firehose
delivery streams, EventBridge Pipes and Managed Service for Apache Flink applications (their lag
is read from CloudWatch: CloudWatchBackend.metric_series).

Every call but the three mapping changes at the end only reads. Answers come back as the services give them (AWS-shaped dicts); a service an
endpoint does not serve, a missing permission or throttling that outlasts the retries is one
ConsoleError, which the caller turns into one line in place of that service's readers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from console.backend.calls import CallPath
from console.errors import BadInput, StreamNotFound

DESCRIBE_CONCURRENCY = 8  # Describe* calls in flight at once (each service's own rate limits are low)
MAPPINGS_PAGE = 100  # ListEventSourceMappings' MaxItems (AWS's most)


class ReadersBackend:
    """Read-only calls on Lambda, Firehose, Pipes and Kinesis Analytics v2, through the backend's
    clients (opened on first use) and its one call path."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def _call(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        return await self._calls.call(await self._client(service), operation, service=service, **params)

    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict[str, Any]]:
        """Every Lambda event source mapping reading `source_arn` (a stream's or an EFO consumer's
        ARN), or every mapping in the region when None, over every page."""
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"MaxItems": MAPPINGS_PAGE}
        if source_arn is not None:
            params["EventSourceArn"] = source_arn
        while True:
            page = await self._call("lambda", "ListEventSourceMappings", **params)
            found.extend(page.get("EventSourceMappings") or [])
            if not page.get("NextMarker"):
                return found
            params["Marker"] = page["NextMarker"]

    async def function_configuration(self, function: str) -> dict[str, Any] | None:
        """GetFunction's Configuration; None when the function is not there (deleted under its mapping)."""
        try:
            return (await self._call("lambda", "GetFunction", FunctionName=function)).get("Configuration") or {}
        except StreamNotFound:  # ResourceNotFoundException, whatever the service
            return None

    async def delivery_streams_from_kinesis(self) -> list[dict[str, Any]]:
        """DescribeDeliveryStream's DeliveryStreamDescription of every delivery stream whose source is
        a Kinesis stream (ListDeliveryStreams with DeliveryStreamType KinesisStreamAsSource)."""
        names: list[str] = []
        params: dict[str, Any] = {"DeliveryStreamType": "KinesisStreamAsSource", "Limit": 10000}
        while True:
            page = await self._call("firehose", "ListDeliveryStreams", **params)
            listed = page.get("DeliveryStreamNames") or []
            names.extend(listed)
            if not page.get("HasMoreDeliveryStreams") or not listed:
                break
            params["ExclusiveStartDeliveryStreamName"] = listed[-1]
        return await self._described(
            names, lambda name: self._call("firehose", "DescribeDeliveryStream", DeliveryStreamName=name)
        )

    async def pipes_from(self, source_prefix: str | None = None) -> list[dict[str, Any]]:
        """DescribePipe of every pipe whose source starts with `source_prefix` (every pipe when None)."""
        listed: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        if source_prefix is not None:
            params["SourcePrefix"] = source_prefix
        while True:
            page = await self._call("pipes", "ListPipes", **params)
            listed.extend(page.get("Pipes") or [])
            if not page.get("NextToken"):
                break
            params["NextToken"] = page["NextToken"]
        return await self._described(
            [pipe["Name"] for pipe in listed if pipe.get("Name")],
            lambda name: self._call("pipes", "DescribePipe", Name=name),
        )

    async def flink_applications(self) -> list[dict[str, Any]]:
        """DescribeApplication's ApplicationDetail of every Managed Service for Apache Flink application."""
        names: list[str] = []
        params: dict[str, Any] = {}
        while True:
            page = await self._call("kinesisanalyticsv2", "ListApplications", **params)
            names.extend(app["ApplicationName"] for app in page.get("ApplicationSummaries") or [])
            if not page.get("NextToken"):
                break
            params["NextToken"] = page["NextToken"]
        return await self._described(
            names, lambda name: self._call("kinesisanalyticsv2", "DescribeApplication", ApplicationName=name)
        )

    async def _described(
        self, names: Sequence[str], describe: Callable[[str], Awaitable[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """Each name described, a few at once; one deleted between the listing and its describe is left out."""
        limit = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

        async def one(name: str) -> dict[str, Any] | None:
            async with limit:
                try:
                    answer = await describe(name)
                except StreamNotFound:
                    return None
            # Each service wraps its description in its own member; Pipes answers it bare.
            for member in ("DeliveryStreamDescription", "ApplicationDetail"):
                if member in answer:
                    described: dict[str, Any] = answer[member]
                    return described
            return answer

        return [found for found in await asyncio.gather(*(one(name) for name in names)) if found is not None]

    # ---- changing a mapping (console.consumers.mappings prepares and runs these) -----------------

    async def event_source_mapping(self, uuid: str) -> dict[str, Any]:
        """GetEventSourceMapping; BadInput when there is no such mapping."""
        try:
            answer = await self._call("lambda", "GetEventSourceMapping", UUID=uuid)
        except StreamNotFound:
            raise BadInput(f"no Lambda event source mapping {uuid} on {self._calls.label}", code="not_found") from None
        return {k: v for k, v in answer.items() if k != "ResponseMetadata"}

    async def set_event_source_mapping_enabled(self, uuid: str, enabled: bool) -> dict[str, Any]:
        answer = await self._call("lambda", "UpdateEventSourceMapping", UUID=uuid, Enabled=enabled)
        return {k: v for k, v in answer.items() if k != "ResponseMetadata"}

    async def create_event_source_mapping(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = await self._call("lambda", "CreateEventSourceMapping", **request)
        return {k: v for k, v in answer.items() if k != "ResponseMetadata"}
