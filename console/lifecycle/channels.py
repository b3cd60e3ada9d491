"""Channels (delivery of a stream's records to S3 or S3 Tables): the CreateChannel request read from a
file and checked against the Kinesis API model, a channel as plain JSON, and the plans to create and
delete one. The `channels` command and the console's Stream actions menu both use these."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from console.bounds import read_bounded
from console.errors import BadInput
from console.lifecycle.plans import Call, LifecyclePlan
from console.topology.model import StreamSummary

MAX_CONFIG_BYTES = 1024 * 1024  # a CreateChannel request is a few KiB; a bigger file is not one


def read_channel_config(path: str) -> dict[str, Any]:
    """The request, read within a bound and checked against the model before anything connects."""
    from console.backend.request_model import validate_request

    raw = read_bounded(path, MAX_CONFIG_BYTES, what="channel config", code="bad_request")
    try:
        request = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadInput(
            f"channel config {path} is not JSON: {getattr(error, 'msg', error)}", code="bad_request"
        ) from None
    if not isinstance(request, dict):
        raise BadInput(f"channel config {path} must be a JSON object (CreateChannel's request)", code="bad_request")
    validate_request("CreateChannel", request, where=f"channel config {path}")
    return request


def channel_json(raw: dict[str, Any]) -> dict[str, Any]:
    streams = raw.get("Streams") or raw.get("StreamConfigurationList") or []
    destination = raw.get("ChannelDestinationType") or (
        "S3"
        if raw.get("S3DestinationConfiguration")
        else "S3_TABLES"
        if raw.get("S3TablesDestinationConfiguration")
        else None
    )
    created: Any = raw.get("ChannelCreationTimestamp")
    document = {
        "name": raw.get("ChannelName"),
        "arn": raw.get("ChannelARN"),
        "status": raw.get("ChannelStatus"),
        "status_reason": raw.get("ChannelStatusReason"),
        "destination": destination,
        "streams": [s.get("StreamARN") for s in streams],
        "created": created.isoformat() if hasattr(created, "isoformat") else created,
    }
    for key in (
        "ServiceExecutionRoleARN",
        "S3DestinationConfiguration",
        "S3TablesDestinationConfiguration",
        "EncryptionConfiguration",
        "LoggingConfiguration",
    ):
        if raw.get(key) is not None:
            document[key] = raw[key]
    return document


def request_streams(request: dict[str, Any]) -> list[str]:
    """The names of the streams a CreateChannel request reads from."""
    return [s["StreamARN"].rsplit("/", 1)[-1] for s in request["StreamConfigurationList"]]


def plan_create(request: dict[str, Any], exists: bool, streams: Sequence[StreamSummary] = ()) -> LifecyclePlan:
    """`streams`: the request's streams as described now; CreateChannel takes on-demand streams only."""
    provisioned = [summary.name for summary in streams if summary.mode != "ON_DEMAND"]
    if provisioned:
        raise BadInput(
            f"channels read from on-demand streams only; {', '.join(provisioned)} is provisioned (switch with "
            f"`kconsole stream mode {provisioned[0]} on-demand`); nothing was called",
            code="not_on_demand",
        )
    name = request["ChannelName"]
    streams_read = request_streams(request)
    destination = "S3" if request.get("S3DestinationConfiguration") else "S3 Tables"
    consequences = (
        f"records of {', '.join(streams_read)} are delivered to {destination} from now on",
        "delivery is billed per GB; the stream cannot be deleted while the channel is active",
    )
    refusal = f"a channel named {name!r} already exists" if exists else None
    return LifecyclePlan(
        "create",
        name,
        f"create channel {name} to {destination}",
        (Call("CreateChannel", request),),
        consequences,
        refusal,
    )


async def plan_create_on(kinesis: Any, request: dict[str, Any]) -> LifecyclePlan:
    """plan_create with what it checks read from the endpoint first: the request's streams as they are
    now, and whether a channel of its name exists (the `channels` command and the console both ask)."""
    streams = [await kinesis.describe_stream_summary(name) for name in request_streams(request)]
    exists = any(channel.get("ChannelName") == request["ChannelName"] for channel in await kinesis.list_channels())
    return plan_create(request, exists, streams)


def plan_delete(name: str, arn: str, description: dict[str, Any]) -> LifecyclePlan:
    streams = ", ".join(s.rsplit("/", 1)[-1] for s in channel_json(description)["streams"]) or "its stream"
    return LifecyclePlan(
        "delete",
        name,
        f"delete channel {name}",
        (Call("DeleteChannel", {"ChannelARN": arn}),),
        (f"delivery from {streams} stops; what was delivered stays in the destination",),
    )
