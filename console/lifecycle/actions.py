"""Every change kconsole makes to a stream, its consumers, its channels or the account — prepared and
run here once. The command line and the console only collect the answers, render the plan, ask for
confirmation in their own way, and hand the plan back to `run`:

    plan = await prepare_retention(kinesis, "orders", 48)   # facts read, AWS's rules checked
    plan.render()                                           # the preview both faces show
    await run(kinesis, plan, action_log=ActionLog.default())

`prepare_*` reads what the plan depends on (the stream's summary, its consumers and channels, its
tags, the account's commitment, the action log's mode switches) and returns a LifecyclePlan: the
calls, the consequences, and the refusal when AWS's rules or the stream's state forbid it. Bad input
(a rule the state shows broken) raises BadInput before anything is called.

`run` makes the plan's calls in order, each through the action log (console.reshard.actionlog,
handed in as `action_log`): the intent — with who makes the change — is on disk before the call,
its outcome after. A lost reply is settled by reading back what the call changes; the calls that
are safe to repeat are sent once more only when the read-back shows nothing changed. Resharding
(split, merge, rescale) has its own planner and runner in console.reshard. This module does no I/O
of its own: it calls the backend it is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from console.acting import acting_for
from console.errors import BadInput, ConsoleError, PlanRejected, StreamNotFound
from console.lifecycle import channels as channel_plans
from console.lifecycle.plans import (
    Call,
    LifecyclePlan,
    plan_create,
    plan_delete,
    plan_encryption,
    plan_mode,
    plan_retention,
)
from console.lifecycle.settings import (
    describe_commitment,
    plan_account,
    plan_distribution,
    plan_max_record_size,
    plan_policy_delete,
    plan_policy_put,
    plan_tag,
    plan_untag,
    plan_warm_throughput,
    policy_or_none,
    same_json,
)
from console.topology.model import EfoConsumer
from console.words import counted

WAIT_SECONDS = 300.0  # for ACTIVE between two calls of one plan
SETTLE_WAIT_SECONDS = 60.0  # how long a read-back waits for the stream to leave UPDATING
MAY_HAVE_HAPPENED = ("applied", "unknown")
MAX_CONSUMERS = 20  # RegisterStreamConsumer: at most 20 consumers a stream


# ---- who, and the facts more than one change reads ----------------------------------------------


async def actor(kinesis: Any) -> str | None:
    """Who makes a change, for the action log: the caller's identity as STS tells it (the resharding
    executor asks the same), None when it cannot tell. The log records the local user beside it.
    A face acting for someone else (console.acting) names them instead."""
    if (agent := acting_for.get()) is not None:
        return agent
    try:
        identity: str | None = await kinesis.caller_identity()
    except ConsoleError:
        return None
    return identity


async def read_commitment(kinesis: Any) -> dict[str, Any]:
    """The account's On-demand Advantage (minimum throughput billing commitment), as plain JSON."""
    return describe_commitment(await kinesis.account_settings())


def mode_switches(entries: Iterable[dict[str, Any]], stream: str, backend: str) -> list[float]:
    """Epoch times of the capacity-mode switches the action log saw on `stream` at `backend`: intents
    whose outcome was applied or is unknown, and the entries older versions wrote."""
    entries = list(entries)
    outcomes = {entry.get("intent"): entry.get("outcome") for entry in entries if entry.get("kind") == "outcome"}
    times = []
    for entry in entries:
        if entry.get("stream") != stream or entry.get("backend") != backend:
            continue
        if entry.get("kind") == "intent":
            if (
                entry.get("operation") == "UpdateStreamMode"
                and outcomes.get(entry.get("id"), "unknown") in MAY_HAVE_HAPPENED
            ):
                times.append(float(entry.get("epoch", 0)))
        elif "kind" not in entry and (entry.get("calls") or {}).get("UpdateStreamMode"):
            times.append(float(entry.get("epoch", 0)))
    return times


