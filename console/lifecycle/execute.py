"""Carry out a lifecycle plan through an injected backend (KinesisBackend's methods), call by call,
each through the action log it is handed (console.reshard.actionlog.ActionLog: `log.call`): the
intent is on disk before the call, its outcome after. A lost reply is settled by reading back what
the call changes (the stream's summary, its existence, its key), never by resending blindly; when
the read-back shows nothing changed, the call is made once more. `mode_switches` reads the log back
for the 24-hour rule. The command line and the console run plans through here; this module does no
I/O of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from console.errors import ConsoleError, PlanRejected, StreamNotFound
from console.lifecycle.plans import Call, LifecyclePlan

WAIT_SECONDS = 300.0
SETTLE_WAIT_SECONDS = 60.0  # how long a read-back waits for the stream to leave UPDATING
MAY_HAVE_HAPPENED = ("applied", "unknown")


async def apply(
    kinesis: Any,
    plan: LifecyclePlan,
    *,
    action_log: Any,
    who: str | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> list[Any]:
    """Make the plan's calls in order, waiting for ACTIVE between two calls on the same stream.
    Returns the action log's Change of each call (`reply_lost` on one means its reply was lost and
    the stream showed the change); an outcome that cannot be established raises (exit 1)."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was called: {plan.refusal}")
    changes = []
    for index, call in enumerate(plan.calls):
        if index:
            progress(f"waiting for {plan.stream} to be ACTIVE before {call.operation}")
            await kinesis.wait_for_active(plan.stream, timeout=WAIT_SECONDS)
        progress(f"calling {call.describe()}")
        before = None if call.operation == "CreateStream" else await kinesis.describe_stream_summary(plan.stream)

        async def again(call: Call = call) -> Callable[[], Any]:
            progress(f"{call.operation}: the reply was lost and {plan.stream} shows no change; sending it once more")
            return lambda: _call(kinesis, plan, call.operation, call.parameters)

        change = await action_log.call(
            call.operation,
            {"action": f"stream {plan.action}", "summary": plan.summary, "call": call.describe()},
            lambda call=call: _call(kinesis, plan, call.operation, call.parameters),
            stream=plan.stream,
            backend=kinesis.label,
            who=who,
            settle=_settler(kinesis, plan, call, before),
            check=f"kconsole stream describe {plan.stream}",
            again=again,
        )
        if change.reply_lost:
            progress(f"{call.operation}: the reply was lost; the stream shows the change")
        if change.unlogged:
            progress(f"{call.operation}: {change.unlogged}")
        changes.append(change)
    return changes


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


def _settler(kinesis: Any, plan: LifecyclePlan, call: Call, before: Any) -> Callable[[], Any]:
    """Reads back what `call` changes and says (applied?, evidence): True, False, or None (cannot tell)."""
    stream, operation, params = plan.stream, call.operation, call.parameters

    async def settle() -> tuple[bool | None, str]:
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
        summary = await kinesis.wait_for_active(stream, timeout=SETTLE_WAIT_SECONDS)
        if operation.endswith("StreamRetentionPeriod"):
            target = params["RetentionPeriodHours"]
            if summary.retention_hours == target:
                return True, f"the stream shows the change: retention {target} h"
            if summary.retention_hours == before.retention_hours:
                return False, f"retention is still {before.retention_hours} h"
            return None, f"retention is {summary.retention_hours} h, neither {before.retention_hours} nor {target}"
        if operation == "UpdateStreamMode":
            target = params["StreamModeDetails"]["StreamMode"]
            if summary.mode == target:
                return True, f"the stream shows the change: {target}"
            return False, f"the stream is still {summary.mode}"
        if operation == "UpdateShardCount":
            target = params["TargetShardCount"]
            if summary.open_shard_count == target:
                return True, f"the stream shows the change: {target} open shards"
            if summary.open_shard_count == before.open_shard_count:
                return False, f"still {before.open_shard_count} open shards"
            return None, f"{summary.open_shard_count} open shards, neither {before.open_shard_count} nor {target}"
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

    async def guarded() -> tuple[bool | None, str]:
        try:
            return await settle()
        except ConsoleError as error:
            return None, f"reading {stream} back failed: {error.message}"

    return guarded


def mode_switches(entries: Iterable[dict], stream: str, backend: str) -> list[float]:
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
