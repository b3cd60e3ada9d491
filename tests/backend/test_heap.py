"""The collector while the backend loads: paused for the loading, restored after, the loaded objects
frozen once per process; and the CloudWatch client, whose requests the backend builds, unchecked."""

from __future__ import annotations

import gc

import pytest

from console.backend import heap
from console.localserver.store_heap import StoreHeap


@pytest.fixture
def fresh_heap(monkeypatch):
    monkeypatch.setattr(heap, "_frozen", False)
    frozen = []
    monkeypatch.setattr(heap.gc, "freeze", lambda: frozen.append(gc.get_count()))
    enabled = gc.isenabled()
    yield frozen
    (gc.enable if enabled else gc.disable)()


def test_the_collector_is_paused_while_loading_and_as_it_was_after(fresh_heap):
    gc.enable()
    with heap.loading():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with heap.loading():
        assert not gc.isenabled()
    assert not gc.isenabled()  # a caller that had it off keeps it off
    assert fresh_heap == []  # no freeze unless asked


def test_the_loaded_objects_are_frozen_once_and_not_after_an_error(fresh_heap):
    gc.enable()
    with pytest.raises(RuntimeError), heap.loading(freeze=True):
        raise RuntimeError("no client")
    assert fresh_heap == [] and gc.isenabled()
    with heap.loading(freeze=True):
        pass
    with heap.loading(freeze=True):  # a second backend: what is pending now may be garbage
        pass
    assert len(fresh_heap) == 1 and gc.isenabled()


async def test_cloudwatch_skips_botocores_parameter_check_and_kinesis_keeps_it(kinesis):
    from datetime import UTC, datetime, timedelta

    from botocore.exceptions import ParamValidationError

    end = datetime.now(UTC)
    query = {
        "Id": "m0",
        "MetricStat": {
            "Metric": {"Namespace": "AWS/Kinesis", "MetricName": "IncomingBytes"},
            "Period": 60,
            "Stat": "Sum",
        },
    }
    cloudwatch = await kinesis._side_client("cloudwatch")
    # botocore's check would refuse a number where the model says string; unchecked, it is sent as is.
    answer = await cloudwatch.get_metric_data(
        MetricDataQueries=[query | {"Label": 5}], StartTime=end - timedelta(minutes=5), EndTime=end
    )
    assert [result["Id"] for result in answer["MetricDataResults"]] == ["m0"]
    with pytest.raises(ParamValidationError):
        await kinesis._client.list_streams(Limit="5")
    dynamodb = await kinesis._side_client("dynamodb")
    with pytest.raises(ParamValidationError):
        await dynamodb.list_tables(Limit="5")


class Node:
    """A container the collector tracks, which can be weakly referenced."""

    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_embedded_servers_store_freezes_what_it_holds_and_collects_first():
    import weakref

    store = StoreHeap(every=3)
    try:
        held = [Node() for _ in range(1000)]  # what the server stores: alive until released
        cycle = Node()
        cycle.other = cycle  # garbage only the collector frees
        gone = weakref.ref(cycle)
        del cycle
        before = gc.get_freeze_count()
        store.stored(2)
        assert gc.get_freeze_count() == before and gone() is not None  # not yet: 2 of 3
        store.stored(1)
        assert gone() is None  # collected before the freeze, not frozen with the rest
        assert gc.get_freeze_count() >= before + len(held)
        store.stored(2)
        assert store.since_freeze == 2
        store.released()  # a stream deleted: everything back in the collector's reach
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
