"""Today's Kinesis API on the embedded server (console/localserver/today.py and channels.py), over HTTP with
botocore clients, as botocore's model defines each operation.

Every test runs twice, as in test_moto_compat.py: against the patched embedded server (the behaviour
must be there) and against an unpatched moto server (it must be missing). If an upstream moto release
adds one, the unpatched run fails and the corresponding code can go.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from datetime import timedelta

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from console.localserver.supervision import LocalKinesisServer

MiB = 1024 * 1024
ROLE = "arn:aws:iam::123456789012:role/kinesis-channel"


@pytest.fixture(scope="module")
def unpatched_moto():
    with LocalKinesisServer(patched=False) as server:
        yield server


def client_for(endpoint: str, region: str = "us-east-1"):
    # One attempt: unpatched moto answers an unknown operation with a 500, which botocore would retry.
    # No client-side checks: the server's own validation is under test.
    return botocore.session.get_session().create_client(
        "kinesis",
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=60, parameter_validation=False),
    )


class Streams:
    """Creates uniquely named streams on one server (in one region) and deletes them afterwards."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.made: list[tuple[object, str]] = []

    def client(self, region: str = "us-east-1"):
        return client_for(self.endpoint, region)

    def __call__(self, *, on_demand: bool = False, shards: int = 2, region: str = "us-east-1") -> tuple[str, str]:
        kinesis = self.client(region)
        name = f"today-{uuid.uuid4().hex[:10]}"
        if on_demand:
            kinesis.create_stream(StreamName=name, StreamModeDetails={"StreamMode": "ON_DEMAND"})
        else:
            kinesis.create_stream(StreamName=name, ShardCount=shards)
        self.made.append((kinesis, name))
        return name, kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]

    def cleanup(self) -> None:
        for kinesis, name in self.made:
            try:
                for channel in kinesis.list_channels()["ChannelSummaries"]:
                    kinesis.delete_channel(ChannelARN=channel["ChannelARN"])
            except ClientError:
                pass
            with contextlib.suppress(ClientError):
                kinesis.delete_stream(StreamName=name, EnforceConsumerDeletion=True)


@pytest.fixture(params=["patched", "unpatched"])
def server(request, local_kinesis, unpatched_moto):
    """(botocore Kinesis client, stream factory, patched?) for one of the two servers."""
    patched = request.param == "patched"
    streams = Streams((local_kinesis if patched else unpatched_moto).endpoint_url)
    yield streams.client(), streams, patched
    streams.cleanup()


def expect_missing(missing: bool, patched: bool, what: str) -> None:
    if patched:
        assert not missing, f"patched server lacks: {what}"
    else:
        assert missing, f"moto now has '{what}': the code in moto_compat may be obsolete"


def error_code(call) -> str | None:
    """The AWS error code a call answers with, None if it succeeds."""
    try:
        call()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return None


def summary(kinesis, arn: str) -> dict:
    return kinesis.describe_stream_summary(StreamARN=arn)["StreamDescriptionSummary"]


