"""`kconsole heat STREAM`: which shard is hot, and why — sampled live from LATEST.

    kconsole heat orders --seconds 10 --top 3 [--hottest] [--json]
    kconsole heat orders --source cloudwatch [--seconds 900]      (needs enhanced monitoring)
    kconsole heat orders --efo [--consumer NAME] [--yes]          (counted from enhanced fan-out's pushed events)
    kconsole heat orders --enable-enhanced-monitoring [--yes]     (a change: confirmation, --read-only)
    kconsole heat orders --disable-enhanced-monitoring [--yes]    (and back off, to stop the per-shard billing)

Per open shard: records/s, bytes/s, the peak second, utilisation of the shard limits (1,000
records/s, 1 MiB/s) and the top partition keys with their share of the shard. Then what to do:
for the hottest shard, the split point at the median hash of its observed traffic (as a
`kconsole plan split` command line for the reshard preview), and for a key that dominates its
shard, the write-sharding what-if (how many suffixes, which shards the sharded keys land on).

KPL aggregates are opened: top keys are the user records' own keys (marked `aggregated`), a shard
reports Kinesis records/s and bytes/s (what its limits count) and user records/s, and the split point
divides where the aggregates land (by their outer keys), not where the keys inside them hash.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from console.backend import BackendConfig
from console.commands import Parents, Subparsers, command_help
from console.commands._backend import backend_config, with_backend
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._distribution import distribution_since
from console.commands._efo import add_efo_arguments, check_efo_args, efo_subscriptions
from console.commands._mask_args import add_mask_arguments, key_mask_from_args
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.commands._read_share import add_read_share_argument, read_share_for
from console.errors import BadInput
from console.heat.cloudwatch import SHARD_LEVEL_METRICS, ShardMetricsHeat, cloudwatch_heat, limits_json
from console.heat.hotkey import HotKeyWhatIf, hot_key_what_if, needs_write_sharding
from console.heat.rates import DOMINANT_SHARE
from console.heat.sampler import DEFAULT_READS_PER_SECOND, MAX_READS_PER_SECOND, HeatSampler
from console.heat.snapshot import (
    SHARD_BYTES_LIMIT,
    SHARD_RECORDS_LIMIT,
    ShardHeatSnapshot,
    StreamHeatSnapshot,
)
from console.keyspace.hashkeys import HashRangeIndex
from console.lifecycle.rules import parse_shard_count
from console.read.printable import printable
from console.read.share import ReadShare
from console.topology.model import NO_KEY, auto_notice
from console.words import counted, plain_number

MAX_SECONDS = 3600
MAX_CLOUDWATCH_SECONDS = 14 * 24 * 3600  # 1-minute datapoints are kept for 15 days
DEFAULT_SAMPLE_SECONDS = 10.0
DEFAULT_CLOUDWATCH_SECONDS = 900.0
MAX_TOP = 100


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "heat",
        parents=common,
        help=command_help("heat"),
        description="Sample every open shard from LATEST for a while and report its heat and top keys.",
    )
    parser.add_argument("stream", metavar="STREAM")
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        metavar="S",
        help=f"how long to sample (default {DEFAULT_SAMPLE_SECONDS:g}); with --source cloudwatch: "
        f"how far back to look (default {DEFAULT_CLOUDWATCH_SECONDS:g})",
    )
    parser.add_argument("--top", type=int, default=5, metavar="K", help="top keys per shard (default 5)")
    parser.add_argument("--hottest", action="store_true", help="list the hottest shards first")
    parser.add_argument(
        "--reads-per-second",
        type=float,
        default=DEFAULT_READS_PER_SECOND,
        metavar="R",
        help=f"GetRecords calls per shard per second (default {DEFAULT_READS_PER_SECOND:g}, "
        f"at most {MAX_READS_PER_SECOND:g}: the limit is shared with other consumers)",
    )
    parser.add_argument(
        "--source",
        choices=("sample", "cloudwatch"),
        default="sample",
        help="sample: read every shard from LATEST (1-second buckets, top keys; default); "
        "cloudwatch: shard-level metrics per minute (needs enhanced monitoring)",
    )
    parser.add_argument(
        "--enable-enhanced-monitoring",
        action="store_true",
        help=f"turn on the shard-level metrics ({', '.join(SHARD_LEVEL_METRICS)}); "
        "CloudWatch bills them per shard. Changes the stream: asks for confirmation",
    )
    parser.add_argument(
        "--disable-enhanced-monitoring",
        action="store_true",
        help="turn every shard-level metric off again (their billing stops). Changes the stream: asks for confirmation",
    )
    add_efo_arguments(parser)
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
    parser.add_argument(
        "--shards",
        type=parse_shard_count,
        default=argparse.SUPPRESS,
        metavar="N",
        help="with --local: shard count if the stream has to be created (default 4)",
    )
    add_read_share_argument(parser)
    add_mask_arguments(parser, records=False)
    parser.set_defaults(handler=run_heat)


@dataclass(frozen=True)
class HeatOptions:
    stream: str
    seconds: float | None = None  # None: the --source's default, filled in by _validated
    top: int = 5
    hottest: bool = False
    reads_per_second: float = DEFAULT_READS_PER_SECOND
    source: str = "sample"  # or "cloudwatch"
    enable_enhanced_monitoring: bool = False
    disable_enhanced_monitoring: bool = False
    efo: bool = False

    @property
    def window(self) -> float:
        """--seconds, once _validated has filled in the default."""
        assert self.seconds is not None
        return self.seconds


def _validated(args: argparse.Namespace) -> HeatOptions:
    options = options_from(HeatOptions, args)
    cloudwatch = options.source == "cloudwatch"
    if options.seconds is None:
        options = replace(options, seconds=DEFAULT_CLOUDWATCH_SECONDS if cloudwatch else DEFAULT_SAMPLE_SECONDS)
    most = MAX_CLOUDWATCH_SECONDS if cloudwatch else MAX_SECONDS
    if not math.isfinite(options.window) or not 0 < options.window <= most:
        raise BadInput(f"--seconds must be above 0 and at most {most}; got {plain_number(options.window)}")
    if not 1 <= options.top <= MAX_TOP:
        raise BadInput(f"--top must be from 1 to {MAX_TOP}; got {options.top}")
    if not math.isfinite(options.reads_per_second) or not 0 < options.reads_per_second <= MAX_READS_PER_SECOND:
        raise BadInput(
            f"--reads-per-second must be above 0 and at most {MAX_READS_PER_SECOND:g} "
            f"(the GetRecords limit per shard); got {plain_number(options.reads_per_second)}"
        )
    if options.efo and cloudwatch:
        raise BadInput("--efo samples the records: it does not go with --source cloudwatch", code="usage")
    check_efo_args(args, options.stream)
    return options


def run_heat(args: argparse.Namespace) -> int:
    options = _validated(args)
    config = backend_config(args)
    if options.enable_enhanced_monitoring and options.disable_enhanced_monitoring:
        raise BadInput("--enable-enhanced-monitoring or --disable-enhanced-monitoring, not both", code="usage")
    if options.enable_enhanced_monitoring or options.disable_enhanced_monitoring:
        return run_enable_monitoring(args, options, config, on=options.enable_enhanced_monitoring)
    if options.source == "cloudwatch":
        return run_cloudwatch(args, options, config)
    key_mask = key_mask_from_args(args)
    snapshot, read_share = run_async(_sample(config, args, options))
    advice = advise(snapshot)
    if key_mask is not None:  # the advice is worked out on the real keys, then shown masked
        snapshot, advice = snapshot.with_keys(key_mask), masked_advice(advice, key_mask)
    document = snapshot.to_json()
    document["kconsole_reads"] = read_share.as_dict()
    if args.output is None:
        note(f"heat: {read_share.summary()}")
    if options.hottest:
        document["shards"] = [shard.to_json(snapshot.stream) for shard in snapshot.hottest_first()]
    document.update(advice_json(snapshot, advice))
    emit(args, document, lambda: render(snapshot, advice, hottest_first=options.hottest))
    return 0


async def _sample(
    config: BackendConfig, args: argparse.Namespace, options: HeatOptions
) -> tuple[StreamHeatSnapshot, ReadShare]:
    async with with_backend(args, stream=options.stream, config=config) as kinesis, contextlib.AsyncExitStack() as efo:
        summary = await kinesis.describe_stream_summary(options.stream)
        subscribe = await efo_subscriptions(kinesis, options.stream, args, efo, command="heat") if options.efo else None
        sampler = HeatSampler(
            kinesis,
            options.stream,
            reads_per_second=options.reads_per_second,
            read_share=read_share_for(args, config),
            subscribe=subscribe,
        )
        await sampler.start()
        if sampler.heat is not None:  # start() made it
            sampler.heat.auto_distribution = summary.auto_distribution
        if summary.auto_distribution:
            note(auto_notice(options.stream, await distribution_since(kinesis, options.stream)))
        try:
            note(
                f"sampling {options.stream} for {options.window:g} s from LATEST "
                f"({counted(len(sampler.heat.shards) if sampler.heat else 0, 'open shard')}, "
                + (
                    "counted from enhanced fan-out's pushed events)..."
                    if options.efo
                    else f"{_reads_each(options, sampler.read_share)})..."
                )
            )
            await asyncio.sleep(options.window)
        except BaseException:
            await sampler.stop(drain=False)
            raise
        await sampler.stop()
        return sampler.snapshot(top=options.top), sampler.read_share


def _reads_each(options: HeatOptions, read_share: ReadShare) -> str:
    """The reads a second each shard gets: --reads-per-second, or fewer within kconsole's read share."""
    bound = read_share.calls_per_second
    if bound is None or bound >= options.reads_per_second:
        return f"{options.reads_per_second:g} reads/s each"
    return f"{bound:g} reads/s each, within --read-share {read_share.share:g}"


