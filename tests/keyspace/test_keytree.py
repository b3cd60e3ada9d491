"""The balanced key tree against the reference O(n) algorithm (transcribed below as the oracle)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import BadInput
from console.keyspace.hashkeys import HASH_SPACE
from console.keyspace.keytree.tree import KeySpaceExhausted, KeyTree, balanced_key

# --- the reference Go code (insertAndBackfill / nextBalancedAvailableKey), line for line -----------


class SeedNode:
    __slots__ = ("left", "value", "right", "placeholder")

    def __init__(self, value: int) -> None:
        self.left = self.right = None
        self.value = value
        self.placeholder = False


def seed_size(t: SeedNode | None) -> int:
    if t is None:
        return 0
    return seed_size(t.left) + seed_size(t.right) + (0 if t.placeholder else 1)


def seed_insert_and_backfill(t: SeedNode | None, value: int, floor: int, max_: int) -> SeedNode | None:
    if value < floor or value >= max_:
        return None
    half = floor + ((max_ - floor) >> 1)
    if t is None:
        t = SeedNode(half)
        if half == value:
            return t
        t.placeholder = True
    if value < t.value:
        t.left = seed_insert_and_backfill(t.left, value, floor, half)
    elif value > t.value:
        t.right = seed_insert_and_backfill(t.right, value, half, max_)
    else:
        t.placeholder = False
    return t


def seed_next_balanced_available_key(t: SeedNode | None, floor: int, max_: int) -> tuple[SeedNode, int]:
    value = floor + ((max_ - floor) >> 1)
    if t is None:
        return SeedNode(value), value
    if t.placeholder:
        t.placeholder = False
        return t, t.value
    if seed_size(t.left) <= seed_size(t.right):
        t.left, value = seed_next_balanced_available_key(t.left, floor, value)
    else:
        t.right, value = seed_next_balanced_available_key(t.right, value, max_)
    return t, value


class SeedTree:
    """The oracle: O(n) per next key, and a node for every placeholder."""

    def __init__(self, existing, ceil: int = HASH_SPACE) -> None:
        self.ceil = ceil
        self.root: SeedNode | None = None
        for key in existing:
            self.root = seed_insert_and_backfill(self.root, key, 0, ceil)

    def next_key(self) -> int:
        self.root, key = seed_next_balanced_available_key(self.root, 0, self.ceil)
        return key


# --- brute force over positions, for the balance report ---------------------------------------------


def positions(ceil: int):
    """(value, depth, left interval, right interval) of every position of a small space."""
    out = []
    todo = [(0, ceil, 0)]
    while todo:
        lo, hi, depth = todo.pop()
        if hi - lo == 1:
            if lo == 0:
                out.append((0, depth, (0, 0), (0, 0)))
            continue
        mid = lo + (hi - lo) // 2
        out.append((mid, depth, (lo + (lo != 0), mid), (mid + 1, hi)))
        todo += [(lo, mid, depth + 1), (mid, hi, depth + 1)]
    return out


def brute_worst(keys: set[int], ceil: int):
    best = None
    for value, depth, (l_lo, l_hi), (r_lo, r_hi) in positions(ceil):
        left = sum(1 for k in keys if l_lo <= k < l_hi)
        right = sum(1 for k in keys if r_lo <= k < r_hi)
        if not left and not right and value not in keys:
            continue
        rank = (-abs(left - right), depth, value, left, right)
        best = rank if best is None or rank < best else best
    return best


# --- the reference examples -----------------------------------------------------------------------------


def test_first_keys_halve_the_space_as_the_seed_shows():
    assert KeyTree().next_keys(7) == [2**127, 2**126, 3 * 2**126, 2**125, 5 * 2**125, 3 * 2**125, 7 * 2**125]
    assert KeyTree(128).next_keys(15) == [64, 32, 96, 16, 80, 48, 112, 8, 72, 40, 104, 24, 88, 56, 120]


def test_rehydrated_example_gives_the_seeds_next_keys():
    tree = KeyTree.rehydrate([0, 32, 9, 57], ceil=128)
    assert tree.next_keys(8) == [64, 96, 80, 112, 72, 48, 104, 16]
    assert tree.keys() == [0, 9, 16, 32, 48, 57, 64, 72, 80, 96, 104, 112]


def test_oracle_reproduces_the_seed_output_too():
    oracle = SeedTree([0, 32, 9, 57], ceil=128)
    assert [oracle.next_key() for _ in range(8)] == [64, 96, 80, 112, 72, 48, 104, 16]


# --- equality with the oracle --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data(), bits=st.integers(1, 9))
def test_next_keys_equal_the_seed_until_the_seed_repeats_a_key(data, bits):
    ceil = 1 << bits
    existing = data.draw(st.lists(st.integers(0, ceil - 1), max_size=min(ceil, 40)), label="existing")
    tree = KeyTree.rehydrate(existing, ceil=ceil)
    oracle = SeedTree(existing, ceil=ceil)
    used = set(existing)
    free = ceil - len(used)
    ours = tree.next_keys(free)
    seed_agrees = True
    for key in ours:
        if seed_agrees:
            seed_key = oracle.next_key()
            if seed_key in used:
                seed_agrees = False  # the reference algorithm hands out a duplicate here; we take a free key instead
            else:
                assert key == seed_key
        assert key not in used
        used.add(key)
    assert used == set(range(ceil))
    with pytest.raises(KeySpaceExhausted):
        tree.next_key()


@settings(max_examples=40, deadline=None)
@given(existing=st.lists(st.integers(0, HASH_SPACE - 1), max_size=25), count=st.integers(0, 40))
def test_next_keys_equal_the_seed_in_the_kinesis_space(existing, count):
    tree = KeyTree.rehydrate(existing)
    oracle = SeedTree(existing)
    assert tree.next_keys(count) == [oracle.next_key() for _ in range(count)]
    assert tree.keys() == sorted(set(existing) | set(tree.keys()))


def test_large_random_rehydrate_matches_the_seed():
    rng = random.Random(7)
    existing = [rng.getrandbits(128) for _ in range(120)] + [rng.getrandbits(20) << 108 for _ in range(200)]
    tree = KeyTree.rehydrate(existing)
    oracle = SeedTree(existing)
    assert tree.next_keys(250) == [oracle.next_key() for _ in range(250)]
    assert len(tree) == len(set(existing)) + 250


@settings(max_examples=120, deadline=None)
@given(data=st.data(), bits=st.sampled_from([2, 5, 8, 12, 128]))
def test_batches_equal_one_key_at_a_time(data, bits):
    """next_keys plans whole batches in closed form; it must match next_key called in a loop."""
    ceil = 1 << bits
    existing = data.draw(st.lists(st.integers(0, ceil - 1), max_size=60))
    batched, single = KeyTree.rehydrate(existing, ceil=ceil), KeyTree.rehydrate(existing, ceil=ceil)
    free = ceil - len(batched)
    for size in data.draw(st.lists(st.integers(0, 300), max_size=6)):
        size = min(size, free)
        free -= size
        assert batched.next_keys(size) == [single.next_key() for _ in range(size)]
    assert batched.balance() == single.balance()


# --- balance -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 3, 6, 8])
def test_built_from_empty_every_split_differs_by_at_most_one(bits):
    ceil = 1 << bits
    tree = KeyTree(ceil)
    keys: set[int] = set()
    for _ in range(ceil):
        keys.add(tree.next_key())
        worst = brute_worst(keys, ceil)
        assert -worst[0] <= 1
        assert tree.balance().worst.difference <= 1
    assert keys == set(range(ceil))


def test_built_from_empty_in_the_kinesis_space_stays_balanced():
    tree = KeyTree()
    tree.next_keys(5000)
    report = tree.balance()
    assert report.worst.difference <= 1
    assert [lv.keys for lv in report.levels] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 905]
    assert all(lv.capacity == 2**lv.depth for lv in report.levels)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), bits=st.integers(1, 7))
def test_balance_report_matches_brute_force(data, bits):
    ceil = 1 << bits
    existing = data.draw(st.lists(st.integers(0, ceil - 1), max_size=ceil))
    tree = KeyTree.rehydrate(existing, ceil=ceil)
    tree.next_keys(data.draw(st.integers(0, ceil - len(set(existing)))))
    keys = set(tree.keys())
    assert len(tree) == len(keys)
    report = tree.balance()
    depth_of = {value: depth for value, depth, _, _ in positions(ceil)}
    expected_levels = [0] * (bits + 1)
    for key in keys:
        expected_levels[depth_of[key]] += 1
    while expected_levels and not expected_levels[-1]:
        expected_levels.pop()
    assert [lv.keys for lv in report.levels] == expected_levels
    if not keys:
        assert report.worst is None
        return
    _neg_diff, depth, value, left, right = brute_worst(keys, ceil)
    assert (report.worst.key, report.worst.depth, report.worst.left, report.worst.right) == (value, depth, left, right)


def test_left_skewed_tree_reports_its_root():
    report = KeyTree.rehydrate([0, 32, 9, 57], ceil=128).balance()
    assert (report.worst.key, report.worst.left, report.worst.right) == (64, 4, 0)
    assert report.to_json()["worst_imbalance"]["difference"] == 4


# --- input checks and edges ------------------------------------------------------------------------------


def test_out_of_range_existing_key_is_a_clear_error_not_a_dropped_tree():
    with pytest.raises(BadInput, match=r"existing key #3 \(128\) is outside the key space \[0, 127\]"):
        KeyTree.rehydrate([1, 2, 128], ceil=128)
    with pytest.raises(BadInput, match="outside the key space"):
        KeyTree.rehydrate([-1])
    with pytest.raises(BadInput, match="outside"):
        KeyTree.rehydrate([HASH_SPACE])


@pytest.mark.parametrize("ceil", [0, 1, 3, 100, -8, 2.0, True])
def test_key_space_must_be_a_power_of_two(ceil):
    with pytest.raises(BadInput, match="power of two"):
        KeyTree(ceil)


def test_asking_for_more_keys_than_are_free_fails_before_handing_any_out():
    tree = KeyTree.rehydrate([1, 2, 3], ceil=8)
    with pytest.raises(KeySpaceExhausted, match="only 5 of the 8"):
        tree.next_keys(6)
    assert len(tree) == 3
    assert sorted(tree.next_keys(5)) == [0, 4, 5, 6, 7]


def test_balanced_key_is_the_bit_reversed_level_order():
    assert [balanced_key(64, 7, i)[0] for i in range(7)] == [64, 32, 96, 16, 80, 48, 112]
    assert balanced_key(2, 2, 3) == (0, 0)  # the 4 space's last free key is the 0 at the bottom


def test_duplicate_existing_keys_count_once():
    tree = KeyTree.rehydrate([5, 5, 5], ceil=16)
    assert len(tree) == 1
    assert tree.keys() == [5]


def test_hundred_thousand_random_existing_keys_rehydrate_quickly():
    rng = random.Random(3)
    existing = [rng.getrandbits(128) for _ in range(100_000)]
    tree = KeyTree.rehydrate(existing)
    new = tree.next_keys(1000)
    assert len(set(new)) == 1000 and not set(new) & set(existing)
    assert len(tree) == 101_000
