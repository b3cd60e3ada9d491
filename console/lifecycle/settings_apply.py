"""Carry out a settings plan (console.lifecycle.settings) through an injected backend, one small
function per operation, and write it to the action log. The command line and the console's Stream
actions menu both come through `apply_setting`; this module does no I/O of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from console.errors import PlanRejected
from console.lifecycle.plans import LifecyclePlan


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


async def apply_setting(kinesis: Any, plan: LifecyclePlan, *, action_log: Any | None = None,
                        who: str | None = None, log_fields: dict | None = None) -> list[Any]:
    """Make the plan's calls in order; the answers come back in order. `log_fields` go into the action
    log entry too (a distribution switch records its target, which the AUTO notice reads back)."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    answers = [await OPERATIONS[call.operation](kinesis, call.parameters) for call in plan.calls]
    if action_log is not None and plan.calls:
        calls: dict[str, int] = {}
        for call in plan.calls:
            calls[call.operation] = calls.get(call.operation, 0) + 1
        action = "account" if plan.action == "account" else f"{'channels' if 'Channel' in plan.calls[0].operation else 'stream'} {plan.action}"
        action_log.append({"action": action, "stream": plan.stream, "backend": kinesis.label, "who": who,
                           "calls": calls, "summary": plan.summary, **(log_fields or {})})
    return answers
