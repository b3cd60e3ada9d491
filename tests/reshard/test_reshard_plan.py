"""Pure plan tests: tiling, key movement, step model, and every limit with its rule."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from console.errors import BadInput
from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY, check_tiling, even_split, shard_id_for_index
from console.reshard.limits import Limits, StreamContext, default_account_shard_limit
from console.reshard.plan import (
    KeySample,
    even_tolerance,
    median_hash_key,
    median_split,
    midpoint,
    plan_even,
    plan_merge,
    plan_scale,
    plan_split,
    render_plan,
    ribbon,
)
from console.topology.model import Shard
from tests.reshard.helpers_reshard import even_shards


def stream_of(boundaries) -> list[Shard]:
    """Open shards cut at the given hash keys, numbered in key order."""
    starts = [0, *sorted(set(boundaries))]
    ends = [s - 1 for s in starts[1:]] + [MAX_HASH_KEY]
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(zip(starts, ends))]


boundaries = st.lists(st.integers(min_value=1, max_value=MAX_HASH_KEY), min_size=0, max_size=24, unique=True)
hash_keys = st.lists(st.integers(min_value=0, max_value=MAX_HASH_KEY), min_size=1, max_size=200)


def naive_owner(ranges, hash_key):
    for index, (start, end) in enumerate(ranges):
        if start <= hash_key <= end:
            return index
    raise AssertionError("no owner")


def check_movement(plan, sample):
    """Per-key linear scan: a key moves iff its before-range is gone; it lands on the after owner."""
    before = [(s.starting_hash_key, s.ending_hash_key) for s in plan.before]
    after = [s.range for s in plan.after]
    expected = []
    for key, h in zip(sample.keys, sample.hash_keys):
        old = before[naive_owner(before, h)]
        if old not in set(after):
            expected.append((key, naive_owner(after, h)))
    movement = plan.key_movement
    assert movement.moved == len(expected)
    in_key_order = sorted(expected, key=lambda item: (sample.hash_keys[int(item[0][1:])], int(item[0][1:])))
    assert [(m.partition_key, m.to_index) for m in movement.moves] == in_key_order[: len(movement.moves)]
    assert sum(route[3] for route in movement.routes) == movement.moved


def sample_from(hashes):
    return KeySample([f"k{i}" for i in range(len(hashes))], hashes)


def replay(shards, operations):
    """An independent model of AWS's SplitShard/MergeShards (sequential ids) to replay a plan."""
    opened = {s.shard_id: (s.starting_hash_key, s.ending_hash_key) for s in shards if s.is_open}
    next_index = len(shards)
    for op in operations:
        if op.kind == "split":
            start, end = opened.pop(op.shard_id)
            assert start + 1 < op.new_starting_hash_key < end
            opened[shard_id_for_index(next_index)] = (start, op.new_starting_hash_key - 1)
            opened[shard_id_for_index(next_index + 1)] = (op.new_starting_hash_key, end)
            next_index += 2
        else:
            low, high = opened.pop(op.shard_id), opened.pop(op.adjacent_shard_id)
            assert low[1] + 1 == high[0]
            opened[shard_id_for_index(next_index)] = (low[0], high[1])
            next_index += 1
    return sorted(((start, end, sid) for sid, (start, end) in opened.items()))


# ---------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(boundaries, st.data(), hash_keys)
def test_split_plans_tile_and_movement_matches_per_key_scan(cuts, data, hashes):
    shards = stream_of(cuts)
    target = data.draw(st.sampled_from(shards))
    key = data.draw(st.integers(min_value=target.starting_hash_key, max_value=target.ending_hash_key))
    plan = plan_split(shards, target.shard_id, key, sample=sample_from(hashes))
    check_tiling(s.range for s in plan.after)
    check_movement(plan, sample_from(hashes))
    if plan.ok:
        assert plan.moved_fraction == pytest.approx(target.share)
        assert len(plan.after) == len(shards) + 1
    else:
        assert [b.limit for b in plan.breaches] == ["split_key_outside_shard"] and plan.operations == ()


