"""Running a checkpoint plan: watch the leases' counters so a running application is refused, then
one conditional UpdateItem (or PutItem for a clone) per lease, each through the action log with the
old checkpoint beside the new one; a lost reply is settled by reading the item back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from console.consumers.leases import (
    CHECKPOINT,
    CHECKPOINT_OWNER,
    CHECKPOINT_SUBSEQUENCE,
    LEASE_COUNTER,
    LEASE_KEY,
    LEASE_OWNER,
    OWNER_SWITCHES,
)
from console.consumers.rewind_find import LeaseTable, lease_counter, read_table
from console.consumers.rewind_plan import PENDING_ATTRIBUTES, CheckpointPlan, Move
from console.errors import ConsoleError, PlanRejected

DEFAULT_WATCH_SECONDS = 10.0  # the KCL's failoverTimeMillis default


# ---- run -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseOutcome:
    lease_key: str
    shard_id: str
    outcome: str  # applied | not applied | unknown | not attempted
    evidence: str

    def to_json(self) -> dict[str, Any]:
        return {
            "lease_key": self.lease_key,
            "shard_id": self.shard_id,
            "outcome": self.outcome,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class RunResult:
    action_id: str
    outcomes: tuple[LeaseOutcome, ...]
    done: str = "checkpoint(s) changed"  # what an applied outcome did, in the last line

    @property
    def complete(self) -> bool:
        return all(o.outcome == "applied" for o in self.outcomes)

    def lines(self) -> list[str]:
        lines = [f"{o.shard_id}: {o.outcome} ({o.evidence})" for o in self.outcomes]
        applied = sum(o.outcome == "applied" for o in self.outcomes)
        lines.append(f"{applied} of {len(self.outcomes)} {self.done}; action {self.action_id}")
        if applied and self.outcomes and not self.complete:
            lines.append(f"the leases above marked applied did change; undo them with --undo {self.action_id}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "complete": self.complete, "leases": [o.to_json() for o in self.outcomes]}


async def watch_counters(
    backend: Any, table: str, stream: str, seconds: float, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
) -> LeaseTable:
    """The table read twice, `seconds` apart; PlanRejected when any lease's counter moved (a worker renews it)."""
    first = await read_table(backend, table, stream)
    if seconds > 0:
        await sleep(seconds)
    second = await read_table(backend, table, stream)
    moved = sorted(key for key, counter in second.counters.items() if first.counters.get(key) != counter)
    if moved:
        raise PlanRejected(
            f"the application is running: stop it first (leaseCounter moved on {', '.join(moved[:5])}"
            f"{' and more' if len(moved) > 5 else ''} within {seconds:g} s); nothing was written"
        )
    return second


async def run(
    backend: Any,
    plan: CheckpointPlan,
    *,
    action_log: Any,
    watch_seconds: float = DEFAULT_WATCH_SECONDS,
    progress: Callable[[str], None] = lambda _text: None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    who: str | None = None,
) -> RunResult:
    """Watch for a running application, then write each changed lease conditionally, through the
    action log (old checkpoint beside the new), stopping at the first lease a worker changed."""
    if plan.refusal:
        raise PlanRejected(f"{plan.action} {plan.stream} refused, nothing was written: {plan.refusal}")
    if plan.action == "clone":
        return await _run_clone(backend, plan, action_log=action_log, progress=progress, who=who)
    changed = plan.changed
    if not changed:
        return RunResult("", ())
    progress(f"watching {plan.table} for {watch_seconds:g} s: a running application renews its leases")
    current = await watch_counters(backend, plan.table, plan.stream, watch_seconds, sleep=sleep)
    for move in changed:
        lease = current.leases.get(move.lease_key)
        if move.create is None and (lease is None or lease.checkpoint != move.old):
            raise PlanRejected(
                f"{move.shard_id}'s checkpoint changed since the plan ({move.old} -> "
                f"{lease.checkpoint if lease else 'no lease'}): plan again; nothing was written"
            )
        if move.create is not None and move.lease_key in current.items:
            raise PlanRejected(f"{move.shard_id} has a lease again since the plan: plan again; nothing was written")
    action_id = uuid.uuid4().hex[:12]
    outcomes: list[LeaseOutcome] = []
    for index, move in enumerate(changed):
        item = current.items.get(move.lease_key)
        try:
            change = await _write(backend, plan, move, item, action_id=action_id, action_log=action_log, who=who)
        except ConsoleError as error:
            outcome = "unknown" if error.code == "outcome_unknown" else "not applied"
            why = (
                "a worker changed the lease since it was read (the application is running)"
                if error.code == "condition_failed"
                else error.message
            )
            outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, outcome, why))
            outcomes.extend(
                LeaseOutcome(m.lease_key, m.shard_id, "not attempted", "stopped at the lease before")
                for m in changed[index + 1 :]
            )
            break
        evidence = change.evidence or "written"
        if change.reply_lost:
            progress(f"{move.shard_id}: the reply was lost; reading the lease back shows the change")
        outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "applied", evidence))
    return RunResult(action_id, tuple(outcomes))


