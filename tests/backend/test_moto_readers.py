"""The services that read a stream, on the embedded server (console/localserver/readers.py), over HTTP
with botocore clients.

Every test runs twice, as in test_moto_compat.py: against the patched embedded server (the fix must be
there) and against an unpatched moto server (the defect must be there). If an upstream moto release
fixes one, the unpatched run fails and the corresponding patch can go. Firehose and Pipes need no
patch: their tests show both servers doing what the readers demo relies on.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
import uuid
import zipfile
from importlib import metadata
from pathlib import Path

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from packaging.requirements import Requirement

from console.localserver.supervision import LocalKinesisServer

ROOT = Path(__file__).resolve().parents[2]
ROLE_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)


@pytest.fixture(scope="module")
def unpatched_moto():
    with LocalKinesisServer(patched=False) as server:
        yield server


class Server:
    """Clients for one server, and uniquely named resources on it."""

    def __init__(self, endpoint: str, patched: bool) -> None:
        self.endpoint = endpoint
        self.patched = patched
        self.streams: list[str] = []

    def client(self, service: str):
        # One attempt: unpatched moto answers a put it fails with a 500, which botocore would retry.
        return botocore.session.get_session().create_client(
            service,
            region_name="us-east-1",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"total_max_attempts": 1}, read_timeout=60),
        )

    def stream(self, shards: int = 2) -> tuple[str, str]:
        kinesis = self.client("kinesis")
        name = f"readers-{uuid.uuid4().hex[:10]}"
        kinesis.create_stream(StreamName=name, ShardCount=shards)
        self.streams.append(name)
        return name, kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]

    def role(self) -> str:
        name = f"readers-{uuid.uuid4().hex[:10]}"
        return self.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=ROLE_POLICY)["Role"]["Arn"]

    def function(self) -> str:
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("index.py", "def handler(event, context):\n    return None\n")
        name = f"readers-{uuid.uuid4().hex[:10]}"
        self.client("lambda").create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=self.role(),
            Handler="index.handler",
            Code={"ZipFile": code.getvalue()},
        )
        return name

    def cleanup(self) -> None:
        kinesis = self.client("kinesis")
        for name in self.streams:
            with contextlib.suppress(ClientError):
                kinesis.delete_stream(StreamName=name, EnforceConsumerDeletion=True)


@pytest.fixture(params=["patched", "unpatched"])
def server(request, local_kinesis, unpatched_moto):
    patched = request.param == "patched"
    found = Server((local_kinesis if patched else unpatched_moto).endpoint_url, patched)
    yield found
    found.cleanup()


def expect_defect(defect_seen: bool, patched: bool, what: str) -> None:
    if patched:
        assert not defect_seen, f"patched server still shows: {what}"
    else:
        assert defect_seen, f"moto no longer shows '{what}': the patch in console.localserver.readers may be obsolete"


def error_code(call) -> str | None:
    """The AWS error code a call answers with (moto's internal errors: "500"), None if it succeeds."""
    try:
        call()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return None


def read_all(kinesis, stream: str) -> list[bytes]:
    data = []
    for shard in kinesis.list_shards(StreamName=stream)["Shards"]:
        iterator = kinesis.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        data += [record["Data"] for record in kinesis.get_records(ShardIterator=iterator)["Records"]]
    return data


def mapped_stream(server: Server) -> tuple[str, str, str]:
    """A stream with a Lambda event source mapping on it: (stream, its ARN, the mapping's UUID)."""
    stream, arn = server.stream()
    mapping = server.client("lambda").create_event_source_mapping(
        FunctionName=server.function(), EventSourceArn=arn, StartingPosition="LATEST"
    )
    return stream, arn, mapping["UUID"]


# ---- inert event source mappings ----------------------------------------------------------------


def test_put_record_to_a_stream_with_a_mapping_stores_it(server):
    kinesis = server.client("kinesis")
    stream, _, _ = mapped_stream(server)
    # Unpatched moto invokes the mapped function in Docker for each record and answers 500.
    failed = error_code(lambda: kinesis.put_record(StreamName=stream, Data=b"one", PartitionKey="k")) is not None
    expect_defect(failed, server.patched, "PutRecord to a stream with an event source mapping fails")
    if server.patched:
        assert read_all(kinesis, stream) == [b"one"]


def test_put_records_to_a_stream_with_a_mapping_stores_them(server):
    kinesis = server.client("kinesis")
    stream, _, _ = mapped_stream(server)
    records = [{"Data": f"r{n}".encode(), "PartitionKey": f"k{n}"} for n in range(50)]
    failed = error_code(lambda: kinesis.put_records(StreamName=stream, Records=records)) is not None
    expect_defect(failed, server.patched, "PutRecords to a stream with an event source mapping fails")
    if server.patched:
        assert sorted(read_all(kinesis, stream)) == sorted(record["Data"] for record in records)


def test_a_deleted_mapping_leaves_puts_alone(server):
    kinesis = server.client("kinesis")
    stream, _, mapping = mapped_stream(server)
    server.client("lambda").delete_event_source_mapping(UUID=mapping)
    # moto keeps the deleted mapping on the stream and still invokes its function.
    failed = error_code(lambda: kinesis.put_record(StreamName=stream, Data=b"x", PartitionKey="k")) is not None
    expect_defect(failed, server.patched, "PutRecord fails after the stream's mapping was deleted")


def test_put_records_to_an_auto_stream_with_a_mapping_stores_them(local_kinesis):
    # AUTO distribution exists only on the patched server (moto_compat), where it puts with moto's
    # own Stream.put_record, the path that invokes mappings.
    server = Server(local_kinesis.endpoint_url, patched=True)
    kinesis = server.client("kinesis")
    name = f"readers-{uuid.uuid4().hex[:10]}"
    kinesis.create_stream(StreamName=name, StreamModeDetails={"StreamMode": "ON_DEMAND"})
    server.streams.append(name)
    arn = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
    try:
        kinesis.update_stream_record_distribution_strategy(StreamARN=arn, RecordDistributionStrategy="AUTO")
        server.client("lambda").create_event_source_mapping(
            FunctionName=server.function(), EventSourceArn=arn, StartingPosition="LATEST"
        )
        reply = kinesis.put_records(StreamARN=arn, Records=[{"Data": b"a", "PartitionKey": "k"} for _ in range(8)])
        assert reply["FailedRecordCount"] == 0
        assert len(read_all(kinesis, name)) == 8
    finally:
        server.cleanup()


def test_mappings_are_listed_read_updated_and_deleted(server):
    """What the fix must keep: a mapping is still a mapping for every Lambda call about it."""
    lam = server.client("lambda")
    _, arn, mapping = mapped_stream(server)
    listed = lam.list_event_source_mappings(EventSourceArn=arn)["EventSourceMappings"]
    assert [m["UUID"] for m in listed] == [mapping]
    assert lam.get_event_source_mapping(UUID=mapping)["EventSourceArn"] == arn
    assert lam.update_event_source_mapping(UUID=mapping, BatchSize=250)["BatchSize"] == 250
    lam.delete_event_source_mapping(UUID=mapping)
    assert lam.list_event_source_mappings(EventSourceArn=arn)["EventSourceMappings"] == []


def test_mappings_are_listed_by_their_function_however_it_is_named(server):
    lam = server.client("lambda")
    _, arn = server.stream()
    function = server.function()
    function_arn = lam.get_function(FunctionName=function)["Configuration"]["FunctionArn"]
    by_arn = lam.create_event_source_mapping(FunctionName=function_arn, EventSourceArn=arn, StartingPosition="LATEST")
    listed = lam.list_event_source_mappings(FunctionName=function)["EventSourceMappings"]
    expect_defect(listed == [], server.patched, "a mapping made with the function's ARN not listed by its name")
    if server.patched:
        assert [m["UUID"] for m in listed] == [by_arn["UUID"]]
        by_name = lam.list_event_source_mappings(FunctionName=function_arn)["EventSourceMappings"]
        assert [m["UUID"] for m in by_name] == [by_arn["UUID"]]


def test_the_state_dump_answers_once_a_function_exists(server):
    """moto's /moto-api/data.json reads every public attribute of every model; a function's docker_client
    imports docker and connects to it, which made the whole dump a 500 here."""
    name = server.function()
    try:
        with urllib.request.urlopen(f"{server.endpoint}/moto-api/data.json", timeout=30) as answer:
            dumped = json.loads(answer.read())
    except urllib.error.HTTPError as error:
        assert error.code == 500
        dumped = None
    expect_defect(dumped is None, server.patched, "the state dump fails once a Lambda function exists")
    if dumped is not None:
        assert name in [function.get("function_name") for function in dumped["awslambda"]["LambdaFunction"]]


# ---- a consumer's ARN as a mapping's source -------------------------------------------------------


def test_a_mapping_reads_through_an_enhanced_fan_out_consumer(server):
    kinesis, lam = server.client("kinesis"), server.client("lambda")
    _, arn = server.stream()
    consumer = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="fan-out")["Consumer"]["ConsumerARN"]
    function = server.function()
    created = error_code(
        lambda: lam.create_event_source_mapping(
            FunctionName=function, EventSourceArn=consumer, StartingPosition="LATEST"
        )
    )
    expect_defect(created is not None, server.patched, "a consumer ARN refused as a mapping's source")
    if server.patched:
        listed = lam.list_event_source_mappings(EventSourceArn=consumer)["EventSourceMappings"]
        assert [m["EventSourceArn"] for m in listed] == [consumer]
        assert lam.list_event_source_mappings(EventSourceArn=arn)["EventSourceMappings"] == []
        # AWS writes a consumer's ARN with its creation epoch after the name: that form is taken too.
        with_epoch = lam.create_event_source_mapping(
            FunctionName=function, EventSourceArn=f"{consumer}:1764300000", StartingPosition="LATEST"
        )
        assert with_epoch["EventSourceArn"] == f"{consumer}:1764300000"
        assert (
            error_code(
                lambda: lam.create_event_source_mapping(
                    FunctionName=function, EventSourceArn=f"{arn}/consumer/no-such-consumer", StartingPosition="LATEST"
                )
            )
            == "ResourceNotFoundException"
        )


