"""`kconsole plan ...` (what-if only) and `kconsole reshard ...` (the same plan, then carried out).

    kconsole plan split STREAM --shard ID [--at HASH_KEY | --at midpoint | --at-median-of KEYS_FILE
                                           | --at-median-of-recent [--sample-seconds S] [--sample-limit N]]
    kconsole plan merge STREAM --shard ID --adjacent ID
    kconsole plan scale STREAM --to N
    kconsole plan even  STREAM [--to N]
    kconsole plan scale --shards 4 --to 8        # offline: an even 4-shard stream, no backend
    kconsole reshard split|merge|scale|even STREAM ... [--yes] [--wait] [--json]

A plan that breaches a limit exits 1 (`plan` still prints it; `reshard` calls nothing).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from console.bounds import (
    UPDATE_SHARD_COUNT_MAX,
    argtype,
    read_text_lines,
    retention_window,
    scale_target,
    shard_count,
    timeout,
    whole_number,
)
from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._options import options_from
from console.commands._output import emit, note, run_async
from console.errors import BadInput, PlanRejected
from console.keyspace.hashkeys import even_split, parse_hash_key, shard_id_for_index
from console.lifecycle.rules import parse_shard_count
from console.reshard.actionlog import ActionLog
from console.reshard.limits import Limits, StreamContext
from console.reshard.plan import (
    KeySample,
    MedianSplit,
    ReshardPlan,
    median_split,
    midpoint,
    plan_even,
    plan_merge,
    plan_scale,
    plan_split,
    render_plan,
)
from console.reshard.sample import DEFAULT_SAMPLE_LIMIT, DEFAULT_SAMPLE_SECONDS
from console.topology.model import Shard, StreamSummary
from console.words import counted

if TYPE_CHECKING:
    from console.backend.protocol import BackendConnection, ConsoleBackend, ConsumersBackend, RecordsBackend

if TYPE_CHECKING:  # the executor and the consumer barrier load only when a stream is planned against
    from console.consumers.barrier import BarrierReport
    from console.consumers.readers import ReshardReaders
    from console.reshard.execute import ExecutionResult, Executor, PlanBuilder

ACTIONS = ("split", "merge", "scale", "even")
MAX_SAMPLE_LIMIT = 1_000_000  # records read for a median: 100 full GetRecords calls


def register(subparsers: Subparsers, common: Parents) -> None:
    plan = subparsers.add_parser(
        "plan",
        parents=common,
        help=command_help("plan"),
        description="Show exactly what a split, merge, rescale or make-even would do.",
    )
    reshard = subparsers.add_parser(
        "reshard",
        parents=common,
        help=command_help("reshard"),
        description="Plan, confirm, then split, merge or rescale a stream.",
    )
    for parent, mutating in ((plan, False), (reshard, True)):
        actions = parent.add_subparsers(dest="action", metavar="ACTION", required=True)
        for action in ACTIONS:
            parser = actions.add_parser(action, parents=common, help=_ACTION_HELP[action])
            _add_action_arguments(parser, action, mutating=mutating)
            parser.set_defaults(handler=run_reshard if mutating else run_plan)


_ACTION_HELP = {
    "split": "split one shard in two (SplitShard)",
    "merge": "merge two adjacent shards (MergeShards)",
    "scale": "rescale to N equal shards (UpdateShardCount, UNIFORM_SCALING)",
    "even": "make all open shards equal with explicit splits and merges",
}


def _add_action_arguments(parser: argparse.ArgumentParser, action: str, *, mutating: bool) -> None:
    parser.add_argument(
        "stream",
        nargs=None if mutating else "?",
        metavar="STREAM",
        help="the stream" if mutating else "the stream (or use --shards N to plan offline)",
    )
    if not mutating:
        # SUPPRESS: a top-level `kconsole --local --shards 8 plan ...` is kept, not reset to None.
        parser.add_argument(
            "--shards",
            type=parse_shard_count,
            default=argparse.SUPPRESS,
            metavar="N",
            help="plan against an offline stream of N equal shards (no backend needed); "
            "with --local and STREAM: the shard count if the stream has to be created",
        )
    else:
        # SUPPRESS keeps a value given before the command name (`kconsole --local --shards 8 reshard ...`).
        parser.add_argument(
            "--shards",
            type=parse_shard_count,
            default=argparse.SUPPRESS,
            metavar="N",
            help="with --local: shard count if the stream has to be created (default 4)",
        )
    if action == "split":
        parser.add_argument("--shard", required=True, metavar="ID", help="the shard to split")
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--at",
            default=None,
            metavar="HASH_KEY|midpoint",
            help="NewStartingHashKey of the upper child (decimal), or 'midpoint' (the default)",
        )
        where.add_argument(
            "--at-median-of",
            default=None,
            metavar="KEYS_FILE",
            type=Path,
            help="split at the median hash key of these partition keys (one per line)",
        )
        where.add_argument(
            "--at-median-of-recent",
            action="store_true",
            help="split at the median hash key of the shard's recent records, so its current traffic divides evenly",
        )
        parser.add_argument(
            "--sample-seconds",
            type=argtype(retention_window, "--sample-seconds"),
            default=None,
            metavar="S",
            help=f"with --at-median-of-recent: read the last S seconds (default {DEFAULT_SAMPLE_SECONDS:g})",
        )
        parser.add_argument(
            "--sample-limit",
            type=argtype(whole_number, "--sample-limit", low=1, high=MAX_SAMPLE_LIMIT),
            default=None,
            metavar="N",
            help=f"with --at-median-of-recent: read at most N records (default {DEFAULT_SAMPLE_LIMIT})",
        )
    elif action == "merge":
        parser.add_argument("--shard", required=True, metavar="ID", help="one of the two shards")
        parser.add_argument("--adjacent", required=True, metavar="ID", help="the shard next to it in the key space")
    elif action == "scale":
        parser.add_argument(
            "--to",
            type=argtype(scale_target, "--to"),
            required=True,
            metavar="N",
            help=f"target open shard count (1 to {UPDATE_SHARD_COUNT_MAX})",
        )
    else:
        parser.add_argument(
            "--to",
            type=argtype(shard_count, "--to"),
            default=None,
            metavar="N",
            help="number of equal shards to end with (default: the current count)",
        )
    parser.add_argument(
        "--sample-keys",
        type=Path,
        default=None,
        metavar="KEYS_FILE",
        help="partition keys (one per line): show which of them move and where",
    )
    parser.add_argument(
        "--account-shard-limit",
        type=argtype(shard_count, "--account-shard-limit"),
        default=None,
        metavar="N",
        help="the account's shard quota (default: AWS's regional default)",
    )
    parser.add_argument(
        "--lease-table",
        default=None,
        metavar="TABLE",
        help="a KCL lease table of the stream: show the consumers' lag the change would put "
        "behind the parent-before-child barrier" + (" (and refuse without --force)" if mutating else ""),
    )
    if mutating:
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="reshard even though consumers in --lease-table still have records to read in the shards it changes",
        )
        parser.add_argument(
            "--wait",
            action="store_true",
            help="wait (polling) until the stream is ACTIVE again, showing progress on stderr",
        )
        parser.add_argument(
            "--timeout",
            type=argtype(timeout, "--timeout"),
            default=900.0,
            metavar="SECONDS",
            help="give up waiting after this long (default 900)",
        )


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ReshardOptions:
    """What `kconsole plan|reshard ACTION` was asked; an option the action does not take keeps its default."""

    action: str  # split, merge, scale or even
    stream: str | None = None  # None: `plan --shards N` offline
    shards: int | None = None
    shard: str = ""  # split, merge
    at: str | None = None  # split: a hash key, or midpoint
    at_median_of: Path | None = None  # split: a keys file
    at_median_of_recent: bool = False  # split
    sample_seconds: float | None = None
    sample_limit: int | None = None
    adjacent: str = ""  # merge
    to: int = 0  # scale, even
    sample_keys: Path | None = None
    account_shard_limit: int | None = None
    lease_table: str | None = None
    force: bool = False  # reshard
    wait: bool = False  # reshard
    timeout: float = 900.0  # reshard

    @property
    def named_stream(self) -> str:
        """The stream, where the command works on one (only `plan --shards N` plans offline)."""
        if self.stream is None:
            raise BadInput("name a STREAM", code="usage")
        return self.stream


def read_keys(path: Path) -> KeySample:
    """Partition keys, one per line (blank lines skipped), read within console.bounds' caps; each
    must be 1-256 characters."""
    keys = list(filter(None, read_text_lines(str(path), what="keys file", code="bad_keys_file")))
    if keys and max(map(len, keys)) > 256:
        number, key = next((n, k) for n, k in enumerate(keys, 1) if len(k) > 256)
        raise BadInput(
            f"{path}: key {number} is {len(key)} characters; partition keys are 1 to 256", code="bad_keys_file"
        )
    if not keys:
        raise BadInput(f"keys file {path} has no keys", code="bad_keys_file")
    return KeySample.from_partition_keys(keys)


def offline_shards(count: int) -> list[Shard]:
    count = shard_count(count)
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count))]


@dataclass(frozen=True)
class PlanInputs:
    """Everything a plan needs from the command line, checked and read once, before any I/O."""

    limits: Limits
    sample: KeySample | None  # --sample-keys: show which of these keys move
    median_of: KeySample | None  # --at-median-of KEYS_FILE
    explicit_key: int | None  # --at HASH_KEY
    recent: bool  # --at-median-of-recent: the split key comes from the stream's records
    sample_seconds: float
    sample_limit: int


def read_inputs(options: ReshardOptions) -> PlanInputs:
    if options.lease_table is not None:
        if options.stream is None:
            raise BadInput("--lease-table reads the stream's consumers: name a STREAM (not --shards N)", code="usage")
        from console.commands._lease_args import validate_table_name

        validate_table_name(options.lease_table)
    sample = read_keys(options.sample_keys) if options.sample_keys else None
    median_of, explicit, recent = None, None, bool(options.at_median_of_recent)
    seconds, limit = options.sample_seconds, options.sample_limit
    if (seconds is not None or limit is not None) and not recent:
        raise BadInput("--sample-seconds and --sample-limit only apply with --at-median-of-recent", code="usage")
    seconds = DEFAULT_SAMPLE_SECONDS if seconds is None else seconds
    limit = DEFAULT_SAMPLE_LIMIT if limit is None else limit
    if recent and options.stream is None:
        raise BadInput("--at-median-of-recent reads the stream's records: name a STREAM (not --shards N)", code="usage")
    if options.action == "split":
        median_of = read_keys(options.at_median_of) if options.at_median_of else None
        at = options.at.strip().lower() if options.at else "midpoint"
        if options.at and at != "midpoint":
            explicit = parse_hash_key(options.at, what="--at hash key")
    return PlanInputs(
        Limits(account_shard_limit=options.account_shard_limit), sample, median_of, explicit, recent, seconds, limit
    )


def plan_builder(
    options: ReshardOptions, inputs: PlanInputs | None = None, recent_median: MedianSplit | None = None
) -> PlanBuilder:
    """A function from (shards, context) to the plan, so execution can rebuild it from fresh state.
    With --at-median-of-recent, `recent_median` is the split read from the stream
    (`median_split_of_recent`); the builder reuses it rather than reading again."""
    inputs = inputs or read_inputs(options)
    limits, sample = inputs.limits, inputs.sample
    if options.action == "split":

        def build(shards: Sequence[Shard], context: StreamContext | None) -> ReshardPlan:
            target = next((s for s in shards if s.shard_id == options.shard), None)
            median = None
            if target is None or inputs.explicit_key is not None:
                key, basis = inputs.explicit_key or 0, "explicit hash key"  # plan_split names an unknown shard
            elif inputs.median_of is not None:
                median = median_split(target, inputs.median_of, str(options.at_median_of))
                outside = median.sampled - median.inside
                key, basis = (
                    median.key,
                    (
                        f"median of {counted(median.inside, 'key')} in {options.at_median_of}"
                        + (f"; {outside} more hash outside the shard" if outside else "")
                    ),
                )
            elif inputs.recent and target.is_open:
                if recent_median is None or recent_median.shard_id != target.shard_id:
                    raise ValueError("--at-median-of-recent: sample the shard's records before planning")
                median = recent_median
                key, basis = (
                    median.key,
                    f"median of {counted(median.inside, 'record')} of the last {inputs.sample_seconds:g} s",
                )
            else:  # midpoint, or a closed shard (which the plan rejects whatever the key)
                key, basis = midpoint(target), "midpoint"
            return plan_split(
                shards, options.shard, key, basis=basis, context=context, limits=limits, sample=sample, median=median
            )

        return build
    if options.action == "merge":
        return lambda shards, context: plan_merge(
            shards, options.shard, options.adjacent, context=context, limits=limits, sample=sample
        )
    if options.action == "scale":
        return lambda shards, context: plan_scale(shards, options.to, context=context, limits=limits, sample=sample)
    return lambda shards, context: plan_even(shards, options.to, context=context, limits=limits, sample=sample)


def _executor(kinesis: ConsoleBackend, options: ReshardOptions, *, quiet: bool = False) -> Executor:
    from console.reshard.execute import Executor

    return Executor(
        kinesis,
        options.named_stream,
        action_log=ActionLog.default(),
        progress=(lambda _: None) if quiet else note,
        timeout=options.timeout,
    )


# ---------------------------------------------------------------- plan


def run_plan(args: argparse.Namespace) -> int:
    options = options_from(ReshardOptions, args)
    inputs = read_inputs(options)
    build = plan_builder(options, inputs)
    barrier, readers = None, None
    if options.stream is None:
        if options.shards is None:
            raise BadInput(
                "name a STREAM, or give --shards N to plan against an even N-shard stream offline", code="usage"
            )
        plan = build(offline_shards(options.shards), None)
    else:
        if options.shards is not None and not getattr(args, "local", False):
            raise BadInput("give either STREAM or --shards N, not both", code="usage")
        plan, barrier, readers = run_async(_plan_from_stream(args, options, inputs, build))
    document = (
        plan.to_json()
        | ({"consumers": barrier.to_json()} if barrier else {})
        | ({"readers": readers.to_json()} if readers else {})
    )
    emit(args, document, lambda: render_plan(plan) + _extra_lines(barrier, readers))
    if plan.breaches:
        note(f"kconsole: plan breaches {len(plan.breaches)} limit(s); `kconsole reshard` would refuse it")
        return 1
    return 0


def _extra_lines(barrier: BarrierReport | None, readers: ReshardReaders | None) -> str:
    lines = (barrier.lines() if barrier else []) + (readers.lines() if readers else [])
    return "".join("\n" + line for line in lines)


async def _plan_from_stream(
    args: argparse.Namespace, options: ReshardOptions, inputs: PlanInputs, build: PlanBuilder
) -> tuple[ReshardPlan, BarrierReport | None, ReshardReaders | None]:
    async with with_backend(args, stream=options.stream) as kinesis:
        summary, shards, context = await _executor(kinesis, options, quiet=True).snapshot()
        inputs, build, _notice = await _respect_distribution(kinesis, options, summary, inputs, build)
        build = await _with_recent_median(kinesis, options, inputs, shards, build)
        plan = build(shards, context)
        barrier = await _barrier(kinesis, options, summary, shards, plan)
        return plan, barrier, await _readers(kinesis, options, plan)


async def _readers(kinesis: ConsoleBackend, options: ReshardOptions, plan: ReshardPlan) -> ReshardReaders | None:
    """The stream's readers the plan affects (every reader found; the lease table given, else the
    stream's lease tables found); None for a plan that changes nothing."""
    if plan.is_noop or not plan.ok:
        return None
    from console.consumers.barrier import changed_shards
    from console.consumers.readers import readers_for_reshard

    lease_table = options.lease_table
    return await readers_for_reshard(
        kinesis,
        options.named_stream,
        closes=changed_shards(plan.before, (s.shard_id for s in plan.after if s.unchanged and s.shard_id)),
        shards_before=len(plan.before),
        shards_after=len(plan.after),
        lease_tables=[lease_table] if lease_table else None,
    )


