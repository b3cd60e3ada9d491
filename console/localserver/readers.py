"""Fixes for moto 5.2.5's services that read a Kinesis stream (Lambda event source mappings, Managed
Service for Apache Flink), applied inside the embedded server process by console.localserver.moto_compat.apply().

Each fix has a test in tests/backend/test_moto_readers.py that runs against a patched and an unpatched
server, asserting the defect is present only in the unpatched one. Measured defects:

  inert mappings   a stream with a Lambda event source mapping answers every PutRecord and PutRecords
                   with a 500: moto invokes the function for each record, in Docker (and even after the
                   mapping is deleted, as the stream keeps it). Here a mapping is stored and listed,
                   never attached to its stream, so nothing is ever invoked and a put only stores
  by function      ListEventSourceMappings(FunctionName) matches the name exactly as the mapping was
                   created with: a mapping made with the function's ARN is not listed by its name, nor
                   the other way round (AWS lists the function's mappings however either names it)
  consumer source  CreateEventSourceMapping takes only a stream ARN as EventSourceArn; AWS also takes
                   an enhanced fan-out consumer's ARN (the mapping then reads through that consumer)
  flink status     a Managed Flink application is STARTING forever and cannot be started, stopped or
                   deleted; on AWS CreateApplication leaves it READY, StartApplication makes it RUNNING,
                   StopApplication READY again, and DeleteApplication removes it
  state dump       once a Lambda function exists, /moto-api/data.json answers 500: the dump reads every
                   public attribute of every model, and a function's docker_client imports docker and
                   connects to its daemon; the dump skips only TypeError, AttributeError and ValueError

Firehose (a KinesisStreamAsSource delivery stream) and EventBridge Pipes (a pipe with a stream as its
source: CREATING, then RUNNING when next read) need nothing here.
"""

from __future__ import annotations

import re
import threading
from typing import Any

# An enhanced fan-out consumer's ARN, as AWS writes it: the stream's ARN, /consumer/NAME, and
# :CREATION-EPOCH (moto's leave the epoch out; both are accepted).
CONSUMER_ARN = re.compile(r"^(?P<consumer>arn:[^:]+:kinesis:[^:]+:\d+:stream/[^/]+/consumer/[^/:]+)(?::\d+)?$")

_lock: threading.RLock | None = None


def apply(lock: threading.RLock) -> None:
    """Patch moto's Lambda and kinesisanalyticsv2 in this process; called once, by moto_compat.apply()
    with the lock every request to moto's Kinesis models holds."""
    global _lock
    _lock = lock
    from moto.awslambda import models as lambda_models
    from moto.kinesisanalyticsv2 import models as flink_models
    from moto.kinesisanalyticsv2 import responses as flink_responses
    from moto.utilities import docker_utilities

    _patch_event_source_mappings(lambda_models)
    _patch_docker_client(docker_utilities.DockerModel)
    _patch_flink(flink_models.Application, flink_responses)


# ---- Lambda event source mappings ----------------------------------------------------------------


def _patch_event_source_mappings(lambda_models: Any) -> None:
    LambdaBackend = lambda_models.LambdaBackend
    original_create = LambdaBackend.create_event_source_mapping

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        source = spec.get("EventSourceArn") or ""
        if not spec.get("FunctionName") or _service_of(source) != "kinesis":
            return original_create(self, spec)
        function = self._lambdas.get_function_by_name_or_arn_with_qualifier(spec["FunctionName"])
        if not _kinesis_source_exists(self.account_id, self.region_name, source):
            from moto.core.exceptions import JsonRESTError

            raise JsonRESTError("ResourceNotFoundException", "Invalid EventSourceArn")
        spec.update(RegionName=self.region_name, AccountId=self.account_id, FunctionArn=function.function_arn)
        mapping = lambda_models.EventSourceMapping(spec)
        # Stored and listed, never attached to the stream: moto's Stream.put_record invokes every
        # mapping the stream holds, which needs Docker, for every record put.
        self._event_source_mappings[mapping.uuid] = mapping
        return mapping

    LambdaBackend.create_event_source_mapping = create_event_source_mapping

    def list_event_source_mappings(self: Any, event_source_arn: str, function_name: str) -> list[Any]:
        mappings = list(self._event_source_mappings.values())
        if event_source_arn:
            mappings = [mapping for mapping in mappings if mapping.event_source_arn == event_source_arn]
        if function_name:
            # By the function, however either side names it (name, ARN, or an alias' ARN).
            wanted = self._lambdas.get_function_by_name_or_arn_with_qualifier(function_name).function_arn
            mappings = [mapping for mapping in mappings if mapping.function_arn == wanted]
        return mappings

    LambdaBackend.list_event_source_mappings = list_event_source_mappings


def _patch_docker_client(DockerModel: Any) -> None:
    """Docker out of reach (no docker package, no daemon) is an absent docker_client, which the state
    dump leaves out. Nothing here runs a function: the mappings are inert."""
    connect = DockerModel.docker_client.fget

    def docker_client(self: Any) -> Any:
        try:
            return connect(self)
        except Exception as unreachable:  # ImportError, or docker's own DockerException
            raise AttributeError(f"docker_client: Docker is out of reach ({unreachable})") from unreachable

    DockerModel.docker_client = property(docker_client)


def _service_of(arn: str) -> str:
    parts = arn.split(":")
    return parts[2].lower() if len(parts) > 2 else ""


def _kinesis_source_exists(account_id: str, region: str, arn: str) -> bool:
    """A stream with this ARN, or an enhanced fan-out consumer with it, in the mapping's region."""
    from moto.kinesis.models import kinesis_backends

    consumer = CONSUMER_ARN.match(arn)
    assert _lock is not None
    with _lock:
        streams = list(kinesis_backends[account_id][region].streams.values())
        if consumer is None:
            return any(stream.arn == arn for stream in streams)
        wanted = consumer.group("consumer")
        return any(c.consumer_arn == wanted or c.consumer_arn == arn for stream in streams for c in stream.consumers)


# ---- Managed Service for Apache Flink (kinesisanalyticsv2) -----------------------------------------

READY, RUNNING = "READY", "RUNNING"


def _patch_flink(Application: Any, responses: Any) -> None:
    original_init = Application.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.application_status = READY

    Application.__init__ = __init__
    Response = responses.KinesisAnalyticsV2Response

    def application(handler: Any) -> Any:
        from moto.core.exceptions import JsonRESTError

        name = handler._get_param("ApplicationName")
        found = handler.kinesisanalyticsv2_backend.applications.get(name)
        if found is None:
            raise JsonRESTError("ResourceNotFoundException", f"Application {name} not found")
        return found

    def set_status(handler: Any, allowed_from: str, status: str) -> str:
        from moto.core.exceptions import JsonRESTError

        app = application(handler)
        if app.application_status != allowed_from:
            raise JsonRESTError(
                "ResourceInUseException",
                f"Application {app.application_name} is {app.application_status}, not {allowed_from}",
            )
        app.application_status = status
        return "{}"

    def start_application(self: Any) -> str:
        return set_status(self, READY, RUNNING)

    def stop_application(self: Any) -> str:
        return set_status(self, RUNNING, READY)

    def delete_application(self: Any) -> str:
        app = application(self)
        del self.kinesisanalyticsv2_backend.applications[app.application_name]
        return "{}"

    Response.start_application = start_application
    Response.stop_application = stop_application
    Response.delete_application = delete_application