def read_shard(kinesis, arn: str, shard_id: str, *, by_arn: bool = False) -> list[dict]:
    # By name unless asked: unpatched moto's iterator asked by StreamARN alone does not work.
    stream = {"StreamARN": arn} if by_arn else {"StreamName": arn.rsplit("/", 1)[1]}
    iterator = kinesis.get_shard_iterator(**stream, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    return kinesis.get_records(ShardIterator=iterator)["Records"]


# ---- record distribution -------------------------------------------------------------------------


def test_auto_distribution_spreads_one_key_over_every_open_shard(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(on_demand=True)
    switched = (
        error_code(
            lambda: kinesis.update_stream_record_distribution_strategy(StreamARN=arn, RecordDistributionStrategy="AUTO")
        )
        is None
    )
    shards = set()
    if switched:
        # One partition key, one explicit hash key: AUTO ignores both.
        reply = kinesis.put_records(
            StreamARN=arn,
            Records=[{"Data": b"x", "PartitionKey": "one-key", "ExplicitHashKey": "0"} for _ in range(40)],
        )
        shards = {record["ShardId"] for record in reply["Records"]}
    expect_missing(len(shards) < 4, patched, "AUTO record distribution")
    if patched:
        assert summary(kinesis, arn)["RecordDistributionStrategy"] == "AUTO"
        assert len(shards) == summary(kinesis, arn)["OpenShardCount"] == 4
        assert (
            error_code(
                lambda: kinesis.update_stream_mode(StreamARN=arn, StreamModeDetails={"StreamMode": "PROVISIONED"})
            )
            == "InvalidArgumentException"
        )
        kinesis.update_stream_record_distribution_strategy(
            StreamARN=arn, RecordDistributionStrategy="USER_PARTITION_KEY"
        )
        again = kinesis.put_records(StreamARN=arn, Records=[{"Data": b"x", "PartitionKey": "one-key"}] * 10)
        assert len({record["ShardId"] for record in again["Records"]}) == 1
        assert summary(kinesis, arn)["RecordDistributionStrategy"] == "USER_PARTITION_KEY"


def test_auto_distribution_refused_on_a_provisioned_stream(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    code = error_code(
        lambda: kinesis.update_stream_record_distribution_strategy(StreamARN=arn, RecordDistributionStrategy="AUTO")
    )
    expect_missing(code != "InvalidArgumentException", patched, "AUTO refused on a provisioned stream")
    if patched:
        assert summary(kinesis, arn)["RecordDistributionStrategy"] == "USER_PARTITION_KEY"


def test_keyless_records_on_an_auto_stream(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(on_demand=True)
    try:
        kinesis.update_stream_record_distribution_strategy(StreamARN=arn, RecordDistributionStrategy="AUTO")
        reply = kinesis.put_records(StreamARN=arn, Records=[{"Data": f"r{n}".encode()} for n in range(8)])
        single = kinesis.put_record(StreamARN=arn, Data=b"single")
    except ClientError:
        reply = None
    expect_missing(reply is None, patched, "records without a PartitionKey on an AUTO stream")
    if patched:
        stored = [
            record
            for shard in sorted({r["ShardId"] for r in reply["Records"]} | {single["ShardId"]})
            for record in read_shard(kinesis, arn, shard)
        ]
        assert sorted(record["Data"] for record in stored) == sorted([f"r{n}".encode() for n in range(8)] + [b"single"])
        assert all("PartitionKey" not in record for record in stored)


def test_keyless_record_refused_on_a_partition_key_stream(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    code = error_code(
        lambda: kinesis.put_records(StreamARN=arn, Records=[{"Data": b"x", "PartitionKey": "k"}, {"Data": b"no key"}])
    )
    # moto refuses too, but only on reaching the keyless record: the one before it is already stored.
    stored = read_shard(kinesis, arn, "shardId-000000000000")
    expect_missing(
        code != "InvalidArgumentException" or bool(stored),
        patched,
        "a keyless record refused before anything of the request is stored",
    )


def test_create_stream_takes_todays_members(server):
    kinesis, make_stream, patched = server
    name = f"today-{uuid.uuid4().hex[:10]}"
    kinesis.create_stream(
        StreamName=name,
        StreamModeDetails={"StreamMode": "ON_DEMAND"},
        MaxRecordSizeInKiB=2048,
        RecordDistributionStrategy="AUTO",
        Tags={"team": "data"},
    )
    make_stream.made.append((kinesis, name))
    described = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
    tags = kinesis.list_tags_for_stream(StreamName=name)["Tags"]
    expect_missing(
        (described.get("MaxRecordSizeInKiB"), described.get("RecordDistributionStrategy"), tags)
        != (2048, "AUTO", [{"Key": "team", "Value": "data"}]),
        patched,
        "CreateStream's MaxRecordSizeInKiB, RecordDistributionStrategy and Tags",
    )
    if patched:
        assert (
            error_code(
                lambda: kinesis.create_stream(StreamName=name + "-p", ShardCount=1, RecordDistributionStrategy="AUTO")
            )
            == "InvalidArgumentException"
        )
        assert (
            error_code(lambda: kinesis.describe_stream_summary(StreamName=name + "-p")) == "ResourceNotFoundException"
        )


# ---- record size -----------------------------------------------------------------------------------


def test_max_record_size_raised_and_a_large_record_reads_back_exactly(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    payload = bytes(range(256)) * (9 * MiB // 256)  # 9 MiB
    try:
        kinesis.update_max_record_size(StreamARN=arn, MaxRecordSizeInKiB=10240)
        put = kinesis.put_record(StreamARN=arn, Data=payload, PartitionKey="big")
    except ClientError:
        put = None
    expect_missing(put is None, patched, "UpdateMaxRecordSize and 9 MiB records")
    if patched:
        assert summary(kinesis, arn)["MaxRecordSizeInKiB"] == 10240
        iterator = kinesis.get_shard_iterator(
            StreamARN=arn,
            ShardId=put["ShardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            StartingSequenceNumber=put["SequenceNumber"],
        )["ShardIterator"]
        record = kinesis.get_records(ShardIterator=iterator, Limit=1)["Records"][0]
        assert record["Data"] == payload and record["PartitionKey"] == "big"
        # One GetRecords answers at most 10 MiB (and always at least one record): 9 + 9 MiB take two.
        kinesis.put_record(StreamARN=arn, Data=payload[::-1], PartitionKey="big")
        first = kinesis.get_records(ShardIterator=iterator)
        second = kinesis.get_records(ShardIterator=first["NextShardIterator"])
        assert len(first["Records"]) == 1
        assert [r["Data"] for r in first["Records"] + second["Records"]] == [payload, payload[::-1]]


def test_record_over_the_streams_size_is_refused(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    code = error_code(lambda: kinesis.put_record(StreamARN=arn, Data=b"x" * MiB, PartitionKey="k"))  # 1 MiB + key
    expect_missing(code != "InvalidArgumentException", patched, "the stream's record size enforced on PutRecord")
    if patched:
        assert summary(kinesis, arn)["MaxRecordSizeInKiB"] == 1024
        assert read_shard(kinesis, arn, "shardId-000000000000") == []
        assert (
            error_code(lambda: kinesis.put_records(StreamARN=arn, Records=[{"Data": b"x" * MiB, "PartitionKey": "k"}]))
            == "InvalidArgumentException"
        )
        assert error_code(lambda: kinesis.put_record(StreamARN=arn, Data=b"x" * (MiB - 1), PartitionKey="k")) is None


@pytest.mark.parametrize("kib", [1023, 10241])
def test_max_record_size_outside_the_models_range(server, kib):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    code = error_code(lambda: kinesis.update_max_record_size(StreamARN=arn, MaxRecordSizeInKiB=kib))
    expect_missing(code != "ValidationException", patched, f"MaxRecordSizeInKiB {kib} refused by the model's range")


def test_put_records_takes_requests_up_to_ten_mib(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    error_code(lambda: kinesis.update_max_record_size(StreamARN=arn, MaxRecordSizeInKiB=4096))
    three = [{"Data": b"y" * (3 * MiB), "PartitionKey": f"k{n}"} for n in range(3)]  # 9 MiB in all
    code = error_code(lambda: kinesis.put_records(StreamARN=arn, Records=three))
    expect_missing(code is not None, patched, "PutRecords requests of 5 to 10 MiB")
    if patched:
        four = [*three, {"Data": b"y" * (2 * MiB), "PartitionKey": "k3"}]  # 11 MiB
        assert error_code(lambda: kinesis.put_records(StreamARN=arn, Records=four)) == "InvalidArgumentException"
        assert len(read_shard(kinesis, arn, "shardId-000000000000")) == 3


# ---- warm throughput and On-demand Advantage ---------------------------------------------------
# Account settings belong to an account in a region: each test takes a region of its own.


def test_account_settings_commitment_lifecycle(server):
    kinesis, _, patched = server
    kinesis = client_for(kinesis.meta.endpoint_url, "eu-north-1")
    try:
        before = kinesis.describe_account_settings()["MinimumThroughputBillingCommitment"]
        enabled = kinesis.update_account_settings(MinimumThroughputBillingCommitment={"Status": "ENABLED"})[
            "MinimumThroughputBillingCommitment"
        ]
    except ClientError:
        before = enabled = None
    expect_missing(enabled is None, patched, "DescribeAccountSettings / UpdateAccountSettings")
    if patched:
        assert before == {"Status": "DISABLED"}
        assert enabled["Status"] == "ENABLED"
        assert enabled["EarliestAllowedEndAt"] - enabled["StartedAt"] == timedelta(hours=24)
        ending = kinesis.update_account_settings(MinimumThroughputBillingCommitment={"Status": "DISABLED"})
        assert ending["MinimumThroughputBillingCommitment"]["Status"] == "ENABLED_UNTIL_EARLIEST_ALLOWED_END"
        kinesis.update_account_settings(MinimumThroughputBillingCommitment={"Status": "ENABLED"})
        assert kinesis.describe_account_settings()["MinimumThroughputBillingCommitment"]["Status"] == "ENABLED"
        assert (
            error_code(lambda: kinesis.update_account_settings(MinimumThroughputBillingCommitment={"Status": "MAYBE"}))
            == "ValidationException"
        )


def test_warm_throughput_needs_on_demand_and_the_commitment(server):
    kinesis, make_stream, patched = server
    region = "ap-southeast-2"
    kinesis = client_for(kinesis.meta.endpoint_url, region)
    _, arn = make_stream(on_demand=True, region=region)
    _, provisioned = make_stream(shards=1, region=region)
    uncommitted = error_code(lambda: kinesis.update_stream_warm_throughput(StreamARN=arn, WarmThroughputMiBps=100))
    expect_missing(uncommitted != "InvalidArgumentException", patched, "warm throughput refused without the commitment")
    if patched:
        assert "WarmThroughput" not in summary(kinesis, arn)
        kinesis.update_account_settings(MinimumThroughputBillingCommitment={"Status": "ENABLED"})
        reply = kinesis.update_stream_warm_throughput(StreamARN=arn, WarmThroughputMiBps=100)
        assert reply["WarmThroughput"]["TargetMiBps"] == 100
        assert summary(kinesis, arn)["WarmThroughput"] == {"TargetMiBps": 100, "CurrentMiBps": 100}
        assert (
            error_code(lambda: kinesis.update_stream_warm_throughput(StreamARN=provisioned, WarmThroughputMiBps=100))
            == "InvalidArgumentException"
        )
        assert (
            error_code(lambda: kinesis.update_stream_warm_throughput(StreamARN=arn, WarmThroughputMiBps=10 * 1024 + 1))
            == "LimitExceededException"
        )
        assert summary(kinesis, arn)["WarmThroughput"]["TargetMiBps"] == 100


# ---- summary -----------------------------------------------------------------------------------


def test_summary_carries_stream_id_and_counts(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="reader")
    described = summary(kinesis, arn)
    missing = [
        name
        for name in ("StreamId", "ConsumerCount", "ChannelCount", "MaxRecordSizeInKiB", "RecordDistributionStrategy")
        if name not in described
    ]
    expect_missing(bool(missing), patched, f"summary members {missing}")
    if patched:
        assert re.fullmatch(r"[a-z0-9]{20}-[a-z0-9]{3}", described["StreamId"])
        assert (described["ConsumerCount"], described["ChannelCount"]) == (1, 0)


def test_delete_stream_with_consumers_needs_enforce_consumer_deletion(server):
    kinesis, make_stream, patched = server
    name, arn = make_stream(shards=1)
    kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="still-reading")
    code = error_code(lambda: kinesis.delete_stream(StreamName=name))
    expect_missing(code != "ResourceInUseException", patched, "DeleteStream refused while consumers are registered")
    if patched:
        kinesis.delete_stream(StreamName=name, EnforceConsumerDeletion=True)
        assert error_code(lambda: summary(kinesis, arn)) == "ResourceNotFoundException"


# ---- tags and resource policies ---------------------------------------------------------------


def test_tags_on_streams_and_consumers(server):
    kinesis, make_stream, patched = server
    name, arn = make_stream(shards=1)
    consumer = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="tagged")["Consumer"]["ConsumerARN"]
    try:
        kinesis.tag_resource(ResourceARN=arn, Tags={"team": "data", "tier": "gold"})
        kinesis.tag_resource(ResourceARN=consumer, Tags={"owner": "me"})
        kinesis.untag_resource(ResourceARN=arn, TagKeys=["tier"])
        stream_tags = kinesis.list_tags_for_resource(ResourceARN=arn)["Tags"]
        consumer_tags = kinesis.list_tags_for_resource(ResourceARN=consumer)["Tags"]
    except ClientError:
        stream_tags = consumer_tags = None
    expect_missing(stream_tags is None, patched, "TagResource / UntagResource / ListTagsForResource")
    if patched:
        assert stream_tags == [{"Key": "team", "Value": "data"}]
        assert consumer_tags == [{"Key": "owner", "Value": "me"}]
        assert kinesis.list_tags_for_stream(StreamName=name)["Tags"] == stream_tags  # one set of stream tags
        assert (
            error_code(lambda: kinesis.tag_resource(ResourceARN=arn + "-gone", Tags={"a": "b"}))
            == "ResourceNotFoundException"
        )
        many = {f"k{n}": "v" for n in range(50)}
        assert error_code(lambda: kinesis.tag_resource(ResourceARN=arn, Tags=many)) == "InvalidArgumentException"


def test_resource_policy_on_a_consumer(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    consumer = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="shared")["Consumer"]["ConsumerARN"]
    policy = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
                    "Action": "kinesis:SubscribeToShard",
                    "Resource": consumer,
                }
            ],
        }
    )
    try:
        kinesis.put_resource_policy(ResourceARN=consumer, Policy=policy)
        stored = kinesis.get_resource_policy(ResourceARN=consumer)["Policy"]
    except ClientError:
        stored = None
    expect_missing(stored != policy, patched, "resource policies on consumers")
    if patched:
        kinesis.delete_resource_policy(ResourceARN=consumer)
        assert kinesis.get_resource_policy(ResourceARN=consumer)["Policy"] == "{}"
        assert error_code(lambda: kinesis.delete_resource_policy(ResourceARN=consumer)) == "ResourceNotFoundException"
        assert (
            error_code(lambda: kinesis.put_resource_policy(ResourceARN=arn, Policy="{not json"))
            == "InvalidArgumentException"
        )
        # Deregistered and registered again under the same name: the old policy does not come back.
        kinesis.put_resource_policy(ResourceARN=consumer, Policy=policy)
        kinesis.deregister_stream_consumer(StreamARN=arn, ConsumerName="shared")
        again = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="shared")["Consumer"]["ConsumerARN"]
        assert kinesis.get_resource_policy(ResourceARN=again)["Policy"] == "{}"


# ---- channels ----------------------------------------------------------------------------------


def s3_channel(name: str, stream_arn: str) -> dict:
    return {
        "ChannelName": name,
        "ServiceExecutionRoleARN": ROLE,
        "StreamConfigurationList": [{"StreamARN": stream_arn, "RecordConfiguration": {"RecordFormatType": "JSON"}}],
        "S3DestinationConfiguration": {
            "StorageConfiguration": {
                "BucketARN": "arn:aws:s3:::kconsole-test-bucket",
                "ExpectedBucketOwner": "123456789012",
                "CompressionType": "GZIP",
            }
        },
    }


def channel_on(kinesis, stream_arn: str) -> str | None:
    """A new channel's ARN, None if the server has no CreateChannel."""
    try:
        return kinesis.create_channel(**s3_channel(f"ch-{uuid.uuid4().hex[:8]}", stream_arn))["ChannelDescription"][
            "ChannelARN"
        ]
    except ClientError:
        return None


def test_channels_round_trip(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(on_demand=True)
    name = f"ch-{uuid.uuid4().hex[:8]}"
    try:
        created = kinesis.create_channel(**s3_channel(name, arn))["ChannelDescription"]
    except ClientError:
        created = None
    expect_missing(created is None, patched, "CreateChannel")
    if patched:
        channel = created["ChannelARN"]
        assert created["ChannelStatus"] == "CREATING" and channel.endswith(f":channel/{name}")
        assert created["S3DestinationConfiguration"]["DataFreshnessInSeconds"] == 300
        listed = kinesis.list_channels(StreamFilter=[{"StreamARN": arn}])["ChannelSummaries"]
        assert [(c["ChannelName"], c["ChannelDestinationType"], c["Streams"][0]["StreamARN"]) for c in listed] == [
            (name, "S3", arn)
        ]
        assert summary(kinesis, arn)["ChannelCount"] == 1
        assert error_code(lambda: kinesis.create_channel(**s3_channel(name, arn))) == "ResourceInUseException"
        described = kinesis.describe_channel(ChannelARN=channel)["ChannelDescription"]
        assert described["ServiceExecutionRoleARN"] == ROLE
        kinesis.tag_resource(ResourceARN=channel, Tags={"dest": "s3"})
        assert kinesis.list_tags_for_resource(ResourceARN=channel)["Tags"] == [{"Key": "dest", "Value": "s3"}]
        kinesis.delete_channel(ChannelARN=channel)
        assert error_code(lambda: kinesis.describe_channel(ChannelARN=channel)) == "ResourceNotFoundException"
        assert summary(kinesis, arn)["ChannelCount"] == 0


def test_channel_update_waits_for_active(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(on_demand=True)
    channel = channel_on(kinesis, arn)
    expect_missing(channel is None, patched, "UpdateChannel")
    if patched:
        update = {"ChannelARN": channel, "S3DestinationConfiguration": {"DataFreshnessInSeconds": 60}}
        assert error_code(lambda: kinesis.update_channel(**update)) == "ResourceInUseException"  # still CREATING
        time.sleep(0.6)
        assert kinesis.describe_channel(ChannelARN=channel)["ChannelDescription"]["ChannelStatus"] == "ACTIVE"
        updated = kinesis.update_channel(**update)["ChannelDescription"]
        assert updated["ChannelStatus"] == "UPDATING"
        assert updated["S3DestinationConfiguration"]["DataFreshnessInSeconds"] == 60
        assert (
            error_code(
                lambda: kinesis.update_channel(
                    ChannelARN=channel, S3TablesDestinationConfiguration={"DataFreshnessInSeconds": 60}
                )
            )
            is not None
        )


def test_stream_with_a_channel_cannot_be_deleted(server):
    kinesis, make_stream, patched = server
    name, arn = make_stream(on_demand=True)
    channel = channel_on(kinesis, arn)
    code = error_code(lambda: kinesis.delete_stream(StreamName=name))
    expect_missing(code != "ResourceInUseException", patched, "DeleteStream refused while channels exist")
    if patched:
        kinesis.delete_channel(ChannelARN=channel)
        kinesis.delete_stream(StreamName=name)
        assert error_code(lambda: summary(kinesis, arn)) == "ResourceNotFoundException"


@pytest.mark.parametrize(
    "broken, code",
    [
        (
            {
                "S3TablesDestinationConfiguration": {
                    "DeadLetterQueueS3Configuration": {
                        "BucketARN": "arn:aws:s3:::dlq-bucket",
                        "ExpectedBucketOwner": "123456789012",
                    },
                    "S3TablesConfigurationList": [
                        {
                            "TableBucketARN": "arn:aws:s3tables:us-east-1:123456789012:bucket/tables",
                            "Namespace": "ns",
                            "TableName": "t",
                            "CompressionType": "ZSTD",
                        }
                    ],
                }
            },
            "InvalidArgumentException",
        ),  # both destinations
        ({"ServiceExecutionRoleARN": "not-a-role"}, "ValidationException"),
        (
            {
                "S3DestinationConfiguration": {
                    "StorageConfiguration": {
                        "BucketARN": "arn:aws:s3:::b",
                        "ExpectedBucketOwner": "1",
                        "CompressionType": "RAR",
                    }
                }
            },
            "ValidationException",
        ),
    ],
)
def test_channel_config_is_checked_against_the_model(server, broken, code):
    kinesis, make_stream, patched = server
    _, arn = make_stream(on_demand=True)
    request = {**s3_channel(f"ch-{uuid.uuid4().hex[:8]}", arn), **broken}
    answer = error_code(lambda: kinesis.create_channel(**request))
    expect_missing(answer != code, patched, f"a channel config against the model ({code})")
    if patched:
        assert kinesis.list_channels(StreamFilter=[{"StreamARN": arn}])["ChannelSummaries"] == []


def test_channel_refused_on_a_provisioned_stream(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    code = error_code(lambda: kinesis.create_channel(**s3_channel(f"ch-{uuid.uuid4().hex[:8]}", arn)))
    expect_missing(code != "InvalidArgumentException", patched, "channels only on on-demand streams")


# ---- iterators ---------------------------------------------------------------------------------


def test_shard_iterator_asked_by_stream_arn_alone(server):
    kinesis, make_stream, patched = server
    _, arn = make_stream(shards=1)
    kinesis.put_record(StreamARN=arn, Data=b"by-arn", PartitionKey="k")
    try:
        records = read_shard(kinesis, arn, "shardId-000000000000", by_arn=True)
    except ClientError:
        records = None
    expect_missing(records is None, patched, "a GetShardIterator by StreamARN that GetRecords can use")
    if patched:
        assert [record["Data"] for record in records] == [b"by-arn"]


# ---- listing -----------------------------------------------------------------------------------


def test_list_streams_pages_with_next_token_and_the_pages_summaries(server):
    kinesis, make_stream, patched = server
    kinesis = client_for(kinesis.meta.endpoint_url, "sa-east-1")  # a region with only this test's streams
    made = sorted(make_stream(shards=1, region="sa-east-1")[0] for _ in range(5))
    first = kinesis.list_streams(Limit=3)
    names, summaries, pages = list(first["StreamNames"]), list(first.get("StreamSummaries", [])), 1
    token = first.get("NextToken")
    while token and pages < 5:
        page = kinesis.list_streams(Limit=3, NextToken=token)
        names += page["StreamNames"]
        summaries += page.get("StreamSummaries", [])
        token, pages = page.get("NextToken"), pages + 1
    expect_missing(
        sorted(names) != made or [s["StreamName"] for s in summaries] != names,
        patched,
        "ListStreams paging by NextToken with each page's own StreamSummaries",
    )
    if patched:
        assert pages == 2 and first["HasMoreStreams"]
        assert {s["StreamModeDetails"]["StreamMode"] for s in summaries} == {"PROVISIONED"}
        assert all(s["StreamARN"].endswith("/" + s["StreamName"]) for s in summaries)
