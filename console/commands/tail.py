"""`kconsole tail STREAM`: print what is in a stream, decoded (like `cat`, or `tail -f` with --follow), or
export a window of it (`--from/--to` or `--last`, filtered with `--where`) as JSON lines, CSV or raw bytes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import backend_config, with_backend
from console.commands._mask_args import add_mask_arguments, masker_from_args
from console.commands._output import emit, emit_record, note, run_async
from console.commands._read_share import add_read_share_argument, read_share_for
from console.document_sink import output_stream
from console.errors import BadInput
from console.keyspace.hashkeys import validate_partition_key
from console.read.decoding import DecodedRecord
from console.read.decoding import text_line as format_line
from console.read.export import (
    EXPORT_FORMATS,
    CsvEncoder,
    ExportTarget,
    encode_jsonl,
    encode_length_prefixed,
    parse_fields,
    payload_of,
    record_file_name,
)
from console.read.positions import check_retention, resolve_window
from console.read.printable import printable
from console.read.profile import WindowProfile
from console.read.tail import TailOptions, TailReader
from console.read.where import RecordFilter
from console.words import counted

if TYPE_CHECKING:
    from console.backend import BackendConfig

PROGRESS_INTERVAL = 1.0  # seconds between export progress lines on stderr
SHARDS_IN_PROGRESS = 4  # shard positions named in a progress line
STREAM_THROTTLES_EVERY = 60.0  # seconds between readings of the stream's read throttles (CloudWatch's period)
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


def add_efo_arguments(parser: Any, reads: str = "read") -> None:
    """--efo and --consumer, as tail and copy read with them (`reads`: what --efo reads, e.g.
    "with --verify: read the run back")."""
    parser.add_argument(
        "--efo",
        action="store_true",
        help=f"{reads} with enhanced fan-out (SubscribeToShard over HTTP/2): a 2 MiB/s per shard of its own, "
        "not shared with the stream's GetRecords readers; without --consumer a temporary consumer is "
        "registered (priced and confirmed first) and deregistered at the end",
    )
    parser.add_argument(
        "--consumer",
        metavar="NAME",
        help="with --efo: read as this registered consumer (its name or ARN) instead of a temporary one",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise BadInput(f"--limit must be a whole number of at least 1; got {text!r}")
    return value


def _check_efo_args(args: Any) -> None:
    if getattr(args, "yes", False) and not (getattr(args, "efo", False) and getattr(args, "consumer", None) is None):
        raise BadInput("--yes confirms the temporary consumer of --efo (without --consumer)", code="usage")
    check_efo_args(args, args.stream)


def check_efo_args(args: Any, stream: str) -> None:
    """--consumer belongs to --efo; registering a temporary consumer is a change (refused read-only)."""
    efo, consumer = getattr(args, "efo", False), getattr(args, "consumer", None)
    if consumer is not None and not efo:
        raise BadInput("--consumer names the enhanced fan-out consumer of --efo: give --efo too", code="usage")
    if consumer is not None and not consumer:
        raise BadInput("--consumer needs a consumer name or ARN", code="usage")
    if efo and consumer is None:
        from console.commands._confirm import refuse_if_read_only

        refuse_if_read_only(args, f"register a temporary enhanced fan-out consumer on {stream}")


def options_from_args(args: Any, now: datetime | None = None) -> TailOptions:
    if args.partition_key is not None:
        validate_partition_key(args.partition_key)
    if args.shard_ids and not any(part.strip() for given in args.shard_ids for part in given.split(",")):
        raise BadInput("--shard needs a shard ID, e.g. --shard shardId-000000000000")
    if args.grep is not None and not args.grep:
        raise BadInput("--grep needs some text to look for")
    if args.placement_only and args.partition_key is None:
        raise BadInput("--placement-only narrows a --key read: give --key PK")
    start, end = resolve_window(
        getattr(args, "start", None),
        getattr(args, "end", None),
        getattr(args, "last", None),
        follow=args.follow,
        now=now or datetime.now(UTC),
    )
    where = getattr(args, "where", None)
    return TailOptions(
        start=start,
        end=end,
        where=RecordFilter(where) if where is not None else None,
        shard_ids=tuple(
            dict.fromkeys(part.strip() for given in args.shard_ids for part in given.split(",") if part.strip())
        ),
        partition_key=args.partition_key,
        grep=args.grep,
        follow=args.follow,
        limit=args.limit,
        placement_only=args.placement_only,
        mask=masker_from_args(args),
    )


def run(args: Any) -> int:
    from console.commands._stream_args import local_shard_count, validate_stream_name

    validate_stream_name(args.stream)  # a typo is bad input (exit 2), not a stream the server lacks
    if getattr(args, "output", None) == "table":
        raise BadInput("tail streams its records, which a table cannot do: use --output text or json", code="usage")
    options = options_from_args(args)
    _check_efo_args(args)
    if getattr(args, "summarize", False) and (options.follow or getattr(args, "out", None)):
        raise BadInput("--summarize reports a window once it is read: not with --follow or --out", code="usage")
    export = Export.from_args(args)
    if getattr(args, "local", False):
        local_shard_count(args)
    config = backend_config(args)
    reader_box: list[TailReader] = []
    if export is not None:
        export.open()  # an unwritable --out is bad input before anything is read
    try:
        run_async(_tail(config, args.stream, options, reader_box, args, export))
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


class Export:
    """Where `tail --output jsonl|csv|raw` writes: --out (a temporary name until the end) or stdout."""

    def __init__(self, output: str, path: str | None, fields: str | None) -> None:
        self.output = output
        self.path = path
        self.directory = output == "raw" and path is not None and (path.endswith(os.sep) or path.endswith("/"))
        self.csv = CsvEncoder(parse_fields(fields)) if output == "csv" else None
        self.target: ExportTarget | None = None
        self.records = 0
        self.bytes = 0
        self._said_at = 0.0

    @classmethod
    def from_args(cls, args: Any) -> Export | None:
        output, path, fields = getattr(args, "output", None), getattr(args, "out", None), getattr(args, "fields", None)
        if path is not None and output is None:
            output = args.output = "csv" if path.lower().endswith(".csv") else "jsonl"
        if output not in EXPORT_FORMATS:
            if path is not None:
                raise BadInput(f"--out writes --output jsonl, csv or raw, not {output}", code="usage")
            if fields is not None:
                raise BadInput("--fields picks the columns of --output csv", code="usage")
            return None
        if fields is not None and output != "csv":
            raise BadInput("--fields picks the columns of --output csv", code="usage")
        if getattr(args, "query", None) is not None:
            raise BadInput(
                f"--query shapes --json documents; --output {output} writes records as they are "
                "(filter them with --where)",
                code="usage",
            )
        if getattr(args, "follow", False) and path is not None:
            raise BadInput(
                "--out writes a file once the read ends, and --follow never ends: give --to, --last "
                "or neither (the stream's current end)",
                code="usage",
            )
        if path is None and output != "jsonl" and sys.stdout.isatty():
            raise BadInput(
                f"--output {output} writes bytes from the stream as they are, not for a terminal: "
                "give --out FILE, or pipe it",
                code="usage",
            )
        if not path and path is not None:
            raise BadInput("--out needs a file name", code="usage")
        return cls(output, path, fields)

    def open(self) -> None:
        if self.path is not None:
            self.target = ExportTarget(self.path.rstrip("/") if self.directory else self.path, directory=self.directory)
        if self.csv is not None:
            self._write(self.csv.header(), 0)

    def write_batch(self, records: list[DecodedRecord]) -> None:
        if self.output == "jsonl":
            self._write(b"".join(encode_jsonl(record) for record in records), len(records))
        elif self.output == "csv":
            self._write(b"".join(self.csv.encode(record) for record in records), len(records))  # type: ignore[union-attr]
        elif self.directory:
            for record in records:
                self.target.write_file(record_file_name(self.records, record), payload_of(record))  # type: ignore[union-attr]
                self.records += 1
        else:
            self._write(b"".join(encode_length_prefixed(record) for record in records), len(records))

    def _write(self, chunk: bytes, records: int) -> None:
        if self.target is not None:
            self.target.write(chunk, records)
        else:
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()  # a pipe sees each page as it comes (with --follow, too)
        self.records += records
        self.bytes += len(chunk)

    def progress(self, reader: TailReader, *, force: bool = False) -> None:
        if self.path is None:
            return
        now = time.monotonic()
        if not force and now - self._said_at < PROGRESS_INTERVAL:
            return
        self._said_at = now
        written = self.target.bytes if self.target is not None else self.bytes
        positions = [(shard_id, position) for shard_id, position in sorted(reader.positions.items())]
        shown = ", ".join(f"{shard_id} at {position}" for shard_id, position in positions[:SHARDS_IN_PROGRESS])
        more = (
            f" (+{counted(len(positions) - SHARDS_IN_PROGRESS, 'shard')})"
            if len(positions) > SHARDS_IN_PROGRESS
            else ""
        )
        note(
            f"export: {counted(self.records, 'record')}{_decode_errors(reader)}, {written:,} bytes to {self.path}"
            + (f"; {shown}{more}" if shown else "")
        )

    def commit(self) -> None:
        if self.target is not None:
            self.target.commit()
            note(f"tail: wrote {counted(self.records, 'record')} ({self.target.bytes:,} bytes) to {self.path}")
        else:
            sys.stdout.flush()

    def discard(self) -> None:
        if self.target is not None:
            self.target.discard()


async def _tail(
    config: BackendConfig,
    stream: str,
    options: TailOptions,
    reader_box: list[TailReader],
    args: Any,
    export: Export | None = None,
) -> None:
    async with with_backend(args, stream=stream, config=config) as kinesis, contextlib.AsyncExitStack() as until_done:
        if options.start.timestamp is not None or options.end.moment is not None:
            summary = await kinesis.describe_stream_summary(stream)
            check_retention(options.start, summary.retention_hours, datetime.now(UTC), stream, options.end)
        subscribe = await efo_subscriptions(kinesis, stream, args, until_done) if getattr(args, "efo", False) else None
        reader = TailReader(
            kinesis, stream, options, on_trouble=note, subscribe=subscribe, read_share=read_share_for(args, config)
        )
        if options.follow:
            _hold_back_retry_lines_while_unreachable(kinesis, reader)
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
        profile = WindowProfile() if getattr(args, "summarize", False) else None
        backing_off = False

        def say_if_backing_off() -> None:  # once each time it starts: throttled, it reads less and offers EFO
            nonlocal backing_off
            if reader.read_share.backing_off != backing_off:
                backing_off = reader.read_share.backing_off
                if backing_off:
                    note(f"tail: {reader.read_share.summary()}")

        if options.follow and subscribe is None and reader.read_share.share is not None:
            watch = _follow_stream_throttles(kinesis, stream, reader, say_if_backing_off)
            until_done.push_async_callback(_stopped, asyncio.create_task(watch))
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                while reader.notes:
                    note(reader.notes.pop(0))
                say_if_backing_off()
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
            note(f"tail: {counted(reader.shown, 'record')}{_decode_errors(reader)} ({lags})")
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


async def efo_subscriptions(
    kinesis: Any, stream: str, args: Any, stack: contextlib.AsyncExitStack, *, command: str = "tail"
) -> Any:
    """--efo: check the endpoint speaks HTTP/2, then find the consumer named with --consumer, or register
    a temporary one (priced, confirmed, logged write-ahead) that `stack` deregisters on the way out,
    Ctrl-C included. Returns `subscribe(shard, position)` for the reader."""
    import socket
    from types import SimpleNamespace

    from console.commands._confirm import confirm_by_stream_name
    from console.lifecycle import actions
    from console.read.efo import (
        left_over_consumers,
        named_consumer_arn,
        temporary_consumer_name,
        temporary_consumer_preview,
        until_active,
    )
    from console.reshard.actionlog import ActionLog

    transport = kinesis.subscriptions()
    await transport.check()  # one line for an endpoint without HTTP/2, before anything is registered
    summary = await kinesis.describe_stream_summary(stream)
    if args.consumer is not None:
        consumer_arn = await named_consumer_arn(kinesis, stream, args.consumer)
    else:
        host = socket.gethostname()
        name = temporary_consumer_name(host, os.getpid(), datetime.now(UTC))
        consumers = await kinesis.list_stream_consumers(summary.arn)
        left_over = left_over_consumers(
            (c.get("ConsumerName", "") for c in consumers if c.get("ConsumerStatus") != "DELETING"), host, _is_running
        )
        removals = [await actions.prepare_deregister_consumer(kinesis, stream, old) for old in left_over]
        shards = sum(1 for shard in await kinesis.all_shards(stream) if shard.is_open)
        plan = await actions.prepare_register_consumer(kinesis, stream, name)
        preview = temporary_consumer_preview(name, stream, shards, command)
        if left_over:
            preview = (
                f"Left over from a kconsole of this host that is no longer running (killed before its exit "
                f"could deregister them), {counted(len(left_over), 'temporary consumer')} still registered and "
                f"billed: {', '.join(left_over)}; they are deregistered first.\n"
                + "".join(f"{removal.render()}\n" for removal in removals)
                + preview
            )
        if args.yes:
            note(preview)  # what it costs is said whether or not it is asked
        confirm_by_stream_name(
            SimpleNamespace(stream=stream, yes=args.yes),  # type: ignore[arg-type]
            change=f"register a temporary consumer on {stream}",
            consequence=(f"deregister {counted(len(left_over), 'left-over consumer')} and " if left_over else "")
            + f"register the temporary consumer {name}",
            preview=f"{preview}\n{plan.render()}",
        )
        for old, removal in zip(left_over, removals, strict=True):
            await actions.run(kinesis, removal, action_log=ActionLog.default(), progress=_change_progress)
            note(f"{command}: deregistered the left-over temporary consumer {old}")
        made = await actions.run(kinesis, plan, action_log=ActionLog.default(), progress=_change_progress)
        stack.push_async_callback(_deregister_temporary, kinesis, stream, name, command)
        consumer_arn = (made[0].answer or {}).get("ConsumerARN") or (
            await kinesis.describe_stream_consumer(summary.arn, name)
        )["ConsumerARN"]
        note(f"{command}: registered the temporary consumer {name}; it is deregistered when {command} ends")
        await until_active(kinesis, summary.arn, name)
    return lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position)


async def _follow_stream_throttles(
    kinesis: Any, stream: str, reader: TailReader, say_if_backing_off: Callable[[], None]
) -> None:
    """With --follow, the stream's ReadProvisionedThroughputExceeded once a minute (CloudWatch's
    resolution): readers refused while kconsole polls make it read less (ReadShare.stream_throttled)."""
    from console.errors import ConsoleError
    from console.heat.capacity import RECENT_MINUTES, stream_metrics, unavailable_reason

    while True:
        try:
            metrics = await stream_metrics(kinesis, stream, minutes=RECENT_MINUTES)
        except ConsoleError as error:
            note(
                f"tail: the stream's read throttles are not followed ({unavailable_reason(error)}); "
                "kconsole backs off on its own throttles only"
            )
            return
        reader.read_share.stream_throttled(metrics.latest("ReadProvisionedThroughputExceeded"))
        say_if_backing_off()  # the shards may be quiet: no page would say it
        await asyncio.sleep(STREAM_THROTTLES_EVERY)


async def _stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _is_running(pid: int) -> bool:
    """Whether a process `pid` runs on this host (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True


async def _deregister_temporary(kinesis: Any, stream: str, name: str, command: str) -> None:
    """The temporary consumer deregistered, prepared and run as `consumers deregister` does it."""
    from console.lifecycle import actions
    from console.reshard.actionlog import ActionLog

    plan = await actions.prepare_deregister_consumer(kinesis, stream, name)
    await actions.run(kinesis, plan, action_log=ActionLog.default(), progress=_change_progress)
    note(f"{command}: deregistered the temporary consumer {name}")


def _change_progress(text: str) -> None:
    if not text.startswith("calling"):
        note(f"kconsole: {text}")


def _decode_errors(reader: TailReader) -> str:
    """How many records could not be decoded (each shown as a decode-error line unless a filter left it out)."""
    count = reader.decode_errors
    return f", {counted(count, 'decode-error')}" if count else ""


def _hold_back_retry_lines_while_unreachable(kinesis: Any, reader: TailReader) -> None:
    """With --follow the reader says which shards it cannot read at once and then once a minute; the call
    path's retry lines (up to one a second, for as long as the outage lasts) would say it again between,
    so they are held back while any shard is unreachable. Before that, and once it reads again, they show."""
    say = kinesis.on_retry
    if say is None:
        return

    def retry_line(event: Any) -> None:
        if not reader.unreachable:
            say(event)

    kinesis.on_retry = retry_line


def _quiet_garbage_collector() -> None:
    """Decoded records are many small containers that live for one page and form no cycles: with the
    collector's defaults a full collection runs every few pages, each walking every object alive (the SDK's
    service models among them) and taking about a third of a long read. What is alive once reading starts
    is set aside for good (gc.freeze), and the youngest generation is collected less often."""
    import gc

    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
