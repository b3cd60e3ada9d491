"""Carry out a settings plan (console.lifecycle.settings) through an injected backend, one small
function per operation, each call through the action log it is handed (`log.call`: the intent on
disk before the call, the outcome after). A lost reply is settled by reading back what the call
changes (`_read_back`: the summary's settings, the tags, the policy, the account setting, the
channel), never by resending blindly. The command line and the console's Stream actions menu both
come through `apply_setting`; this module does no I/O of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from console.errors import ConsoleError, PlanRejected, StreamNotFound
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


async def apply_setting(kinesis: Any, plan: LifecyclePlan, *, action_log: Any,
                        who: str | None = None, log_fields: dict | None = None,
                        progress: Callable[[str], None] = lambda _text: None) -> list[Any]:
    """Make the plan's calls in order, each logged ahead; the answers come back in order (None for a
    call whose reply was lost but whose change the read-back shows). `log_fields` go into each
    intent's plan too (a distribution switch records its target, which the AUTO notice reads back)."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    answers = []
    for call in plan.calls:
        answer: list[Any] = [None]

        async def make(call: Call = call, answer: list[Any] = answer) -> None:
            answer[0] = await OPERATIONS[call.operation](kinesis, call.parameters)

        change = await action_log.call(call.operation, {"action": plan.action, "summary": plan.summary,
                                               "call": call.describe(), **(log_fields or {})},
                              make, stream=plan.stream, backend=kinesis.label, who=who,
                              settle=lambda call=call: _read_back(kinesis, plan, call),
                              check=_check_command(plan, call))
        if change.reply_lost:
            progress(f"{call.operation}: the reply was lost; the stream shows the change")
        answers.append(answer[0])
    if plan.calls:  # the plan's summary line, after its calls' intents and outcomes (read back for AUTO)
        calls: dict[str, int] = {}
        for call in plan.calls:
            calls[call.operation] = calls.get(call.operation, 0) + 1
        action = "account" if plan.action == "account" else \
            f"{'channels' if 'Channel' in plan.calls[0].operation else 'stream'} {plan.action}"
        try:
            action_log.append({"kind": "result", "action": action, "stream": plan.stream, "backend": kinesis.label,
                               "who": who, "calls": calls, "summary": plan.summary, **(log_fields or {})})
        except OSError:  # each call's outcome is on disk already; the summary line is a convenience
            pass
    return answers


def _check_command(plan: LifecyclePlan, call: Call) -> str:
    if call.operation == "UpdateAccountSettings":
        return "kconsole account"
    if "Channel" in call.operation:
        return "kconsole channels list"
    return f"kconsole stream describe {plan.stream}"


async def _read_back(kinesis: Any, plan: LifecyclePlan, call: Call) -> tuple[bool | None, str]:
    """Whether `call` is applied, read from what it changes: (True | False | None, evidence)."""
    params, operation = call.parameters, call.operation
    try:
        if operation in ("UpdateMaxRecordSize", "UpdateStreamWarmThroughput", "UpdateStreamRecordDistributionStrategy"):
            details = await kinesis.describe_stream_details(plan.stream)
            field, target = {
                "UpdateMaxRecordSize": ("MaxRecordSizeInKiB", params.get("MaxRecordSizeInKiB")),
                "UpdateStreamWarmThroughput": ("WarmThroughput", params.get("WarmThroughputMiBps")),
                "UpdateStreamRecordDistributionStrategy": ("RecordDistributionStrategy",
                                                           params.get("RecordDistributionStrategy")),
            }[operation]
            value = details.get(field)
            if isinstance(value, dict):
                value = value.get("TargetMiBps")
            return value == target, f"{field} is {value}"
        if operation == "TagResource":
            tags = await kinesis.resource_tags(params["ResourceARN"])
            held = all(tags.get(key) == value for key, value in params["Tags"].items())
            return held, f"tags now {', '.join(sorted(tags)) or 'none'}"
        if operation == "UntagResource":
            tags = await kinesis.resource_tags(params["ResourceARN"])
            return not set(params["TagKeys"]) & set(tags), f"tags now {', '.join(sorted(tags)) or 'none'}"
        if operation in ("PutResourcePolicy", "DeleteResourcePolicy"):
            policy = await kinesis.resource_policy(params["ResourceARN"])
            if operation == "DeleteResourcePolicy":  # AWS answers "{}" for a resource without a policy
                gone = not policy or policy.strip() == "{}"
                return gone, "no policy" if gone else "a policy is still there"
            return policy == params["Policy"], "the policy is the one sent" if policy == params["Policy"] \
                else "the policy is not the one sent"
        if operation == "UpdateAccountSettings":
            status = (await kinesis.account_settings()).get("Status") or "DISABLED"
            wanted = ("ENABLED",) if params["MinimumThroughputBillingCommitment"]["Status"] == "ENABLED" \
                else ("DISABLED", "ENABLED_UNTIL_EARLIEST_ALLOWED_END")
            return status in wanted, f"the commitment is {status}"
        if operation == "CreateChannel":
            names = {channel.get("ChannelName") for channel in await kinesis.list_channels()}
            return params.get("ChannelName") in names, f"channel {params.get('ChannelName')} " \
                + ("exists" if params.get("ChannelName") in names else "does not exist")
        if operation == "DeleteChannel":
            try:
                channel = await kinesis.describe_channel(params["ChannelARN"])
            except StreamNotFound:
                return True, "the channel is gone"
            status = channel.get("ChannelStatus")
            return status == "DELETING" or None, f"the channel is {status}"
    except ConsoleError as error:
        return None, f"reading it back failed: {error.message}"
    return None, f"no way to read {operation} back"  # pragma: no cover - every operation is above
