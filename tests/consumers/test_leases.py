"""Lease items as the KCL writes them, parsed; lease states; the barrier and the recommendation rules
on hand-made shards (no I/O here: the live tests are in test_consumers_live.py)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from console.consumers.barrier import barrier_analysis, changed_shards
from console.consumers.lag import ShardLag
from console.consumers.leases import (
    is_lease_key_schema,
    leases_for_stream,
    parse_lease,
    split_lease_key,
    table_matches_stream,
)
from console.consumers.recommend import ShardLoad, recommend
from console.consumers.report import FINISHED, OWNED, STALLED, UNOWNED, StallTracker, build_report, lease_state
from console.keyspace.hashkeys import HASH_SPACE, even_split, shard_id_for_index
from console.topology.model import Shard
from tests.consumers.kcl_tables import kcl_lease

SEQ = "49600000000000000000000000000000000000000000000000000123"


def shards_of(count: int) -> list[Shard]:
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count))]


def test_every_kcl_version_parses_to_the_same_lease():
    parsed = [
        parse_lease(
            kcl_lease(
                "shardId-000000000001",
                checkpoint=SEQ,
                subsequence=2,
                parents=("shardId-000000000000",),
                children=("shardId-000000000004", "shardId-000000000005"),
                pending=SEQ,
                version=version,
                hash_range=(0, 10),
            )
        )
        for version in (1, 2, 3)
    ]
    for lease in parsed:
        assert (lease.shard_id, lease.owner, lease.counter, lease.checkpoint, lease.checkpoint_subsequence) == (
            "shardId-000000000001",
            "worker-1",
            7,
            SEQ,
            2,
        )
        assert lease.parent_shard_ids == ("shardId-000000000000",)
        assert lease.child_shard_ids == ("shardId-000000000004", "shardId-000000000005")
        assert lease.pending_checkpoint == SEQ and lease.problem is None


def test_children_written_by_releases_before_2_13_are_read():
    item = kcl_lease("shardId-000000000001")
    item["childShardId"] = {"SS": ["shardId-000000000009"]}
    assert parse_lease(item).child_shard_ids == ("shardId-000000000009",)


def test_multi_stream_leases_name_their_stream():
    item = kcl_lease("shardId-000000000003", lease_key="123456789012:orders:1700000000:shardId-000000000003")
    item["streamName"] = {"S": "123456789012:orders:1700000000"}
    item["shardId"] = {"S": "shardId-000000000003"}
    lease = parse_lease(item)
    assert (lease.stream_name, lease.shard_id) == ("orders", "shardId-000000000003")
    assert split_lease_key("orders:shardId-000000000001") == ("orders", "shardId-000000000001")
    assert split_lease_key("shardId-000000000001") == (None, "shardId-000000000001")
    other = kcl_lease("shardId-000000000000", lease_key="123456789012:payments:1700000000:shardId-000000000000")
    assert [
        lease.shard_id for lease in leases_for_stream([item, other, kcl_lease("shardId-000000000001")], "orders")
    ] == ["shardId-000000000001", "shardId-000000000003"]


def test_kcl3_coordinator_items_in_the_lease_table_are_not_leases():
    leader = {"leaseKey": {"S": "Leader"}, "entityType": {"S": "LEADER"}}
    assert (
        leases_for_stream([leader, kcl_lease("shardId-000000000000", version=3)], "s")[0].shard_id
        == "shardId-000000000000"
    )
    assert len(leases_for_stream([leader], "s")) == 0


@given(
    st.text(min_size=1, max_size=40).filter(
        lambda t: not t.isdigit() and t not in ("TRIM_HORIZON", "LATEST", "SHARD_END", "AT_TIMESTAMP")
    )
)
def test_any_checkpoint_that_is_not_a_sequence_or_sentinel_is_marked(text):
    lease = parse_lease(kcl_lease("shardId-000000000000", checkpoint=text))
    assert lease.problem and "unreadable checkpoint" in lease.problem


def test_a_non_numeric_counter_is_marked_not_fatal():
    item = kcl_lease("shardId-000000000000")
    item["leaseCounter"] = {"S": "seven"}
    assert "leaseCounter" in parse_lease(item).problem


def test_lease_table_recognition():
    assert is_lease_key_schema({"KeySchema": [{"AttributeName": "leaseKey", "KeyType": "HASH"}]})
    assert not is_lease_key_schema({"KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]})
    assert not is_lease_key_schema(
        {"KeySchema": [{"AttributeName": "leaseKey", "KeyType": "HASH"}, {"AttributeName": "x", "KeyType": "RANGE"}]}
    )
    shards = shards_of(2)
    ids = [s.shard_id for s in shards]
    assert table_matches_stream([kcl_lease(ids[0])], "s", shards)
    assert not table_matches_stream([kcl_lease("shardId-000000000077")], "s", shards)
    assert not table_matches_stream([{"leaseKey": {"S": ids[0]}}], "s", shards)  # keyed alike, not a lease
    # a lease on a shard the stream lacks makes the table another stream's, however many others fit
    assert not table_matches_stream([kcl_lease(ids[0]), kcl_lease("shardId-000000000077")], "s", shards)
    # the whole table must cover every open shard (itself or an ancestor)
    assert not table_matches_stream([kcl_lease(ids[0])], "s", shards, whole_table=True)
    assert table_matches_stream([kcl_lease(i) for i in ids], "s", shards, whole_table=True)
    # a checkpoint below the shard's first sequence number is another stream's
    numbered = [replace(shard, starting_sequence_number="1000") for shard in shards]
    assert table_matches_stream([kcl_lease(ids[0], checkpoint="1500")], "s", numbered)
    assert not table_matches_stream([kcl_lease(ids[0], checkpoint="999")], "s", numbered)
    # multi-stream leases name their stream
    assert table_matches_stream([kcl_lease(ids[0], lease_key=f"1:s:1:{ids[0]}")], "s", shards)
    assert not table_matches_stream([kcl_lease(ids[0], lease_key=f"1:t:1:{ids[0]}")], "s", shards)


def test_a_lease_of_another_streams_shard_of_the_same_id_does_not_match():
    """Every stream has shardId-000000000000: another stream's lease of it differs in range, parents or
    checkpoint, and one such lease is enough to tell the table is not this stream's."""
    shards = [replace(shard, starting_sequence_number="5000") for shard in shards_of(2)]
    first = shards[0]
    own_range = (first.starting_hash_key, first.ending_hash_key)
    assert table_matches_stream([kcl_lease(first.shard_id, hash_range=own_range, checkpoint="6000")], "s", shards)
    quarter = (0, HASH_SPACE // 4 - 1)  # shard 0 of a 4-shard stream
    assert not table_matches_stream([kcl_lease(first.shard_id, hash_range=quarter)], "s", shards)
    assert not table_matches_stream([kcl_lease(first.shard_id, checkpoint="4999")], "s", shards)  # before it began
    assert not table_matches_stream([kcl_lease(first.shard_id, parents=("shardId-000000000009",))], "s", shards)
    mixed = [kcl_lease(first.shard_id, hash_range=own_range), kcl_lease(shards[1].shard_id, hash_range=quarter)]
    assert not table_matches_stream(mixed, "s", shards)


def test_states():
    behind = ShardLag("shardId-000000000000", 5, 100)
    caught_up = ShardLag("shardId-000000000000", 0, 0)
    over = ShardLag("shardId-000000000000", None, 100, over_cap=True)
    lease = parse_lease(kcl_lease("shardId-000000000000", counter=7, checkpoint=SEQ))
    assert lease_state(lease, behind, None) == OWNED  # one poll cannot see a stall
    assert lease_state(lease, behind, 7) == STALLED
    assert lease_state(lease, over, 7) == STALLED
    assert lease_state(lease, caught_up, 7) == OWNED  # nothing waiting: an idle consumer is not stalled
    assert lease_state(lease, behind, 6) == OWNED
    assert lease_state(parse_lease(kcl_lease("shardId-000000000000", owner=None)), behind, None) == UNOWNED
    assert lease_state(parse_lease(kcl_lease("shardId-000000000000", checkpoint="SHARD_END")), None, 7) == FINISHED


def test_stall_tracker_carries_counters_between_polls():
    shards = shards_of(1)
    lease = parse_lease(kcl_lease(shards[0].shard_id, counter=3, checkpoint=SEQ))
    lags = {shards[0].shard_id: ShardLag(shards[0].shard_id, 4, 10)}
    tracker = StallTracker()
    first = build_report("s", "t", [lease], shards, lags, [], scan_cap=10, tracker=tracker)
    second = build_report("s", "t", [lease], shards, lags, [], scan_cap=10, tracker=tracker)
    assert (first.rows[0].state, second.rows[0].state) == (OWNED, STALLED)


def test_barrier_names_unfinished_parents_and_the_lag_a_change_closes():
    parent = Shard("shardId-000000000000", 0, 2**128 - 1, ending_sequence_number="9")
    low = Shard("shardId-000000000001", 0, 2**127 - 1, parent_shard_id=parent.shard_id)
    high = Shard("shardId-000000000002", 2**127, 2**128 - 1, parent_shard_id=parent.shard_id)
    shards = [parent, low, high]
    leases = [
        parse_lease(kcl_lease(parent.shard_id, checkpoint=SEQ)),
        parse_lease(kcl_lease(low.shard_id, checkpoint=SEQ)),
    ]
    lags = {parent.shard_id: ShardLag(parent.shard_id, 12, 5000), low.shard_id: ShardLag(low.shard_id, 3, 100)}
    report = build_report("s", "t", leases, shards, lags, [], scan_cap=10)
    assert report.unleased_shards == (high.shard_id,) and report.waiting_on_parents == {
        high.shard_id: (parent.shard_id,)
    }
    barrier = barrier_analysis(report, shards, changed_shards([low, high], [high.shard_id]))
    assert [s.shard_id for s in barrier.unfinished_parents] == [parent.shard_id]
    assert [s.shard_id for s in barrier.behind_barrier] == [low.shard_id] and barrier.records_behind == 3
    assert barrier.waiting_changed == (low.shard_id,) and barrier.blocking
    finished = build_report(
        "s", "t", [parse_lease(kcl_lease(low.shard_id, checkpoint="SHARD_END"))], [low], {}, [], scan_cap=10
    )
    assert not barrier_analysis(finished, [low], [low.shard_id]).blocking


def test_recommend_splits_a_hot_shard_merges_cold_pairs_and_rescales_when_most_are_hot():
    shards = shards_of(4)
    ids = [s.shard_id for s in shards]

    def loads(*uses):
        return {i: ShardLoad(i, u, u * 1024 * 1024, u * 1000) for i, u in zip(ids, uses)}

    hot = recommend("s", shards, loads(1.5, 0.3, 0.3, 0.3), target=0.7)
    assert hot.commands == (f"kconsole plan split s --shard {ids[0]} --at-median-of-recent",)
    assert hot.recommended_shards == 6 and "3 pieces" in hot.reasons[0]
    cold = recommend("s", shards, loads(0.1, 0.1, 0.1, 0.5), target=0.7)
    assert cold.commands == (f"kconsole plan merge s --shard {ids[0]} --adjacent {ids[1]}",)
    assert cold.recommended_shards == 3
    most = recommend("s", shards, loads(1.0, 1.0, 0.9, 0.2), target=0.7)
    assert most.commands == ("kconsole plan scale s --to 6",)
    fine = recommend("s", shards, loads(0.5, 0.5, 0.5, 0.5), target=0.7)
    assert fine.commands == () and fine.recommended_shards == 4
    on_demand = recommend("s", shards, loads(1.5, 0.3, 0.3, 0.3), target=0.7, on_demand=True)
    assert on_demand.commands == () and "ON_DEMAND" in on_demand.reasons[0]
    # Reads count too: three polling consumers of 0.6 MiB/s need 1.8 of the shard's 2 MiB/s.
    readers = recommend(
        "s", shards[:1], {ids[0]: ShardLoad(ids[0], 0.2, 0.6 * 1024 * 1024, 10)}, target=0.7, shared_readers=3
    )
    assert readers.recommended_shards == 2
