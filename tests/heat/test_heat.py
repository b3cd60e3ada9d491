"""console.heat.rates without a server: Space-Saving guarantees, 1-second buckets, split point, what-ifs."""

from __future__ import annotations

import random
import sys
from collections import Counter
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.heat.heavyhitters import CHUNK, SpaceSaving
from console.heat.hotkey import hot_key_what_if, suffixes_needed
from console.heat.rates import HISTORY_SECONDS, ShardHeat, observations_from_records
from console.heat.snapshot import SHARD_BYTES_LIMIT, utilisation
from console.heat.stream_heat import StreamHeat
from console.keyspace.hashkeys import MAX_HASH_KEY, HashRangeIndex, md5_hash_key
from console.topology.model import Shard

WHOLE = Shard("shardId-000000000000", 0, MAX_HASH_KEY)

# Small alphabets make collisions (repeated keys) likely; weights exercise the bytes summary.
keys_strategy = st.lists(st.sampled_from([f"k{i}" for i in range(40)]), max_size=400)


def check_guarantees(summary: SpaceSaving, truth: Counter) -> None:
    total = sum(truth.values())
    k = summary.capacity
    assert summary.total == total
    assert summary.error_bound <= total / (k + 1)
    for key, true in truth.items():
        assert summary.guaranteed(key) <= true <= summary.count(key), key  # bounds hold for every key
        assert summary.count(key) - true <= total / k
        if true > total / k:
            assert key in summary
    for row in summary.top(k):
        assert row.guaranteed <= truth[row.key] <= row.count


@settings(max_examples=200, deadline=None)
@given(keys=keys_strategy, capacity=st.integers(1, 12), slack=st.integers(1, 3))
def test_space_saving_guarantees_one_key_at_a_time(keys, capacity, slack):
    summary = SpaceSaving(capacity, slack=slack)
    for key in keys:
        summary.add(key)
    check_guarantees(summary, Counter(keys))
    assert len(summary) <= max(capacity + 1, capacity * slack)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(keys_strategy, max_size=6), capacity=st.integers(1, 12), slack=st.integers(1, 3))
def test_space_saving_guarantees_in_batches(batches, capacity, slack):
    summary = SpaceSaving(capacity, slack=slack)
    for batch in batches:
        summary.add_many(batch)
    check_guarantees(summary, Counter(key for batch in batches for key in batch))


@settings(max_examples=150, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.sampled_from([f"k{i}" for i in range(30)]), st.integers(1, 500)), max_size=200),
    capacity=st.integers(1, 10),
)
def test_space_saving_guarantees_weighted(pairs, capacity):
    summary = SpaceSaving(capacity, slack=1)
    truth: Counter = Counter()
    for index in range(0, len(pairs), 7):  # weights arrive pre-aggregated per batch, like bytes per key
        batch: Counter = Counter()
        for key, weight in pairs[index : index + 7]:
            batch[key] += weight
        summary.add_weights(batch)
        truth.update(batch)
    check_guarantees(summary, truth)


def deep_size(value, seen=None) -> int:
    """Bytes held by `value` and everything it references (containers, slots, strings, ints)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        size += sum(deep_size(item, seen) for item in value)
    elif hasattr(value, "__slots__") or hasattr(value, "__dict__"):
        names = list(getattr(value, "__dict__", {})) + list(getattr(type(value), "__slots__", ()))
        size += sum(
            deep_size(getattr(value, name), seen)
            for name in names
            if hasattr(value, name) and name not in ("shard", "_random")
        )
    return size


def test_long_sample_of_a_million_distinct_keys_stays_bounded():
    """1M distinct keys over 1,000 s plus one key at ~9%: the shard's heat stays small, names the key."""
    heat = ShardHeat(WHOLE, top_capacity=64)
    sizes = []
    for start in range(0, 1_000_000, 10_000):
        batch = [(start / 1000 + i / 10_000, f"user-{start + i}", 100) for i in range(10_000)]
        batch[::11] = [(row[0], "hot", 100) for row in batch[::11]]
        heat.observe(batch)
        if start % 250_000 == 0:
            sizes.append(deep_size(heat))
    sizes.append(deep_size(heat))
    assert len(heat.by_records) <= 64 * 8 + CHUNK and len(heat.by_bytes) <= 64 * 8 + CHUNK
    assert len(heat._buckets) <= HISTORY_SECONDS + 1
    # An exact dict of 1M keys would hold ~100 MB; the heat of one shard stays under 2 MB and does
    # not grow with the keys seen (the hash cache and tables refill and compact, never accumulate).
    assert max(sizes) < 2_000_000
    assert sizes[-1] < 1.5 * sizes[1]
    top = heat.by_records.top(1)[0]
    assert top.key == "hot" and top.guaranteed <= 90_910 <= top.count
    assert heat.records == 1_000_000


