"""`kconsole put STREAM [--file F | -]`: send your own JSON lines through the ordered producer.

    printf '%s\n' '{"key": "order-1", "data": {"total": 12}}' | kconsole put orders --verify
    kconsole put orders --file orders.jsonl --schema payments/order:2 --verify   # Glue Schema Registry
    kconsole put orders --file events.jsonl --key-field user.id [--explicit-hash-key-field ehk] [--skip-bad]
    kconsole put clicks --file events.jsonl --no-key --verify       # an AUTO stream: Kinesis spreads them

Each line is checked first (JSON, partition key 1-256 characters, hash key in range, at most AWS's
10 MiB), then against the stream (its MaxRecordSizeInKiB; a keyless line only on an AUTO stream); a
bad line is reported with its number and nothing is sent, unless --skip-bad sends the good ones.
Records of one key go in line order, one in flight at a time, so retries never reorder a key. The
summary says what landed on which shard; --verify reads every record back (on an AUTO stream it
checks delivery: order is not a property of such a stream).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.bounds import open_named_file
from console.commands import Parents, Subparsers, command_help
from console.commands._aggregate_args import (
    add_aggregate_options,
    aggregate_bytes,
    check_aggregate_fits_stream,
)
from console.commands._confirm import refuse_if_read_only
from console.commands._efo import add_efo_arguments, efo_subscriptions
from console.commands._options import options_from
from console.commands._output import emit, note, run_async
from console.commands._stream_args import validate_stream_name
from console.commands.produce import check_verify_efo_args
from console.errors import BadInput
from console.produce.aggregate import aggregation_line
from console.produce.given import (
    MAX_LINE_BYTES,
    MAX_PROBLEMS_SHOWN,
    ParsedLines,
    bounded_lines,
    check_against_stream,
    parse_json_lines,
)
from console.produce.report import ProduceResult
from console.produce.settings import ProducerSettings
from console.produce.testrecords import is_keyless, ledger_key
from console.produce.verify import ReadSettings
from console.produce.verify_analysis import VerificationReport
from console.words import counted

if TYPE_CHECKING:
    from console.backend.protocol import SchemaRegistryBackend

MAX_LINES_SHOWN = 20  # per shard, in the text summary


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "put",
        parents=common,
        help=command_help("put"),
        description='Send records from JSON lines: {"key": ..., "data": ...} per line, or any JSON document '
        "with --key-field naming its partition key. Every line is checked first; bad lines are "
        "reported with their numbers and nothing is sent unless --skip-bad. Records of a key keep "
        "their line order (one in flight per key). Progress goes to stderr; the summary says "
        "which shard each record landed on.",
    )
    parser.add_argument("stream", metavar="STREAM", help="stream name (created with --local if missing)")
    parser.add_argument("source", nargs="?", metavar="-", help="read stdin (the default when it is not a terminal)")
    parser.add_argument("--file", metavar="F", help="read JSON lines from F ('-': stdin)")
    parser.add_argument(
        "--key-field",
        metavar="FIELD",
        help="partition key from this field of each document (dotted path); the line is the data",
    )
    parser.add_argument(
        "--explicit-hash-key-field",
        metavar="FIELD",
        help="explicit hash key (decimal, 0 to 2**128-1) from this field of each document",
    )
    parser.add_argument(
        "--no-key",
        action="store_true",
        help="send each line (a JSON document) as a record without a partition key: an AUTO "
        "stream only (a line without its key field is keyless too)",
    )
    parser.add_argument(
        "--schema",
        metavar="REGISTRY/NAME[:VERSION]",
        help="encode each record's data with this Glue Schema Registry schema (Avro, JSON Schema or Protobuf; "
        "the latest version unless :VERSION) as the AWS serializer does; a line that does not fit is a bad "
        "line naming its field",
    )
    parser.add_argument("--skip-bad", action="store_true", help="report bad lines but send the good ones")
    parser.add_argument("--verify", action="store_true", help="read every record back: lost, reordered, misplaced")
    add_efo_arguments(parser, reads="with --verify: read the records back")
    parser.add_argument("--yes", action="store_true", help="with --efo: register the temporary consumer without asking")
    add_aggregate_options(parser)
    parser.set_defaults(handler=handle)


@dataclass(frozen=True)
class PutOptions:
    stream: str
    source: str | None = None  # "-": stdin
    file: str | None = None
    key_field: str | None = None
    explicit_hash_key_field: str | None = None
    no_key: bool = False
    schema: str | None = None
    skip_bad: bool = False
    verify: bool = False
    efo: bool = False
    consumer: str | None = None
    aggregate: bool = False


def handle(args: argparse.Namespace) -> int:
    options = options_from(PutOptions, args)
    validate_stream_name(options.stream)
    for option, value in (
        ("key_field", options.key_field),
        ("explicit_hash_key_field", options.explicit_hash_key_field),
    ):
        if value is not None and (not value.strip() or any(not part for part in value.split("."))):
            raise BadInput(f"--{option.replace('_', '-')} must name a field (a.b for a nested one); got {value!r}")
    if options.no_key and (options.key_field or options.explicit_hash_key_field):
        raise BadInput(
            "--no-key sends records without keys: drop --key-field and --explicit-hash-key-field", code="usage"
        )
    if options.no_key and options.aggregate:
        raise BadInput(
            "a KPL aggregate carries a partition key for each record: --aggregate needs keys, drop --no-key",
            code="usage",
        )
    if args.yes and not (options.efo and options.consumer is None):
        raise BadInput("--yes confirms the temporary consumer of --efo (without --consumer)", code="usage")
    check_verify_efo_args(args, options.stream, efo=options.efo, verify=options.verify)
    aggregate_bytes(args)
    if options.schema is not None:
        from console.produce.schema_encoding import parse_schema_name

        parse_schema_name(options.schema)
    refuse_if_read_only(args, f"put records to {options.stream}")
    parsed = read_input(options)
    _refuse_or_skip(options, parsed.problems, parsed)  # wrong whatever the stream: before any connection
    result, report = run_async(_put(args, options, parsed))
    document = summary_document(parsed, result, report)
    emit(args, document, lambda: summary_text(document))
    return 0 if document["ok"] else 1


def _refuse_or_skip(options: PutOptions, problems: list[Any], parsed: ParsedLines) -> None:
    """Bad lines refuse the whole put (exit 2, nothing sent) unless --skip-bad, which names them."""
    if problems:
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        if not options.skip_bad:
            raise BadInput(
                f"{len(problems)} bad line(s), nothing was sent: {shown}{more}; fix them or pass --skip-bad",
                code="bad_lines",
            )
        for problem in problems[:MAX_PROBLEMS_SHOWN]:
            note(f"kconsole: skipping {problem}")
        if len(problems) > MAX_PROBLEMS_SHOWN:
            note(f"kconsole: skipping {len(problems) - MAX_PROBLEMS_SHOWN} more bad lines")
    if not parsed.records:
        raise BadInput("no records to put: the input has no good lines", code="no_records")


def read_input(options: PutOptions) -> ParsedLines:
    """Every line checked before any connection is made."""
    if options.source not in (None, "-"):
        raise BadInput(f"unexpected argument {options.source!r}: give --file F, or - for stdin", code="usage")
    path = options.file if options.file is not None else options.source
    if path is None:
        if sys.stdin.isatty():
            raise BadInput("no input: give --file F, or pipe JSON lines on stdin (-)", code="usage")
        path = "-"
    with ExitStack() as stack:
        handle = open_named_file(path, what="", code="bad_file")
        if path != "-":
            stack.enter_context(handle)
        lines = handle if _regular(handle) else _NewlineWithin(handle, "stdin" if path == "-" else path)
        try:
            return parse_json_lines(
                bounded_lines(lines, read_past_overlong=options.skip_bad),
                key_field=options.key_field,
                explicit_hash_key_field=options.explicit_hash_key_field,
                no_key=options.no_key,
            )
        except OSError as error:
            raise BadInput(f"cannot read {path}: {error.strerror or error}", code="bad_file") from None


def _regular(handle: Any) -> bool:
    import os
    import stat

    try:
        return stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


class _NewlineWithin:
    """A device, FIFO or pipe must give a newline within the longest line a record can take: a
    regular file's overlong line is skipped and named, but /dev/zero would be read forever."""

    def __init__(self, handle: Any, shown: str, limit: int = MAX_LINE_BYTES) -> None:
        self._handle, self._shown, self._limit, self._run, self._first = handle, shown, limit, 0, True

    def readline(self, size: int = -1) -> bytes:
        line: bytes = self._handle.readline(size)
        self._run = 0 if line.endswith(b"\n") else self._run + len(line)
        if self._run > self._limit:
            raise BadInput(
                f"cannot read {self._shown}: not a regular file, and no newline in its first "
                f"{self._limit:,} bytes (a record line is at most that long)",
                code="bad_file",
            )
        if self._first and line.endswith(b"\n"):  # random bytes (/dev/urandom) would go on forever
            self._first = False
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise BadInput(
                    f"cannot read {self._shown}: not a regular file, and its first line is not "
                    "UTF-8 text (JSON lines expected)",
                    code="bad_file",
                ) from None
        return line