async def stream_exists(kinesis: Any, stream: str) -> bool:
    try:
        await kinesis.describe_stream_summary(stream)
    except StreamNotFound:
        return False
    return True


async def stream_channels(kinesis: Any, summary: Any) -> list[str]:
    """Names of the active channels reading from the stream (listed even when the summary counts
    none: not every server counts them). An endpoint without channels has none."""
    try:
        found = await kinesis.list_channels(stream_arn=summary.arn)
    except ConsoleError as error:
        if error.code == "unsupported_operation":
            return []
        raise
    return [c.get("ChannelName", "?") for c in found if c.get("ChannelStatus") != "DELETING"]


async def stream_consumers(kinesis: Any, summary: Any) -> list[EfoConsumer]:
    return await kinesis.list_stream_consumers(summary.arn) if summary.arn else []


# ---- prepare: one per change ----------------------------------------------------------------------


async def prepare_create(
    kinesis: Any, stream: str, *, shards: int | None, on_demand: bool, retention_hours: int | None
) -> LifecyclePlan:
    exists = await stream_exists(kinesis, stream)
    return plan_create(stream, shards=shards, on_demand=on_demand, retention_hours=retention_hours, exists=exists)


async def prepare_delete(kinesis: Any, stream: str, *, enforce_consumer_deletion: bool) -> LifecyclePlan:
    """What is lost, and the refusals: registered consumers without enforcement, active channels.
    The plan's facts name the consumers and channels, for a face that asks about them, and
    `consumers_unknown` says why an endpoint that cannot list consumers left them out."""
    summary = await kinesis.describe_stream_summary(stream)
    consumers, shards, channels = await asyncio.gather(
        _consumers_or_why_not(kinesis, summary), kinesis.all_shards(stream), stream_channels(kinesis, summary)
    )
    listed, unknown = consumers
    plan = plan_delete(
        summary,
        consumers=None if listed is None else [c.name or "?" for c in listed],
        total_shards=len(shards),
        enforce_consumer_deletion=enforce_consumer_deletion,
        channels=channels,
    )
    return replace(plan, facts={**plan.facts, "consumers_unknown": unknown}) if unknown else plan


async def _consumers_or_why_not(kinesis: Any, summary: Any) -> tuple[list[EfoConsumer] | None, str | None]:
    try:
        return await stream_consumers(kinesis, summary), None
    except ConsoleError as error:
        if error.code != "unsupported_operation":
            raise
        return None, error.message


async def prepare_retention(kinesis: Any, stream: str, hours: int) -> LifecyclePlan:
    return plan_retention(await kinesis.describe_stream_summary(stream), hours)


async def prepare_mode(
    kinesis: Any, stream: str, mode: str, *, shards: int | None, action_log: Any, now: float
) -> LifecyclePlan:
    """The 24-hour rule reads the mode switches the action log saw."""
    summary = await kinesis.describe_stream_summary(stream)
    switches = mode_switches(action_log.entries(), stream, kinesis.label)
    return plan_mode(summary, mode, shards=shards, recent_switches=switches, now=now)


async def prepare_encryption(kinesis: Any, stream: str, kms_key: str | None) -> LifecyclePlan:
    """`kms_key` None turns encryption off."""
    summary = await kinesis.describe_stream_summary(stream)
    details = await kinesis.describe_stream_details(stream)
    return plan_encryption(summary, kms_key, current_key=details.get("KeyId"))


async def prepare_max_record_size(kinesis: Any, stream: str, kib: int) -> LifecyclePlan:
    return plan_max_record_size(await kinesis.describe_stream_summary(stream), kib)


async def prepare_warm_throughput(kinesis: Any, stream: str, mibps: int) -> LifecyclePlan:
    """Warm throughput needs an on-demand stream and the account's commitment (asked only then)."""
    summary = await kinesis.describe_stream_summary(stream)
    commitment = (await read_commitment(kinesis))["status"] if summary.mode == "ON_DEMAND" else None
    return plan_warm_throughput(summary, mibps, commitment=commitment)


