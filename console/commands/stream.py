"""`kconsole stream create|delete|retention|mode|encryption|describe NAME`: a stream's life.

    kconsole stream create orders --shards 4 [--retention-hours 48] [--wait]
    kconsole stream create clicks --on-demand
    kconsole stream retention orders --hours 24          # says what a decrease makes unreadable
    kconsole stream mode orders on-demand | provisioned [--shards N]
    kconsole stream encryption orders --kms-key alias/aws/kinesis | --off
    kconsole stream delete orders [--enforce-consumer-deletion] [--yes]
    kconsole stream describe orders [--json]
    kconsole stream max-record-size orders --kib 10240    # records up to 10 MiB
    kconsole stream warm-throughput clicks --mibps 100     # on-demand, with On-demand Advantage
    kconsole stream distribution clicks auto | partition-key
    kconsole stream tag orders team=payments tier=1 / untag orders tier
    kconsole stream policy orders [--show | --put policy.json | --delete]

Every change is planned first (console.lifecycle.plans and .settings: AWS's rules checked before any
call), shown, confirmed by typing the stream name on a TTY (or --yes), refused under --read-only, and
written to the action log ahead of each call (no log, no call), whose mode switches the 24-hour rule
reads back. A call whose reply is lost is settled by reading the stream back. Preparing and running
each change is console.lifecycle.actions' job, shared with the console's Stream actions menu.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from console.bounds import argtype, record_size_kib, validate_stream_name, warm_throughput_mibps
from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._options import options_from
from console.commands._output import emit, note, run_async
from console.commands.stream_describe import run_describe
from console.errors import BadInput, PlanRejected
from console.lifecycle import actions
from console.lifecycle.plans import LifecyclePlan
from console.lifecycle.rules import (
    AWS_MANAGED_KMS_KEY,
    MAX_RETENTION_HOURS,
    MIN_RETENTION_HOURS,
    check_kms_key,
    check_retention_hours,
    parse_mode,
    parse_shard_count,
)
from console.lifecycle.settings import check_tag_key, parse_distribution, parse_tag, policy_or_none, read_policy

if TYPE_CHECKING:
    from console.backend.protocol import StreamChangesBackend, StreamReads, StreamSettingsBackend
    from console.reshard.actionlog import ActionLog

Handler: TypeAlias = Callable[[argparse.Namespace], int]
# A change prepared against the open backend (console.lifecycle.actions.prepare_*).
Prepare: TypeAlias = "Callable[[StreamChangesBackend], Awaitable[LifecyclePlan]]"

DEFAULT_WAIT_SECONDS = 300.0
_VERBS = {
    "create": "create",
    "delete": "delete",
    "retention": "change the retention of",
    "mode": "switch the capacity mode of",
    "encryption": "change the encryption of",
    "max-record-size": "change the record size limit of",
    "warm-throughput": "change the warm throughput of",
    "distribution": "change the record distribution of",
    "tag": "tag",
    "untag": "untag",
    "policy": "change the resource policy of",
}
ACTIONS = (
    "create",
    "delete",
    "retention",
    "mode",
    "encryption",
    "describe",
    "max-record-size",
    "warm-throughput",
    "distribution",
    "tag",
    "untag",
    "policy",
)


def register(subparsers: Subparsers, common: Parents) -> None:
    stream = subparsers.add_parser(
        "stream",
        parents=common,
        help=command_help("stream"),
        description="A stream's life: create it, change its retention, capacity mode or encryption, "
        "describe it, delete it. Every change shows its plan first and asks for the stream name "
        "on a TTY (--yes without one); --read-only refuses them.",
    )
    stream.set_defaults(handler=_no_action)
    actions = stream.add_subparsers(dest="stream_action", metavar="ACTION", parser_class=type(stream))

    def action(name: str, help_text: str, handler: Handler, *, changes: bool = True) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=common, help=help_text, description=help_text)
        parser.add_argument("stream", metavar="NAME", type=_stream_name, help="the stream's name")
        if changes:
            parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
            parser.add_argument("--wait", action="store_true", help="wait until the stream is ACTIVE again (or gone)")
        parser.set_defaults(handler=handler)
        return parser

    create = action("create", "create a stream: provisioned with --shards N (default 4) or --on-demand", run_create)
    size = create.add_mutually_exclusive_group()
    # SUPPRESS: a top-level `kconsole --shards N stream create ...` is kept, not overwritten with None.
    size.add_argument(
        "--shards",
        type=parse_shard_count,
        default=argparse.SUPPRESS,
        metavar="N",
        help="provisioned shard count, 1 to 10,000 (default 4)",
    )
    size.add_argument("--on-demand", action="store_true", help="on-demand capacity mode (AWS sizes the stream)")
    create.add_argument(
        "--retention-hours",
        type=_retention("--retention-hours"),
        default=None,
        metavar="H",
        help=f"retention from {MIN_RETENTION_HOURS} to {MAX_RETENTION_HOURS} hours (default 24)",
    )

    delete = action("delete", "delete a stream and every record in it (shows what is lost, asks first)", run_delete)
    delete.add_argument(
        "--enforce-consumer-deletion",
        action="store_true",
        help="also deregister the stream's enhanced fan-out consumers (AWS refuses otherwise)",
    )

    retention = action("retention", "increase or decrease how long records stay readable", run_retention)
    retention.add_argument(
        "--hours",
        type=_retention("--hours"),
        required=True,
        metavar="H",
        help=f"{MIN_RETENTION_HOURS} to {MAX_RETENTION_HOURS}; a decrease drops older records at once",
    )

    mode = action("mode", "switch between on-demand and provisioned capacity (once per 24 h)", run_mode)
    mode.add_argument("mode", metavar="MODE", type=parse_mode, help="on-demand or provisioned")
    mode.add_argument(
        "--shards",
        dest="target_shards",
        type=parse_shard_count,
        default=None,
        metavar="N",
        help="with provisioned: rescale to N shards after the switch (default: keep the count)",
    )

    encryption = action("encryption", "turn server-side encryption (KMS) on, change its key, or off", run_encryption)
    which = encryption.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--kms-key",
        type=check_kms_key,
        metavar="ALIAS|ARN",
        help=f"KMS key alias, id or ARN (AWS's own key: {AWS_MANAGED_KMS_KEY})",
    )
    which.add_argument("--off", action="store_true", help="stop encrypting new records")

    describe = action(
        "describe",
        "everything DescribeStreamSummary says, plus tags, consumers and enhanced monitoring",
        run_describe,
        changes=False,
    )
    record_size = action(
        "max-record-size",
        "raise or lower the largest record the stream takes (MaxRecordSizeInKiB, 1 to 10 MiB)",
        run_max_record_size,
    )
    record_size.add_argument(
        "--kib",
        type=argtype(record_size_kib, "--kib"),
        required=True,
        metavar="N",
        help="1024 (1 MiB, the default) to 10240 (10 MiB)",
    )
    warm = action(
        "warm-throughput",
        "keep an on-demand stream ready for a throughput at once (needs the account's On-demand Advantage)",
        run_warm_throughput,
    )
    warm.add_argument(
        "--mibps",
        type=argtype(warm_throughput_mibps, "--mibps"),
        required=True,
        metavar="N",
        help="0 to 10240 MiB/s (10 GiB/s); 0 keeps none warm",
    )
    distribution = action(
        "distribution",
        "AUTO: Kinesis spreads records and ignores keys (on-demand only); partition-key: keys place records",
        run_distribution,
    )
    distribution.add_argument(
        "strategy", metavar="auto|partition-key", type=parse_distribution, help="auto or partition-key"
    )
    tag = action("tag", "add or change tags on the stream (TagResource)", run_tag)
    tag.add_argument("tags", nargs="+", metavar="KEY=VALUE", type=parse_tag, help="tags to set")
    untag = action("untag", "remove tags from the stream (UntagResource)", run_untag)
    untag.add_argument("keys", nargs="+", metavar="KEY", type=check_tag_key, help="tag keys to remove")
    policy = action("policy", "show, put or delete the stream's resource policy", run_policy)
    which_policy = policy.add_mutually_exclusive_group()
    which_policy.add_argument("--show", action="store_true", help="print the policy (changes nothing; the default)")
    which_policy.add_argument("--put", metavar="FILE", help="put this JSON policy (checked before the call)")
    which_policy.add_argument("--delete", action="store_true", help="delete the policy")
    for parser in (retention, encryption, describe, record_size, warm, distribution, tag, untag, policy):
        # SUPPRESS keeps a value given before the command name (`kconsole --local --shards 8 stream ...`).
        parser.add_argument(
            "--shards",
            type=parse_shard_count,
            default=argparse.SUPPRESS,
            metavar="N",
            help="with --local: shard count if the stream has to be created (default 4)",
        )


def _no_action(_args: argparse.Namespace) -> int:
    raise BadInput(f"kconsole stream: choose an action: {', '.join(ACTIONS)}", code="usage")


def _stream_name(text: str) -> str:
    return validate_stream_name(text)


def _retention(option: str) -> Callable[[str], int]:
    return lambda text: check_retention_hours(text, option=option)


@dataclass(frozen=True)
class StreamOptions:
    """What `kconsole stream ACTION NAME` was asked; an option the action does not take keeps its default."""

    stream: str
    wait: bool = False
    on_demand: bool = False  # create
    shards: int | None = None  # create (or the top-level --shards)
    retention_hours: int | None = None  # create
    enforce_consumer_deletion: bool = False  # delete
    hours: int = 0  # retention
    mode: str = ""  # mode: ON_DEMAND or PROVISIONED
    target_shards: int | None = None  # mode --shards
    kms_key: str | None = None  # encryption
    off: bool = False  # encryption
    kib: int = 0  # max-record-size
    mibps: int = 0  # warm-throughput
    strategy: str = ""  # distribution
    tags: list[tuple[str, str]] = field(default_factory=list)  # tag
    keys: list[str] = field(default_factory=list)  # untag
    show: bool = False  # policy
    put: str | None = None  # policy
    delete: bool = False  # policy


# ---- running a change --------------------------------------------------------------------------
# Every change is prepared and run by console.lifecycle.actions; this face collects the answers from
# the arguments, renders the plan, and asks for the stream name (or --yes).


def _history() -> ActionLog:
    from console.reshard.actionlog import ActionLog

    return ActionLog.default()


def _refuse_or_confirm(args: Any, plan: LifecyclePlan, *, consequence: str) -> bool:
    """True when there is something to do and the operator agreed; exit 1 on a refusal."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    if plan.is_noop:
        return False
    confirm_by_stream_name(
        args, change=f"{_VERBS[plan.action]} {plan.stream}", consequence=consequence, preview=plan.render() + "\n"
    )
    return True