async def _write(
    backend: Any,
    plan: CheckpointPlan,
    move: Move,
    item: dict[str, Any] | None,
    *,
    action_id: str,
    action_log: Any,
    who: str | None,
) -> Any:
    key = {LEASE_KEY: {"S": move.lease_key}}
    logged = {
        "action": f"consumers {plan.action}",
        "action_id": action_id,
        "lease_table": plan.table,
        "lease_key": move.lease_key,
        "shard_id": move.shard_id,
        "old_checkpoint": move.old,
        "old_subsequence": move.old_subsequence,
        "new_checkpoint": move.new,
        "new_subsequence": move.new_subsequence,
        "target": plan.target,
        **({"undo_of": plan.undo_of} if plan.undo_of else {}),
    }
    if move.create is not None:
        created = move.create

        async def put() -> None:
            await backend.put_item_if_absent(plan.table, created, LEASE_KEY)

        async def created_back() -> tuple[bool | None, str]:
            found = await backend.get_item(plan.table, key)
            if found is None:
                return False, "the lease is not there"
            return (found.get(CHECKPOINT) == created[CHECKPOINT]), f"the lease reads {found.get(CHECKPOINT)}"

        return await action_log.call(
            "PutItem",
            {**logged, "recreated": True},
            put,
            stream=plan.stream,
            backend=backend.label,
            who=who,
            settle=created_back,
            check=f"kconsole consumers {plan.stream} --lease-table {plan.table}",
        )
    assert item is not None
    counter = item.get(LEASE_COUNTER)
    owner = item.get(LEASE_OWNER)
    expected_counter = int(counter["N"]) if counter else None

    async def update() -> None:
        await backend.update_item_if(
            plan.table,
            key,
            set_values={
                CHECKPOINT: {"S": move.new},
                CHECKPOINT_SUBSEQUENCE: {"N": str(move.new_subsequence)},
                OWNER_SWITCHES: {"N": "0"},
            },
            remove=[LEASE_OWNER, CHECKPOINT_OWNER, *PENDING_ATTRIBUTES],
            add_numbers={LEASE_COUNTER: 1},
            expected={LEASE_COUNTER: counter, LEASE_OWNER: owner},
        )

    async def read_back() -> tuple[bool | None, str]:
        found = await backend.get_item(plan.table, key)
        if found is None:
            return None, "the lease is gone"
        now_at = (found.get(CHECKPOINT) or {}).get("S")
        now_counter = lease_counter(found)
        if now_at == move.new and expected_counter is not None and now_counter == expected_counter + 1:
            return True, f"the lease reads {now_at}, counter {now_counter}"
        if now_counter == expected_counter and now_at == move.old:
            return False, f"the lease still reads {now_at}"
        return None, f"the lease reads {now_at}, counter {now_counter}: someone else changed it"

    async def again() -> Callable[[], Awaitable[None]]:
        return update  # conditional on the same counter: it cannot overwrite a worker's write

    return await action_log.call(
        "UpdateItem",
        logged,
        update,
        stream=plan.stream,
        backend=backend.label,
        who=who,
        settle=read_back,
        check=f"kconsole consumers {plan.stream} --lease-table {plan.table}",
        again=again,
    )


async def _run_clone(
    backend: Any, plan: CheckpointPlan, *, action_log: Any, progress: Callable[[str], None], who: str | None
) -> RunResult:
    """Create the table as the KCL does, then put each lease, each through the action log."""
    assert plan.to_table is not None
    target = plan.to_table
    action_id = uuid.uuid4().hex[:12]
    logged = {"action": "consumers clone", "action_id": action_id, "lease_table": plan.table, "to_table": target}

    async def table_there() -> tuple[bool | None, str]:
        exists = target in await backend.table_names()
        return exists, f"table {target} {'exists' if exists else 'does not exist'}"

    progress(f"creating lease table {target}")
    await action_log.call(
        "CreateTable",
        logged,
        lambda: backend.create_lease_table(target),
        stream=plan.stream,
        backend=backend.label,
        who=who,
        settle=table_there,
        check=f"kconsole consumers {plan.stream} --lease-table {target}",
    )
    outcomes = []
    for move, item in zip(plan.moves, plan.clone_items):
        key = {LEASE_KEY: item[LEASE_KEY]}

        async def put(item: dict[str, Any] = item) -> None:
            await backend.put_item_if_absent(target, item, LEASE_KEY)

        async def there(key: dict[str, Any] = key, item: dict[str, Any] = item) -> tuple[bool | None, str]:
            found = await backend.get_item(target, key)
            if found is None:
                return False, "the lease is not there"
            return found.get(CHECKPOINT) == item.get(CHECKPOINT), f"the lease reads {found.get(CHECKPOINT)}"

        try:
            change = await action_log.call(
                "PutItem",
                {**logged, "lease_key": move.lease_key, "new_checkpoint": move.new},
                put,
                stream=plan.stream,
                backend=backend.label,
                who=who,
                settle=there,
                check=f"kconsole consumers {plan.stream} --lease-table {target}",
            )
        except ConsoleError as error:
            outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "not applied", error.message))
            continue
        outcomes.append(LeaseOutcome(move.lease_key, move.shard_id, "applied", change.evidence or "written"))
    return RunResult(action_id, tuple(outcomes), done=f"lease(s) written to {target}")
