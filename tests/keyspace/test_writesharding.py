"""Write sharding and the per-bucket distribution summary."""

from __future__ import annotations

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import BadInput
from console.keyspace.distribution import format_distribution, summarize
from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key
from console.keyspace.writesharding import check_suffix_count, sharded_partition_key, spread, suffix_for

PK = "user.v1.User:abc"
SEED_IDS_0_TO_15 = [12, 14, 13, 6, 6, 5, 12, 11, 13, 5, 12, 15, 13, 5, 14, 14]


def test_write_sharding_reference_values():
    assert suffix_for(PK, "123", 16) == 11
    assert sharded_partition_key(PK, 11) == "user.v1.User:abc:11"
    assert [suffix_for(PK, str(i), 16) for i in range(16)] == SEED_IDS_0_TO_15
    # The article's a/b/c example ("leaving TenantId blank") hashes ":a", ":b", ":c".
    assert [suffix_for("", sort_key, 16) for sort_key in "abc"] == [12, 15, 14]


def test_suffix_is_the_low_bits_of_xxh64_of_pk_colon_sk():
    full = xxhash.xxh64_intdigest(b"user.v1.User:abc:123")
    assert [suffix_for(PK, "123", n) for n in (1, 2, 4, 8, 16, 1024)] == [
        full & (n - 1) for n in (1, 2, 4, 8, 16, 1024)
    ]


@pytest.mark.parametrize("count", [0, 3, 6, 12, 100, -4, 2.0, True, "8"])
def test_suffix_count_must_be_a_power_of_two(count):
    with pytest.raises(BadInput, match="power of two"):
        check_suffix_count(count)


def test_spread_of_the_seed_ids_over_four_shards():
    index = HashRangeIndex.even(4)
    result = spread(PK, 16, index, [str(i) for i in range(16)])
    assert [p.suffix for p in result.sort_keys] == SEED_IDS_0_TO_15
    for placement in result.suffixes:
        assert placement.partition_key == f"{PK}:{placement.suffix}"
        assert placement.hash_key == md5_hash_key(placement.partition_key)
        assert placement.shard_id == index.predict(placement.hash_key)
    assert [b.count for b in result.by_suffix.buckets] == [SEED_IDS_0_TO_15.count(s) for s in range(16)]
    assert result.by_suffix.max_count == 3 and result.by_suffix.empty_buckets == 9
    expected_per_shard = [0] * 4
    for s in SEED_IDS_0_TO_15:
        expected_per_shard[index.index_of(md5_hash_key(f"{PK}:{s}"))] += 1
    assert [b.count for b in result.by_shard.buckets] == expected_per_shard
    assert result.shards_reached == len({p.shard_id for p in result.suffixes})


@settings(max_examples=60, deadline=None)
@given(
    pk=st.text(min_size=1, max_size=40),
    bits=st.integers(0, 8),
    shards=st.integers(1, 64),
    sort_keys=st.lists(st.text(min_size=1, max_size=12), max_size=60),
)
def test_spread_counts_add_up(pk, bits, shards, sort_keys):
    result = spread(pk, 1 << bits, HashRangeIndex.even(shards), sort_keys)
    assert len(result.suffixes) == 1 << bits
    assert result.by_suffix.total == result.by_shard.total == len(sort_keys)
    assert result.suffixes_by_shard.total == 1 << bits
    assert sum(p.sort_keys for p in result.suffixes) == len(sort_keys)
    assert all(0 <= p.suffix < 1 << bits for p in result.sort_keys)


def test_spread_rejects_empty_sort_keys_and_overlong_sharded_keys():
    with pytest.raises(BadInput, match="sort key #2 is empty"):
        spread(PK, 4, HashRangeIndex.even(2), ["a", ""])
    with pytest.raises(BadInput, match="PK is 254 characters; with the suffix ':15' the sharded key would be 257"):
        spread("k" * 254, 16, HashRangeIndex.even(2))  # "k...k:15" is 257 characters
    with pytest.raises(BadInput, match="sort key #1 is not valid UTF-8"):
        spread(PK, 4, HashRangeIndex.even(2), ["\udcff"])


def test_suffix_count_is_capped_where_answers_stay_quick():
    """2**20 suffixes took minutes and 290 MB of --json; the cap keeps a typo cheap."""
    assert check_suffix_count(1 << 16) == 1 << 16
    with pytest.raises(BadInput, match="at most 65536"):
        check_suffix_count(1 << 17)


def test_distribution_summary_of_three_versus_eleven():
    dist = summarize(["a", "b"], [3, 11], [0.5, 0.5])
    assert (dist.total, dist.max_count, dist.min_count, dist.mean) == (14, 11, 3, 7.0)
    assert dist.skew == pytest.approx(11 / 7)
    assert [round(b.share, 4) for b in dist.buckets] == [round(3 / 14, 4), round(11 / 14, 4)]
    text = format_distribution(dist)
    assert "max 11, min 3, mean 7.0, max/mean skew 1.57" in text
    empty = summarize(["a"], [0])
    assert empty.skew == 0.0 and empty.buckets[0].share == 0.0


def test_long_distributions_keep_the_busiest_and_emptiest_rows():
    counts = [5] * 99 + [40]
    counts[17] = 0
    text = format_distribution(summarize([f"s{i}" for i in range(100)], counts), max_rows=16)
    assert "s99 " in text and "s17 " in text and "more shards not shown" in text
