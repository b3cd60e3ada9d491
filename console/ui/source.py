"""What the console polls, and what one good poll yields.

The app never builds its own backend: it is handed any object with KinesisBackend's read methods
(`describe_stream`, `all_shards`, `list_streams`), so tests and the 10k-shard benchmark inject a
transport of their own and the real app runs on `open_backend(...)`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Protocol

from console.errors import ConsoleError
from console.hashkeys import HashRangeIndex
from console.lineage import Lineage
from console.model import Shard, StreamSummary


class StreamSource(Protocol):
    async def describe_stream(self, stream: str) -> StreamSummary: ...

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]: ...

    async def list_streams(self) -> list[StreamSummary]: ...


@dataclass(frozen=True)
class ConnectionInfo:
    """Header text for where we are connected."""

    backend: str
    region: str | None
    profile: str | None

    @classmethod
    def of(cls, source: Any) -> "ConnectionInfo":
        config = getattr(source, "config", None)
        return cls(
            backend=_safe_label(source),
            region=getattr(source, "region", None) or getattr(config, "region", None),
            profile=getattr(config, "profile", None),
        )


def _safe_label(source: Any) -> str:
    try:
        return str(source.label)
    except Exception:  # a stub or fake without a label must not stop the console
        return type(source).__name__


@dataclass(frozen=True)
class StreamView:
    """One good poll: the stream's summary, every shard ListShards returned, and the open-shard index."""

    summary: StreamSummary
    shards: tuple[Shard, ...]
    lineage: Lineage | None = None  # built after the table is shown (off the UI loop for big streams)

    @property
    def index(self) -> HashRangeIndex | None:
        """Open-shard index for prediction; None while the open shards do not tile the key space."""
        return self.lineage.open_index if self.lineage is not None else None

    @property
    def tiling_problem(self) -> str | None:
        return self.lineage.problem if self.lineage is not None else None

    @property
    def open_shards(self) -> list[Shard]:
        return [shard for shard in self.shards if shard.is_open]

    def shard(self, shard_id: str) -> Shard | None:
        for shard in self.shards:
            if shard.shard_id == shard_id:
                return shard
        return None


BIG_STREAM = 500  # shards; above this, pure-Python work on the whole listing runs in a thread


async def fetch_stream(source: StreamSource, stream: str) -> StreamView:
    """Summary and every shard; the lineage is left to `with_lineage`."""
    summary, shards = await asyncio.gather(source.describe_stream(stream), source.all_shards(stream))
    return StreamView(summary=summary, shards=tuple(shards))


async def with_lineage(view: StreamView) -> StreamView:
    # Building the lineage of 10k shards takes 60-200 ms of pure Python: off the UI loop it goes
    # (a thread holding the GIL still lets the loop run every switch interval, 5 ms).
    if len(view.shards) > BIG_STREAM:
        lineage = await asyncio.to_thread(Lineage.build, view.shards)
    else:
        lineage = Lineage.build(view.shards)
    return replace(view, lineage=lineage)


async def poll_stream(source: StreamSource, stream: str) -> StreamView:
    return await with_lineage(await fetch_stream(source, stream))


def describe_failure(error: BaseException, timeout: float) -> str:
    """One line for the red header."""
    if isinstance(error, ConsoleError):
        return error.message
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        return f"no answer within {timeout:g}s"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:200] if text else type(error).__name__
