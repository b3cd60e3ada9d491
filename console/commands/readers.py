"""`kconsole readers STREAM`: every reader of a stream, worst first (it only reads).

kconsole readers STREAM [--lease-table TABLE ...] [--scan-cap N] [--json]
"""

from __future__ import annotations

import argparse
import contextlib

from console.commands._output import emit, render_table, run_async
from console.commands._stream_args import ensure_local_stream, local_shard_count, validate_stream_name
from console.commands.consumers import validate_scan_cap, validate_table_name
from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.readers import METRIC_WINDOW_MINUTES, Reader, ReadersReport


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "readers",
        parents=common,
        help="every reader of a stream, worst first: Lambda, Firehose, Pipes, Flink, EFO, KCL",
        description="One row per reader of the stream, the furthest behind first: Lambda event source "
        "mappings (on the stream and on its EFO consumers), Firehose delivery streams, EventBridge "
        "Pipes, Managed Flink applications whose runtime properties name the stream (a heuristic), "
        "EFO consumers and KCL applications (their lease tables, found unless --lease-table is "
        "given). Each row: state and why, time behind (CloudWatch, the last "
        f"{METRIC_WINDOW_MINUTES} minutes; records too for KCL), errors and the settings that explain "
        "it. A service the endpoint lacks, or a missing permission, is one line instead of its rows. "
        "Only reads.",
    )
    parser.add_argument("stream", metavar="STREAM")
    parser.add_argument(
        "--lease-table",
        action="append",
        metavar="TABLE",
        help="a KCL application's lease table (repeat for several); without it every lease table of the "
        "stream is looked for",
    )
    parser.add_argument(
        "--scan-cap",
        type=int,
        default=DEFAULT_SCAN_CAP,
        metavar="N",
        help=f"KCL: count at most N records behind per shard (default {DEFAULT_SCAN_CAP:,})",
    )
    parser.set_defaults(handler=run_readers)


def run_readers(args: argparse.Namespace) -> int:
    validate_stream_name(args.stream)
    validate_scan_cap(args.scan_cap)
    for table in args.lease_table or ():
        validate_table_name(table)
    if getattr(args, "local", False):
        local_shard_count(args)  # a bad --shards is exit 2 before the embedded server starts
    report = run_async(_report(args))
    emit(args, report.to_json(), lambda: render_readers(report))
    return 0


@contextlib.asynccontextmanager
async def _open(args: argparse.Namespace):
    from console.backend import BackendConfig, open_backend

    config = BackendConfig.from_args(args)
    async with open_backend(config) as backend:
        if config.kind == "local":
            await ensure_local_stream(backend, args.stream, args)
        yield backend


async def _report(args: argparse.Namespace) -> ReadersReport:
    from console.consumers.readers import readers_report

    async with _open(args) as backend:
        return await readers_report(backend, args.stream, lease_tables=args.lease_table, scan_cap=args.scan_cap)


def settings_text(reader: Reader) -> str:
    """The settings that are set, as `name=value` pairs (render_table escapes every cell)."""
    shown = []
    for name, value in reader.settings.items():
        if value is None or value is False or value == [] or name in ("found", "lag"):
            continue
        if isinstance(value, list):
            value = ",".join(str(item) for item in value)
        shown.append(f"{name}={value}")
    return " ".join(shown)


def render_readers(report: ReadersReport) -> str:
    lines = [f"stream {report.stream}: {len(report.readers)} reader(s), worst first"]
    if report.readers:
        lines.append(
            render_table(
                ("KIND", "NAME", "STATE", "BEHIND", "ERRORS", "WHY", "SETTINGS"),
                [
                    (
                        reader.kind + (" ~" if reader.heuristic else ""),
                        reader.name + (f" (via {reader.via})" if reader.via else ""),
                        reader.state,
                        reader.behind_text(),
                        reader.errors or "",
                        reader.reason or "",
                        settings_text(reader),
                    )
                    for reader in report.readers
                ],
            )
        )
    if any(reader.heuristic for reader in report.readers):
        lines.append("~ a Flink application whose runtime properties name the stream; its source is in its code")
    if any(reader.kind == "pipe" for reader in report.readers):
        lines.append("Pipes publish no iterator age: their lag is unknown")
    lines.extend(f"unavailable: {line}" for line in report.unavailable)
    return "\n".join(lines)