async def _put(
    args: argparse.Namespace, options: PutOptions, parsed: ParsedLines
) -> tuple[ProduceResult, VerificationReport | None]:
    from console.commands._backend import backend_config, with_backend
    from console.commands.produce import (
        AWS_GET_RECORDS_INTERVAL,
        _ProgressLines,
        settle_heap,
    )
    from console.produce.verify import run_and_verify

    config = backend_config(args)
    async with with_backend(args, stream=options.stream, config=config) as kinesis, contextlib.AsyncExitStack() as efo:
        # A missing stream fails here, naming the ones there are; its limits judge the lines.
        summary = await kinesis.describe_stream_summary(options.stream)
        max_aggregate_bytes = aggregate_bytes(args)
        check_aggregate_fits_stream(max_aggregate_bytes, summary)
        if max_aggregate_bytes is not None and parsed.keyless:
            raise BadInput(
                f"{parsed.keyless} line(s) have no partition key, and a KPL aggregate carries one for "
                "each record: give every line a key, or drop --aggregate",
                code="usage",
            )
        known = set(parsed.problems)
        if options.schema is not None:
            await _encode_with_schema(kinesis, options.schema, parsed)
        check_against_stream(
            parsed,
            stream=options.stream,
            max_record_bytes=summary.max_record_bytes,
            auto_distribution=summary.auto_distribution,
        )
        _refuse_or_skip(options, [problem for problem in parsed.problems if problem not in known], parsed)
        per_key: dict[str, int] = defaultdict(int)
        for record in parsed.records:
            per_key[ledger_key(record)] += 1
        settings = ProducerSettings(
            keys=len(per_key),
            records_per_key=max(per_key.values()),
            payload_bytes=0,
            record_total=len(parsed.records),
            pacing=config.kind == "aws",
            max_record_bytes=summary.max_record_bytes,
        ).validated()
        keyless = parsed.keyless
        note(
            f"putting {counted(len(parsed.records), 'record')} to {options.stream!r} ("
            + (f"{keyless} without a key, " if keyless else "")
            + f"{counted(len(per_key) - keyless, 'key')})"
        )
        # The consumer is registered (and ACTIVE) before anything is sent: a refusal costs no records.
        subscribe = await efo_subscriptions(kinesis, options.stream, args, efo, command="put") if options.efo else None
        interval = AWS_GET_RECORDS_INTERVAL if config.kind == "aws" else 0.0
        settle_heap()
        return await run_and_verify(
            kinesis,
            options.stream,
            settings,
            verify=options.verify,
            on_progress=_ProgressLines("put"),
            on_verifying=lambda wait: note(
                f"reading {counted(len(parsed.records), 'record')} back"
                + (f" after waiting {wait:.0f} s for puts whose answer was lost" if wait > 0 else "")
            ),
            read_settings=ReadSettings(min_call_interval=interval),
            records=parsed.records,
            max_aggregate_bytes=max_aggregate_bytes,
            subscribe=subscribe,
        )


