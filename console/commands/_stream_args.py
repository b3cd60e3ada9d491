"""Stream arguments shared by the commands: a valid name, and `--shards N` for a stream the embedded
server (which starts empty every run) makes on demand (console.commands._backend.with_backend)."""

from __future__ import annotations

from typing import Any

from console.bounds import validate_stream_name
from console.errors import BadInput
from console.lifecycle.rules import DEFAULT_SHARDS as DEFAULT_LOCAL_SHARDS
from console.lifecycle.rules import MAX_SHARDS as MAX_LOCAL_SHARDS

__all__ = [
    "DEFAULT_LOCAL_SHARDS",
    "MAX_LOCAL_SHARDS",
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
