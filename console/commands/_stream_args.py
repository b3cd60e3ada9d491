"""Stream arguments shared by the commands: a valid name, and on the embedded server (which starts
empty every run) the stream created on demand with `--shards N`."""

from __future__ import annotations

import re
from typing import Any

from console.commands._output import note
from console.errors import BadInput

# What AWS accepts as a stream name; checked here so a typo is exit 2, not a server round trip.
_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")
DEFAULT_LOCAL_SHARDS = 4
MAX_LOCAL_SHARDS = 10_000  # AWS's default account limit is 500; more only makes the embedded server crawl


def validate_stream_name(name: str) -> str:
    if not _STREAM_NAME.match(name or ""):
        raise BadInput(f"not a valid stream name: {name!r} (1 to 128 of a-z A-Z 0-9 _ . -)", code="bad_stream_name")
    return name


def local_shard_count(args: Any) -> int:
    """--shards for a stream the embedded server has to create; checked before the server starts."""
    count = getattr(args, "shards", None)
    if count is None:
        return DEFAULT_LOCAL_SHARDS
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_LOCAL_SHARDS:
        raise BadInput(f"--shards must be a whole number from 1 to {MAX_LOCAL_SHARDS}; got {count!r}", code="usage")
    return count


async def ensure_local_stream(kinesis: Any, stream: str, args: Any) -> None:
    """The embedded server starts empty each run, so a named stream is created on demand."""
    count = local_shard_count(args)
    if await kinesis.ensure_stream(stream, count):
        note(f"created stream {stream!r} with {count} shards on the embedded local Kinesis")
