"""Hash keys, even splits and shard prediction, checked against plain linear scans."""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import BadInput, TilingError
from console.keyspace.hashkeys import (
    HASH_SPACE,
    MAX_HASH_KEY,
    HashRangeIndex,
    check_tiling,
    even_split,
    md5_hash_key,
    parse_hash_key,
    parse_typed_hash_key,
    shard_id_for_index,
    validate_partition_key,
)

# int(md5(str(x))) for x = 1..14, as the article printed them.
FOURTEEN_KEY_HASHES = [
    261578874264819908609102035485573088411,
    266003691477286198901011725417809479212,
    314755909755515592000481005244904880883,
    223974724102701384270894320508706361900,
    304197110536387568331823853743770900693,
    29871468615243985478486908056489800412,
    190188081314515644627836686569786975555,
    268426020319259673719831598091001013101,
    92737277766069325975379119957797678374,
    281595222973318803755638905082365601824,
    134349327668835346876933282647662472650,
    257926471090385021762358474659294308112,
    262007925198482523730006737380068994873,
    226898901170458510997176709786703486038,
]

# The four ranges AWS gives a new 4-shard stream.
AWS_FOUR_SHARD_RANGES = [
    (0, 85070591730234615865843651857942052863),
    (85070591730234615865843651857942052864, 170141183460469231731687303715884105727),
    (170141183460469231731687303715884105728, 255211775190703847597530955573826158591),
    (255211775190703847597530955573826158592, 340282366920938463463374607431768211455),
]


def linear_scan(ranges: list[tuple[str, int, int]], hash_key: int) -> str:
    owners = [shard_id for shard_id, start, end in ranges if start <= hash_key <= end]
    assert len(owners) == 1
    return owners[0]


@st.composite
def tilings(draw, max_shards: int = 40):
    """Random open-shard sets that tile the space: sorted distinct cut points, shuffled ids."""
    cuts = draw(st.lists(st.integers(1, MAX_HASH_KEY), max_size=max_shards - 1, unique=True))
    starts = [0, *sorted(cuts)]
    ends = [s - 1 for s in starts[1:]] + [MAX_HASH_KEY]
    ids = draw(st.permutations([f"shardId-{i:012d}" for i in range(len(starts))]))
    return list(zip(ids, starts, ends))


def test_md5_hash_key_is_the_big_endian_digest():
    assert hashlib.md5(b"partition-key-0001").hexdigest() == "b7681e2243f62f440887b6d38c002537"
    assert md5_hash_key("partition-key-0001") == 243789333289005976465737331408549979447


def test_fourteen_key_hashes_and_their_three_versus_eleven():
    assert [md5_hash_key(str(x)) for x in range(1, 15)] == FOURTEEN_KEY_HASHES
    index = HashRangeIndex.even(2)
    assert index.endings[0] == 170141183460469231731687303715884105727
    owners = index.predict_many(FOURTEEN_KEY_HASHES)
    assert (owners.count("shardId-000000000000"), owners.count("shardId-000000000001")) == (3, 11)


def test_aws_even_split_and_the_shard_of_partition_key_0001():
    assert even_split(4) == AWS_FOUR_SHARD_RANGES
    index = HashRangeIndex.even(4)
    hash_key = md5_hash_key("partition-key-0001")
    assert index.index_of(hash_key) == 2  # "shard3" of the article, counting from 1
    assert index.predict(hash_key) == "shardId-000000000002"


