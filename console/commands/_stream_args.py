"""Stream arguments shared by the commands: a valid name, and on the embedded server (which starts
empty every run) the stream created on demand with `--shards N`."""

from __future__ import annotations

from typing import Any

from console.bounds import validate_stream_name
from console.commands._confirm import read_only_source
from console.commands._output import note
from console.errors import BadInput, StreamNotFound
from console.lifecycle.rules import DEFAULT_SHARDS as DEFAULT_LOCAL_SHARDS
from console.lifecycle.rules import MAX_SHARDS as MAX_LOCAL_SHARDS
from console.words import counted

__all__ = [
    "DEFAULT_LOCAL_SHARDS",
    "MAX_LOCAL_SHARDS",
    "ensure_local_stream",
    "local_shard_count",
    "validate_stream_name",
]


def local_shard_count(args: Any) -> int:
    """--shards for a stream the embedded server has to create; checked before the server starts."""
    count = getattr(args, "shards", None)
    if count is None:
        return DEFAULT_LOCAL_SHARDS
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_LOCAL_SHARDS:
        raise BadInput(f"--shards must be a whole number from 1 to {MAX_LOCAL_SHARDS}; got {count!r}", code="usage")
    return count


async def ensure_local_stream(kinesis: Any, stream: str, args: Any) -> None:
    """The embedded server starts empty each run, so a named stream is created on demand, except in
    read-only mode, which creates nothing anywhere: a missing stream is then simply not found."""
    count = local_shard_count(args)
    source = read_only_source(args)
    if source is not None:
        try:
            await kinesis.describe_stream_summary(stream)
        except StreamNotFound as error:
            raise StreamNotFound(
                f"{error.message}; read-only mode ({source}) creates no stream, not even on the embedded local Kinesis"
            ) from None
        return
    if await kinesis.ensure_stream(stream, count):
        note(f"created stream {stream!r} with {counted(count, 'shard')} on the embedded local Kinesis")