def test_sampling_scales_counts_and_keeps_the_top_keys():
    rng = random.Random(3)
    keys = rng.choices(["a", "b", "c"] + [f"x{i}" for i in range(5000)], weights=[30, 20, 10] + [0.01] * 5000, k=50_000)
    summary = SpaceSaving(32, sample_every=4, seed=5)
    summary.add_many(keys)
    truth = Counter(keys)
    assert [row.key for row in summary.top(3)] == ["a", "b", "c"]
    assert summary.count("a") == pytest.approx(truth["a"], rel=0.05)
    assert summary.total == pytest.approx(len(keys), abs=4 * (len(keys) // CHUNK + 1))


def shard_heat(shard: Shard = WHOLE) -> ShardHeat:
    return ShardHeat(shard, top_capacity=16)


def test_buckets_rates_and_peak_by_arrival_second():
    heat = shard_heat()
    # 3 records in second 100, 1 in second 101, 5 in second 103 (bytes 10 each), one outside the window
    times = [100.1, 100.5, 100.9, 101.0, 103.2, 103.3, 103.4, 103.5, 103.6, 99.9]
    counted = heat.observe(((t, "k", 10) for t in times), start=100.0, end=104.0)
    assert counted == 9
    snap = heat.snapshot(100.0, 104.0)
    assert snap.records == 9 and snap.bytes == 90
    assert snap.records_per_s == pytest.approx(9 / 4)
    assert snap.peak_records_per_s == 5 and snap.peak_bytes_per_s == 50
    assert snap.series == (3, 1, 0, 5)
    assert snap.utilisation == pytest.approx(utilisation(9 / 4, 90 / 4))


def test_recent_rates_cover_the_last_whole_seconds():
    heat = shard_heat()
    heat.observe([(second + 0.5, "k", 10) for second in range(60)] + [(55.5, "burst", 10)] * 50)
    snap = heat.snapshot(0.0, 60.0)
    assert snap.records_per_s == pytest.approx(110 / 60)
    assert snap.recent_records_per_s == pytest.approx((10 + 50) / 10)
    assert snap.recent_bytes_per_s == pytest.approx(600 / 10)
    assert snap.recent_utilisation == pytest.approx(6 / 1000)
    assert snap.peak_records_per_s == 51 and len(snap.series) == 60


def test_utilisation_is_the_larger_share_of_the_two_limits():
    assert utilisation(500, 0) == 0.5
    assert utilisation(10, SHARD_BYTES_LIMIT) == 1.0


def test_bucket_history_is_bounded():
    heat = shard_heat()
    for second in range(10 * HISTORY_SECONDS):
        heat.observe([(float(second), f"k{second}", 1)])
    assert len(heat._buckets) <= HISTORY_SECONDS + 1
    assert heat.records == 10 * HISTORY_SECONDS


def test_top_keys_by_records_and_bytes_with_shares():
    heat = shard_heat()
    rows = [(1.0, "small-often", 10)] * 60 + [(1.0, "big-rare", 5000)] * 10 + [(1.0, f"o{i}", 10) for i in range(30)]
    heat.observe(rows)
    snap = heat.snapshot(0.0, 2.0, top=2)
    assert snap.top_keys[0].key == "small-often" and snap.top_keys[0].share == pytest.approx(0.6)
    assert snap.top_keys_by_bytes[0].key == "big-rare" and snap.top_keys_by_bytes[0].bytes == 50_000


def test_split_point_is_the_median_hash_of_observed_traffic():
    rng = random.Random(11)
    keys = [f"key-{rng.random()}" for _ in range(4000)]
    heat = shard_heat()
    heat.observe([(1.0, key, 1) for key in keys])
    split = heat.split_suggestion()
    below = sum(1 for key in keys if md5_hash_key(key) < split.at)
    assert abs(below / len(keys) - 0.5) < 0.03  # histogram resolution: 1/512 of the range
    assert split.dominant_key is None
    assert split.command("orders") == f"kconsole plan split orders --shard shardId-000000000000 --at {split.at}"


def test_split_point_of_skewed_traffic_moves_towards_the_load_and_names_a_dominant_key():
    # All traffic in the lower quarter of the shard's range: the median must be there too.
    low = [key for key in (f"k{i}" for i in range(20000)) if md5_hash_key(key) < MAX_HASH_KEY // 4][:2000]
    heat = shard_heat()
    heat.observe([(1.0, key, 1) for key in low] + [(1.0, low[0], 1)] * 3000)
    split = heat.split_suggestion()
    assert 0 < split.at < MAX_HASH_KEY // 4
    assert split.dominant_key == low[0]
    # the share is the guaranteed (lower-bound) count's: within the summary's error of the truth
    assert 3001 / 5000 - heat.by_records.error_bound / 5000 <= split.dominant_share <= 3001 / 5000


@settings(max_examples=60, deadline=None)
@given(weights=st.lists(st.integers(1, 400), min_size=1, max_size=8))
def test_split_point_between_heavy_keys_is_the_best_cut(weights):
    """With a few heavy keys, the split falls at a key boundary that best halves the traffic."""
    keys = [f"heavy-{i}" for i in range(len(weights))]
    heat = shard_heat()
    heat.observe([(1.0, key, 1) for key, weight in zip(keys, weights) for _ in range(weight)])
    split = heat.split_suggestion()
    total = sum(weights)
    below = sum(w for key, w in zip(keys, weights) if md5_hash_key(key) < split.at)
    assert split.lower_share * total == pytest.approx(below)
    ordered = sorted(zip((md5_hash_key(k) for k in keys), weights))
    cuts = [sum(w for _, w in ordered[:n]) for n in range(len(ordered) + 1)]
    assert abs(below - total / 2) == pytest.approx(min(abs(c - total / 2) for c in cuts))


def test_split_point_stays_inside_the_shard_as_split_shard_requires():
    shard = Shard("shardId-000000000001", 1000, 1007)
    heat = shard_heat(shard)
    heat.observe([(1.0, "x", 1)])  # MD5 of "x" is not in [1000, 1007]: written with ExplicitHashKey
    assert heat.unplaced == 1 and heat.split_suggestion() is None


def test_stream_heat_orders_shards_and_finds_the_hottest():
    index = HashRangeIndex.even(4)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    stream = StreamHeat("orders", shards, window_start=0.0)
    keys = ["hot"] * 300 + [f"c{i}" for i in range(300)]
    for key in keys:
        stream.observe(index.predict(md5_hash_key(key)), [(0.5, key, 100)])
    stream.close(3.0)
    stream.observe(index.predict(md5_hash_key("hot")), [(3.5, "hot", 100)])  # after the window: not counted
    snap = stream.snapshot(now=10.0)
    hottest = snap.hottest
    assert hottest.shard_id == index.predict(md5_hash_key("hot"))
    assert hottest.top_keys[0].key == "hot"
    assert snap.records_per_s == pytest.approx(600 / 3.0)
    assert [s.shard_id for s in snap.shards] == list(index.shard_ids)
    assert snap.to_json()["hottest_shard"] == hottest.shard_id


def test_observations_from_get_records_count_data_and_key_bytes():
    from datetime import datetime

    when = datetime(2026, 1, 1, tzinfo=UTC)
    rows = observations_from_records(
        [{"ApproximateArrivalTimestamp": when, "PartitionKey": "ké", "Data": b"12345", "SequenceNumber": "1"}]
    )
    assert rows == [(when.timestamp(), "ké", 5 + 3)]


def test_suffixes_needed_is_a_power_of_two_that_brings_the_key_under_target():
    assert suffixes_needed(100, 0) == 2
    assert suffixes_needed(1500, 0) == 4  # 1500/4 = 375 <= 500
    assert suffixes_needed(0, 3 * SHARD_BYTES_LIMIT) == 8  # 3 MiB/8 < 0.5 MiB


def test_hot_key_what_if_lands_sharded_keys_where_md5_says():
    index = HashRangeIndex.even(8)
    what_if = hot_key_what_if("user.v1.User:abc", 3000, 0, index)
    assert what_if.suffixes == 8
    for sharded_key, shard_id in what_if.landing:
        assert sharded_key.startswith("user.v1.User:abc:")
        assert shard_id == index.predict(md5_hash_key(sharded_key))
    assert sum(what_if.shards_hit.values()) == 8


def four_shard_snapshot(hot_key_share: int = 300):
    index = HashRangeIndex.even(4)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    stream = StreamHeat("orders", shards, window_start=100.0)
    keys = ["hot"] * hot_key_share + [f"c{i}" for i in range(300)]
    for n, key in enumerate(keys):
        stream.observe(index.predict(md5_hash_key(key)), [(100.0 + n / 200, key, 100)])
    return index, stream.snapshot(now=104.0)
