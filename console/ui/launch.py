"""Start the live console from parsed CLI arguments.

`kconsole --stream NAME` opens that stream; without --stream a stream picker opens first.
`kconsole --local` alone starts the embedded local Kinesis with a demo stream (created on first use,
with a few records and one split so the ribbon and the lineage show something real at once).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from dataclasses import replace

from console.lifecycle.rules import DEFAULT_SHARDS, validate_stream_name
from console.errors import BadInput

DEMO_STREAM = "kconsole-demo"
DEMO_RECORDS = 60


def resolve_interval(cli_value: float | None, config_value: float) -> float:
    value = config_value if cli_value is None else cli_value
    if not 0.2 <= value <= 3600:
        raise BadInput(f"--interval must be from 0.2 to 3600 seconds; got {value:g}", code="usage")
    return float(value)


async def prepare_demo_stream(kinesis, name: str = DEMO_STREAM, shards: int = 4, *, split: bool = True) -> bool:
    """Create the demo stream unless it exists: `shards` even shards, the first one split in two
    (with `split`), and a few JSON records spread over it. Returns True if it was created now."""
    if not await kinesis.ensure_stream(name, shards):
        return False
    if split and shards >= 2:
        first = (await kinesis.all_shards(name))[0]
        midpoint = first.starting_hash_key + (first.ending_hash_key - first.starting_hash_key + 1) // 2
        await kinesis.split_shard(name, first.shard_id, midpoint)
        await kinesis.wait_for_active(name)
    records = [{"Data": json.dumps({"user": f"user-{n}", "n": n}).encode(), "PartitionKey": f"user-{n}"}
               for n in range(DEMO_RECORDS)]
    await kinesis.put_records(name, records)
    return True


def launch_console(args) -> int:
    from console.backend import BackendConfig, open_backend
    from console.config import load_config, save_config

    if getattr(args, "json", False):
        raise BadInput("the live console has no --json output; use a subcommand (kconsole --help)", code="usage")
    shards = getattr(args, "shards", None) or DEFAULT_SHARDS  # bounded by the parser (1 to 10,000)
    if args.stream:
        validate_stream_name(args.stream)
    config, warning = load_config()
    interval = resolve_interval(getattr(args, "interval", None), config.interval)
    read_only = bool(getattr(args, "read_only", False) or config.read_only)
    backend_config = BackendConfig.from_args(args)
    if not sys.stdout.isatty():
        raise BadInput("the live console needs a terminal; for scripts use the subcommands with --json", code="usage")

    def remember(stream: str) -> None:
        if config.last_stream != stream and warning is None:  # never overwrite a file we could not read
            try:
                save_config(replace(config, last_stream=stream))
            except OSError:
                pass

    async def run() -> None:
        # Textual and the app load in a thread while the embedded server boots in its own process:
        # the two take about as long, so first contact waits for one, not both.
        app_module = asyncio.create_task(asyncio.to_thread(importlib.import_module, "console.ui.app"))
        if backend_config.kind == "local":
            print("kconsole: starting the embedded local Kinesis…", file=sys.stderr)
        async with open_backend(backend_config) as kinesis:
            stream = args.stream
            created = None
            if backend_config.kind == "local" and not stream:
                # The demo splits a shard to show lineage, unless the user asked for a shard count:
                # then the stream has exactly that many open shards.
                await prepare_demo_stream(kinesis, shards=shards, split=args.shards is None)
                stream = DEMO_STREAM
            elif backend_config.kind == "local" and await kinesis.ensure_stream(stream, shards):
                created = f"created stream {stream!r} with {shards} shards on the embedded local Kinesis"
            console_app = (await app_module).KConsoleApp
            app = console_app(kinesis, stream=stream, interval=interval, read_only=read_only,
                              config_warning=warning, theme=config.theme, on_stream_opened=remember,
                              last_stream=config.last_stream)
            if created:
                app.notify(created, title="first contact", timeout=8)  # shown once the console is up
            await app.run_async()

    asyncio.run(run())
    return 0