async def _encode_with_schema(kinesis: SchemaRegistryBackend, schema_name: str, parsed: ParsedLines) -> None:
    """Each record's data encoded with the registered schema; a line that does not fit moves to the problems."""
    import dataclasses
    import json

    from console.commands._schema_args import schema_encoder
    from console.produce.given import LineProblem
    from console.produce.schema_encoding import DocumentProblem

    encoder = await schema_encoder(kinesis, schema_name)
    kept = []
    for record in parsed.records:
        try:
            document = json.loads(record.data)
        except ValueError:
            parsed.problems.append(LineProblem(record.line, f"data is not a JSON document for {encoder.label}"))
            continue
        try:
            kept.append(dataclasses.replace(record, data=encoder.encode(document)))
        except DocumentProblem as problem:
            parsed.problems.append(LineProblem(record.line, f"{encoder.label}: {problem}"))
    parsed.records = kept
    parsed.problems.sort(key=lambda problem: problem.line)


def summary_document(parsed: ParsedLines, result: ProduceResult, report: VerificationReport | None) -> dict[str, Any]:
    line_of = parsed.line_of()
    landed = sorted(
        ((line_of[pair], _shown_key(pair[0]), ack.shard_id, ack.sequence_number) for pair, ack in result.acks.items()),
        key=lambda row: row[0],
    )
    shards: dict[str, dict[str, Any]] = {}
    for line, _key, shard_id, _seq in landed:
        entry = shards.setdefault(shard_id, {"records": 0, "lines": []})
        entry["records"] += 1
        entry["lines"].append(line)
    failed = [
        {"line": line_of.get((key, seq)), "key": _shown_key(key), "error": error} for key, seq, error in result.failed
    ]
    document: dict[str, Any] = {
        "stream": result.stream,
        "records": len(parsed.records),
        "keyless_records": parsed.keyless,
        "skipped_bad_lines": len(parsed.problems),
        "bad_lines": [{"line": p.line, "error": p.message} for p in parsed.problems[:MAX_PROBLEMS_SHOWN]],
        "sent": result.sent,
        "acknowledged": result.acknowledged,
        "retries": result.retries,
        "throttled": result.throttled,
        "possible_duplicates": result.possible_duplicates,
        "failed": failed,
        "abandoned": result.abandoned,
        "seconds": round(result.elapsed, 3),
        "shards": dict(sorted(shards.items())),
        "landed": [
            {"line": line, "key": key, "shard_id": shard, "sequence_number": seq} for line, key, shard, seq in landed
        ],
        "verified": report is not None,
    }
    if result.aggregation is not None:
        document["aggregation"] = result.aggregation.to_json(result.elapsed)
    if report is not None:
        verification = report.to_json()
        document["verification"] = {
            name: verification[name]
            for name in (
                "read_back",
                "lost",
                "duplicated",
                "possible_duplicates",
                "out_of_order",
                "misplaced",
                "ok",
                "checks",
                "checks_note",
            )
            if name in verification
        }
        document["verification"]["ok"] = report.ok
        document["verification"]["problems"] = [
            {"kind": p.kind, "line": line_of.get((p.key, p.seq)), "key": _shown_key(p.key), "detail": p.detail}
            for p in report.problems[:MAX_PROBLEMS_SHOWN]
        ]
    elif result.verification_error is not None:  # asked for, and the read-back itself failed: not a pass
        document["verification"] = {"ok": False, "error": result.verification_error, "problems": []}
    verified = report.ok if report is not None else result.verification_error is None
    document["ok"] = not failed and not result.abandoned and verified
    return document


