"""Split / merge / scale from the console, never blindly.

The app hands the flow what it needs, no more: a `ReshardRequest` (the stream, its shards as last
polled, the selected shard, the backend) and three callables (`ask` pushes a dialog and waits for
its answer, `notify` shows a toast, `post` sends a message to the app). A short question picks the
split point, the merge neighbour or the target count; the plan is built from a fresh listing
(console.reshard.plan); the preview screen shows it (console/ui/screens/reshard.py), with the
reshard barrier when a lease table is open in the Consumers tab (consumers still reading the shards
the plan changes hold it back until the operator presses f, as --force does on the CLI) and the
stream's readers the plan affects (console.consumers.readers, the lines `kconsole plan` prints); the operator
types the stream name; then console.reshard.execute's Executor runs it, re-checking the plan
against the stream just before calling. A preview that is older than the console's last poll (the
operator took their time) is re-checked against a fresh listing when they proceed: if the stream
changed, the new plan is shown and confirmed instead. Every call goes through the action log as on
the command line (intent first, outcome after, a lost reply read back). Progress goes back to the app as `ReshardActivity` (the
header's activity line) and `ReshardProgressed` (the stream changed: poll it now) messages.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.screen import Screen

from console.backend.protocol import READERS, ConsoleBackend
from console.bounds import scale_target
from console.errors import BadInput, ConsoleError
from console.keyspace.hashkeys import parse_typed_hash_key
from console.reshard.actionlog import ActionLog
from console.reshard.execute import Executor, describe_changes
from console.reshard.limits import StreamContext, check_scale_step, check_split_key
from console.reshard.model import KeySample, ReshardPlan
from console.reshard.plan import midpoint, plan_merge, plan_scale, plan_split
from console.topology.model import Shard
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import ChoiceScreen, PromptScreen
from console.ui.screens.reshard import ReshardPreviewScreen
from console.words import counted

OPERATIONS = ("split", "merge", "scale")


async def reader_lines(backend: ConsoleBackend, stream: str, plan: Any) -> list[str]:
    """The preview's lines on the stream's readers the plan affects (console.consumers.readers, as
    `kconsole plan` prints them); none from a source without the readers' services."""
    if READERS not in backend.capabilities or plan.is_noop:
        return []
    from console.consumers.barrier import changed_shards
    from console.consumers.readers import readers_for_reshard

    try:
        readers = await readers_for_reshard(
            backend,
            stream,
            closes=changed_shards(plan.before, (s.shard_id for s in plan.after if s.unchanged and s.shard_id)),
            shards_before=len(plan.before),
            shards_after=len(plan.after),
        )
    except ConsoleError as error:
        return [f"readers not checked: {error.message}"]
    return readers.lines()


class ReshardActivity(Message):
    """What the reshard is doing now, for the header (None: nothing any more)."""

    def __init__(self, text: str | None) -> None:
        super().__init__()
        self.text = text


class ReshardProgressed(Message):
    """The stream may have changed shape: poll it now."""


@dataclass(frozen=True)
class ReshardRequest:
    operation: str  # one of OPERATIONS
    stream: str
    shards: tuple[Shard, ...]  # as last polled (the plan itself is built from a fresh listing)
    open_shard_count: int
    selected: Shard | None
    backend: ConsoleBackend  # the backend the console polls
    suggested_split: int | None = None  # the heat panel's median of observed traffic
    # With a lease table open (Consumers tab): the barrier lines for the preview and, when consumers
    # are still behind in the shards the plan changes, why the change is held back (else None).
    barrier: Callable[[str, Any, Any], Awaitable[tuple[list[str], str | None]]] | None = None
    key_format: str = "decimal"  # how the preview writes hash keys
    sample: KeySample | None = None  # keys whose moves the plan counts (those typed in Placement)
    sample_label: str = "keys typed in Placement"
    # When the console last polled the stream (on `clock`): a preview older than that is re-checked.
    last_poll: Callable[[], float | None] | None = None
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class ReshardDialogs:
    ask: Callable[[Screen[Any]], Awaitable[Any]]  # push a dialog, wait for its answer
    notify: Callable[..., None]
    post: Callable[[Message], object]


