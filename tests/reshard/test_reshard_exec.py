"""Executing reshard plans against the embedded local Kinesis (patched moto over HTTP).

For split, merge and make-even the open shards afterwards must equal the plan exactly (ids, ranges,
parents). Refusals must leave the server's shard list untouched and the action log empty.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from console.errors import ConsoleError, LimitExceeded, PlanRejected, ResourceInUse
from console.keyspace.hashkeys import HASH_SPACE, even_split, md5_hash_key
from console.reshard.actionlog import ActionLog
from console.reshard.execute import Executor, open_in_order
from console.reshard.limits import StreamContext
from console.reshard.plan import (
    KeySample,
    median_hash_key,
    midpoint,
    plan_even,
    plan_merge,
    plan_scale,
    plan_split,
    render_plan,
)
from console.reshard.recent import median_split_of_recent, sample_recent_keys
from tests.reshard.helpers_reshard import keys_hashing_into


def results(log):
    """The plans' summary entries (each call also has its intent and outcome entries)."""
    return [entry for entry in log.entries() if entry.get("kind", "result") == "result"]


def open_triples(shards):
    return [
        (s.shard_id, s.starting_hash_key, s.ending_hash_key, s.parent_shard_id, s.adjacent_parent_shard_id)
        for s in open_in_order(shards)
    ]


def planned_triples(plan):
    return [
        (s.shard_id, s.starting_hash_key, s.ending_hash_key, s.parent_shard_id, s.adjacent_parent_shard_id)
        for s in plan.after
    ]


@pytest.fixture
def action_log(tmp_path):
    return ActionLog(tmp_path / "actions.jsonl")


async def run(kinesis, stream, build, action_log, *, wait=True, executor=None):
    executor = executor or Executor(kinesis, stream, action_log=action_log, poll_interval=0.05, timeout=20)
    _, shards, context = await executor.snapshot()
    plan = build(shards, context)
    return plan, await executor.execute(build, expected=plan, wait=wait)


async def test_split_at_midpoint_matches_plan_exactly(kinesis, make_stream, action_log):
    stream = await make_stream(shards=4)

    def build(shards, context):
        target = next(s for s in shards if s.shard_id == "shardId-000000000001")
        return plan_split(shards, target.shard_id, midpoint(target), context=context)

    plan, result = await run(kinesis, stream, build, action_log)
    observed = await kinesis.all_shards(stream)
    assert open_triples(observed) == planned_triples(plan)
    assert [s.shard_id for s in plan.after if not s.unchanged] == ["shardId-000000000004", "shardId-000000000005"]
    assert result.differences == ()
    [entry] = results(action_log)
    assert entry["stream"] == stream and entry["action"] == "split" and entry["calls"] == {"SplitShard": 1}
    assert len(entry["before"]) == 4 and len(entry["after"]) == 5 and entry["result"] == "done"


