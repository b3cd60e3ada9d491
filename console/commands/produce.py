"""`kconsole produce STREAM`: write ordered test records, then (with --verify) read them back.

    kconsole produce orders --local --keys 1000 --records-per-key 20 --verify --json

stdout: one JSON document (--json) or a short summary; progress lines go to stderr. Exit 2 for bad
input (nothing is sent); exit 1 when the verification fails (anything lost, reordered or misplaced),
the producer had to give up records, or the run stopped early (the stream or the endpoint went away):
then the summary is the partial report (sent, acknowledged, failed with reasons, not attempted) and
stderr has one line saying why.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from console.commands import Parents, Subparsers, command_help
from console.commands._aggregate_args import (
    add_aggregate_options,
    aggregate_bytes,
    check_aggregate_fits_stream,
)
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._efo import add_efo_arguments, check_efo_args, efo_subscriptions
from console.commands._options import options_from
from console.commands._output import emit, note, run_async
from console.errors import BadInput, ConsoleError
from console.produce.aggregate import aggregation_line
from console.produce.report import ProduceResult, ProducerProgress, verifying_line
from console.produce.settings import ProducerSettings
from console.produce.testrecords import LARGEST_RECORD_BYTES
from console.produce.verify import ReadSettings, run_and_verify
from console.produce.verify_analysis import VerificationReport
from console.topology.model import StreamSummary
from console.words import counted

# AWS allows 5 GetRecords calls per second per shard.
AWS_GET_RECORDS_INTERVAL = 0.2
PROGRESS_EVERY = 1.0  # seconds between progress lines on stderr


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "produce",
        parents=common,
        help=command_help("produce"),
        description="Write test records (JSON: run id, key, per-key sequence number, timestamp) with the "
        "ordered producer: at most one record per key in flight, so retries never reorder a key. "
        "With --verify, read every record back and report lost, duplicated, out-of-order and "
        "misplaced records.",
    )
    parser.add_argument("stream", metavar="STREAM", help="stream name (created with --local if missing)")
    parser.add_argument("--keys", type=_whole("--keys"), required=True, metavar="K", help="number of partition keys")
    parser.add_argument(
        "--records-per-key", type=_whole("--records-per-key"), required=True, metavar="R", help="records per key"
    )
    parser.add_argument(
        "--payload-bytes",
        type=_whole("--payload-bytes"),
        default=128,
        metavar="B",
        help="data size of each record (default 128; the JSON header is ~90 bytes); at most the "
        "stream's record size (1 MiB unless raised, up to 10 MiB)",
    )
    parser.add_argument(
        "--no-key",
        action="store_true",
        help="send the records without partition keys (an AUTO stream only); --verify then "
        "checks delivery, as order is not a property of an AUTO stream",
    )
    parser.add_argument(
        "--rate",
        type=_positive("--rate"),
        default=None,
        metavar="N",
        help="records per second for the whole run (default: as fast as the shards allow)",
    )
    parser.add_argument(
        "--mode",
        choices=("batch", "sequential"),
        default="batch",
        help="batch: PutRecords, one record per key per request (default); "
        "sequential: PutRecord per key with SequenceNumberForOrdering",
    )
    parser.add_argument(
        "--concurrency",
        type=_whole("--concurrency"),
        default=8,
        metavar="N",
        help="requests in flight (batch) or keys in progress (sequential); default 8",
    )
    parser.add_argument(
        "--batch-size",
        type=_whole("--batch-size"),
        default=500,
        metavar="N",
        help="records per PutRecords request, at most 500 (default)",
    )
    parser.add_argument(
        "--explicit-hash-keys",
        choices=("none", "keytree"),
        default="none",
        help="keytree: give each key a balanced explicit hash key from the key tree",
    )
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument(
        "--pace",
        dest="pace",
        action="store_true",
        default=None,
        help="pace each shard to 1,000 records/s and 1 MiB/s (default on AWS)",
    )
    pace.add_argument("--no-pace", dest="pace", action="store_false", help="do not pace (default with --local)")
    parser.add_argument("--verify", action="store_true", help="read the run back and check it")
    parser.add_argument(
        "--schema",
        metavar="REGISTRY/NAME[:VERSION]",
        help="encode the test records with this Glue Schema Registry schema (Avro, JSON Schema or Protobuf, "
        "with fields run, key, seq and ts) as the AWS serializer does; --verify decodes them to check them",
    )
    add_efo_arguments(parser, reads="with --verify: read the run back")
    add_aggregate_options(parser)
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
    parser.add_argument(
        "--give-up-after",
        type=_positive("--give-up-after"),
        default=60.0,
        metavar="SECONDS",
        help="stop the run, with its partial report, when the endpoint has answered nothing for this long (default 60)",
    )
    parser.set_defaults(handler=handle)


def _whole(option: str) -> Callable[[str], int]:
    """An argparse `type=` for `option`: a whole number, or one line that names the option."""

    def whole(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise BadInput(f"{option} must be a whole number; got {text!r}") from None

    return whole


def _positive(option: str) -> Callable[[str], float]:
    """An argparse `type=` for `option`: a finite number above 0, or one line that names the option."""

    def positive(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0 or value == float("inf"):
            raise BadInput(f"{option} must be a positive number; got {text!r}")
        return value

    return positive


def check_verify_efo_args(args: argparse.Namespace, stream: str, *, efo: bool, verify: bool) -> None:
    """--efo reads the run back: it needs --verify (and --consumer needs --efo, as tail's)."""
    if efo and not verify:
        raise BadInput("--efo reads the run back through enhanced fan-out: give --verify too", code="usage")
    check_efo_args(args, stream)


@dataclass(frozen=True)
class ProduceOptions:
    stream: str
    keys: int
    records_per_key: int
    payload_bytes: int = 128
    no_key: bool = False
    rate: float | None = None
    mode: Literal["batch", "sequential"] = "batch"
    concurrency: int = 8
    batch_size: int = 500
    explicit_hash_keys: Literal["none", "keytree"] = "none"
    pace: bool | None = None  # None: pace unless --local
    verify: bool = False
    schema: str | None = None
    give_up_after: float = 60.0
    efo: bool = False
    aggregate: bool = False


def settings_from_args(args: argparse.Namespace, options: ProduceOptions) -> ProducerSettings:
    pace = options.pace if options.pace is not None else not getattr(args, "local", False)
    return ProducerSettings(
        keys=options.keys,
        records_per_key=options.records_per_key,
        payload_bytes=options.payload_bytes,
        mode=options.mode,
        rate=options.rate,
        concurrency=options.concurrency,
        max_batch_records=options.batch_size,
        explicit_hash_keys=options.explicit_hash_keys,
        pacing=pace,
        unanswered_give_up=options.give_up_after,
        send_keys=not options.no_key,
        max_record_bytes=LARGEST_RECORD_BYTES,
    ).validated()


def handle(args: argparse.Namespace) -> int:
    options = options_from(ProduceOptions, args)
    if options.no_key and options.explicit_hash_keys != "none":
        raise BadInput(
            "--no-key sends no keys: explicit hash keys would be ignored too; drop --explicit-hash-keys", code="usage"
        )
    if options.no_key and options.aggregate:
        raise BadInput(
            "a KPL aggregate carries a partition key for each record: --aggregate needs keys, drop --no-key",
            code="usage",
        )
    settings = settings_from_args(args, options)  # bad numbers fail here, before any connection
    check_verify_efo_args(args, options.stream, efo=options.efo, verify=options.verify)
    aggregate_bytes(args)
    if options.schema is not None:
        from console.produce.schema_encoding import parse_schema_name

        parse_schema_name(options.schema)
    refuse_if_read_only(args, f"write test records to {options.stream}")
    result, report = run_async(_produce(args, options, settings))
    document = summary_document(result, report)
    problem = result.stopped and ConsoleError(f"produce stopped: {result.stopped}", code="run_stopped")
    if problem:
        document["error"] = {"code": problem.code, "message": problem.message}
        note(f"kconsole: error: {problem.message}")
    emit(args, document, lambda: summary_text(result, report))
    return 0 if document["ok"] else 1


async def _produce(
    args: argparse.Namespace, options: ProduceOptions, settings: ProducerSettings
) -> tuple[ProduceResult, VerificationReport | None]:
    from console.commands._backend import backend_config, with_backend

    config = backend_config(args)
    async with with_backend(args, stream=options.stream, config=config) as kinesis, contextlib.AsyncExitStack() as efo:
        # A missing stream fails here, naming the ones there are; its record size and distribution
        # bound the run before anything is sent.
        summary = await kinesis.describe_stream_summary(options.stream)
        settings = fit_to_stream(settings, summary)
        identify = None
        if options.schema is not None:
            from dataclasses import replace

            from console.commands._schema_args import schema_encoder
            from console.produce.schema_encoding import TestRecordCodec

            codec = TestRecordCodec.checked(await schema_encoder(kinesis, options.schema))
            settings, identify = replace(settings, encode=codec.encode), codec.identify
        max_aggregate_bytes = aggregate_bytes(args)
        check_aggregate_fits_stream(max_aggregate_bytes, summary)
        confirm_by_stream_name(
            args,
            change=f"write test records to {options.stream}",
            consequence=(
                f"write {counted(settings.total, 'test record')} ({counted(settings.keys, 'key')} x "
                f"{settings.records_per_key})"
            ),
        )
        # The consumer is registered (and ACTIVE) before anything is sent: a refusal costs no records.
        subscribe = (
            await efo_subscriptions(kinesis, options.stream, args, efo, command="produce") if options.efo else None
        )
        note(
            f"producing {counted(settings.total, 'record')} ({counted(settings.keys, 'key')} x {settings.records_per_key}) "
            f"to {options.stream!r}, run {settings.run_id}, {settings.mode} mode"
        )
        interval = AWS_GET_RECORDS_INTERVAL if config.kind == "aws" else 0.0
        settle_heap()
        result, report = await run_and_verify(
            kinesis,
            options.stream,
            settings,
            verify=options.verify,
            on_progress=_ProgressLines(),
            on_verifying=lambda wait: note(verifying_line(settings.run_id, wait)),
            read_settings=ReadSettings(min_call_interval=interval),
            max_aggregate_bytes=max_aggregate_bytes,
            identify=identify,
            subscribe=subscribe,
        )
    return result, report


def fit_to_stream(settings: ProducerSettings, summary: StreamSummary) -> ProducerSettings:
    """The run held to the stream: records no larger than its MaxRecordSizeInKiB, keyless only on AUTO."""
    from dataclasses import replace

    if not settings.send_keys and not summary.auto_distribution:
        raise BadInput(
            f"--no-key: stream {summary.name} places records by key (USER_PARTITION_KEY), so each needs "
            f"one (`kconsole stream distribution {summary.name} auto` lets Kinesis spread keyless "
            "records); nothing was sent",
            code="usage",
        )
    largest = summary.max_record_bytes - settings.key_bytes
    if settings.payload_bytes > largest:
        raise BadInput(
            f"--payload-bytes {settings.payload_bytes:,} is more than stream {summary.name} takes: "
            f"{largest:,} bytes beside the partition key ({summary.max_record_bytes:,} a record); raise it "
            f"with `kconsole stream max-record-size {summary.name} --kib "
            f"{min(10240, -(-(settings.payload_bytes + settings.key_bytes) // 1024))}`; nothing was sent",
            code="usage",
        )
    return replace(settings, max_record_bytes=summary.max_record_bytes)


def settle_heap() -> None:
    """What is alive once the backend is open (the modules, botocore's service models) lives as long as
    this process: move it out of the garbage collector's reach before a run. A run holds an object per
    record in flight, and each full collection would otherwise walk botocore's models again (about
    1 µs a record at 100k records/s, measured with bench_aggregate.py)."""
    gc.freeze()


class _ProgressLines:
    """Progress on stderr, at most a line a second (and the last one)."""

    def __init__(self, label: str = "produce") -> None:
        self._next = 0.0
        self._label = label

    def __call__(self, progress: ProducerProgress) -> None:
        now = time.monotonic()
        if not progress.done and now < self._next:
            return
        self._next = now + PROGRESS_EVERY
        print(f"{self._label}: {progress.line()}", file=sys.stderr, flush=True)


def summary_document(result: ProduceResult, report: VerificationReport | None) -> dict[str, Any]:
    document = result.to_json()
    if report is None:
        document.update(
            {
                "verified": False,
                "read_back": None,
                "lost": None,
                "duplicated": None,
                "late_duplicates": None,
                "out_of_order": None,
                "misplaced": None,
                "verification_error": result.verification_error,
            }
        )
        document["ok"] = result.complete and result.verification_error is None
    else:
        document.update(report.to_json())
        document["verified"] = True
        document["ok"] = report.ok and result.complete
    if result.failed:
        document["failed_records"] = [{"key": k, "seq": s, "error": e} for k, s, e in result.failed[:50]]
    if result.mismatches:
        document["shard_mismatch_examples"] = [
            {"key": m.key, "seq": m.seq, "predicted": m.predicted, "actual": m.actual} for m in result.mismatches[:20]
        ]
    return document


def summary_text(result: ProduceResult, report: VerificationReport | None) -> str:
    lines = [
        f"run {result.run_id} on {result.stream}: {result.acknowledged}/{result.sent} acknowledged in "
        f"{result.elapsed:.2f} s ({result.acknowledged / result.elapsed:.0f} records/s), "
        f"{counted(result.retries, 'retry', 'retries')}, {result.throttled} throttled, {counted(result.possible_duplicates, 'possible duplicate')}",
    ]
    if aggregated := aggregation_line(result.to_json().get("aggregation")):
        lines.append(aggregated)
    if result.mismatch_count:
        lines.append(f"shard map mispredicted {counted(result.mismatch_count, 'put')} (reported to the map)")
    if result.stopped:
        lines.append(f"STOPPED EARLY: {result.stopped}")
    if result.failed or result.stopped:
        lines.append(
            f"partial run: {result.sent} of {result.settings.total} sent, {result.acknowledged} acknowledged, "
            f"{len(result.failed)} failed, {result.not_attempted} not attempted"
        )
    if result.failed:
        reasons: dict[str, int] = {}
        for _key, _seq, reason in result.failed:
            reasons[reason] = reasons.get(reason, 0) + 1
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1])[:5]:
            lines.append(f"  failed {count}: {reason}")
        lines.append(f"  first failed: {result.failed[0][0]} #{result.failed[0][1]}")
    if report is None:
        if result.verification_error:
            lines.append(result.verification_error)
        return "\n".join(lines)
    lat = report.latency_ms
    waited = (
        f" after waiting {report.waited_seconds:.0f} s for puts of unknown outcome" if report.waited_seconds else ""
    )
    if report.checks == "delivery":
        lines.append(
            f"delivery {'OK' if report.ok else 'FAILED'}: read back {report.read_back}, lost {report.lost}, "
            f"duplicated {report.duplicated} (possible {report.possible_duplicates}); {report.checks_note}"
        )
        return "\n".join(lines)
    lines.append(
        f"verification {'OK' if report.ok else 'FAILED'}: read back {report.read_back}, lost {report.lost}, "
        f"duplicated {report.duplicated} (possible {report.possible_duplicates}), out of order {report.out_of_order}, "
        f"misplaced {report.misplaced}; latency p50 {lat['p50']} ms, p99 {lat['p99']} ms, max {lat['max']} ms; "
        f"{counted(len(report.shards), 'shard')} read in {report.read_seconds:.2f} s{waited}"
    )
    if report.late_duplicates:
        lines.append(
            f"{report.late_duplicates} late duplicates arrived after later records of their key "
            "(order is judged by each record's first copy)"
        )
    if report.first_out_of_order_line:
        lines.append(report.first_out_of_order_line)
    for problem in report.problems[:10]:
        if problem.kind != "duplicated":
            lines.append(f"  {problem.kind}: {problem.key} #{problem.seq}: {problem.detail}")
    return "\n".join(lines)
