"""The MCP server: one tool per command, each answering with the command's own `--json` document.

A tool call becomes the command line a person would type (`kconsole predict --stream S KEY...`),
parsed by the CLI's own parser and run by the command's own handler with its document collected
rather than printed (console.commands._output.collect_document): CLI and agent answers cannot differ.
Each call runs in a worker thread of its own (the handlers run their own event loop), under a deadline;
its error is one line, the server lives on. Nothing but the protocol reaches stdout: the SDK's stdio
transport points fd 1 at stderr while it serves, so a stray print lands with the warnings."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from console import __version__
from console.acting import acting_for
from console.bounds import UPDATE_SHARD_COUNT_MAX
from console.document_sink import collect_document
from console.errors import ConsoleError
from console.mcp_server.plans import PlanBook

CALL_DEADLINE_SECONDS = 120.0  # a tool call answers within this, or says it ran out of time
MAX_KEYS = 100_000  # predict: keys a call may ask about (a million-key file is the CLI's work)
MAX_KEY_CHARS = 256  # a partition key is at most 256 characters
MAX_TAIL_RECORDS = 10_000
MAX_HEAT_SECONDS = 60
MAX_MASK_RULES = 50
MAX_MASK_RULE_CHARS = 1024
MAX_PROBLEMS_SHOWN = 5  # a bad call's first few rejected fields
ACTION_LOG_ENTRIES = 200  # the action-log resource: its newest entries

StreamName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[a-zA-Z0-9_.-]+$")]
ShardId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[a-zA-Z0-9_.-]+$")]

# `kconsole mcp`'s own options, which the commands it runs neither take nor should see.
MCP_OPTIONS = ("handler", "subcommands", "http", "allow_changes", "streams")
_parsing = threading.Lock()  # argparse's lazy subcommands register on first use: one parse at a time


LOCAL_STREAM_SHARDS = 4


@contextlib.contextmanager
def embedded_endpoint(args: Any) -> Iterator[None]:
    """With --local, one embedded server for the server's whole life (each command would start and
    stop its own), with the streams --stream names: every call reaches it as `--endpoint-url`."""
    if not getattr(args, "local", False):
        yield
        return
    from console.backend.launcher import LocalKinesisServer, require_local_extra

    require_local_extra()
    server = LocalKinesisServer()
    url = server.start()
    try:
        if args.streams:
            asyncio.run(_create_streams(url, args.region, args.streams))
        args.local, args.endpoint_url = False, url
        yield
    finally:
        server.stop()


async def _create_streams(url: str, region: str | None, streams: list[str]) -> None:
    from console.backend import BackendConfig, LocalStream, open_backend

    config = BackendConfig(kind="local", region=region or "us-east-1", endpoint_url=url)
    async with open_backend(config, local_stream=LocalStream(tuple(streams), LOCAL_STREAM_SHARDS)):
        pass


class CommandRunner:
    """Runs `kconsole ARGV --json` in this process and returns its JSON document."""

    def __init__(
        self,
        base: argparse.Namespace,
        subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
        *,
        read_only: bool,
    ):
        self.defaults = {key: value for key, value in vars(base).items() if key not in MCP_OPTIONS}
        self.defaults.update(read_only=read_only, json=True, output="json", query=None, max_items=None)
        self.subcommands = subcommands

    def parse(self, argv: list[str]) -> argparse.Namespace:
        namespace = argparse.Namespace(**self.defaults)
        with _parsing:
            self.subcommands(None, namespace, argv)  # type: ignore[arg-type]  # the parser is only named in errors
        leftover = getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if leftover:
            raise ConsoleError(f"unrecognized arguments: {' '.join(leftover)}", code="usage")
        return namespace

    def run(self, argv: list[str], *, lines: bool = False) -> Any:
        """The command's document (with `lines`, its JSON lines as a list); a refusal or failure raises
        ToolError with the command's one line."""
        try:
            namespace = self.parse(argv)
            code, text = collect_document(lambda: namespace.handler(namespace))
        except ConsoleError as error:
            raise ToolError(f"{error.code}: {error.message}") from None
        if lines:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if not text.strip():
            raise ToolError(f"kconsole {argv[0]} answered nothing (exit {code})")
        return json.loads(text)

    async def call(self, argv: list[str], *, lines: bool = False, agent: str | None = None) -> Any:
        token = acting_for.set(agent) if agent else None
        try:
            work = asyncio.to_thread(self.run, argv, lines=lines)  # copies the context: acting_for
            return await asyncio.wait_for(work, CALL_DEADLINE_SECONDS)
        except TimeoutError:
            raise ToolError(f"kconsole {argv[0]} did not answer within {CALL_DEADLINE_SECONDS:.0f} s") from None
        finally:
            if token is not None:
                acting_for.reset(token)


