"""Plans for today's stream and account settings: record size, warm throughput, record distribution,
tags, resource policies and the account's On-demand Advantage. Like console.lifecycle.plans, each
says what it will call and what changes; a rule AWS states (and the stream's state shows) is broken
is BadInput — one line, exit 2, nothing called — and a state the stream may leave (UPDATING) is a
refusal. console.lifecycle.actions reads what a plan needs and carries it out; this module does no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from console.bounds import MAX_RECORD_SIZE_KIB, MAX_WARM_THROUGHPUT_MIBPS, MIN_RECORD_SIZE_KIB, read_bounded
from console.errors import BadInput
from console.lifecycle.plans import Call, LifecyclePlan
from console.topology.model import AUTO_DISTRIBUTION, KEY_DISTRIBUTION, StreamSummary, format_kib
from console.words import counted

DISTRIBUTIONS = {"auto": AUTO_DISTRIBUTION, "partition-key": KEY_DISTRIBUTION}
# TagResource: at most 50 tags a resource; keys 1-128 and values 0-256 characters of letters, digits,
# spaces and _ . : / = + - @; the aws: prefix is AWS's own.
MAX_TAGS = 50
_TAG_TEXT = re.compile(r"[\w .:/=+\-@]*", re.UNICODE)
# A Kinesis resource policy document: at most 20 KiB of JSON.
MAX_POLICY_BYTES = 20 * 1024
COMMITMENT_ON = ("ENABLED", "ENABLED_UNTIL_EARLIEST_ALLOWED_END")


def _active(summary: StreamSummary) -> str | None:
    if summary.status != "ACTIVE":
        return f"the stream is {summary.status}; AWS accepts this change only while it is ACTIVE (try again shortly)"
    return None


def _target(summary: StreamSummary) -> dict[str, Any]:
    """Today's operations name a stream by its ARN (UpdateStreamWarmThroughput also takes a name)."""
    return {"StreamARN": summary.arn}


# The action log names a distribution switch so; its `target` says which way.
DISTRIBUTION_ACTION = "stream distribution"


def switched_to_auto_at(entries: Iterable[dict[str, Any]], stream: str, backend: str) -> str | None:
    """When (UTC, to the minute) this tool last switched `stream` at `backend` to AUTO, if that switch
    is the latest applied one it made; None when the log does not know (switched by another tool, say).
    Reads write-ahead entries (an intent whose outcome is applied) and the one-line entries of before."""
    entries = list(entries)
    applied = {
        entry.get("intent") for entry in entries if entry.get("kind") == "outcome" and entry.get("outcome") == "applied"
    }
    latest = None
    for entry in entries:
        fields = (entry.get("plan") or {}) if entry.get("kind") == "intent" else entry
        if entry.get("kind") == "intent" and entry.get("id") not in applied:
            continue
        if (
            fields.get("action") == DISTRIBUTION_ACTION
            and entry.get("stream") == stream
            and entry.get("backend") == backend
        ):
            latest = (fields, entry)
    if latest is None or latest[0].get("target") != "AUTO" or not latest[1].get("time"):
        return None
    return str(latest[1]["time"])[:16].replace("T", " ") + " UTC"


# ---- record size --------------------------------------------------------------------------------


def plan_max_record_size(summary: StreamSummary, kib: int) -> LifecyclePlan:
    if not MIN_RECORD_SIZE_KIB <= kib <= MAX_RECORD_SIZE_KIB:
        raise BadInput(
            f"--kib must be from {MIN_RECORD_SIZE_KIB:,} to {MAX_RECORD_SIZE_KIB:,}; got {kib}", code="usage"
        )
    current = summary.max_record_size_kib
    if kib == current:
        return LifecyclePlan("max-record-size", summary.name, f"records are already up to {format_kib(kib)}")
    call = Call("UpdateMaxRecordSize", {**_target(summary), "MaxRecordSizeInKiB": kib})
    if kib > current:
        consequences: tuple[str, ...] = (
            f"one record (data plus partition key) may hold up to {kib * 1024:,} bytes instead of {current * 1024:,}",
            "every consumer must take records that large (GetRecords pages, Lambda and KCL buffers); "
            "a PutRecords request still holds at most 10 MiB",
            "large records count against the shard's 1 MiB/s write limit like any other bytes",
        )
        text = f"raise the record size limit from {format_kib(current)} to {format_kib(kib)}"
    else:
        consequences = (
            f"puts of records over {kib * 1024:,} bytes are refused from now on; records already "
            "in the stream stay as they are",
        )
        text = f"lower the record size limit from {format_kib(current)} to {format_kib(kib)}"
    return LifecyclePlan("max-record-size", summary.name, text, (call,), consequences, _active(summary))