async def prepare_distribution(kinesis: Any, stream: str, strategy: str) -> LifecyclePlan:
    return plan_distribution(await kinesis.describe_stream_summary(stream), strategy)


async def prepare_tag(kinesis: Any, stream: str, tags: dict[str, str]) -> LifecyclePlan:
    summary = await kinesis.describe_stream_summary(stream)
    return plan_tag(summary, tags, await kinesis.resource_tags(summary.arn))


async def prepare_untag(kinesis: Any, stream: str, keys: Sequence[str]) -> LifecyclePlan:
    summary = await kinesis.describe_stream_summary(stream)
    return plan_untag(summary, list(keys), await kinesis.resource_tags(summary.arn))


async def prepare_policy(kinesis: Any, stream: str, policy: str | None) -> LifecyclePlan:
    """Put `policy` (checked JSON, console.lifecycle.settings.check_policy), or delete with None."""
    summary = await kinesis.describe_stream_summary(stream)
    current = policy_or_none(await kinesis.resource_policy(summary.arn))
    return plan_policy_put(summary, policy, current) if policy is not None else plan_policy_delete(summary, current)


async def prepare_account(kinesis: Any, turn_on: bool) -> LifecyclePlan:
    return plan_account(await read_commitment(kinesis), turn_on)


async def prepare_channel_create(kinesis: Any, request: dict[str, Any]) -> LifecyclePlan:
    return await channel_plans.plan_create_on(kinesis, request)


async def prepare_channel_update(kinesis: Any, name: str, request: dict[str, Any]) -> LifecyclePlan:
    arn = await channel_arn(kinesis, name)
    return channel_plans.plan_update(name, arn, await kinesis.describe_channel(arn), request)


async def channel_arn(kinesis: Any, name: str) -> str:
    for channel in await kinesis.list_channels():
        if channel.get("ChannelName") == name:
            return str(channel["ChannelARN"])
    raise BadInput(f"no channel named {name!r} on {kinesis.label}", code="not_found")


async def prepare_channel_delete(kinesis: Any, name: str) -> LifecyclePlan:
    arn = await channel_arn(kinesis, name)
    return channel_plans.plan_delete(name, arn, await kinesis.describe_channel(arn))


async def prepare_register_consumer(kinesis: Any, stream: str, name: str) -> LifecyclePlan:
    summary = await kinesis.describe_stream_summary(stream)
    names = {c.name for c in await stream_consumers(kinesis, summary)}
    if name in names:
        raise BadInput(f"EFO consumer {name!r} is already registered on {stream}", code="exists")
    return LifecyclePlan(
        "register",
        stream,
        f"register EFO consumer {name}",
        (Call("RegisterStreamConsumer", {"StreamARN": summary.arn, "ConsumerName": name}),),
        (
            f"{len(names)} registered now, at most {MAX_CONSUMERS}",
            "it gets its own 2 MiB/s per shard; AWS bills it per consumer-shard hour and per GB read",
        ),
    )


async def prepare_deregister_consumer(kinesis: Any, stream: str, name: str) -> LifecyclePlan:
    summary = await kinesis.describe_stream_summary(stream)
    names = {c.name for c in await stream_consumers(kinesis, summary)}
    if name not in names:
        raise BadInput(
            f"no EFO consumer {name!r} on {stream}; registered: {', '.join(sorted(n for n in names if n)) or 'none'}",
            code="not_found",
        )
    return LifecyclePlan(
        "deregister",
        stream,
        f"deregister EFO consumer {name}",
        (Call("DeregisterStreamConsumer", {"StreamARN": summary.arn, "ConsumerName": name}),),
        ("any application subscribed with it loses its SubscribeToShard connections",),
    )