@settings(max_examples=60, deadline=None)
@given(boundaries.filter(lambda b: len(b) >= 1), st.data(), hash_keys)
def test_merge_plans_tile_and_movement_matches(cuts, data, hashes):
    shards = stream_of(cuts)
    i = data.draw(st.integers(min_value=0, max_value=len(shards) - 2))
    plan = plan_merge(shards, shards[i + 1].shard_id, shards[i].shard_id, sample=sample_from(hashes))
    check_tiling(s.range for s in plan.after)
    check_movement(plan, sample_from(hashes))
    assert plan.ok and len(plan.after) == len(shards) - 1
    assert plan.moved_fraction == pytest.approx(shards[i].share + shards[i + 1].share)


@settings(max_examples=40, deadline=None)
@given(boundaries, st.integers(min_value=1, max_value=60), hash_keys)
def test_make_even_replays_to_equal_shares(cuts, target, hashes):
    shards = stream_of(cuts)
    plan = plan_even(shards, target, sample=sample_from(hashes))
    tolerance, current = even_tolerance(target), {s.starting_hash_key for s in shards}
    for (start, _), (even_start, _) in zip((s.range for s in plan.after), even_split(target), strict=True):
        assert start == even_start or (start in current and abs(start - even_start) <= tolerance)
    assert replay(shards, plan.operations) == [(s.starting_hash_key, s.ending_hash_key, s.shard_id) for s in plan.after]
    check_movement(plan, sample_from(hashes))
    assert plan.peak_open_shards == len(shards) + plan.split_steps
    created = 2 * plan.split_steps + plan.merge_steps
    assert plan.short_lived_shards == created - sum(1 for s in plan.after if not s.unchanged)


@settings(max_examples=40, deadline=None)
@given(boundaries, st.integers(min_value=1, max_value=60))
def test_scale_steps_agree_with_make_even_to_the_same_count(cuts, target):
    shards = stream_of(cuts)
    scale, explicit = plan_scale(shards, target), plan_even(shards, target)
    assume(not any("counted as even" in note for note in explicit.notes))  # a rescale has no tolerance
    assert [s.range for s in scale.after] == [s.range for s in explicit.after]
    assert (scale.split_steps, scale.merge_steps, scale.short_lived_shards) == (
        explicit.split_steps,
        explicit.merge_steps,
        explicit.short_lived_shards,
    )
    assert all(s.shard_id is None for s in scale.after if not s.unchanged)


@settings(max_examples=25, deadline=None)
@given(boundaries, st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=2**32))
def test_moved_fraction_of_uniform_sample_estimates_key_space_fraction(cuts, target, seed):
    rng = random.Random(seed)
    shards = stream_of(cuts)
    n = 4000
    plan = plan_scale(shards, target, sample=sample_from([rng.getrandbits(128) for _ in range(n)]))
    p = plan.moved_fraction
    tolerance = 5 * math.sqrt(p * (1 - p) / n) + 1e-9
    assert abs(plan.key_movement.moved_fraction - p) <= tolerance


# ---------------------------------------------------------------- examples and step model


def test_midpoint_split_of_a_four_shard_stream_predicts_ids_and_halves():
    shards = even_shards(4)
    plan = plan_split(shards, "shardId-000000000001", midpoint(shards[1]))
    new = [s for s in plan.after if not s.unchanged]
    assert [(s.shard_id, s.parent_shard_id) for s in new] == [
        ("shardId-000000000004", "shardId-000000000001"),
        ("shardId-000000000005", "shardId-000000000001"),
    ]
    assert [s.share for s in new] == [0.125, 0.125]
    assert plan.moved_fraction == 0.25


def test_ids_continue_after_closed_shards():
    shards = [*even_shards(2), Shard("shardId-000000000002", 0, 10, ending_sequence_number="9")]
    shards[0] = Shard(shards[0].shard_id, 0, shards[0].ending_hash_key)
    plan = plan_split(shards, "shardId-000000000000", HASH_SPACE // 4)
    assert {s.shard_id for s in plan.after if not s.unchanged} == {"shardId-000000000003", "shardId-000000000004"}


def test_median_split_divides_observed_keys_evenly():
    keys = [f"tenant-{i}" for i in range(1001)]
    sample = KeySample.from_partition_keys(keys)
    shards = even_shards(1)
    plan = plan_split(shards, "shardId-000000000000", median_hash_key(shards[0], sample))
    low, high = plan.after
    assert (
        abs(
            sum(low.starting_hash_key <= h <= low.ending_hash_key for h in sample.hash_keys)
            - sum(high.starting_hash_key <= h <= high.ending_hash_key for h in sample.hash_keys)
        )
        <= 1
    )


def test_median_needs_keys_in_the_shard():
    shards = even_shards(4)
    lonely = KeySample(["a"], [0])
    with pytest.raises(BadInput, match="need at least 2"):
        median_hash_key(shards[3], lonely)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 40)), min_size=2, max_size=12))