# ---- warm throughput ----------------------------------------------------------------------------


def plan_warm_throughput(summary: StreamSummary, mibps: int, *, commitment: str | None) -> LifecyclePlan:
    """`commitment`: the account's MinimumThroughputBillingCommitment status (None: unknown)."""
    if not 0 <= mibps <= MAX_WARM_THROUGHPUT_MIBPS:
        raise BadInput(f"--mibps must be from 0 to {MAX_WARM_THROUGHPUT_MIBPS:,} (10 GiB/s); got {mibps}", code="usage")
    if summary.mode != "ON_DEMAND":
        raise BadInput(
            f"warm throughput applies to on-demand streams; {summary.name} is provisioned "
            f"(switch with `kconsole stream mode {summary.name} on-demand`); nothing was called",
            code="not_on_demand",
        )
    if commitment is not None and commitment not in COMMITMENT_ON:
        raise BadInput(
            "warm throughput needs the account's On-demand Advantage (minimum throughput billing "
            "commitment), which is off: `kconsole account --on-demand-advantage on`; nothing was called",
            code="no_commitment",
        )
    current = summary.warm_throughput_target_mibps or 0
    if mibps == current:
        return LifecyclePlan("warm-throughput", summary.name, f"warm throughput is already {mibps} MiB/s")
    params = {**_target(summary), "WarmThroughputMiBps": mibps}
    call = Call("UpdateStreamWarmThroughput", params)
    consequences = [
        f"the stream is kept ready to take {mibps:,} MiB/s at once (now {current:,} MiB/s), "
        "without waiting for on-demand scaling"
        if mibps
        else "no throughput is kept warm"
    ]
    consequences.append("warm throughput is billed under the account's minimum throughput commitment")
    return LifecyclePlan(
        "warm-throughput",
        summary.name,
        f"set warm throughput to {mibps:,} MiB/s",
        (call,),
        tuple(consequences),
        _active(summary),
    )


# ---- record distribution ------------------------------------------------------------------------


def parse_distribution(text: str) -> str:
    strategy = DISTRIBUTIONS.get((text or "").strip().lower().replace("_", "-"))
    if strategy is None and (text or "").strip().upper() in DISTRIBUTIONS.values():
        strategy = text.strip().upper()
    if strategy is None:
        raise BadInput(f"record distribution must be auto or partition-key; got {text!r}", code="usage")
    return strategy


def plan_distribution(summary: StreamSummary, strategy: str) -> LifecyclePlan:
    if strategy == summary.record_distribution:
        return LifecyclePlan("distribution", summary.name, f"the stream already uses {strategy} record distribution")
    call = Call("UpdateStreamRecordDistributionStrategy", {**_target(summary), "RecordDistributionStrategy": strategy})
    if strategy == AUTO_DISTRIBUTION:
        if summary.mode != "ON_DEMAND":
            raise BadInput(
                f"AUTO record distribution applies to on-demand streams; {summary.name} is provisioned "
                f"(switch with `kconsole stream mode {summary.name} on-demand`); nothing was called",
                code="not_on_demand",
            )
        consequences: tuple[str, ...] = (
            "Kinesis ignores partition keys and explicit hash keys and spreads records over the shards itself",
            "per-key order is gone: records of one key may land on any shard, and only a shard keeps order",
            "key-based placement stops: explicit hash keys, write-sharded keys and key trees place nothing",
            "kconsole's own key-space what-ifs (Placement, Key tree, predict --stream, spread, split at a median "
            "of keys, keys that move) stop presenting placement",
            "records may be put without a partition key; records already in the stream keep their shards",
        )
        text = "switch to AUTO record distribution (Kinesis spreads records; keys no longer place them)"
    else:
        consequences = (
            "partition keys (and explicit hash keys) place records again from the switch on; "
            "records written under AUTO stay on the shards they went to",
            "every record needs a partition key again: keyless puts are refused",
        )
        text = "switch back to partition-key record distribution"
    return LifecyclePlan("distribution", summary.name, text, (call,), consequences, _active(summary))


