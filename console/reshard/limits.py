"""The AWS rules a reshard can break, checked before any call is made.

Each check returns `Breach`es that name the limit, state the rule in words an operator can act on,
and carry the numbers involved. Sources (Amazon Kinesis Data Streams documentation, read 2026-11):

- API_UpdateShardCount ("This operation has the following default limits"): at most 10 scaling
  calls per rolling 24-hour period per stream; target at most double and at least half the current
  open shard count; not above 10,000 shards in a stream; a stream above 10,000 shards may only be
  scaled down to fewer than 10,000; not above the account's shard limit. Provisioned mode only.
- API_SplitShard / API_MergeShards: provisioned mode only; the stream must be ACTIVE (otherwise
  ResourceInUseException). NewStartingHashKey must lie inside the shard's hash range; AWS's own
  InvalidArgumentException text asks for a key "greater than one plus the shard's StartingHashKey
  and less than the shard's EndingHashKey" (moto 5.2.5 copies that message), so both children get
  at least two hash keys. MergeShards: "two shards are considered adjacent if the union of the hash
  key ranges for the two shards form a contiguous set with no gaps".
- service-sizes-and-limits ("Quotas and limits"): default shard quota per account is 20,000 in
  us-east-1, us-west-2 and eu-west-1 and "1,000 or 6,000" in other Regions (we assume the lower
  1,000 there). Short-lived shards created while UpdateShardCount runs count toward it.
  Older docs said 500/200; the quota is configurable here (`Limits.account_shard_limit`, or the
  account's real ShardLimit from DescribeLimits when the backend offers it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.bounds import UPDATE_SHARD_COUNT_MAX
from console.words import counted

SCALE_CALLS_PER_24H = 10
MAX_SHARDS_PER_STREAM_UPDATE = UPDATE_SHARD_COUNT_MAX
LARGE_QUOTA_REGIONS = frozenset({"us-east-1", "us-west-2", "eu-west-1"})
LARGE_REGION_ACCOUNT_SHARDS = 20_000
OTHER_REGION_ACCOUNT_SHARDS = 1_000


def default_account_shard_limit(region: str | None) -> int:
    """The documented default account shard quota for `region` (unknown region: the larger one)."""
    if region is None or region in LARGE_QUOTA_REGIONS:
        return LARGE_REGION_ACCOUNT_SHARDS
    return OTHER_REGION_ACCOUNT_SHARDS


@dataclass(frozen=True)
class Limits:
    """Quotas to check against; defaults are AWS's documented defaults (see module docstring)."""

    scale_calls_per_24h: int = SCALE_CALLS_PER_24H
    max_shards_per_stream_update: int = MAX_SHARDS_PER_STREAM_UPDATE
    account_shard_limit: int | None = None  # None: the regional default


@dataclass(frozen=True)
class StreamContext:
    """What we know about the stream and account when planning (all optional for offline plans)."""

    status: str = "ACTIVE"
    mode: str = "PROVISIONED"
    region: str | None = None
    recent_scale_calls: int = 0  # UpdateShardCount calls on this stream in the last 24 h (action log)
    account_open_shards: int | None = None  # DescribeLimits' OpenShardCount, when known
    account_shard_limit: int | None = None  # DescribeLimits' ShardLimit, when known
    # AUTO record distribution: the service places records, so a plan counts no key's move.
    auto_distribution: bool = False


@dataclass(frozen=True)
class Breach:
    limit: str  # stable machine name, e.g. "update_shard_count_doubling"
    rule: str  # the rule in words
    detail: str  # how this plan breaks it
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "rule": self.rule, "detail": self.detail, **self.values}

    def __str__(self) -> str:
        return f"{self.detail} (rule: {self.rule})"


def check_stream_state(context: StreamContext | None, operation: str) -> list[Breach]:
    """Rules every reshard call shares: ACTIVE status and provisioned capacity mode."""
    if context is None:
        return []
    breaches = []
    if context.mode == "ON_DEMAND":
        breaches.append(
            Breach(
                "on_demand_stream",
                f"{operation} is only supported for streams in PROVISIONED capacity mode",
                "the stream is ON_DEMAND: Kinesis manages its shards; switch it to PROVISIONED first",
                {"mode": context.mode},
            )
        )
    if context.status != "ACTIVE":
        breaches.append(
            Breach(
                "stream_not_active",
                f"{operation} requires the stream to be ACTIVE (otherwise ResourceInUseException)",
                f"the stream is {context.status}; wait until it is ACTIVE (use --wait)",
                {"status": context.status},
            )
        )
    return breaches


