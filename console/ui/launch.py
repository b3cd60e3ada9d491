"""Start the live console from parsed CLI arguments.

`kconsole --stream NAME` opens that stream; without --stream a stream picker opens first.
`kconsole --local` alone starts the embedded local Kinesis with a demo stream (created on first use,
with a few records and one split so the ribbon and the lineage show something real at once).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from console.backend.protocol import ConsoleBackend, MetricPoints
from console.bounds import validate_stream_name
from console.errors import BadInput
from console.lifecycle.rules import DEFAULT_SHARDS
from console.topology.model import Shard, StreamSummary
from console.words import counted

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
    records = [
        {"Data": json.dumps({"user": f"user-{n}", "n": n}).encode(), "PartitionKey": f"user-{n}"}
        for n in range(DEMO_RECORDS)
    ]
    await kinesis.put_records(name, records)
    return True


class PrefetchingSource:
    """The backend, with the answers for the console's first poll of `stream` asked for before the UI
    started: the server works on them while Textual starts, and the first poll picks them up. Every
    other call goes straight to the backend (each one by name: this is a ConsoleBackend too)."""

    def __init__(self, source: ConsoleBackend, stream: str) -> None:
        self._source = source
        self._stream = stream
        self.capabilities = source.capabilities
        self._pending: dict[str, asyncio.Future] = {
            "describe_stream_summary": asyncio.ensure_future(source.describe_stream_summary(stream)),
            "all_shards": asyncio.ensure_future(source.all_shards(stream)),
        }

    @property
    def on_retry(self) -> Callable[[Any], None] | None:
        return self._source.on_retry

    @on_retry.setter
    def on_retry(self, callback: Callable[[Any], None] | None) -> None:
        self._source.on_retry = callback

    @property
    def label(self) -> str:
        return self._source.label

    @property
    def region(self) -> str | None:
        return self._source.region

    @property
    def profile(self) -> str | None:
        return self._source.profile

    async def describe_stream_summary(self, stream: str) -> StreamSummary:
        early = self._pending.pop("describe_stream_summary", None) if stream == self._stream else None
        return await early if early is not None else await self._source.describe_stream_summary(stream)

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]:
        early = self._pending.pop("all_shards", None) if stream == self._stream and shard_filter is None else None
        return await early if early is not None else await self._source.all_shards(stream, shard_filter)

    def cancel(self) -> None:
        """Drop answers nobody asked for (the console closed before its first poll)."""
        for early in self._pending.values():
            early.cancel()
            if early.done() and not early.cancelled():
                early.exception()  # retrieved, so asyncio does not log it as never looked at
        self._pending.clear()

    # ---- the rest of ConsoleBackend, straight to the backend ----

    async def list_streams(self) -> list[StreamSummary]:
        return await self._source.list_streams()

    async def list_stream_summaries(self, *, page_size: int = 100) -> list[StreamSummary]:
        return await self._source.list_stream_summaries(page_size=page_size)

    async def describe_stream_details(self, stream: str) -> dict:
        return await self._source.describe_stream_details(stream)

    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary:
        return await self._source.wait_for_active(stream, timeout)

    async def increase_retention(self, stream: str, hours: int) -> None:
        await self._source.increase_retention(stream, hours)

    async def decrease_retention(self, stream: str, hours: int) -> None:
        await self._source.decrease_retention(stream, hours)

    async def update_stream_mode(self, stream_arn: str, mode: str) -> None:
        await self._source.update_stream_mode(stream_arn, mode)

    async def update_max_record_size(self, stream_arn: str, kib: int) -> None:
        await self._source.update_max_record_size(stream_arn, kib)

    async def update_warm_throughput(self, stream_arn: str, mibps: int) -> dict:
        return await self._source.update_warm_throughput(stream_arn, mibps)

    async def update_record_distribution(self, stream_arn: str, strategy: str) -> None:
        await self._source.update_record_distribution(stream_arn, strategy)

    async def account_settings(self) -> dict:
        return await self._source.account_settings()

    async def update_account_settings(self, status: str) -> dict:
        return await self._source.update_account_settings(status)

    async def resource_tags(self, arn: str) -> dict[str, str]:
        return await self._source.resource_tags(arn)

    async def tag_resource(self, arn: str, tags: dict[str, str]) -> None:
        await self._source.tag_resource(arn, tags)

    async def untag_resource(self, arn: str, keys: list[str]) -> None:
        await self._source.untag_resource(arn, keys)

    async def resource_policy(self, arn: str) -> str | None:
        return await self._source.resource_policy(arn)

    async def put_resource_policy(self, arn: str, policy: str) -> None:
        await self._source.put_resource_policy(arn, policy)

    async def delete_resource_policy(self, arn: str) -> None:
        await self._source.delete_resource_policy(arn)

    async def list_channels(self, *, stream_arn: str | None = None) -> list[dict]:
        return await self._source.list_channels(stream_arn=stream_arn)

    async def describe_channel(self, channel_arn: str) -> dict:
        return await self._source.describe_channel(channel_arn)

    async def create_channel(self, request: dict) -> dict:
        return await self._source.create_channel(request)

    async def delete_channel(self, channel_arn: str) -> None:
        await self._source.delete_channel(channel_arn)

    async def start_encryption(self, stream: str, key_id: str) -> None:
        await self._source.start_encryption(stream, key_id)

    async def stop_encryption(self, stream: str, key_id: str) -> None:
        await self._source.stop_encryption(stream, key_id)

    async def delete_stream(self, stream: str, *, enforce_consumer_deletion: bool = True) -> None:
        await self._source.delete_stream(stream, enforce_consumer_deletion=enforce_consumer_deletion)

    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._source.enable_enhanced_monitoring(stream, metrics)

    async def put_record(
        self,
        stream: str,
        data: bytes,
        partition_key: str | None,
        *,
        explicit_hash_key: int | None = None,
        sequence_number_for_ordering: str | None = None,
    ) -> dict:
        return await self._source.put_record(
            stream,
            data,
            partition_key,
            explicit_hash_key=explicit_hash_key,
            sequence_number_for_ordering=sequence_number_for_ordering,
        )

    async def put_records(self, stream: str, records: list[dict]) -> dict:
        return await self._source.put_records(stream, records)

    async def get_shard_iterator(
        self,
        stream: str,
        shard_id: str,
        iterator_type: str,
        *,
        sequence_number: str | None = None,
        timestamp: datetime | None = None,
    ) -> str:
        return await self._source.get_shard_iterator(
            stream, shard_id, iterator_type, sequence_number=sequence_number, timestamp=timestamp
        )

    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict:
        return await self._source.get_records(shard_iterator, limit)

    async def list_shards(
        self,
        *,
        stream: str | None = None,
        next_token: str | None = None,
        shard_filter: dict | None = None,
        max_results: int | None = None,
    ) -> dict:
        return await self._source.list_shards(
            stream=stream, next_token=next_token, shard_filter=shard_filter, max_results=max_results
        )

    async def describe_limits(self) -> dict:
        return await self._source.describe_limits()

    async def caller_identity(self) -> str | None:
        return await self._source.caller_identity()

    async def split_shard(self, stream: str, shard_id: str, new_starting_hash_key: int) -> None:
        await self._source.split_shard(stream, shard_id, new_starting_hash_key)

    async def merge_shards(self, stream: str, shard_id: str, adjacent_shard_id: str) -> None:
        await self._source.merge_shards(stream, shard_id, adjacent_shard_id)

    async def update_shard_count(self, stream: str, target: int) -> dict:
        return await self._source.update_shard_count(stream, target)

    async def list_stream_consumers(self, stream_arn: str) -> list[dict]:
        return await self._source.list_stream_consumers(stream_arn)

    async def describe_table(self, table: str) -> dict:
        return await self._source.describe_table(table)

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict]:
        return await self._source.scan_table(table, limit=limit)

    def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict]]:
        return self._source.scan_pages(table, page_size=page_size)

    async def table_names(self) -> list[str]:
        return await self._source.table_names()

    async def stream_metrics(
        self, stream: str, metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> dict[str, MetricPoints]:
        return await self._source.stream_metrics(stream, metrics, start, end, period)

    async def shard_metrics(
        self,
        stream: str,
        shard_ids: list[str],
        metrics: dict[str, str],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> dict[str, dict[str, MetricPoints]]:
        return await self._source.shard_metrics(stream, shard_ids, metrics, start, end, period)

    async def streams_metrics(
        self, streams: list[str], metrics: dict[str, str], start: datetime, end: datetime, period: int = 60
    ) -> Any:
        return await self._source.streams_metrics(streams, metrics, start, end, period)

    async def event_source_mappings(self, source_arn: str | None = None) -> list[dict]:
        return await self._source.event_source_mappings(source_arn)

    async def function_configuration(self, function: str) -> dict | None:
        return await self._source.function_configuration(function)

    async def delivery_streams_from_kinesis(self) -> list[dict]:
        return await self._source.delivery_streams_from_kinesis()

    async def pipes_from(self, source_prefix: str | None = None) -> list[dict]:
        return await self._source.pipes_from(source_prefix)

    async def flink_applications(self) -> list[dict]:
        return await self._source.flink_applications()

    async def metric_series(
        self,
        queries: Sequence[tuple[str, str, str, dict[str, str]]],
        start: datetime,
        end: datetime,
        period: int = 60,
    ) -> list[MetricPoints]:
        return await self._source.metric_series(queries, start, end, period)


def _supervise_local_server(
    kinesis, stream: str | None, shards: int, *, demo: bool, split: bool, read_only: bool, shown: dict[str, Any]
) -> asyncio.Task | None:
    """For the embedded server: its death said in the header at once, then a restart on the same
    port with the stream recreated (said: its records are gone)."""
    server = getattr(kinesis, "local_server", None)
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
                await prepare_demo_stream(kinesis, stream, shards, split=split)
            else:
                await kinesis.ensure_stream(stream, shards)
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

    return asyncio.ensure_future(server.supervise(say, recreate))


def served_to_a_browser() -> bool:
    """True under textual-serve (`kconsole web`) or `textual serve`: Textual's web driver then talks
    over the pipe, so a non-terminal stdout is expected there."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")


