"""A copy's checkpoint: what the destination acknowledged, per source shard, settled in sequence order."""

from __future__ import annotations

import json

import pytest
from aws_kinesis_agg.aggregator import AggRecord

from console.errors import BadInput
from console.produce.copy import CopyCheckpoint, records_to_copy
from console.read.where import RecordFilter

IDENTITY = {
    "source": "a",
    "source_at": "local",
    "destination": "b",
    "destination_at": "local",
    "where": None,
    "deaggregate": False,
    "from": "trim-horizon",
    "to": "2026-11-22T20:00:00.000Z",
}


def test_done_through_moves_only_past_a_run_of_acknowledged_records():
    checkpoint = CopyCheckpoint(dict(IDENTITY))
    for sequence in ("1", "2", "3", "4"):
        checkpoint.read("s0", sequence, [sequence])
    checkpoint.read("s0", "5", [])  # filtered out: nothing to wait for
    checkpoint.shard_read_to_end("s0")
    checkpoint.shards["s0"].acknowledged |= {"1", "2", "4"}
    checkpoint.settle()
    state = checkpoint.to_json()["shards"]["s0"]
    assert state == {"done_through": "2", "finished": False, "acknowledged": ["4"], "sent_through": None}
    checkpoint.shards["s0"].acknowledged.add("3")
    checkpoint.settle()
    assert checkpoint.to_json()["shards"]["s0"] == {
        "done_through": "5",
        "finished": True,
        "acknowledged": [],
        "sent_through": None,
    }


def test_a_checkpoint_round_trips_and_refuses_another_copys():
    checkpoint = CopyCheckpoint(dict(IDENTITY))
    checkpoint.read("s0", "1", ["1"])
    checkpoint.read("s0", "2", ["2"])
    checkpoint.shards["s0"].acknowledged.add("2")
    checkpoint.settle()
    document = json.loads(json.dumps(checkpoint.to_json()))
    again = CopyCheckpoint.from_json(document, dict(IDENTITY), "cp.json")
    assert again.resume_after == {} and again.shards["s0"].acknowledged == {"2"}
    with pytest.raises(BadInput, match="another copy"):
        CopyCheckpoint.from_json(document, {**IDENTITY, "destination": "c"}, "cp.json")
    with pytest.raises(BadInput, match="not a kconsole copy checkpoint"):
        CopyCheckpoint.from_json({"version": 1, "copy": IDENTITY, "shards": {"s0": "x"}}, dict(IDENTITY), "cp.json")


def test_an_aggregate_is_copied_whole_unless_deaggregated():
    packer = AggRecord()
    packer.add_user_record("inner-a", b'{"tenant": "42"}', "7")
    packer.add_user_record("inner-b", b'{"tenant": "1"}')
    key, _, blob = packer.get_contents()
    raw = {"Data": blob, "PartitionKey": key, "SequenceNumber": "9"}
    [whole], passed = records_to_copy(raw, "s0", where=None, deaggregate=False)
    assert passed and whole.data == blob and whole.key == key and whole.unit == "9"
    where = RecordFilter("data.tenant == '42'")
    [whole], _ = records_to_copy(raw, "s0", where=where, deaggregate=False)
    assert whole.data == blob  # kept whole: one of its user records passes
    [inner], _ = records_to_copy(raw, "s0", where=where, deaggregate=True)
    assert (inner.key, inner.data, inner.explicit_hash_key, inner.unit) == ("inner-a", b'{"tenant": "42"}', 7, "9/0")
    assert records_to_copy(raw, "s0", where=RecordFilter("data.tenant == 'x'"), deaggregate=False) == ([], False)