# ---- Managed Service for Apache Flink ---------------------------------------------------------------


def test_a_flink_application_is_ready_then_started_stopped_and_deleted(server):
    flink = server.client("kinesisanalyticsv2")
    stream, _ = server.stream()
    name = f"readers-{uuid.uuid4().hex[:10]}"
    flink.create_application(
        ApplicationName=name,
        RuntimeEnvironment="FLINK-1_20",
        ServiceExecutionRole=server.role(),
        ApplicationConfiguration={
            "EnvironmentProperties": {
                "PropertyGroups": [
                    {"PropertyGroupId": "ConsumerConfigProperties", "PropertyMap": {"input.stream.name": stream}}
                ]
            }
        },
    )

    def status() -> str:
        return flink.describe_application(ApplicationName=name)["ApplicationDetail"]["ApplicationStatus"]

    created = status()
    started = error_code(lambda: flink.start_application(ApplicationName=name))
    expect_defect(
        (created, started) != ("READY", None), server.patched, "an application STARTING forever, never started"
    )
    if server.patched:
        assert status() == "RUNNING"
        assert error_code(lambda: flink.start_application(ApplicationName=name)) == "ResourceInUseException"
        flink.stop_application(ApplicationName=name)
        assert status() == "READY"
        flink.delete_application(ApplicationName=name, CreateTimestamp="2026-01-01T00:00:00Z")
        names = [app["ApplicationName"] for app in flink.list_applications()["ApplicationSummaries"]]
        assert name not in names


