"""Today's Kinesis API on the embedded server, which moto 5.2.5 predates (botocore's model is the
reference; tests in tests/backend/test_moto_compat_today.py, against a patched and an unpatched server).
Every new request is checked against the model's input shape first (console.localserver.validation),
as AWS's front door does:

  AUTO record distribution (UpdateStreamRecordDistributionStrategy, on-demand streams only): keys and
  ExplicitHashKey ignored, records go round the open shards, PartitionKey optional; per-stream
  MaxRecordSizeInKiB (UpdateMaxRecordSize) enforced on PutRecord(s) with the 10 MiB / 500 record request
  limits; warm throughput (UpdateStreamWarmThroughput, on-demand streams in accounts with the minimum
  throughput billing commitment) and the commitment itself (Describe/UpdateAccountSettings); tags on
  streams, consumers and channels (TagResource, UntagResource, ListTagsForResource); resource policies
  on consumers too; a stream with channels (console.localserver.channels) cannot be deleted; StreamId,
  ChannelCount, MaxRecordSizeInKiB, RecordDistributionStrategy and WarmThroughput in
  DescribeStreamSummary (the short path answers with the same method).
"""

from __future__ import annotations

import json
import time
from typing import Any

from console.localserver.accounts import (
    backend_of,
    channels_of,
    check_tags,
    commitment_of,
    committed,
    decode_token_name,
    encode_token_name,
    new_stream_id,
    on_demand,
    resource_by_arn,
    stream_by_arn,
    stream_named,
    tags_of,
    utc,
)
from console.localserver.records import (
    AUTO,
    RECORD_SIZE_DEFAULT_KIB,
    USER_PARTITION_KEY,
    check_records,
    checked_put_records,
    heap_released,
    store_records,
)
from console.localserver.validation import in_use, invalid, limit_exceeded, not_found, validated

WARM_THROUGHPUT_MAX_MIBPS = 10 * 1024  # AWS's default limit: 10 GiB/s per on-demand stream
COMMITMENT_MINIMUM_SECONDS = 24 * 3600  # On-demand Advantage: a commitment runs at least a day
STREAMS_PAGE_MAX = 100


def _auto_shard(stream: Any) -> Any:
    """The next open shard in turn: AUTO spreads records evenly whatever their keys."""
    open_shards = sorted(
        (shard for shard in stream.shards.values() if shard.is_open), key=lambda shard: shard.starting_hash
    )
    stream.auto_cursor = (getattr(stream, "auto_cursor", -1) + 1) % len(open_shards)
    return open_shards[stream.auto_cursor]


def _stream_setup(stream: Any) -> None:
    stream.record_distribution = USER_PARTITION_KEY
    stream.max_record_size_kib = RECORD_SIZE_DEFAULT_KIB
    stream.warm_throughput_mibps = None
    stream.stream_id = new_stream_id()


def _set_warm_throughput(backend: Any, stream: Any, mibps: int) -> None:
    if not on_demand(stream):
        raise invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "warm throughput applies to ON_DEMAND streams only."
        )
    if not committed(backend):
        raise invalid(
            f"Warm throughput needs the account's MinimumThroughputBillingCommitment (On-demand "
            f"Advantage) enabled; account {backend.account_id} has it "
            f"{commitment_of(backend)['Status']}. UpdateAccountSettings enables it."
        )
    if mibps > WARM_THROUGHPUT_MAX_MIBPS:
        raise limit_exceeded(
            f"WarmThroughputMiBps {mibps} exceeds the limit of {WARM_THROUGHPUT_MAX_MIBPS} "
            "MiBps (10 GiBps) for an on-demand stream."
        )
    stream.warm_throughput_mibps = mibps


def _set_distribution(backend: Any, stream: Any, strategy: str) -> None:
    if strategy == AUTO and not on_demand(stream):
        raise invalid(
            f"Stream {stream.stream_name} under account {backend.account_id} is in PROVISIONED mode; "
            "the AUTO record distribution strategy is supported for ON_DEMAND streams only."
        )
    stream.record_distribution = strategy