def test_median_split_is_the_most_even_cut_even_with_hot_keys(weighted):
    """Keys repeated many times (hot keys) cannot be cut: the split must still be the most even of
    all possible cuts, found here by trying every one."""
    shard = Shard("shardId-000000000000", 100, 200)
    hash_keys = [100 + offset for offset, repeats in weighted for _ in range(repeats)]
    sample = KeySample([f"key-{h}" for h in hash_keys], hash_keys)
    if len(set(hash_keys)) == 1:
        with pytest.raises(BadInput, match="same hash key"):
            median_split(shard, sample)
        return
    split = median_split(shard, sample)
    below = sum(h < split.key for h in hash_keys)
    best = min(abs(2 * sum(h < cut for h in hash_keys) - len(hash_keys)) for cut in range(101, 201))
    assert shard.starting_hash_key < split.key <= shard.ending_hash_key
    assert abs(2 * below - len(hash_keys)) == best
    assert (split.lower, split.upper, split.inside) == (below, len(hash_keys) - below, len(hash_keys))
    assert split.distinct_keys == len(set(hash_keys))
    assert (split.uncut_key is not None) == (best > 1)  # a hot key is named exactly when it spoils the split
    if split.uncut_key is not None:
        assert hash_keys.count(int(split.uncut_key.removeprefix("key-"))) == split.uncut_count


def test_median_split_key_sits_in_the_gap_and_is_shown_in_the_plan():
    shards = even_shards(2)
    top = shards[1].starting_hash_key
    sample = KeySample(["a", "b", "c", "d", "elsewhere"], [top + 10, top + 20, top + 1000, top + 2000, 5])
    split = median_split(shards[1], sample, "keys.txt")
    assert split.key == top + 510  # halfway between the 2nd and 3rd hash keys, not on the 3rd
    plan = plan_split(shards, shards[1].shard_id, split.key, median=split)
    text = render_plan(plan)
    assert "median of 4 sampled keys (4 distinct keys) from keys.txt" in text
    assert "1 more hash outside the shard" in text and "50.0% / 50.0% (2 / 2)" in text
    doc = json.loads(json.dumps(plan.to_json()))["median_split"]
    assert doc["key"] == str(top + 510) and doc["lower_fraction"] == 0.5 and doc["sampled"] == 5


@pytest.mark.parametrize(
    "current,target,splits,merges,short_lived",
    [
        (4, 8, 4, 0, 0),
        (8, 4, 0, 4, 0),
        (4, 4, 0, 0, 0),
        (4, 6, 5, 3, 7),
        (1, 2, 1, 0, 0),
    ],
)
def test_rescale_step_model(current, target, splits, merges, short_lived):
    plan = plan_scale(even_shards(current), target)
    assert (plan.split_steps, plan.merge_steps, plan.short_lived_shards) == (splits, merges, short_lived)
    assert plan.is_noop == (current == target)


# ---------------------------------------------------------------- every limit, with its rule


def limits_of(plan):
    return [b.limit for b in plan.breaches]


@pytest.mark.parametrize("offset,where", [(0, "at the start of"), (1, "at the start of"), (-1, "outside")])
def test_split_key_at_or_before_start(offset, where):
    shards = even_shards(4)
    plan = plan_split(shards, shards[2].shard_id, shards[2].starting_hash_key + offset)
    [breach] = plan.breaches
    assert breach.limit == "split_key_outside_shard" and where in breach.detail and "StartingHashKey+1" in breach.rule
    assert plan.operations == () and plan.after == tuple(plan.after) and len(plan.after) == 4


def test_split_key_at_end_or_beyond():
    shards = even_shards(4)
    assert limits_of(plan_split(shards, shards[0].shard_id, shards[0].ending_hash_key)) == ["split_key_outside_shard"]
    assert limits_of(plan_split(shards, shards[0].shard_id, shards[1].ending_hash_key)) == ["split_key_outside_shard"]