def load_console() -> Any:
    """The console's module, and the heap of start-up out of the collector's way: run in a thread
    while the backend opens, so the collection over everything imported happens while the launch
    waits on the server, not after the app has started (the app collects again, then only what it
    built since)."""
    module = importlib.import_module("console.ui.app")
    gc.collect()
    gc.freeze()
    return module


def launch_console(args) -> int:
    from console.backend import BackendConfig, open_backend
    from console.config import load_config, save_config
    from console.read.share import share_for_endpoint

    if getattr(args, "json", False):
        raise BadInput("the live console has no --json output; use a subcommand (kconsole --help)", code="usage")
    shards = getattr(args, "shards", None) or DEFAULT_SHARDS  # bounded by the parser (1 to 10,000)
    if args.stream:
        validate_stream_name(args.stream)  # a name AWS would refuse is exit 2, not a console polling forever
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
        # Textual loads in a thread while the backend opens (and the embedded server starts), and the
        # first poll's calls go out before the UI starts: the waits on the server overlap the start-up.
        app_module = asyncio.ensure_future(asyncio.to_thread(load_console))
        if backend_config.kind == "local":
            print("kconsole: starting the embedded local Kinesis…", file=sys.stderr)
        async with open_backend(backend_config) as kinesis:
            stream = args.stream
            created = None
            if backend_config.kind == "local" and not stream and not read_only:  # read-only creates nothing
                # The demo splits a shard to show lineage, unless the user asked for a shard count:
                # then the stream has exactly that many open shards.
                await prepare_demo_stream(kinesis, shards=shards, split=args.shards is None)
                stream = DEMO_STREAM
            elif backend_config.kind == "local" and not read_only and await kinesis.ensure_stream(stream, shards):
                created = f"created stream {stream!r} with {counted(shards, 'shard')} on the embedded local Kinesis"
            source = PrefetchingSource(kinesis, stream) if stream else kinesis
            shown: dict[str, Any] = {}  # the app, once it exists, for the server supervisor to speak through
            supervisor = _supervise_local_server(
                kinesis,
                stream,
                shards,
                demo=stream == DEMO_STREAM and not args.stream,
                split=args.shards is None,
                read_only=read_only,
                shown=shown,
            )
            try:
                app = (await app_module).KConsoleApp(
                    source,
                    stream=stream,
                    interval=interval,
                    read_only=read_only,
                    config_warning=warning,
                    theme=config.theme,
                    on_stream_opened=lambda stream: remember(last_stream=stream),
                    last_stream=config.last_stream,
                    key_format=config.key_format,
                    mask_rules=config.mask,
                    read_share=share_for_endpoint(
                        getattr(args, "read_share", None),
                        local=backend_config.kind == "local",
                        endpoint_url=backend_config.endpoint_url,
                    ),
                )
                app.on_theme_changed = lambda theme: remember(theme=theme)
                if served_to_a_browser():
                    from console.ui.browser_session import exit_when_server_leaves

                    exit_when_server_leaves(app)
                if created:
                    app.notify(created, title="first contact", timeout=8)  # shown once the console is up
                shown["app"] = app
                await app.run_async()
            finally:
                shown.clear()  # nothing reaches the terminal once the console is gone
                if supervisor is not None:
                    supervisor.cancel()
                if isinstance(source, PrefetchingSource):
                    source.cancel()
                kinesis.on_retry = None  # a call still retrying as the console closes says nothing on the shell

    asyncio.run(run())
    return 0
