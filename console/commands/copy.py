"""`kconsole copy SRC DST --from WHEN [--to WHEN]`: copy a window of one stream into another, in order per
key, resumably, and optionally prove it by reading DST back (console.produce.copy says how).

    kconsole copy orders orders-replay --last 15m --yes --verify
    kconsole copy orders orders --from 2026-11-22T14:02:00Z --to 2026-11-22T14:05:00Z --dst-endpoint-url URL --yes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.commands import Parents, Subparsers, command_help
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._efo import add_efo_arguments, check_efo_args, efo_subscriptions
from console.commands._mask_args import add_copy_mask_arguments, copy_masker
from console.commands._options import options_from
from console.commands._output import emit, note, run_async
from console.commands._read_share import add_read_share_argument, read_share_for
from console.commands._stream_args import validate_stream_name
from console.errors import BadInput
from console.produce.testrecords import is_keyless
from console.read.positions import EndPosition, check_retention, resolve_window
from console.read.tail import TailOptions, TailReader
from console.read.where import RecordFilter
from console.topology.model import NO_KEY
from console.words import counted

if TYPE_CHECKING:
    from console.backend import BackendConfig
    from console.backend.protocol import RecordsBackend

MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024  # a checkpoint holds at most a chunk's sequence numbers per shard
DESTINATION_OPTIONS = ("dst_endpoint_url", "dst_region", "dst_profile")
MAX_REQUESTS_IN_FLIGHT = 8  # as `kconsole produce`
# A copy into its own source lands from now on, stamped by the server's clock, which may be this far from
# ours (SigV4 refuses requests further off): a window ending later than this before now could read its copies.
SELF_COPY_MARGIN = timedelta(minutes=5)


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "copy",
        parents=common,
        help=command_help("copy"),
        description="Read a window of SRC (--from, --to; or --last) and write it to DST through the ordered "
        "producer: per source shard in sequence order, each record's own partition key and bytes "
        "(a KPL aggregate stays byte-identical unless --deaggregate), one record in flight per key. "
        "Asks before writing (type DST's name, or --yes). A checkpoint file records what DST "
        "acknowledged: --resume FILE goes on after an interruption without sending it again. "
        "--verify reads DST back and checks per-key order and completeness.",
    )
    parser.add_argument("source", metavar="SRC", help="stream to read")
    parser.add_argument("destination", metavar="DST", help="stream to write (on the same endpoint unless --dst-*)")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="WHERE",
        help="trim-horizon, an ISO-8601 time or a sequence number (needed unless --last or --resume)",
    )
    parser.add_argument("--to", dest="end", metavar="WHEN", help="now (the default), latest or an ISO-8601 time")
    parser.add_argument("--last", metavar="DURATION", help="the last 90s, 15m, 2h...: --from that long ago --to now")
    parser.add_argument(
        "--where",
        metavar="EXPR",
        help="JMESPath filter as for tail (a KPL aggregate is copied whole when any user record passes)",
    )
    parser.add_argument(
        "--deaggregate",
        action="store_true",
        help="write each user record of a KPL aggregate on its own (its key and explicit hash key)",
    )
    parser.add_argument("--verify", action="store_true", help="read DST back: lost, duplicated, out of order")
    parser.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="where to keep the checkpoint (default: kconsole's data folder, named in the output)",
    )
    parser.add_argument("--resume", metavar="FILE", help="go on with the copy this checkpoint file belongs to")
    parser.add_argument("--dst-endpoint-url", metavar="URL", help="DST's endpoint (default: SRC's)")
    parser.add_argument("--dst-region", metavar="REGION", help="DST's region (default: SRC's)")
    parser.add_argument("--dst-profile", metavar="PROFILE", help="DST's AWS profile (default: SRC's)")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask before writing")
    add_copy_mask_arguments(parser)
    add_efo_arguments(parser)
    add_read_share_argument(parser)
    parser.set_defaults(handler=handle)


@dataclass(frozen=True)
class CopyOptions:
    source: str
    destination: str
    start: str | None = None  # --from
    end: str | None = None  # --to
    last: str | None = None
    where: str | None = None
    deaggregate: bool = False
    verify: bool = False
    checkpoint: str | None = None
    resume: str | None = None
    dst_endpoint_url: str | None = None
    dst_region: str | None = None
    dst_profile: str | None = None
    efo: bool = False


def handle(args: argparse.Namespace) -> int:
    from console.commands._backend import backend_config
    from console.produce.copy import CopyCheckpoint

    options = options_from(CopyOptions, args)
    validate_stream_name(options.source)
    validate_stream_name(options.destination)
    check_efo_args(args, options.source)
    if args.output == "table":
        raise BadInput("copy reports one document: use --output json or text", code="usage")
    now = datetime.now(UTC)
    if options.resume is not None and (options.start or options.end or options.last):
        raise BadInput(
            "--resume goes on with the window in its checkpoint: leave out --from, --to and --last", code="usage"
        )
    if options.resume is None and options.start is None and options.last is None:
        raise BadInput(
            "copy needs a window: --from WHERE (and --to WHEN, default now), or --last DURATION", code="usage"
        )
    if options.resume is not None and options.checkpoint is not None and options.checkpoint != options.resume:
        raise BadInput("--resume FILE keeps its checkpoint in FILE: leave out --checkpoint", code="usage")
    stored = _read_checkpoint(options.resume) if options.resume is not None else None
    if isinstance(stored, dict) and isinstance(stored.get("copy"), dict):
        # A resumed copy filters as it began: --where and --deaggregate come from the checkpoint unless given.
        kept_where = stored["copy"].get("where")
        options = replace(
            options,
            where=kept_where if options.where is None and isinstance(kept_where, str) else options.where,
            deaggregate=options.deaggregate or stored["copy"].get("deaggregate") is True,
        )
    kept = stored["copy"].get("mask") if isinstance(stored, dict) and isinstance(stored.get("copy"), dict) else None
    # A resumed masked copy masks as it began, whatever is given (a mask is never dropped halfway).
    mask = copy_masker(args, [str(rule) for rule in kept] if isinstance(kept, list) else None)
    where = RecordFilter(options.where) if options.where is not None else None
    source_config = backend_config(args)
    separate = any(getattr(options, option) is not None for option in DESTINATION_OPTIONS)
    destination_config = backend_config(_destination_args(args, options)) if separate else source_config
    same_place = _place(source_config) == _place(destination_config) and options.source == options.destination
    identity = {
        "source": options.source,
        "source_at": _place(source_config),
        "destination": options.destination,
        "destination_at": _place(destination_config),
        "where": options.where,
        "deaggregate": options.deaggregate,
        "mask": list(mask.rules.texts) if mask is not None else None,
    }
    if options.resume is not None:
        checkpoint = CopyCheckpoint.from_json(stored, identity, options.resume)
        start_text, end_text = checkpoint.identity["from"], checkpoint.identity["to"]
        start, end = resolve_window(start_text, end_text, None, follow=False, now=max(now, _moment(end_text, now)))
        path = Path(options.resume)
        checkpoint_option = "--resume"
    else:
        end_text = options.end if options.last is not None else (options.end or "now")
        start, end = resolve_window(options.start, end_text, options.last, follow=False, now=now)
        identity.update({"from": start.describe(), "to": end.describe()})
        checkpoint = CopyCheckpoint(identity)
        path = (
            Path(options.checkpoint)
            if options.checkpoint
            else _default_checkpoint(options.source, options.destination, now)
        )
        checkpoint_option = "--checkpoint"
    if same_place and (end.moment is None or end.moment > now - SELF_COPY_MARGIN):
        raise BadInput(
            f"copying {options.source} into itself up to {end.describe()} would read its own copies (a loop): "
            f"end the window before {EndPosition(now - SELF_COPY_MARGIN).describe()}, or copy into "
            "another stream",
            code="usage",
        )
    refuse_if_read_only(args, f"copy records into {options.destination}")
    _check_writable(path, checkpoint_option)
    if checkpoint.complete:
        note(f"copy: the checkpoint {path} says this copy is complete; nothing to do")
        emit(
            args,
            {
                "source": options.source,
                "destination": options.destination,
                "complete": True,
                "copied": 0,
                "possible_duplicates": checkpoint.possible_duplicates,
            },
            "nothing left to copy",
        )
        return 0
    confirm_by_stream_name(
        argparse.Namespace(yes=args.yes, stream=options.destination),
        change=f"copy records into {options.destination}",
        consequence=f"write the records of {options.source} from {start.describe()} to {end.describe()} as new records",
    )
    window = TailOptions(
        start=start,
        end=end,
        wire=True,
        finished_shards=checkpoint.finished_shards,
        resume_after=checkpoint.resume_after,
    )
    resume_note = (
        f"copy: interrupted; what {options.destination} acknowledged is in {path}: go on with "
        f"kconsole copy {options.source} {options.destination} --resume {path}"
    )
    try:
        progress, seconds, interrupted = run_async(
            _copy(
                args,
                source_config,
                destination_config,
                separate,
                options,
                window,
                checkpoint,
                path,
                where,
                now,
                checkpoint_option,
                mask,
            )
        )
    except KeyboardInterrupt:
        note(resume_note)
        return 130
    if interrupted:
        note(resume_note)
        return 130
    document = _summary(options, start, end, progress, seconds, path, checkpoint)
    emit(args, document, lambda: _summary_text(document))
    return 0 if document["ok"] else 1


async def _copy(
    args: argparse.Namespace,
    source_config: BackendConfig,
    destination_config: BackendConfig,
    separate: bool,
    options: CopyOptions,
    window: TailOptions,
    checkpoint: Any,
    path: Path,
    where: RecordFilter | None,
    now: datetime,
    checkpoint_option: str,
    mask: Any,
) -> tuple[Any, float, bool]:
    import time

    from console.commands._backend import with_backend
    from console.commands.produce import AWS_GET_RECORDS_INTERVAL, _ProgressLines
    from console.produce.copy import Interruption, copy_window

    started = time.monotonic()
    interruption = Interruption()
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(_on_first_interrupt(interruption))
        # The embedded server starts empty: both streams are made, as tail does.
        source = await stack.enter_async_context(
            with_backend(
                args,
                stream=(options.source,) if separate else (options.source, options.destination),
                config=source_config,
            )
        )
        if not separate:
            destination = source
        else:
            destination = await stack.enter_async_context(
                with_backend(args, stream=options.destination, config=destination_config)
            )
        summary = await source.describe_stream_summary(
            options.source
        )  # a missing SRC fails here, naming the ones there are
        check_retention(window.start, summary.retention_hours, now, options.source, window.end)
        target = await destination.describe_stream_summary(options.destination)
        keyless_refused = (
            None
            if target.auto_distribution
            else f"{options.destination} places records by key (USER_PARTITION_KEY) and takes none without a key; "
            f"`kconsole stream distribution {options.destination} auto` lets it take them; nothing more was sent"
        )
        subscribe = (
            await efo_subscriptions(source, options.source, args, stack, command="copy") if options.efo else None
        )
        reader = TailReader(
            source, options.source, window, subscribe=subscribe, read_share=read_share_for(args, source_config)
        )
        await reader.position()
        note(
            f"copy {options.source} -> {options.destination} from {window.start.describe()} to {window.end.describe()}: "
            f"shards {', '.join(sorted(reader.progress)) or 'none'}; checkpoint {path}"
        )
        write = _chunk_writer(
            destination,
            options.destination,
            destination_config,
            options.verify,
            _ProgressLines("copy"),
            AWS_GET_RECORDS_INTERVAL,
        )
        progress = await copy_window(
            reader,
            write,
            checkpoint,
            where=where,
            deaggregate=options.deaggregate,
            mask=mask,
            save=lambda state: _save_checkpoint(path, state.to_json(), checkpoint_option),
            keyless_refused=keyless_refused,
            on_chunk=lambda p: note(
                f"copy: {p.read:,} read, {p.acknowledged:,} acknowledged by {options.destination}"
                + (f", {p.skipped:,} already copied" if p.skipped else "")
            ),
            interruption=interruption,
        )
        if subscribe is None:
            note(f"copy: {reader.read_share.summary()}")
    return progress, time.monotonic() - started, interruption.reason is not None


def _on_first_interrupt(interruption: Any) -> Any:
    """Make the first Ctrl-C a clean stop (console.produce.copy.Interruption): the requests in flight get their
    answers, so the checkpoint holds all that DST acknowledged. A second Ctrl-C stops at once, as usual.
    Returns what restores the usual handling."""
    import asyncio
    import signal

    loop = asyncio.get_running_loop()

    def restore() -> None:
        with contextlib.suppress(ValueError, RuntimeError):  # not the main thread, or the loop is closing
            loop.remove_signal_handler(signal.SIGINT)

    def first() -> None:
        restore()  # the next Ctrl-C raises KeyboardInterrupt
        note("copy: stopping once the requests in flight are answered (Ctrl-C again stops at once)")
        interruption.request("interrupted (Ctrl-C)")

    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
        loop.add_signal_handler(signal.SIGINT, first)
    return restore


def _chunk_writer(
    kinesis: RecordsBackend, stream: str, config: BackendConfig, verify: bool, on_progress: Any, aws_interval: float
) -> Callable[[Any], Awaitable[Any]]:
    """One chunk through the ordered producer (and, with verify, read back), as `put` sends its records."""
    from collections import Counter

    from console.errors import ConsoleError
    from console.produce.given import GivenRecordMatcher
    from console.produce.producer import OrderedProducer
    from console.produce.settings import MAX_BATCH_RECORDS, ProducerSettings
    from console.produce.testrecords import ledger_key
    from console.produce.verify import IN_FLIGHT_TIMEOUTS, ReadSettings, Verifier
    from console.topology.shardmap import ShardMap

    async def write(run: Any) -> Any:
        per_key = Counter(ledger_key(record) for record in run.records)
        # One record a key a request: enough requests in flight to carry every key once, and one more, keeps
        # each request full; more would only split the same keys into smaller requests.
        requests = min(MAX_REQUESTS_IN_FLIGHT, max(2, -(-len(per_key) // MAX_BATCH_RECORDS) + 1))
        settings = ProducerSettings(
            keys=len(per_key),
            records_per_key=max(per_key.values()),
            payload_bytes=0,
            record_total=len(run.records),
            pacing=config.kind == "aws",
            concurrency=requests,
        ).validated()
        async with ShardMap.for_backend(kinesis, stream) as shard_map:
            await shard_map.wait_ready(timeout=60, fail_fast=True)
            producer = OrderedProducer(
                stream,
                settings,
                put_records=kinesis.put_records,
                put_record=kinesis.put_record,
                shard_map=shard_map,
                on_progress=on_progress,
                records=run.records,
            )
            run.result = producer.result
            run.on_stop = producer.stop
            if run.stop_reason is not None:
                producer.stop(run.stop_reason)
            result = await producer.run()
        if not verify or result.endpoint_lost or run.stop_reason is not None:
            return None
        timeout = getattr(kinesis, "request_timeout", None) or 0.0
        read_settings = ReadSettings(
            min_call_interval=aws_interval if config.kind == "aws" else 0.0,
            in_flight_window=IN_FLIGHT_TIMEOUTS * timeout,
        )
        verifier = Verifier.for_backend(kinesis, read_settings, GivenRecordMatcher(run.records))
        try:
            return await verifier.verify(result)
        except ConsoleError as error:
            result.verification_error = f"verification failed: {error}"
            return None

    return write


def _destination_args(args: argparse.Namespace, options: CopyOptions) -> argparse.Namespace:
    values = dict(vars(args))
    if options.dst_endpoint_url is not None:
        values.update(endpoint_url=options.dst_endpoint_url, local=False)
    if options.dst_region is not None:
        values["region"] = options.dst_region
    if options.dst_profile is not None:
        values["profile"] = options.dst_profile
    return argparse.Namespace(**values)


def _place(config: Any) -> str:
    """Where a backend config points, for telling two apart (and a checkpoint's copy from another)."""
    if config.kind == "local":
        return "local"
    return f"{config.kind} {config.endpoint_url or ''} {config.region} {config.profile or ''}".strip()


def _moment(text: str | None, fallback: datetime) -> datetime:
    try:
        moment = datetime.fromisoformat((text or "").replace("Z", "+00:00"))
    except ValueError:
        return fallback
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _default_checkpoint(source: str, destination: str, now: datetime) -> Path:
    from console.userdirs import data_dir

    return data_dir() / "copies" / f"{source}-to-{destination}-{now:%Y%m%dT%H%M%SZ}.json"


def _read_checkpoint(path: str) -> Any:
    try:
        # Opened without waiting: a FIFO with no writer would hold the open forever.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise BadInput(f"--resume {path} is not a regular file", code="bad_file")
            os.set_blocking(descriptor, True)
            raw = handle.read(MAX_CHECKPOINT_BYTES + 1)
    except OSError as error:
        raise BadInput(f"cannot read --resume {path}: {error.strerror or error}", code="bad_file") from None
    if len(raw) > MAX_CHECKPOINT_BYTES:
        raise BadInput(
            f"--resume {path} is larger than any checkpoint ({MAX_CHECKPOINT_BYTES // (1024 * 1024)} MiB)",
            code="bad_file",
        )
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise BadInput(f"--resume {path} is not a kconsole copy checkpoint (not JSON)", code="bad_file") from None


def _check_writable(path: Path, option: str) -> None:
    """The checkpoint must be a regular file (or a new name) whose folder takes a file, before anything is
    read or written: it is replaced whole as the copy goes, and read back by --resume."""
    from console.read.export import output_path_kind

    output_path_kind(path, option, streams=False, hint="give a file name for the checkpoint")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise BadInput(f"cannot write the checkpoint {path}: {error.strerror or error}", code="bad_file") from None


def _save_checkpoint(path: Path, document: dict[str, Any], option: str) -> None:
    from console.read.export import write_atomically

    write_atomically(path, json.dumps(document).encode("utf-8"), option)


def _summary(
    options: CopyOptions, start: Any, end: Any, progress: Any, seconds: float, path: Path, checkpoint: Any
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "source": options.source,
        "destination": options.destination,
        "from": start.describe(),
        "to": end.describe(),
        "where": options.where,
        "deaggregate": options.deaggregate,
        "mask": checkpoint.identity.get("mask"),
        "read": progress.read,
        "filtered_out": progress.filtered_out,
        "already_copied": progress.skipped,
        "copied": progress.acknowledged,
        "chunks": progress.chunks,
        "retries": progress.retries,
        "possible_duplicates": progress.possible_duplicates,
        "failed": [{"key": None if is_keyless(key) else key, "error": error} for key, error in progress.failed[:20]],
        "stopped": progress.stopped,
        "seconds": round(seconds, 3),
        "records_per_second": round(progress.acknowledged / seconds) if seconds > 0 else None,
        "checkpoint": str(path),
        "complete": checkpoint.complete,
        "verified": options.verify,
    }
    if options.verify:
        document["verification"] = {
            **progress.verification,
            "ok": bool(progress.verified_ok),
            "error": progress.verification_error,
        }
    document["ok"] = checkpoint.complete and not progress.failed and (not options.verify or bool(progress.verified_ok))
    return document


def _summary_text(document: dict[str, Any]) -> str:
    lines = [
        f"copied {counted(document['copied'], 'record')} from {document['source']} to {document['destination']} in "
        f"{document['seconds']:.2f} s ({document['read']:,} read, {document['filtered_out']:,} filtered out, "
        f"{document['already_copied']:,} already copied, {counted(document['retries'], 'retry', 'retries')}, "
        f"{counted(document['possible_duplicates'], 'possible duplicate')})"
    ]
    if document["stopped"]:
        lines.append(f"stopped: {document['stopped']}")
    for failure in document["failed"][:10]:
        key = NO_KEY if failure["key"] is None else repr(failure["key"])
        lines.append(f"  failed: key {key}: {failure['error']}")
    verification = document.get("verification")
    if verification is not None:
        if verification.get("error"):
            lines.append(verification["error"])
        else:
            lines.append(
                f"verification {'OK' if verification['ok'] else 'FAILED'}: read back "
                f"{verification.get('read_back', 0):,}, lost {verification.get('lost', 0)}, duplicated "
                f"{verification.get('duplicated', 0)}, out of order {verification.get('out_of_order', 0)}"
            )
    if not document["complete"]:
        lines.append(
            f"not complete: go on with kconsole copy {document['source']} {document['destination']} "
            f"--resume {document['checkpoint']}"
        )
    return "\n".join(lines)
