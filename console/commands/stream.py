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
from datetime import datetime
from typing import Any

from console.bounds import argtype, record_size_kib, validate_stream_name, warm_throughput_mibps
from console.commands import command_help
from console.commands._confirm import confirm_by_stream_name, refuse_if_read_only
from console.commands._output import emit, note, render_table, run_async
from console.commands._stream_args import ensure_local_stream
from console.errors import BadInput, ConsoleError, PlanRejected
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
from console.topology.model import StreamSummary

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


def register(subparsers, common) -> None:
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

    def action(name: str, help_text: str, handler, *, changes: bool = True) -> argparse.ArgumentParser:
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


def _no_action(_args) -> int:
    raise BadInput(f"kconsole stream: choose an action: {', '.join(ACTIONS)}", code="usage")


def _stream_name(text: str) -> str:
    return validate_stream_name(text)


def _retention(option: str):
    return lambda text: check_retention_hours(text, option=option)


# ---- running a change --------------------------------------------------------------------------
# Every change is prepared and run by console.lifecycle.actions; this face collects the answers from
# the arguments, renders the plan, and asks for the stream name (or --yes).


def _open(args: Any):
    from console.backend import BackendConfig, open_backend

    return open_backend(BackendConfig.from_args(args))


def _history():
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


async def _create_if_local(kinesis: Any, args: Any) -> None:
    """The embedded server starts empty each run: as every command does, --local creates the stream
    (not for create, which is the point, nor for delete, which would make a stream only to drop it)."""
    if kinesis.config.kind == "local":
        await ensure_local_stream(kinesis, args.stream, args)


async def _run(kinesis: Any, plan: LifecyclePlan) -> None:
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


async def _wait_active(kinesis: Any, stream: str, timeout: float = DEFAULT_WAIT_SECONDS) -> str:
    return (await kinesis.wait_for_active(stream, timeout=timeout)).status


# ---- create ------------------------------------------------------------------------------------


def run_create(args: Any) -> int:
    on_demand = bool(args.on_demand)
    shards = getattr(args, "shards", None)
    if on_demand and shards is not None:
        raise BadInput("give --shards N or --on-demand, not both", code="usage")
    refuse_if_read_only(args, f"create stream {args.stream}")
    return run_async(_create(args, None if on_demand else (shards or 4), on_demand))


async def _create(args: Any, shards: int | None, on_demand: bool) -> int:
    async with _open(args) as kinesis:
        plan = await actions.prepare_create(
            kinesis, args.stream, shards=shards, on_demand=on_demand, retention_hours=args.retention_hours
        )
        if plan.ok:
            note(f"creating {args.stream!r}: {plan.summary} on {kinesis.label}")
        await _run(kinesis, plan)
        status = (
            await _wait_active(kinesis, args.stream)
            if args.wait
            else (await kinesis.describe_stream_summary(args.stream)).status
        )
    return _finish(args, plan, True, status)


# ---- delete ------------------------------------------------------------------------------------


def run_delete(args: Any) -> int:
    refuse_if_read_only(args, f"delete stream {args.stream}")
    return run_async(_delete(args))


async def _delete(args: Any) -> int:
    async with _open(args) as kinesis:
        plan = await actions.prepare_delete(
            kinesis, args.stream, enforce_consumer_deletion=args.enforce_consumer_deletion
        )
        if plan.facts.get("consumers_unknown"):
            note(f"kconsole: consumers unknown: {plan.facts['consumers_unknown']}")
        if not _refuse_or_confirm(args, plan, consequence="delete the stream and every record in it"):
            return _finish(args, plan, False, (await kinesis.describe_stream_summary(args.stream)).status)
        await _run(kinesis, plan)
        status = "DELETING"
        if args.wait:
            status = await _wait_gone(kinesis, args.stream)
    return _finish(args, plan, True, status)


async def _consumers_or_none(kinesis: Any, stream_arn: str | None) -> list[dict] | None:
    """The stream's EFO consumers; None, with one line on stderr, where the endpoint cannot list them."""
    if not stream_arn:
        return []
    try:
        consumers: list[dict] = await kinesis.list_stream_consumers(stream_arn)
        return consumers
    except ConsoleError as error:
        if error.code != "unsupported_operation":
            raise
        note(f"kconsole: consumers unknown: {error.message}")
        return None