def _shown_key(name: str) -> str | None:
    """A ledger key as the user sees it: a keyless record has none (null in JSON)."""
    return None if is_keyless(name) else name


def summary_text(document: dict[str, Any]) -> str:
    lines = [
        f"put {document['acknowledged']}/{counted(document['records'], 'record')} to {document['stream']} in "
        f"{document['seconds']:.2f} s ({counted(document['retries'], 'retry', 'retries')}, {document['throttled']} throttled"
        + (f", {document['skipped_bad_lines']} bad lines skipped" if document["skipped_bad_lines"] else "")
        + ")"
    ]
    if aggregated := aggregation_line(document.get("aggregation")):
        lines.append(aggregated)
    for shard_id, entry in document["shards"].items():
        shown = ", ".join(str(n) for n in entry["lines"][:MAX_LINES_SHOWN])
        more = f", … (+{len(entry['lines']) - MAX_LINES_SHOWN})" if len(entry["lines"]) > MAX_LINES_SHOWN else ""
        plural = "s" if entry["records"] != 1 else ""
        lines.append(f"  {shard_id}: {entry['records']} record{plural} (line{plural} {shown}{more})")
    for failure in document["failed"][:10]:
        lines.append(f"  failed: line {failure['line']} (key {_key_text(failure['key'])}): {failure['error']}")
    verification = document.get("verification")
    if verification is not None and verification.get("error"):
        lines.append(verification["error"])
    elif verification is not None and verification.get("checks") == "delivery":
        lines.append(
            f"delivery {'OK' if verification['ok'] else 'FAILED'}: read back {verification['read_back']} "
            f"of {document['acknowledged']}, lost {verification['lost']}, duplicated "
            f"{verification['duplicated']} (at most {verification['possible_duplicates']} possible)"
        )
        lines.append(f"  {verification['checks_note']}")
    elif verification is not None:
        lines.append(
            f"verification {'OK' if verification['ok'] else 'FAILED'}: read back {verification['read_back']}, "
            f"lost {verification['lost']}, duplicated {verification['duplicated']}, "
            f"out of order {verification['out_of_order']}, misplaced {verification['misplaced']}"
        )
    if verification is not None:
        for problem in verification["problems"][:10]:
            lines.append(
                f"  {problem['kind']}: line {problem['line']} (key {_key_text(problem['key'])}): {problem['detail']}"
            )
    return "\n".join(lines)


def _key_text(key: str | None) -> str:
    from console.topology.model import NO_KEY

    return NO_KEY if key is None else repr(key)