def refusal(request: ReshardRequest) -> str | None:
    """Why the flow cannot start (a toast), or None."""
    if request.operation in ("split", "merge") and (request.selected is None or not request.selected.is_open):
        return f"{request.operation}: select an open shard first (table, ribbon or lineage)"
    return None


def open_neighbours(shards: tuple[Shard, ...], shard: Shard) -> list[tuple[str, Shard]]:
    """The open shards adjacent to `shard` in the key space: ('lower'|'upper', shard)."""
    found = []
    for other in shards:
        if not other.is_open or other.shard_id == shard.shard_id:
            continue
        if other.ending_hash_key + 1 == shard.starting_hash_key:
            found.append(("lower", other))
        elif other.starting_hash_key == shard.ending_hash_key + 1:
            found.append(("upper", other))
    return sorted(found, key=lambda pair: pair[0])


def parse_split_point(text: str) -> int:
    """A hash key typed in decimal (as AWS takes it) or in hex with 0x (as key_format = "hex" shows it)."""
    return parse_typed_hash_key(text, what="split point")


def split_point_problem(shard: Shard, text: str) -> str | None:
    """None if `text` is a split point the plan accepts; else the plan's own message (the one rule,
    console.reshard.limits.check_split_key, used by `kconsole plan split` too)."""
    if text.lower().strip() in ("", "midpoint", "m"):
        return None
    try:
        key = parse_split_point(text)
    except BadInput as error:
        return error.message
    breaches = check_split_key(shard.shard_id, shard.starting_hash_key, shard.ending_hash_key, key)
    return str(breaches[0]) if breaches else None


def scale_target_problem(text: str, current: int) -> str | None:
    """The CLI's bound on --to, then UpdateShardCount's double/half rule as the plan states it."""
    try:
        target = scale_target(text, what="the target")
    except BadInput as error:
        return error.message
    breaches = check_scale_step(current, target)
    return str(breaches[0]) if breaches else None