def test_merge_non_adjacent_names_the_reason():
    shards = even_shards(4)
    plan = plan_merge(shards, shards[0].shard_id, shards[3].shard_id)
    [breach] = plan.breaches
    assert breach.limit == "merge_not_adjacent" and "2 open shard(s) lie between them" in breach.detail
    assert breach.to_json()["shards_between"] == 2


def test_closed_shard_cannot_be_split_or_merged():
    shards = [*even_shards(2), Shard("shardId-000000000009", 0, 5, ending_sequence_number="1")]
    assert limits_of(plan_split(shards, "shardId-000000000009", 3)) == ["shard_not_open"]
    assert "shard_not_open" in limits_of(plan_merge(shards, "shardId-000000000009", shards[0].shard_id))


@pytest.mark.parametrize(
    "call",
    [
        lambda s: plan_split(s, "shardId-000000000077", 5),
        lambda s: plan_merge(s, "shardId-000000000000", "shardId-000000000000"),
        lambda s: plan_scale(s, 0),
        lambda s: plan_even(s, -1),
    ],
)
def test_bad_input_is_one_clear_error(call):
    with pytest.raises(BadInput) as caught:
        call(even_shards(4))
    assert "\n" not in caught.value.message and caught.value.exit_code == 2


def test_update_shard_count_doubling_and_halving():
    assert limits_of(plan_scale(even_shards(4), 9)) == ["update_shard_count_doubling"]
    assert limits_of(plan_scale(even_shards(4), 8)) == []
    assert limits_of(plan_scale(even_shards(9), 4)) == ["update_shard_count_halving"]
    halving = plan_scale(even_shards(9), 4).breaches[0]
    assert halving.to_json()["min_target"] == 5 and "at most halve" in halving.rule


def test_update_shard_count_daily_quota_from_context():
    plan = plan_scale(even_shards(4), 8, context=StreamContext(recent_scale_calls=10))
    assert limits_of(plan) == ["update_shard_count_daily_quota"]
    assert limits_of(plan_scale(even_shards(4), 8, context=StreamContext(recent_scale_calls=9))) == []
    assert limits_of(
        plan_scale(even_shards(4), 8, context=StreamContext(recent_scale_calls=2), limits=Limits(scale_calls_per_24h=2))
    ) == ["update_shard_count_daily_quota"]


def test_on_demand_and_not_active_block_every_reshard():
    on_demand, updating = StreamContext(mode="ON_DEMAND"), StreamContext(status="UPDATING")
    shards = even_shards(4)
    for context, limit in ((on_demand, "on_demand_stream"), (updating, "stream_not_active")):
        assert limit in limits_of(plan_scale(shards, 8, context=context))
        assert limit in limits_of(plan_split(shards, shards[0].shard_id, midpoint(shards[0]), context=context))
        assert limit in limits_of(plan_merge(shards, shards[0].shard_id, shards[1].shard_id, context=context))
        assert limit in limits_of(plan_even(stream_of([5]), context=context))


def test_stream_shard_cap_of_ten_thousand():
    assert "stream_shard_limit" in limits_of(
        plan_scale(even_shards(6000), 10001, limits=Limits(account_shard_limit=10**6))
    )
    assert "stream_shard_limit" not in limits_of(
        plan_scale(even_shards(6000), 10000, limits=Limits(account_shard_limit=10**6))
    )


def test_account_shard_limit_counts_short_lived_shards():
    assert default_account_shard_limit("us-east-1") == 20_000
    assert default_account_shard_limit("eu-central-1") == 1_000
    plan = plan_scale(even_shards(600), 1000, context=StreamContext(region="eu-central-1"))
    [breach] = plan.breaches
    assert breach.limit == "account_shard_limit" and breach.to_json()["needed"] == plan.peak_open_shards > 1000
    assert limits_of(plan_scale(even_shards(600), 1000, context=StreamContext(region="us-east-1"))) == []
    other_streams = StreamContext(region="us-east-1", account_open_shards=19_990)
    assert limits_of(plan_split(even_shards(4), "shardId-000000000000", 5 * 10**30, context=other_streams)) == []
    assert limits_of(
        plan_split(even_shards(20), "shardId-000000000000", 10**30, context=StreamContext(account_open_shards=20_000))
    ) == ["account_shard_limit"]


# ---------------------------------------------------------------- output