# ---- what to do about it -----------------------------------------------------------------------


def advise(snapshot: StreamHeatSnapshot) -> dict[str, Any]:
    """The hottest shard's split point and a write-sharding what-if for each dominant key that is
    hot (needs_write_sharding): a key of a quiet shard needs no sharding, however dominant."""
    shards = [(s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in snapshot.open_shards]
    index = HashRangeIndex.build(shards) if shards else None
    hot_keys: list[tuple[ShardHeatSnapshot, HotKeyWhatIf]] = []
    if snapshot.auto_distribution:  # keys do not place records: write-sharding one would change nothing
        return {"hottest": snapshot.hottest, "hot_keys": hot_keys}
    for shard in snapshot.hottest_first():
        if not shard.top_keys or index is None or not shard.is_open:
            continue
        top = shard.top_keys[0]
        if top.share >= DOMINANT_SHARE and needs_write_sharding(shard.peak_utilisation, top.share):
            # Against the shard's limits a key counts the Kinesis records it takes: its user records, or
            # for a key inside aggregates, its share of the aggregates (they carry it).
            key_rate = shard.records_per_s * top.share
            key_bytes = shard.bytes_per_s * (top.bytes / shard.bytes if shard.bytes else 0.0)
            try:
                what_if = hot_key_what_if(top.key, key_rate, min(key_bytes, shard.bytes_per_s), index)
            except BadInput:  # e.g. the sharded key would pass 256 characters: no what-if for it
                continue
            hot_keys.append((shard, what_if))
    return {"hottest": snapshot.hottest, "hot_keys": hot_keys}


def masked_advice(advice: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """The advice with every partition key in it shown through `rename`."""
    hottest = advice["hottest"]
    return {
        "hottest": hottest.with_keys(rename) if hottest else None,
        "hot_keys": [(shard.with_keys(rename), what_if.with_keys(rename)) for shard, what_if in advice["hot_keys"]],
    }


def advice_json(snapshot: StreamHeatSnapshot, advice: dict[str, Any]) -> dict[str, Any]:
    hottest = advice["hottest"]
    return {
        "split_suggestion": hottest.split.to_json(snapshot.stream) if hottest and hottest.split else None,
        "hot_keys": [
            {
                "shard_id": shard.shard_id,
                "share": round(shard.top_keys[0].share, 4),
                "aggregated": shard.top_keys[0].aggregated,
                "user_records_per_s": round(shard.user_records_per_s * shard.top_keys[0].share, 3),
                **what_if.to_json(),
            }
            for shard, what_if in advice["hot_keys"]
        ],
    }


# ---- text ---------------------------------------------------------------------------------------


def _rate(value: float) -> str:
    return f"{value:,.1f}"


def _kib(value: float) -> str:
    return f"{value / 1024:,.1f}"


def _top_keys(shard: ShardHeatSnapshot) -> str:
    """Keys seen more than once (a key seen once is noise, not heat); --json lists them all."""
    repeated = [row for row in shard.top_keys if row.guaranteed_records > 1]
    shown = ", ".join(f"{printable(row.key)}{' (agg)' if row.aggregated else ''} {row.share:.0%}" for row in repeated)
    if shard.keyless_records:
        users = shard.user_records or shard.records
        shown = ", ".join(part for part in (shown, f"{NO_KEY} {shard.keyless_records / users:.0%}") if part)
    return shown or "-"


def render(snapshot: StreamHeatSnapshot, advice: dict[str, Any], *, hottest_first: bool = False) -> str:
    window = snapshot.window_end - snapshot.window_start
    lines = [auto_notice(snapshot.stream)] if snapshot.auto_distribution else []
    lines.append(
        f"heat of {snapshot.stream} over {window:.1f} s "
        f"(limits per shard: {SHARD_RECORDS_LIMIT:,} records/s, {SHARD_BYTES_LIMIT // 1024:,} KiB/s)"
    )
    aggregated = snapshot.aggregates > 0 or snapshot.decode_errors > 0
    keys_heading = ("KEYS AS SENT" if snapshot.auto_distribution else "TOP KEYS") + (
        " (share of user records)" if aggregated else " (share of shard)"
    )
    if aggregated:
        # REC/S counts Kinesis records (an aggregate is one: what the limit counts); USER/S what is inside.
        rows: list[tuple[str, ...]] = [("SHARD", "REC/S", "USER/S", "PEAK", "KiB/S", "UTIL", keys_heading)]
    else:
        rows = [("SHARD", "REC/S", "PEAK", "KiB/S", "UTIL", keys_heading)]
    shards = snapshot.hottest_first() if hottest_first else list(snapshot.shards)
    for shard in shards:
        users = (_rate(shard.user_records_per_s),) if aggregated else ()
        rows.append(
            (
                shard.shard_id + ("" if shard.is_open else " (closed)"),
                _rate(shard.records_per_s),
                *users,
                str(shard.peak_records_per_s),
                _kib(shard.bytes_per_s),
                f"{shard.utilisation:.0%}",
                _top_keys(shard),
            )
        )
    users = (_rate(snapshot.user_records_per_s),) if aggregated else ()
    rows.append(("stream total", _rate(snapshot.records_per_s), *users, "", _kib(snapshot.bytes_per_s), "", ""))
    lines.append(render_table(rows[0], rows[1:], right_aligned=set(range(1, len(rows[0]) - 1))))
    if aggregated:
        lines.append(f"{snapshot.aggregates:,} KPL aggregates opened; keys marked (agg) came from inside them")
    if snapshot.decode_errors:
        lines.append(
            f"{snapshot.decode_errors:,} malformed aggregates counted as decode-error "
            "(Kinesis records, no user records)"
        )
    keyless = sum(shard.keyless_records for shard in snapshot.shards)
    if keyless:
        lines.append(f"{keyless:,} record(s) sent without a partition key (shown as {NO_KEY})")
    hottest = advice["hottest"]
    if hottest is None:
        lines.append("no records arrived while sampling: nothing is hot")
        return "\n".join(lines)
    lines.append("")
    lines.append(
        f"hottest: {hottest.shard_id} at {hottest.utilisation:.0%} of its limit "
        f"(peak second {hottest.peak_utilisation:.0%})"
    )
    if hottest.split:
        basis = (
            "where its aggregates land (their outer keys: the keys inside an aggregate do not place it)"
            if hottest.split.by_aggregates
            else "the median hash of its traffic"
        )
        lines.append(
            f"  split at {basis} (children ~{hottest.split.lower_share:.0%} / "
            f"{1 - hottest.split.lower_share:.0%} of it): {hottest.split.command(snapshot.stream)}"
        )
        if hottest.split.dominant_key and hottest.split.dominant_aggregated:
            lines.append(
                f"  ({printable(hottest.split.dominant_key)} carries {hottest.split.dominant_share:.0%} of the "
                "shard's user records inside aggregates: a split moves whole aggregates, not that key)"
            )
        elif hottest.split.dominant_key:
            lines.append(
                f"  (a split cannot divide one key: {printable(hottest.split.dominant_key)} carries "
                f"{hottest.split.dominant_share:.0%} of the shard)"
            )
    for shard, what_if in advice["hot_keys"]:
        hits = ", ".join(f"{shard_id} x{count}" for shard_id, count in sorted(what_if.shards_hit.items()))
        key = printable(what_if.key)
        top = shard.top_keys[0]
        if top.aggregated:  # its user records are what is hot; the aggregates carrying them are few
            load = (
                f"{top.share:.0%} of {shard.shard_id}'s user records, "
                f"{_rate(shard.user_records_per_s * top.share)} user records/s inside aggregates"
            )
        else:
            load = f"{top.share:.0%} of {shard.shard_id}, {_rate(what_if.records_per_s)} records/s"
        lines.append(
            f"hot key {key} ({load}): write-shard it with {what_if.suffixes} suffixes "
            f"({key}:0..{what_if.suffixes - 1}) -> {hits}"
        )
    return "\n".join(lines)


# ---- CloudWatch source and turning it on -------------------------------------------------------


def run_cloudwatch(args: argparse.Namespace, options: HeatOptions, config: BackendConfig) -> int:
    shards, enabled = run_async(_cloudwatch(config, args, options))
    if options.hottest:
        shards = sorted(shards, key=lambda shard: (-shard.utilisation, shard.shard_id))
    hottest = max(shards, key=lambda shard: shard.utilisation, default=None)
    document = {
        "stream": options.stream,
        "source": "cloudwatch",
        "window_seconds": options.window,
        "enhanced_metrics": sorted(enabled),
        "limits": limits_json(),
        "records_per_s": round(sum(s.records_per_s for s in shards), 3),
        "bytes_per_s": round(sum(s.bytes_per_s for s in shards), 3),
        "hottest_shard": hottest.shard_id if hottest and hottest.records_per_s else None,
        "shards": [shard.to_json() for shard in shards],
    }
    emit(args, document, lambda: render_cloudwatch(options.stream, options.window, shards))
    return 0


async def _cloudwatch(
    config: BackendConfig, args: argparse.Namespace, options: HeatOptions
) -> tuple[list[ShardMetricsHeat], set[str]]:
    async with with_backend(args, stream=options.stream, config=config) as kinesis:
        summary = await kinesis.describe_stream_summary(options.stream)
        enabled = set(summary.enhanced_metrics)
        if "ALL" in enabled:
            enabled = set(SHARD_LEVEL_METRICS)
        if not enabled & {"IncomingBytes", "IncomingRecords"}:
            note(
                f"enhanced monitoring is off for {options.stream}, so CloudWatch has no shard-level data; "
                f"turn it on with `kconsole heat {options.stream} --enable-enhanced-monitoring`, or sample live "
                f"with `kconsole heat {options.stream}`"
            )
        shard_ids = [shard.shard_id for shard in await kinesis.all_shards(options.stream) if shard.is_open]
        return await cloudwatch_heat(kinesis, options.stream, shard_ids, seconds=options.window), enabled


def render_cloudwatch(stream: str, seconds: float, shards: list[ShardMetricsHeat]) -> str:
    lines = [
        f"CloudWatch heat of {stream} over the last {seconds:g} s (per-minute sums; bursts inside a "
        "minute do not show: sample with `kconsole heat` for those)"
    ]
    rows = [("SHARD", "REC/S", "PEAK MIN", "KiB/S", "UTIL", "THROTTLED", "ITER AGE")]
    for shard in shards:
        age = "-" if shard.iterator_age_ms is None else f"{shard.iterator_age_ms / 1000:,.1f} s"
        rows.append(
            (
                shard.shard_id,
                _rate(shard.records_per_s),
                _rate(shard.peak_records_per_s),
                _kib(shard.bytes_per_s),
                f"{shard.utilisation:.0%}",
                str(shard.throttled_records),
                age,
            )
        )
    lines.append(render_table(rows[0], rows[1:], right_aligned=set(range(1, len(rows[0])))))
    if not any(shard.minutes_with_data for shard in shards):
        lines.append("no datapoints in this window")
    return "\n".join(lines)


def run_enable_monitoring(
    args: argparse.Namespace, options: HeatOptions, config: BackendConfig, *, on: bool = True
) -> int:
    """Shard-level enhanced monitoring on (kconsole's metrics) or off (every metric, as ALL names them):
    prepared and run by console.lifecycle.actions, as the console's Heat tab does."""
    from console.lifecycle import actions
    from console.reshard.actionlog import ActionLog

    verb = "enable" if on else "disable"
    refuse_if_read_only(args, f"{verb} enhanced monitoring on {options.stream}")
    if on:
        action = f"enable shard-level enhanced monitoring ({', '.join(SHARD_LEVEL_METRICS)}; billed per shard)"
    else:
        action = "disable every shard-level enhanced monitoring metric (their CloudWatch billing stops)"
    confirm_by_stream_name(args, change=f"{action} on {options.stream}", consequence=action, stream=options.stream)

    async def change_monitoring() -> tuple[str, ...]:
        async with with_backend(args, stream=options.stream, config=config) as kinesis:
            if on:
                plan = await actions.prepare_enhanced_monitoring(kinesis, options.stream, SHARD_LEVEL_METRICS)
            else:
                plan = await actions.prepare_disable_monitoring(kinesis, options.stream)
            await actions.run(
                kinesis,
                plan,
                action_log=ActionLog.default(),
                progress=lambda text: None if text.startswith("calling") else note(f"kconsole: {text}"),
            )
            return (await kinesis.describe_stream_summary(options.stream)).enhanced_metrics

    enabled = run_async(change_monitoring())
    emit(
        args,
        {"stream": options.stream, "enhanced_metrics": sorted(enabled)},
        f"enhanced monitoring on {options.stream}: {', '.join(sorted(enabled)) or 'none'}",
    )
    return 0