async def run_reshard(request: ReshardRequest, dialogs: ReshardDialogs) -> None:
    operation, stream = request.operation, request.stream
    ask, notify, post = dialogs.ask, dialogs.notify, dialogs.post
    if operation == "split":
        to_split = request.selected
        assert to_split is not None  # refusal() turned away a split with no shard selected
        suggested_split = request.suggested_split
        hint = (
            " (prefilled: the median hash key of the traffic the heat panel observed)"
            if suggested_split is not None
            else ""
        )
        answer = await ask(
            PromptScreen(
                f"Split {to_split.shard_id}",
                f"Split point: 'midpoint', or the hash key the upper child starts at (decimal, or 0x hex){hint}",
                str(suggested_split) if suggested_split is not None else "midpoint",
                lambda text: split_point_problem(to_split, text),
            )
        )
        if answer is None:
            return
        at_midpoint = answer.lower().strip() in ("", "midpoint", "m")
        key = midpoint(to_split) if at_midpoint else parse_split_point(answer)
        if at_midpoint:
            basis = "midpoint"
        elif suggested_split is not None and key == suggested_split:
            basis = "median of observed traffic"
        else:
            basis = "explicit hash key"

        def build(shards: Sequence[Shard], context: StreamContext | None) -> ReshardPlan:
            return plan_split(shards, to_split.shard_id, key, basis=basis, context=context, sample=request.sample)
    elif operation == "merge":
        to_merge = request.selected
        assert to_merge is not None  # as for a split
        neighbours = open_neighbours(request.shards, to_merge)
        if not neighbours:
            notify(f"merge: {to_merge.shard_id} has no adjacent open shard", severity="warning")
            return
        chosen = await ask(
            ChoiceScreen(
                f"Merge {to_merge.shard_id} with which adjacent open shard?",
                [
                    (other.shard_id, f"{other.shard_id}  ({side} neighbour, {other.share:.2%})")
                    for side, other in neighbours
                ],
            )
        )
        if chosen is None:
            return
        lower, upper = sorted(
            (to_merge.shard_id, chosen),
            key=lambda sid: next(s.starting_hash_key for s in request.shards if s.shard_id == sid),
        )

        def build(shards: Sequence[Shard], context: StreamContext | None) -> ReshardPlan:
            return plan_merge(shards, lower, upper, context=context, sample=request.sample)
    else:
        current = request.open_shard_count
        answer = await ask(
            PromptScreen(
                f"Rescale {stream} (now {counted(current, 'open shard')})",
                "Target open shard count (UpdateShardCount, uniform)",
                str(current * 2),
                lambda text: scale_target_problem(text, current),
            )
        )
        if answer is None:
            return
        target = int(answer)

        def build(shards: Sequence[Shard], context: StreamContext | None) -> ReshardPlan:
            return plan_scale(shards, target, context=context, sample=request.sample)

    def progress(text: str) -> None:
        # A toast for the log of steps, the header for the state now (it stays until the end),
        # and a poll so the header's status and the table follow the stream while it is UPDATING.
        notify(text, title=operation, timeout=6)
        post(ReshardActivity(f"{operation}: {text}"))
        post(ReshardProgressed())

    executor = Executor(request.backend, stream, action_log=ActionLog.default(), progress=progress)
    try:
        _summary, shards, context = await executor.snapshot()
        plan = build(shards, context)
    except ConsoleError as error:
        notify(f"{operation}: {error.message}", severity="error", timeout=10)
        return
    while True:
        built_at = request.clock()
        consumers, held_back = (
            await request.barrier(stream, shards, plan) if request.barrier is not None else (None, None)
        )
        consumers = [*(consumers or []), *await reader_lines(request.backend, stream, plan)] or None
        if not await ask(
            ReshardPreviewScreen(
                plan,
                stream,
                key_format=request.key_format,
                sample_label=request.sample_label,
                consumers=consumers,
                held_back=held_back,
            )
        ):
            notify(f"{operation}: cancelled, nothing was called", timeout=4)
            return
        action = f"{plan.summary} — APPLY ANYWAY: {held_back}" if held_back else plan.summary
        if not await ask(ConfirmByNameScreen(stream, action)):
            notify(f"{operation}: cancelled, nothing was called", timeout=4)
            return
        polled = request.last_poll() if request.last_poll is not None else None
        if polled is None or polled <= built_at:
            break
        # The console polled since this preview was built: check it against a fresh listing first.
        try:
            _summary, fresh, context = await executor.snapshot()
            rebuilt = build(fresh, context)
        except ConsoleError as error:
            notify(f"{operation}: {error.message}; nothing was called", severity="error", timeout=10)
            return
        changes = describe_changes(plan.before, rebuilt.before)
        if not changes and rebuilt.operations == plan.operations:
            break
        notify(
            f"{operation}: {stream} changed since this preview ({'; '.join(changes[:3]) or 'a new plan'}); "
            "nothing was called: review the new plan",
            severity="warning",
            timeout=10,
        )
        plan, shards = rebuilt, fresh
    notify(f"{operation}: running — {plan.summary}", title=operation, timeout=6)
    post(ReshardActivity(f"{operation}: running, waiting for ACTIVE"))
    try:
        result = await executor.execute(build, expected=plan, wait=True)
    except ConsoleError as error:
        notify(f"{operation} failed: {error.message}", severity="error", timeout=15)
    else:
        outcome = "as planned" if not result.differences else "; ".join(result.differences)
        notify(
            f"{operation} done ({', '.join(result.calls) or 'no calls'}); stream {result.status}; {outcome}",
            title=operation,
            timeout=10,
        )
    finally:
        post(ReshardActivity(None))
    post(ReshardProgressed())
