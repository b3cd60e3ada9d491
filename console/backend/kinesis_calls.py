"""The call path every Kinesis call of the backend takes (console.backend.kinesis assembles the
backend from here, console.backend.kinesis_settings and console.backend.side_services): a missing
stream named with the streams there are, an operation a server lacks said in one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from console.backend.calls import CallPath
from console.backend.cloudwatch import CloudWatchBackend
from console.backend.config import BackendConfig
from console.backend.dynamodb import DynamoDBBackend
from console.backend.glue import GlueBackend
from console.backend.readers import ReadersBackend
from console.backend.sts import STSBackend
from console.errors import BackendError, BadInput, ConsoleError, StreamNotFound
from console.topology.model import StreamSummary

if TYPE_CHECKING:
    from console.backend.launcher import LocalKinesisServer
    from console.backend.subscribe import SubscribeTransport


class KinesisCalls(CallPath):
    """One open connection to a Kinesis endpoint, and its clients for the other services."""

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
        # How this backend was opened (open_backend, set there): `opened_again` opens another the same way.
        self.opener: Callable[[BackendConfig], AbstractAsyncContextManager[Any]] | None = None
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

    async def _call(self, operation: str, *, client: Any = None, **params: Any) -> dict[str, Any]:
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
        except Exception:
            return None

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

    async def stream_names(self) -> list[str]:
        return [summary.name for summary in await self.list_stream_summaries()]

    async def _side_client(self, service: str) -> Any:
        """The backend's client for another service (CloudWatch, DynamoDB, STS), opened on first use."""
        if self._open_side_client is None:
            raise BackendError(f"{service} is not available on this backend")
        return await self._open_side_client(service)

    async def _today(self, operation: str, **params: Any) -> dict[str, Any]:
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