async def _run(kinesis: StreamChangesBackend, plan: LifecyclePlan) -> None:
    """The plan's calls, each logged before it is made; a lost reply the stream settled is said."""
    await actions.run(kinesis, plan, action_log=_history(), progress=_progress_note)


def _finish(args: Any, plan: LifecyclePlan, executed: bool, status: str | None, after: Any = None) -> int:
    document = {"executed": executed, "status": status, "plan": plan.to_json()}
    if after is not None:  # the stream as read back after the change
        document["stream"] = after.to_json()
    if executed:
        text = f"{plan.render()}\nDone: {plan.summary}" + (f"; stream {status}" if status else "")
    else:
        text = plan.render()
    emit(args, document, text)
    return 0


async def _wait_active(kinesis: StreamSettingsBackend, stream: str, timeout: float = DEFAULT_WAIT_SECONDS) -> str:
    status: str = (await kinesis.wait_for_active(stream, timeout=timeout)).status
    return status


# ---- create ------------------------------------------------------------------------------------


def run_create(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    on_demand = bool(options.on_demand)
    shards = options.shards
    if on_demand and shards is not None:
        raise BadInput("give --shards N or --on-demand, not both", code="usage")
    refuse_if_read_only(args, f"create stream {options.stream}")
    return run_async(_create(args, options, None if on_demand else (shards or 4)))


async def _create(args: argparse.Namespace, options: StreamOptions, shards: int | None) -> int:
    async with with_backend(args) as kinesis:  # on --local no stream made first: making it is the point
        plan = await actions.prepare_create(
            kinesis, options.stream, shards=shards, on_demand=options.on_demand, retention_hours=options.retention_hours
        )
        if plan.ok:
            note(f"creating {options.stream!r}: {plan.summary} on {kinesis.label}")
        await _run(kinesis, plan)
        status = (
            await _wait_active(kinesis, options.stream)
            if options.wait
            else (await kinesis.describe_stream_summary(options.stream)).status
        )
    return _finish(args, plan, True, status)


# ---- delete ------------------------------------------------------------------------------------


def run_delete(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"delete stream {options.stream}")
    return run_async(_delete(args, options))


async def _delete(args: argparse.Namespace, options: StreamOptions) -> int:
    async with with_backend(args) as kinesis:  # on --local no stream made only to be dropped
        plan = await actions.prepare_delete(
            kinesis, options.stream, enforce_consumer_deletion=options.enforce_consumer_deletion
        )
        if plan.facts.get("consumers_unknown"):
            note(f"kconsole: consumers unknown: {plan.facts['consumers_unknown']}")
        if not _refuse_or_confirm(args, plan, consequence="delete the stream and every record in it"):
            return _finish(args, plan, False, (await kinesis.describe_stream_summary(options.stream)).status)
        await _run(kinesis, plan)
        status = "DELETING"
        if options.wait:
            status = await _wait_gone(kinesis, options.stream)
    return _finish(args, plan, True, status)


async def _wait_gone(kinesis: StreamReads, stream: str, timeout: float = DEFAULT_WAIT_SECONDS) -> str:
    deadline = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < deadline:
        if not await actions.stream_exists(kinesis, stream):
            return "DELETED"
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
    return "DELETING"


# ---- retention, mode, encryption ---------------------------------------------------------------


def run_retention(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"change the retention of {options.stream}")
    return run_async(
        _change(args, options, lambda kinesis: actions.prepare_retention(kinesis, options.stream, options.hours))
    )


def run_mode(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    shards = options.target_shards
    if options.mode == "ON_DEMAND" and shards is not None:
        raise BadInput("--shards applies only to provisioned mode (AWS sizes an on-demand stream)", code="usage")
    refuse_if_read_only(args, f"switch the capacity mode of {options.stream}")

    def prepare(kinesis: StreamChangesBackend) -> Awaitable[LifecyclePlan]:
        return actions.prepare_mode(
            kinesis, options.stream, options.mode, shards=shards, action_log=_history(), now=time.time()
        )

    return run_async(_change(args, options, prepare))


def run_encryption(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"change the encryption of {options.stream}")
    key = None if options.off else options.kms_key
    return run_async(_change(args, options, lambda kinesis: actions.prepare_encryption(kinesis, options.stream, key)))


async def _change(args: argparse.Namespace, options: StreamOptions, prepare: Prepare) -> int:
    async with with_backend(args, stream=options.stream) as kinesis:
        plan = await prepare(kinesis)
        if not _refuse_or_confirm(args, plan, consequence=plan.summary):
            return _finish(args, plan, False, (await kinesis.describe_stream_summary(options.stream)).status)
        await _run(kinesis, plan)
        status = (
            await _wait_active(kinesis, options.stream)
            if options.wait
            else (await kinesis.describe_stream_summary(options.stream)).status
        )
    return _finish(args, plan, True, status)


# ---- today's settings: record size, warm throughput, distribution, tags, policy ----------------


def run_max_record_size(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"change the record size limit of {options.stream}")
    return run_async(
        _setting(args, options, lambda kinesis: actions.prepare_max_record_size(kinesis, options.stream, options.kib))
    )


def run_warm_throughput(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"change the warm throughput of {options.stream}")
    return run_async(
        _setting(args, options, lambda kinesis: actions.prepare_warm_throughput(kinesis, options.stream, options.mibps))
    )


def run_distribution(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"change the record distribution of {options.stream}")
    return run_async(
        _setting(args, options, lambda kinesis: actions.prepare_distribution(kinesis, options.stream, options.strategy))
    )


def run_tag(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    tags = dict(options.tags)
    refuse_if_read_only(args, f"tag {options.stream}")
    return run_async(_setting(args, options, lambda kinesis: actions.prepare_tag(kinesis, options.stream, tags)))


def run_untag(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    refuse_if_read_only(args, f"untag {options.stream}")
    return run_async(
        _setting(args, options, lambda kinesis: actions.prepare_untag(kinesis, options.stream, options.keys))
    )


def run_policy(args: argparse.Namespace) -> int:
    options = options_from(StreamOptions, args)
    if options.show or (options.put is None and not options.delete):
        return run_async(_show_policy(args, options))
    policy = read_policy(options.put) if options.put is not None else None  # checked before anything connects
    refuse_if_read_only(args, f"change the resource policy of {options.stream}")
    return run_async(_setting(args, options, lambda kinesis: actions.prepare_policy(kinesis, options.stream, policy)))


async def _show_policy(args: argparse.Namespace, options: StreamOptions) -> int:
    async with with_backend(args, stream=options.stream) as kinesis:
        summary = await kinesis.describe_stream_summary(options.stream)
        policy = policy_or_none(await kinesis.resource_policy(summary.arn))
    import json

    document = {"stream": options.stream, "arn": summary.arn, "policy": json.loads(policy) if policy else None}
    emit(
        args,
        document,
        json.dumps(document["policy"], indent=2) if policy else f"{options.stream} has no resource policy",
    )
    return 0


async def _setting(args: argparse.Namespace, options: StreamOptions, prepare: Prepare) -> int:
    """Plan against the stream as it is, confirm, make the call, read the stream back."""
    async with with_backend(args, stream=options.stream) as kinesis:
        plan = await prepare(kinesis)
        if not _refuse_or_confirm(args, plan, consequence=plan.summary):
            summary = await kinesis.describe_stream_summary(options.stream)
            return _finish(args, plan, False, summary.status, summary)
        await actions.run(kinesis, plan, action_log=_history(), progress=_progress_note)
        after = (
            await kinesis.wait_for_active(options.stream, timeout=DEFAULT_WAIT_SECONDS)
            if options.wait
            else await kinesis.describe_stream_summary(options.stream)
        )
    return _finish(args, plan, True, after.status, after)


def _progress_note(text: str) -> None:
    if not text.startswith("calling"):
        note(f"kconsole: {text}")