# ---- Firehose and Pipes: no patch needed -------------------------------------------------------------


def test_a_delivery_stream_reads_a_stream_and_puts_still_work(server):
    kinesis, firehose = server.client("kinesis"), server.client("firehose")
    stream, arn = server.stream()
    role = server.role()
    name = f"readers-{uuid.uuid4().hex[:10]}"
    firehose.create_delivery_stream(
        DeliveryStreamName=name,
        DeliveryStreamType="KinesisStreamAsSource",
        KinesisStreamSourceConfiguration={"KinesisStreamARN": arn, "RoleARN": role},
        ExtendedS3DestinationConfiguration={"RoleARN": role, "BucketARN": "arn:aws:s3:::readers-demo"},
    )
    described = firehose.describe_delivery_stream(DeliveryStreamName=name)["DeliveryStreamDescription"]
    assert described["DeliveryStreamStatus"] == "ACTIVE"
    assert described["Source"]["KinesisStreamSourceDescription"]["KinesisStreamARN"] == arn
    kinesis.put_record(StreamName=stream, Data=b"x", PartitionKey="k")
    firehose.delete_delivery_stream(DeliveryStreamName=name)


def test_a_pipe_reads_a_stream_and_runs(server):
    pipes = server.client("pipes")
    _, arn = server.stream()
    name = f"readers-{uuid.uuid4().hex[:10]}"
    created = pipes.create_pipe(
        Name=name,
        RoleArn=server.role(),
        Source=arn,
        SourceParameters={"KinesisStreamParameters": {"StartingPosition": "TRIM_HORIZON"}},
        Target="arn:aws:sqs:us-east-1:123456789012:readers-demo",
    )
    assert created["CurrentState"] == "CREATING"
    described = pipes.describe_pipe(Name=name)
    assert (described["Source"], described["CurrentState"]) == (arn, "RUNNING")
    pipes.delete_pipe(Name=name)


# ---- the `local` extra holds what these services import ---------------------------------------------

READER_MODULES = (
    "moto.awslambda.responses",
    "moto.firehose.responses",
    "moto.pipes.responses",
    "moto.kinesisanalyticsv2.responses",
    "moto.iam.responses",
    "moto.sqs.responses",
    "moto.cloudwatch.responses",
    "moto.dynamodb.responses",
)


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def local_extra_closure() -> set[str]:
    """Every distribution `pip install kconsole[local]` installs: the base dependencies and the extra's,
    and theirs, with their environment markers (and any extras they ask for) evaluated here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pending = [Requirement(text) for text in project["dependencies"] + project["optional-dependencies"]["local"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        requirement = pending.pop()
        name, extras = _name(requirement.name), frozenset(requirement.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for text in metadata.distribution(name).requires or []:
            child = Requirement(text)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras | {""}):
                pending.append(child)
    return {name for name, _ in seen}


def test_what_the_readers_services_import_comes_with_the_local_extra():
    """moto's Lambda, Firehose, Pipes, Flink, IAM, SQS, CloudWatch and DynamoDB modules, imported in a
    fresh interpreter, load nothing from a distribution outside the `local` extra (Lambda imports
    docker only to invoke a function, which the embedded server never does)."""
    code = (
        "import sys, json\nbefore = set(sys.modules)\n"
        + "".join(f"import {module}\n" for module in READER_MODULES)
        + "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    owners = metadata.packages_distributions()
    closure = local_extra_closure()
    outside = {
        module: owners[module]
        for module in loaded
        if module in owners and not {_name(owner) for owner in owners[module]} & closure
    }
    assert outside == {}