@settings(max_examples=100, deadline=None)
@given(count=st.one_of(st.integers(1, 3000), st.sampled_from([65_536, 99_999, 100_000])))
def test_even_split_tiles_the_space(count):
    ranges = even_split(count)
    assert len(ranges) == count
    assert ranges[0][0] == 0 and ranges[-1][1] == MAX_HASH_KEY
    assert all(prev_end + 1 == start for (_, prev_end), (start, _) in itertools.pairwise(ranges))
    sizes = {end - start + 1 for start, end in ranges[:-1]}
    assert sizes <= {HASH_SPACE // count}
    assert ranges[-1][1] - ranges[-1][0] + 1 == HASH_SPACE // count + HASH_SPACE % count
    assert check_tiling(ranges) == ranges


@settings(max_examples=200, deadline=None)
@given(ranges=tilings(), keys=st.lists(st.integers(0, MAX_HASH_KEY), max_size=30))
def test_prediction_equals_a_linear_scan(ranges, keys):
    index = HashRangeIndex.build(ranges)
    edges = [bound for _, start, end in ranges for bound in (start, end)]
    for hash_key in keys + edges:
        assert index.predict(hash_key) == linear_scan(ranges, hash_key)
        assert index.shard_ids[index.index_of(hash_key)] == index.predict(hash_key)
    assert index.predict_many(keys) == [linear_scan(ranges, h) for h in keys]


@settings(max_examples=100, deadline=None)
@given(ranges=tilings(), victim=st.integers(0, 39), shift=st.integers(1, 10**30))
def test_gaps_and_overlaps_are_rejected_and_named(ranges, victim, shift):
    victim %= len(ranges)
    shard_id, start, end = ranges[victim]
    if start + shift <= end:  # open a gap at the front of the victim
        broken = [*ranges[:victim], (shard_id, start + shift, end), *ranges[victim + 1 :]]
        with pytest.raises(TilingError, match=rf"gap in the key space: \[{start}, {start + shift - 1}\]"):
            HashRangeIndex.build(broken)
    if victim and start - shift >= ranges_start(ranges, victim - 1):
        broken = [*ranges[:victim], (shard_id, start - shift, end), *ranges[victim + 1 :]]
        with pytest.raises(TilingError, match="overlap in the key space"):
            HashRangeIndex.build(broken)


def ranges_start(ranges, position):
    return sorted(start for _, start, _ in ranges)[position]


def test_tiling_errors_name_the_missing_tail_and_empty_sets():
    with pytest.raises(TilingError, match=rf"gap in the key space: \[{2**127}, {MAX_HASH_KEY}\]"):
        check_tiling([(0, 2**127 - 1)])
    with pytest.raises(TilingError, match="not covered at all"):
        check_tiling([])
    with pytest.raises(TilingError, match="past the key space"):
        check_tiling([(0, HASH_SPACE)])


@pytest.mark.parametrize("text, value", [("0", 0), (" 42 ", 42), (str(MAX_HASH_KEY), MAX_HASH_KEY), (7, 7)])
def test_parse_hash_key_accepts_decimal_in_range(text, value):
    assert parse_hash_key(text) == value


@pytest.mark.parametrize("text", ["", "-1", "0x10", "1e5", "١٢", str(HASH_SPACE), "12 3", True, -5])
def test_parse_hash_key_rejects_with_one_clear_line(text):
    with pytest.raises(BadInput) as caught:
        parse_hash_key(text)
    message = caught.value.message
    assert "\n" not in message
    assert message.startswith("explicit hash key must be")


def test_partition_keys_are_1_to_256_unicode_characters():
    assert validate_partition_key("é" * 256) == "é" * 256  # characters, not bytes
    with pytest.raises(BadInput, match="got 257"):
        validate_partition_key("k" * 257)
    with pytest.raises(BadInput, match="empty"):
        validate_partition_key("")


def test_partition_keys_that_are_not_utf8_are_bad_input():
    """Bytes that are not UTF-8 on a command line arrive as lone surrogates; MD5 of the key would crash."""
    with pytest.raises(BadInput, match="partition key is not valid UTF-8 text"):
        validate_partition_key("ok-\udcff")


def test_shard_ids_of_a_new_stream():
    assert shard_id_for_index(0) == "shardId-000000000000"
    assert HashRangeIndex.even(3).shard_ids == tuple(shard_id_for_index(i) for i in range(3))


@pytest.mark.parametrize("shard_count", [1, 2, 1000, 70_000])
def test_bulk_prediction_table_equals_bisect(shard_count):
    """`kconsole predict` answers most of a large batch from a 16-bit prefix table; it must agree."""
    import random

    from console.keyspace.hashkeys import TABLE_WORTH_IT, predict_hash_keys

    rng = random.Random(shard_count)
    cuts = sorted({rng.randrange(1, MAX_HASH_KEY) for _ in range(shard_count - 1)})
    ranges = [(f"s{i}", s, e) for i, (s, e) in enumerate(zip([0, *cuts], [c - 1 for c in cuts] + [MAX_HASH_KEY]))]
    index = HashRangeIndex.build(ranges)
    keys = [f"k{rng.getrandbits(40)}" for _ in range(TABLE_WORTH_IT + 100)]
    for batch in (keys, keys[:50]):  # from the table, and bisected one by one
        hash_keys, positions = predict_hash_keys(index, batch)
        assert hash_keys == [md5_hash_key(k) for k in batch]
        assert positions == [index.index_of(h) for h in hash_keys]


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_a_typed_hash_key_reads_the_same_in_decimal_and_hex(value):
    assert parse_typed_hash_key(str(value)) == parse_typed_hash_key(hex(value)) == value
    assert parse_typed_hash_key(f"  0X{value:X} ") == value


@pytest.mark.parametrize("text", ["0x", "0x1g", "0x1" + "0" * 32, "0x" + "f" * 10_000, "-0x1", "0x-1"])
def test_a_typed_hash_key_out_of_range_or_not_hex_is_one_line(text):
    with pytest.raises(BadInput) as caught:
        parse_typed_hash_key(text)
    assert "\n" not in caught.value.message and len(caught.value.message) < 200


def _slice_endings(bits: int):
    """Sorted endings: anywhere, or exactly where a slice of the top `bits` bits starts or ends (the
    edge cases of a prefix table)."""
    shift = 128 - bits
    anywhere = st.integers(min_value=0, max_value=MAX_HASH_KEY)
    slice_end = st.integers(min_value=0, max_value=(1 << bits) - 1).map(lambda p: ((p + 1) << shift) - 1)
    slice_start = st.integers(min_value=0, max_value=(1 << bits) - 1).map(lambda p: p << shift)
    return st.lists(st.one_of(anywhere, slice_end, slice_start), min_size=1, max_size=40).map(
        lambda endings: sorted(set(endings))
    )


@settings(max_examples=300)
@given(st.data())
def test_prefix_table_answers_what_a_search_per_slice_answers(data):
    """The table is built in one pass over the endings; each entry must be what bisecting for the
    slice's first key gives when that ending covers the whole slice, else -1."""
    import bisect

    from console.keyspace.hashkeys import prefix_table

    bits = data.draw(st.sampled_from([1, 4, 8]))
    endings = data.draw(_slice_endings(bits))
    shift = 128 - bits
    expected = []
    for prefix in range(1 << bits):
        first = bisect.bisect_left(endings, prefix << shift)
        covers = first < len(endings) and endings[first] >= ((prefix + 1) << shift) - 1
        expected.append(first if covers else -1)
    assert prefix_table(endings, bits) == expected