async def _barrier(
    kinesis: ConsumersBackend,
    options: ReshardOptions,
    summary: StreamSummary,
    shards: Sequence[Shard],
    plan: ReshardPlan,
) -> BarrierReport | None:
    """With --lease-table: the consumers' lag in the shards the plan closes (read from the lease table)."""
    if not options.lease_table:
        return None
    from console.consumers.barrier import barrier_analysis, changed_shards
    from console.consumers.look import consumer_report

    report = await consumer_report(
        kinesis, options.named_stream, lease_table=options.lease_table, shards=shards, stream_arn=summary.arn
    )
    changed = changed_shards(
        plan.before, (shard.shard_id for shard in plan.after if shard.unchanged and shard.shard_id)
    )
    return barrier_analysis(report, shards, changed)


async def _respect_distribution(
    kinesis: BackendConnection, options: ReshardOptions, summary: StreamSummary, inputs: PlanInputs, build: PlanBuilder
) -> tuple[PlanInputs, PlanBuilder, str | None]:
    """On an AUTO stream keys do not place records: a split at their median is refused (nothing is
    read or called); the plan itself counts no key's move (console.reshard.plan); the notice says why."""
    if not getattr(summary, "auto_distribution", False):
        return inputs, build, None
    from console.commands._distribution import distribution_since
    from console.topology.model import auto_notice

    notice = auto_notice(options.named_stream, await distribution_since(kinesis, options.named_stream))
    if inputs.median_of is not None or inputs.recent:
        option = "--at-median-of-recent" if inputs.recent else "--at-median-of"
        raise PlanRejected(
            f"{option} refused, nothing was read or called: {options.stream} uses AUTO record "
            "distribution, so the median of partition keys says nothing about where records go; "
            "split at --at midpoint or --at HASH_KEY",
            code="auto_distribution",
        )
    note(f"kconsole: {notice}")
    return inputs, build, notice


