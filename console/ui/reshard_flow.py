"""Split / merge / scale from the console, never blindly.

The selected shard (table, ribbon or tree) is the subject. A short question picks the split point,
the merge neighbour or the target count; the plan is built from a fresh listing (console.reshard.plan);
the preview screen shows it (console/ui/reshard_screens.py); the operator types the stream name;
then console.reshard.execute's Executor runs it in a worker, re-checking the plan against the stream
just before calling, reporting progress as notifications, and the shard map is polled again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from console.errors import BadInput, ConsoleError
from console.keyspace.hashkeys import parse_hash_key
from console.topology.model import Shard
from console.ui.format import short_shard_id
from console.ui.screens.prompt import ChoiceScreen, PromptScreen

if TYPE_CHECKING:
    from console.ui.app import KConsoleApp


def start(app: "KConsoleApp", operation: str) -> None:
    if app.read_only:
        app.notify(f"{operation}: not available in read-only mode", severity="warning")
        return
    if not app.stream or app.view is None:
        app.notify(f"{operation}: no stream loaded yet", severity="warning")
        return
    suggestion = heat_split_suggestion(app) if operation == "split" else None
    if suggestion is not None:
        app.select_shard(suggestion.shard_id)
    if operation in ("split", "merge"):
        shard = app.table.shard(app.selected_shard_id) if app.selected_shard_id else None
        if shard is None or not shard.is_open:
            app.notify(f"{operation}: select an open shard first (table, ribbon or lineage)", severity="warning")
            return
    run_flow(app, operation, suggestion.at if suggestion is not None else None)


def heat_split_suggestion(app: "KConsoleApp"):
    """On the heat tab, `s` splits the shard selected there at the median of its observed traffic."""
    if app.query_one("#tabs").active != "heat":
        return None
    panels = app.query("#heat-panel")
    selected = getattr(panels.first(), "selected", None) if panels else None
    return getattr(selected, "split", None)


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


def split_point_problem(shard: Shard, text: str) -> str | None:
    if text.lower() in ("", "midpoint", "m"):
        return None
    try:
        key = parse_hash_key(text, what="split point")
    except BadInput as error:
        return error.message
    if not shard.starting_hash_key < key <= shard.ending_hash_key:
        return (f"the split point must be inside {short_shard_id(shard.shard_id)}: greater than "
                f"{shard.starting_hash_key} and at most {shard.ending_hash_key}")
    return None


def _count_problem(text: str) -> str | None:
    if not text.isdigit() or int(text) < 1:
        return f"the target must be a whole number of shards, at least 1; got {text!r}"
    return None


@work(exclusive=True, group="reshard", exit_on_error=False)
async def run_flow(app: "KConsoleApp", operation: str, suggested_split: int | None = None) -> None:
    from console.reshard.actionlog import ActionLog
    from console.reshard.plan import midpoint, plan_merge, plan_scale, plan_split
    from console.reshard.execute import Executor
    from console.ui.reshard_screens import ConfirmByNameScreen, ReshardPreviewScreen

    stream = app.stream
    assert stream is not None and app.view is not None
    view = app.view
    if operation == "split":
        shard = app.table.shard(app.selected_shard_id or "")
        hint = (" (prefilled: the median hash key of the traffic the heat panel observed)"
                if suggested_split is not None else "")
        answer = await app.push_screen_wait(PromptScreen(
            f"Split {shard.shard_id}",
            f"Split point: 'midpoint', or the decimal hash key the upper child starts at{hint}",
            str(suggested_split) if suggested_split is not None else "midpoint",
            lambda text: split_point_problem(shard, text)))
        if answer is None:
            return
        at_midpoint = answer.lower() in ("", "midpoint", "m")
        key = midpoint(shard) if at_midpoint else parse_hash_key(answer)
        if at_midpoint:
            basis = "midpoint"
        elif suggested_split is not None and key == suggested_split:
            basis = "median of observed traffic"
        else:
            basis = "explicit hash key"

        def build(shards, context):
            return plan_split(shards, shard.shard_id, key, basis=basis, context=context)
    elif operation == "merge":
        shard = app.table.shard(app.selected_shard_id or "")
        neighbours = open_neighbours(view.shards, shard)
        if not neighbours:
            app.notify(f"merge: {shard.shard_id} has no adjacent open shard", severity="warning")
            return
        chosen = await app.push_screen_wait(ChoiceScreen(
            f"Merge {shard.shard_id} with which adjacent open shard?",
            [(other.shard_id, f"{other.shard_id}  ({side} neighbour, {other.share:.2%})") for side, other in neighbours]))
        if chosen is None:
            return
        lower, upper = sorted((shard.shard_id, chosen), key=lambda sid: next(
            s.starting_hash_key for s in view.shards if s.shard_id == sid))

        def build(shards, context):
            return plan_merge(shards, lower, upper, context=context)
    else:
        current = view.summary.open_shard_count
        answer = await app.push_screen_wait(PromptScreen(
            f"Rescale {stream} (now {current} open shards)", "Target open shard count (UpdateShardCount, uniform)",
            str(current * 2), _count_problem))
        if answer is None:
            return
        target = int(answer)

        def build(shards, context):
            return plan_scale(shards, target, context=context)

    def progress(text: str) -> None:
        # A toast for the log of steps, the header for the state now (it stays until the end),
        # and a poll so the header's status and the table follow the stream while it is UPDATING.
        app.notify(text, title=operation, timeout=6)
        app.header.update_state(activity=f"{operation}: {text}")
        app.poll_now()

    executor = Executor(app.source, stream, action_log=ActionLog.default(), progress=progress)
    try:
        _summary, shards, context = await executor.snapshot()
        plan = build(shards, context)
    except ConsoleError as error:
        app.notify(f"{operation}: {error.message}", severity="error", timeout=10)
        return
    consumers, behind = await app.reshard_barrier_lines(stream, shards, plan)
    if not await app.push_screen_wait(ReshardPreviewScreen(plan, stream, consumers=consumers, consumers_behind=behind)):
        app.notify(f"{operation}: cancelled, nothing was called", timeout=4)
        return
    if not await app.push_screen_wait(ConfirmByNameScreen(stream, plan.summary)):
        app.notify(f"{operation}: cancelled, nothing was called", timeout=4)
        return
    app.notify(f"{operation}: running — {plan.summary}", title=operation, timeout=6)
    app.header.update_state(activity=f"{operation}: running, waiting for ACTIVE")
    try:
        result = await executor.execute(build, expected=plan, wait=True)
    except ConsoleError as error:
        app.notify(f"{operation} failed: {error.message}", severity="error", timeout=15)
    else:
        outcome = "as planned" if not result.differences else "; ".join(result.differences)
        app.notify(f"{operation} done ({', '.join(result.calls) or 'no calls'}); stream {result.status}; {outcome}",
                   title=operation, timeout=10)
    finally:
        app.header.update_state(activity=None)
    app.poll_now()
