"""Start the live console from parsed CLI arguments.

`kconsole --stream NAME` opens that stream; without --stream a stream picker opens first.
`kconsole --local` alone starts the embedded local Kinesis with a demo stream (created on first use,
with a few records and one split so the ribbon and the lineage show something real at once).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace

from console.errors import BadInput

DEMO_STREAM = "kconsole-demo"
DEMO_RECORDS = 60


def resolve_interval(cli_value: float | None, config_value: float) -> float:
    value = config_value if cli_value is None else cli_value
    if not 0.2 <= value <= 3600:
        raise BadInput(f"--interval must be from 0.2 to 3600 seconds; got {value:g}", code="usage")
    return float(value)


async def prepare_demo_stream(kinesis, name: str = DEMO_STREAM, shards: int = 4) -> bool:
    """Create the demo stream unless it exists: `shards` even shards, the first one split in two,
    and a few JSON records spread over it. Returns True if it was created now."""
    if not await kinesis.ensure_stream(name, shards):
        return False
    if shards >= 2:
        first = (await kinesis.all_shards(name))[0]
        midpoint = first.starting_hash_key + (first.ending_hash_key - first.starting_hash_key + 1) // 2
        await kinesis.split_shard(name, first.shard_id, midpoint)
        await kinesis.wait_for_active(name)
    records = [{"Data": json.dumps({"user": f"user-{n}", "n": n}).encode(), "PartitionKey": f"user-{n}"}
               for n in range(DEMO_RECORDS)]
    await kinesis.put_records(name, records)
    return True


def served_to_a_browser() -> bool:
    """True under textual-serve (`kconsole web`) or `textual serve`: Textual's web driver then talks
    over the pipe, so a non-terminal stdout is expected there."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")


def launch_console(args) -> int:
    from console.backend import BackendConfig, open_backend
    from console.config import load_config, save_config

    if getattr(args, "json", False):
        raise BadInput("the live console has no --json output; use a subcommand (kconsole --help)", code="usage")
    if getattr(args, "shards", None) is not None and (args.shards < 1 or args.shards > 500):
        raise BadInput(f"--shards must be from 1 to 500; got {args.shards}", code="usage")
    config, warning = load_config()
    interval = resolve_interval(getattr(args, "interval", None), config.interval)
    read_only = bool(getattr(args, "read_only", False) or config.read_only)
    backend_config = BackendConfig.from_args(args)
    if not sys.stdout.isatty() and not served_to_a_browser():
        raise BadInput("the live console needs a terminal; for scripts use the subcommands with --json", code="usage")

    def remember(**changes) -> None:
        """Save the last stream and the theme picked in the palette; never overwrite a file we could not read."""
        nonlocal config
        updated = replace(config, **changes)
        if updated != config and warning is None:
            try:
                save_config(updated)
                config = updated
            except OSError:
                pass

    async def run() -> None:
        from console.ui.app import KConsoleApp

        if backend_config.kind == "local":
            print("kconsole: starting the embedded local Kinesis…", file=sys.stderr)
        async with open_backend(backend_config) as kinesis:
            stream = args.stream
            if backend_config.kind == "local" and not stream:
                await prepare_demo_stream(kinesis, shards=args.shards or 4)
                stream = DEMO_STREAM
            app = KConsoleApp(kinesis, stream=stream, interval=interval, read_only=read_only,
                              config_warning=warning, theme=config.theme,
                              on_stream_opened=lambda stream: remember(last_stream=stream),
                              last_stream=config.last_stream)
            app.on_theme_changed = lambda theme: remember(theme=theme)
            await app.run_async()

    asyncio.run(run())
    return 0

