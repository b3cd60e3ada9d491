"""Kinesis channels on the embedded server (Create/Describe/List/Update/DeleteChannel), which moto
5.2.5 predates: a channel delivers one on-demand stream to S3 or S3 Tables, settles to ACTIVE a moment
after each change, and keeps its stream from being deleted (console.localserver.today)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from console.localserver.accounts import (
    account_state,
    channel_status,
    channel_streams,
    check_tags,
    decode_token_name,
    encode_token_name,
    on_demand,
    stream_by_arn,
    utc,
)
from console.localserver.validation import in_use, invalid, not_found, validated

CHANNELS_PAGE_MAX = 100


def _channel_description(channel: dict[str, Any]) -> dict[str, Any]:
    channel_status(channel)
    return {key: value for key, value in channel.items() if key not in ("Tags", "changed")}


def _channel_summary(channel: dict[str, Any]) -> dict[str, Any]:
    return {
        "ChannelName": channel["ChannelName"],
        "ChannelARN": channel["ChannelARN"],
        "ChannelId": channel["ChannelId"],
        "ChannelStatus": channel_status(channel),
        "ChannelCreationTimestamp": channel["ChannelCreationTimestamp"],
        "ChannelDestinationType": "S3" if "S3DestinationConfiguration" in channel else "S3_TABLES",
        "Streams": [
            {"StreamARN": config["StreamARN"], "StreamCreationTimestamp": config["StreamCreationTimestamp"]}
            for config in channel["StreamConfigurationList"]
        ],
    }


def _new_channel(backend: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A channel from a validated CreateChannel request, with the rules the API reference states
    beyond the model: one destination, one source stream (on-demand), formats per destination."""
    # Exactly one of the two is given (checked next); Any, as mypy cannot follow that check.
    s3: Any = params.get("S3DestinationConfiguration")
    tables: Any = params.get("S3TablesDestinationConfiguration")
    if (s3 is None) == (tables is None):
        raise invalid("Specify either S3DestinationConfiguration or S3TablesDestinationConfiguration, but not both.")
    sources = params["StreamConfigurationList"]
    if len(sources) != 1:
        raise invalid(f"A channel reads one stream; StreamConfigurationList has {len(sources)}.")
    stream = stream_by_arn(backend, sources[0]["StreamARN"])
    if not on_demand(stream):
        raise invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "channels are supported for ON_DEMAND streams only."
        )
    record_format = sources[0]["RecordConfiguration"]
    kind = record_format["RecordFormatType"]
    if tables is not None:
        if kind not in ("JSON", "GSR_JSON"):
            raise invalid(f"RecordFormatType {kind} is not supported for streaming table (S3 Tables) destinations.")
        if not record_format.get("GSRSchemaARN"):
            raise invalid("GSRSchemaARN is required when the channel destination is a streaming table.")
        if len(tables["S3TablesConfigurationList"]) != 1:
            raise invalid("A channel writes to one table; S3TablesConfigurationList must have one entry.")
    elif kind == "GSR_JSON":
        raise invalid("RecordFormatType GSR_JSON is supported only for streaming table (S3 Tables) destinations.")
    name = params["ChannelName"]
    arn = f"arn:aws:kinesis:{backend.region_name}:{backend.account_id}:channel/{name}"
    if arn in account_state(backend).channels:
        raise in_use(f"Channel {name} under account {backend.account_id} already exists.")
    now = time.time()
    channel: dict[str, Any] = {
        "ChannelName": name,
        "ChannelARN": arn,
        "ChannelId": str(uuid.uuid4()),
        "ChannelStatus": "CREATING",
        "ChannelCreationTimestamp": utc(now),
        "ServiceExecutionRoleARN": params["ServiceExecutionRoleARN"],
        "StreamConfigurationList": [
            {
                "StreamARN": stream.arn,
                "StreamCreationTimestamp": stream.creation_datetime,
                "RecordConfiguration": record_format,
            }
        ],
        "LoggingConfiguration": params.get("LoggingConfiguration") or {"CloudWatchLogs": {"Enabled": False}},
        "Tags": dict(params.get("Tags") or {}),
        "changed": now,
    }
    if s3 is not None:
        storage = s3["StorageConfiguration"]
        channel["S3DestinationConfiguration"] = {
            "DataFreshnessInSeconds": s3.get("DataFreshnessInSeconds", 300),
            # The API reference: without one, the dead-letter queue is the destination bucket, error prefix.
            "DeadLetterQueueS3Configuration": s3.get("DeadLetterQueueS3Configuration")
            or {
                "BucketARN": storage["BucketARN"],
                "ExpectedBucketOwner": storage["ExpectedBucketOwner"],
                "ErrorOutputPrefix": "error/",
            },
            "StorageConfiguration": storage,
        }
    else:
        channel["S3TablesDestinationConfiguration"] = {
            "DataFreshnessInSeconds": tables.get("DataFreshnessInSeconds", 300),
            "DeadLetterQueueS3Configuration": tables["DeadLetterQueueS3Configuration"],
            "S3TablesConfigurationList": tables["S3TablesConfigurationList"],
        }
    if params.get("EncryptionConfiguration"):
        channel["EncryptionConfiguration"] = params["EncryptionConfiguration"]
    check_tags(channel["Tags"], {})
    return channel


