"""Channels (delivery of a stream's records to S3 or S3 Tables): the CreateChannel and UpdateChannel
requests read from a file and checked against the Kinesis API model, a channel as plain JSON, and the
plans to create, update and delete one. The `channels` command and the console's Stream actions menu both use these."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from console.bounds import read_bounded
from console.errors import BadInput
from console.lifecycle.plans import Call, LifecyclePlan
from console.topology.model import StreamSummary

MAX_CONFIG_BYTES = 1024 * 1024  # a CreateChannel request is a few KiB; a bigger file is not one


# What UpdateChannel changes: a channel's destination settings (of the destination type it has) and logging.
UPDATABLE = ("S3DestinationConfiguration", "S3TablesDestinationConfiguration", "LoggingConfiguration")
# Stands in for the channel's ARN while an update file is checked: the file names no channel, the command does.
_SOME_CHANNEL_ARN = "arn:aws:kinesis:us-east-1:000000000000:channel/c"


def _json_object(path: str, operation: str) -> dict[str, Any]:
    raw = read_bounded(path, MAX_CONFIG_BYTES, what="channel config", code="bad_request")
    try:
        request = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadInput(
            f"channel config {path} is not JSON: {getattr(error, 'msg', error)}", code="bad_request"
        ) from None
    if not isinstance(request, dict):
        raise BadInput(f"channel config {path} must be a JSON object ({operation}'s request)", code="bad_request")
    return request


def read_channel_config(path: str) -> dict[str, Any]:
    """The request, read within a bound and checked against the model before anything connects."""
    from console.backend.request_model import validate_request

    request = _json_object(path, "CreateChannel")
    validate_request("CreateChannel", request, where=f"channel config {path}")
    return request


def read_channel_update(path: str) -> dict[str, Any]:
    """UpdateChannel's request without the channel (named on the command line): read within a bound,
    checked against the model, and changing something, before anything connects."""
    from console.backend.request_model import validate_request

    request = _json_object(path, "UpdateChannel")
    if "ChannelARN" in request:
        raise BadInput(
            f"channel config {path}: leave ChannelARN out, the channel is the NAME given to `channels update`",
            code="bad_request",
        )
    validate_request("UpdateChannel", {"ChannelARN": _SOME_CHANNEL_ARN, **request}, where=f"channel config {path}")
    if not any(member in request for member in UPDATABLE):
        raise BadInput(
            f"channel config {path} changes nothing: give {', '.join(UPDATABLE)} (UpdateChannel's members)",
            code="bad_request",
        )
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


def plan_update(name: str, arn: str, description: dict[str, Any], request: dict[str, Any]) -> LifecyclePlan:
    """The change of each member the request gives, against the channel as described now. AWS updates a
    channel's own destination type only, and an ACTIVE channel only: anything else is refused here."""
    for member in ("S3DestinationConfiguration", "S3TablesDestinationConfiguration"):
        if member in request and member not in description:
            raise BadInput(
                f"channel {name} has no {member}: UpdateChannel changes the destination type a channel has; "
                "nothing was called",
                code="bad_request",
            )
    status = description.get("ChannelStatus")
    refusal = None if status in (None, "ACTIVE") else f"channel {name} is {status}: it can be updated when ACTIVE"
    changes = []
    for member in UPDATABLE:
        now = description.get(member) or {}
        changes += [
            f"{member}.{key}: {_compact(now.get(key))} -> {_compact(value)}"
            for key, value in (request.get(member) or {}).items()
            if now.get(key) != value
        ]
    if not changes:
        return LifecyclePlan("update", name, f"channel {name} already has these settings")
    return LifecyclePlan(
        "update",
        name,
        f"update channel {name}",
        (Call("UpdateChannel", {"ChannelARN": arn, **request}),),
        (*changes, "delivery goes on while the channel is UPDATING"),
        refusal=refusal,
    )


def update_shown(description: dict[str, Any], request: dict[str, Any]) -> tuple[bool, str]:
    """Whether a channel as described now shows an UpdateChannel request applied (its outcome read back)."""
    for member in UPDATABLE:
        if member not in request:
            continue
        now = description.get(member) or {}
        if any(now.get(key) != value for key, value in request[member].items()):
            return False, f"{member} is still {_compact(now)}"
    return True, f"the channel shows the change ({description.get('ChannelStatus')})"


def _compact(value: Any) -> str:
    return "none" if value is None else json.dumps(value, sort_keys=True, default=str)


def plan_delete(name: str, arn: str, description: dict[str, Any]) -> LifecyclePlan:
    streams = ", ".join(s.rsplit("/", 1)[-1] for s in channel_json(description)["streams"]) or "its stream"
    return LifecyclePlan(
        "delete",
        name,
        f"delete channel {name}",
        (Call("DeleteChannel", {"ChannelARN": arn}),),
        (f"delivery from {streams} stops; what was delivered stays in the destination",),
    )
