"""All AWS I/O lives in this package (aiobotocore); nothing else imports aiobotocore.

    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("my-stream")

`open_backend` starts the embedded local Kinesis (moto, in a child process, patched by
moto_compat) when the config says `local`, and stops it on exit.

By job: config (which backend, from arguments and the AWS environment), calls (the retry and error
path every call takes), kinesis, dynamodb, cloudwatch and sts (one class per service), clients
(client construction and `open_backend`).

The names load on first use (PEP 562): the embedded server's own process (server_main, a module of
this package) never needs aiobotocore, and importing it there cost that child a noticeable part of
its start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "BackendConfig": "console.backend.config",
    "KinesisBackend": "console.backend.kinesis",
    "RetryEvent": "console.backend.calls",
    "open_backend": "console.backend.clients",
}
__all__ = ["BackendConfig", "KinesisBackend", "RetryEvent", "open_backend"]

if TYPE_CHECKING:
    from console.backend.calls import RetryEvent
    from console.backend.clients import open_backend
    from console.backend.config import BackendConfig
    from console.backend.kinesis import KinesisBackend


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'console.backend' has no attribute {name!r}")
