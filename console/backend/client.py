"""CONTRACT STUB: the signatures every other module codes against. The backend helper fills this in."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from console.model import Shard, StreamSummary


@dataclass(frozen=True)
class BackendConfig:
    kind: Literal["aws", "endpoint", "local"] = "aws"
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> "BackendConfig":
        raise NotImplementedError

    @property
    def label(self) -> str:
        """Short header text: 'AWS eu-west-1 (profile prod)', 'local 127.0.0.1:4566', 'endpoint http://...'."""
        raise NotImplementedError


class KinesisBackend:
    config: BackendConfig
    region: str
    endpoint_url: str | None  # the live URL (for local: the child server's)

    @property
    def label(self) -> str: ...

    # streams
    async def list_streams(self) -> list[StreamSummary]: ...
    async def describe_stream(self, stream: str) -> StreamSummary: ...
    async def create_stream(self, stream: str, shard_count: int) -> None: ...
    async def ensure_stream(self, stream: str, shard_count: int = 4) -> bool: ...  # True if created
    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary: ...
    async def delete_stream(self, stream: str) -> None: ...

    # shards
    async def list_shards(self, *, stream: str | None = None, next_token: str | None = None,
                          shard_filter: dict | None = None, max_results: int | None = None) -> dict: ...
    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]: ...

    # writes
    async def put_record(self, stream: str, data: bytes, partition_key: str, *,
                         explicit_hash_key: int | None = None,
                         sequence_number_for_ordering: str | None = None) -> dict: ...
    async def put_records(self, stream: str, records: list[dict]) -> dict: ...

    # reads
    async def get_shard_iterator(self, stream: str, shard_id: str, iterator_type: str, *,
                                 sequence_number: str | None = None,
                                 timestamp: datetime | None = None) -> str: ...
    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict: ...

    # resharding
    async def split_shard(self, stream: str, shard_id: str, new_starting_hash_key: int) -> None: ...
    async def merge_shards(self, stream: str, shard_id: str, adjacent_shard_id: str) -> None: ...
    async def update_shard_count(self, stream: str, target: int) -> dict: ...

    # monitoring / identity
    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None: ...
    async def shard_metrics(self, stream: str, shard_ids: list[str], metric: str,
                            start: datetime, end: datetime, period: int = 60) -> dict[str, list[tuple[datetime, float]]]: ...
    async def caller_identity(self) -> str | None: ...


@contextlib.asynccontextmanager
async def open_backend(config: BackendConfig) -> AsyncIterator[KinesisBackend]:
    raise NotImplementedError
    yield  # pragma: no cover
