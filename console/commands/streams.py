"""`kconsole streams` and `kconsole shards STREAM [--open | --all] [--tree]`.

`streams` lists in one ListStreams page-through (its StreamSummaries give name, status, mode and
ARN), then fills in open shards, retention, encryption and today's settings with DescribeStreamSummary,
at most one per stream and DESCRIBE_CONCURRENCY at once, only for the streams the output shows
(--max-items) and only when it shows those fields (a --query that names none of them needs none).
"""

from __future__ import annotations

import argparse
from typing import Any

from console.commands import command_help
from console.commands._output import emit, note, render_table, run_async
from console.commands._stream_args import ensure_local_stream, local_shard_count, validate_stream_name
from console.lifecycle.rules import parse_shard_count
from console.topology.lineage import OPEN, Lineage
from console.topology.model import StreamSummary


def register(subparsers, common) -> None:
    streams = subparsers.add_parser(
        "streams", parents=common, help=command_help("streams"),
        description="List the streams on the backend with status, capacity mode (PROVISIONED or ON_DEMAND), "
                    "open shard count, retention, encryption and record distribution. With --local the embedded "
                    "server starts empty; kconsole --local --stream NAME streams creates NAME first.")
    streams.set_defaults(handler=streams_command)

    shards = subparsers.add_parser(
        "shards", parents=common,
        help=command_help("shards"),
        description="List a stream's shards (hash keys as decimal strings) with parents and children. "
                    "With --local, a missing stream is created first (4 shards, or --shards N).")
    shards.add_argument("stream", metavar="STREAM", help="stream name")
    which = shards.add_mutually_exclusive_group()
    which.add_argument("--open", dest="which", action="store_const", const="open", help="only open shards")
    which.add_argument("--all", dest="which", action="store_const", const="all",
                       help="open and closed shards within retention (default)")
    shards.add_argument("--tree", action="store_true", help="show the lineage as a tree (nested in --json)")
    # Same meaning as the top-level --shards; SUPPRESS keeps a value given before the command name.
    shards.add_argument("--shards", type=parse_shard_count, default=argparse.SUPPRESS, metavar="N",
                        help="with --local: shard count if the stream has to be created (default 4)")
    shards.set_defaults(handler=shards_command, which="all")


# -- kconsole streams ------------------------------------------------------------------------------

def streams_command(args: Any) -> int:
    if getattr(args, "local", False):
        local_shard_count(args)  # a bad --shards is exit 2 before the embedded server starts
    summaries, label = run_async(_fetch_streams(args))
    emit(args, [summary.to_json() for summary in summaries], lambda: format_streams(summaries, label))
    return 0


DESCRIBE_CONCURRENCY = 16
# What only DescribeStreamSummary tells (ListStreams' summaries give name, status, mode and ARN).
DESCRIBED_FIELDS = ("open_shard_count", "retention_hours", "encryption", "stream_id", "record_distribution",
                    "max_record_size_kib", "warm_throughput", "consumer_count", "channel_count")


def needs_describe(args: Any) -> bool:
    query = getattr(args, "query", None)
    return query is None or any(name in query for name in DESCRIBED_FIELDS)


async def _fetch_streams(args: Any) -> tuple[list[StreamSummary], str]:
    from console.backend import BackendConfig, open_backend

    config = BackendConfig.from_args(args)
    async with open_backend(config) as kinesis:
        wanted = getattr(args, "stream", None)
        if config.kind == "local" and wanted:
            await ensure_local_stream(kinesis, wanted, args)
        summaries = await list_streams(kinesis, describe=needs_describe(args), shown=getattr(args, "max_items", None))
        return summaries, kinesis.label


async def list_streams(kinesis: Any, *, describe: bool = True, shown: int | None = None,
                       page_size: int = 100) -> list[StreamSummary]:
    """One ListStreams page-through, sorted by name; the first `shown` (all: None) described."""
    listed = sorted(await kinesis.list_stream_summaries(page_size=page_size), key=lambda s: s.name)
    if not describe:
        return listed
    head = listed if shown is None else listed[:shown]
    described = await kinesis.describe_streams(head, concurrency=DESCRIBE_CONCURRENCY)
    return sorted(described, key=lambda s: s.name) + listed[len(head):]


def format_streams(summaries: list[StreamSummary], label: str) -> str:
    if not summaries:
        return f"no streams on {label}"
    header = ("NAME", "STATUS", "MODE", "OPEN SHARDS", "RETENTION", "ENCRYPTION", "DISTRIBUTION")
    rows = [(s.name, s.status, s.mode, "-" if s.open_shard_count is None else str(s.open_shard_count),
             f"{s.retention_hours} h" if s.retention_hours else "-", s.encryption,
             "AUTO" if s.auto_distribution else "by key") for s in summaries]
    return render_table(header, rows, right_aligned={3})


# -- kconsole shards -------------------------------------------------------------------------------

def shards_command(args: Any) -> int:
    stream = validate_stream_name(args.stream)
    if getattr(args, "local", False):
        local_shard_count(args)
    lineage, label = run_async(_fetch_lineage(args, stream))
    if args.which == "open":
        # Rebuilt from the open shards alone so the tree shows only them; links still name the parents.
        full = lineage
        lineage = Lineage.build(node.shard for node in full.nodes.values() if node.state == OPEN)
        rows = [full[node.shard_id].to_json() for node in lineage.nodes.values()]
    else:
        rows = lineage.rows()
    if lineage.problem:
        note(f"kconsole: warning: stream {stream!r}: {lineage.problem}")
    document: dict[str, Any] = {"stream": stream, "backend": label, "which": args.which, "problem": lineage.problem}
    if args.tree:
        document["tree"] = lineage.tree_json()
        emit(args, document, lambda: f"{_heading(stream, label, rows)}\n{lineage.render_tree()}")
    else:
        document["shards"] = rows
        emit(args, document, lambda: f"{_heading(stream, label, rows)}\n{format_shards(rows, lineage.problem)}")
    return 0


async def _fetch_lineage(args: Any, stream: str) -> tuple[Lineage, str]:
    from console.backend import BackendConfig, open_backend

    config = BackendConfig.from_args(args)
    async with open_backend(config) as kinesis:
        if config.kind == "local":
            await ensure_local_stream(kinesis, stream, args)
        # Everything within retention, so closed parents and their links are shown; --open filters locally.
        shards = await kinesis.all_shards(stream)
        return Lineage.build(shards), kinesis.label


def _heading(stream: str, label: str, rows: list[dict]) -> str:
    open_count = sum(1 for row in rows if row["state"] == OPEN)
    return f"stream {stream} on {label}: {len(rows)} shards ({open_count} open)"


def format_shards(rows: list[dict], problem: str | None) -> str:
    header = ("SHARD ID", "STATE", "STARTING HASH KEY", "ENDING HASH KEY", "SHARE",
              "PARENT", "ADJACENT PARENT", "CHILDREN")
    body = [(row["shard_id"], row["state"], row["starting_hash_key"], row["ending_hash_key"],
             f"{row['share'] * 100:.2f}%", row["parent_shard_id"] or "-", row["adjacent_parent_shard_id"] or "-",
             ",".join(row["children"]) or "-") for row in rows]
    text = render_table(header, body, right_aligned={2, 3, 4})
    return f"{text}\nproblem: {problem}" if problem else text

