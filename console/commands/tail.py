"""`kconsole tail STREAM`: print what is in a stream, decoded (like `cat`, or `tail -f` with --follow), or
export a window of it (`--from/--to` or `--last`, filtered with `--where`) as JSON lines, CSV or raw bytes
(console.commands._tail_export). --efo reads with enhanced fan-out (console.commands._efo); --read-share
bounds the polling, and a following read backs off on throttles (console.commands._read_share)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import backend_config, with_backend
from console.commands._efo import add_efo_arguments, check_efo_args, efo_subscriptions
from console.commands._mask_args import add_mask_arguments, masker_from_args
from console.commands._options import options_from
from console.commands._output import emit, emit_record, note, run_async
from console.commands._read_share import (
    BackOffLines,
    add_read_share_argument,
    follow_stream_throttles,
    hold_back_retry_lines_while_unreachable,
    read_share_for,
)
from console.commands._tail_export import TailExport, decode_errors
from console.document_sink import output_stream
from console.errors import BadInput
from console.keyspace.hashkeys import validate_partition_key
from console.read.decoding import text_line as format_line
from console.read.export import EXPORT_FORMATS
from console.read.positions import check_retention, resolve_window
from console.read.printable import printable
from console.read.profile import WindowProfile
from console.read.tail import TailOptions, TailReader
from console.read.where import RecordFilter
from console.words import counted

GC_YOUNG_THRESHOLD = 50_000  # allocations between collections of the youngest generation (Python's default: 700)


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "tail",
        parents=common,
        help=command_help("tail"),
        description="Read every relevant shard concurrently (parents before children) and print each record "
        "decoded, one line per record: arrival, shard, sequence number, partition key, encoding, "
        "size, content. Without --follow it stops at the end of what the stream holds now. "
        "With --json: one JSON object per record (JSON lines), not one document. "
        "With --local, a missing stream is created first (4 shards, or kconsole --shards N).",
    )
    parser.add_argument("stream", metavar="STREAM", help="stream name")
    parser.add_argument(
        "--from",
        dest="start",
        default=None,
        metavar="WHERE",
        help="trim-horizon (the default without --follow: all the stream holds), latest (the "
        "default with --follow: only new records), an ISO-8601 timestamp (UTC unless it has "
        "an offset), or a sequence number (give --shard, or it is looked up)",
    )
    parser.add_argument(
        "--to",
        dest="end",
        default=None,
        metavar="WHEN",
        help="latest (the default: each shard's tip when it is reached), now (when the command "
        "started), or an ISO-8601 timestamp: each shard stops at its first record after it",
    )
    parser.add_argument(
        "--last", metavar="DURATION", help="the last 90s, 15m, 2h, 7d...: --from that long ago --to now"
    )
    parser.add_argument(
        "--where",
        metavar="EXPR",
        help="JMESPath over each record: key, shard_id, seq, sub_seq, ehk, arrival, size, kind, "
        "and data (the JSON payload, or the text), e.g. \"data.tenant == '42'\"",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE (under a temporary name until done) with a progress line on stderr; "
        "--output jsonl (default), csv or raw; for raw, DIR/ writes one file a record",
    )
    parser.add_argument(
        "--fields",
        metavar="A,B,data.C",
        help="CSV columns: arrival, shard_id, seq, sub_seq, key, ehk, size, kind, encoding, data, "
        "data.PATH (default: arrival,shard_id,seq,sub_seq,key,kind,size,data)",
    )
    # One ID per --shard (repeat it, or separate with commas): a list-taking option would swallow the
    # stream name in `kconsole tail --shard ID STREAM`.
    parser.add_argument(
        "--shard",
        dest="shard_ids",
        action="append",
        default=[],
        metavar="ID",
        help="read only this shard (repeatable, or comma-separated), and its children if it splits",
    )
    parser.add_argument(
        "--key",
        dest="partition_key",
        metavar="PK",
        help="only records with this partition key, KPL-aggregated ones included (reads every "
        "shard: an aggregate carries its records wherever it lands; with --shard, those shards)",
    )
    parser.add_argument(
        "--placement-only",
        action="store_true",
        help="with --key: read only the shard the key hashes to (the stream has no KPL "
        "aggregates; the first aggregate seen widens the read to every shard)",
    )
    parser.add_argument("--grep", metavar="TEXT", help="only records whose decoded content or key contains TEXT")
    parser.add_argument("--follow", "-f", action="store_true", help="keep reading new records until Ctrl-C")
    parser.add_argument("--limit", type=_positive_int, metavar="N", help="stop after N records")
    add_efo_arguments(parser)
    add_read_share_argument(parser)
    parser.add_argument("--yes", action="store_true", help="with --efo: register the temporary consumer without asking")
    add_mask_arguments(parser)
    parser.add_argument(
        "--summarize",
        action="store_true",
        help="instead of the records, what the window holds: per field path its presence, types, distinct and "
        "top values, numbers' percentiles; per schema version, the count",
    )
    parser.set_defaults(handler=run, export_formats=EXPORT_FORMATS)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise BadInput(f"--limit must be a whole number of at least 1; got {text!r}")
    return value


@dataclass(frozen=True)
class TailCommandOptions:
    """What `kconsole tail STREAM` was asked (the output, backend and mask options stay on the Namespace)."""

    stream: str
    start: str | None = None
    end: str | None = None
    last: str | None = None
    where: str | None = None
    out: str | None = None
    fields: str | None = None
    shard_ids: list[str] = field(default_factory=list)
    partition_key: str | None = None
    placement_only: bool = False
    grep: str | None = None
    follow: bool = False
    limit: int | None = None
    efo: bool = False
    consumer: str | None = None
    yes: bool = False
    summarize: bool = False


def _check_efo(options: TailCommandOptions, args: argparse.Namespace) -> None:
    if options.yes and not (options.efo and options.consumer is None):
        raise BadInput("--yes confirms the temporary consumer of --efo (without --consumer)", code="usage")
    check_efo_args(args, options.stream)


def read_options(options: TailCommandOptions, args: argparse.Namespace, now: datetime | None = None) -> TailOptions:
    """The reader's options from the command's: each checked, one line of bad input for the first wrong."""
    if options.partition_key is not None:
        validate_partition_key(options.partition_key)
    shard_ids = tuple(dict.fromkeys(part.strip() for given in options.shard_ids for part in given.split(",")))
    shard_ids = tuple(shard_id for shard_id in shard_ids if shard_id)
    if options.shard_ids and not shard_ids:
        raise BadInput("--shard needs a shard ID, e.g. --shard shardId-000000000000")
    if options.grep is not None and not options.grep:
        raise BadInput("--grep needs some text to look for")
    if options.placement_only and options.partition_key is None:
        raise BadInput("--placement-only narrows a --key read: give --key PK")
    start, end = resolve_window(
        options.start, options.end, options.last, follow=options.follow, now=now or datetime.now(UTC)
    )
    return TailOptions(
        start=start,
        end=end,
        where=RecordFilter(options.where) if options.where is not None else None,
        shard_ids=shard_ids,
        partition_key=options.partition_key,
        grep=options.grep,
        follow=options.follow,
        limit=options.limit,
        placement_only=options.placement_only,
        mask=masker_from_args(args),
    )


def run(args: argparse.Namespace) -> int:
    from console.commands._stream_args import local_shard_count, validate_stream_name

    options = options_from(TailCommandOptions, args)
    validate_stream_name(options.stream)  # a typo is bad input (exit 2), not a stream the server lacks
    if getattr(args, "output", None) == "table":
        raise BadInput("tail streams its records, which a table cannot do: use --output text or json", code="usage")
    reading = read_options(options, args)
    _check_efo(options, args)
    if options.summarize and (reading.follow or options.out):
        raise BadInput("--summarize reports a window once it is read: not with --follow or --out", code="usage")
    export = TailExport.from_args(args, out=options.out, fields=options.fields, follow=options.follow)
    if getattr(args, "local", False):
        local_shard_count(args)
    reader_box: list[TailReader] = []
    if export is not None:
        export.open()  # an unwritable --out is bad input before anything is read
    try:
        run_async(_tail(args, options, reading, reader_box, export))
    except KeyboardInterrupt:
        if export is not None:
            export.discard()
        shown = reader_box[0].shown if reader_box else 0
        note(
            f"tail: stopped after {shown} record{'s' if shown != 1 else ''}"
            + (f"; nothing was written to {export.path}" if export is not None and export.path else "")
        )
        return 130  # as every command on Ctrl-C, --follow included: a script can tell "cut short" apart
    except BaseException:
        if export is not None:
            export.discard()
        raise
    if export is not None:
        export.commit()
    return 0


async def _tail(
    args: argparse.Namespace,
    command: TailCommandOptions,
    options: TailOptions,
    reader_box: list[TailReader],
    export: TailExport | None = None,
) -> None:
    stream = command.stream
    config = backend_config(args)
    async with with_backend(args, stream=stream, config=config) as kinesis, contextlib.AsyncExitStack() as until_done:
        if options.start.timestamp is not None or options.end.moment is not None:
            summary = await kinesis.describe_stream_summary(stream)
            check_retention(options.start, summary.retention_hours, datetime.now(UTC), stream, options.end)
        subscribe = await efo_subscriptions(kinesis, stream, args, until_done) if command.efo else None
        reader = TailReader(
            kinesis, stream, options, on_trouble=note, subscribe=subscribe, read_share=read_share_for(args, config)
        )
        if options.follow:
            hold_back_retry_lines_while_unreachable(kinesis, reader)
        reader_box.append(reader)
        await reader.position()
        _quiet_garbage_collector()
        if args.output is None or (export is not None and export.path is not None):
            shards = ", ".join(sorted(reader.progress)) or "none"
            until = "" if options.end.moment is None else f" to {options.end.describe()}"
            note(
                f"tail {stream} from {options.start.describe()}{until}: shards {shards}"
                + (" (following; Ctrl-C stops)" if options.follow else "")
            )
        write = output_stream().write
        plain_json = args.output == "json" and getattr(args, "query", None) is None
        profile = WindowProfile() if command.summarize else None
        back_off = BackOffLines(reader.read_share, "tail")
        if options.follow and subscribe is None and reader.read_share.share is not None:
            watch = asyncio.create_task(follow_stream_throttles(kinesis, stream, back_off))
            until_done.push_async_callback(_stopped, watch)
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                while reader.notes:
                    note(reader.notes.pop(0))
                back_off()
                if profile is not None:
                    for record in batch.records:
                        profile.add(record)
                    continue
                if export is not None:
                    if batch.records:
                        export.write_batch(batch.records)
                    export.progress(reader)
                    continue
                if not batch.records:
                    continue
                if plain_json:  # the common case, once per record: no dict, no second pass
                    write("".join([record.json_line() + "\n" for record in batch.records]))
                elif args.output is None:  # text lines: straight from the record, no JSON dict made first
                    write("".join([format_line(record) + "\n" for record in batch.records]))
                else:
                    write(
                        "".join(
                            emit_record(args, r.to_json(), functools.partial(format_line, r)) for r in batch.records
                        )
                    )
                output_stream().flush()
        if export is not None:
            export.progress(reader, force=True)
            return
        if profile is not None:
            emit(args, profile.to_json(), lambda: "\n".join(printable(line) for line in profile.lines()))
            return
        if args.output is None:
            lags = ", ".join(
                f"{p.shard_id} {p.records} rec"
                + (f" {p.millis_behind} ms behind" if p.millis_behind is not None else "")
                for p in reader.progress.values()
            )
            note(f"tail: {counted(reader.shown, 'record')}{decode_errors(reader)} ({lags})")
        if subscribe is None:
            note(f"tail: {reader.read_share.summary()}")
            if (
                reader.shown == 0
                and options.partition_key is not None
                and options.placement_only
                and not options.shard_ids
            ):
                note(
                    f"tail: --placement-only read only the shard {options.partition_key!r} hashes to; without it "
                    "every shard is read"
                )


async def _stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _quiet_garbage_collector() -> None:
    """Decoded records are many small containers that live for one page and form no cycles: with the
    collector's defaults a full collection runs every few pages, each walking every object alive (the SDK's
    service models among them) and taking about a third of a long read. What is alive once reading starts
    is set aside for good (gc.freeze), and the youngest generation is collected less often."""
    import gc

    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
