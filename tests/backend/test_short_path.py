"""The embedded server's short path answers exactly what moto's full path answers, as a botocore
client parses it. Both paths run in this process on one set of moto models (with moto_compat's fixes):
each request goes once through ShortPath and once straight to moto's application."""

from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.parsers import create_parser

from console.localserver import moto_compat
from console.localserver import records as record_store
from console.localserver.short_path import ShortPath

AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/eu-west-1/kinesis/aws4_request, "
    "SignedHeaders=host, Signature=0"
)


@pytest.fixture(scope="module")
def apps():
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.test import Client

    moto_compat.apply()
    moto = DomainDispatcherApplication(create_backend_app)
    handed_on = []  # the requests the short path passed to moto

    def moto_behind(environ, start_response):
        handed_on.append(environ.get("HTTP_X_AMZ_TARGET"))
        return moto(environ, start_response)

    short = ShortPath(moto_behind, moto_compat.lock())
    return Client(short), Client(moto), handed_on


@pytest.fixture(scope="module")
def kinesis_model():
    return botocore.session.get_session().get_service_model("kinesis")


def send(client, operation: str, body: dict):
    response = client.post(
        "/",
        data=json.dumps(body),
        headers={
            "Authorization": AUTHORIZATION,
            "Host": "127.0.0.1:4567",
            "Content-Type": "application/x-amz-json-1.1",
            "X-Amz-Target": f"Kinesis_20131202.{operation}",
        },
    )
    return response.status_code, response.headers, response.data


def parsed(model, operation: str, status: int, headers, body: bytes) -> dict:
    result = create_parser("json").parse(
        {"status_code": status, "headers": dict(headers), "body": body}, model.operation_model(operation).output_shape
    )
    result.pop("ResponseMetadata", None)
    return result


def same_answer(apps, model, operation: str, body: dict, *, short_path: bool = True) -> dict:
    short, moto, handed_on = apps
    before = len(handed_on)
    status, headers, answer = send(short, operation, body)
    # Answered on the short path itself (a wrong region or account would fail there and fall back).
    assert (len(handed_on) == before) == short_path, handed_on[before:]
    moto_status, moto_headers, moto_answer = send(moto, operation, body)
    assert status == moto_status
    ours, theirs = (
        parsed(model, operation, status, headers, answer),
        parsed(model, operation, moto_status, moto_headers, moto_answer),
    )
    assert ours == theirs
    return ours


def test_reads_answer_as_moto_does(apps, kinesis_model):
    _short, moto, _ = apps
    send(moto, "CreateStream", {"StreamName": "short-path", "ShardCount": 3})
    send(
        moto,
        "PutRecords",
        {"StreamName": "short-path", "Records": [{"Data": "aGVsbG8=", "PartitionKey": f"key-{n}"} for n in range(40)]},
    )
    summary = same_answer(apps, kinesis_model, "DescribeStreamSummary", {"StreamName": "short-path"})
    assert summary["StreamDescriptionSummary"]["OpenShardCount"] == 3
    shards = same_answer(apps, kinesis_model, "ListShards", {"StreamName": "short-path", "MaxResults": 2})
    assert len(shards["Shards"]) == 2 and shards["NextToken"]
    same_answer(apps, kinesis_model, "ListShards", {"NextToken": shards["NextToken"]})
    same_answer(apps, kinesis_model, "ListShards", {"StreamName": "short-path", "ShardFilter": {"Type": "AT_LATEST"}})
    first = shards["Shards"][0]["ShardId"]
    iterator = same_answer(
        apps,
        kinesis_model,
        "GetShardIterator",
        {"StreamName": "short-path", "ShardId": first, "ShardIteratorType": "TRIM_HORIZON"},
    )["ShardIterator"]
    page = same_answer(apps, kinesis_model, "GetRecords", {"ShardIterator": iterator, "Limit": 5})
    assert page["Records"] and page["Records"][0]["Data"] == b"hello"
    assert page["Records"][0]["ApproximateArrivalTimestamp"].tzinfo is not None
    after = same_answer(
        apps,
        kinesis_model,
        "GetShardIterator",
        {
            "StreamName": "short-path",
            "ShardId": first,
            "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
            "StartingSequenceNumber": page["Records"][0]["SequenceNumber"],
        },
    )
    assert same_answer(apps, kinesis_model, "GetRecords", {"ShardIterator": after["ShardIterator"]})["Records"]


def test_closed_shard_end_and_children_as_moto_does(apps, kinesis_model):
    _short, moto, _ = apps
    send(moto, "CreateStream", {"StreamName": "short-path-split", "ShardCount": 1})
    send(moto, "PutRecord", {"StreamName": "short-path-split", "Data": "eA==", "PartitionKey": "a"})
    send(
        moto,
        "SplitShard",
        {"StreamName": "short-path-split", "ShardToSplit": "shardId-000000000000", "NewStartingHashKey": str(2**127)},
    )
    iterator = same_answer(
        apps,
        kinesis_model,
        "GetShardIterator",
        {"StreamName": "short-path-split", "ShardId": "shardId-000000000000", "ShardIteratorType": "TRIM_HORIZON"},
    )["ShardIterator"]
    end = same_answer(apps, kinesis_model, "GetRecords", {"ShardIterator": iterator})
    assert "NextShardIterator" not in end and len(end["ChildShards"]) == 2


