"""The backend a command's arguments name, opened in one place: `with_backend(args)` builds its
configuration (--local, --endpoint-url, --profile, --region, the timeouts), starts the embedded server
on --local, and on that server (empty every run) creates the command's stream first. The backend's own
errors (no credentials, an endpoint that does not answer) leave it already translated to one line."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from console.commands._stream_args import ensure_local_stream

if TYPE_CHECKING:
    from console.backend import BackendConfig, KinesisBackend


def backend_config(args: argparse.Namespace) -> BackendConfig:
    """The configuration the arguments name, checked (a bad --region or --endpoint-url is exit 2) before
    anything starts."""
    from console.backend import BackendConfig

    return BackendConfig.from_args(args)


@contextlib.asynccontextmanager
async def with_backend(
    args: argparse.Namespace, *, stream: str | None = None, config: BackendConfig | None = None
) -> AsyncIterator[KinesisBackend]:
    """The open backend for `args` (or for `config`, when the command checked it first); with a
    `stream`, that stream is created on the embedded server, as every command does with --local."""
    from console.backend import open_backend

    config = config or backend_config(args)
    async with open_backend(config) as kinesis:
        if stream and config.kind == "local":
            await ensure_local_stream(kinesis, stream, args)
        yield kinesis
