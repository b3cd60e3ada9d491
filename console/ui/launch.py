"""Start the live console from parsed CLI arguments.

`kconsole --stream NAME` opens that stream; without --stream a stream picker opens first.
`kconsole --local` alone starts the embedded local Kinesis with a demo stream (created on first use,
with a few records and one split so the ribbon and the lineage show something real at once).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import sys
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from console.backend.protocol import ConsoleBackend
from console.bounds import validate_stream_name
from console.errors import BadInput
from console.lifecycle.rules import DEFAULT_SHARDS
from console.ui.source import StreamView, fetch_stream
from console.words import plain_number

if TYPE_CHECKING:
    from console.ui.app import KConsoleApp

DEMO_STREAM = "kconsole-demo"
DEMO_RECORDS = 60


class DemoBackend(ConsoleBackend, Protocol):
    """What the launcher asks of the backend it opened besides the console's calls: the demo (or
    named) stream made on the embedded server, and that server to supervise."""

    async def ensure_stream(self, stream: str, shard_count: int = 4) -> bool: ...


def resolve_interval(cli_value: float | None, config_value: float) -> float:
    value = config_value if cli_value is None else cli_value
    if not 0.2 <= value <= 3600:
        raise BadInput(f"--interval must be from 0.2 to 3600 seconds; got {plain_number(value)}", code="usage")
    return float(value)


async def prepare_demo_stream(
    backend: DemoBackend, name: str = DEMO_STREAM, shards: int = 4, *, split: bool = True
) -> bool:
    """Create the demo stream unless it exists: `shards` even shards, the first one split in two
    (with `split`), and a few JSON records spread over it. Returns True if it was created now."""
    if not await backend.ensure_stream(name, shards):
        return False
    if split and shards >= 2:
        first = (await backend.all_shards(name))[0]
        midpoint = first.starting_hash_key + (first.ending_hash_key - first.starting_hash_key + 1) // 2
        await backend.split_shard(name, first.shard_id, midpoint)
        await backend.wait_for_active(name)
    records = [
        {"Data": json.dumps({"user": f"user-{n}", "n": n}).encode(), "PartitionKey": f"user-{n}"}
        for n in range(DEMO_RECORDS)
    ]
    await backend.put_records(name, records)
    return True


def drop_unasked(first_view: asyncio.Future[StreamView] | None) -> None:
    """The first poll's answer, asked for before the UI started, dropped when nobody took it (the
    console closed before its first poll, or opened another stream first)."""
    if first_view is None:
        return
    first_view.cancel()
    if first_view.done() and not first_view.cancelled():
        first_view.exception()  # retrieved, so asyncio does not log it as never looked at


def _supervise_local_server(
    backend: DemoBackend,
    stream: str | None,
    shards: int,
    *,
    demo: bool,
    split: bool,
    read_only: bool,
    shown: dict[str, KConsoleApp],
) -> asyncio.Task[None] | None:
    """For the embedded server: its death said in the header at once, then a restart on the same
    port with the stream recreated (said: its records are gone)."""
    server = getattr(backend, "local_server", None)
    if server is None:
        return None

    def say(text: str, *, short: str | None = None) -> None:
        app = shown.get("app")
        if app is None or not app.is_running:
            return
        app.header.update_state(server=short or text)
        app.notify(text, title="embedded server", severity="warning", timeout=12)

    async def recreate() -> None:
        if stream is None or read_only:
            say("embedded server restarted on the same port, empty", short="server restarted, empty")
            return
        try:
            if demo:
                await prepare_demo_stream(backend, stream, shards, split=split)
            else:
                await backend.ensure_stream(stream, shards)
        except Exception as error:  # said in the header; the polls say the rest
            say(
                f"embedded server restarted; recreating {stream} failed: {error}", short="server restarted, stream lost"
            )
            return
        say(
            f"embedded server restarted on the same port: {stream} recreated, its records are gone",
            short=f"server restarted: {stream} recreated, records gone",
        )
        app = shown.get("app")
        if app is not None and app.is_running:  # a Tail tab that was reading goes on in the new stream
            from console.ui.stream_display import EmbeddedServerRestarted

            app.post_message(EmbeddedServerRestarted())

    async def once_started() -> None:
        ready = getattr(backend, "server_ready", None)
        if ready is not None:  # still booting alongside the UI: watch it once it answers
            try:
                await asyncio.shield(ready)
            except Exception:
                return  # a start that failed is the launch's to say
        await server.supervise(say, recreate)

    supervising: asyncio.Task[None] = asyncio.ensure_future(once_started())
    return supervising


def _start_error(started: asyncio.Future[Any]) -> BaseException | None:
    return None if not started.done() or started.cancelled() else started.exception()


def _close_unless_started(app: KConsoleApp, started: asyncio.Future[Any]) -> None:
    """The embedded server that never answered closes the console built meanwhile; the launch then
    says why in one line, as when nothing had been built yet."""
    if _start_error(started) is not None:
        app.exit()


def served_to_a_browser() -> bool:
    """True under textual-serve (`kconsole web`) or `textual serve`: Textual's web driver then talks
    over the pipe, so a non-terminal stdout is expected there."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")


def load_console() -> ModuleType:
    """The console's module, and the heap of start-up out of the collector's way: run in a thread
    while the backend opens, so the collection over everything imported happens while the launch
    waits on the server, not after the app has started (the app collects again, then only what it
    built since)."""
    module = importlib.import_module("console.ui.app")
    gc.collect()
    gc.freeze()
    return module


