"""Reshard plans as text: the before/after key-space ribbons and the plan listing the CLI prints and
the TUI preview shows."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from console.keyspace.hashkeys import HASH_SPACE
from console.reshard.model import PlannedShard, ReshardPlan
from console.topology.model import Shard
from console.words import counted

RIBBON_BEFORE = "0123456789abcdefghijklmnopqrstuvwxyz"
RIBBON_NEW = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ribbon(ranges: Sequence[tuple[int, int]], width: int = 64, labels: Sequence[str] | None = None) -> str:
    """The key space as a bar of `width` characters; column c shows the shard owning its middle key.
    `labels[i]` is shard i's character (default: 0-9a-z, cycling)."""
    endings = [end for _, end in ranges]
    labels = labels or [RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i in range(len(ranges))]
    columns = (((2 * c + 1) * HASH_SPACE) // (2 * width) for c in range(width))
    return "".join(labels[bisect.bisect_left(endings, key)] for key in columns)


def ribbon_labels(plan: ReshardPlan) -> tuple[list[str], list[str]]:
    """Each shard's character on the bars, before (0-9a-z in key order) and after (unchanged shards
    keep theirs, new shards get capitals): the legend of `ribbons`."""
    before = [RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i in range(len(plan.before))]
    by_id = {s.shard_id: label for s, label in zip(plan.before, before)}
    after, fresh = [], 0
    for shard in plan.after:
        if shard.unchanged and shard.shard_id in by_id:
            after.append(by_id[shard.shard_id])
        else:
            after.append(RIBBON_NEW[fresh % len(RIBBON_NEW)])
            fresh += 1
    return before, after


def ribbons(plan: ReshardPlan, width: int = 64) -> tuple[str, str]:
    """Before and after bars: unchanged shards keep their character, new shards get capitals."""
    before_labels, after_labels = ribbon_labels(plan)
    before_bar = ribbon([(s.starting_hash_key, s.ending_hash_key) for s in plan.before], width, before_labels)
    after_bar = ribbon([s.range for s in plan.after], width, after_labels)
    return before_bar, after_bar


def _shard_rows(
    shards: Sequence[PlannedShard | Shard], limit: int, key_text: Callable[[int], str], shard_name: Callable[[str], str]
) -> list[str]:
    """One line per shard, its range in aligned columns (+ marks a new shard)."""
    shown = shards[:limit]
    names = [shard_name(s.shard_id) if s.shard_id else "(new)" for s in shown]
    starts = [key_text(s.starting_hash_key) for s in shown]
    ends = [key_text(s.ending_hash_key) for s in shown]
    name_width = max(map(len, names), default=0)
    key_width = max(map(len, starts + ends), default=0)
    rows = [f"    {'Shard':<{name_width}} {'Share':>8}  {'Start key':>{key_width}}  {'End key':>{key_width}}"]
    for shard, name, start, end in zip(shown, names, starts, ends):
        mark = " " if getattr(shard, "unchanged", True) else "+"
        rows.append(f"  {mark} {name:<{name_width}} {shard.share:8.3%}  {start:>{key_width}}  {end:>{key_width}}")
    if len(shards) > limit:
        rows.append(f"    ... {len(shards) - limit} more")
    return rows


def render_plan(plan: ReshardPlan, width: int = 64, max_rows: int = 20, *, with_ribbons: bool = True) -> str:
    """The plan as text for the terminal (the CLI prints it; the TUI preview shows it)."""
    lines = [plan.summary, ""]
    if with_ribbons:
        before_bar, after_bar = ribbons(plan, width)
        lines += [f"  before |{before_bar}|", f"  after  |{after_bar}|", ""]
    return "\n".join(lines + plan_details(plan, max_rows))


def plan_details(
    plan: ReshardPlan,
    max_rows: int = 20,
    *,
    key_text: Callable[[int], str] = str,
    shard_name: Callable[[str], str] = str,
) -> list[str]:
    """Everything below the bars, as lines: calls, shards before and after with their ranges, steps,
    moving sample keys, ordering and limits. `key_text` writes a hash key (decimal by default) and
    `shard_name` a shard id (in full by default) in the shard lists."""
    lines = []
    if plan.operations:
        lines.append(f"Calls ({len(plan.operations)}):")
        lines += [f"  {i + 1}. {op.describe()}" for i, op in enumerate(plan.operations[:max_rows])]
        if len(plan.operations) > max_rows:
            lines.append(f"  ... {len(plan.operations) - max_rows} more")
    lines.append(f"Before: {counted(len(plan.before), 'open shard')}")
    lines += _shard_rows(plan.before, max_rows, key_text, shard_name)
    lines.append(f"After: {counted(len(plan.after), 'open shard')} (+ = new)")
    lines += _shard_rows(plan.after, max_rows, key_text, shard_name)
    if plan.median is not None:
        lines.append(f"Split key: {plan.median.describe()}")
    lines.append(f"Key space moving to another shard: {plan.moved_fraction:.2%}")
    if plan.action in ("scale", "even"):
        lines.append(
            f"Steps: {counted(plan.split_steps, 'split')}, {counted(plan.merge_steps, 'merge')}; "
            f"{counted(plan.short_lived_shards, 'short-lived shard')}; peak {counted(plan.peak_open_shards, 'open shard')}"
        )
    movement = plan.key_movement
    if movement is not None:
        lines.append(f"Sample keys moving: {movement.moved} of {movement.sample_size} ({movement.moved_fraction:.2%})")
        for move in movement.moves[:10]:
            destination = shard_name(move.to_shard_id) if move.to_shard_id else f"new shard #{move.to_index}"
            lines.append(f"  {move.partition_key!r}: {shard_name(move.from_shard_id)} -> {destination}")
        if movement.moved > 10:
            lines.append(f"  ... {movement.moved - 10} more (see --json)")
    lines.append(f"Ordering: {plan.ordering}")
    lines += [f"Note: {note}" for note in plan.notes]
    if plan.breaches:
        lines.append(f"REJECTED: {len(plan.breaches)} limit(s) breached:")
        lines += [f"  - {b.limit}: {b.detail} (rule: {b.rule})" for b in plan.breaches]
    else:
        lines.append("Limits: none breached.")
    return lines