async def prepare_enhanced_monitoring(kinesis: Any, stream: str, metrics: Sequence[str]) -> LifecyclePlan:
    """Shard-level enhanced monitoring of `metrics` (the heat package names the ones it reads)."""
    summary = await kinesis.describe_stream_summary(stream)
    enabled = set(summary.enhanced_metrics)
    missing = [metric for metric in metrics if metric not in enabled]
    if not missing:
        return LifecyclePlan("monitoring", stream, f"enhanced monitoring already covers {', '.join(metrics)}")
    return LifecyclePlan(
        "monitoring",
        stream,
        f"enable shard-level enhanced monitoring ({', '.join(metrics)})",
        (Call("EnableEnhancedMonitoring", {"StreamName": stream, "ShardLevelMetrics": list(metrics)}),),
        ("CloudWatch bills each shard-level metric per shard", "each shard's own load shows within minutes"),
        _not_active(summary),
    )


async def prepare_disable_monitoring(kinesis: Any, stream: str) -> LifecyclePlan:
    """Every shard-level metric off (ALL, as AWS names them together): their CloudWatch billing stops."""
    summary = await kinesis.describe_stream_summary(stream)
    if not summary.enhanced_metrics:
        return LifecyclePlan("monitoring", stream, "enhanced monitoring is already off")
    return LifecyclePlan(
        "monitoring",
        stream,
        "disable every shard-level enhanced monitoring metric",
        (Call("DisableEnhancedMonitoring", {"StreamName": stream, "ShardLevelMetrics": ["ALL"]}),),
        ("their CloudWatch billing stops", "the Heat tab falls back to its own readings for hot shards"),
        _not_active(summary),
    )


def _not_active(summary: Any) -> str | None:
    if summary.status != "ACTIVE":
        return f"the stream is {summary.status}; AWS accepts this change only while it is ACTIVE (try again shortly)"
    return None


# ---- run: one runner for every plan ----------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """One call of a plan, made: the action log's Change (its `reply_lost`, its outcome) and the reply."""

    call: Call
    change: Any
    answer: Any = None


async def run(
    kinesis: Any,
    plan: LifecyclePlan,
    *,
    action_log: Any,
    progress: Callable[[str], None] = lambda _text: None,
) -> list[Ran]:
    """Make the plan's calls in order, waiting for ACTIVE between two calls on the stream. Each call's
    intent (with `actor`) is logged before it; an outcome that cannot be established raises (exit 1)."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    who = await actor(kinesis) if plan.calls else None
    made: list[Ran] = []
    for index, call in enumerate(plan.calls):
        if index:
            progress(f"waiting for {plan.stream} to be ACTIVE before {call.operation}")
            await kinesis.wait_for_active(plan.stream, timeout=WAIT_SECONDS)
        progress(f"calling {call.describe()}")
        before = await kinesis.describe_stream_summary(plan.stream) if call.operation in _READ_BEFORE else None
        answered: list[Any] = []

        async def make(call: Call = call, answered: list[Any] = answered) -> None:
            answered.append(await OPERATIONS[call.operation](kinesis, plan.stream, call.parameters))

        again = None
        if call.operation in _RESENT_WHEN_NOT_APPLIED:

            async def again(call: Call = call, make: Callable[[], Awaitable[None]] = make) -> Callable[[], Any]:
                progress(f"{call.operation}: the reply was lost and {_shows(plan)} no change; sending it once more")
                return make

        change = await action_log.call(
            call.operation,
            {"action": logged_action(plan, call), "summary": plan.summary, "call": call.describe(), **_logged(call)},
            make,
            stream=plan.stream,
            backend=kinesis.label,
            who=who,
            settle=_settler(kinesis, plan, call, before),
            check=_check(plan, call),
            again=again,
        )
        if change.reply_lost:
            progress(f"{call.operation}: the reply was lost; the stream shows the change")
        if change.unlogged:
            progress(f"{call.operation}: {change.unlogged}")
        made.append(Ran(call, change, answered[-1] if answered else None))
    return made


def logged_action(plan: LifecyclePlan, call: Call) -> str:
    """How the log names the change: "stream distribution", "channels create", "consumers register"."""
    if plan.action == "account":
        return "account"
    if "Channel" in call.operation:
        return f"channels {plan.action}"
    if "StreamConsumer" in call.operation:
        return f"consumers {plan.action}"
    return f"stream {plan.action}"


def _logged(call: Call) -> dict[str, Any]:
    """What the log keeps beside the call: a distribution's target (the AUTO notice reads it back),
    a consumer's name."""
    params = call.parameters
    if call.operation == "UpdateStreamRecordDistributionStrategy":
        return {"target": params["RecordDistributionStrategy"]}
    if "StreamConsumer" in call.operation:
        return {"consumer": params["ConsumerName"], "stream_arn": params["StreamARN"]}
    if call.operation.endswith("EnhancedMonitoring"):
        return {"metrics": list(params["ShardLevelMetrics"])}
    return {}


