"""The backend a command's arguments name, opened in one place: `with_backend(args)` builds its
configuration (--local, --endpoint-url, --profile, --region, the timeouts) and opens it through
console.backend's `open_backend`, which starts the embedded server on --local and, on that server
(empty every run), makes the command's stream first (--shards N of them; nothing in read-only mode).
The backend's own errors (no credentials, an endpoint that does not answer) leave it already
translated to one line."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from console.commands._confirm import read_only_source
from console.commands._output import note
from console.commands._stream_args import local_shard_count

if TYPE_CHECKING:
    from console.backend import BackendConfig, KinesisBackend


def backend_config(args: argparse.Namespace) -> BackendConfig:
    """The configuration the arguments name, checked (a bad --region or --endpoint-url is exit 2) before
    anything starts."""
    from console.backend import BackendConfig

    return BackendConfig.from_args(args)


@contextlib.asynccontextmanager
async def with_backend(
    args: argparse.Namespace,
    *,
    stream: str | Sequence[str] | None = None,
    config: BackendConfig | None = None,
    shards: int | None = None,
) -> AsyncIterator[KinesisBackend]:
    """The open backend for `args` (or for `config`, when the command checked it first); with a
    `stream` (or several), each is made first on the embedded server, as every command does with
    --local, with `shards` shards (default: --shards, else DEFAULT_LOCAL_SHARDS)."""
    from console.backend import LocalStream, open_backend

    config = config or backend_config(args)
    names = (stream,) if isinstance(stream, str) else tuple(stream or ())
    local = None
    if names and config.kind == "local":  # a bad --shards is exit 2 before the server starts
        count = shards or local_shard_count(args)
        local = LocalStream(names, count, read_only_source(args), on_created=note)
    async with open_backend(config, local_stream=local) as kinesis:
        yield kinesis