def test_plan_json_lists_after_shards_as_decimal_strings_with_breaches():
    plan = plan_scale(even_shards(4), 9, sample=KeySample.from_partition_keys(["a", "b", "c"]))
    doc = json.loads(json.dumps(plan.to_json()))
    assert [(s["shard_id"], int(s["starting_hash_key"]), int(s["ending_hash_key"])) for s in doc["after"]] == [
        (None, start, end) for start, end in even_split(9)
    ]
    assert sum(s["share"] for s in doc["after"]) == pytest.approx(1.0)
    assert doc["breaches"][0]["limit"] == "update_shard_count_doubling" and doc["breaches"][0]["rule"]
    assert doc["key_movement"]["sample_size"] == 3


def test_ribbon_and_text():
    assert ribbon(even_split(4), 8) == "00112233"
    plan = plan_split(even_shards(2), "shardId-000000000000", midpoint(even_shards(2)[0]))
    text = render_plan(plan, width=8)
    assert "before |00001111|" in text and "after  |AABB1111|" in text
    assert "Ordering:" in text and "Limits: none breached." in text


def test_key_movement_for_a_large_random_sample_is_consistent():
    rng = random.Random(7)
    shards = stream_of(rng.getrandbits(128) for _ in range(300))
    sample = sample_from([rng.getrandbits(128) for _ in range(20_000)])
    plan = plan_even(shards, sample=sample)
    assert plan.key_movement.moved == sum(route[3] for route in plan.key_movement.routes)
    assert abs(plan.key_movement.moved_fraction - plan.moved_fraction) < 0.02


# ---------------------------------------------------------------- make-even tolerance


def kinesis_mock_split(count):
    """kinesis-mock's even split steps by (2**128-1)//N: every boundary a few keys below AWS's."""
    step = MAX_HASH_KEY // count
    return [i * step for i in range(1, count)]


@pytest.mark.parametrize("count", [2, 4, 8, 64, 1024])
def test_boundaries_a_few_keys_off_the_even_split_are_already_even(count):
    shards = stream_of(kinesis_mock_split(count))
    assert [(s.starting_hash_key, s.ending_hash_key) for s in shards] != even_split(count)
    plan = plan_even(shards)
    assert plan.is_noop and plan.moved_fraction == 0 and plan.split_steps == plan.merge_steps == 0
    assert any(f"within {even_tolerance(count):,} hash keys" in note for note in plan.notes)


def test_a_boundary_just_beyond_the_tolerance_is_moved():
    start = even_split(2)[1][0]
    for offset, moves in ((even_tolerance(2), False), (-even_tolerance(2), False), (even_tolerance(2) + 1, True)):
        plan = plan_even(stream_of([start + offset]))
        assert (not plan.is_noop) == moves, offset
        if moves:
            assert [s.range for s in plan.after] == even_split(2)


def test_make_even_to_another_count_keeps_the_near_boundaries_it_can():
    shards = stream_of(kinesis_mock_split(4))  # 4 -> 8: the 3 old boundaries stay, 4 new ones are split in
    plan = plan_even(shards, 8)
    assert (plan.split_steps, plan.merge_steps) == (4, 0)


@pytest.mark.parametrize("build", ["split", "merge", "scale", "even"])
def test_an_auto_stream_plan_counts_no_key_moves_whatever_face_built_it(build):
    """AUTO distribution: the service places records, so no key moves with a reshard. The rule lives
    in the plan (both the CLI and the console build plans from the executor's context), so a sample
    of keys that would move on a keyed stream moves nowhere on an AUTO one."""
    shards = even_shards(4)
    sample = sample_from(list(range(0, MAX_HASH_KEY, MAX_HASH_KEY // 64)))
    builders = {
        "split": lambda context: plan_split(
            shards, shards[0].shard_id, midpoint(shards[0]), context=context, sample=sample
        ),
        "merge": lambda context: plan_merge(
            shards, shards[0].shard_id, shards[1].shard_id, context=context, sample=sample
        ),
        "scale": lambda context: plan_scale(shards, 8, context=context, sample=sample),
        "even": lambda context: plan_even(shards, 3, context=context, sample=sample),
    }
    keyed = builders[build](StreamContext())
    assert keyed.key_movement is not None and keyed.key_movement.moved > 0
    auto = builders[build](StreamContext(auto_distribution=True))
    assert auto.key_movement is None
    assert auto.operations == keyed.operations
