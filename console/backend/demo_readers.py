"""One reader of each kind on a stream, as example data for `kconsole demo readers` (the embedded server
or a loopback endpoint only; the command checks): an enhanced fan-out consumer, a Lambda function with
an event source mapping on the stream and another on the consumer, a Firehose delivery stream, an
EventBridge pipe, a running Managed Flink application naming the stream, and the CloudWatch metrics
those services publish about how far behind each one reads, one point a minute for the last minutes.

The KCL application's lease table is the command's to write (console.consumers.sample_leases): this
module puts the records its checkpoints stay behind and says where in each shard they checkpoint.

Every reader is made on its own: a server without one of these services (kinesis-mock serves only
Kinesis) costs that reader one line saying why, never the others.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.backend.cloudwatch import minute_points
from console.backend.kinesis import KinesisBackend
from console.errors import BackendError, BadInput

NAME_LIMIT = 64  # a Lambda function's, delivery stream's and pipe's name
ROLE_NAME = "kconsole-demo-readers"
ROLE_PATH = "/kconsole-demo/"
ROLE_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {
                "Service": [
                    "lambda.amazonaws.com",
                    "firehose.amazonaws.com",
                    "pipes.amazonaws.com",
                    "kinesisanalytics.amazonaws.com",
                ]
            },
            "Action": "sts:AssumeRole",
        }
    ],
}
FUNCTION_CODE = "def handler(event, context):\n    return {'batchItemFailures': []}\n"
FLINK_RUNTIME = "FLINK-1_20"
RECORDS = 300  # put on the stream so the KCL application's checkpoints have records behind them
METRIC_MINUTES = 10

# How far behind each reader is, in milliseconds, at the latest point: distinct, so "worst first"
# has one order, and the Flink application ten minutes behind (what the fleet calls trouble).
LAG_MS = {
    "efo_consumer": 1_200.0,
    "lambda": 45_000.0,
    "firehose": 4_000.0,
    "flink": 600_000.0,
}


@dataclass(frozen=True)
class DemoNames:
    """What the demo calls each thing it makes on STREAM."""

    stream: str
    consumer: str
    function: str
    delivery_stream: str
    pipe: str
    pipe_target: str
    application: str
    lease_table: str
    bucket: str

    @classmethod
    def for_stream(cls, stream: str) -> DemoNames:
        longest = max(len(suffix) for suffix in ("-reader", "-to-s3", "-pipe", "-pipe-target"))
        if len(stream) > NAME_LIMIT - longest:
            raise BadInput(
                f"kconsole demo readers names its readers after the stream, and a Lambda function, delivery "
                f"stream or pipe name has at most {NAME_LIMIT} characters: use a stream name of at most "
                f"{NAME_LIMIT - longest} characters (got {len(stream)})",
                code="usage",
            )
        plain = stream.replace(".", "-")  # Lambda and SQS names take no dots
        return cls(
            stream=stream,
            consumer=f"{stream}-fan-out",
            function=f"{plain}-reader",
            delivery_stream=f"{stream}-to-s3",
            pipe=f"{stream}-pipe",
            pipe_target=f"{plain}-pipe-target",
            application=f"{stream}-flink",
            lease_table=f"{stream}-kcl-app",
            bucket="kconsole-demo-readers",
        )


@dataclass
class DemoReader:
    kind: str  # efo_consumer, lambda_mapping, lambda_mapping_efo, firehose, pipe, flink, kcl
    name: str
    arn: str | None = None
    lag_ms: float | None = None  # the latest point of the metric put for it; None: no metric
    problem: str | None = None  # why it could not be made on this server

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DemoReaders:
    names: DemoNames
    stream_arn: str
    readers: list[DemoReader] = field(default_factory=list)
    records_put: int = 0
    metric_points: int = 0
    metrics_problem: str | None = None  # why no metric could be put (a server without CloudWatch)
    checkpoints: dict[str, str] = field(default_factory=dict)  # shard id -> a sequence number in it


class ReaderDemo:
    """Makes the demo's readers of one stream through an open backend's clients."""

    def __init__(self, backend: KinesisBackend, names: DemoNames) -> None:
        self.backend = backend
        self.names = names

    async def _call(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        client = await self.backend._side_client(service)
        return await self.backend.call(client, operation, service=service, **params)

    async def existing(self, stream_arn: str) -> list[str]:
        """The demo's readers already on the server, each as "kind name" (a service the server does not
        serve holds none)."""
        names = self.names
        found = []
        checks = (
            ("consumer", names.consumer, self._consumer_names(stream_arn)),
            ("Lambda function", names.function, self._names("lambda", "ListFunctions", "Functions", "FunctionName")),
            (
                "delivery stream",
                names.delivery_stream,
                self._names("firehose", "ListDeliveryStreams", "DeliveryStreamNames", None, Limit=10000),
            ),
            ("pipe", names.pipe, self._names("pipes", "ListPipes", "Pipes", "Name", NamePrefix=names.pipe)),
            (
                "Flink application",
                names.application,
                self._names("kinesisanalyticsv2", "ListApplications", "ApplicationSummaries", "ApplicationName"),
            ),
        )
        for what, name, listed in checks:
            if name in await listed:
                found.append(f"{what} {name}")
        return found

    async def _consumer_names(self, stream_arn: str) -> list[str]:
        return [consumer.name for consumer in await self.backend.list_stream_consumers(stream_arn)]

    async def _names(self, service: str, operation: str, key: str, field_name: str | None, **params: Any) -> list[str]:
        try:
            page = await self._call(service, operation, **params)
        except BackendError:
            return []
        return [item if field_name is None else item[field_name] for item in page.get(key, [])]

    async def make(self, stream_arn: str) -> DemoReaders:
        made = DemoReaders(self.names, stream_arn)
        made.records_put, made.checkpoints = await self._put_records()
        consumer = await self._reader(made, "efo_consumer", self.names.consumer, self._register_consumer(stream_arn))
        role = await self._role()
        function = await self._function(role)
        for kind, source in (("lambda_mapping", stream_arn), ("lambda_mapping_efo", consumer)):
            if source is None:
                made.readers.append(DemoReader(kind, self.names.function, problem="no consumer to read through"))
            else:
                await self._reader(made, kind, self.names.function, self._mapping(function, source))
        await self._reader(made, "firehose", self.names.delivery_stream, self._delivery_stream(role, stream_arn))
        await self._reader(made, "pipe", self.names.pipe, self._pipe(role, stream_arn))
        await self._reader(made, "flink", self.names.application, self._application(role))
        made.metric_points = await self._put_metrics(made)
        return made

    async def _reader(self, made: DemoReaders, kind: str, name: str, making: Any) -> str | None:
        """Await `making` (returns the reader's ARN); a failure becomes that reader's problem line."""
        try:
            arn = await making
        except BackendError as error:
            made.readers.append(DemoReader(kind, name, problem=error.message))
            return None
        made.readers.append(DemoReader(kind, name, arn))
        made_arn: str | None = arn
        return made_arn

    async def _put_records(self) -> tuple[int, dict[str, str]]:
        """RECORDS records over many keys; returns how many, and for each shard the sequence number a
        third of the way through its records (the KCL application checkpoints there)."""
        records = [
            {"Data": json.dumps({"order": n, "user": f"user-{n % 97}"}).encode(), "PartitionKey": f"user-{n % 97}"}
            for n in range(RECORDS)
        ]
        by_shard: dict[str, list[str]] = {}
        for offset in range(0, len(records), 500):
            answer = await self.backend.put_records(self.names.stream, records[offset : offset + 500])
            for entry in answer.get("Records", []):
                if "SequenceNumber" in entry:
                    by_shard.setdefault(entry["ShardId"], []).append(entry["SequenceNumber"])
        checkpoints = {shard: sequences[len(sequences) // 3] for shard, sequences in by_shard.items()}
        return sum(len(sequences) for sequences in by_shard.values()), checkpoints

    async def _register_consumer(self, stream_arn: str) -> str:
        return (await self.backend.register_stream_consumer(stream_arn, self.names.consumer)).arn

    async def _role(self) -> str | BackendError:
        """The demo's IAM role (one for every demo on the server), made once."""
        try:
            roles = (await self._call("iam", "ListRoles", PathPrefix=ROLE_PATH)).get("Roles", [])
            for role in roles:
                if role["RoleName"] == ROLE_NAME:
                    return str(role["Arn"])
            answer = await self._call(
                "iam", "CreateRole", RoleName=ROLE_NAME, Path=ROLE_PATH, AssumeRolePolicyDocument=json.dumps(ROLE_TRUST)
            )
            return str(answer["Role"]["Arn"])
        except BackendError as error:
            return error

    async def _function(self, role: str | BackendError) -> str | BackendError:
        """The demo's Lambda function's ARN, or why it could not be made (each mapping says so)."""
        if isinstance(role, BackendError):
            return role
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("index.py", FUNCTION_CODE)
        try:
            answer = await self._call(
                "lambda",
                "CreateFunction",
                FunctionName=self.names.function,
                Runtime="python3.12",
                Role=role,
                Handler="index.handler",
                Code={"ZipFile": code.getvalue()},
                Description=f"kconsole demo: reads {self.names.stream}",
            )
        except BackendError as error:
            return error
        return str(answer["FunctionArn"])

    async def _mapping(self, function: str | BackendError, source: str) -> str:
        if isinstance(function, BackendError):
            raise function
        answer = await self._call(
            "lambda",
            "CreateEventSourceMapping",
            FunctionName=function,
            EventSourceArn=source,
            StartingPosition="LATEST",
            BatchSize=100,
        )
        return str(answer["EventSourceMappingArn"])

    async def _delivery_stream(self, role: str | BackendError, stream_arn: str) -> str:
        if isinstance(role, BackendError):
            raise role
        answer = await self._call(
            "firehose",
            "CreateDeliveryStream",
            DeliveryStreamName=self.names.delivery_stream,
            DeliveryStreamType="KinesisStreamAsSource",
            KinesisStreamSourceConfiguration={"KinesisStreamARN": stream_arn, "RoleARN": role},
            ExtendedS3DestinationConfiguration={
                "RoleARN": role,
                "BucketARN": f"arn:aws:s3:::{self.names.bucket}",
                "Prefix": f"{self.names.stream}/",
            },
        )
        return str(answer["DeliveryStreamARN"])

    async def _pipe(self, role: str | BackendError, stream_arn: str) -> str:
        if isinstance(role, BackendError):
            raise role
        queue_url = (await self._call("sqs", "CreateQueue", QueueName=self.names.pipe_target))["QueueUrl"]
        attributes = await self._call("sqs", "GetQueueAttributes", QueueUrl=queue_url, AttributeNames=["QueueArn"])
        answer = await self._call(
            "pipes",
            "CreatePipe",
            Name=self.names.pipe,
            RoleArn=role,
            Source=stream_arn,
            SourceParameters={"KinesisStreamParameters": {"StartingPosition": "LATEST", "BatchSize": 100}},
            Target=attributes["Attributes"]["QueueArn"],
        )
        return str(answer["Arn"])

    async def _application(self, role: str | BackendError) -> str:
        if isinstance(role, BackendError):
            raise role
        properties = {
            "input.stream.name": self.names.stream,
            "aws.region": self.backend.region,
            "flink.stream.initpos": "LATEST",
        }
        answer = await self._call(
            "kinesisanalyticsv2",
            "CreateApplication",
            ApplicationName=self.names.application,
            RuntimeEnvironment=FLINK_RUNTIME,
            ServiceExecutionRole=role,
            ApplicationConfiguration={
                "EnvironmentProperties": {
                    "PropertyGroups": [{"PropertyGroupId": "ConsumerConfigProperties", "PropertyMap": properties}]
                }
            },
        )
        await self._call("kinesisanalyticsv2", "StartApplication", ApplicationName=self.names.application)
        return str(answer["ApplicationDetail"]["ApplicationARN"])

    async def _put_metrics(self, made: DemoReaders) -> int:
        """The metrics each made reader's service publishes, one point a minute for METRIC_MINUTES."""
        made_kinds = {reader.kind for reader in made.readers if reader.problem is None}
        names = self.names
        series: dict[str, list[dict[str, Any]]] = {}

        def add(namespace: str, metric: str, unit: str, dimensions: dict[str, str], values: list[float]) -> None:
            series.setdefault(namespace, []).extend(
                minute_points(metric, unit, dimensions, values, datetime.now(UTC).replace(second=0, microsecond=0))
            )

        if "efo_consumer" in made_kinds:
            add(
                "AWS/Kinesis",
                "SubscribeToShardEvent.MillisBehindLatest",
                "Milliseconds",
                {"StreamName": names.stream, "ConsumerName": names.consumer},
                steady(LAG_MS["efo_consumer"], 150),
            )
        if made_kinds & {"lambda_mapping", "lambda_mapping_efo"}:
            function = {"FunctionName": names.function}
            add("AWS/Lambda", "IteratorAge", "Milliseconds", function, steady(LAG_MS["lambda"], 4_000))
            add("AWS/Lambda", "Errors", "Count", function, [float(minute % 4 == 0) for minute in range(METRIC_MINUTES)])
            add("AWS/Lambda", "Throttles", "Count", function, [0.0] * METRIC_MINUTES)
        if "firehose" in made_kinds:
            delivery = {"DeliveryStreamName": names.delivery_stream}
            add("AWS/Firehose", "KinesisMillisBehindLatest", "Milliseconds", delivery, steady(LAG_MS["firehose"], 500))
            add("AWS/Firehose", "DataReadFromKinesisStream.Records", "Count", delivery, steady(6_000, 300))
            add("AWS/Firehose", "DataReadFromKinesisStream.Bytes", "Bytes", delivery, steady(420_000, 20_000))
        if "flink" in made_kinds:
            # Falling behind for the whole window: from a minute behind to ten.
            behind = [LAG_MS["flink"] * (METRIC_MINUTES - minute) / METRIC_MINUTES for minute in range(METRIC_MINUTES)]
            add(
                "AWS/KinesisAnalytics", "millisBehindLatest", "Milliseconds", {"Application": names.application}, behind
            )
        try:
            for namespace, points in series.items():
                await self.backend.put_metric_data(namespace, points)
        except BackendError as error:
            made.metrics_problem = error.message
            return 0
        lags = {
            "efo_consumer": LAG_MS["efo_consumer"],
            "lambda_mapping": LAG_MS["lambda"],
            "lambda_mapping_efo": LAG_MS["lambda"],
            "firehose": LAG_MS["firehose"],
            "flink": LAG_MS["flink"],
        }
        for reader in made.readers:
            if reader.problem is None:
                reader.lag_ms = lags.get(reader.kind)
        return sum(len(points) for points in series.values())


def steady(latest: float, wobble: float) -> list[float]:
    """METRIC_MINUTES values, newest first, that end at `latest` and wobble around it before."""
    return [latest + wobble * ((minute * 7) % 5 - 2) / 2 if minute else latest for minute in range(METRIC_MINUTES)]