def _check(plan: LifecyclePlan, call: Call) -> str:
    if plan.action == "account":
        return "kconsole account"
    if "Channel" in call.operation:
        return "kconsole channels"
    if "StreamConsumer" in call.operation:
        return f"kconsole consumers {plan.stream}"
    return f"kconsole stream describe {plan.stream}"


def _shows(plan: LifecyclePlan) -> str:
    return "the consumer list shows" if plan.action in ("register", "deregister") else f"{plan.stream} shows"


# ---- the calls ------------------------------------------------------------------------------------


def _mode_of(params: dict[str, Any]) -> str | None:
    return (params.get("StreamModeDetails") or {}).get("StreamMode")


OPERATIONS: dict[str, Callable[[Any, str, dict[str, Any]], Awaitable[Any]]] = {
    "CreateStream": lambda k, s, p: k.create_stream(s, p.get("ShardCount"), on_demand=_mode_of(p) == "ON_DEMAND"),
    "DeleteStream": lambda k, s, p: k.delete_stream(s, enforce_consumer_deletion=p["EnforceConsumerDeletion"]),
    "IncreaseStreamRetentionPeriod": lambda k, s, p: k.increase_retention(s, p["RetentionPeriodHours"]),
    "DecreaseStreamRetentionPeriod": lambda k, s, p: k.decrease_retention(s, p["RetentionPeriodHours"]),
    "UpdateStreamMode": lambda k, s, p: k.update_stream_mode(p["StreamARN"], _mode_of(p)),
    "UpdateShardCount": lambda k, s, p: k.update_shard_count(s, p["TargetShardCount"]),
    "StartStreamEncryption": lambda k, s, p: k.start_encryption(s, p["KeyId"]),
    "StopStreamEncryption": lambda k, s, p: k.stop_encryption(s, p["KeyId"]),
    "UpdateMaxRecordSize": lambda k, s, p: k.update_max_record_size(p["StreamARN"], p["MaxRecordSizeInKiB"]),
    "UpdateStreamWarmThroughput": lambda k, s, p: k.update_warm_throughput(p["StreamARN"], p["WarmThroughputMiBps"]),
    "UpdateStreamRecordDistributionStrategy": lambda k, s, p: k.update_record_distribution(
        p["StreamARN"], p["RecordDistributionStrategy"]
    ),
    "TagResource": lambda k, s, p: k.tag_resource(p["ResourceARN"], p["Tags"]),
    "UntagResource": lambda k, s, p: k.untag_resource(p["ResourceARN"], p["TagKeys"]),
    "PutResourcePolicy": lambda k, s, p: k.put_resource_policy(p["ResourceARN"], p["Policy"]),
    "DeleteResourcePolicy": lambda k, s, p: k.delete_resource_policy(p["ResourceARN"]),
    "UpdateAccountSettings": lambda k, s, p: k.update_account_settings(
        p["MinimumThroughputBillingCommitment"]["Status"]
    ),
    "CreateChannel": lambda k, s, p: k.create_channel(p),
    "DeleteChannel": lambda k, s, p: k.delete_channel(p["ChannelARN"]),
    "UpdateChannel": lambda k, s, p: k.update_channel(p),
    "RegisterStreamConsumer": lambda k, s, p: k.register_stream_consumer(p["StreamARN"], p["ConsumerName"]),
    "DeregisterStreamConsumer": lambda k, s, p: k.deregister_stream_consumer(p["StreamARN"], p["ConsumerName"]),
    "EnableEnhancedMonitoring": lambda k, s, p: k.enable_enhanced_monitoring(s, list(p["ShardLevelMetrics"])),
    "DisableEnhancedMonitoring": lambda k, s, p: k.disable_enhanced_monitoring(s, list(p["ShardLevelMetrics"])),
}
# Calls whose read-back compares with the stream as it was before them.
_READ_BEFORE = frozenset(
    {
        "IncreaseStreamRetentionPeriod",
        "DecreaseStreamRetentionPeriod",
        "UpdateStreamMode",
        "UpdateShardCount",
        "StartStreamEncryption",
        "StopStreamEncryption",
        "DeleteStream",
    }
)
# A lost reply the read-back shows not applied: these are sent once more (each says the same thing
# twice, or is refused the second time); the settings' calls are left not applied for the operator.
_RESENT_WHEN_NOT_APPLIED = _READ_BEFORE | {"CreateStream", "RegisterStreamConsumer", "DeregisterStreamConsumer"}
# operation -> (StreamSummary field, request member) for the settings the summary shows
_SUMMARY_FIELDS = {
    "UpdateMaxRecordSize": ("max_record_size_kib", "MaxRecordSizeInKiB"),
    "UpdateStreamWarmThroughput": ("warm_throughput_target_mibps", "WarmThroughputMiBps"),
    "UpdateStreamRecordDistributionStrategy": ("record_distribution", "RecordDistributionStrategy"),
}

