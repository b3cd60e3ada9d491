"""How one `KeyTree.next_keys(n)` call shares n keys out: each stored node splits its share between
its two sides in closed form (`plan_sides`), and once both sides know their keys they are merged
back in hand-out order (`deliver`, `interleave`). Pure arithmetic on counts and key lists; the
tree itself lives in console.keyspace.keytree.tree."""

from __future__ import annotations

from typing import Any


class Batch:
    """Keys one subtree hands out in a next_keys call; `keys` is filled once known. `node` is the
    console.keyspace.keytree.tree node the subtree hangs from (opaque here)."""

    __slots__ = ("node", "count", "parent", "is_left", "keys", "runs", "waiting", "left_keys", "right_keys")

    def __init__(self, node: Any, count: int, parent: Batch | None, is_left: bool) -> None:
        self.node, self.count, self.parent, self.is_left = node, count, parent, is_left
        self.keys: list[int] = []
        self.runs: list[tuple[int, int]] = []
        self.waiting = 0
        self.left_keys: list[int] = []
        self.right_keys: list[int] = []


TO_LEFT, TO_RIGHT, ALTERNATE = 0, 1, 2


def plan_sides(
    wanted: int, left: int, right: int, left_cap: int, right_cap: int
) -> tuple[list[tuple[int, int]], int, int]:
    """The sides `wanted` successive next keys take below a node holding a key, as runs.

    Each key goes to the side with fewer keys (ties left) unless that side is full. So: the smaller
    side catches up, then the keys alternate left, right, ... until one side is full, then the rest go
    to the other. Returns (runs of (side, how many), keys to the left, keys to the right)."""
    runs: list[tuple[int, int]] = []
    to_left = to_right = 0
    if left < right:
        catch_up = min(wanted, right - left, left_cap - left)
        if catch_up:
            runs.append((TO_LEFT, catch_up))
        to_left, wanted, left = catch_up, wanted - catch_up, left + catch_up
        if wanted and left < right:  # the left side filled up first
            runs.append((TO_RIGHT, wanted))
            return runs, to_left, wanted
    elif left > right:
        catch_up = min(wanted, left - right, right_cap - right)
        if catch_up:
            runs.append((TO_RIGHT, catch_up))
        to_right, wanted, right = catch_up, wanted - catch_up, right + catch_up
        if wanted and right < left:
            runs.append((TO_LEFT, wanted))
            return runs, wanted, to_right
    if wanted:
        left_room, right_room = left_cap - left, right_cap - right
        alternating = min(wanted, 2 * min(left_room, right_room) + (left_room > right_room))
        if alternating:
            runs.append((ALTERNATE, alternating))
            to_left += (alternating + 1) // 2
            to_right += alternating // 2
            wanted -= alternating
        if wanted:
            if left_room > right_room:
                runs.append((TO_LEFT, wanted))
                to_left += wanted
            else:
                runs.append((TO_RIGHT, wanted))
                to_right += wanted
    return runs, to_left, to_right


def deliver(batch: Batch) -> None:
    """Hand a finished batch's keys to its parent; finish every parent that was waiting only on it."""
    while batch.parent is not None:
        parent = batch.parent
        if batch.is_left:
            parent.left_keys = batch.keys
        else:
            parent.right_keys = batch.keys
        parent.waiting -= 1
        if parent.waiting:
            return
        parent.keys.extend(interleave(parent.runs, parent.left_keys, parent.right_keys))
        batch = parent


def interleave(runs: list[tuple[int, int]], left: list[int], right: list[int]) -> list[int]:
    out: list[int] = []
    i = j = 0
    for side, size in runs:
        if side == TO_LEFT:
            out += left[i : i + size]
            i += size
        elif side == TO_RIGHT:
            out += right[j : j + size]
            j += size
        else:
            from_left, from_right = (size + 1) // 2, size // 2
            segment = [0] * size
            segment[0::2] = left[i : i + from_left]
            segment[1::2] = right[j : j + from_right]
            out += segment
            i += from_left
            j += from_right
    return out
