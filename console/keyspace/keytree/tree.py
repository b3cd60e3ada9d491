"""Balanced explicit hash keys: hand out keys so every split of the key space stays even.

The key space [0, ceil) (ceil a power of two, 2**128 for Kinesis) is a binary tree of positions:
the root is ceil/2, its children ceil/4 and 3*ceil/4, and so on; every integer in the space is
exactly one position (0 is the deepest one, left of 1). The reference algorithm's `nextBalancedAvailableKey`
walks from the root, fills the first placeholder it meets, else steps into the child subtree
holding fewer keys (ties go left) and takes the first free position it reaches.
`insertAndBackfill` rehydrates the tree from keys already in use, creating placeholder
positions on the way down to each of them.

Differences from the reference algorithm, all deliberate:
- Subtree key counts live in the nodes, so a next key costs O(depth), not O(n).
- Only positions that hold a key or branch are stored. A run of single-child placeholders
  (about 110 of them above every random 128-bit key) is implied by the edge that skips it and is
  stored only once a key lands on it: 100k random existing keys cost ~200k nodes, not ~11M.
- A subtree that only ever received next keys holds exactly the first `count` keys of the
  balanced order, so it is one node and its next key is computed, not walked to.
- `next_keys(n)` plans a batch: each stored node splits n between its sides in closed form and
  interleaves their keys, so it is visited once per batch instead of once per key.
- An out-of-range existing key is an error (the reference algorithm silently drops the whole tree).
- A full subtree is never entered: the reference algorithm would hand out a duplicate there (its intervals
  overlap once they shrink to one integer). Until that point the keys are identical to the reference algorithm's.
- Everything is iterative: the tree is 128 levels deep at the bottom.

The batch arithmetic of `next_keys` lives in console.keyspace.keytree.batch and the balance report in
console.keyspace.keytree.balance (its names are re-exported here).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from console.errors import BadInput
from console.keyspace.hashkeys import HASH_SPACE
from console.keyspace.keytree.balance import BalanceReport, Imbalance, LevelFill
from console.keyspace.keytree.batch import Batch, deliver, plan_sides
from console.words import counted

__all__ = [
    "BALANCED",
    "KEY",
    "PLACEHOLDER",
    "BalanceReport",
    "Imbalance",
    "KeySpaceExhausted",
    "KeyTree",
    "LevelFill",
    "balanced_key",
]

# What a stored node is.
PLACEHOLDER = 0  # a position on the way to existing keys, free to hand out
KEY = 1  # a position holding a key, with stored children below
BALANCED = 2  # a subtree holding exactly the first `count` keys of the balanced order, nothing stored below


class KeySpaceExhausted(BadInput):
    """Every position of the key space already holds a key."""

    code = "key_space_exhausted"


class _Node:
    """One stored position. `level` k means the position splits an interval of 2**k integers
    (k == 0 only for the value 0); `count` is the number of keys in its subtree, itself included.
    `capacity` is how many keys fit under the parent's child position this node hangs from: its own
    capacity when it is that position (`direct`), more when placeholders in between are implied."""

    __slots__ = ("value", "level", "count", "capacity", "kind", "direct", "left", "right")

    def __init__(self, value: int, level: int, count: int, kind: int) -> None:
        self.value = value
        self.level = level
        self.count = count
        self.capacity = _capacity(value, level)
        self.kind = kind
        self.direct = True
        self.left: _Node = _EMPTY
        self.right: _Node = _EMPTY


def _capacity(value: int, level: int) -> int:
    """How many distinct keys the subtree of a position can hold: every integer strictly inside its
    interval, plus 0 for the intervals starting at 0 (the left spine)."""
    if level == 0:
        return 1
    return (1 << level) - 1 + (value == 1 << (level - 1))


def _level_of(value: int) -> int:
    """The level of the position a value occupies: one more than its trailing zero bits (0 for 0)."""
    return (value & -value).bit_length()


def _child_position(value: int, level: int, go_left: bool) -> tuple[int, int]:
    """The (value, level) of a position's left or right child. Level 1's children are one-integer
    intervals; only [0, 1), left of 1, holds a key (the reference algorithm would repeat the parent's value)."""
    if level == 1:
        return 0, 0
    step = 1 << (level - 2)
    return (value - step if go_left else value + step), level - 1


def _link(parent: _Node, child: _Node, go_left: bool) -> None:
    if go_left:
        parent.left = child
    else:
        parent.right = child
    child.capacity = _capacity(*_child_position(parent.value, parent.level, go_left))
    child.direct = child.level == parent.level - 1


def balanced_key(value: int, level: int, index: int) -> tuple[int, int]:
    """The index-th key (from 0) that next keys put into the empty subtree of position (value, level),
    and that key's level. Depth d of the subtree fills left to right in bit-reversed order:
    64, 32, 96, 16, 80, 48, 112, 8, 72, ... for the root of a 128 space."""
    n = index + 1
    depth = n.bit_length() - 1
    if depth == level:  # past every interior position: only the left spine's 0 remains
        return 0, 0
    offset = n - (1 << depth)
    mirrored = int(f"{offset:0{depth}b}"[::-1], 2) if depth else 0
    low = value - (1 << (level - 1))
    return low + ((2 * mirrored + 1) << (level - 1 - depth)), level - depth


# Stand-ins for children that are not stored: an empty subtree with room, and a position that
# cannot hold a key at all (a one-integer interval other than [0, 1)).
_EMPTY = _Node.__new__(_Node)
_NO_ROOM = _Node.__new__(_Node)
for _stand_in in (_EMPTY, _NO_ROOM):
    _stand_in.value, _stand_in.level, _stand_in.count, _stand_in.kind = -1, -1, 0, PLACEHOLDER
    _stand_in.direct = False
    _stand_in.left = _stand_in.right = _stand_in
_EMPTY.capacity = 1 << 200  # never full
_NO_ROOM.capacity = 0  # always full


def _check_ceil(ceil: int) -> int:
    if isinstance(ceil, bool) or not isinstance(ceil, int) or ceil < 2 or ceil & (ceil - 1):
        raise BadInput(f"key space size must be a power of two of at least 2; got {ceil!r}")
    return ceil


class KeyTree:
    """The balanced key tree over [0, ceil). Start empty with `KeyTree()` or from keys in use with
    `KeyTree.rehydrate(existing)`; then `next_key()` / `next_keys(n)`; `balance()` reports."""

    def __init__(self, ceil: int = HASH_SPACE) -> None:
        self.ceil = _check_ceil(ceil)
        self.bits = ceil.bit_length() - 1  # the root's level
        self._root: _Node = _EMPTY
        self._keys_per_level = [0] * (self.bits + 1)  # indexed by level (depth = bits - level)

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def rehydrate(cls, existing: Iterable[int], ceil: int = HASH_SPACE) -> KeyTree:
        """A tree holding `existing` (a repeated key counts once) with placeholders above each key."""
        tree = cls(ceil)
        keys = sorted(set(tree._checked(existing)))
        if keys:
            tree._root = tree._build(keys)
        return tree

    def _checked(self, existing: Iterable[int]) -> Iterable[int]:
        ceil = self.ceil
        for position, key in enumerate(existing, 1):
            if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < ceil:
                raise BadInput(f"existing key #{position} ({key!r}) is outside the key space [0, {ceil - 1}]")
            yield key

    def _build(self, keys: list[int]) -> _Node:
        """Stored nodes for sorted distinct keys: each is the deepest position holding its slice."""
        per_level = self._keys_per_level
        root = _Node(self.ceil >> 1, self.bits, len(keys), PLACEHOLDER)
        # Slices still to attach: (start, stop, parent, attach left?); the root's slice has no parent.
        pending: list[tuple[int, int, _Node | None, bool]] = [(0, len(keys), None, True)]
        while pending:
            start, stop, parent, go_left = pending.pop()
            if parent is None:
                node = root
            else:
                node = _deepest_common_position(keys[start], keys[stop - 1])
                node.count = stop - start
                _link(parent, node, go_left)
            value = node.value
            split = bisect.bisect_left(keys, value, start, stop)
            after = split
            if split < stop and keys[split] == value:
                node.kind = KEY if stop - start > 1 else BALANCED  # a lone key is a balanced run of one
                per_level[node.level] += 1
                after = split + 1
            if start < split:
                pending.append((start, split, node, True))
            if after < stop:
                pending.append((after, stop, node, False))
            _mark_no_room(node)
        return root

    # -- handing out keys -------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._root.count

    def next_key(self) -> int:
        """The next balanced key (exactly the reference algorithm's choice while that key is still free)."""
        root = self._root
        if root is _EMPTY:
            root = self._root = _Node(self.ceil >> 1, self.bits, 0, BALANCED)
        elif root.count >= root.capacity:
            raise KeySpaceExhausted(f"all {counted(self.ceil, 'key')} of the key space are in use")
        per_level = self._keys_per_level
        node = root
        while True:
            node.count += 1
            kind = node.kind
            if kind != KEY:
                if kind == BALANCED:
                    key, level = balanced_key(node.value, node.level, node.count - 1)
                    per_level[level] += 1
                    return key
                node.kind = KEY
                per_level[node.level] += 1
                return node.value
            left = node.left
            right = node.right
            left_count = left.count
            right_count = right.count
            # Fewer keys on the left (ties too) -> left, unless that side is full.
            if left_count <= right_count:
                child = left if left_count < left.capacity else right
            else:
                child = right if right_count < right.capacity else left
            if child.direct:
                node = child
                continue
            # The child position is not stored: it is empty, or a placeholder above a deeper stored
            # node. Either way the key lands on it.
            placed = _store_child(node, child is left, child.count + 1, KEY)
            per_level[placed.level] += 1
            return placed.value

    def next_keys(self, count: int) -> list[int]:
        """The next `count` balanced keys, in order: the same as calling next_key() `count` times.

        Done as one batch: each stored node works out in closed form how many of the keys go to each
        side and in what interleaving, so it is visited once, not once per key."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise BadInput(f"key count must be a whole number of at least 0; got {count!r}")
        free = self.ceil - len(self)
        if count > free:
            raise KeySpaceExhausted(
                f"asked for {counted(count, 'key')} but only {free} of the {counted(self.ceil, 'key')} are free"
            )
        if not count:
            return []
        if self._root is _EMPTY:
            self._root = _Node(self.ceil >> 1, self.bits, 0, BALANCED)
        return self._hand_out(self._root, count)

    def _hand_out(self, root: _Node, count: int) -> list[int]:
        """Plan top-down (how many keys each subtree gets), assemble bottom-up (their order).
        Iterative: a subtree's keys are delivered to its parent's batch once they are all known."""
        per_level = self._keys_per_level
        first = Batch(root, count, None, True)
        stack = [first]
        while stack:
            batch = stack.pop()
            node, wanted = batch.node, batch.count
            node.count += wanted
            if node.kind == BALANCED:
                batch.keys = _balanced_run_keys(node, node.count - wanted, wanted, per_level)
                deliver(batch)
                continue
            if node.kind == PLACEHOLDER:
                node.kind = KEY
                per_level[node.level] += 1
                batch.keys = [node.value]
                wanted -= 1
            if not wanted:
                deliver(batch)
                continue
            left, right = node.left, node.right
            batch.runs, to_left, to_right = plan_sides(wanted, left.count, right.count, left.capacity, right.capacity)
            for go_left, share in ((True, to_left), (False, to_right)):
                if share:
                    batch.waiting += 1
                    stack.append(Batch(_direct_child(node, go_left), share, batch, go_left))
        return first.keys

    # -- reporting --------------------------------------------------------------------------------

    def keys(self) -> list[int]:
        """All keys in the tree, ascending."""
        out: list[int] = []
        stack: list[_Node] = []
        node = self._root
        while stack or node.count:
            while node.count and node.kind != BALANCED:
                stack.append(node)
                node = node.left
            if node.count:  # a balanced run: its keys are computed, and contiguous in key order
                out.extend(sorted(balanced_key(node.value, node.level, i)[0] for i in range(node.count)))
                node = _EMPTY
                continue
            node = stack.pop()
            if node.kind == KEY:
                out.append(node.value)
            node = node.right
        return out

    def balance(self) -> BalanceReport:
        per_level = self._keys_per_level
        levels = [
            LevelFill(depth=self.bits - level, keys=per_level[level], capacity=self._depth_capacity(level))
            for level in range(self.bits, -1, -1)
        ]
        while levels and levels[-1].keys == 0:
            levels.pop()
        return BalanceReport(total_keys=len(self), levels=tuple(levels), worst=self._worst_imbalance())

    def _depth_capacity(self, level: int) -> int:
        return 1 if level == 0 else 1 << (self.bits - level)

    def _worst_imbalance(self) -> Imbalance | None:
        """Scan every position that has keys on or below it, stored or implied."""
        if self._root is _EMPTY:
            return None
        best: tuple[int, int, int, int, int] | None = None  # (-difference, depth, key, left, right)
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.kind == BALANCED:
                found = [_worst_in_balanced_run(node)]
            else:
                left, right = node.left, node.right
                found = [(node.value, node.level, left.count, right.count)]
                for child, go_left in ((left, True), (right, False)):
                    if not child.count:
                        continue
                    stack.append(child)
                    if not child.direct:
                        # The top of an implied placeholder run holds all of the child's keys on one side.
                        value, level = _child_position(node.value, node.level, go_left)
                        found.append((value, level, *((child.count, 0) if child.value < value else (0, child.count))))
            for value, level, n_left, n_right in found:
                rank = (-abs(n_left - n_right), self.bits - level, value, n_left, n_right)
                if best is None or rank < best:
                    best = rank
        assert best is not None
        _, depth, key, n_left, n_right = best
        return Imbalance(key=key, depth=depth, left=n_left, right=n_right)


def _worst_in_balanced_run(node: _Node) -> tuple[int, int, int, int]:
    """(key, level, left, right) of the shallowest, then lowest, position of a balanced run whose
    halves differ (never by more than one), else of its top. After its own key a run gives its left
    half every odd-numbered next key and its right half every even-numbered one, so when the halves
    are equal they are the same shape and the left one holds the lower answer."""
    value, level, count = node.value, node.level, node.count
    top = None
    while True:
        left, right = count // 2, (count - 1) // 2
        if left != right:
            return value, level, left, right
        if top is None:
            top = (value, level, left, right)
        if not left or level <= 1:
            return top
        value, level = _child_position(value, level, True)
        count = left


def _direct_child(node: _Node, go_left: bool) -> _Node:
    """The stored node at a child position, storing it first when it is empty or only implied (a
    placeholder above a deeper stored node)."""
    child = node.left if go_left else node.right
    if child.direct:
        return child
    return _store_child(node, go_left, child.count, PLACEHOLDER)


def _store_child(node: _Node, go_left: bool, count: int, kind: int) -> _Node:
    """Store a node of `kind` holding `count` keys at an empty or only implied child position; it
    adopts the deeper stored node the position stood above. An empty position becomes BALANCED
    instead, since nothing is stored below it."""
    child = node.left if go_left else node.right
    value, level = _child_position(node.value, node.level, go_left)
    placed = _Node(value, level, count, BALANCED if child is _EMPTY else kind)
    _mark_no_room(placed)
    if child is not _EMPTY:
        _link(placed, child, child.value < value)
    if go_left:
        node.left = placed
    else:
        node.right = placed
    return placed


def _balanced_run_keys(node: _Node, start: int, count: int, per_level: list[int]) -> list[int]:
    """Keys start .. start+count-1 of a balanced run, tallying them per level (a run fills depth by depth)."""
    value, level = node.value, node.level
    keys = [balanced_key(value, level, index)[0] for index in range(start, start + count)]
    index, stop = start, start + count
    while index < stop:
        depth = (index + 1).bit_length() - 1
        depth_end = min(stop, (2 << depth) - 1)  # indices 2**d - 1 .. 2**(d+1) - 2 sit at depth d
        per_level[max(level - depth, 0)] += depth_end - index
        index = depth_end
    return keys


def _mark_no_room(node: _Node) -> None:
    """Level-1 positions have one-integer children; only the one left of 1 (the value 0) holds a key."""
    if node.level == 1:
        node.right = _NO_ROOM
        if node.value != 1:
            node.left = _NO_ROOM


def _deepest_common_position(low_key: int, high_key: int) -> _Node:
    """A placeholder node at the deepest position whose subtree holds both keys.

    A position at level k >= 1 covers the aligned interval [lo, lo + 2**k) and sits at lo + 2**(k-1);
    a key covers its own position's interval, so this is the smallest aligned interval covering both."""
    level_a, level_b = _level_of(low_key), _level_of(high_key)
    lo_a = low_key - (1 << (level_a - 1)) if level_a else 0
    lo_b = high_key - (1 << (level_b - 1)) if level_b else 0
    level = max(level_a, level_b, (lo_a ^ lo_b).bit_length())
    if level == 0:
        return _Node(0, 0, 0, PLACEHOLDER)
    lo = lo_a >> level << level
    return _Node(lo + (1 << (level - 1)), level, 0, PLACEHOLDER)