# ---- tags -----------------------------------------------------------------------------------------


def parse_tag(text: str) -> tuple[str, str]:
    """K=V (V may be empty) with TagResource's rules."""
    key, equals, value = (text or "").partition("=")
    if not equals:
        raise BadInput(f"a tag is KEY=VALUE; got {text!r}", code="usage")
    return check_tag_key(key), _check_tag_value(value, key)


def check_tag_key(key: str) -> str:
    if not 1 <= len(key) <= 128 or not _TAG_TEXT.fullmatch(key):
        raise BadInput(
            f"a tag key is 1 to 128 letters, digits, spaces or _ . : / = + - @; got {key[:140]!r}", code="bad_tag"
        )
    if key.lower().startswith("aws:"):
        raise BadInput(f"tag keys starting with aws: are AWS's own; got {key!r}", code="bad_tag")
    return key


def _check_tag_value(value: str, key: str) -> str:
    if len(value) > 256 or not _TAG_TEXT.fullmatch(value):
        raise BadInput(
            f"the value of tag {key!r} must be 0 to 256 letters, digits, spaces or _ . : / = + - @", code="bad_tag"
        )
    return value


def plan_tag(summary: StreamSummary, tags: dict[str, str], existing: dict[str, str]) -> LifecyclePlan:
    changes = {key: value for key, value in tags.items() if existing.get(key) != value}
    if not changes:
        return LifecyclePlan("tag", summary.name, "the stream already has these tags")
    total = len(set(existing) | set(tags))
    if total > MAX_TAGS:
        raise BadInput(
            f"{summary.name} would have {counted(total, 'tag')}; AWS allows at most {MAX_TAGS} a resource; nothing was called",
            code="too_many_tags",
        )
    consequences = tuple(
        f"{key}={value}" + (f" (was {existing[key]!r})" if key in existing else " (new)")
        for key, value in sorted(changes.items())
    )
    call = Call("TagResource", {"ResourceARN": summary.arn, "Tags": changes})
    return LifecyclePlan("tag", summary.name, f"set {len(changes)} tag(s)", (call,), consequences)


def plan_untag(summary: StreamSummary, keys: list[str], existing: dict[str, str]) -> LifecyclePlan:
    present = sorted(key for key in set(keys) if key in existing)
    if not present:
        return LifecyclePlan("untag", summary.name, "the stream has none of these tags")
    call = Call("UntagResource", {"ResourceARN": summary.arn, "TagKeys": present})
    return LifecyclePlan(
        "untag",
        summary.name,
        f"remove {len(present)} tag(s)",
        (call,),
        tuple(f"{key} (was {existing[key]!r})" for key in present),
    )


# ---- resource policy ----------------------------------------------------------------------------


def read_policy(path: str) -> str:
    """A resource policy file read within MAX_POLICY_BYTES and checked as IAM's grammar asks:
    a JSON object with a Statement (one or a list), each with Effect Allow or Deny, an Action and a
    Principal. Compact JSON comes back, ready to send."""
    raw = read_bounded(path, MAX_POLICY_BYTES, what="policy file", code="bad_policy")
    return check_policy(raw, where=f"policy file {path}")


