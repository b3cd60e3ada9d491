"""Carry out a settings plan (console.lifecycle.settings) through an injected backend, one small
function per operation, each call through the action log's write-ahead path (intent, call, outcome). The command line and the console's Stream
actions menu both come through `apply_setting`; this module does no I/O of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from console.errors import PlanRejected
from console.lifecycle.plans import Call, LifecyclePlan


async def _max_record_size(kinesis: Any, params: dict) -> Any:
    return await kinesis.update_max_record_size(params["StreamARN"], params["MaxRecordSizeInKiB"])


async def _warm_throughput(kinesis: Any, params: dict) -> Any:
    return await kinesis.update_warm_throughput(params["StreamARN"], params["WarmThroughputMiBps"])


async def _distribution(kinesis: Any, params: dict) -> Any:
    return await kinesis.update_record_distribution(params["StreamARN"], params["RecordDistributionStrategy"])


async def _tag(kinesis: Any, params: dict) -> Any:
    return await kinesis.tag_resource(params["ResourceARN"], params["Tags"])


async def _untag(kinesis: Any, params: dict) -> Any:
    return await kinesis.untag_resource(params["ResourceARN"], params["TagKeys"])


async def _put_policy(kinesis: Any, params: dict) -> Any:
    return await kinesis.put_resource_policy(params["ResourceARN"], params["Policy"])


async def _delete_policy(kinesis: Any, params: dict) -> Any:
    return await kinesis.delete_resource_policy(params["ResourceARN"])


async def _account(kinesis: Any, params: dict) -> Any:
    return await kinesis.update_account_settings(params["MinimumThroughputBillingCommitment"]["Status"])


async def _create_channel(kinesis: Any, params: dict) -> Any:
    return await kinesis.create_channel(params)


async def _delete_channel(kinesis: Any, params: dict) -> Any:
    return await kinesis.delete_channel(params["ChannelARN"])


OPERATIONS: dict[str, Callable[[Any, dict], Awaitable[Any]]] = {
    "UpdateMaxRecordSize": _max_record_size,
    "UpdateStreamWarmThroughput": _warm_throughput,
    "UpdateStreamRecordDistributionStrategy": _distribution,
    "TagResource": _tag,
    "UntagResource": _untag,
    "PutResourcePolicy": _put_policy,
    "DeleteResourcePolicy": _delete_policy,
    "UpdateAccountSettings": _account,
    "CreateChannel": _create_channel,
    "DeleteChannel": _delete_channel,
}


async def apply_setting(
    kinesis: Any,
    plan: LifecyclePlan,
    *,
    action_log: Any,
    who: str | None = None,
    log_fields: dict | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> list[Any]:
    """Make the plan's calls in order, each through the action log (`log.call`): the intent is on disk
    before the call (no log, no call), its outcome after; a lost reply is settled by reading back what
    the call changes, never by sending it again. The answers come back in order. `log_fields` go into
    the logged plan (a distribution switch records its target, which the AUTO notice reads back)."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    answers: list[Any] = []
    for call in plan.calls:
        answered: list[Any] = []

        async def make(call: Call = call, answered: list[Any] = answered) -> None:
            answered.append(await OPERATIONS[call.operation](kinesis, call.parameters))

        logged = {
            "action": logged_action(plan, call),
            "summary": plan.summary,
            "call": call.describe(),
            **(log_fields or {}),
        }
        change = await action_log.call(
            call.operation,
            logged,
            make,
            stream=plan.stream,
            backend=kinesis.label,
            who=who,
            settle=_settler(kinesis, call),
            check=_check(plan, call),
        )
        if change.reply_lost:
            progress(f"{call.operation}: the reply was lost; the stream shows the change")
        if change.unlogged:
            progress(f"{call.operation}: {change.unlogged}")
        answers.append(answered[0] if answered else None)
    return answers


def logged_action(plan: LifecyclePlan, call: Call) -> str:
    """How the log names the change: "stream distribution", "channels create", "account"."""
    if plan.action == "account":
        return "account"
    return f"{'channels' if 'Channel' in call.operation else 'stream'} {plan.action}"


def _check(plan: LifecyclePlan, call: Call) -> str:
    if plan.action == "account":
        return "kconsole account"
    if "Channel" in call.operation:
        return "kconsole channels"
    return f"kconsole stream describe {plan.stream}"


def _settler(kinesis: Any, call: Call) -> Callable[[], Awaitable[tuple[bool | None, str]]]:
    """Reads back what `call` changes: (applied?, evidence)."""
    operation, params = call.operation, call.parameters

    async def settle() -> tuple[bool | None, str]:
        if operation in _SUMMARY_FIELDS:
            field, member = _SUMMARY_FIELDS[operation]
            summary = await kinesis.wait_for_active(params["StreamARN"].rsplit("/", 1)[-1], timeout=60.0)
            shown = getattr(summary, field)
            shown = 0 if shown is None else shown  # no warm throughput shown: none kept
            return shown == params[member], f"the stream shows {field} {shown}"
        if operation in ("TagResource", "UntagResource"):
            tags = await kinesis.resource_tags(params["ResourceARN"])
            if operation == "TagResource":
                return all(tags.get(k) == v for k, v in params["Tags"].items()), f"tags are {tags}"
            return not any(k in tags for k in params["TagKeys"]), f"tags are {tags}"
        if operation in ("PutResourcePolicy", "DeleteResourcePolicy"):
            from console.lifecycle.settings import policy_or_none, same_json

            policy = policy_or_none(await kinesis.resource_policy(params["ResourceARN"]))
            if operation == "DeleteResourcePolicy":
                return policy is None, "no policy" if policy is None else "a policy is still there"
            return policy is not None and same_json(policy, params["Policy"]), "the policy read back"
        if operation == "UpdateAccountSettings":
            status = (await kinesis.account_settings()).get("Status") or "DISABLED"
            wanted = params["MinimumThroughputBillingCommitment"]["Status"]
            done = status == wanted or (wanted == "DISABLED" and status == "ENABLED_UNTIL_EARLIEST_ALLOWED_END")
            return done, f"the commitment is {status}"
        channels = await kinesis.list_channels()
        if operation == "CreateChannel":
            found = any(c.get("ChannelName") == params["ChannelName"] for c in channels)
            return found, f"channel {params['ChannelName']} " + ("exists" if found else "does not exist")
        gone = all(
            c.get("ChannelARN") != params["ChannelARN"] or c.get("ChannelStatus") == "DELETING" for c in channels
        )
        return gone, "the channel is gone" if gone else "the channel is still there"

    return settle


# operation -> (StreamSummary field, request member) for the settings the summary shows
_SUMMARY_FIELDS = {
    "UpdateMaxRecordSize": ("max_record_size_kib", "MaxRecordSizeInKiB"),
    "UpdateStreamWarmThroughput": ("warm_throughput_target_mibps", "WarmThroughputMiBps"),
    "UpdateStreamRecordDistributionStrategy": ("record_distribution", "RecordDistributionStrategy"),
}
