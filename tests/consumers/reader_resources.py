"""Readers of a stream created on the embedded server over HTTP, as their services create them: Lambda
functions and event source mappings, Firehose delivery streams, EventBridge pipes, Managed Flink
applications, and the CloudWatch points those services publish about their lag."""

from __future__ import annotations

import contextlib
import io
import json
import uuid
import zipfile
from datetime import datetime

from tests.consumers.kcl_tables import aws_client

ROLE_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class ReaderFactory:
    """Clients for one server's reader services, opened once for a test."""

    def __init__(self, endpoint_url: str) -> None:
        self.endpoint_url = endpoint_url
        self._stack = contextlib.AsyncExitStack()
        self._clients: dict[str, object] = {}
        self._role: str | None = None

    async def __aenter__(self) -> ReaderFactory:
        for service in ("iam", "lambda", "firehose", "pipes", "kinesisanalyticsv2", "cloudwatch"):
            self._clients[service] = await self._stack.enter_async_context(aws_client(service, self.endpoint_url))
        return self

    async def __aexit__(self, *exc) -> None:
        await self._stack.aclose()

    def __getattr__(self, service: str):
        clients = self.__dict__.get("_clients", {})
        if service in clients:
            return clients[service]
        raise AttributeError(service)

    async def role(self) -> str:
        if self._role is None:
            answer = await self.iam.create_role(RoleName=unique("readers"), AssumeRolePolicyDocument=ROLE_POLICY)
            self._role = answer["Role"]["Arn"]
        return self._role

    async def function(self, name: str | None = None) -> str:
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("index.py", "def handler(event, context):\n    return None\n")
        name = name or unique("fn")
        await self.__getattr__("lambda").create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=await self.role(),
            Handler="index.handler",
            Code={"ZipFile": code.getvalue()},
        )
        return name

    async def mapping(self, source_arn: str, function: str, **settings) -> dict:
        return await self.__getattr__("lambda").create_event_source_mapping(
            EventSourceArn=source_arn, FunctionName=function, StartingPosition="LATEST", **settings
        )

    async def delivery_stream(self, stream_arn: str, name: str | None = None) -> str:
        name = name or unique("ds")
        role = await self.role()
        await self.firehose.create_delivery_stream(
            DeliveryStreamName=name,
            DeliveryStreamType="KinesisStreamAsSource",
            KinesisStreamSourceConfiguration={"KinesisStreamARN": stream_arn, "RoleARN": role},
            ExtendedS3DestinationConfiguration={"RoleARN": role, "BucketARN": "arn:aws:s3:::readers-bucket"},
        )
        return name

    async def pipe(self, stream_arn: str, name: str | None = None) -> str:
        name = name or unique("pipe")
        await self.pipes.create_pipe(
            Name=name,
            Source=stream_arn,
            Target="arn:aws:sqs:us-east-1:123456789012:readers-queue",
            RoleArn=await self.role(),
            SourceParameters={"KinesisStreamParameters": {"StartingPosition": "LATEST", "BatchSize": 10}},
        )
        return name

    async def flink(self, properties: dict[str, str], name: str | None = None) -> str:
        name = name or unique("flink")
        await self.kinesisanalyticsv2.create_application(
            ApplicationName=name,
            RuntimeEnvironment="FLINK-1_18",
            ServiceExecutionRole=await self.role(),
            ApplicationConfiguration={
                "EnvironmentProperties": {
                    "PropertyGroups": [{"PropertyGroupId": "consumer", "PropertyMap": properties}]
                }
            },
        )
        return name

    async def metric(self, namespace: str, name: str, dimensions: dict[str, str], value: float, at: datetime) -> None:
        await self.cloudwatch.put_metric_data(
            Namespace=namespace,
            MetricData=[
                {
                    "MetricName": name,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                    "Timestamp": at,
                    "Value": value,
                }
            ],
        )
