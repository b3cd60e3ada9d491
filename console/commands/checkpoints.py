"""`kconsole consumers rewind|skip|clone|checkpoints`: move a KCL application's checkpoints.

Prepared and run by console.consumers.rewind; this module parses the words, asks for the stream name
(or --yes), renders the plan and the outcome per lease, and reads and writes the positions file.

kconsole consumers rewind STREAM --lease-table T --to WHEN [--shard ID...] [--watch S] [--plan] [--yes]
kconsole consumers rewind --undo ACTION-ID [--watch S] [--plan] [--yes]
kconsole consumers skip STREAM --lease-table T --shard ID --sequence SEQ [--watch S] [--plan] [--yes]
kconsole consumers clone STREAM --lease-table T --to-table NEW [--plan] [--yes]
kconsole consumers checkpoints export STREAM FILE --lease-table T
kconsole consumers checkpoints import STREAM FILE --lease-table T [--watch S] [--plan] [--yes]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import stat
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._output import emit, note, run_async
from console.commands._stream_args import validate_stream_name
from console.errors import BadInput
from console.words import plain_number

if TYPE_CHECKING:
    from console.commands._consumers_options import ConsumersOptions

MAX_WATCH_SECONDS = 300.0
MAX_POSITIONS_BYTES = 16 * 1024 * 1024  # a positions file is read up to this size
_ACTION_ID = re.compile(r"^[0-9a-f]{6,64}$")
_CHECKPOINT = re.compile(r"^([0-9]{1,128}|TRIM_HORIZON|LATEST|SHARD_END)$")
FORMAT = "kconsole-checkpoints/1"


@dataclass(frozen=True)
class CheckpointsRun:
    """What moves: the stream, its application's lease table (an undo finds both in the action log),
    the positions file of `checkpoints export|import`, and how long to watch for a running application."""

    stream: str
    lease_table: str  # empty for an undo until the log names it
    file: str  # empty but for checkpoints export|import
    watch_seconds: float


def run_checkpoints(args: argparse.Namespace, options: ConsumersOptions, action: str) -> int:
    from console.commands._lease_args import validate_scan_cap, validate_table_name
    from console.consumers.rewind import DEFAULT_WATCH_SECONDS

    words = options.words[1:]
    if options.name is not None:
        raise BadInput(f"--name applies to consumers register|deregister, not {action}", code="usage")
    if options.find_lease_tables or options.workers or options.all_streams:
        raise BadInput(f"consumers {action} takes --lease-table TABLE, not a listing option", code="usage")
    validate_scan_cap(options.scan_cap)
    watch = DEFAULT_WATCH_SECONDS if options.watch is None else options.watch
    if not math.isfinite(watch) or not 0 <= watch <= MAX_WATCH_SECONDS:
        raise BadInput(
            f"--watch must be from 0 to {MAX_WATCH_SECONDS:g} seconds; got {plain_number(watch)}", code="usage"
        )
    sub, file = None, ""
    if action == "checkpoints":
        if len(words) != 3 or words[0] not in ("export", "import"):
            raise BadInput(
                "usage: kconsole consumers checkpoints export|import STREAM FILE --lease-table T", code="usage"
            )
        sub, stream, file = words[0], validate_stream_name(words[1]), words[2]
    elif action == "rewind" and options.undo is not None:
        if not _ACTION_ID.match(options.undo):
            raise BadInput(
                f"--undo needs an action id as the rewind printed it; got {options.undo[:80]!r}", code="usage"
            )
        if len(words) > 1 or options.to or options.shard or options.lease_table:
            raise BadInput("--undo ACTION-ID takes no --to, --shard or --lease-table: the log names them", code="usage")
        stream = validate_stream_name(words[0]) if words else ""
    else:
        if len(words) != 1:
            raise BadInput(f"usage: kconsole consumers {action} STREAM --lease-table TABLE ...", code="usage")
        stream = validate_stream_name(words[0])
    run = CheckpointsRun(stream, options.lease_table or "", file, watch)
    if options.undo is not None and action != "rewind":
        raise BadInput("--undo applies to consumers rewind", code="usage")
    if options.lease_table is None and options.undo is None:
        raise BadInput(f"consumers {action} needs --lease-table TABLE (find it with --find-lease-tables)", code="usage")
    if options.lease_table is not None:
        validate_table_name(options.lease_table)
    _check_options(options, action)
    if sub == "export":
        return _export(args, run)
    if not options.plan:
        refuse_if_read_only(args, f"{action} the checkpoints of {run.stream or 'a KCL application'}")
    positions = _read_positions(Path(file)) if sub == "import" else None
    plan, result = run_async(_change(args, options, run, action, positions))
    document = plan.to_json() | {"planned_only": result is None, "result": result.to_json() if result else None}

    def text() -> str:
        lines = plan.lines()
        if result is not None:
            lines.extend(result.lines())
        elif options.plan:
            lines.append("(plan only: nothing was written)")
        return "\n".join(lines)

    emit(args, document, text)
    return 0 if result is None or result.complete else 1


def _check_options(options: ConsumersOptions, action: str) -> None:
    allowed = {
        "rewind": {"to", "shard", "undo"},
        "skip": {"shard", "sequence"},
        "clone": {"to_table"},
        "checkpoints": set(),
    }[action]
    for option in ("to", "shard", "sequence", "to_table", "undo"):
        if getattr(options, option) is not None and option not in allowed:
            raise BadInput(f"--{option.replace('_', '-')} does not apply to consumers {action}", code="usage")
    if action == "rewind" and options.undo is None and not options.to:
        raise BadInput(
            "consumers rewind needs --to WHEN (trim-horizon, latest, a time, -1h, shardId-…=SEQ)", code="usage"
        )
    if action == "skip" and (not options.shard or len(options.shard) != 1 or not options.sequence):
        raise BadInput("consumers skip needs one --shard ID and --sequence SEQ", code="usage")
    if action == "clone":
        from console.commands._lease_args import validate_table_name

        if not options.to_table:
            raise BadInput("consumers clone needs --to-table NEW", code="usage")
        validate_table_name(options.to_table)


async def _change(
    args: argparse.Namespace,
    options: ConsumersOptions,
    run: CheckpointsRun,
    action: str,
    positions: dict[str, Any] | None,
) -> tuple[Any, Any]:
    from console.commands._backend import with_backend
    from console.consumers import rewind
    from console.lifecycle.actions import actor
    from console.reshard.actionlog import ActionLog

    log = ActionLog.default()
    if options.undo is not None:
        stream, table, positions = rewind.logged_positions(log.entries(), options.undo)
        if run.stream and run.stream != stream:
            raise BadInput(f"{options.undo} changed {stream}'s checkpoints, not {run.stream}'s", code="usage")
        run = replace(run, stream=stream, lease_table=table)
    async with with_backend(args, stream=run.stream) as backend:
        if options.undo is not None:
            assert positions is not None
            plan = await rewind.prepare_positions(
                backend,
                run.stream,
                run.lease_table,
                positions,
                action="undo",
                scan_cap=options.scan_cap,
                undo_of=options.undo,
            )
        elif action == "checkpoints":
            assert positions is not None
            plan = await rewind.prepare_positions(
                backend, run.stream, run.lease_table, positions, action="import", scan_cap=options.scan_cap
            )
        elif action == "rewind":
            now = datetime.now(UTC)
            plan = await rewind.prepare_rewind(
                backend,
                run.stream,
                run.lease_table,
                rewind.parse_target(options.to or (), now),
                now=now,
                shards=options.shard or (),
                scan_cap=options.scan_cap,
            )
        elif action == "skip":
            plan = await rewind.prepare_skip(
                backend,
                run.stream,
                run.lease_table,
                (options.shard or [""])[0],
                options.sequence or "",
                scan_cap=options.scan_cap,
            )
        else:
            plan = await rewind.prepare_clone(backend, run.stream, run.lease_table, options.to_table or "")
        if options.plan or (not plan.changed and action != "clone" and not plan.refusal):
            return plan, None
        if not plan.refusal:
            confirm_by_stream_name(
                args,
                change=f"{action} the checkpoints of {run.stream} in {run.lease_table}",
                consequence=plan.summary,
                preview="\n".join(plan.lines()),
                stream=run.stream,
            )
        result = await rewind.run(
            backend,
            plan,
            action_log=log,
            watch_seconds=run.watch_seconds,
            progress=lambda text: note(f"kconsole: {text}"),
            who=await actor(backend),
        )
        return plan, result


# ---- the positions file --------------------------------------------------------------------------


def _export(args: argparse.Namespace, run: CheckpointsRun) -> int:
    from console.read.export import output_path_kind

    output_path_kind(run.file, "FILE", streams=False, hint="give a file name for the positions")
    document = run_async(_positions_document(args, run))
    _write_file(Path(run.file), json.dumps(document, indent=2) + "\n")
    emit(
        args,
        {"stream": run.stream, "lease_table": run.lease_table, "file": run.file, "leases": len(document["leases"])},
        f"exported {len(document['leases'])} checkpoint(s) of {run.stream} in {run.lease_table} to {run.file}",
    )
    return 0


async def _positions_document(args: argparse.Namespace, run: CheckpointsRun) -> dict[str, Any]:
    from console.commands._backend import with_backend
    from console.consumers.rewind import read_table

    async with with_backend(args, stream=run.stream) as backend:
        table = await read_table(backend, run.lease_table, run.stream)
    return {
        "format": FORMAT,
        "stream": run.stream,
        "lease_table": run.lease_table,
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        "leases": [
            {
                "lease_key": lease.lease_key,
                "shard_id": lease.shard_id,
                "checkpoint": lease.checkpoint,
                "subsequence": lease.checkpoint_subsequence,
            }
            for lease in table.leases.values()
        ],
    }


def _write_file(path: Path, text: str) -> None:
    """The whole file replaced at once (console.read.export's rule: what is not a regular file is
    never replaced)."""
    from console.read.export import write_atomically

    try:
        write_atomically(path, text.encode("utf-8"), "FILE")
    except OSError as error:
        raise BadInput(f"cannot write {path}: {error.strerror or error}", code="bad_file") from None


def _read_positions(path: Path) -> dict[str, tuple[str, int]]:
    """{lease key: (checkpoint, subsequence)} from a file `checkpoints export` wrote, read within a bound."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror}", code="bad_file") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise BadInput(f"{path} is not a regular file", code="bad_file")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            raw = handle.read(MAX_POSITIONS_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(raw) > MAX_POSITIONS_BYTES:
        raise BadInput(f"{path} is larger than {MAX_POSITIONS_BYTES // (1024 * 1024)} MiB: not a positions file")
    try:
        document = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadInput(f"{path} is not JSON: {error}", code="bad_file") from None
    leases = document.get("leases") if isinstance(document, dict) else None
    if not isinstance(leases, list) or not leases:
        raise BadInput(f"{path} is not a positions file (`consumers checkpoints export` writes one)", code="bad_file")
    positions: dict[str, tuple[str, int]] = {}
    for entry in leases:
        if not isinstance(entry, dict):
            raise BadInput(f"{path}: each lease must be an object", code="bad_file")
        key, checkpoint, subsequence = entry.get("lease_key"), entry.get("checkpoint"), entry.get("subsequence", 0)
        if not isinstance(key, str) or not isinstance(checkpoint, str) or not _CHECKPOINT.match(checkpoint):
            raise BadInput(f"{path}: lease {str(key)[:80]!r} has no usable checkpoint", code="bad_file")
        if isinstance(subsequence, bool) or not isinstance(subsequence, int) or subsequence < 0:
            raise BadInput(f"{path}: lease {key[:80]!r} has a bad subsequence", code="bad_file")
        positions[key] = (checkpoint, subsequence)
    return positions
