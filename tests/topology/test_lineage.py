"""Lineage from plain Shard lists: links, depth, states, roots with trimmed parents, owner_before, tree."""

from __future__ import annotations

from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY, even_split, shard_id_for_index
from console.topology.lineage import CLOSED, OPEN, Lineage
from console.topology.model import Shard

HALF = HASH_SPACE // 2
QUARTER = HASH_SPACE // 4


def sid(index: int) -> str:
    return shard_id_for_index(index)


def shard(index: int, start: int, end: int, *parents: str, closed: bool = False) -> Shard:
    return Shard(
        shard_id=sid(index),
        starting_hash_key=start,
        ending_hash_key=end,
        parent_shard_id=parents[0] if parents else None,
        adjacent_parent_shard_id=parents[1] if len(parents) > 1 else None,
        starting_sequence_number=str(index * 1000),
        ending_sequence_number=str(index * 1000 + 999) if closed else None,
    )


def split_then_merge() -> list[Shard]:
    """0 and 1 split the space in halves; 0 splits into 2 and 3; then 3 merges with 1 into 4."""
    return [
        shard(0, 0, HALF - 1, closed=True),
        shard(1, HALF, MAX_HASH_KEY, closed=True),
        shard(2, 0, QUARTER - 1, sid(0)),
        shard(3, QUARTER, HALF - 1, sid(0), closed=True),
        shard(4, QUARTER, MAX_HASH_KEY, sid(3), sid(1)),
    ]


def test_links_depth_and_states_after_split_and_merge():
    lineage = Lineage.build(split_then_merge())
    assert lineage.problem is None
    assert lineage[sid(0)].children == (sid(2), sid(3))
    assert lineage[sid(3)].children == (sid(4),)
    assert lineage[sid(1)].children == (sid(4),)
    assert [lineage[sid(i)].depth for i in range(5)] == [0, 0, 1, 1, 2]
    assert [lineage[sid(i)].state for i in range(5)] == [CLOSED, CLOSED, OPEN, CLOSED, OPEN]
    assert set(lineage.roots) == {sid(0), sid(1)}
    assert lineage.ancestors(sid(4)) == [sid(3), sid(1), sid(0)]
    assert abs(sum(node.share for node in lineage.open_nodes()) - 1.0) < 1e-12


def test_json_rows_carry_decimal_keys_and_children():
    rows = {row["shard_id"]: row for row in Lineage.build(split_then_merge()).rows()}
    assert rows[sid(4)]["starting_hash_key"] == str(QUARTER)
    assert rows[sid(4)]["ending_hash_key"] == str(MAX_HASH_KEY)
    assert rows[sid(4)]["parent_shard_id"] == sid(3)
    assert rows[sid(4)]["adjacent_parent_shard_id"] == sid(1)
    assert rows[sid(0)]["children"] == [sid(2), sid(3)]
    assert rows[sid(4)]["share"] == 0.75


def test_owner_before_names_the_parent_that_held_the_key():
    lineage = Lineage.build(split_then_merge())
    low, middle, high = 5, QUARTER + 5, HALF + 5
    assert (lineage.owner_before(low).owner, lineage.owner_before(low).previous) == (sid(2), sid(0))
    # shard 4 came from a merge: the key's previous home depends on which half it lies in
    assert (lineage.owner_before(middle).owner, lineage.owner_before(middle).previous) == (sid(4), sid(3))
    assert (lineage.owner_before(high).owner, lineage.owner_before(high).previous) == (sid(4), sid(1))


def test_missing_parents_make_roots_and_split_parent_is_still_named():
    # Only the open shards survive: parents were trimmed beyond retention.
    survivors = [s for s in split_then_merge() if s.is_open]
    lineage = Lineage.build(survivors)
    assert set(lineage.roots) == {sid(2), sid(4)}
    assert lineage[sid(4)].missing_parents == (sid(3), sid(1))
    assert all(node.depth == 0 for node in lineage.nodes.values())
    assert lineage.owner_before(5).previous == sid(0)  # a split child has one parent: it held the key
    assert lineage.owner_before(HALF + 5).previous is None  # a merge: cannot tell which parent
    assert "not shown" in lineage.render_tree()


