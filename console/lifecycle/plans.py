"""What a lifecycle change will do, before it is done: the calls, what changes or is lost, and — when
AWS's rules forbid it — why it is refused. The command line and the console show the same plan.

    plan = plan_retention(summary, 24)     # summary: topology.model.StreamSummary
    plan.render()                          # the preview; plan.refusal: exit 1, nothing called
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.lifecycle.rules import AWS_MANAGED_KMS_KEY, DEFAULT_SHARDS, MIN_RETENTION_HOURS
from console.topology.model import StreamSummary
from console.words import counted

# UpdateStreamMode: the capacity mode of a stream may change once in a rolling 24 hours.
MODE_SWITCH_WINDOW_SECONDS = 24 * 3600
MODE_SWITCHES_PER_WINDOW = 1
MODE_NAMES = {"PROVISIONED": "provisioned", "ON_DEMAND": "on-demand"}


@dataclass(frozen=True)
class Call:
    """One API call the change makes, in order."""

    operation: str
    parameters: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        args = ", ".join(f"{name}={value}" for name, value in self.parameters.items())
        return f"{self.operation}({args})"


@dataclass(frozen=True)
class LifecyclePlan:
    action: str  # create | delete | retention | mode | encryption
    stream: str
    summary: str  # one line: what will happen
    calls: tuple[Call, ...] = ()
    consequences: tuple[str, ...] = ()  # what changes, what is lost, what it costs
    refusal: str | None = None  # AWS's rules (or the stream's state) forbid it: nothing is called
    # What was read to make the plan that a face may ask about (a delete's consumers and channels).
    facts: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_noop(self) -> bool:
        return not self.calls and self.refusal is None

    @property
    def ok(self) -> bool:
        return self.refusal is None

    def render(self) -> str:
        lines = [f"{self.stream}: {self.summary}"]
        lines += [f"  - {line}" for line in self.consequences]
        if self.calls:
            lines.append("Calls: " + "; then ".join(call.describe() for call in self.calls))
        if self.refusal:
            lines.append(f"Refused: {self.refusal}")
        elif self.is_noop:
            lines.append("Nothing to do.")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "stream": self.stream,
            "summary": self.summary,
            "calls": [{"operation": c.operation, "parameters": c.parameters} for c in self.calls],
            "consequences": list(self.consequences),
            "refusal": self.refusal,
            "noop": self.is_noop,
        }


def _first_ten(names: Sequence[str]) -> str:
    return ", ".join(names[:10]) + (f" (+{len(names) - 10} more)" if len(names) > 10 else "")


def _hours(hours: int) -> str:
    return f"{hours} h" + (f" ({hours / 24:g} days)" if hours >= 48 and hours % 24 == 0 else "")


def _not_active(summary: StreamSummary) -> str | None:
    if summary.status != "ACTIVE":
        return f"the stream is {summary.status}; AWS accepts this change only while it is ACTIVE (try again shortly)"
    return None


def plan_create(
    name: str, *, shards: int | None, on_demand: bool, retention_hours: int | None, exists: bool
) -> LifecyclePlan:
    if on_demand:
        calls = [Call("CreateStream", {"StreamName": name, "StreamModeDetails": {"StreamMode": "ON_DEMAND"}})]
        summary = "create an on-demand stream (AWS sizes and scales the shards)"
        consequences = ["on-demand streams are billed per hour and per GB written and read"]
    else:
        shards = shards or DEFAULT_SHARDS
        calls = [Call("CreateStream", {"StreamName": name, "ShardCount": shards})]
        summary = f"create a provisioned stream of {counted(shards, 'shard')}"
        consequences = [
            f"{counted(shards, 'shard')}: up to {shards * 1000:,} records/s and {shards} MiB/s written; billed per shard hour"
        ]
    if retention_hours is not None and retention_hours != MIN_RETENTION_HOURS:
        calls.append(
            Call("IncreaseStreamRetentionPeriod", {"StreamName": name, "RetentionPeriodHours": retention_hours})
        )
        consequences.append(f"retention {_hours(retention_hours)} (extended retention is billed per shard hour)")
    else:
        consequences.append(f"retention {_hours(MIN_RETENTION_HOURS)} (AWS's default)")
    refusal = f"stream {name!r} already exists" if exists else None
    return LifecyclePlan("create", name, summary, tuple(calls), tuple(consequences), refusal)


def plan_delete(
    summary: StreamSummary,
    *,
    consumers: list[str] | None,
    total_shards: int | None,
    enforce_consumer_deletion: bool,
    channels: Sequence[str] = (),
) -> LifecyclePlan:
    """`consumers` None: the endpoint cannot list them. `channels`: the active channels reading from
    the stream; AWS refuses to delete it while any are."""
    lost = [
        f"every record in it: up to {_hours(summary.retention_hours)} of data, unrecoverable",
        f"{counted(summary.open_shard_count, 'open shard')}"
        + (
            f" ({total_shards} with closed ones in retention)"
            if total_shards and total_shards != summary.open_shard_count
            else ""
        ),
    ]
    if consumers is None:
        lost.append("its registered consumers, if any: this endpoint cannot list them")
    elif consumers:
        lost.append(f"{len(consumers)} registered consumer(s), deregistered with it: {_first_ten(consumers)}")
    else:
        lost.append("no registered (enhanced fan-out) consumers")
    lost.append(
        f"its settings: {MODE_NAMES.get(summary.mode, summary.mode)} mode, encryption {summary.encryption}, "
        "tags, enhanced monitoring"
    )
    refusal = None
    if summary.status == "DELETING":
        refusal = "the stream is already being deleted"
    elif consumers and not enforce_consumer_deletion:
        refusal = (
            f"the stream has {len(consumers)} registered consumer(s); AWS refuses to delete it unless "
            "they go too: pass --enforce-consumer-deletion"
        )
    if channels:
        shown_channels = _first_ten(channels)
        lost.append(f"{len(channels)} active channel(s): {shown_channels}")
        refusal = refusal or (
            f"the stream has {len(channels)} active channel(s) ({shown_channels}); AWS refuses to delete it "
            "until they are gone: `kconsole channels delete NAME` for each"
        )
    call = Call("DeleteStream", {"StreamName": summary.name, "EnforceConsumerDeletion": enforce_consumer_deletion})
    return LifecyclePlan(
        "delete",
        summary.name,
        "delete the stream and everything in it",
        (call,),
        tuple(lost),
        refusal,
        {"consumers": list(consumers or ()), "channels": list(channels)},
    )


def plan_retention(summary: StreamSummary, hours: int) -> LifecyclePlan:
    current = summary.retention_hours
    if hours == current:
        return LifecyclePlan("retention", summary.name, f"retention is already {_hours(hours)}")
    params = {"StreamName": summary.name, "RetentionPeriodHours": hours}
    if hours > current:
        call = Call("IncreaseStreamRetentionPeriod", params)
        consequences = (
            f"records stay readable for {_hours(hours)} instead of {_hours(current)}",
            "retention over 24 h is billed per shard hour (over 7 days, per GB-month stored too)",
        )
        summary_text = f"increase retention from {_hours(current)} to {_hours(hours)}"
    else:
        call = Call("DecreaseStreamRetentionPeriod", params)
        consequences = (
            f"records older than {_hours(hours)} become unreadable at once: everything written "
            f"between {hours} and {current} hours ago is lost to every consumer",
            "a consumer lagging by more than the new window loses its place (TRIM_HORIZON moves up)",
        )
        summary_text = f"decrease retention from {_hours(current)} to {_hours(hours)}"
    return LifecyclePlan("retention", summary.name, summary_text, (call,), consequences, _not_active(summary))


def plan_mode(
    summary: StreamSummary, mode: str, *, shards: int | None, recent_switches: list[float], now: float
) -> LifecyclePlan:
    """`recent_switches`: epoch times of mode switches seen in the stream's history (the action log);
    switches made by other tools are invisible and AWS's own check stays the last word."""
    target = MODE_NAMES[mode]
    calls: list[Call] = []
    consequences: list[str] = []
    if mode == summary.mode:
        summary_text = f"the stream is already {target}"
        if shards is not None and shards != summary.open_shard_count:
            consequences.append(
                f"for {counted(shards, 'shard')}, rescale: kconsole plan scale {summary.name} --to {shards}"
            )
        return LifecyclePlan("mode", summary.name, summary_text, (), tuple(consequences))
    calls.append(
        Call("UpdateStreamMode", {"StreamARN": summary.arn or summary.name, "StreamModeDetails": {"StreamMode": mode}})
    )
    if mode == "ON_DEMAND":
        summary_text = f"switch {summary.name} from provisioned to on-demand"
        consequences += [
            "AWS manages the shard count from now on; billing moves to per hour and per GB",
            f"throughput starts at the larger of {summary.open_shard_count} shards' worth and "
            "4 MiB/s written, then follows the traffic",
        ]
    else:
        count = summary.open_shard_count if shards is None else shards
        summary_text = f"switch {summary.name} from on-demand to provisioned with {counted(count, 'shard')}"
        consequences.append(
            f"the stream keeps its {counted(summary.open_shard_count, 'open shard')}; from now on "
            "you scale it (billed per shard hour)"
        )
        if shards is not None and shards != summary.open_shard_count:
            calls.append(
                Call(
                    "UpdateShardCount",
                    {"StreamName": summary.name, "TargetShardCount": shards, "ScalingType": "UNIFORM_SCALING"},
                )
            )
            consequences.append(
                f"then rescaled from {summary.open_shard_count} to {counted(shards, 'shard')} once ACTIVE"
            )
    recent = sorted(t for t in recent_switches if now - t < MODE_SWITCH_WINDOW_SECONDS)
    refusal = _not_active(summary)
    if refusal is None and len(recent) >= MODE_SWITCHES_PER_WINDOW:
        last = datetime.fromtimestamp(recent[-1], UTC)
        allowed = datetime.fromtimestamp(recent[-MODE_SWITCHES_PER_WINDOW] + MODE_SWITCH_WINDOW_SECONDS, UTC)
        refusal = (
            f"the capacity mode was switched at {last:%Y-%m-%d %H:%M} UTC (action log); AWS allows "
            f"one switch per 24 hours: next at {allowed:%Y-%m-%d %H:%M} UTC"
        )
    return LifecyclePlan("mode", summary.name, summary_text, tuple(calls), tuple(consequences), refusal)