async def _wait_gone(kinesis: Any, stream: str, timeout: float = DEFAULT_WAIT_SECONDS) -> str:
    deadline = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < deadline:
        if not await actions.stream_exists(kinesis, stream):
            return "DELETED"
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
    return "DELETING"


# ---- retention, mode, encryption ---------------------------------------------------------------


def run_retention(args: Any) -> int:
    refuse_if_read_only(args, f"change the retention of {args.stream}")
    return run_async(_change(args, lambda kinesis: actions.prepare_retention(kinesis, args.stream, args.hours)))


def run_mode(args: Any) -> int:
    shards = args.target_shards
    if args.mode == "ON_DEMAND" and shards is not None:
        raise BadInput("--shards applies only to provisioned mode (AWS sizes an on-demand stream)", code="usage")
    refuse_if_read_only(args, f"switch the capacity mode of {args.stream}")

    def prepare(kinesis):
        return actions.prepare_mode(
            kinesis, args.stream, args.mode, shards=shards, action_log=_history(), now=time.time()
        )

    return run_async(_change(args, prepare))


def run_encryption(args: Any) -> int:
    refuse_if_read_only(args, f"change the encryption of {args.stream}")
    key = None if args.off else args.kms_key
    return run_async(_change(args, lambda kinesis: actions.prepare_encryption(kinesis, args.stream, key)))


async def _change(args: Any, prepare) -> int:
    async with _open(args) as kinesis:
        await _create_if_local(kinesis, args)
        plan = await prepare(kinesis)
        if not _refuse_or_confirm(args, plan, consequence=plan.summary):
            return _finish(args, plan, False, (await kinesis.describe_stream_summary(args.stream)).status)
        await _run(kinesis, plan)
        status = (
            await _wait_active(kinesis, args.stream)
            if args.wait
            else (await kinesis.describe_stream_summary(args.stream)).status
        )
    return _finish(args, plan, True, status)


# ---- today's settings: record size, warm throughput, distribution, tags, policy ----------------


