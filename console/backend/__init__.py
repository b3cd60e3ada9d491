"""All Kinesis I/O lives in this package (aiobotocore); nothing else imports aiobotocore.

    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("my-stream")

`open_backend` starts the embedded local Kinesis (moto, in a child process, patched by
moto_compat) when the config says `local`, and stops it on exit.
"""

from console.backend.client import BackendConfig, KinesisBackend, open_backend

__all__ = ["BackendConfig", "KinesisBackend", "open_backend"]
