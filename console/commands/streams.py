"""`kconsole streams` and `kconsole shards STREAM [--open | --all] [--tree]`.

`streams` lists in one ListStreams page-through (its StreamSummaries give name, status, mode and
ARN), then fills in open shards, retention, encryption and today's settings with DescribeStreamSummary,
at most one per stream and DESCRIBE_CONCURRENCY at once, only for the streams the output shows
(--max-items) and only when it shows those fields (a --query that names none of them needs none).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.commands._stream_args import local_shard_count, validate_stream_name
from console.heat.fleet import (
    DESCRIBE_CONCURRENCY,
    FLEET_READ_COST,
    FLEET_REFRESH_S,
    RATE_WINDOW,
    SORTS,
    Fleet,
    FleetRow,
    StreamFacts,
    fleet_from,
    read_fleet_metrics,
    row_text,
    sort_rows,
)
from console.lifecycle.rules import parse_shard_count
from console.topology.model import StreamSummary
from console.words import counted

if TYPE_CHECKING:
    from console.backend.protocol import FleetBackend, StreamReads

if TYPE_CHECKING:  # `shards` alone draws lineage: `streams` starts without it
    from console.topology.lineage import Lineage


def register(subparsers: Subparsers, common: Parents) -> None:
    streams = subparsers.add_parser(
        "streams",
        parents=common,
        help=command_help("streams"),
        description="List the streams on the backend with status, capacity mode (PROVISIONED or ON_DEMAND), "
        "open shard count, retention, encryption and record distribution, with each stream's "
        "incoming rates, iterator age and throttles from CloudWatch. With --local the embedded server "
        "starts empty; kconsole --local --stream NAME streams creates NAME first.",
    )
    streams.add_argument(
        "--watch",
        action="store_true",
        help="refresh once a minute (CloudWatch's period) until Ctrl-C, worst streams first; with --json "
        "one JSON document a line per refresh",
    )
    streams.add_argument(
        "--sort",
        choices=SORTS,
        default="trouble",
        help="row order: trouble (throttling, then iterator age, then utilisation; the "
        "default), name, incoming (bytes/s) or age (iterator age)",
    )
    streams.set_defaults(handler=streams_command)

    shards = subparsers.add_parser(
        "shards",
        parents=common,
        help=command_help("shards"),
        description="List a stream's shards (hash keys as decimal strings) with parents and children. "
        "With --local, a missing stream is created first (4 shards, or --shards N).",
    )
    shards.add_argument("stream", metavar="STREAM", help="stream name")
    which = shards.add_mutually_exclusive_group()
    which.add_argument("--open", dest="which", action="store_const", const="open", help="only open shards")
    which.add_argument(
        "--all",
        dest="which",
        action="store_const",
        const="all",
        help="open and closed shards within retention (default)",
    )
    shards.add_argument("--tree", action="store_true", help="show the lineage as a tree (nested in --json)")
    # Same meaning as the top-level --shards; SUPPRESS keeps a value given before the command name.
    shards.add_argument(
        "--shards",
        type=parse_shard_count,
        default=argparse.SUPPRESS,
        metavar="N",
        help="with --local: shard count if the stream has to be created (default 4)",
    )
    shards.set_defaults(handler=shards_command, which="all")


# -- kconsole streams ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamsOptions:
    watch: bool = False
    sort: str = "trouble"  # one of SORTS
    stream: str | None = None  # the top-level --stream: created first on --local


def streams_command(args: argparse.Namespace) -> int:
    options = options_from(StreamsOptions, args)
    if getattr(args, "local", False):
        local_shard_count(args)  # a bad --shards is exit 2 before the embedded server starts
    if options.watch:
        return run_async(_watch_fleet(args, options))
    summaries, label, fleet = run_async(_fetch_fleet(args, options))
    rows = {row.name: row for row in fleet.rows}
    ordered = [rows[row.name] for row in sort_rows(fleet.rows, options.sort)]
    by_name = {summary.name: summary for summary in summaries}
    emit(
        args,
        [by_name[row.name].to_json() | row.to_json() for row in ordered],
        lambda: format_fleet(
            [(by_name[row.name], row) for row in ordered], label, fleet.problem, fleet.readers_unavailable
        ),
    )
    return 0


# What only DescribeStreamSummary tells (ListStreams' summaries give name, status, mode and ARN).
DESCRIBED_FIELDS = (
    "open_shard_count",
    "retention_hours",
    "encryption",
    "stream_id",
    "record_distribution",
    "max_record_size_kib",
    "warm_throughput",
    "consumer_count",
    "channel_count",
)


def needs_describe(args: Any) -> bool:
    query = getattr(args, "query", None)
    return query is None or any(name in query for name in DESCRIBED_FIELDS)


async def described(
    kinesis: StreamReads, listed: list[StreamSummary], *, describe: bool = True, shown: int | None = None
) -> list[StreamSummary]:
    """`listed` (sorted by name) with the first `shown` (all: None) described."""
    if not describe:
        return listed
    head = listed if shown is None else listed[:shown]
    found = await kinesis.describe_streams(head, concurrency=DESCRIBE_CONCURRENCY)
    return sorted(found, key=lambda s: s.name) + listed[len(head) :]


async def _fetch_fleet(args: argparse.Namespace, options: StreamsOptions) -> tuple[list[StreamSummary], str, Fleet]:
    """The streams and one read of their CloudWatch metrics, on one backend."""
    async with with_backend(args, stream=options.stream) as kinesis:
        summaries, fleet = await listed_fleet(
            kinesis, describe=needs_describe(args), shown=getattr(args, "max_items", None)
        )
        return summaries, kinesis.label, fleet


async def listed_fleet(
    kinesis: FleetBackend, *, describe: bool = True, shown: int | None = None, page_size: int = 100
) -> tuple[list[StreamSummary], Fleet]:
    """One ListStreams page-through, sorted by name, the first `shown` (all: None) described; and their
    rows. The metrics need only the names, so they are read while the streams are described: the two
    wait on the endpoint together, not one after the other."""
    listed = sorted(await kinesis.list_stream_summaries(page_size=page_size), key=lambda s: s.name)
    names = [summary.name for summary in listed]
    metrics = asyncio.ensure_future(read_fleet_metrics(kinesis, names))
    readers = asyncio.ensure_future(worst_readers(kinesis, names))
    try:
        summaries = await described(kinesis, listed, describe=describe, shown=shown)
    except BaseException:  # the describe's own error is the one to tell; the reads stop with it
        for read in (metrics, readers):
            read.cancel()
        await asyncio.gather(metrics, readers, return_exceptions=True)
        raise
    found = await readers
    fleet = fleet_from([StreamFacts.from_stream(s) for s in summaries], await metrics, found.worst if found else None)
    fleet.readers_unavailable = found.unavailable if found else ()
    return summaries, fleet


async def worst_readers(kinesis: FleetBackend, names: list[str]) -> Any:
    """Each stream's furthest-behind Lambda or Firehose reader (console.consumers.readers: a few calls
    for the whole region, not per stream); None from a backend without the readers' services."""
    from console.backend.protocol import READERS
    from console.consumers.readers import fleet_reader_lag

    if READERS not in getattr(kinesis, "capabilities", ()) or not names:
        return None
    return await fleet_reader_lag(kinesis, names)