def run_max_record_size(args: Any) -> int:
    refuse_if_read_only(args, f"change the record size limit of {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_max_record_size(kinesis, args.stream, args.kib)))


def run_warm_throughput(args: Any) -> int:
    refuse_if_read_only(args, f"change the warm throughput of {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_warm_throughput(kinesis, args.stream, args.mibps)))


def run_distribution(args: Any) -> int:
    refuse_if_read_only(args, f"change the record distribution of {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_distribution(kinesis, args.stream, args.strategy)))


def run_tag(args: Any) -> int:
    tags = dict(args.tags)
    refuse_if_read_only(args, f"tag {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_tag(kinesis, args.stream, tags)))


def run_untag(args: Any) -> int:
    refuse_if_read_only(args, f"untag {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_untag(kinesis, args.stream, args.keys)))


def run_policy(args: Any) -> int:
    if args.show or (args.put is None and not args.delete):
        return run_async(_show_policy(args))
    policy = read_policy(args.put) if args.put is not None else None  # checked before anything connects
    refuse_if_read_only(args, f"change the resource policy of {args.stream}")
    return run_async(_setting(args, lambda kinesis: actions.prepare_policy(kinesis, args.stream, policy)))


async def _show_policy(args: Any) -> int:
    async with _open(args) as kinesis:
        await _create_if_local(kinesis, args)
        summary = await kinesis.describe_stream_summary(args.stream)
        policy = policy_or_none(await kinesis.resource_policy(summary.arn))
    import json

    document = {"stream": args.stream, "arn": summary.arn, "policy": json.loads(policy) if policy else None}
    emit(
        args, document, json.dumps(document["policy"], indent=2) if policy else f"{args.stream} has no resource policy"
    )
    return 0


async def _setting(args: Any, prepare) -> int:
    """Plan against the stream as it is, confirm, make the call, read the stream back."""
    async with _open(args) as kinesis:
        await _create_if_local(kinesis, args)
        plan = await prepare(kinesis)
        if not _refuse_or_confirm(args, plan, consequence=plan.summary):
            summary = await kinesis.describe_stream_summary(args.stream)
            return _finish(args, plan, False, summary.status, summary)
        await actions.run(kinesis, plan, action_log=_history(), progress=_progress_note)
        after = (
            await kinesis.wait_for_active(args.stream, timeout=DEFAULT_WAIT_SECONDS)
            if args.wait
            else await kinesis.describe_stream_summary(args.stream)
        )
    return _finish(args, plan, True, after.status, after)


def _progress_note(text: str) -> None:
    if not text.startswith("calling"):
        note(f"kconsole: {text}")


# ---- describe ----------------------------------------------------------------------------------


def run_describe(args: Any) -> int:
    document = run_async(_describe(args))
    emit(args, document, lambda: render_description(document))
    return 0


async def _describe(args: Any) -> dict:
    async with _open(args) as kinesis:
        await _create_if_local(kinesis, args)
        raw = await kinesis.describe_stream_details(args.stream)
        tags, consumers = await asyncio.gather(
            kinesis.stream_tags(args.stream),
            _consumers_or_none(kinesis, raw.get("StreamARN")),
        )
        label = kinesis.label
    metrics = sorted({m for group in raw.get("EnhancedMonitoring", []) for m in group.get("ShardLevelMetrics", [])})
    summary = StreamSummary.from_api(raw)
    document = {
        _snake(key): _plain(value)
        for key, value in raw.items()
        if key
        not in (
            "EnhancedMonitoring",
            "WarmThroughput",
            "MaxRecordSizeInKiB",
            "RecordDistributionStrategy",
            "ChannelCount",
        )
    }
    document.update(
        {
            "record_distribution": summary.shown("record_distribution", summary.record_distribution),
            "max_record_size_kib": summary.shown("max_record_size_kib", summary.max_record_size_kib),
            "warm_throughput": summary.shown(
                "warm_throughput",
                {
                    "target_mibps": summary.warm_throughput_target_mibps,
                    "current_mibps": summary.warm_throughput_current_mibps,
                },
            ),
            "channel_count": summary.channel_count,
            "stream_id": summary.stream_id or None,
            "badges": summary.badges(),
            "backend": label,
            "stream_mode": (raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED"),
            "enhanced_monitoring": metrics,
            "tags": tags,
            "consumer_count": raw.get("ConsumerCount", None if consumers is None else len(consumers)),
            "consumers": None
            if consumers is None
            else [
                {
                    "name": c.get("ConsumerName"),
                    "status": c.get("ConsumerStatus"),
                    "arn": c.get("ConsumerARN"),
                    "created": _plain(c.get("ConsumerCreationTimestamp")),
                }
                for c in consumers
            ],
        }
    )
    document.pop("stream_mode_details", None)
    return document


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("a_r_n", "arn")


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def render_description(document: dict) -> str:
    first = (
        "stream_name",
        "stream_status",
        "stream_mode",
        "open_shard_count",
        "retention_period_hours",
        "encryption_type",
        "key_id",
        "record_distribution",
        "max_record_size_kib",
        "stream_creation_timestamp",
        "stream_arn",
        "stream_id",
        "consumer_count",
        "channel_count",
        "backend",
    )
    left_out = ("record_distribution", "max_record_size_kib")  # None: the server did not say
    rows = [
        (key, "unknown" if key in left_out and document[key] is None else document[key])
        for key in first
        if key in document
    ]
    warm = document.get("warm_throughput")
    rows.append(
        (
            "warm_throughput",
            "unknown"
            if warm is None
            else "-"
            if warm.get("target_mibps") is None
            else f"{warm['target_mibps']} MiB/s target, {warm.get('current_mibps')} MiB/s now",
        )
    )
    rows += [
        (key, value)
        for key, value in document.items()
        if key not in first and key not in ("tags", "consumers", "enhanced_monitoring", "warm_throughput", "badges")
    ]
    rows.append(("enhanced_monitoring", ", ".join(document["enhanced_monitoring"]) or "off"))
    rows.append(("tags", ", ".join(f"{k}={v}" for k, v in sorted(document["tags"].items())) or "none"))
    text = render_table(("FIELD", "VALUE"), [(key, "-" if value is None else str(value)) for key, value in rows])
    if document.get("badges"):
        text = " · ".join(document["badges"]) + "\n" + text
    if document["consumers"]:
        text += "\n\n" + render_table(
            ("CONSUMER", "STATUS", "CREATED"),
            [(c["name"], c["status"], c["created"] or "-") for c in document["consumers"]],
        )
    return text
