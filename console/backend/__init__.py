"""All AWS I/O lives in this package (aiobotocore); nothing else imports aiobotocore.

    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("my-stream")

`open_backend` starts the embedded local Kinesis (console.localserver, through launcher) when the
config says `local`, and stops it on exit.

By job: protocol (what the console asks of a backend, by role), config (which backend, from
arguments and the AWS environment), calls (the retry and error path every call takes), kinesis (the
backend object, with kinesis_calls its call path, kinesis_settings the stream's settings and
side_services the other services' calls), dynamodb, cloudwatch and sts (one class per service),
clients (client construction and `open_backend`), launcher (the one door to the embedded server).

The names load on first use (PEP 562): a module that needs one part of this package (config, for
the CLI's options) does not load the rest, and aiobotocore with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "BackendConfig": "console.backend.config",
    "KinesisBackend": "console.backend.kinesis",
    "LocalStream": "console.backend.clients",
    "RetryEvent": "console.backend.calls",
    "make_local_streams": "console.backend.clients",
    "open_backend": "console.backend.clients",
}
__all__ = ["BackendConfig", "KinesisBackend", "LocalStream", "RetryEvent", "make_local_streams", "open_backend"]

if TYPE_CHECKING:
    from console.backend.calls import RetryEvent
    from console.backend.clients import LocalStream, make_local_streams, open_backend
    from console.backend.config import BackendConfig
    from console.backend.kinesis import KinesisBackend


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'console.backend' has no attribute {name!r}")