def _policy_document(policy: str) -> None:
    try:
        document = json.loads(policy)
    except (TypeError, ValueError):
        raise invalid("Policy is not valid JSON.") from None
    if not isinstance(document, dict) or not document.get("Statement"):
        raise invalid("Policy must be a JSON object with a Statement.")


def _commitment_wire(commitment: dict[str, Any]) -> dict[str, Any]:
    return {key: utc(value) if isinstance(value, float) else value for key, value in commitment.items()}


def patch(models: Any, responses: Any) -> None:
    from moto.core.responses import ActionResult, EmptyResult

    Stream, KinesisResponse = models.Stream, responses.KinesisResponse

    original_init = Stream.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        _stream_setup(self)

    Stream.__init__ = __init__

    keyed_shard = Stream.get_shard_for_key

    def get_shard_for_key(self, partition_key: str | None, explicit_hash_key: str | None) -> Any:
        if self.record_distribution == AUTO:
            return _auto_shard(self)  # partition key and ExplicitHashKey are ignored, as AWS documents
        return keyed_shard(self, partition_key, explicit_hash_key)

    Stream.get_shard_for_key = get_shard_for_key

    summary_so_far = Stream.to_json_summary

    def to_json_summary(self) -> dict[str, Any]:
        summary = summary_so_far(self)
        description = summary["StreamDescriptionSummary"]
        backend = backend_of(self)
        description["StreamId"] = self.stream_id
        description["RecordDistributionStrategy"] = self.record_distribution
        description["MaxRecordSizeInKiB"] = self.max_record_size_kib
        description["ChannelCount"] = len(channels_of(backend, self))
        if on_demand(self) and committed(backend) and self.warm_throughput_mibps is not None:
            description["WarmThroughput"] = {
                "TargetMiBps": self.warm_throughput_mibps,
                "CurrentMiBps": self.warm_throughput_mibps,
            }
        return summary

    Stream.to_json_summary = to_json_summary

    # -- requests moto knows, with today's members and rules --

    def create_stream(self) -> Any:
        params = validated(self, "CreateStream")
        mode = (params.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED")
        backend = self.kinesis_backend
        if mode == "PROVISIONED" and params.get("ShardCount") is None:
            raise invalid("ShardCount is required for a PROVISIONED stream.")
        if mode == "PROVISIONED" and params.get("RecordDistributionStrategy") == AUTO:
            raise invalid("The AUTO record distribution strategy is supported for ON_DEMAND streams only.")
        if params.get("WarmThroughputMiBps") is not None and mode != "ON_DEMAND":
            raise invalid("Warm throughput applies to ON_DEMAND streams only.")
        if params.get("Tags"):
            check_tags(params["Tags"], {})
        stream = backend.create_stream(
            params["StreamName"], params.get("ShardCount"), stream_mode=params.get("StreamModeDetails")
        )
        try:
            if params.get("WarmThroughputMiBps") is not None:
                _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        except Exception:
            backend.streams.pop(stream.stream_name, None)
            raise
        stream.record_distribution = params.get("RecordDistributionStrategy", USER_PARTITION_KEY)
        stream.max_record_size_kib = params.get("MaxRecordSizeInKiB", RECORD_SIZE_DEFAULT_KIB)
        stream.tags.update(params.get("Tags") or {})
        return EmptyResult()

    def delete_stream(self) -> Any:
        backend = self.kinesis_backend
        stream = backend.describe_stream(
            stream_arn=self._get_param("StreamARN"), stream_name=self._get_param("StreamName")
        )
        if stream.consumers and not self._get_param("EnforceConsumerDeletion"):
            raise in_use(
                f"Stream {stream.stream_name} under account {backend.account_id} has registered consumers; "
                "deregister them or set EnforceConsumerDeletion."
            )
        channels = channels_of(backend, stream)
        if channels:
            names = ", ".join(channel["ChannelName"] for channel in channels)
            raise in_use(
                f"Stream {stream.stream_name} under account {backend.account_id} has active channels "
                f"({names}); delete them before deleting the stream."
            )
        backend.delete_stream(stream.arn, stream.stream_name)
        heap_released()
        for arn in [arn for arn in backend.resource_policies if arn == stream.arn or arn.startswith(stream.arn + "/")]:
            del backend.resource_policies[arn]
        return EmptyResult()

    def put_record(self) -> Any:
        backend = self.kinesis_backend
        stream = backend.describe_stream(
            stream_arn=self._get_param("StreamARN"), stream_name=self._get_param("StreamName")
        )
        record = {
            "Data": self._get_param("Data"),
            "PartitionKey": self._get_param("PartitionKey"),
            "ExplicitHashKey": self._get_param("ExplicitHashKey"),
        }
        size = check_records(stream, [record], single=True)
        sequence_number, shard_id = stream.put_record(record["PartitionKey"], record["ExplicitHashKey"], record["Data"])
        backend._send_stream_metrics(stream.stream_name, incoming_bytes=size, incoming_records=1)
        return ActionResult({"SequenceNumber": sequence_number, "ShardId": shard_id})

    def put_records(self) -> Any:
        return ActionResult(store_records(self.kinesis_backend, *checked_put_records(self)))

    def update_stream_mode(self) -> Any:
        params = validated(self, "UpdateStreamMode")
        backend = self.kinesis_backend
        stream = stream_by_arn(backend, params["StreamARN"])
        mode = params["StreamModeDetails"]["StreamMode"]
        if mode == "PROVISIONED" and stream.record_distribution == AUTO:
            raise invalid(
                f"Stream {stream.stream_name} uses the AUTO record distribution strategy, which "
                "PROVISIONED streams do not support; switch it to USER_PARTITION_KEY first."
            )
        if params.get("WarmThroughputMiBps") is not None and mode != "ON_DEMAND":
            raise invalid("Warm throughput applies to ON_DEMAND streams only.")
        backend.update_stream_mode(stream.arn, params["StreamModeDetails"])
        if mode == "PROVISIONED":
            stream.warm_throughput_mibps = None
        elif params.get("WarmThroughputMiBps") is not None:
            _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        return EmptyResult()

    def list_streams(self) -> Any:
        """AWS's paging: at most 100 names a page (100 by default), a NextToken to go on with, and the
        summaries of the page's streams (moto: 10 by default, no NextToken, every stream's summary on
        every page)."""
        params = validated(self, "ListStreams")
        streams = list(self.kinesis_backend.list_streams())
        names = [stream.stream_name for stream in streams]
        after = params.get("ExclusiveStartStreamName")
        if params.get("NextToken"):
            after = decode_token_name(params["NextToken"])
        start = names.index(after) + 1 if after in names else (0 if after is None else len(names))
        size = min(params.get("Limit", STREAMS_PAGE_MAX), STREAMS_PAGE_MAX)
        page = streams[start : start + size]
        result: dict[str, Any] = {
            "StreamNames": [stream.stream_name for stream in page],
            "HasMoreStreams": start + size < len(streams),
            "StreamSummaries": [
                {
                    "StreamName": stream.stream_name,
                    "StreamARN": stream.arn,
                    "StreamStatus": stream.status,
                    "StreamModeDetails": stream.stream_mode,
                    "StreamCreationTimestamp": stream.creation_datetime,
                }
                for stream in page
            ],
        }
        if result["HasMoreStreams"]:
            result["NextToken"] = encode_token_name(page[-1].stream_name)
        return ActionResult(result)

    # -- operations moto lacks --

    def update_stream_record_distribution_strategy(self) -> Any:
        params = validated(self, "UpdateStreamRecordDistributionStrategy")
        backend = self.kinesis_backend
        _set_distribution(backend, stream_by_arn(backend, params["StreamARN"]), params["RecordDistributionStrategy"])
        return EmptyResult()

    def update_max_record_size(self) -> Any:
        params = validated(self, "UpdateMaxRecordSize")
        backend = self.kinesis_backend
        if not params.get("StreamARN"):
            raise invalid("StreamARN is required.")
        stream_by_arn(backend, params["StreamARN"]).max_record_size_kib = params["MaxRecordSizeInKiB"]
        return EmptyResult()

    def update_stream_warm_throughput(self) -> Any:
        params = validated(self, "UpdateStreamWarmThroughput")
        backend = self.kinesis_backend
        stream = stream_named(backend, params)
        _set_warm_throughput(backend, stream, params["WarmThroughputMiBps"])
        return ActionResult(
            {
                "StreamARN": stream.arn,
                "StreamName": stream.stream_name,
                "WarmThroughput": {
                    "TargetMiBps": stream.warm_throughput_mibps,
                    "CurrentMiBps": stream.warm_throughput_mibps,
                },
            }
        )

    def describe_account_settings(self) -> Any:
        validated(self, "DescribeAccountSettings")
        return ActionResult(
            {"MinimumThroughputBillingCommitment": _commitment_wire(commitment_of(self.kinesis_backend))}
        )

    def update_account_settings(self) -> Any:
        params = validated(self, "UpdateAccountSettings")
        backend = self.kinesis_backend
        commitment = commitment_of(backend)
        now = time.time()
        if params["MinimumThroughputBillingCommitment"]["Status"] == "ENABLED":
            if commitment["Status"] == "DISABLED":
                commitment.clear()
                commitment.update(
                    Status="ENABLED", StartedAt=now, EarliestAllowedEndAt=now + COMMITMENT_MINIMUM_SECONDS
                )
            else:  # enabling again cancels an end that was asked for
                commitment["Status"] = "ENABLED"
        elif commitment["Status"] != "DISABLED":
            # Before the minimum window is over, the commitment ends at its earliest allowed end.
            commitment["Status"] = "ENABLED_UNTIL_EARLIEST_ALLOWED_END"
            commitment = commitment_of(backend)
        return ActionResult({"MinimumThroughputBillingCommitment": _commitment_wire(commitment)})

    def tag_resource(self) -> Any:
        params = validated(self, "TagResource")
        tags = tags_of(*resource_by_arn(self.kinesis_backend, params["ResourceARN"]))
        check_tags(params["Tags"], tags)
        tags.update(params["Tags"])
        return EmptyResult()

    def untag_resource(self) -> Any:
        params = validated(self, "UntagResource")
        tags = tags_of(*resource_by_arn(self.kinesis_backend, params["ResourceARN"]))
        for key in params["TagKeys"]:
            tags.pop(key, None)
        return EmptyResult()

    def list_tags_for_resource(self) -> Any:
        params = validated(self, "ListTagsForResource")
        tags = tags_of(*resource_by_arn(self.kinesis_backend, params["ResourceARN"]))
        return ActionResult({"Tags": [{"Key": key, "Value": value} for key, value in sorted(tags.items())]})

    def put_resource_policy(self) -> Any:
        params = validated(self, "PutResourcePolicy")
        backend = self.kinesis_backend
        kind, _ = resource_by_arn(backend, params["ResourceARN"])
        if kind == "channel":
            raise invalid("Resource policies apply to data streams and consumers.")
        _policy_document(params["Policy"])
        backend.resource_policies[params["ResourceARN"]] = params["Policy"]
        return EmptyResult()

    def get_resource_policy(self) -> Any:
        params = validated(self, "GetResourcePolicy")
        backend = self.kinesis_backend
        resource_by_arn(backend, params["ResourceARN"])
        return ActionResult({"Policy": backend.resource_policies.get(params["ResourceARN"], "{}")})

    def delete_resource_policy(self) -> Any:
        params = validated(self, "DeleteResourcePolicy")
        backend = self.kinesis_backend
        resource_by_arn(backend, params["ResourceARN"])
        if backend.resource_policies.pop(params["ResourceARN"], None) is None:
            raise not_found(f"No resource policy found for resource ARN {params['ResourceARN']}.")
        return EmptyResult()

    for handler in (
        create_stream,
        delete_stream,
        put_record,
        put_records,
        update_stream_mode,
        list_streams,
        update_stream_record_distribution_strategy,
        update_max_record_size,
        update_stream_warm_throughput,
        describe_account_settings,
        update_account_settings,
        tag_resource,
        untag_resource,
        list_tags_for_resource,
        put_resource_policy,
        get_resource_policy,
        delete_resource_policy,
    ):
        setattr(KinesisResponse, handler.__name__, handler)
