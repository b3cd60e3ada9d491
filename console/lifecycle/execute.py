"""Carry out a lifecycle plan through an injected backend (KinesisBackend's methods), call by call,
and write it to the action log — whose mode switches `mode_switches` reads back for the 24-hour rule.
The command line and the console run plans through here; this module does no I/O of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from console.errors import PlanRejected
from console.lifecycle.plans import LifecyclePlan

WAIT_SECONDS = 300.0


async def apply(kinesis: Any, plan: LifecyclePlan, *, action_log: Any | None = None, who: str | None = None,
                progress: Callable[[str], None] = lambda _text: None) -> None:
    """Make the plan's calls in order, waiting for ACTIVE between two calls on the same stream."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    for index, call in enumerate(plan.calls):
        if index:
            progress(f"waiting for {plan.stream} to be ACTIVE before {call.operation}")
            await kinesis.wait_for_active(plan.stream, timeout=WAIT_SECONDS)
        progress(f"calling {call.describe()}")
        await _call(kinesis, plan, call.operation, call.parameters)
    if action_log is not None:
        calls: dict[str, int] = {}
        for call in plan.calls:
            calls[call.operation] = calls.get(call.operation, 0) + 1
        action_log.append({"action": f"stream {plan.action}", "stream": plan.stream, "backend": kinesis.label,
                           "who": who, "calls": calls, "summary": plan.summary})


async def _call(kinesis: Any, plan: LifecyclePlan, operation: str, params: dict) -> None:
    stream = plan.stream
    if operation == "CreateStream":
        on_demand = (params.get("StreamModeDetails") or {}).get("StreamMode") == "ON_DEMAND"
        await kinesis.create_stream(stream, params.get("ShardCount"), on_demand=on_demand)
    elif operation == "IncreaseStreamRetentionPeriod":
        await kinesis.increase_retention(stream, params["RetentionPeriodHours"])
    elif operation == "DecreaseStreamRetentionPeriod":
        await kinesis.decrease_retention(stream, params["RetentionPeriodHours"])
    elif operation == "UpdateStreamMode":
        await kinesis.update_stream_mode(params["StreamARN"], params["StreamModeDetails"]["StreamMode"])
    elif operation == "UpdateShardCount":
        await kinesis.update_shard_count(stream, params["TargetShardCount"])
    elif operation == "StartStreamEncryption":
        await kinesis.start_encryption(stream, params["KeyId"])
    elif operation == "StopStreamEncryption":
        await kinesis.stop_encryption(stream, params["KeyId"])
    elif operation == "DeleteStream":
        await kinesis.delete_stream(stream, enforce_consumer_deletion=params["EnforceConsumerDeletion"])
    else:  # pragma: no cover - every Call a plan makes is handled above
        raise ValueError(f"no way to carry out {operation}")


def mode_switches(entries: Iterable[dict], stream: str, backend: str) -> list[float]:
    """Epoch times of the capacity-mode switches the action log saw on `stream` at `backend`."""
    return [float(entry.get("epoch", 0)) for entry in entries
            if entry.get("stream") == stream and entry.get("backend") == backend
            and (entry.get("calls") or {}).get("UpdateStreamMode")]