Reading = tuple[bool | None, str]


def _settler(kinesis: Any, plan: LifecyclePlan, call: Call, before: Any) -> Callable[[], Awaitable[Reading]]:
    """Reads back what `call` changes and says (applied?, evidence): True, False, or None (cannot tell)."""

    async def guarded() -> Reading:
        try:
            return await _read_back(kinesis, plan.stream, call.operation, call.parameters, before)
        except ConsoleError as error:
            return None, f"reading {plan.stream} back failed: {error.message}"

    return guarded


async def _read_back(kinesis: Any, stream: str, operation: str, params: dict[str, Any], before: Any) -> Reading:
    if operation in ("CreateStream", "DeleteStream"):
        try:
            summary = await kinesis.describe_stream_summary(stream)
        except StreamNotFound:
            return (operation == "DeleteStream"), f"{stream} does not exist"
        if operation == "CreateStream":
            return True, f"the stream shows the change: {stream} exists ({summary.status})"
        if summary.status == "DELETING":
            return True, f"the stream shows the change: {stream} is DELETING"
        return False, f"{stream} is still {summary.status}"
    if operation in ("TagResource", "UntagResource"):
        tags = await kinesis.resource_tags(params["ResourceARN"])
        if operation == "TagResource":
            return all(tags.get(k) == v for k, v in params["Tags"].items()), f"tags are {tags}"
        return not any(k in tags for k in params["TagKeys"]), f"tags are {tags}"
    if operation in ("PutResourcePolicy", "DeleteResourcePolicy"):
        policy = policy_or_none(await kinesis.resource_policy(params["ResourceARN"]))
        if operation == "DeleteResourcePolicy":
            return policy is None, "no policy" if policy is None else "a policy is still there"
        return policy is not None and same_json(policy, params["Policy"]), "the policy read back"
    if operation == "UpdateAccountSettings":
        status = (await read_commitment(kinesis))["status"]
        wanted = params["MinimumThroughputBillingCommitment"]["Status"]
        done = status == wanted or (wanted == "DISABLED" and status == "ENABLED_UNTIL_EARLIEST_ALLOWED_END")
        return done, f"the commitment is {status}"
    if operation == "UpdateChannel":
        request = {member: params[member] for member in channel_plans.UPDATABLE if member in params}
        return channel_plans.update_shown(await kinesis.describe_channel(params["ChannelARN"]), request)
    if operation in ("CreateChannel", "DeleteChannel"):
        channels = await kinesis.list_channels()
        if operation == "CreateChannel":
            found = any(c.get("ChannelName") == params["ChannelName"] for c in channels)
            return found, f"channel {params['ChannelName']} " + ("exists" if found else "does not exist")
        gone = all(
            c.get("ChannelARN") != params["ChannelARN"] or c.get("ChannelStatus") == "DELETING" for c in channels
        )
        return gone, "the channel is gone" if gone else "the channel is still there"
    if operation in ("RegisterStreamConsumer", "DeregisterStreamConsumer"):
        name = params["ConsumerName"]
        listed = {c.name: c.status for c in await kinesis.list_stream_consumers(params["StreamARN"])}
        status = listed.get(name)
        if operation == "RegisterStreamConsumer":
            if status is None:
                return False, f"{name} is not registered"
            return True, f"the stream shows the change: {name} is {status}"
        if status in (None, "DELETING"):
            return True, f"the stream shows the change: {name} is {status or 'gone'}"
        return False, f"{name} is still {status}"
    summary = await kinesis.wait_for_active(stream, timeout=SETTLE_WAIT_SECONDS)
    if operation == "EnableEnhancedMonitoring":
        enabled = set(summary.enhanced_metrics)
        shown = ", ".join(sorted(enabled)) or "none"
        return set(params["ShardLevelMetrics"]) <= enabled, f"enhanced metrics now: {shown}"
    if operation == "DisableEnhancedMonitoring":
        shown = ", ".join(sorted(summary.enhanced_metrics)) or "none"
        return not summary.enhanced_metrics, f"enhanced metrics now: {shown}"
    if operation in _SUMMARY_FIELDS:
        field, member = _SUMMARY_FIELDS[operation]
        value = getattr(summary, field)
        value = 0 if value is None else value  # no warm throughput shown: none kept
        return value == params[member], f"the stream shows {field} {value}"
    if operation.endswith("StreamRetentionPeriod"):
        target = params["RetentionPeriodHours"]
        if summary.retention_hours == target:
            return True, f"the stream shows the change: retention {target} h"
        if summary.retention_hours == before.retention_hours:
            return False, f"retention is still {before.retention_hours} h"
        return None, f"retention is {summary.retention_hours} h, neither {before.retention_hours} nor {target}"
    if operation == "UpdateStreamMode":
        target = _mode_of(params)
        if summary.mode == target:
            return True, f"the stream shows the change: {target}"
        return False, f"the stream is still {summary.mode}"
    if operation == "UpdateShardCount":
        target = params["TargetShardCount"]
        if summary.open_shard_count == target:
            return True, f"the stream shows the change: {counted(target, 'open shard')}"
        if summary.open_shard_count == before.open_shard_count:
            return False, f"still {counted(before.open_shard_count, 'open shard')}"
        return (
            None,
            f"{counted(summary.open_shard_count, 'open shard')}, neither {before.open_shard_count} nor {target}",
        )
    if operation == "StartStreamEncryption":
        key = (await kinesis.describe_stream_details(stream)).get("KeyId")
        if summary.encryption == "KMS" and key == params["KeyId"]:
            return True, f"the stream shows the change: encrypted with {key}"
        if summary.encryption == before.encryption:
            return False, f"encryption is still {summary.encryption}" + (f" with {key}" if key else "")
        return None, f"encryption is {summary.encryption} with {key}"
    if operation == "StopStreamEncryption":
        if summary.encryption == "NONE":
            return True, "the stream shows the change: encryption off"
        return False, f"encryption is still {summary.encryption}"
    return None, f"no way to read {operation} back"  # pragma: no cover - every Call a plan makes is above