def check_policy(raw: bytes | str, *, where: str = "the policy") -> str:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        reason = getattr(error, "msg", None) or str(error)
        line = getattr(error, "lineno", None)
        raise BadInput(
            f"{where} is not JSON: {reason}" + (f" (line {line})" if line else ""), code="bad_policy"
        ) from None
    if not isinstance(document, dict):
        raise BadInput(
            f"{where} must be a JSON object with a Statement; got {type(document).__name__}", code="bad_policy"
        )
    statements = document.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements:
        raise BadInput(f"{where} has no Statement (an object or a non-empty list of them)", code="bad_policy")
    for number, statement in enumerate(statements, 1):
        if not isinstance(statement, dict):
            raise BadInput(f"{where}: statement {number} is not an object", code="bad_policy")
        if statement.get("Effect") not in ("Allow", "Deny"):
            raise BadInput(f'{where}: statement {number} needs "Effect": "Allow" or "Deny"', code="bad_policy")
        if "Action" not in statement and "NotAction" not in statement:
            raise BadInput(f"{where}: statement {number} names no Action", code="bad_policy")
        if "Principal" not in statement and "NotPrincipal" not in statement:
            raise BadInput(
                f"{where}: statement {number} names no Principal (a resource policy says who)", code="bad_policy"
            )
    return json.dumps(document, separators=(",", ":"))


def plan_policy_put(summary: StreamSummary, policy: str, current: str | None) -> LifecyclePlan:
    if current is not None and same_json(current, policy):
        return LifecyclePlan("policy", summary.name, "the stream already has this resource policy")
    statements = json.loads(policy)["Statement"]
    count = len(statements) if isinstance(statements, list) else 1
    consequences = [f"{count} statement(s) decide who else may use the stream"]
    consequences.append("replaces the current policy" if current else "the stream has no policy now")
    call = Call("PutResourcePolicy", {"ResourceARN": summary.arn, "Policy": policy})
    return LifecyclePlan("policy", summary.name, "put a resource policy", (call,), tuple(consequences))


def plan_policy_delete(summary: StreamSummary, current: str | None) -> LifecyclePlan:
    if not current:
        return LifecyclePlan("policy", summary.name, "the stream has no resource policy")
    call = Call("DeleteResourcePolicy", {"ResourceARN": summary.arn})
    return LifecyclePlan(
        "policy",
        summary.name,
        "delete the resource policy",
        (call,),
        ("access granted only by the policy (other accounts, say) ends at once",),
    )


def same_json(first: str, second: str) -> bool:
    try:
        return bool(json.loads(first) == json.loads(second))
    except ValueError:
        return False


def policy_or_none(text: str | None) -> str | None:
    """GetResourcePolicy's answer: an empty document ("{}", as some servers send) is no policy."""
    if not text:
        return None
    try:
        return None if json.loads(text) in ({}, None) else text
    except ValueError:
        return text


# ---- account ------------------------------------------------------------------------------------


def describe_commitment(raw: dict[str, Any]) -> dict[str, Any]:
    """DescribeAccountSettings' MinimumThroughputBillingCommitment, as plain JSON."""

    def when(value: Any) -> str | None:
        if isinstance(value, datetime):
            return value.astimezone(UTC).isoformat()
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(value, UTC).isoformat()
        return None if value is None else str(value)

    return {
        "status": raw.get("Status") or "DISABLED",
        "started_at": when(raw.get("StartedAt")),
        "ended_at": when(raw.get("EndedAt")),
        "earliest_allowed_end_at": when(raw.get("EarliestAllowedEndAt")),
    }


def plan_account(commitment: dict[str, Any], turn_on: bool) -> LifecyclePlan:
    status = commitment["status"]
    if (turn_on and status == "ENABLED") or (
        not turn_on and status in ("DISABLED", "ENABLED_UNTIL_EARLIEST_ALLOWED_END")
    ):
        return LifecyclePlan("account", "account", f"On-demand Advantage is already {status}")
    call = Call(
        "UpdateAccountSettings",
        {"MinimumThroughputBillingCommitment": {"Status": "ENABLED" if turn_on else "DISABLED"}},
    )
    if turn_on:
        consequences = (
            "the account commits to a minimum on-demand throughput, billed whether used or not, "
            "for at least the minimum term",
            "on-demand streams may then keep warm throughput (kconsole stream warm-throughput)",
        )
        text = "turn On-demand Advantage (minimum throughput billing commitment) on"
    else:
        end = commitment.get("earliest_allowed_end_at")
        consequences = (
            f"the commitment ends at its earliest allowed end ({end})" if end else "the commitment ends",
            "warm throughput on on-demand streams stops with it",
        )
        text = "turn On-demand Advantage off"
    return LifecyclePlan("account", "account", text, (call,), consequences)