async def _watch_fleet(
    args: argparse.Namespace, options: StreamsOptions, *, rounds: int | None = None, interval: float = FLEET_REFRESH_S
) -> int:
    """Refresh every `interval` seconds; a refresh starts only after the previous one ended. Each
    refresh is the table (a fresh screen on a terminal) or, with --json, one JSON document a line."""
    import sys
    import time

    async with with_backend(args) as kinesis:
        done = 0
        while rounds is None or done < rounds:
            started = time.monotonic()
            summaries, fleet = await listed_fleet(kinesis)
            by_name = {summary.name: summary for summary in summaries}
            ordered = sort_rows(fleet.rows, options.sort)
            stamp = time.strftime("%H:%M:%S")
            table = (
                f"{kinesis.label} at {stamp}, sorted by {options.sort}; refreshes every {interval:g} s, "
                "Ctrl-C stops\n"
                + format_fleet(
                    [(by_name[row.name], row) for row in ordered],
                    kinesis.label,
                    fleet.problem,
                    fleet.readers_unavailable,
                )
            )
            if sys.stdout.isatty() and getattr(args, "output", None) is None and not getattr(args, "json", False):
                sys.stdout.write("\x1b[H\x1b[2J")  # a fresh screen each refresh, like watch(1)
            emit(
                args, {"at": stamp, "streams": [by_name[row.name].to_json() | row.to_json() for row in ordered]}, table
            )
            done += 1
            if rounds is None or done < rounds:
                await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
    return 0