def _channel(backend: Any, arn: str) -> dict[str, Any]:
    channel = account_state(backend).channels.get(arn)
    if channel is None:
        raise not_found(f"Channel {arn.rsplit('/', 1)[-1]} under account {backend.account_id} not found.")
    return channel


def patch(KinesisResponse: Any) -> None:
    from moto.core.responses import ActionResult, EmptyResult

    def create_channel(self) -> Any:
        params = validated(self, "CreateChannel")
        backend = self.kinesis_backend
        channel = _new_channel(backend, params)
        account_state(backend).channels[channel["ChannelARN"]] = channel
        return ActionResult({"ChannelDescription": _channel_description(channel)})

    def describe_channel(self) -> Any:
        params = validated(self, "DescribeChannel")
        return ActionResult(
            {"ChannelDescription": _channel_description(_channel(self.kinesis_backend, params["ChannelARN"]))}
        )

    def update_channel(self) -> Any:
        params = validated(self, "UpdateChannel")
        channel = _channel(self.kinesis_backend, params["ChannelARN"])
        if channel_status(channel) != "ACTIVE":
            raise in_use(
                f"Channel {channel['ChannelName']} is {channel['ChannelStatus']}; it can be updated when ACTIVE."
            )
        for member in ("S3DestinationConfiguration", "S3TablesDestinationConfiguration"):
            if member in params:
                if member not in channel:
                    raise invalid(
                        f"Channel {channel['ChannelName']} has no {member}; only its own destination "
                        "type can be updated."
                    )
                channel[member]["DataFreshnessInSeconds"] = params[member]["DataFreshnessInSeconds"]
        if "LoggingConfiguration" in params:
            channel["LoggingConfiguration"] = params["LoggingConfiguration"]
        channel.update(ChannelStatus="UPDATING", changed=time.time())
        return ActionResult({"ChannelDescription": _channel_description(channel)})

    def delete_channel(self) -> Any:
        params = validated(self, "DeleteChannel")
        backend = self.kinesis_backend
        _channel(backend, params["ChannelARN"])
        del account_state(backend).channels[params["ChannelARN"]]
        return EmptyResult()

    def list_channels(self) -> Any:
        params = validated(self, "ListChannels")
        backend = self.kinesis_backend
        wanted = {entry["StreamARN"] for entry in params.get("StreamFilter") or []}
        channels = [
            channel
            for channel in account_state(backend).channels.values()
            if not wanted or wanted & set(channel_streams(channel))
        ]
        start = 0
        if params.get("NextToken"):
            names = [channel["ChannelARN"] for channel in channels]
            after = decode_token_name(params["NextToken"])
            start = names.index(after) + 1 if after in names else len(names)
        size = min(params.get("MaxResults", CHANNELS_PAGE_MAX), CHANNELS_PAGE_MAX)
        page = channels[start : start + size]
        result: dict[str, Any] = {"ChannelSummaries": [_channel_summary(channel) for channel in page]}
        if start + size < len(channels):
            result["NextToken"] = encode_token_name(page[-1]["ChannelARN"])
        return ActionResult(result)

    for handler in (create_channel, describe_channel, update_channel, delete_channel, list_channels):
        setattr(KinesisResponse, handler.__name__, handler)