def test_errors_and_timestamps_take_moto_path(apps, kinesis_model):
    short, moto, _ = apps
    status, _, body = send(short, "DescribeStreamSummary", {"StreamName": "no-such-stream"})
    moto_status, _, moto_body = send(moto, "DescribeStreamSummary", {"StreamName": "no-such-stream"})
    assert (status, json.loads(body)["__type"]) == (moto_status, json.loads(moto_body)["__type"])
    assert status == 400 and "ResourceNotFound" in json.loads(body)["__type"]
    send(moto, "CreateStream", {"StreamName": "short-path-time", "ShardCount": 1})
    same_answer(
        apps,
        kinesis_model,
        "GetShardIterator",
        {
            "StreamName": "short-path-time",
            "ShardId": "shardId-000000000000",
            "ShardIteratorType": "AT_TIMESTAMP",
            "Timestamp": 1_700_000_000,
        },
        short_path=False,
    )
    status, _, body = send(short, "GetRecords", {"ShardIterator": "not-an-iterator"})
    assert status == 400


def stored(apps, stream: str, shard: str = "shardId-000000000000") -> list[dict]:
    _short, moto, _ = apps
    _, _, body = send(
        moto, "GetShardIterator", {"StreamName": stream, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}
    )
    _, _, body = send(moto, "GetRecords", {"ShardIterator": json.loads(body)["ShardIterator"]})
    return json.loads(body)["Records"]


def test_put_records_answers_as_moto_does_and_stores_once(apps, kinesis_model):
    short, moto, handed_on = apps
    send(moto, "CreateStream", {"StreamName": "short-path-put", "ShardCount": 3})
    request = {
        "StreamName": "short-path-put",
        "Records": [{"Data": "aGVsbG8=", "PartitionKey": f"key-{n}"} for n in range(30)]
        + [{"Data": "eA==", "PartitionKey": "k", "ExplicitHashKey": "0"}],
    }
    before = len(handed_on)
    status, headers, body = send(short, "PutRecords", request)
    assert len(handed_on) == before  # answered on the short path
    moto_status, moto_headers, moto_body = send(moto, "PutRecords", request)
    ours = parsed(kinesis_model, "PutRecords", status, headers, body)
    theirs = parsed(kinesis_model, "PutRecords", moto_status, moto_headers, moto_body)
    assert (status, ours.keys(), ours["FailedRecordCount"]) == (moto_status, theirs.keys(), 0)
    # The same shards, and new sequence numbers (each request stored its records once).
    assert [r["ShardId"] for r in ours["Records"]] == [r["ShardId"] for r in theirs["Records"]]
    numbers = [int(r["SequenceNumber"]) for r in ours["Records"] + theirs["Records"]]
    assert len(set(numbers)) == 62
    assert ours["Records"][-1]["ShardId"] == "shardId-000000000000"
    in_shards = [
        record
        for shard in ("shardId-000000000000", "shardId-000000000001", "shardId-000000000002")
        for record in stored(apps, "short-path-put", shard)
    ]
    assert len(in_shards) == 62


def test_put_records_refused_whole_goes_to_moto_with_nothing_stored(apps):
    short, moto, handed_on = apps
    send(moto, "CreateStream", {"StreamName": "short-path-refused", "ShardCount": 1})
    records = [{"Data": "eA==", "PartitionKey": f"k{n}"} for n in range(3)]
    before = len(handed_on)
    for bad in ({"Data": "eA==", "PartitionKey": "k", "ExplicitHashKey": str(2**128)}, {"Data": "eA=="}):
        status, _, body = send(short, "PutRecords", {"StreamName": "short-path-refused", "Records": [*records, bad]})
        assert status == 400 and "InvalidArgument" in json.loads(body)["__type"]
    status, _, body = send(short, "PutRecords", {"StreamName": "no-such-stream", "Records": records})
    assert status == 400 and "ResourceNotFound" in json.loads(body)["__type"]
    assert len(handed_on) == before + 3  # moto made each error answer
    assert stored(apps, "short-path-refused") == []


def test_put_records_failing_after_storing_is_not_sent_on(apps, monkeypatch):
    """A fault no server makes: storing fails midway. Handing the request on to moto would store its
    records a second time; the short path answers InternalFailure itself."""
    short, moto, handed_on = apps
    send(moto, "CreateStream", {"StreamName": "short-path-fault", "ShardCount": 1})
    real_store = record_store.store_records

    def store_then_fail(backend, stream, records, size):
        real_store(backend, stream, records[:2], size)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(record_store, "store_records", store_then_fail)
    records = [{"Data": "eA==", "PartitionKey": f"k{n}"} for n in range(5)]
    before = len(handed_on)
    status, _, body = send(short, "PutRecords", {"StreamName": "short-path-fault", "Records": records})
    assert (status, json.loads(body)["__type"]) == (500, "InternalFailure")
    assert len(handed_on) == before
    monkeypatch.undo()
    assert len(stored(apps, "short-path-fault")) == 2


def test_records_are_made_with_every_member_motos_record_has():
    from moto.kinesis.models import Record

    moto_compat.apply()
    theirs = Record("key", "ZGF0YQ==", 42, "17")
    ours = moto_compat.new_record("key", "ZGF0YQ==", 42, "17")
    assert vars(ours).keys() == vars(theirs).keys()
    assert {
        name: getattr(ours, name) for name in ("partition_key", "data", "sequence_number", "explicit_hash_key")
    } == {name: getattr(theirs, name) for name in ("partition_key", "data", "sequence_number", "explicit_hash_key")}
    assert (
        type(ours.created_at_datetime) is type(theirs.created_at_datetime) and ours.created_at_datetime.tzinfo is None
    )
    assert (
        abs(ours.created_at - theirs.created_at) < 1
        and abs(ours.created_at_datetime - theirs.created_at_datetime).total_seconds() < 1
    )
    assert ours.to_json()["ApproximateArrivalTimestamp"] == ours.created_at_datetime