async def _with_recent_median(
    kinesis: RecordsBackend, options: ReshardOptions, inputs: PlanInputs, shards: Sequence[Shard], build: PlanBuilder
) -> PlanBuilder:
    """--at-median-of-recent: read the shard's recent records now; the plan splits at their median."""
    if not inputs.recent:
        return build
    target = next((s for s in shards if s.shard_id == options.shard), None)
    if target is None or not target.is_open:
        return build  # the plan names the unknown or closed shard; nothing to sample
    from console.reshard.recent import median_split_of_recent

    median = await median_split_of_recent(
        kinesis, options.named_stream, target, seconds=inputs.sample_seconds, limit=inputs.sample_limit
    )
    return plan_builder(options, inputs, median)


# ---------------------------------------------------------------- reshard


def run_reshard(args: argparse.Namespace) -> int:
    options = options_from(ReshardOptions, args)
    refuse_if_read_only(args, f"{options.action} {options.stream}")
    inputs = read_inputs(options)
    build = plan_builder(options, inputs)
    done = run_async(_reshard(args, options, inputs, build))
    if done is None:
        return 0
    result, readers, plan = done
    # With --yes no prompt showed the plan: the text says what was planned before what was called.
    shown_plan = render_plan(plan) + "\n" if args.yes else ""
    emit(
        args,
        result.to_json() | ({"readers": readers.to_json()} if readers else {}),
        lambda: shown_plan + render_result(result),
    )
    if result.changed_by_others:
        note(
            f"kconsole: {options.stream} was changed by someone else meanwhile: "
            f"{', '.join(result.changed_by_others[:10])} not explained by the plan; check with "
            f"`kconsole shards {options.stream}`"
        )
        return 1
    if result.differences:
        note(
            f"kconsole: the open shards differ from the plan in {len(result.differences)} place(s); "
            "check them with `kconsole shards`"
        )
        return 1
    return 0