def account_limit(context: StreamContext | None, limits: Limits) -> int:
    if limits.account_shard_limit is not None:
        return limits.account_shard_limit
    if context is not None and context.account_shard_limit is not None:
        return context.account_shard_limit
    return default_account_shard_limit(context.region if context else None)


def check_account_shards(
    current_open: int, peak_open: int, context: StreamContext | None, limits: Limits
) -> list[Breach]:
    """The stream's peak open shard count (short-lived shards included) against the account quota."""
    other_streams = 0
    if context is not None and context.account_open_shards is not None:
        other_streams = max(0, context.account_open_shards - current_open)
    quota = account_limit(context, limits)
    needed = other_streams + peak_open
    if needed <= quota:
        return []
    return [
        Breach(
            "account_shard_limit",
            f"open shards in the account (short-lived ones included) may not exceed the shard quota ({quota})",
            f"this change needs up to {counted(needed, 'open shard')} in the account ({peak_open} in this stream)",
            {"quota": quota, "needed": needed},
        )
    ]


def check_update_shard_count(
    current_open: int, target: int, peak_open: int, context: StreamContext | None, limits: Limits
) -> list[Breach]:
    """UpdateShardCount's documented default limits."""
    breaches = check_stream_state(context, "UpdateShardCount") + check_scale_step(current_open, target)
    cap = limits.max_shards_per_stream_update
    if target > cap and target > current_open:
        breaches.append(
            Breach(
                "stream_shard_limit",
                f"UpdateShardCount may not scale a stream above {counted(cap, 'shard')}",
                f"target {target} is above {cap}",
                {"target": target, "max": cap},
            )
        )
    if current_open > cap and target >= cap and target < current_open:
        breaches.append(
            Breach(
                "stream_shard_limit",
                f"a stream with more than {counted(cap, 'shard')} may only be scaled down to fewer than {cap}",
                f"target {target} is not below {cap}",
                {"target": target, "max": cap - 1},
            )
        )
    used = context.recent_scale_calls if context else 0
    if used >= limits.scale_calls_per_24h:
        breaches.append(
            Breach(
                "update_shard_count_daily_quota",
                f"UpdateShardCount may be called at most {limits.scale_calls_per_24h} times per rolling 24 hours per stream",
                f"the action log shows {used} UpdateShardCount calls on this stream in the last 24 hours",
                {"calls_last_24h": used, "quota": limits.scale_calls_per_24h},
            )
        )
    breaches.extend(check_account_shards(current_open, peak_open, context, limits))
    return breaches


def check_scale_step(current_open: int, target: int) -> list[Breach]:
    """UpdateShardCount's step rule: at most double, at least halve the open count in one call."""
    breaches = []
    if target > 2 * current_open:
        breaches.append(
            Breach(
                "update_shard_count_doubling",
                "UpdateShardCount may at most double the open shard count in one call",
                f"{current_open} -> {target} is more than double; go to {2 * current_open} first",
                {"current": current_open, "target": target, "max_target": 2 * current_open},
            )
        )
    if 2 * target < current_open:
        smallest = (current_open + 1) // 2
        breaches.append(
            Breach(
                "update_shard_count_halving",
                "UpdateShardCount may at most halve the open shard count in one call",
                f"{current_open} -> {target} is less than half; go to {smallest} first",
                {"current": current_open, "target": target, "min_target": smallest},
            )
        )
    return breaches


def check_split_key(shard_id: str, start: int, end: int, new_starting_hash_key: int) -> list[Breach]:
    """SplitShard's NewStartingHashKey must fall strictly inside the shard, leaving both children >= 2 keys."""
    if start + 1 < new_starting_hash_key < end:
        return []
    if new_starting_hash_key < start or new_starting_hash_key > end:
        where = "outside"
    elif new_starting_hash_key <= start + 1:
        where = "at the start of"
    else:
        where = "at the end of"
    return [
        Breach(
            "split_key_outside_shard",
            "SplitShard's NewStartingHashKey must be greater than StartingHashKey+1 and less than EndingHashKey",
            f"{new_starting_hash_key} is {where} {shard_id}'s range [{start}, {end}]",
            {
                "shard_id": shard_id,
                "new_starting_hash_key": str(new_starting_hash_key),
                "shard_starting_hash_key": str(start),
                "shard_ending_hash_key": str(end),
            },
        )
    ]
