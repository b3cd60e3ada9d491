"""`kconsole consumers` (who reads a stream, how far behind) and `kconsole recommend` (how many shards).

kconsole consumers STREAM [--lease-table TABLE | --find-lease-tables] [--scan-cap N] [--watch S] [--json]
kconsole consumers STREAM --lease-table TABLE --workers [--all-streams] [--json]   (KCL workers, leader)
kconsole consumers register STREAM --name NAME [--yes]      (EFO; a change: confirmation, --read-only)
kconsole consumers deregister STREAM --name NAME [--yes]
kconsole consumers rewind STREAM --lease-table T --to WHEN [--shard ID...] [--watch S] [--plan] [--yes]
kconsole consumers rewind --undo ACTION-ID [--watch S] [--yes]
kconsole consumers skip STREAM --lease-table T --shard ID --sequence SEQ [--yes]
kconsole consumers clone STREAM --lease-table T --to-table NEW [--yes]
kconsole consumers checkpoints export|import STREAM FILE --lease-table T [--yes]
kconsole recommend STREAM [--window 1h] [--target 70] [--shared-readers N] [--source auto|cloudwatch|sample]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._consumers_options import ConsumersOptions
from console.commands._lease_args import validate_scan_cap, validate_table_name
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.commands._stream_args import local_shard_count, validate_stream_name
from console.consumers.lag import DEFAULT_SCAN_CAP
from console.consumers.recommend import DEFAULT_WINDOW_CAP, Recommendation, ShardLoad, recommend, window_peaks
from console.consumers.report import ConsumerReport, StallTracker, format_millis
from console.errors import BadInput
from console.read.efo import is_temporary_consumer
from console.topology.model import EfoConsumer
from console.words import counted, plain_number

ACTIONS = ("register", "deregister")
CHECKPOINT_ACTIONS = ("rewind", "skip", "clone", "checkpoints")
_CONSUMER_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")  # Kinesis's consumer-name rule
MAX_WATCH_SECONDS = 300.0
MIN_WINDOW, MAX_WINDOW = 60, 14 * 24 * 3600  # CloudWatch keeps 1-minute data points for 15 days
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "consumers",
        parents=common,
        help=command_help("consumers"),
        description="List a stream's enhanced fan-out consumers and, with a KCL lease table, every lease: "
        "owner, checkpoint, records and time behind, state (owned, unowned, stalled, finished), "
        "and the open shards with no lease. `consumers register|deregister STREAM --name NAME` "
        "changes the EFO registrations (asks first). `consumers rewind|skip|clone|checkpoints` move a KCL "
        "application's checkpoints: planned first, refused while the application runs, logged, undoable.",
    )
    parser.add_argument(
        "words",
        nargs="+",
        metavar="[register|deregister|rewind|skip|clone|checkpoints export|import] STREAM",
        help="the stream; `register STREAM` or `deregister STREAM` with --name changes its EFO consumers; "
        "`rewind`, `skip`, `clone` and `checkpoints export|import STREAM FILE` move a KCL application's "
        "checkpoints (see --to, --shard, --sequence, --to-table, --undo)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--lease-table", metavar="TABLE", help="the KCL application's DynamoDB lease table")
    which.add_argument(
        "--find-lease-tables", action="store_true", help="list the DynamoDB tables holding KCL leases of this stream"
    )
    parser.add_argument(
        "--scan-cap",
        type=int,
        default=DEFAULT_SCAN_CAP,
        metavar="N",
        help=f"count at most N records behind per shard (default {DEFAULT_SCAN_CAP:,}); more is shown as over the cap",
    )
    parser.add_argument(
        "--watch",
        type=float,
        default=None,
        metavar="S",
        help="read the lease table twice, S seconds apart, to find stalled leases (a counter "
        "that does not move while records wait); rewind, skip, undo and import: how long to watch for a "
        "running application before writing (default 10, the KCL's failoverTimeMillis)",
    )
    parser.add_argument(
        "--to",
        action="append",
        metavar="WHEN",
        help="rewind: trim-horizon, latest, an ISO-8601 time, -DURATION (e.g. -1h), or shardId-…=SEQ "
        "(repeatable; SEQ is the record read next)",
    )
    parser.add_argument("--shard", action="append", metavar="ID", help="rewind: only these shards; skip: the shard")
    parser.add_argument("--sequence", metavar="SEQ", help="skip: the record to move past (its sequence number)")
    parser.add_argument("--to-table", metavar="NEW", help="clone: the new application's lease table")
    parser.add_argument("--undo", metavar="ACTION-ID", help="rewind: put back the checkpoints an earlier change moved")
    parser.add_argument(
        "--plan", action="store_true", help="rewind, skip, clone, import: show the plan and change nothing"
    )
    parser.add_argument(
        "--workers",
        action="store_true",
        help="with --lease-table: one row per KCL worker (leases open/closed, throughput, CPU, "
        "metrics age, leader, flags) from the lease table and KCL 3.x's worker-metrics "
        "and coordinator state, in either layout",
    )
    parser.add_argument(
        "--all-streams",
        action="store_true",
        help="multi-stream lease tables: list the other streams' leases and count them in the workers' rows",
    )
    parser.add_argument("--name", metavar="NAME", help="register/deregister: the EFO consumer's name")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
    parser.set_defaults(handler=run_consumers)

    rec = subparsers.add_parser(
        "recommend",
        parents=common,
        help=command_help("recommend"),
        description="From each open shard's observed peak (CloudWatch shard-level metrics when enhanced "
        "monitoring is on, else the window's records) against 1 MiB/s and 1,000 records/s written "
        "and 2 MiB/s read, the shard count and the `kconsole plan` lines that bring peak "
        "utilisation under the target.",
    )
    rec.add_argument("stream", metavar="STREAM")
    rec.add_argument(
        "--window", default="1h", metavar="DURATION", help="how far back to look: 90s, 15m, 1h, 2d (default 1h)"
    )
    rec.add_argument(
        "--target", type=float, default=70.0, metavar="PERCENT", help="peak utilisation to stay under (default 70)"
    )
    rec.add_argument(
        "--shared-readers",
        type=int,
        default=1,
        metavar="N",
        help="polling (shared-throughput) consumers; each reads every byte (default 1)",
    )
    rec.add_argument(
        "--source",
        choices=("auto", "cloudwatch", "sample"),
        default="auto",
        help="auto: CloudWatch when the stream has shard-level metrics, else read the window",
    )
    rec.add_argument(
        "--scan-cap",
        type=int,
        default=DEFAULT_WINDOW_CAP,
        metavar="N",
        help=f"with the sample source: records read per shard at most (default {DEFAULT_WINDOW_CAP:,})",
    )
    rec.set_defaults(handler=run_recommend)


# ---- arguments -----------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    match = _DURATION.match((text or "").strip().lower())
    seconds = float(match.group(1)) * _UNIT[match.group(2)] if match else None
    if seconds is None or not MIN_WINDOW <= seconds <= MAX_WINDOW:
        raise BadInput(f"--window must be a duration from 60s to 14d (e.g. 15m, 1h, 2d); got {text!r}", code="usage")
    return seconds


def _consumers_target(options: ConsumersOptions) -> tuple[str | None, str]:
    words = options.words
    if words[0] in CHECKPOINT_ACTIONS:
        return words[0], ""
    if words[0] in ACTIONS:
        if len(words) != 2:
            raise BadInput(f"usage: kconsole consumers {words[0]} STREAM --name NAME", code="usage")
        return words[0], validate_stream_name(words[1])
    if len(words) != 1:
        raise BadInput(
            f"consumers takes one STREAM (or register|deregister STREAM); got {' '.join(words)!r}", code="usage"
        )
    return None, validate_stream_name(words[0])


# ---- kconsole consumers --------------------------------------------------------------------------


def run_consumers(args: argparse.Namespace) -> int:
    options = options_from(ConsumersOptions, args)
    action, stream = _consumers_target(options)
    options = replace(options, stream_name=stream)
    if action in CHECKPOINT_ACTIONS:
        from console.commands.checkpoints import run_checkpoints

        return run_checkpoints(args, options, action)
    if action:
        return run_registration(args, options, action)
    for option in ("to", "shard", "sequence", "to_table", "undo"):
        if getattr(options, option) is not None:
            raise BadInput(f"--{option.replace('_', '-')} only applies to consumers rewind|skip|clone", code="usage")
    if options.plan:
        raise BadInput("--plan only applies to consumers rewind|skip|clone|checkpoints import", code="usage")
    if options.name is not None or args.yes:
        raise BadInput("--name and --yes only apply to consumers register|deregister", code="usage")
    validate_scan_cap(options.scan_cap)
    if getattr(args, "local", False):
        local_shard_count(args)  # a bad --shards is exit 2 before the embedded server starts
    if options.lease_table is not None:
        validate_table_name(options.lease_table)
    if options.watch is not None:
        if options.lease_table is None:
            raise BadInput("--watch needs --lease-table (stalls are read from lease counters)", code="usage")
        if not math.isfinite(options.watch) or not 0 < options.watch <= MAX_WATCH_SECONDS:
            raise BadInput(
                f"--watch must be above 0 and at most {MAX_WATCH_SECONDS:g} seconds; got {plain_number(options.watch)}",
                code="usage",
            )
    if (options.workers or options.all_streams) and options.lease_table is None:
        raise BadInput(
            "--workers and --all-streams need --lease-table TABLE (find it with --find-lease-tables)", code="usage"
        )
    if options.find_lease_tables:
        tables, kcl = run_async(_find_tables(args, options))
        emit(
            args,
            {"stream": options.stream_name, "lease_tables": tables, "kcl_tables": [k.to_json() for k in kcl]},
            "\n".join(k.describe() for k in kcl)
            if tables
            else f"no DynamoDB table here holds KCL leases of {options.stream_name}",
        )
        return 0
    report, workers = run_async(_report(args, options))
    document = report.to_json()
    if workers is not None:
        document |= (
            workers.to_json()
            if options.workers
            else {
                "other_streams": dict(workers.other_streams),
                **({"other_stream_leases": workers.to_json()["other_stream_leases"]} if options.all_streams else {}),
            }
        )
    emit(args, document, lambda: render_report(report, workers, show_workers=options.workers))
    return 0


async def _find_tables(args: argparse.Namespace, options: ConsumersOptions) -> tuple[list[str], list[Any]]:
    from console.consumers.look import find_lease_tables
    from console.consumers.workers import kcl_tables_of

    async with with_backend(args, stream=options.stream_name) as backend:
        shards = await backend.all_shards(options.stream_name)
        tables = await find_lease_tables(backend, options.stream_name, shards)
        names = await backend.table_names() if tables else []
        return tables, [await kcl_tables_of(backend, table, names) for table in tables]


async def _report(args: argparse.Namespace, options: ConsumersOptions) -> tuple[ConsumerReport, Any]:
    from console.consumers.look import consumer_report
    from console.consumers.throughput import ShardThroughputMeter
    from console.consumers.workers import check_lease_table, read_workers
    from console.read.share import ReadShare, share_for_endpoint

    async with with_backend(args, stream=options.stream_name) as backend:
        if options.lease_table is not None:
            await check_lease_table(backend, options.lease_table)
        tracker = StallTracker()
        shards = await backend.all_shards(options.stream_name)
        report = await consumer_report(
            backend,
            options.stream_name,
            lease_table=options.lease_table,
            cap=options.scan_cap,
            tracker=tracker,
            shards=shards,
        )
        if options.watch:
            note(f"reading the lease table again in {options.watch:g} s to find stalled leases...")
            await asyncio.sleep(options.watch)
            report = await consumer_report(
                backend,
                options.stream_name,
                lease_table=options.lease_table,
                cap=options.scan_cap,
                tracker=tracker,
                shards=shards,
            )
        workers = None
        # Shards without metrics are sampled with GetRecords, within kconsole's share of their budget.
        share = share_for_endpoint(None, local=getattr(args, "local", False), endpoint_url=args.endpoint_url)
        meter = ShardThroughputMeter(backend, options.stream_name, clock=time.monotonic, read_share=ReadShare(share))
        if options.lease_table is not None:  # also for the one line naming other streams' leases
            workers = await read_workers(
                backend,
                options.lease_table,
                options.stream_name,
                open_shard_ids=[s.shard_id for s in shards if s.is_open],
                now=time.time(),
                all_streams=options.all_streams,
                meter=meter if options.workers else None,
            )
        return report, workers


def render_workers(view: Any) -> list[str]:
    """The workers section: a row per worker, then the layout, leader, migration and other streams."""
    lines = []
    rows = [row.cells() for row in view.rows]
    if rows:
        lines.append(
            render_table(
                ("WORKER", "LEASES", "OPEN", "KB/S", "CPU", "METRICS AGE", "", "FLAGS"),
                rows,
                right_aligned={1, 2, 3, 4, 5},
            )
        )
    else:
        lines.append("no workers: no lease has an owner and no worker reported metrics")
    lines.extend(view.summary_lines())
    if view.other_leases:
        lines.append(render_table(("OTHER STREAM", "SHARD", "OWNER", "CHECKPOINT"), view.other_lease_rows()))
    return lines


def render_report(report: ConsumerReport, workers: Any = None, *, show_workers: bool = True) -> str:
    lines = [
        f"stream {report.stream}: "
        + ("EFO consumers unknown" if report.efo_unknown else f"{len(report.efo_consumers)} EFO consumer(s)")
        + (f", {len(report.rows)} lease(s) in {report.lease_table}" if report.lease_table else "")
    ]
    if report.efo_unknown:
        lines.append(f"EFO consumers unknown: {report.efo_unknown}")
    if report.efo_consumers:
        lines.append(
            render_table(
                ("EFO CONSUMER", "STATUS", "CREATED", "ARN"),
                [
                    (
                        f"{c.name} (kconsole's own, temporary)" if is_temporary_consumer(c.name) else c.name,
                        c.status,
                        c.created_iso,
                        c.arn,
                    )
                    for c in report.efo_consumers
                ],
            )
        )
    if report.lease_table is None:
        lines.append("(KCL leases: pass --lease-table TABLE, or find it with --find-lease-tables)")
        return "\n".join(lines)
    # render_table (and emit) escape every cell: owners, checkpoints and problems come from the lease table
    rows = [
        (
            row.shard_id,
            row.state,
            row.lease.owner or "-",
            row.lease.checkpoint or "-",
            row.records_text(report.scan_cap),
            format_millis(row.millis_behind),
            f"! {row.problem}" if row.problem else "",
        )
        for row in report.rows
    ]
    if rows:
        lines.append(
            render_table(
                ("SHARD", "STATE", "OWNER", "CHECKPOINT", "RECORDS BEHIND", "TIME BEHIND", ""),
                rows,
                right_aligned={4, 5},
            )
        )
    for shard_id in report.unleased_shards:
        parents = report.waiting_on_parents.get(shard_id)
        why = f" (waits for {', '.join(parents)} to reach SHARD_END)" if parents else ""
        lines.append(f"no lease: {shard_id}{why}")
    if report.problems:
        lines.append(f"{len(report.problems)} lease(s) marked ! could not be measured")
    if workers is not None and show_workers:
        lines.extend(render_workers(workers))
    elif workers is not None and workers.other_streams_line():
        lines.append(workers.other_streams_line())
        if workers.other_leases:
            lines.append(render_table(("OTHER STREAM", "SHARD", "OWNER", "CHECKPOINT"), workers.other_lease_rows()))
    return "\n".join(lines)


# ---- register / deregister -----------------------------------------------------------------------


def run_registration(args: argparse.Namespace, options: ConsumersOptions, action: str) -> int:
    name = options.name
    if not name or not _CONSUMER_NAME.match(name):
        raise BadInput(
            f"consumers {action} needs --name NAME (1 to 128 of a-z A-Z 0-9 _ . -); got {name!r}", code="usage"
        )
    refuse_if_read_only(args, f"{action} consumer {name} on {options.stream_name}")
    document = run_async(_registration(args, options.stream_name, name, action))
    emit(
        args,
        document,
        f"{'registered' if action == 'register' else 'deregistering'} EFO consumer "
        f"{name} on {options.stream_name}: {document['status']}",
    )
    return 0


async def _registration(args: argparse.Namespace, stream: str, name: str, action: str) -> dict[str, Any]:
    """Prepared and run by console.lifecycle.actions: the plan says what changes, the stream name
    confirms it, the call goes through the action log (a lost reply settled by listing the consumers)."""
    from console.lifecycle import actions
    from console.reshard.actionlog import ActionLog

    async with with_backend(args, stream=stream) as backend:
        prepare = actions.prepare_register_consumer if action == "register" else actions.prepare_deregister_consumer
        plan = await prepare(backend, stream, name)
        confirm_by_stream_name(
            args,
            change=f"{action} consumer {name} on {stream}",
            consequence=plan.summary,
            preview=plan.render(),
            stream=stream,
        )
        made = await actions.run(
            backend,
            plan,
            action_log=ActionLog.default(),
            progress=lambda text: None if text.startswith("calling") else note(f"kconsole: {text}"),
        )
        reply_lost = made[0].change.reply_lost
        if action == "deregister":
            return {"action": action, "name": name, "status": "DELETING", "arn": None, "reply_lost": reply_lost}
        registered: EfoConsumer | None = made[0].answer or next(
            (c for c in await backend.list_stream_consumers(plan.calls[0].parameters["StreamARN"]) if c.name == name),
            None,
        )
    return {
        "action": action,
        "name": name,
        "status": registered.status if registered else "CREATING",
        "arn": registered.arn if registered else None,
        "reply_lost": reply_lost,
    }


# ---- kconsole recommend --------------------------------------------------------------------------


@dataclass(frozen=True)
class RecommendOptions:
    stream: str
    window: str = "1h"
    target: float = 70.0  # percent
    shared_readers: int = 1
    source: str = "auto"  # auto, cloudwatch or sample
    scan_cap: int = DEFAULT_WINDOW_CAP


def run_recommend(args: argparse.Namespace) -> int:
    options = options_from(RecommendOptions, args)
    validate_stream_name(options.stream)
    window = parse_duration(options.window)
    if not math.isfinite(options.target) or not 1 <= options.target <= 100:
        raise BadInput(f"--target must be a percentage from 1 to 100; got {plain_number(options.target)}", code="usage")
    if not 0 <= options.shared_readers <= 20:
        raise BadInput(f"--shared-readers must be from 0 to 20; got {options.shared_readers}", code="usage")
    validate_scan_cap(options.scan_cap)
    recommendation, source = run_async(_recommend(args, options, window))
    document = recommendation.to_json() | {"source": source, "window_seconds": window}
    emit(args, document, lambda: render_recommendation(recommendation, source))
    return 0


async def _recommend(args: argparse.Namespace, options: RecommendOptions, window: float) -> tuple[Recommendation, str]:
    from console.heat.cloudwatch import cloudwatch_heat
    from console.heat.snapshot import utilisation

    async with with_backend(args, stream=options.stream) as backend:
        summary = await backend.describe_stream_summary(options.stream)
        shards = [shard for shard in await backend.all_shards(options.stream) if shard.is_open]
        metered = {"IncomingBytes", "IncomingRecords"} <= set(summary.enhanced_metrics)
        source = options.source if options.source != "auto" else ("cloudwatch" if metered else "sample")
        if source == "cloudwatch":
            heats = await cloudwatch_heat(backend, options.stream, [s.shard_id for s in shards], seconds=window)
            loads = {
                h.shard_id: ShardLoad(h.shard_id, h.peak_utilisation, h.peak_bytes_per_s, h.peak_records_per_s)
                for h in heats
            }
            label = "CloudWatch shard-level metrics (busiest minute's average)"
        else:
            start = datetime.now(UTC) - timedelta(seconds=window)
            note(
                f"reading {len(shards)} shards' records of the last {options.window} (at most {options.scan_cap:,} each)..."
            )
            peaks = await window_peaks(backend, options.stream, shards, start, cap=options.scan_cap)
            loads = {
                p.shard_id: ShardLoad(
                    p.shard_id,
                    utilisation(p.peak_records_per_s, p.peak_bytes_per_s),
                    p.peak_bytes_per_s,
                    p.peak_records_per_s,
                )
                for p in peaks.values()
            }
            capped = [p.shard_id for p in peaks.values() if p.capped]
            label = "the window's records (busiest second)" + (
                f"; {len(capped)} shard(s) read only to the cap" if capped else ""
            )
        return recommend(
            options.stream,
            shards,
            loads,
            target=options.target / 100,
            shared_readers=options.shared_readers,
            on_demand=summary.mode == "ON_DEMAND",
        ), label


def render_recommendation(rec: Recommendation, source: str) -> str:
    lines = [
        f"stream {rec.stream}: {counted(rec.current_shards, 'open shard')}, peak utilisation {rec.peak_utilisation:.0%} "
        f"(from {source}; target {rec.target:.0%}, {rec.shared_readers} shared reader(s))",
        f"recommended: {counted(rec.recommended_shards, 'shard')}",
    ]
    lines += [f"  {reason}" for reason in rec.reasons]
    lines += rec.commands
    return "\n".join(lines)