def format_fleet(
    pairs: list[tuple[StreamSummary, FleetRow]],
    label: str,
    problem: str | None,
    readers_unavailable: Sequence[str] = (),
) -> str:
    """The streams table with rates, iterator age, throttles and the trouble column; the readers'
    services that could not be listed in a line (unless CloudWatch itself, which their lag needs, failed)."""
    if not pairs:
        return f"no streams on {label}"
    header = (
        "NAME",
        "STATUS",
        "MODE",
        "OPEN SHARDS",
        "RETENTION",
        "ENCRYPTION",
        f"IN REC/S ({RATE_WINDOW.upper()})",
        f"IN KB/S ({RATE_WINDOW.upper()})",
        "LAST 30 MIN",
        "USED",
        "ITER AGE",
        "THROTTLED W/R",
        "EFO",
        "TROUBLE",
    )
    body = []
    for summary, row in pairs:
        cells = row_text(row, fleet_problem=problem)
        body.append(
            (
                summary.name,
                summary.status,
                cells.mode,
                cells.shards,
                f"{summary.retention_hours} h",
                summary.encryption,
                cells.records_per_s,
                cells.kib_per_s,
                cells.sparkline,
                cells.used,
                cells.iterator_age,
                cells.throttled,
                cells.consumers,
                ("! " if row.trouble else "") + cells.trouble,
            )
        )
    text = f"{render_table(header, body, right_aligned={3, 6, 7, 9, 10, 12})}\n{FLEET_READ_COST}"
    if problem:
        return f"{text}\nno metrics: {problem}"
    if readers_unavailable:
        return f"{text}\nreaders not checked: {'; '.join(readers_unavailable)}"
    return text


# -- kconsole shards -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardsOptions:
    stream: str
    which: Literal["open", "all"] = "all"
    tree: bool = False


def shards_command(args: argparse.Namespace) -> int:
    from console.topology.lineage import OPEN, Lineage

    options = options_from(ShardsOptions, args)
    stream = validate_stream_name(options.stream)
    if getattr(args, "local", False):
        local_shard_count(args)
    lineage, label = run_async(_fetch_lineage(args, stream))
    if options.which == "open":
        # Rebuilt from the open shards alone so the tree shows only them; links still name the parents.
        full = lineage
        lineage = Lineage.build(node.shard for node in full.nodes.values() if node.state == OPEN)
        rows = [full[node.shard_id].to_json() for node in lineage.nodes.values()]
    else:
        rows = lineage.rows()
    if lineage.problem:
        note(f"kconsole: warning: stream {stream!r}: {lineage.problem}")
    document: dict[str, Any] = {"stream": stream, "backend": label, "which": options.which, "problem": lineage.problem}
    if options.tree:
        document["tree"] = lineage.tree_json()
        emit(args, document, lambda: f"{_heading(stream, label, rows)}\n{lineage.render_tree()}")
    else:
        document["shards"] = rows
        emit(args, document, lambda: f"{_heading(stream, label, rows)}\n{format_shards(rows, lineage.problem)}")
    return 0


async def _fetch_lineage(args: Any, stream: str) -> tuple[Lineage, str]:
    from console.topology.lineage import Lineage

    async with with_backend(args, stream=stream) as kinesis:
        # Everything within retention, so closed parents and their links are shown; --open filters locally.
        shards = await kinesis.all_shards(stream)
        return Lineage.build(shards), kinesis.label


def _heading(stream: str, label: str, rows: list[dict[str, Any]]) -> str:
    from console.topology.lineage import OPEN

    open_count = sum(1 for row in rows if row["state"] == OPEN)
    return f"stream {stream} on {label}: {counted(len(rows), 'shard')} ({open_count} open)"


def format_shards(rows: list[dict[str, Any]], problem: str | None) -> str:
    header = (
        "SHARD ID",
        "STATE",
        "STARTING HASH KEY",
        "ENDING HASH KEY",
        "SHARE",
        "PARENT",
        "ADJACENT PARENT",
        "CHILDREN",
    )
    body = [
        (
            row["shard_id"],
            row["state"],
            row["starting_hash_key"],
            row["ending_hash_key"],
            f"{row['share'] * 100:.2f}%",
            row["parent_shard_id"] or "-",
            row["adjacent_parent_shard_id"] or "-",
            ",".join(row["children"]) or "-",
        )
        for row in rows
    ]
    text = render_table(header, body, right_aligned={2, 3, 4})
    return f"{text}\nproblem: {problem}" if problem else text
