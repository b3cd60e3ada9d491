"""PutRecords entries the backend checks itself skip botocore's second check; anything else keeps it."""

from __future__ import annotations

import pytest

from console.errors import ConsoleError


async def test_checked_entries_land_and_unchecked_ones_still_meet_botocores_check(kinesis, make_stream):
    name = await make_stream(shards=1)
    reply = await kinesis.put_records(
        name, [{"Data": b"a", "PartitionKey": "k1"}, {"Data": b"b", "PartitionKey": "k2"}]
    )
    assert reply["FailedRecordCount"] == 0 and len(reply["Records"]) == 2
    # Refused before anything is sent, in botocore's words (the server would name it otherwise).
    for records in (
        [{"Data": b"x", "PartitionKey": ""}],
        [],
    ):
        with pytest.raises(ConsoleError, match="Parameter validation failed"):
            await kinesis.put_records(name, records)
    # An entry of another shape is rebuilt as AWS takes it (an int hash key in decimal) and lands.
    mixed = await kinesis.put_records(
        name,
        [{"Data": b"c", "PartitionKey": "k3"}, {"Data": bytearray(b"d"), "PartitionKey": "k4", "ExplicitHashKey": 5}],
    )
    assert mixed["FailedRecordCount"] == 0
    iterator = await kinesis.get_shard_iterator(name, "shardId-000000000000", "TRIM_HORIZON")
    landed = [record["PartitionKey"] for record in (await kinesis.get_records(iterator))["Records"]]
    assert landed == ["k1", "k2", "k3", "k4"]