async def _reshard(
    args: argparse.Namespace, options: ReshardOptions, inputs: PlanInputs, build: PlanBuilder
) -> tuple[ExecutionResult, ReshardReaders | None, ReshardPlan] | None:
    async with with_backend(args, stream=options.stream) as kinesis:
        executor = _executor(kinesis, options)
        summary, shards, context = await executor.snapshot()
        inputs, build, _notice = await _respect_distribution(kinesis, options, summary, inputs, build)
        build = await _with_recent_median(kinesis, options, inputs, shards, build)
        plan = build(shards, context)
        if summary.status == "UPDATING" and options.wait:
            plan = build(shards, replace(context, status="ACTIVE"))  # execute() waits for ACTIVE first
        if plan.breaches:
            raise PlanRejected("plan rejected, nothing was called: " + "; ".join(str(b) for b in plan.breaches))
        if plan.is_noop:
            emit(args, {"executed": False, "calls": [], "plan": plan.to_json()}, render_plan(plan) + "\nNothing to do.")
            return None
        barrier = await _barrier(kinesis, options, summary, shards, plan)
        if barrier is not None and barrier.blocking and not options.force:
            raise PlanRejected(
                f"not resharding {options.stream}: {barrier.reason()}; nothing was called "
                "(pass --force to reshard anyway)",
                code="consumers_behind",
            )
        readers = await _readers(kinesis, options, plan)
        preview = render_plan(plan) + _extra_lines(barrier, readers) + "\n"
        confirm_by_stream_name(
            args,
            change=f"{options.action} {options.stream}",
            consequence=plan.summary,
            advice="review with `kconsole plan` and ",
            preview=preview,
        )
        return await executor.execute(build, expected=plan, wait=options.wait), readers, plan


def render_result(result: ExecutionResult) -> str:
    lines = [f"Called: {call}" for call in result.calls]
    lines.append(f"Stream status: {result.status}")
    if result.after is None:
        lines.append("Submitted; follow with `kconsole shards STREAM` or use --wait next time.")
    elif result.changed_by_others:
        lines.append(
            "Changed by someone else meanwhile: shards the plan does not explain: "
            + ", ".join(result.changed_by_others[:20])
        )
        lines += [f"  - {d}" for d in result.differences[:20]]
    elif result.differences:
        lines.append("Observed open shards differ from the plan:")
        lines += [f"  - {d}" for d in result.differences[:20]]
    else:
        lines.append(f"Done: {counted(len(result.after), 'open shard')}, exactly as planned.")
    return "\n".join(lines)
