"""`kconsole tail STREAM`: print what is in a stream, decoded (like `cat`, or `tail -f` with --follow)."""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any

from console.commands import command_help
from console.commands._output import emit_record, note, run_async
from console.read.decoding import KIND_ERROR, DecodedRecord
from console.read.printable import printable
from console.errors import BadInput
from console.keyspace.hashkeys import validate_partition_key
from console.read.tail import TailOptions, TailReader, parse_start

TEXT_HEX_BYTES = 64  # binary content shown per record in text mode (--json carries it all)


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "tail", parents=common, help=command_help("tail"),
        description="Read every relevant shard concurrently (parents before children) and print each record "
                    "decoded, one line per record: arrival, shard, sequence number, partition key, encoding, "
                    "size, content. Without --follow it stops at the end of what the stream holds now. "
                    "With --json: one JSON object per record (JSON lines), not one document. "
                    "With --local, a missing stream is created first (4 shards, or kconsole --shards N).")
    parser.add_argument("stream", metavar="STREAM", help="stream name")
    parser.add_argument("--from", dest="start", default=None, metavar="WHERE",
                        help="trim-horizon (the default without --follow: all the stream holds), latest (the "
                             "default with --follow: only new records), an ISO-8601 timestamp (UTC unless it has "
                             "an offset), or a sequence number (give --shard, or it is looked up)")
    # One ID per --shard (repeat it, or separate with commas): a list-taking option would swallow the
    # stream name in `kconsole tail --shard ID STREAM`.
    parser.add_argument("--shard", dest="shard_ids", action="append", default=[], metavar="ID",
                        help="read only this shard (repeatable, or comma-separated), and its children if it splits")
    parser.add_argument("--key", dest="partition_key", metavar="PK",
                        help="only records with this partition key (reads only the shard it hashes to; with "
                             "--shard, those shards: KPL-aggregated records can sit elsewhere)")
    parser.add_argument("--grep", metavar="TEXT", help="only records whose decoded content or key contains TEXT")
    parser.add_argument("--follow", "-f", action="store_true", help="keep reading new records until Ctrl-C")
    parser.add_argument("--limit", type=_positive_int, metavar="N", help="stop after N records")
    parser.set_defaults(handler=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise BadInput(f"--limit must be a whole number of at least 1; got {text!r}")
    return value


def options_from_args(args: Any) -> TailOptions:
    if args.partition_key is not None:
        validate_partition_key(args.partition_key)
    if args.shard_ids and not any(part.strip() for given in args.shard_ids for part in given.split(",")):
        raise BadInput("--shard needs a shard ID, e.g. --shard shardId-000000000000")
    if args.grep is not None and not args.grep:
        raise BadInput("--grep needs some text to look for")
    return TailOptions(
        start=parse_start(args.start or ("latest" if args.follow else "trim-horizon")),
        shard_ids=tuple(dict.fromkeys(part.strip() for given in args.shard_ids for part in given.split(",")
                                      if part.strip())),
        partition_key=args.partition_key,
        grep=args.grep,
        follow=args.follow,
        limit=args.limit,
    )


def run(args: Any) -> int:
    from console.backend import BackendConfig
    from console.commands._stream_args import local_shard_count, validate_stream_name

    validate_stream_name(args.stream)  # a typo is bad input (exit 2), not a stream the server lacks
    if getattr(args, "output", None) == "table":
        raise BadInput("tail streams its records, which a table cannot do: use --output text or json",
                       code="usage")
    options = options_from_args(args)
    if getattr(args, "local", False):
        local_shard_count(args)
    config = BackendConfig.from_args(args)
    reader_box: list[TailReader] = []
    try:
        run_async(_tail(config, args.stream, options, reader_box, args))
    except KeyboardInterrupt:
        shown = reader_box[0].shown if reader_box else 0
        note(f"tail: stopped after {shown} record{'s' if shown != 1 else ''}")
        return 130  # as every command on Ctrl-C, --follow included: a script can tell "cut short" apart
    return 0


async def _tail(config, stream: str, options: TailOptions, reader_box: list, args: Any) -> None:
    from console.backend import open_backend
    from console.commands._stream_args import ensure_local_stream

    async with open_backend(config) as kinesis:
        if config.kind == "local":  # the embedded server starts empty: create the stream, as `shards` does
            await ensure_local_stream(kinesis, stream, args)
        reader = TailReader(kinesis, stream, options)
        reader_box.append(reader)
        await reader.position()
        if args.output is None:
            shards = ", ".join(sorted(reader.progress)) or "none"
            note(f"tail {stream} from {options.start.describe()}: shards {shards}"
                 + (" (following; Ctrl-C stops)" if options.follow else ""))
        write = sys.stdout.write
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                if not batch.records:
                    continue
                write("".join(emit_record(args, r.to_json(), functools.partial(format_line, r)) for r in batch.records))
                sys.stdout.flush()
        if args.output is None:
            lags = ", ".join(f"{p.shard_id} {p.records} rec"
                             + (f" {p.millis_behind} ms behind" if p.millis_behind is not None else "")
                             for p in reader.progress.values())
            note(f"tail: {reader.shown} record{'s' if reader.shown != 1 else ''} ({lags})")
            if reader.shown == 0 and options.partition_key is not None and not options.shard_ids:
                note(f"tail: read only the shard {options.partition_key!r} hashes to; records a KPL aggregate "
                     "carries under this key may sit in another shard: add --shard ID ... to read more")


def format_line(record: DecodedRecord) -> str:
    """One line per record: arrival, shard, sequence[/sub], key [ehk], kind, size, content. What came from the
    stream (key, content, a decode error's reason) is escaped: a producer's escape sequences never reach the
    terminal, and a record never takes more than its line."""
    arrival = record.to_json()["arrival"] or "-"
    key = record.partition_key + (f" ehk={record.explicit_hash_key}" if record.explicit_hash_key else "")
    content = record.content_text(max_hex_bytes=TEXT_HEX_BYTES)
    if record.kind == KIND_ERROR:
        content = f"{record.error}: {content}"
    return printable(f"{arrival} {record.shard_id} {record.position} {key} {record.kind_label} {record.size}B {content}")
