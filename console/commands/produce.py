"""`kconsole produce STREAM`: write ordered test records, then (with --verify) read them back.

    kconsole produce orders --local --keys 1000 --records-per-key 20 --verify --json

stdout: one JSON document (--json) or a short summary; progress lines go to stderr. Exit 1 when the
verification fails (anything lost, reordered or misplaced) or the producer had to give up records.
"""

from __future__ import annotations

from console.commands import command_help

import sys
import time
from typing import Any

from console.commands._output import emit, note, run_async
from console.errors import BadInput, ReadOnlyRefusal
from console.produce.producer import ProduceResult, ProducerProgress, ProducerSettings
from console.produce.verify import ReadSettings, VerificationReport, run_and_verify

# AWS allows 5 GetRecords calls per second per shard.
AWS_GET_RECORDS_INTERVAL = 0.2
PROGRESS_EVERY = 1.0  # seconds between progress lines on stderr


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "produce", parents=common,
        help=command_help("produce"),
        description="Write test records (JSON: run id, key, per-key sequence number, timestamp) with the "
                    "ordered producer: at most one record per key in flight, so retries never reorder a key. "
                    "With --verify, read every record back and report lost, duplicated, out-of-order and "
                    "misplaced records.")
    parser.add_argument("stream", metavar="STREAM", help="stream name (created with --local if missing)")
    parser.add_argument("--keys", type=_whole, required=True, metavar="K", help="number of partition keys")
    parser.add_argument("--records-per-key", type=_whole, required=True, metavar="R", help="records per key")
    parser.add_argument("--payload-bytes", type=_whole, default=128, metavar="B",
                        help="data size of each record (default 128; the JSON header is ~90 bytes)")
    parser.add_argument("--rate", type=_positive, default=None, metavar="N",
                        help="records per second for the whole run (default: as fast as the shards allow)")
    parser.add_argument("--mode", choices=("batch", "sequential"), default="batch",
                        help="batch: PutRecords, one record per key per request (default); "
                             "sequential: PutRecord per key with SequenceNumberForOrdering")
    parser.add_argument("--concurrency", type=_whole, default=8, metavar="N",
                        help="requests in flight (batch) or keys in progress (sequential); default 8")
    parser.add_argument("--batch-size", type=_whole, default=500, metavar="N",
                        help="records per PutRecords request, at most 500 (default)")
    parser.add_argument("--explicit-hash-keys", choices=("none", "keytree"), default="none",
                        help="keytree: give each key a balanced explicit hash key from the key tree")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--pace", dest="pace", action="store_true", default=None,
                      help="pace each shard to 1,000 records/s and 1 MiB/s (default on AWS)")
    pace.add_argument("--no-pace", dest="pace", action="store_false",
                      help="do not pace (default with --local)")
    parser.add_argument("--verify", action="store_true", help="read the run back and check it")
    parser.set_defaults(handler=handle)


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"expected a whole number; got {text!r}") from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise BadInput(f"expected a positive number; got {text!r}")
    return value


def settings_from_args(args: Any) -> ProducerSettings:
    pace = args.pace if args.pace is not None else not getattr(args, "local", False)
    return ProducerSettings(
        keys=args.keys, records_per_key=args.records_per_key, payload_bytes=args.payload_bytes,
        mode=args.mode, rate=args.rate, concurrency=args.concurrency, max_batch_records=args.batch_size,
        explicit_hash_keys=args.explicit_hash_keys, pacing=pace,
    ).validated()


def handle(args: Any) -> int:
    settings = settings_from_args(args)  # bad numbers fail here, before any connection
    if getattr(args, "read_only", False) or _config_read_only():
        raise ReadOnlyRefusal("produce writes records to the stream; refused in read-only mode")
    result, report = run_async(_produce(args, settings))
    document = summary_document(result, report)
    emit(args, document, lambda: summary_text(result, report))
    return 0 if document["ok"] else 1


def _config_read_only() -> bool:
    from console.config import load_config

    return load_config()[0].read_only


