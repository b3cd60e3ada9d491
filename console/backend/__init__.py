"""All Kinesis I/O lives in this package (aiobotocore); nothing else imports aiobotocore.

    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("my-stream")

`open_backend` starts the embedded local Kinesis (moto, in a child process, patched by
moto_compat) when the config says `local`, and stops it on exit.

The names load on first use (PEP 562): the embedded server's own process (server_main, a module of
this package) never needs aiobotocore, and importing it there cost that child a noticeable part of
its start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["BackendConfig", "KinesisBackend", "open_backend"]

if TYPE_CHECKING:
    from console.backend.client import BackendConfig, KinesisBackend, open_backend


def __getattr__(name: str) -> Any:
    if name in __all__:
        from console.backend import client

        return getattr(client, name)
    raise AttributeError(f"module 'console.backend' has no attribute {name!r}")
