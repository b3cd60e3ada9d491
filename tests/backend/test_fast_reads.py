"""The embedded server's short path answers exactly what moto's full path answers, as a botocore
client parses it. Both paths run in this process on one set of moto models (with moto_compat's fixes):
each request goes once through ShortPathReads and once straight to moto's application."""

from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.parsers import create_parser

from console.backend import moto_compat
from console.backend.fast_reads import ShortPathReads

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

    short = ShortPathReads(moto_behind, moto_compat.lock())
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
    short, moto, _ = apps
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
    short, moto, _ = apps
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