async def _produce(args: Any, settings: ProducerSettings) -> tuple[ProduceResult, VerificationReport | None]:
    from console.backend import BackendConfig, open_backend
    from console.commands._stream_args import ensure_local_stream

    config = BackendConfig.from_args(args)
    async with open_backend(config) as kinesis:
        if config.kind == "local":
            await ensure_local_stream(kinesis, args.stream, args)
        else:
            await kinesis.describe_stream(args.stream)  # a missing stream fails here, naming the ones there are
        note(f"producing {settings.total} records ({settings.keys} keys x {settings.records_per_key}) "
             f"to {args.stream!r}, run {settings.run_id}, {settings.mode} mode")
        interval = AWS_GET_RECORDS_INTERVAL if config.kind == "aws" else 0.0
        result, report = await run_and_verify(
            kinesis, args.stream, settings, verify=args.verify, on_progress=_ProgressLines(),
            on_verifying=lambda: note(f"reading run {settings.run_id} back"),
            read_settings=ReadSettings(min_call_interval=interval))
    return result, report


class _ProgressLines:
    """Progress on stderr, at most a line a second (and the last one)."""

    def __init__(self) -> None:
        self._next = 0.0

    def __call__(self, progress: ProducerProgress) -> None:
        now = time.monotonic()
        if not progress.done and now < self._next:
            return
        self._next = now + PROGRESS_EVERY
        extra = "".join(f", {label} {value}" for label, value in (
            ("retries", progress.retries), ("throttled", progress.throttled),
            ("possible duplicates", progress.possible_duplicates), ("shard mismatches", progress.shard_mismatches),
        ) if value)
        print(f"produce: {progress.acknowledged}/{progress.total} acknowledged ({progress.fraction:.0%}), "
              f"{progress.records_per_second:.0f} records/s, {len(progress.shards)} shards{extra}",
              file=sys.stderr, flush=True)


def summary_document(result: ProduceResult, report: VerificationReport | None) -> dict:
    document = result.to_json()
    if report is None:
        document.update({"verified": False, "read_back": None, "lost": None, "duplicated": None,
                         "out_of_order": None, "misplaced": None})
        document["ok"] = not result.failed
    else:
        document.update(report.to_json())
        document["verified"] = True
        document["ok"] = report.ok
    if result.failed:
        document["failed_records"] = [{"key": k, "seq": s, "error": e} for k, s, e in result.failed[:50]]
    if result.mismatches:
        document["shard_mismatch_examples"] = [{"key": m.key, "seq": m.seq, "predicted": m.predicted,
                                                "actual": m.actual} for m in result.mismatches[:20]]
    return document


def summary_text(result: ProduceResult, report: VerificationReport | None) -> str:
    lines = [
        f"run {result.run_id} on {result.stream}: {result.acknowledged}/{result.sent} acknowledged in "
        f"{result.elapsed:.2f} s ({result.acknowledged / result.elapsed:.0f} records/s), "
        f"{result.retries} retries, {result.throttled} throttled, {result.possible_duplicates} possible duplicates",
    ]
    if result.mismatch_count:
        lines.append(f"shard map mispredicted {result.mismatch_count} puts (reported to the map)")
    if result.failed:
        lines.append(f"gave up on {len(result.failed)} records ({result.abandoned} more never sent); "
                     f"first: {result.failed[0][0]} #{result.failed[0][1]}: {result.failed[0][2]}")
    if report is None:
        return "\n".join(lines)
    lat = report.latency_ms
    lines.append(
        f"verification {'OK' if report.ok else 'FAILED'}: read back {report.read_back}, lost {report.lost}, "
        f"duplicated {report.duplicated}, out of order {report.out_of_order}, misplaced {report.misplaced}; "
        f"latency p50 {lat['p50']} ms, p99 {lat['p99']} ms, max {lat['max']} ms; "
        f"{len(report.shards)} shards read in {report.read_seconds:.2f} s")
    if report.first_out_of_order:
        first = report.first_out_of_order
        lines.append(f"first out of order: key {first['key']} seq {first['seq']} at position {first['position']} "
                     f"after seq {first['after_seq']}")
    for problem in report.problems[:10]:
        if problem.kind != "duplicated":
            lines.append(f"  {problem.kind}: {problem.key} #{problem.seq}: {problem.detail}")
    return "\n".join(lines)
