"""What one account's Kinesis (one moto backend) holds beyond moto's models — the billing commitment
and channels — and the resources a request names by ARN, with their tags. Stored on moto's own
objects (streams, consumers, the per-account backend) so that DeleteStream, ListStreams and the short
path see one state."""

from __future__ import annotations

import base64
import binascii
import random
import re
import time
from datetime import UTC, datetime
from typing import Any

from console.localserver.validation import invalid, not_found

TAGS_PER_RESOURCE_MAX = 50
TAG_TEXT = re.compile(r"[\w\s.:/=+\-@]*")
CHANNEL_SETTLE_SECONDS = 0.5  # CREATING/UPDATING for this long, then ACTIVE


class _State:
    """What one account's Kinesis (one moto backend) holds beyond moto's models."""

    def __init__(self) -> None:
        self.commitment: dict[str, Any] = {"Status": "DISABLED"}
        self.channels: dict[str, dict[str, Any]] = {}  # by ARN, in creation order


def account_state(backend: Any) -> _State:
    state = backend.__dict__.get("kconsole_state")
    if state is None:
        state = backend.kconsole_state = _State()
    return state


def backend_of(stream: Any) -> Any:
    from moto.kinesis.models import kinesis_backends

    return kinesis_backends[stream.account_id][stream.region]


def new_stream_id() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    pick = random.SystemRandom().choice
    return "".join(pick(alphabet) for _ in range(20)) + "-" + "".join(pick(alphabet) for _ in range(3))


def on_demand(stream: Any) -> bool:
    return stream.stream_mode.get("StreamMode") == "ON_DEMAND"


def commitment_of(backend: Any) -> dict[str, Any]:
    """The account's commitment, with a requested end that has come due applied first."""
    commitment = account_state(backend).commitment
    if (
        commitment["Status"] == "ENABLED_UNTIL_EARLIEST_ALLOWED_END"
        and time.time() >= commitment["EarliestAllowedEndAt"]
    ):
        commitment.update(Status="DISABLED", EndedAt=commitment["EarliestAllowedEndAt"])
        commitment.pop("EarliestAllowedEndAt", None)
        for stream in backend.streams.values():
            stream.warm_throughput_mibps = None
    return commitment


def committed(backend: Any) -> bool:
    return commitment_of(backend)["Status"] in ("ENABLED", "ENABLED_UNTIL_EARLIEST_ALLOWED_END")


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def stream_by_arn(backend: Any, arn: str) -> Any:
    for stream in backend.streams.values():
        if stream.arn == arn:
            return stream
    raise not_found(f"Stream {arn.rsplit('/', 1)[-1]} under account {backend.account_id} not found.")


def stream_named(backend: Any, params: dict[str, Any]) -> Any:
    """The stream a request names by StreamARN and/or StreamName (ResourceNotFound otherwise)."""
    if params.get("StreamARN"):
        return stream_by_arn(backend, params["StreamARN"])
    if params.get("StreamName"):
        return backend.describe_stream(stream_arn=None, stream_name=params["StreamName"])
    raise invalid("Either StreamARN or StreamName must be given.")


def resource_by_arn(backend: Any, arn: str) -> tuple[str, Any]:
    """("stream" | "consumer" | "channel", the object) for a resource ARN; ResourceNotFound if absent."""
    resource = arn.split(":", 5)[5] if arn.count(":") >= 5 else ""
    if resource.startswith("channel/"):
        channel = account_state(backend).channels.get(arn)
        if channel is None:
            raise not_found(f"Channel {resource[len('channel/') :]} under account {backend.account_id} not found.")
        return "channel", channel
    if "/consumer/" in resource:
        for stream in backend.streams.values():
            consumer = stream.get_consumer_by_arn(arn)
            if consumer is not None:
                return "consumer", consumer
        raise not_found(f"Consumer {arn}, account {backend.account_id} not found.")
    return "stream", stream_by_arn(backend, arn)


def tags_of(kind: str, resource: Any) -> dict[str, str]:
    if kind == "channel":
        return resource["Tags"]
    if kind == "consumer" and not hasattr(resource, "tags"):
        resource.tags = {}
    return resource.tags


def check_tags(tags: dict[str, str], existing: dict[str, str]) -> None:
    for key, value in tags.items():
        if key.lower().startswith("aws:"):
            raise invalid(f"Tag key {key!r}: the aws: prefix is reserved for AWS use.")
        for text in (key, value):
            if not TAG_TEXT.fullmatch(text):
                raise invalid(
                    f"Tag {key!r}: tags may only contain Unicode letters, digits, white space, "
                    "or these symbols: _ . : / = + - @"
                )
    if len(set(existing) | set(tags)) > TAGS_PER_RESOURCE_MAX:
        raise invalid(f"A resource can have at most {TAGS_PER_RESOURCE_MAX} tags.")


def channel_status(channel: dict[str, Any]) -> str:
    if (
        channel["ChannelStatus"] in ("CREATING", "UPDATING")
        and time.time() - channel["changed"] >= CHANNEL_SETTLE_SECONDS
    ):
        channel["ChannelStatus"] = "ACTIVE"
    return channel["ChannelStatus"]


def channel_streams(channel: dict[str, Any]) -> list[str]:
    return [config["StreamARN"] for config in channel["StreamConfigurationList"]]


def channels_of(backend: Any, stream: Any) -> list[dict[str, Any]]:
    return [
        channel
        for channel in account_state(backend).channels.values()
        if stream.arn in channel_streams(channel) and channel_status(channel) != "DELETING"
    ]


def encode_token_name(name: str) -> str:
    """A NextToken: the last name (or ARN) of the page, to go on after."""
    return base64.urlsafe_b64encode(name.encode()).decode()


def decode_token_name(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid(f"Invalid NextToken: {token[:40]}") from None
