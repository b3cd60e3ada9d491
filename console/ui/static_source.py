"""A fixed, in-memory stream source: deterministic data for snapshot tests, screenshots of edge
cases and the 10k-shard benchmark. It has the read methods of KinesisBackend and nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from console.errors import StreamNotFound
from console.hashkeys import even_split, shard_id_for_index
from console.model import Shard, StreamSummary


def even_shards(count: int, *, first_index: int = 0) -> list[Shard]:
    return [Shard(shard_id_for_index(first_index + i), start, end, starting_sequence_number=str(i))
            for i, (start, end) in enumerate(even_split(count))]


class StaticSource:
    """Serves one or more streams from memory. `shards` may be replaced between polls."""

    label = "static (in memory)"
    region = "local"

    def __init__(self, stream: str, shards: Sequence[Shard], *, status: str = "ACTIVE",
                 mode: str = "PROVISIONED", retention_hours: int = 24) -> None:
        self.stream = stream
        self.shards = list(shards)
        self.status = status
        self.mode = mode
        self.retention_hours = retention_hours
        self.calls = 0

    def summary(self) -> StreamSummary:
        return StreamSummary(name=self.stream, status=self.status, mode=self.mode,
                             open_shard_count=sum(1 for s in self.shards if s.is_open),
                             retention_hours=self.retention_hours, encryption="NONE")

    async def describe_stream(self, stream: str) -> StreamSummary:
        self._check(stream)
        return self.summary()

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]:
        self._check(stream)
        self.calls += 1
        return list(self.shards)

    async def list_streams(self) -> list[StreamSummary]:
        return [self.summary()]

    def _check(self, stream: str) -> None:
        if stream != self.stream:
            raise StreamNotFound(f"stream {stream!r} not found")