class KconsoleMcpServer(MCPServer):
    """The SDK's server, with a call's bad arguments said in one line: each rejected field and why."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
                for problem in cause.errors(include_url=False)[:MAX_PROBLEMS_SHOWN]
            )
            raise ToolError(f"bad_arguments: {name}: {problems}") from None


def document(value: Any) -> str:
    """A tool's answer: the document as one JSON text, as `--json` prints it (a list stays one list,
    where the SDK would make each item a content block of its own)."""
    return json.dumps(value, default=str)


def client_name(context: Context) -> str:
    params = context.session.client_params
    name = params.client_info.name if params is not None else None
    return f"mcp:{name or 'unnamed client'}"


def build_server(
    args: argparse.Namespace, subcommands: argparse._SubParsersAction[argparse.ArgumentParser]
) -> MCPServer:
    allow_changes = bool(args.allow_changes)
    runner = CommandRunner(args, subcommands, read_only=not allow_changes)
    plans = PlanBook()
    server = KconsoleMcpServer(
        "kconsole",
        version=__version__,
        log_level="WARNING",
        instructions="Kinesis Data Streams, answered by kconsole: each tool returns the document "
        "`kconsole <command> --json` prints. "
        + (
            "Changes are allowed: a plan_* tool returns a plan id; apply_plan applies it with the stream name typed back."
            if allow_changes
            else "Read-only: plans can be made, never applied."
        ),
    )

    @server.tool(
        description="List the streams: status, mode, open shards, retention. Costs: ListStreams and one summary per stream."
    )
    async def streams() -> str:
        return document(await runner.call(["streams"]))

    @server.tool(description="A stream's summary (kconsole stream describe). Costs: one DescribeStreamSummary.")
    async def describe(stream: StreamName) -> str:
        return document(await runner.call(["stream", "describe", stream]))

    @server.tool(description="A stream's shards with hash ranges and lineage. Costs: ListShards pages.")
    async def shards(stream: StreamName, include_closed: bool = False) -> str:
        return document(await runner.call(["shards", stream] + (["--all"] if include_closed else [])))

    @server.tool(
        description="Which shard each partition key lands on (MD5 of the key against the open shards' hash "
        "ranges). With a stream: one ListShards; with `shard_count` alone: an even N-shard stream, offline."
    )
    async def predict(
        keys: Annotated[
            list[Annotated[str, Field(max_length=MAX_KEY_CHARS)]], Field(min_length=1, max_length=MAX_KEYS)
        ],
        stream: StreamName | None = None,
        shard_count: Annotated[int, Field(ge=1, le=UPDATE_SHARD_COUNT_MAX)] | None = None,
    ) -> str:
        argv = ["predict"]
        argv += ["--stream", stream] if stream else []
        argv += ["--shards", str(shard_count)] if shard_count else []
        return document(await runner.call([*argv, "--", *keys]))

    async def make_plan(action: str, stream: str, options: list[str]) -> str:
        planned = await runner.call(["plan", action, stream, *options])
        plan_id = plans.add(action, stream, options, planned)
        return document({"plan_id": plan_id, "expires_in_seconds": plans.lifetime, "plan": planned})

    @server.tool(
        description="Plan splitting one shard (at its midpoint or a hash key); changes nothing. Returns the "
        "plan and a plan id for apply_plan. Costs: ListShards and a summary."
    )
    async def plan_split(
        stream: StreamName, shard: ShardId, at: Annotated[str, Field(max_length=40)] = "midpoint"
    ) -> str:
        return await make_plan("split", stream, ["--shard", shard, "--at", at])

    @server.tool(description="Plan merging two adjacent shards; changes nothing. Returns a plan id for apply_plan.")
    async def plan_merge(stream: StreamName, shard: ShardId, adjacent: ShardId) -> str:
        return await make_plan("merge", stream, ["--shard", shard, "--adjacent", adjacent])

    @server.tool(description="Plan rescaling to N open shards (UpdateShardCount); changes nothing. Returns a plan id.")
    async def plan_scale(stream: StreamName, to: Annotated[int, Field(ge=1, le=UPDATE_SHARD_COUNT_MAX)]) -> str:
        return await make_plan("scale", stream, ["--to", str(to)])

    @server.tool(
        description="Apply a plan made by plan_split/plan_merge/plan_scale: give its plan id and type the "
        "stream's name back. Refused unless the server runs with --allow-changes, when the plan expired, or "
        "when the stream changed since the plan was made. The action log records who: mcp:<client name>."
    )
    async def apply_plan(plan_id: Annotated[str, Field(max_length=64)], stream: StreamName, context: Context) -> str:
        if not allow_changes:
            raise ToolError("read_only: this server is read-only; start it with `kconsole mcp --allow-changes`")
        plan = plans.take(plan_id, stream)  # unknown, expired or wrong name: refused here
        fresh = await runner.call(["plan", plan.action, plan.stream, *plan.options])
        if fresh != plan.document:
            raise ToolError(
                f"stale_plan: {plan.stream} changed since plan {plan_id} was made; nothing was called; make a new plan"
            )
        return document(
            await runner.call(
                ["reshard", plan.action, plan.stream, *plan.options, "--yes", "--wait"], agent=client_name(context)
            )
        )

    @server.tool(
        description="Every reader of a stream, worst first: Lambda, Firehose, Pipes, Flink, EFO, KCL. Costs: "
        "list calls to those services and lease-table scans; no record reads."
    )
    async def readers(stream: StreamName) -> str:
        return document(await runner.call(["readers", stream]))

    @server.tool(
        description="Read up to `limit` records, decoded and masked (the config's mask rules, plus `mask`: "
        "field paths such as user.email, re:REGEX, @cards, @emails, @keys), from the start (trim_horizon) or "
        "`last` window (90s, 15m, 2h). Costs: GetRecords on every shard, sharing each shard's 5 reads/s with production readers."
    )
    async def tail(
        stream: StreamName,
        limit: Annotated[int, Field(ge=1, le=MAX_TAIL_RECORDS)] = 100,
        last: Annotated[str, Field(max_length=16, pattern=r"^\d+[smhd]$")] | None = None,
        shard: ShardId | None = None,
        key: Annotated[str, Field(max_length=MAX_KEY_CHARS)] | None = None,
        mask: Annotated[list[Annotated[str, Field(max_length=MAX_MASK_RULE_CHARS)]], Field(max_length=MAX_MASK_RULES)]
        | None = None,
    ) -> str:
        argv = ["tail", stream, "--limit", str(limit)]
        for rule in mask or ():  # added to the config's mask rules, which always apply
            argv += ["--mask", rule]
        argv += ["--last", last] if last else []
        argv += ["--shard", shard] if shard else []
        argv += ["--key", key] if key else []
        return document({"records": await runner.call(argv, lines=True)})

    @server.tool(
        description=f"Live heat per shard for `seconds` (at most {MAX_HEAT_SECONDS}): rates, utilisation, top "
        "keys. Costs: reads every shard with GetRecords for that long (its 5 reads/s are shared)."
    )
    async def heat(stream: StreamName, seconds: Annotated[int, Field(ge=1, le=MAX_HEAT_SECONDS)] = 10) -> str:
        return document(await runner.call(["heat", stream, "--seconds", str(seconds)]))

    @server.tool(description="EFO consumers and KCL leases: owner, lag and state per shard. Costs: lease-table scans.")
    async def consumers_lag(stream: StreamName) -> str:
        return document(await runner.call(["consumers", "lag", stream]))

    @server.tool(
        description="Shard count and plan that keep peak utilisation under a target. Costs: CloudWatch "
        "reads, or, where the server has no metrics, up to 100,000 records of the last hour read from each "
        "shard with GetRecords (sharing its 5 reads/s)."
    )
    async def recommend(stream: StreamName) -> str:
        return document(await runner.call(["recommend", stream]))

    @server.tool(
        description="The account's Kinesis settings (On-demand Advantage). Costs: one DescribeAccountSettings."
    )
    async def account() -> str:
        return document(await runner.call(["account"]))

    @server.tool(description="Channels that deliver a stream to S3 or S3 Tables. Costs: one list call.")
    async def channels() -> str:
        return document(await runner.call(["channels", "list"]))

    @server.resource(
        "kconsole://stream/{stream}/summary", mime_type="application/json", description="A stream's summary"
    )
    async def stream_summary(stream: str) -> str:
        return document(await runner.call(["stream", "describe", stream]))

    @server.resource("kconsole://action-log", mime_type="application/json", description="The newest action-log entries")
    async def action_log() -> str:
        from console.reshard.actionlog import ActionLog

        entries = await asyncio.to_thread(lambda: ActionLog.default().entries()[-ACTION_LOG_ENTRIES:])
        return document(entries)

    return server