async def test_split_at_median_of_sample_keys_divides_them_evenly(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    sample = KeySample.from_partition_keys([f"order-{i}" for i in range(400)])

    def build(shards, context):
        target = next(s for s in shards if s.shard_id == "shardId-000000000000")
        return plan_split(shards, target.shard_id, median_hash_key(target, sample), context=context, sample=sample)

    plan, _ = await run(kinesis, stream, build, action_log)
    observed = open_in_order(await kinesis.all_shards(stream))
    assert open_triples(observed) == planned_triples(plan)
    low, high = observed[0], observed[1]
    in_low = sum(1 for h in sample.hash_keys if low.contains(h))
    in_high = sum(1 for h in sample.hash_keys if high.contains(h))
    assert abs(in_low - in_high) <= 1 and in_low + in_high > 150


# ---------------------------------------------------------------- split at the median of recent records


async def put_all(kinesis, stream, keys, data=b"{}"):
    for offset in range(0, len(keys), 500):
        answer = await kinesis.put_records(
            stream, [{"Data": data, "PartitionKey": k} for k in keys[offset : offset + 500]]
        )
        assert not answer.get("FailedRecordCount")


async def test_median_of_recent_records_divides_skewed_traffic_evenly(kinesis, make_stream):
    stream = await make_stream(shards=2)
    shard = open_in_order(await kinesis.all_shards(stream))[1]
    span = shard.ending_hash_key - shard.starting_hash_key + 1
    # Skewed: 150 keys crowd the lowest tenth of the shard's range, 50 spread over the rest, so the
    # midpoint would give the lower child about 87% of the traffic.
    crowded = keys_hashing_into(shard.starting_hash_key, shard.starting_hash_key + span // 10, 150, "crowd")
    spread = keys_hashing_into(shard.starting_hash_key + span // 10 + 1, shard.ending_hash_key, 50, "spread")
    written = crowded + spread + crowded[:1]  # one key twice: 201 records, 200 distinct keys
    await put_all(kinesis, stream, written)
    await put_all(kinesis, stream, keys_hashing_into(0, shard.starting_hash_key - 1, 30, "other"))  # the other shard

    median = await median_split_of_recent(kinesis, stream, shard)
    assert shard.starting_hash_key < median.key <= shard.ending_hash_key
    below = sum(md5_hash_key(k) < median.key for k in written)
    assert abs(below - (len(written) - below)) <= 1
    assert (median.lower, median.upper) == (below, len(written) - below)
    assert (median.sampled, median.inside, median.distinct_keys) == (201, 201, 200)
    assert median.unit == "records" and "the last 300 s" in median.source
    plan = plan_split(await kinesis.all_shards(stream), shard.shard_id, median.key, median=median)
    assert plan.to_json()["median_split"]["lower"] == below and plan.ok
    shares = f"{below / len(written):.1%} / {1 - below / len(written):.1%}"
    assert "201 sampled records (200 distinct keys)" in render_plan(plan) and shares in render_plan(plan)


async def test_recent_sample_is_bounded_by_time_and_count(kinesis, make_stream):
    stream = await make_stream(shards=1)
    await put_all(kinesis, stream, [f"old-{i}" for i in range(40)])
    await asyncio.sleep(0.6)
    window_start = time.time()  # the window starts here, 0.6 s clear of both batches however slow the run
    await asyncio.sleep(0.6)
    fresh = [f"new-{i}" for i in range(60)]
    await put_all(kinesis, stream, fresh)
    recent = await sample_recent_keys(kinesis, stream, "shardId-000000000000", seconds=time.time() - window_start)
    assert list(recent.sample.keys) == fresh and not recent.limit_reached
    capped = await sample_recent_keys(kinesis, stream, "shardId-000000000000", seconds=60, limit=25)
    assert list(capped.sample.keys) == [f"old-{i}" for i in range(25)]
    assert capped.limit_reached and "--sample-limit" in capped.describe()


async def test_recent_sample_uses_kpl_explicit_hash_keys(kinesis, make_stream):
    from aws_kinesis_agg.aggregator import AggRecord

    stream = await make_stream(shards=1)
    packer = AggRecord()
    for hash_key in (10, 20, 30, 40):  # one partition key: by MD5 alone no split could divide them
        packer.add_user_record("device", b"{}", str(hash_key))
    outer_key, outer_hash_key, blob = packer.get_contents()
    await kinesis.put_record(stream, blob, outer_key, explicit_hash_key=int(outer_hash_key))
    [shard] = await kinesis.all_shards(stream)
    median = await median_split_of_recent(kinesis, stream, shard)
    assert 20 < median.key <= 30 and (median.lower, median.upper) == (2, 2)
    assert median.distinct_keys == 1 and median.inside == 4


async def test_shard_without_recent_records_fails_pointing_to_midpoint(kinesis, make_stream):
    stream = await make_stream(shards=2)
    shard = open_in_order(await kinesis.all_shards(stream))[0]
    with pytest.raises(ConsoleError) as caught:
        await median_split_of_recent(kinesis, stream, shard)
    assert caught.value.exit_code == 1 and caught.value.code == "no_recent_records"
    assert "--at midpoint" in caught.value.message and "\n" not in caught.value.message


async def test_merge_matches_plan_exactly_even_when_named_upper_first(kinesis, make_stream, action_log):
    stream = await make_stream(shards=4)
    build = lambda shards, context: plan_merge(shards, "shardId-000000000003", "shardId-000000000002", context=context)
    plan, _ = await run(kinesis, stream, build, action_log)
    assert open_triples(await kinesis.all_shards(stream)) == planned_triples(plan)
    child = [s for s in plan.after if not s.unchanged]
    assert [(c.shard_id, c.parent_shard_id, c.adjacent_parent_shard_id) for c in child] == [
        ("shardId-000000000004", "shardId-000000000002", "shardId-000000000003")
    ]


async def test_make_even_runs_every_step_and_ends_equal(kinesis, make_stream, action_log):
    stream = await make_stream(shards=3)
    quarter = HASH_SPACE // 4
    await kinesis.split_shard(stream, "shardId-000000000000", quarter)  # uneven: 1/4, 1/12, 1/3, 1/3
    build = lambda shards, context: plan_even(shards, context=context)
    plan, _result = await run(kinesis, stream, build, action_log)
    assert len(plan.operations) >= 3
    observed = await kinesis.all_shards(stream)
    assert open_triples(observed) == planned_triples(plan)
    assert [(s.starting_hash_key, s.ending_hash_key) for s in open_in_order(observed)] == even_split(4)
    assert results(action_log)[0]["calls"]["SplitShard"] == plan.split_steps


async def test_rescale_doubling_matches_the_documented_even_ranges(kinesis, make_stream, action_log):
    stream = await make_stream(shards=4)
    plan, _result = await run(kinesis, stream, lambda s, c: plan_scale(s, 8, context=c), action_log)
    observed = open_in_order(await kinesis.all_shards(stream))
    assert [(s.starting_hash_key, s.ending_hash_key) for s in observed] == [s.range for s in plan.after]
    assert plan.short_lived_shards == 0 and plan.split_steps == 4
    assert results(action_log)[0]["calls"] == {"UpdateShardCount": 1}


async def test_rescale_to_a_non_multiple_matches_plan_ranges_and_step_count(kinesis, make_stream, action_log):
    """AWS documents UNIFORM_SCALING as "shards of equal size". Unpatched moto 5.2.5 differs: it splits
    every shard at a float midpoint and merges neighbouring pairs from the low end (4 -> 6 gives
    shares 1/4, 1/4, 1/8 x 4); console/localserver/fixes.py makes the embedded server scale
    uniformly, so here the server's ranges must equal the plan's even_split(6) exactly, and the
    number of shards it created must equal our step model (2 per split + 1 per merge)."""
    stream = await make_stream(shards=4)
    plan, result = await run(kinesis, stream, lambda s, c: plan_scale(s, 6, context=c), action_log)
    every_shard = await kinesis.all_shards(stream)
    observed = open_in_order(every_shard)
    assert [(s.starting_hash_key, s.ending_hash_key) for s in observed] == [s.range for s in plan.after]
    assert [s.range for s in plan.after] == even_split(6)
    assert result.differences == ()
    assert len(every_shard) - 4 == 2 * plan.split_steps + plan.merge_steps
    assert plan.short_lived_shards == len(every_shard) - 4 - 6


async def test_stale_plan_is_rejected_naming_the_change(kinesis, make_stream, action_log):
    stream = await make_stream(shards=4)
    executor = Executor(kinesis, stream, action_log=action_log, poll_interval=0.05)
    _, shards, context = await executor.snapshot()
    build = lambda s, c: plan_merge(s, "shardId-000000000000", "shardId-000000000001", context=c)
    plan = build(shards, context)
    await kinesis.split_shard(stream, "shardId-000000000000", HASH_SPACE // 8)  # another operator
    changed = open_triples(await kinesis.all_shards(stream))
    with pytest.raises(PlanRejected, match="shardId-000000000000 is no longer open"):
        await executor.execute(build, expected=plan, wait=True)
    assert open_triples(await kinesis.all_shards(stream)) == changed
    assert action_log.entries() == []


async def test_breached_limit_at_execution_makes_no_call(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    before = open_triples(await kinesis.all_shards(stream))
    with pytest.raises(PlanRejected, match="more than double"):
        await run(kinesis, stream, lambda s, c: plan_scale(s, 5, context=c), action_log)
    assert open_triples(await kinesis.all_shards(stream)) == before
    assert action_log.entries() == []


async def test_daily_update_shard_count_quota_counts_the_action_log(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    for _ in range(10):
        action_log.append({"stream": stream, "backend": kinesis.label, "calls": {"UpdateShardCount": 1}})
    before = open_triples(await kinesis.all_shards(stream))
    with pytest.raises(PlanRejected, match="10 times per rolling 24 hours"):
        await run(kinesis, stream, lambda s, c: plan_scale(s, 4, context=c), action_log)
    assert open_triples(await kinesis.all_shards(stream)) == before
    assert len(action_log.entries()) == 10


class FaultyBackend:
    """The real backend, with faults no local server produces injected at its call boundary."""

    def __init__(self, real, *, statuses=(), split_errors=(), scale_errors=()) -> None:
        self.real, self.statuses = real, list(statuses)
        self.split_errors, self.scale_errors = list(split_errors), list(scale_errors)
        self.label, self.region = real.label, real.region

    def __getattr__(self, name):
        return getattr(self.real, name)

    async def describe_stream_summary(self, stream):
        summary = await self.real.describe_stream_summary(stream)
        if self.statuses:
            from dataclasses import replace

            return replace(summary, status=self.statuses.pop(0))
        return summary

    async def split_shard(self, *args):
        if self.split_errors:
            raise self.split_errors.pop(0)
        return await self.real.split_shard(*args)

    async def update_shard_count(self, *args):
        if self.scale_errors:
            raise self.scale_errors.pop(0)
        return await self.real.update_shard_count(*args)


def split_first(shards, context):
    target = next(s for s in shards if s.shard_id == "shardId-000000000000")
    return plan_split(shards, target.shard_id, midpoint(target), context=context)


async def test_updating_stream_without_wait_is_explained_and_nothing_called(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    faulty = FaultyBackend(kinesis, statuses=["ACTIVE", "UPDATING"])
    executor = Executor(faulty, stream, action_log=action_log, poll_interval=0.01)
    _, shards, context = await executor.snapshot()
    plan = split_first(shards, context)
    with pytest.raises(ResourceInUse, match=r"UPDATING.*--wait"):
        await executor.execute(split_first, expected=plan, wait=False)
    assert len(await kinesis.all_shards(stream)) == 2


async def test_updating_stream_with_wait_polls_and_reports_progress(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    progress = []
    faulty = FaultyBackend(kinesis, statuses=["ACTIVE", "UPDATING", "UPDATING", "UPDATING", "ACTIVE"])
    executor = Executor(faulty, stream, action_log=action_log, poll_interval=0.01, progress=progress.append)
    _, shards, context = await executor.snapshot()
    plan = split_first(shards, context)
    result = await executor.execute(split_first, expected=plan, wait=True)
    assert result.differences == () and len(result.after) == 3
    assert sum("UPDATING" in line for line in progress) == 2


async def test_resource_in_use_is_retried_after_waiting(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    faulty = FaultyBackend(kinesis, split_errors=[ResourceInUse("stream busy")])
    progress = []
    executor = Executor(faulty, stream, action_log=action_log, poll_interval=0.01, progress=progress.append)
    _, shards, context = await executor.snapshot()
    result = await executor.execute(split_first, expected=split_first(shards, context), wait=True)
    assert result.differences == () and any("ResourceInUse" in line for line in progress)


async def test_update_shard_count_limit_exceeded_is_explained_not_retried(kinesis, make_stream, action_log):
    stream = await make_stream(shards=2)
    faulty = FaultyBackend(kinesis, scale_errors=[LimitExceeded("Rate exceeded"), LimitExceeded("again")])
    executor = Executor(faulty, stream, action_log=action_log, poll_interval=0.01)
    _, shards, context = await executor.snapshot()
    build = lambda s, c: plan_scale(s, 4, context=c)
    with pytest.raises(LimitExceeded, match="10 scaling calls in the last 24 hours"):
        await executor.execute(build, expected=build(shards, context), wait=True)
    assert len(faulty.scale_errors) == 1  # one call, no retry
    assert len(await kinesis.all_shards(stream)) == 2


async def test_on_demand_context_is_rejected_before_any_call(kinesis, make_stream):
    stream = await make_stream(shards=2)
    shards = await kinesis.all_shards(stream)
    plan = plan_scale(shards, 4, context=StreamContext(mode="ON_DEMAND"))
    assert [b.limit for b in plan.breaches] == ["on_demand_stream"]


# ---------------------------------------------------------------- kinesis-mock cross-check


@pytest.fixture
async def mock_backend(kinesis_mock):
    from console.backend import BackendConfig, open_backend

    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=kinesis_mock.endpoint_url)
    async with open_backend(config) as backend:
        yield backend


@pytest.mark.kinesis_mock
async def test_kinesis_mock_split_goes_through_updating_and_matches_plan(mock_backend, action_log):
    """kinesis-mock reports UPDATING for a while after SplitShard (as AWS does), so --wait polls for real."""
    from tests.conftest import unique_stream_name

    stream = unique_stream_name("reshard")
    await mock_backend.create_stream(stream, 2)
    await mock_backend.wait_for_active(stream)
    progress = []
    executor = Executor(mock_backend, stream, action_log=action_log, poll_interval=0.01, progress=progress.append)
    try:
        _, shards, context = await executor.snapshot()
        result = await executor.execute(split_first, expected=split_first(shards, context), wait=True)
        assert open_triples(await mock_backend.all_shards(stream)) == planned_triples(result.plan)
        assert result.differences == () and result.status == "ACTIVE"
        if progress:  # UPDATING lasts 50 ms here, so whether a poll sees it is a matter of timing
            assert "UPDATING" in progress[0] and "ACTIVE after" in progress[-1]
    finally:
        await mock_backend.delete_stream(stream)


@pytest.mark.kinesis_mock
async def test_kinesis_mock_non_uniform_rescale_is_reported_not_hidden(mock_backend, action_log):
    """kinesis-mock's UpdateShardCount 4 -> 6 splits two shards unevenly instead of producing AWS's
    documented equal shares; execution must report the difference rather than claim success."""
    from tests.conftest import unique_stream_name

    stream = unique_stream_name("reshard")
    await mock_backend.create_stream(stream, 4)
    await mock_backend.wait_for_active(stream)
    executor = Executor(mock_backend, stream, action_log=action_log, poll_interval=0.01)
    try:
        _, shards, context = await executor.snapshot()
        build = lambda s, c: plan_scale(s, 6, context=c)
        result = await executor.execute(build, expected=build(shards, context), wait=True)
        observed = [
            (s.starting_hash_key, s.ending_hash_key) for s in open_in_order(await mock_backend.all_shards(stream))
        ]
        assert len(observed) == 6
        assert bool(result.differences) == (observed != even_split(6))
    finally:
        await mock_backend.delete_stream(stream)


@pytest.mark.parametrize("start, target", [(4, 6), (6, 4), (6, 3)])
async def test_a_rescale_that_ends_as_planned_is_done_however_deep_its_lineage(
    kinesis, make_stream, action_log, start, target
):
    """The embedded server rescales 4 -> 6, 6 -> 4 and 6 -> 3 through three generations of shards; the
    result equals the plan, so it is the plan's doing, not someone else's."""
    stream = await make_stream(shards=start)
    plan, result = await run(kinesis, stream, lambda s, c: plan_scale(s, target, context=c), action_log)
    observed = open_in_order(await kinesis.all_shards(stream))
    assert [(s.starting_hash_key, s.ending_hash_key) for s in observed] == [s.range for s in plan.after]
    assert result.changed_by_others == (), result.changed_by_others
    assert results(action_log)[0]["result"] == "done"


class MergedFirst:
    """Another operator's merge of shards 0 and 1 lands on the real server just before our split is sent."""

    def __init__(self, real, stream) -> None:
        self.real, self.stream = real, stream
        self.label, self.region = real.label, real.region

    def __getattr__(self, name):
        return getattr(self.real, name)

    async def split_shard(self, *args):
        await self.real.merge_shards(self.stream, "shardId-000000000000", "shardId-000000000001")
        for _ in range(100):
            if (await self.real.describe_stream_summary(self.stream)).status == "ACTIVE":
                break
            await asyncio.sleep(0.05)
        return await self.real.split_shard(*args)


async def test_the_loser_of_a_split_against_merge_race_is_refused_not_bad_input(kinesis, make_stream, action_log):
    """The server refuses the split of a shard the merge closed (invalid then, by the stream's state):
    exit 1, naming the change, never exit 2, which is for the user's own bad input."""
    stream = await make_stream(shards=2)
    executor = Executor(MergedFirst(kinesis, stream), stream, action_log=action_log, poll_interval=0.05, timeout=20)
    with pytest.raises(ConsoleError) as raised:
        await run(kinesis, stream, split_first, action_log, executor=executor)
    assert isinstance(raised.value, PlanRejected) and raised.value.exit_code == 1, raised.value
    assert "changed by someone else meanwhile" in raised.value.message
    assert "shardId-000000000000 is no longer open" in raised.value.message