def plan_encryption(summary: StreamSummary, kms_key: str | None, *, current_key: str | None) -> LifecyclePlan:
    """`kms_key` None turns encryption off."""
    params = {"StreamName": summary.name, "EncryptionType": "KMS"}
    if kms_key is None:
        if summary.encryption == "NONE":
            return LifecyclePlan("encryption", summary.name, "encryption is already off")
        call = Call("StopStreamEncryption", {**params, "KeyId": current_key or AWS_MANAGED_KMS_KEY})
        return LifecyclePlan(
            "encryption",
            summary.name,
            "turn server-side encryption off",
            (call,),
            (
                "records written from now on are stored unencrypted; records already there "
                "stay encrypted until they expire",
            ),
            _not_active(summary),
        )
    if summary.encryption == "KMS" and current_key == kms_key:
        return LifecyclePlan("encryption", summary.name, f"already encrypted with {kms_key}")
    call = Call("StartStreamEncryption", {**params, "KeyId": kms_key})
    consequences = [
        "records written from now on are encrypted with this key; records already there stay as they were written",
        "producers need kms:GenerateDataKey and consumers kms:Decrypt on the key",
    ]
    if kms_key != AWS_MANAGED_KMS_KEY:
        consequences.append("a customer-managed key is billed by KMS per request")
    verb = "change the encryption key" if summary.encryption == "KMS" else "turn server-side encryption on"
    return LifecyclePlan(
        "encryption", summary.name, f"{verb}: KMS key {kms_key}", (call,), tuple(consequences), _not_active(summary)
    )