def test_open_shards_that_do_not_tile_are_reported():
    gap = [shard(0, 0, QUARTER - 1), shard(1, HALF, MAX_HASH_KEY)]
    lineage = Lineage.build(gap)
    assert lineage.open_index is None
    assert "gap" in lineage.problem and str(QUARTER) in lineage.problem
    assert lineage.owner(5) == sid(0)  # unambiguous keys still answer
    assert lineage.owner(QUARTER + 1) is None
    overlap = [shard(0, 0, HALF), shard(1, HALF, MAX_HASH_KEY)]
    assert "overlap" in Lineage.build(overlap).problem


def test_open_ids_override_marks_vanished_shards_closed():
    shards = [shard(i, s, e) for i, (s, e) in enumerate(even_split(2))]
    children = [shard(2, 0, QUARTER - 1, sid(0)), shard(3, QUARTER, HALF - 1, sid(0))]
    lineage = Lineage.build(shards + children, open_ids={sid(1), sid(2), sid(3)})
    assert lineage[sid(0)].state == CLOSED
    assert lineage.problem is None
    assert lineage.owner(QUARTER) == sid(3)


def test_text_tree_draws_children_under_parents_and_merges_once():
    text = Lineage.build(split_then_merge()).render_tree()
    lines = text.splitlines()
    assert lines[0].startswith(sid(0)) and "closed" in lines[0]
    assert lines[1].startswith("├── " + sid(2)) and "open" in lines[1]
    assert lines[2].startswith("└── " + sid(3))
    assert lines[3].startswith("    └── " + sid(4)) and "75.00%" in lines[3]
    assert lines[4].startswith(sid(1))
    assert lines[5] == f"└── {sid(4)} (merged; shown under {sid(3)})"
    assert len(lines) == 6


def test_nested_json_tree_places_each_shard_once():
    forest = Lineage.build(split_then_merge()).tree_json()
    seen: list[str] = []

    def walk(node):
        seen.append(node["shard_id"])
        for child in node["subtree"]:
            walk(child)

    for root in forest:
        walk(root)
    assert sorted(seen) == [sid(i) for i in range(5)]
    assert [child["shard_id"] for child in forest[0]["subtree"]] == [sid(2), sid(3)]
    assert forest[0]["subtree"][1]["subtree"][0]["shard_id"] == sid(4)


def test_parent_cycle_does_not_hang_or_hide_shards():
    looped = [shard(0, 0, HALF - 1, sid(1)), shard(1, HALF, MAX_HASH_KEY, sid(0))]
    lineage = Lineage.build(looped)
    text = lineage.render_tree()
    assert sid(0) in text and sid(1) in text
    assert lineage.roots == ()


def test_long_chain_has_linear_depths_without_recursion_limits():
    chain = [shard(0, 0, MAX_HASH_KEY, closed=True)]
    chain += [shard(i, 0, MAX_HASH_KEY, sid(i - 1), closed=True) for i in range(1, 1500)]
    chain.append(shard(1500, 0, MAX_HASH_KEY, sid(1499)))
    lineage = Lineage.build(chain)
    assert lineage[sid(1500)].depth == 1500
    assert lineage.owner_before(123).previous == sid(1499)
    assert len(lineage.render_tree().splitlines()) == 1501


def test_reference_line_keeps_its_place_among_real_children():
    # Malformed on purpose: shard 1 is both a merge parent of 4 and the split parent of 5.
    shards = [*split_then_merge(), shard(5, HALF, MAX_HASH_KEY, sid(1))]
    lines = Lineage.build(shards).render_tree().splitlines()
    at = lines.index(next(line for line in lines if line.startswith(sid(1))))
    assert lines[at + 1] == f"├── {sid(4)} (merged; shown under {sid(3)})"
    assert lines[at + 2].startswith(f"└── {sid(5)}")
    assert lines[-1].startswith("problem: open shards do not tile")


def test_rows_come_in_tree_order_each_shard_once():
    order = [row["shard_id"] for row in Lineage.build(split_then_merge()).rows()]
    assert order == [sid(0), sid(2), sid(3), sid(4), sid(1)]
