"""The embedded server's indexed reads answer what moto's own scan answers, and its short path shows
today's summary members exactly as moto's full path does.

GetRecords on the patched server finds its place by bisection over the shard's sequence numbers;
moto scans the shard from its first record. The same records are put into a one-shard stream on both
servers (one shard: unpatched moto routes correctly there) and read back from every kind of position.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from tests.backend.test_moto_compat_today import client_for
from tests.backend.test_short_path import apps, kinesis_model, same_answer, send  # noqa: F401 - fixtures

SHARD = "shardId-000000000000"


@pytest.fixture(scope="module")
def unpatched_moto():
    from console.localserver.supervision import LocalKinesisServer

    with LocalKinesisServer(patched=False) as server:
        yield server


def filled_stream(endpoint: str) -> tuple[object, str, list[str], datetime]:
    """A one-shard stream holding 60 records put in two batches a moment apart: (client, name, the
    records' sequence numbers in order, a moment between the batches)."""
    kinesis = client_for(endpoint)
    name = f"reads-{uuid.uuid4().hex[:10]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    numbers = []
    for batch in range(2):
        reply = kinesis.put_records(
            StreamName=name,
            Records=[{"Data": f"{batch}-{n}".encode(), "PartitionKey": f"key-{n % 7}"} for n in range(30)],
        )
        numbers += [record["SequenceNumber"] for record in reply["Records"]]
        if batch == 0:
            time.sleep(0.05)
            between = datetime.now(UTC)
            time.sleep(0.05)
    return kinesis, name, numbers, between


def pages(kinesis, name: str, iterator_request: dict, limit: int) -> list[list[tuple[bytes, str]]]:
    """Every page from an iterator to the shard's tip, as (data, partition key) per record."""
    iterator = kinesis.get_shard_iterator(StreamName=name, ShardId=SHARD, **iterator_request)["ShardIterator"]
    result = []
    for _ in range(100):
        reply = kinesis.get_records(ShardIterator=iterator, Limit=limit)
        result.append([(record["Data"], record["PartitionKey"]) for record in reply["Records"]])
        iterator = reply["NextShardIterator"]
        if not reply["Records"]:
            return result
    raise AssertionError("never reached the shard's tip")


def iterator_requests(numbers: list[str], between: datetime) -> dict[str, dict]:
    return {
        "trim horizon": {"ShardIteratorType": "TRIM_HORIZON"},
        "latest": {"ShardIteratorType": "LATEST"},
        "at first": {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": numbers[0]},
        "at middle": {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": numbers[37]},
        "after middle": {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": numbers[37]},
        "after last": {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": numbers[-1]},
        "at timestamp between batches": {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": between},
        "at timestamp before all": {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": datetime(2020, 1, 1, tzinfo=UTC)},
    }


def test_indexed_get_records_returns_what_motos_scan_returns(local_kinesis, unpatched_moto):
    patched, plain = filled_stream(local_kinesis.endpoint_url), filled_stream(unpatched_moto.endpoint_url)
    for position in iterator_requests(patched[2], patched[3]):
        for limit in (1, 7, 10000):
            ours = pages(patched[0], patched[1], iterator_requests(patched[2], patched[3])[position], limit)
            theirs = pages(plain[0], plain[1], iterator_requests(plain[2], plain[3])[position], limit)
            assert ours == theirs, f"{position}, Limit {limit}"
    # And what those answers are, spelled out for a few positions.
    everything = [
        record
        for page in pages(patched[0], patched[1], {"ShardIteratorType": "TRIM_HORIZON"}, 10000)
        for record in page
    ]
    assert [data for data, _ in everything] == [f"{b}-{n}".encode() for b in range(2) for n in range(30)]
    after_middle = pages(patched[0], patched[1], iterator_requests(patched[2], patched[3])["after middle"], 10000)
    assert after_middle[0] == everything[38:]
    at_between = pages(
        patched[0], patched[1], iterator_requests(patched[2], patched[3])["at timestamp between batches"], 10000
    )
    assert at_between[0] == everything[30:]


def test_records_put_after_an_iterator_are_found(local_kinesis):
    """The index follows appends: a reader at the tip sees each new record once, in order."""
    kinesis, name, _numbers, _ = filled_stream(local_kinesis.endpoint_url)
    iterator = kinesis.get_shard_iterator(StreamName=name, ShardId=SHARD, ShardIteratorType="LATEST")["ShardIterator"]
    seen = []
    for n in range(5):
        kinesis.put_record(StreamName=name, Data=f"new-{n}".encode(), PartitionKey="k")
        reply = kinesis.get_records(ShardIterator=iterator)
        seen += [record["Data"] for record in reply["Records"]]
        iterator = reply["NextShardIterator"]
    assert seen == [f"new-{n}".encode() for n in range(5)]


def test_short_path_summary_shows_todays_members(apps, kinesis_model):  # fixtures
    _short, moto, _ = apps
    send(
        moto,
        "CreateStream",
        {
            "StreamName": "short-path-today",
            "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
            "MaxRecordSizeInKiB": 4096,
            "RecordDistributionStrategy": "AUTO",
        },
    )
    send(moto, "UpdateAccountSettings", {"MinimumThroughputBillingCommitment": {"Status": "ENABLED"}})
    send(moto, "UpdateStreamWarmThroughput", {"StreamName": "short-path-today", "WarmThroughputMiBps": 64})
    described = same_answer(apps, kinesis_model, "DescribeStreamSummary", {"StreamName": "short-path-today"})
    summary = described["StreamDescriptionSummary"]
    assert (summary["RecordDistributionStrategy"], summary["MaxRecordSizeInKiB"]) == ("AUTO", 4096)
    assert summary["WarmThroughput"] == {"TargetMiBps": 64, "CurrentMiBps": 64}
    assert (summary["ChannelCount"], summary["ConsumerCount"]) == (0, 0) and summary["StreamId"]
