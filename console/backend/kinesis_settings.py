"""The stream's settings, tags, resource policy and channels, and the account's
(console.backend.protocol.StreamSettingsBackend): the Kinesis calls of the Stream actions menu.
"""

from __future__ import annotations

import re
from typing import Any

from console.backend.kinesis_calls import KinesisCalls
from console.errors import BackendError, StreamNotFound
from console.topology.model import ChannelSummary


class StreamSettingsCalls(KinesisCalls):
    async def describe_stream_details(self, stream: str) -> dict[str, Any]:
        """DescribeStreamSummary's whole answer, AWS-shaped (describe_stream_summary keeps what the console shows)."""
        description: dict[str, Any] = (await self._call("DescribeStreamSummary", StreamName=stream))[
            "StreamDescriptionSummary"
        ]
        return description

    async def stream_tags(self, stream: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        params: dict[str, Any] = {"StreamName": stream}
        while True:
            page = await self._call("ListTagsForStream", **params)
            tags.update({tag["Key"]: tag.get("Value", "") for tag in page.get("Tags", [])})
            if not page.get("HasMoreTags") or not page.get("Tags"):
                return tags
            params["ExclusiveStartTagKey"] = page["Tags"][-1]["Key"]

    async def increase_retention(self, stream: str, hours: int) -> None:
        await self._call("IncreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def decrease_retention(self, stream: str, hours: int) -> None:
        await self._call("DecreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def update_stream_mode(self, stream_arn: str, mode: str) -> None:
        await self._call("UpdateStreamMode", StreamARN=stream_arn, StreamModeDetails={"StreamMode": mode})

    async def start_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StartStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def stop_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StopStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._call("EnableEnhancedMonitoring", StreamName=stream, ShardLevelMetrics=metrics)

    async def disable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._call("DisableEnhancedMonitoring", StreamName=stream, ShardLevelMetrics=metrics)

    # ---- today's settings: record size, warm throughput, distribution, account ------------------

    async def update_max_record_size(self, stream_arn: str, kib: int) -> None:
        await self._today("UpdateMaxRecordSize", StreamARN=stream_arn, MaxRecordSizeInKiB=kib)

    async def update_warm_throughput(self, stream_arn: str, mibps: int) -> dict[str, Any]:
        return await self._today("UpdateStreamWarmThroughput", StreamARN=stream_arn, WarmThroughputMiBps=mibps)

    async def update_record_distribution(self, stream_arn: str, strategy: str) -> None:
        await self._today(
            "UpdateStreamRecordDistributionStrategy", StreamARN=stream_arn, RecordDistributionStrategy=strategy
        )

    async def account_settings(self) -> dict[str, Any]:
        """DescribeAccountSettings' MinimumThroughputBillingCommitment ({} when the server says nothing)."""
        return (await self._today("DescribeAccountSettings")).get("MinimumThroughputBillingCommitment") or {}

    async def update_account_settings(self, status: str) -> dict[str, Any]:
        answer = await self._today("UpdateAccountSettings", MinimumThroughputBillingCommitment={"Status": status})
        return answer.get("MinimumThroughputBillingCommitment") or {}

    # ---- tags v2 and resource policies (streams, consumers, channels by ARN) --------------------

    # A server that predates tagging by ARN (2024) tags a stream with the calls it always had:
    # ListTagsForStream, AddTagsToStream and RemoveTagsFromStream, by the stream's name.

    async def resource_tags(self, arn: str) -> dict[str, str]:
        try:
            tags = (await self._today("ListTagsForResource", ResourceARN=arn)).get("Tags", [])
        except BackendError as error:
            return await self.stream_tags(_legacy_stream_of(arn, error))
        return {tag["Key"]: tag.get("Value", "") for tag in tags}

    async def tag_resource(self, arn: str, tags: dict[str, str]) -> None:
        try:
            await self._today("TagResource", ResourceARN=arn, Tags=tags)
        except BackendError as error:
            await self._call("AddTagsToStream", StreamName=_legacy_stream_of(arn, error), Tags=tags)

    async def untag_resource(self, arn: str, keys: list[str]) -> None:
        try:
            await self._today("UntagResource", ResourceARN=arn, TagKeys=keys)
        except BackendError as error:
            await self._call("RemoveTagsFromStream", StreamName=_legacy_stream_of(arn, error), TagKeys=keys)

    async def resource_policy(self, arn: str) -> str | None:
        """The policy document, or None when there is none (some servers answer ResourceNotFound)."""
        try:
            return (await self._today("GetResourcePolicy", ResourceARN=arn)).get("Policy")
        except StreamNotFound as error:
            if "policy" in error.message.lower():
                return None
            raise

    async def put_resource_policy(self, arn: str, policy: str) -> None:
        await self._today("PutResourcePolicy", ResourceARN=arn, Policy=policy)

    async def delete_resource_policy(self, arn: str) -> None:
        await self._today("DeleteResourcePolicy", ResourceARN=arn)

    # ---- channels -------------------------------------------------------------------------------

    async def list_channels(self, *, stream_arn: str | None = None) -> list[dict[str, Any]]:
        """Every channel (ChannelSummaries), or those reading from one stream."""
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"MaxResults": 100}
        if stream_arn:
            params["StreamFilter"] = [{"StreamARN": stream_arn}]
        while True:
            page = await self._today("ListChannels", **params)
            found.extend(page.get("ChannelSummaries", []))
            if not page.get("NextToken"):
                return found
            params["NextToken"] = page["NextToken"]

    async def stream_channels(self, stream_arn: str) -> list[ChannelSummary]:
        """The channels reading from one stream."""
        return [ChannelSummary.from_api(raw) for raw in await self.list_channels(stream_arn=stream_arn)]

    async def describe_channel(self, channel_arn: str) -> dict[str, Any]:
        description: dict[str, Any] = (await self._today("DescribeChannel", ChannelARN=channel_arn))[
            "ChannelDescription"
        ]
        return description

    async def create_channel(self, request: dict[str, Any]) -> dict[str, Any]:
        return (await self._today("CreateChannel", **request)).get("ChannelDescription") or {}

    async def update_channel(self, request: dict[str, Any]) -> dict[str, Any]:
        """UpdateChannel: `request` names the channel (ChannelARN) and what changes."""
        description: dict[str, Any] = (await self._today("UpdateChannel", **request)).get("ChannelDescription") or {}
        return description

    async def delete_channel(self, channel_arn: str) -> None:
        await self._today("DeleteChannel", ChannelARN=channel_arn)


_STREAM_ARN = re.compile(r"^arn:[\w-]+:kinesis:[\w-]*:\d*:stream/(?P<name>[A-Za-z0-9_.-]+)$")


def _legacy_stream_of(arn: str, error: BackendError) -> str:
    """The stream a by-ARN call that the endpoint lacks can be made for by name; else the error stands."""
    match = _STREAM_ARN.match(arn)
    if error.code != "unsupported_operation" or match is None:
        raise error
    return match.group("name")
