"""Heat of records without a partition key (an AUTO stream's): counted as load, shown as —, never a
KeyError; on an AUTO stream the keys are only as sent, so no split at their median is suggested."""

from __future__ import annotations

from console.commands.heat import advise, render
from console.heat.rates import observations_from_records
from console.heat.stream_heat import StreamHeat
from console.topology.model import Shard

HALF = 2**127


def shards() -> list[Shard]:
    return [Shard("shardId-000000000000", 0, HALF - 1), Shard("shardId-000000000001", HALF, 2**128 - 1)]


def test_keyless_records_are_load_without_a_key():
    records = [{"ApproximateArrivalTimestamp": 100.0 + n / 100, "Data": b"x" * 10} for n in range(30)]
    records += [{"ApproximateArrivalTimestamp": 100.5, "Data": b"y" * 10, "PartitionKey": "hot"} for _ in range(10)]
    observations = observations_from_records(records)
    assert observations[0] == (100.0, None, 10) and observations[-1] == (100.5, "hot", 13)
    for auto in (False, True):
        heat = StreamHeat("s", shards(), window_start=100.0, auto_distribution=auto)
        assert heat.observe("shardId-000000000000", observations) == 40
        snapshot = heat.snapshot(102.0)
        shard = snapshot.shards[0]
        assert (shard.records, shard.keyless_records) == (40, 30)
        assert [row.key for row in shard.top_keys] == ["hot"]
        assert snapshot.to_json()["keyless_records"] == 30
        text = render(snapshot, advise(snapshot))
        assert "\u2014 75%" in text and "30 record(s) sent without a partition key" in text
        if auto:
            assert shard.split is None and text.splitlines()[0].startswith("s uses AUTO record distribution")
            assert "KEYS AS SENT" in text and "split at the median" not in text
        else:
            assert shard.split is not None and "TOP KEYS" in text
