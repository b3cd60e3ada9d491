"""`kconsole readers STREAM`: every reader of a stream, worst first (it only reads).

kconsole readers STREAM [--lease-table TABLE ...] [--scan-cap N] [--json]
kconsole readers disable|enable STREAM --mapping UUID [--yes]       (a Lambda mapping; a change)
kconsole readers replay STREAM --mapping UUID --from WHEN [--print] [--yes]
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._lease_args import validate_scan_cap, validate_table_name
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.commands._stream_args import local_shard_count, validate_stream_name
from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.readers import METRIC_WINDOW_MINUTES, Reader, ReadersReport
from console.errors import BadInput

if TYPE_CHECKING:
    from console.consumers.mappings import Made, MappingPlan


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "readers",
        parents=common,
        help=command_help("readers"),
        description="One row per reader of the stream, the furthest behind first: Lambda event source "
        "mappings (on the stream and on its EFO consumers), Firehose delivery streams, EventBridge "
        "Pipes, Managed Flink applications whose runtime properties name the stream (a heuristic), "
        "EFO consumers and KCL applications (their lease tables, found unless --lease-table is "
        "given). Each row: state and why, time behind (CloudWatch, the last "
        f"{METRIC_WINDOW_MINUTES} minutes; records too for KCL), errors and the settings that explain "
        "it. A service the endpoint lacks, or a missing permission, is one line instead of its rows. "
        "Only reads.",
    )
    parser.add_argument(
        "words",
        nargs="+",
        metavar="[disable|enable|replay] STREAM",
        help="the stream; `disable|enable STREAM --mapping UUID` pauses or resumes a Lambda mapping, "
        "`replay STREAM --mapping UUID --from WHEN` starts a new one from WHEN and disables the old",
    )
    parser.add_argument("--mapping", metavar="UUID", help="disable|enable|replay: the Lambda event source mapping")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="WHEN",
        help="replay: trim-horizon, latest, an ISO-8601 time or a duration back (--from=-1h)",
    )
    parser.add_argument(
        "--print", action="store_true", help="replay, disable, enable: print the `aws lambda` commands instead"
    )
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
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


MAPPING_ACTIONS = ("disable", "enable", "replay")


@dataclass(frozen=True)
class ReadersOptions:
    words: list[str]  # STREAM, or disable|enable|replay STREAM
    mapping: str | None = None  # disable|enable|replay: the Lambda mapping's UUID
    start: str | None = None  # replay's --from
    print: bool = False  # disable|enable|replay: the `aws lambda` commands instead
    lease_table: list[str] | None = None
    scan_cap: int = DEFAULT_SCAN_CAP


def run_readers(args: argparse.Namespace) -> int:
    options = options_from(ReadersOptions, args)
    words = options.words
    if words[0] in MAPPING_ACTIONS:
        if len(words) != 2:
            raise BadInput(f"usage: kconsole readers {words[0]} STREAM --mapping UUID", code="usage")
        return run_mapping_change(args, options, words[0], validate_stream_name(words[1]))
    if len(words) != 1:
        raise BadInput(
            f"readers takes one STREAM (or disable|enable|replay STREAM); got {' '.join(words)!r}", code="usage"
        )
    if options.mapping or options.start or options.print or args.yes:
        raise BadInput("--mapping, --from, --print and --yes apply to readers disable|enable|replay", code="usage")
    stream = validate_stream_name(words[0])
    validate_scan_cap(options.scan_cap)
    for table in options.lease_table or ():
        validate_table_name(table)
    if getattr(args, "local", False):
        local_shard_count(args)  # a bad --shards is exit 2 before the embedded server starts
    report = run_async(_report(args, options, stream))
    emit(args, report.to_json(), lambda: render_readers(report))
    return 0


async def _report(args: argparse.Namespace, options: ReadersOptions, stream: str) -> ReadersReport:
    from console.consumers.readers import readers_report

    async with with_backend(args, stream=stream) as backend:
        return await readers_report(backend, stream, lease_tables=options.lease_table, scan_cap=options.scan_cap)


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


# ---- disable / enable / replay a Lambda mapping ---------------------------------------------------

_UUID = re.compile(r"^[0-9a-fA-F-]{8,64}$")


def run_mapping_change(args: argparse.Namespace, options: ReadersOptions, action: str, stream: str) -> int:
    mapping = options.mapping
    if not mapping or not _UUID.match(mapping):
        raise BadInput(f"readers {action} needs --mapping UUID (as `kconsole readers STREAM` shows it)", code="usage")
    if (action == "replay") != (options.start is not None):
        raise BadInput("--from WHEN applies to readers replay, and replay needs it", code="usage")
    if not options.print:
        refuse_if_read_only(args, f"{action} Lambda mapping {mapping} on {stream}")
    plan, made = run_async(_mapping_change(args, options, action, stream, mapping))
    if options.print:
        emit(args, plan.to_json(), "\n".join(plan.aws_commands()) or f"# {plan.summary}")
        return 0
    document = plan.to_json() | {
        "made": [
            {"operation": m.call.operation, "outcome": m.change.outcome, "reply_lost": m.change.reply_lost}
            | ({"new_mapping": m.answer.get("UUID")} if m.answer and m.call.operation.startswith("Create") else {})
            for m in made
        ]
    }
    done = [f"{m.call.describe()}: {m.change.outcome}" for m in made]
    emit(args, document, "\n".join(plan.lines() + done))
    return 0


async def _mapping_change(
    args: argparse.Namespace, options: ReadersOptions, action: str, stream: str, mapping: str
) -> tuple[MappingPlan, list[Made]]:
    from console.consumers import mappings
    from console.consumers.rewind import parse_target
    from console.lifecycle.actions import actor
    from console.reshard.actionlog import ActionLog

    async with with_backend(args, stream=stream) as backend:
        if action == "replay":
            target = parse_target([options.start or ""], datetime.now(UTC))
            if target.kind == "sequences":
                raise BadInput(
                    "--from takes trim-horizon, latest or a time: Lambda starts a mapping at no sequence number"
                )
            position = {"trim-horizon": "TRIM_HORIZON", "latest": "LATEST"}.get(target.kind, "AT_TIMESTAMP")
            plan = await mappings.prepare_replay(backend, stream, mapping, position, target.moment)
        else:
            plan = await mappings.prepare_toggle(backend, stream, mapping, enable=action == "enable")
        if options.print or not plan.calls:
            return plan, []
        confirm_by_stream_name(
            args,
            change=f"{action} Lambda mapping {mapping}",
            consequence=plan.summary,
            preview="\n".join(plan.lines()),
            stream=stream,
        )
        made = await mappings.run(
            backend,
            plan,
            action_log=ActionLog.default(),
            who=await actor(backend),
            progress=lambda t: note(f"kconsole: {t}"),
        )
        return plan, made
