"""The backend's response parsers (console.backend.clients.response_parser_factory) give what
aiobotocore's give: ListShards' answer taken as its JSON when it has ListShards' shape, every other
answer (and a ListShards answer of any other shape) parsed through the model as before."""

from __future__ import annotations

import asyncio
import json

import botocore.session
import pytest
from aiobotocore.parsers import AioResponseParserFactory

from console.backend.clients import response_parser_factory

MODEL = botocore.session.get_session().get_service_model("kinesis")


def parse(factory, operation: str, body: object) -> object:
    """The parsed answer, or the type of what the parser raised on it."""
    response = {"status_code": 200, "headers": {"x-amzn-requestid": "r"}, "body": json.dumps(body).encode()}
    parser = factory.create_parser(MODEL.metadata["protocol"])
    try:
        return asyncio.run(parser.parse(response, MODEL.operation_model(operation).output_shape))
    except Exception as error:  # compared, not handled
        return type(error)


def shard(number: int, *, closed: bool = False, parent: str | None = None) -> dict:
    raw = {
        "ShardId": f"shardId-{number:012d}",
        "HashKeyRange": {"StartingHashKey": str(number * 10), "EndingHashKey": str(number * 10 + 9)},
        "SequenceNumberRange": {"StartingSequenceNumber": "4960" + str(number)},
    }
    if closed:
        raw["SequenceNumberRange"]["EndingSequenceNumber"] = "4961" + str(number)
    if parent:
        raw["ParentShardId"] = parent
        raw["AdjacentParentShardId"] = parent
    return raw


LISTINGS = [
    {"Shards": [shard(0, closed=True), shard(1, parent="shardId-000000000000"), shard(2)], "NextToken": "t"},
    {"Shards": []},
    {},
]
ODD_LISTINGS = [
    {"Shards": "not a list"},
    {"Shards": [shard(0), 7]},
    {"Shards": [{**shard(0), "ShardId": 5}]},
    {"Shards": [{**shard(0), "HashKeyRange": {"StartingHashKey": 1, "EndingHashKey": "2"}}]},
    {"Shards": [{**shard(0), "HashKeyRange": ["1", "2"]}]},
    {"Shards": [shard(0)], "NextToken": 3},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("body", LISTINGS + ODD_LISTINGS)
def test_list_shards_answers_parse_as_aiobotocore_parses_them(body):
    """Malformed answers too: the same result, or the same failure, as aiobotocore's own parser."""
    assert parse(response_parser_factory(), "ListShards", body) == parse(AioResponseParserFactory(), "ListShards", body)


def test_other_answers_go_through_the_model():
    body = {
        "StreamDescriptionSummary": {
            "StreamName": "s",
            "StreamARN": "arn:aws:kinesis:us-east-1:1:stream/s",
            "StreamStatus": "ACTIVE",
            "RetentionPeriodHours": 24,
            "StreamCreationTimestamp": 1700000000.5,
            "EnhancedMonitoring": [],
            "OpenShardCount": 2,
        }
    }
    ours = parse(response_parser_factory(), "DescribeStreamSummary", body)
    assert isinstance(ours, dict)
    assert ours == parse(AioResponseParserFactory(), "DescribeStreamSummary", body)
    assert not isinstance(ours["StreamDescriptionSummary"]["StreamCreationTimestamp"], float)  # converted


def test_only_answers_of_list_shards_shape_take_the_short_path():
    from console.backend.clients import plain_listing

    assert all(plain_listing(body) for body in LISTINGS)
    assert not any(plain_listing(body) for body in ODD_LISTINGS)


PUTS = [
    {"FailedRecordCount": 0, "Records": [{"SequenceNumber": "4960", "ShardId": "shardId-000000000001"}]},
    {
        "FailedRecordCount": 1,
        "Records": [
            {"SequenceNumber": "4961", "ShardId": "shardId-000000000000"},
            {"ErrorCode": "ProvisionedThroughputExceededException", "ErrorMessage": "Rate exceeded"},
        ],
        "EncryptionType": "KMS",
    },
    {"Records": []},
    {},
]
ODD_PUTS = [
    {"FailedRecordCount": 0, "Records": [{"SequenceNumber": "4960", "ShardId": "s", "Extra": "x"}]},
    {"FailedRecordCount": 0, "Records": [{"SequenceNumber": None, "ShardId": "s"}]},
    {"FailedRecordCount": 0, "Records": [{"SequenceNumber": 4960, "ShardId": "s"}]},
    {"FailedRecordCount": "0", "Records": []},
    {"FailedRecordCount": True, "Records": []},
    {"FailedRecordCount": 0, "Records": "none"},
    {"FailedRecordCount": 0, "Records": [7]},
    {"FailedRecordCount": 0, "Records": [], "EncryptionType": None},
    {"FailedRecordCount": 0, "Records": [], "Unknown": 1},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("body", PUTS + ODD_PUTS)
def test_put_records_answers_parse_as_aiobotocore_parses_them(body):
    assert parse(response_parser_factory(), "PutRecords", body) == parse(AioResponseParserFactory(), "PutRecords", body)


def test_only_answers_of_put_records_shape_take_the_short_path():
    from console.backend.clients import plain_put_records

    assert all(plain_put_records(body) for body in PUTS)
    assert not any(plain_put_records(body) for body in ODD_PUTS)
