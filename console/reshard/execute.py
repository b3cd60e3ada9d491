"""Carry out a reshard plan through the backend, never blindly.

`execute` re-reads the stream just before the first call and rebuilds the plan from that fresh
shard list: if another operator changed the shards since the preview, it refuses (PlanRejected
naming what changed); if the stream is UPDATING it waits (wait=True) or explains. Limits are
checked again on the fresh state. Every call's intent is written to the action log before it is
made and its outcome after; a lost reply is settled by reading the shard list back. Calls that hit
ResourceInUse wait for ACTIVE, re-check the plan against a fresh shard list and retry; split and
merge LimitExceeded (5 calls/s per account) back off and retry the same way; UpdateShardCount's
LimitExceeded is a quota, so it is explained, not retried. After the calls, shards that appeared
meanwhile and that the plan does not explain (another operator's change) are named.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.acting import acting_for
from console.errors import BackendError, BadInput, ConsoleError, LimitExceeded, PlanRejected, ResourceInUse
from console.reshard.actionlog import ActionLog, Reading, Settle, logged_call
from console.reshard.limits import StreamContext
from console.reshard.plan import Operation, ReshardPlan
from console.topology.model import Shard, StreamSummary
from console.words import counted

Progress = Callable[[str], None]
PlanBuilder = Callable[[Sequence[Shard], StreamContext | None], ReshardPlan]

API_NAMES = {"split": "SplitShard", "merge": "MergeShards", "update_shard_count": "UpdateShardCount"}


@dataclass(frozen=True)
class ExecutionResult:
    plan: ReshardPlan  # the plan as rebuilt from the fresh shard list, which is what ran
    calls: tuple[str, ...]
    status: str  # the stream's status when we stopped watching
    after: tuple[Shard, ...] | None  # observed open shards (only when we waited for ACTIVE)
    differences: tuple[str, ...]  # observed vs planned, when observed
    log_entry: dict[str, Any] | None
    changed_by_others: tuple[str, ...] = ()  # shards made meanwhile that the plan does not explain

    def to_json(self) -> dict[str, Any]:
        return {
            "executed": bool(self.calls),
            "changed_by_others": list(self.changed_by_others),
            "calls": list(self.calls),
            "status": self.status,
            "matches_plan": None if self.after is None else not self.differences,
            "differences": list(self.differences),
            "observed_after": None if self.after is None else [_shard_json(s) for s in self.after],
            "plan": self.plan.to_json(),
        }


def _shard_json(shard: Shard) -> dict[str, Any]:
    return {
        "shard_id": shard.shard_id,
        "starting_hash_key": str(shard.starting_hash_key),
        "ending_hash_key": str(shard.ending_hash_key),
        "share": shard.share,
        "parent_shard_id": shard.parent_shard_id,
        "adjacent_parent_shard_id": shard.adjacent_parent_shard_id,
    }


def describe_changes(expected: Sequence[Shard], fresh: Sequence[Shard]) -> list[str]:
    """What differs between the open shards a plan was made from and the open shards now."""
    then = {s.shard_id: (s.starting_hash_key, s.ending_hash_key) for s in expected}
    now = {s.shard_id: (s.starting_hash_key, s.ending_hash_key) for s in fresh}
    changes = [f"{sid} is no longer open" for sid in then if sid not in now]
    changes += [f"{sid} is a new open shard" for sid in now if sid not in then]
    changes += [f"{sid}'s hash range changed" for sid in then if sid in now and then[sid] != now[sid]]
    return changes


def compare_with_plan(plan: ReshardPlan, observed: Sequence[Shard]) -> list[str]:
    """Differences between the planned open shards and the observed ones (ids only where planned)."""
    planned = [(s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in plan.after]
    seen = sorted(observed, key=lambda s: s.starting_hash_key)
    if len(planned) != len(seen):
        return [f"planned {counted(len(planned), 'open shard')}, observed {len(seen)}"]
    differences = []
    for (planned_id, start, end), shard in zip(planned, seen):
        if (start, end) != (shard.starting_hash_key, shard.ending_hash_key):
            differences.append(
                f"planned [{start}, {end}], observed {shard.shard_id} "
                f"[{shard.starting_hash_key}, {shard.ending_hash_key}]"
            )
        elif planned_id is not None and planned_id != shard.shard_id:
            differences.append(f"planned id {planned_id}, observed {shard.shard_id} for the same range")
    return differences


def open_in_order(shards: Sequence[Shard]) -> list[Shard]:
    return sorted((s for s in shards if s.is_open), key=lambda s: s.starting_hash_key)


MAX_RESCALE_GENERATIONS = 2  # UpdateShardCount splits shards and merges their children: two generations


def generations(known: Sequence[Shard], new: Sequence[Shard]) -> dict[str, int]:
    """How many generations each new shard is from the shards open in `known` (those are 0)."""
    depth = {s.shard_id: 0 for s in known if s.is_open}
    pending = list(new)
    while pending:
        ready = [s for s in pending if all(p in depth for p in s.parents)]
        if not ready:  # parents outside what we know (expired, or never listed): count from there
            ready = pending
        for shard in ready:
            depth[shard.shard_id] = 1 + max((depth.get(p, 0) for p in shard.parents), default=0)
        pending = [s for s in pending if s not in ready]
    return depth


def unexplained_shards(known: Sequence[Shard], now: Sequence[Shard], plan: ReshardPlan) -> list[str]:
    """Shards created since `known` was read that the plan does not explain: an open shard whose range
    the plan does not end with, or a shard split or merged out of one the plan made; after
    UpdateShardCount, whose ranges and intermediate steps the server chooses, the new open shards
    when their count is not the target."""
    known_ids = {s.shard_id for s in known}
    new = [s for s in now if s.shard_id not in known_ids]
    if any(operation.kind == "update_shard_count" for operation in plan.operations):
        # The server picks UpdateShardCount's steps, however many generations deep: open ranges equal
        # to the plan's, made in no more shards than the plan's steps make, are the plan's doing (more
        # shards: another change landed in between, and this one was applied on top of it). The server
        # may pick other ranges too (not always AWS's equal shares); then a count other than the target
        # gives another change away, and so does a lineage deeper than a rescale makes.
        ranges = [(s.starting_hash_key, s.ending_hash_key) for s in open_in_order(now)]
        if ranges == [s.range for s in plan.after] and len(new) <= 2 * plan.split_steps + plan.merge_steps:
            return []
        if sum(s.is_open for s in now) != len(plan.after):
            return [s.shard_id for s in new if s.is_open]
        depth = generations(known, new)
        return [s.shard_id for s in new if s.is_open and depth.get(s.shard_id, 0) > MAX_RESCALE_GENERATIONS]
    planned = {(s.starting_hash_key, s.ending_hash_key) for s in plan.after}
    made = {s.shard_id for s in new if (s.starting_hash_key, s.ending_hash_key) in planned}
    return [s.shard_id for s in new if s.shard_id not in made and (s.is_open or any(p in made for p in s.parents))]


class Executor:
    """One plan's execution against one backend. `sleep` and `clock` are injectable for tests.

    Each call goes through the action log's `logged_call`: its intent is on disk before it is made,
    and a lost reply is settled by reading the shard list back (`_settler`), never by resending it.
    A resend (after ResourceInUse, LimitExceeded, or a lost reply the shard list shows was not
    applied) first re-checks the plan against a fresh shard list."""

    def __init__(
        self,
        kinesis: Any,
        stream: str,
        *,
        action_log: ActionLog,
        progress: Progress = lambda _: None,
        poll_interval: float = 1.0,
        timeout: float = 900.0,
        retries: int = 3,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kinesis, self.stream, self.action_log, self.progress = kinesis, stream, action_log, progress
        self.poll_interval, self.timeout, self.retries = poll_interval, timeout, retries
        self.sleep, self.clock = sleep, clock

    # ---------------------------------------------------------------- state

    async def context(self, summary: StreamSummary) -> StreamContext:
        calls = self.action_log.update_shard_count_calls(self.stream, self.kinesis.label)
        limit, open_count = await self._account_limits()
        return StreamContext(
            status=summary.status,
            mode=summary.mode,
            region=getattr(self.kinesis, "region", None),
            recent_scale_calls=calls,
            account_open_shards=open_count,
            account_shard_limit=limit,
            auto_distribution=summary.auto_distribution,
        )

    async def _account_limits(self) -> tuple[int | None, int | None]:
        """DescribeLimits' ShardLimit and OpenShardCount; where the endpoint cannot answer, the checks
        fall back to the documented regional default and this stream's own shards."""
        try:
            raw = await self.kinesis.describe_limits()
            return int(raw["ShardLimit"]), int(raw["OpenShardCount"])
        except (ConsoleError, KeyError, TypeError, ValueError):
            return None, None

    async def snapshot(self) -> tuple[StreamSummary, list[Shard], StreamContext]:
        summary: StreamSummary = await self.kinesis.describe_stream_summary(self.stream)
        shards: list[Shard] = await self.kinesis.all_shards(self.stream)
        return summary, shards, await self.context(summary)

    async def wait_until_active(self, reason: str) -> StreamSummary:
        """Poll DescribeStreamSummary until ACTIVE, reporting progress; time out with a clear error."""
        started, waited = self.clock(), False
        while True:
            summary: StreamSummary = await self.kinesis.describe_stream_summary(self.stream)
            elapsed = self.clock() - started
            if summary.status == "ACTIVE":
                if waited:
                    self.progress(
                        f"{self.stream}: ACTIVE after {elapsed:.0f}s, {counted(summary.open_shard_count, 'open shard')}"
                    )
                return summary
            if summary.status not in ("UPDATING", "CREATING"):
                raise BackendError(
                    f"{self.stream} is {summary.status}; cannot continue ({reason})", code="stream_state"
                )
            if elapsed >= self.timeout:
                raise BackendError(
                    f"{self.stream} is still {summary.status} after {elapsed:.0f}s ({reason}); "
                    "check again later with `kconsole shards`",
                    code="timeout",
                )
            waited = True
            self.progress(
                f"{self.stream}: {summary.status} ({reason}), {counted(summary.open_shard_count, 'open shard')}, "
                f"{elapsed:.0f}s elapsed"
            )
            await self.sleep(self.poll_interval)

    async def _fresh(self, plan: ReshardPlan, index: int, reason: str) -> list[Shard]:
        """The shard list once the stream is ACTIVE again, checked against the plan before a resend:
        before the first step the open shards must still be the ones the plan was made from."""
        await self.wait_until_active(reason)
        shards: list[Shard] = await self.kinesis.all_shards(self.stream)
        if index == 0:
            changes = describe_changes(plan.before, open_in_order(shards))
            if changes:
                raise PlanRejected(
                    f"{self.stream} was changed by someone else meanwhile ({'; '.join(changes[:5])}); "
                    "nothing more was called; review the new plan and run again",
                    code="changed_meanwhile",
                )
        return shards

    # ---------------------------------------------------------------- calls

    def _resolve(self, operation: Operation, shards: Sequence[Shard]) -> Operation:
        """Find the operation's shards by hash key in the current list (ids of shards created by
        earlier steps were only predicted)."""
        if operation.kind == "update_shard_count":
            return operation
        key = operation.new_starting_hash_key
        if key is None:  # the planner gives every split and merge its hash key
            raise PlanRejected(f"{operation.kind} without a hash key")
        opened = open_in_order(shards)
        if operation.kind == "split":
            owner = next((s for s in opened if s.starting_hash_key < key <= s.ending_hash_key), None)
            if owner is None:
                raise PlanRejected(f"cannot split at {key}: an open shard already starts there (the stream changed)")
            return Operation("split", shard_id=owner.shard_id, new_starting_hash_key=key)
        lower = next((s for s in opened if s.ending_hash_key == key - 1), None)
        upper = next((s for s in opened if s.starting_hash_key == key), None)
        if lower is None or upper is None:
            raise PlanRejected(f"cannot merge at {key}: no two open shards meet there any more (the stream changed)")
        return Operation("merge", shard_id=lower.shard_id, adjacent_shard_id=upper.shard_id, new_starting_hash_key=key)

    async def _call(self, operation: Operation) -> None:
        if operation.kind == "split":
            await self.kinesis.split_shard(self.stream, operation.shard_id, operation.new_starting_hash_key)
        elif operation.kind == "merge":
            await self.kinesis.merge_shards(self.stream, operation.shard_id, operation.adjacent_shard_id)
        else:
            await self.kinesis.update_shard_count(self.stream, operation.target_shard_count)

    def _settler(self, operation: Operation, shards: Sequence[Shard]) -> Settle:
        """Reads the shard list back (once the stream is ACTIVE: AWS applies a change while UPDATING)
        and says whether `operation`, made on `shards`, happened."""
        before_open = {s.shard_id for s in shards if s.is_open}

        async def settle() -> Reading:
            await self.wait_until_active("reading back a change whose reply was lost")
            now = await self.kinesis.all_shards(self.stream)
            by_id = {s.shard_id: s for s in now}
            if operation.kind == "update_shard_count":
                open_now = {s.shard_id for s in now if s.is_open}
                if open_now == before_open:
                    return False, f"the open shards are still the same {len(open_now)}"
                if len(open_now) == operation.target_shard_count:
                    return True, f"the stream shows the change: {counted(len(open_now), 'open shard')}"
                return (
                    None,
                    f"{counted(len(open_now), 'open shard')}, neither the {len(before_open)} before nor the target",
                )
            adjacent = operation.adjacent_shard_id if operation.kind == "merge" else None
            parents = {shard_id for shard_id in (operation.shard_id, adjacent) if shard_id is not None}
            if all(p in by_id and by_id[p].is_open for p in parents):
                return False, f"{' and '.join(sorted(parents))} still open"
            children = [
                s.shard_id
                for s in now
                if set(s.parents) == parents
                and (
                    operation.kind == "merge"
                    or s.starting_hash_key == operation.new_starting_hash_key
                    or (
                        operation.new_starting_hash_key is not None
                        and s.ending_hash_key == operation.new_starting_hash_key - 1
                    )
                )
            ]
            if children:
                return (
                    True,
                    f"the stream shows the change: {', '.join(sorted(parents))} closed into {', '.join(children)}",
                )
            return None, f"{', '.join(sorted(parents))} closed, but not as planned (another change?)"

        return settle

    async def _step(
        self, plan: ReshardPlan, operation: Operation, shards: list[Shard], index: int, who: str | None
    ) -> Operation:
        """One planned operation, logged, settled, and resent only after a fresh check of the plan."""
        for attempt in range(self.retries + 1):
            resolved = self._resolve(operation, shards)
            api = API_NAMES[resolved.kind]

            async def again() -> Callable[[], Awaitable[None]]:
                self.progress(
                    f"{api}: the reply was lost and the stream shows no change; checking the plan "
                    "against a fresh shard list, then sending it once more"
                )
                fresh = await self._fresh(plan, index, "before resending")
                redo = self._resolve(operation, fresh)
                if redo != resolved:
                    raise PlanRejected(
                        f"{api} not resent: the stream changed meanwhile ({redo.describe()} would "
                        f"be needed instead of {resolved.describe()})",
                        code="changed_meanwhile",
                    )
                return lambda: self._call(redo)

            try:
                change = await logged_call(
                    self.action_log,
                    api,
                    {
                        "action": plan.action,
                        "summary": plan.summary,
                        "step": index + 1,
                        "steps": len(plan.operations),
                        "call": resolved.describe(),
                    },
                    lambda: self._call(resolved),
                    stream=self.stream,
                    backend=self.kinesis.label,
                    settle=self._settler(resolved, shards),
                    who=who,
                    check=f"kconsole shards {self.stream}",
                    again=again,
                )
                if change.reply_lost:
                    self.progress(f"{api}: the reply was lost; the stream shows the change")
                if change.unlogged:
                    self.progress(f"{api}: {change.unlogged}")
                return resolved
            except BadInput as error:
                # Refused as invalid: a shard it names may have been closed by another change meanwhile
                # (a split racing a merge). That is the stream's state, not the user's input: exit 1.
                if error.code != "invalid_argument":
                    raise
                now = open_in_order(await self.kinesis.all_shards(self.stream))
                changes = describe_changes(open_in_order(shards), now)
                if not changes:
                    raise
                raise PlanRejected(
                    f"{api} refused ({error.message}): {self.stream} was changed by someone else meanwhile "
                    f"({'; '.join(changes[:5])}); review the new plan and run again",
                    code="changed_meanwhile",
                ) from None
            except ResourceInUse as error:
                if attempt == self.retries:
                    raise ResourceInUse(
                        f"{api} on {self.stream}: the stream stayed busy after {attempt + 1} tries "
                        f"({error.message}); another change may be running"
                    ) from None
                self.progress(f"{api}: stream busy (ResourceInUse); waiting for ACTIVE, then re-checking the plan")
                shards = await self._fresh(plan, index, "busy")
            except LimitExceeded as error:
                if resolved.kind == "update_shard_count":
                    raise LimitExceeded(
                        f"UpdateShardCount on {self.stream} refused by AWS (LimitExceeded): the stream may have used "
                        "its 10 scaling calls in the last 24 hours (including calls from other tools), or the "
                        f"target exceeds the account shard quota; {error.message}"
                    ) from None
                if attempt == self.retries:
                    raise LimitExceeded(
                        f"{api} on {self.stream} still refused after {attempt + 1} tries "
                        f"(LimitExceeded: split/merge allow 5 calls per second per account, and "
                        f"the account shard quota applies): {error.message}"
                    ) from None
                delay = self.poll_interval * 2**attempt
                self.progress(f"{api}: LimitExceeded; retrying in {delay:.1f}s after re-checking the plan")
                await self.sleep(delay)
                shards = await self._fresh(plan, index, "throttled")
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    # ---------------------------------------------------------------- the whole run

    async def execute(self, build: PlanBuilder, *, expected: ReshardPlan, wait: bool) -> ExecutionResult:
        summary, shards, context = await self.snapshot()
        if summary.status == "UPDATING":
            if not wait:
                raise ResourceInUse(
                    f"{self.stream} is UPDATING (another reshard is in progress); nothing was "
                    "called; run again with --wait to wait for it, or later"
                )
            await self.wait_until_active("another change in progress")
            summary, shards, context = await self.snapshot()
        plan = build(shards, context)
        changes = describe_changes(expected.before, plan.before)
        if changes:
            raise PlanRejected(
                f"{self.stream} changed since the plan was made ({'; '.join(changes[:5])}); "
                "nothing was called; review the new plan and run again",
                code="stale_plan",
            )
        if plan.breaches:
            raise PlanRejected("plan rejected, nothing was called: " + "; ".join(str(b) for b in plan.breaches))
        if plan.is_noop:
            return ExecutionResult(plan, (), summary.status, None, (), None)
        known = list(shards)  # the shard list's history up to our first call
        who = await self._caller_identity()
        calls: list[str] = []
        counts: dict[str, int] = {}
        try:
            for index, operation in enumerate(plan.operations):
                if index:
                    await self.wait_until_active(f"step {index} of {len(plan.operations)} done")
                    shards = await self.kinesis.all_shards(self.stream)
                resolved = await self._step(plan, operation, shards, index, who)
                calls.append(resolved.describe())
                api = API_NAMES[resolved.kind]
                counts[api] = counts.get(api, 0) + 1
                if len(plan.operations) > 1:
                    self.progress(f"{index + 1}/{len(plan.operations)}: {resolved.describe()}")
        except ConsoleError as error:
            if calls:
                self._log(plan, who, calls, counts, None, result="failed", error=error.message)
            raise
        status, after = "UPDATING", None
        differences: tuple[str, ...] = ()
        foreign: tuple[str, ...] = ()
        if not wait:
            status = (await self.kinesis.describe_stream_summary(self.stream)).status
        if (
            wait or status == "ACTIVE"
        ):  # without --wait: the change already landed (the local server applies it at once)
            if wait:
                status = (await self.wait_until_active("resharding")).status
            everything = await self.kinesis.all_shards(self.stream)
            after = tuple(open_in_order(everything))
            differences = tuple(compare_with_plan(plan, after))
            foreign = tuple(unexplained_shards(known, everything, plan))
        result = "changed by someone else meanwhile" if foreign else "done" if after is not None else "submitted"
        entry = self._log(plan, who, calls, counts, after, result=result, foreign=foreign)
        return ExecutionResult(plan, tuple(calls), status, after, differences, entry, foreign)

    async def _caller_identity(self) -> str | None:
        if (agent := acting_for.get()) is not None:
            return agent
        try:
            identity: str | None = await self.kinesis.caller_identity()
            return identity
        except ConsoleError:
            return None

    def _log(
        self,
        plan: ReshardPlan,
        who: str | None,
        calls: list[str],
        counts: dict[str, int],
        after: Sequence[Shard] | None,
        *,
        result: str,
        error: str | None = None,
        foreign: Sequence[str] = (),
    ) -> dict[str, Any] | None:
        """The plan's summary line in the log (each call has its own intent and outcome already); a
        log that cannot take it costs a progress line, not the result."""
        entry = {
            "kind": "result",
            "who": who,
            "backend": self.kinesis.label,
            "stream": self.stream,
            "action": plan.action,
            "summary": plan.summary,
            "calls": counts,
            "operations": calls,
            "result": result,
            "before": [_shard_json(s) for s in plan.before],
            "after": [_shard_json(s) for s in after] if after is not None else None,
            "planned_after": [s.to_json() for s in plan.after],
        }
        if foreign:
            entry["unexplained_shards"] = list(foreign)
        if error:
            entry["error"] = error
        try:
            return self.action_log.append(entry)
        except OSError as problem:
            self.progress(f"cannot write the result to {self.action_log.path} ({problem.strerror or problem})")
            return None
