"""A fixed, in-memory stream source: deterministic data for snapshot tests, screenshots of edge
cases and the 10k-shard benchmark. It has the stream reads of console.backend.protocol (StreamReads)
and nothing else: no CloudWatch, no retries (its `capabilities` are empty)."""

from __future__ import annotations

from collections.abc import Sequence

from console.errors import StreamNotFound
from console.keyspace.hashkeys import even_split, shard_id_for_index
from console.topology.model import Shard, StreamSummary


def even_shards(count: int, *, first_index: int = 0) -> list[Shard]:
    return [
        Shard(shard_id_for_index(first_index + i), start, end, starting_sequence_number=str(i))
        for i, (start, end) in enumerate(even_split(count))
    ]


def split_shard(shards: list[Shard], shard_id: str, at: int) -> list[Shard]:
    """What SplitShard does to a listing: the parent closes, two children (next ids) appear."""
    parent = next(s for s in shards if s.shard_id == shard_id)
    next_index = max(int(s.shard_id.rsplit("-", 1)[1]) for s in shards) + 1
    closed = Shard(
        parent.shard_id,
        parent.starting_hash_key,
        parent.ending_hash_key,
        parent.parent_shard_id,
        parent.adjacent_parent_shard_id,
        parent.starting_sequence_number,
        ending_sequence_number="9",
    )
    children = [
        Shard(
            shard_id_for_index(next_index),
            parent.starting_hash_key,
            at - 1,
            parent.shard_id,
            starting_sequence_number="10",
        ),
        Shard(
            shard_id_for_index(next_index + 1),
            at,
            parent.ending_hash_key,
            parent.shard_id,
            starting_sequence_number="11",
        ),
    ]
    return [closed if s.shard_id == shard_id else s for s in shards] + children


class StaticSource:
    """Serves one or more streams from memory. `shards` may be replaced between polls."""

    label = "static (in memory)"
    region = "local"
    profile = None
    capabilities: frozenset[str] = frozenset()  # no CloudWatch, no retries to report
    on_retry = None

    def __init__(
        self,
        stream: str,
        shards: Sequence[Shard],
        *,
        status: str = "ACTIVE",
        mode: str = "PROVISIONED",
        retention_hours: int = 24,
    ) -> None:
        self.stream = stream
        self.shards = list(shards)
        self.status = status
        self.mode = mode
        self.retention_hours = retention_hours
        self.calls = 0
        self.failure: Exception | None = None  # raised by every call while set (a backend that is down)

    def summary(self) -> StreamSummary:
        return StreamSummary(
            name=self.stream,
            status=self.status,
            mode=self.mode,
            open_shard_count=sum(1 for s in self.shards if s.is_open),
            retention_hours=self.retention_hours,
            encryption="NONE",
        )

    async def describe_stream_summary(self, stream: str) -> StreamSummary:
        self._check(stream)
        return self.summary()

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]:  # noqa: ARG002 - the backend protocol's signature
        self._check(stream)
        self.calls += 1
        return list(self.shards)

    async def list_streams(self) -> list[StreamSummary]:
        self._check(self.stream)
        return [self.summary()]

    async def list_stream_summaries(self, *, page_size: int = 100) -> list[StreamSummary]:  # noqa: ARG002 - the backend protocol's signature
        return await self.list_streams()

    async def describe_streams(  # the protocol's signature
        self,
        listed: list[StreamSummary],
        *,
        concurrency: int = 16,  # noqa: ARG002
    ) -> list[StreamSummary]:
        return [await self.describe_stream_summary(summary.name) for summary in listed]

    def _check(self, stream: str) -> None:
        if self.failure is not None:
            raise self.failure
        if stream != self.stream:
            raise StreamNotFound(f"stream {stream!r} not found")
