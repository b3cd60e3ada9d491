"""Reshard plans as text: the before/after key-space ribbons and the plan listing the CLI prints and
the TUI preview shows."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from console.keyspace.hashkeys import HASH_SPACE
from console.topology.model import Shard
from console.reshard.model import PlannedShard, ReshardPlan

RIBBON_BEFORE = "0123456789abcdefghijklmnopqrstuvwxyz"
RIBBON_NEW = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ribbon(ranges: Sequence[tuple[int, int]], width: int = 64, labels: Sequence[str] | None = None) -> str:
    """The key space as a bar of `width` characters; column c shows the shard owning its middle key.
    `labels[i]` is shard i's character (default: 0-9a-z, cycling)."""
    endings = [end for _, end in ranges]
    labels = labels or [RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i in range(len(ranges))]
    columns = (((2 * c + 1) * HASH_SPACE) // (2 * width) for c in range(width))
    return "".join(labels[bisect.bisect_left(endings, key)] for key in columns)


def ribbons(plan: ReshardPlan, width: int = 64) -> tuple[str, str]:
    """Before and after bars: unchanged shards keep their character, new shards get capitals."""
    before_labels = {s.shard_id: RIBBON_BEFORE[i % len(RIBBON_BEFORE)] for i, s in enumerate(plan.before)}
    after_labels, fresh = [], 0
    for shard in plan.after:
        if shard.unchanged and shard.shard_id in before_labels:
            after_labels.append(before_labels[shard.shard_id])
        else:
            after_labels.append(RIBBON_NEW[fresh % len(RIBBON_NEW)])
            fresh += 1
    before_bar = ribbon([(s.starting_hash_key, s.ending_hash_key) for s in plan.before], width)
    after_bar = ribbon([s.range for s in plan.after], width, after_labels)
    return before_bar, after_bar


def _shard_rows(shards: Sequence[PlannedShard | Shard], limit: int) -> list[str]:
    rows = []
    for shard in shards[:limit]:
        mark = " " if getattr(shard, "unchanged", True) else "+"
        rows.append(f"  {mark} {shard.shard_id or '(new)':<22} {shard.share:8.3%}  "
                    f"[{shard.starting_hash_key}, {shard.ending_hash_key}]")
    if len(shards) > limit:
        rows.append(f"    ... {len(shards) - limit} more")
    return rows


def render_plan(plan: ReshardPlan, width: int = 64, max_rows: int = 20, *, with_ribbons: bool = True) -> str:
    """The plan as text for the terminal (the CLI prints it; the TUI preview shows it)."""
    lines = [plan.summary, ""]
    if with_ribbons:
        before_bar, after_bar = ribbons(plan, width)
        lines += [f"  before |{before_bar}|", f"  after  |{after_bar}|", ""]
    if plan.operations:
        lines.append(f"Calls ({len(plan.operations)}):")
        lines += [f"  {i + 1}. {op.describe()}" for i, op in enumerate(plan.operations[:max_rows])]
        if len(plan.operations) > max_rows:
            lines.append(f"  ... {len(plan.operations) - max_rows} more")
    lines.append(f"Before: {len(plan.before)} open shards")
    lines += _shard_rows(plan.before, max_rows)
    lines.append(f"After: {len(plan.after)} open shards (+ = new)")
    lines += _shard_rows(plan.after, max_rows)
    if plan.median is not None:
        lines.append(f"Split key: {plan.median.describe()}")
    lines.append(f"Key space moving to another shard: {plan.moved_fraction:.2%}")
    if plan.action in ("scale", "even"):
        lines.append(f"Steps: {plan.split_steps} splits, {plan.merge_steps} merges; "
                     f"{plan.short_lived_shards} short-lived shards; peak {plan.peak_open_shards} open shards")
    movement = plan.key_movement
    if movement is not None:
        lines.append(f"Sample keys moving: {movement.moved} of {movement.sample_size} ({movement.moved_fraction:.2%})")
        for move in movement.moves[:10]:
            lines.append(f"  {move.partition_key!r}: {move.from_shard_id} -> {move.to_shard_id or f'new shard #{move.to_index}'}")
        if movement.moved > 10:
            lines.append(f"  ... {movement.moved - 10} more (see --json)")
    lines.append(f"Ordering: {plan.ordering}")
    lines += [f"Note: {note}" for note in plan.notes]
    if plan.breaches:
        lines.append(f"REJECTED: {len(plan.breaches)} limit(s) breached:")
        lines += [f"  - {b.limit}: {b.detail} (rule: {b.rule})" for b in plan.breaches]
    else:
        lines.append("Limits: none breached.")
    return "\n".join(lines)