def console_masking(args: argparse.Namespace, config: Any, *, stream: str | None) -> tuple[tuple[str, ...], bool]:
    """The console's mask rules (the config's `mask`, `--mask`, and `@keys` for mask_keys / --mask-keys) and
    whether they apply: `--no-mask` starts the console with them off, said in its header and written to the
    action log first. A bad --mask rule is bad input, before anything starts."""
    from console.read.masking import KEYS_PRESET, MaskRuleError, parse_rules

    given = list(getattr(args, "console_mask_rules", None) or [])
    try:
        parse_rules(given)
    except MaskRuleError as problem:
        raise BadInput(str(problem)) from None
    keys = config.mask_keys or getattr(args, "console_mask_keys", False)
    rules = tuple(dict.fromkeys([*config.mask, *given, *([KEYS_PRESET] if keys else [])]))
    if not getattr(args, "console_no_mask", False):
        return rules, True
    if given or getattr(args, "console_mask_keys", False):
        raise BadInput("--mask or --mask-keys and --no-mask contradict each other: give one", code="usage")
    if rules:
        from console.reshard.actionlog import ActionLog

        ActionLog.default().masking_off(stream=stream, rules=rules, where="console --no-mask")
    return rules, False


def launch_console(args: argparse.Namespace) -> int:
    from console.backend import BackendConfig, LocalStream, make_local_streams, open_backend
    from console.config import load_config, save_config
    from console.read.share import share_for_endpoint

    if getattr(args, "json", False):
        raise BadInput("the live console has no --json output; use a subcommand (kconsole --help)", code="usage")
    shards = getattr(args, "shards", None) or DEFAULT_SHARDS  # bounded by the parser (1 to 10,000)
    if args.stream:
        validate_stream_name(args.stream)  # a name AWS would refuse is exit 2, not a console polling forever
    config, warning = load_config()
    interval = resolve_interval(getattr(args, "interval", None), config.interval)
    read_only_source = (
        "--read-only" if getattr(args, "read_only", False) else "read_only in the config" if config.read_only else None
    )
    read_only = read_only_source is not None
    backend_config = BackendConfig.from_args(args)
    if not sys.stdout.isatty() and not served_to_a_browser():
        raise BadInput("the live console needs a terminal; for scripts use the subcommands with --json", code="usage")
    mask_rules, masking = console_masking(args, config, stream=args.stream)

    def remember(**changes: Any) -> None:
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
        # Textual loads in a thread while the backend opens. The embedded server boots in its own
        # process alongside the UI: the backend is handed over at once (its calls wait for the
        # server), the screen is built meanwhile, and the stream is made and first polled once the
        # server answers. On an endpoint the first poll's calls go out before the UI starts.
        app_module = asyncio.ensure_future(asyncio.to_thread(load_console))
        local = backend_config.kind == "local"
        if local:
            print("kconsole: starting the embedded local Kinesis…", file=sys.stderr)
        async with open_backend(backend_config, wait_for_server=False) as backend:
            stream = args.stream
            shown: dict[str, KConsoleApp] = {}  # the app, once it exists, for the server supervisor to speak through
            said: list[str] = []  # the stream's creation, made before the app existed: said once it does
            if local and not stream and not read_only:  # read-only creates nothing
                stream = DEMO_STREAM

            async def stream_made_then_polled(stream: str) -> StreamView:
                if local and not args.stream and not read_only:
                    # The demo splits a shard to show lineage, unless the user asked for a shard count:
                    # then the stream has exactly that many open shards.
                    await prepare_demo_stream(backend, shards=shards, split=args.shards is None)
                elif local:  # made as for every command (read-only: only looked for)

                    def created(text: str) -> None:
                        said.append(text)
                        if (app := shown.get("app")) is not None:  # made while the console was built: it says so
                            app.notify(said.pop(), title="first contact", timeout=8)

                    await make_local_streams(backend, LocalStream((stream,), shards, read_only_source, created))
                return await fetch_stream(backend, stream)

            first_view = asyncio.ensure_future(stream_made_then_polled(stream)) if stream else None
            supervisor = _supervise_local_server(
                backend,
                stream,
                shards,
                demo=stream == DEMO_STREAM and not args.stream,
                split=args.shards is None,
                read_only=read_only,
                shown=shown,
            )
            try:
                app = (await app_module).KConsoleApp(
                    backend,
                    stream=stream,
                    first_view=first_view,
                    interval=interval,
                    read_only=read_only,
                    config_warning=warning,
                    theme=config.theme,
                    on_stream_opened=lambda stream: remember(last_stream=stream),
                    last_stream=config.last_stream,
                    key_format=config.key_format,
                    mask_rules=mask_rules,
                    masking=masking,
                    read_share=share_for_endpoint(
                        getattr(args, "read_share", None),
                        local=backend_config.kind == "local",
                        endpoint_url=backend_config.endpoint_url,
                    ),
                )
                app.on_theme_changed = lambda theme: remember(theme=theme)
                if served_to_a_browser():
                    from console.ui.browser_session import serve_to_browser

                    serve_to_browser(app)
                shown["app"] = app
                for text in said:
                    app.notify(text, title="first contact", timeout=8)  # shown once the console is up
                server_ready: asyncio.Future[Any] | None = getattr(backend, "server_ready", None)
                if server_ready is not None:
                    server_ready.add_done_callback(lambda started: _close_unless_started(app, started))
                if server_ready is None or _start_error(server_ready) is None:  # else failed before the UI ran
                    await app.run_async()
                if server_ready is not None and (error := _start_error(server_ready)) is not None:
                    raise error  # the embedded server never started: its one line, as before the UI existed
            finally:
                shown.clear()  # nothing reaches the terminal once the console is gone
                if supervisor is not None:
                    supervisor.cancel()
                drop_unasked(first_view)
                backend.on_retry = None  # a call still retrying as the console closes says nothing on the shell

    asyncio.run(run())
    return 0
