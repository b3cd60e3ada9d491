"""Every call that changes a stream, with its reply lost after the server acted.

Each case runs the command as a user does, through the fault proxy in front of the real embedded
server, with the reply of the one mutating call dropped (the server applied it; the client hears a
reset or nothing in time). An independent reader (plain botocore, straight to the server) then
checks that the change happened exactly once, and the case checks that kconsole's exit code, its
message and the action log (intent, then outcome) say so. The proxy counts the mutating requests:
exactly one reaches it, so nothing (botocore, aiohttp or kconsole) resent it blindly. With
FAULT_TABLE=path set, each case appends its row to that file as a JSON line (the README's table).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from urllib.parse import urlsplit

import botocore.session
import pytest

from console.cli import main
from console.reshard.actionlog import ActionLog
from tests.faultproxy import MUTATING_OPERATIONS, FaultProxy, Faults

READ_TIMEOUT = 1.0


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path


@pytest.fixture
def log(isolated):
    return ActionLog(isolated / "data" / "actions.jsonl")


def reader(local_kinesis):
    """An independent client: plain botocore, none of kconsole's code, straight to the server."""
    return botocore.session.get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=local_kinesis.endpoint_url,
        aws_access_key_id="truth",
        aws_secret_access_key="truth",
    )


def all_shards(client, stream):
    return client.list_shards(StreamName=stream)["Shards"]


def open_shards(client, stream):
    return [s for s in all_shards(client, stream) if "EndingSequenceNumber" not in s["SequenceNumberRange"]]


def summary(client, stream):
    return client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]


def consumers(client, stream):
    arn = summary(client, stream)["StreamARN"]
    return [c["ConsumerName"] for c in client.list_stream_consumers(StreamARN=arn)["Consumers"]]


def exists(client, stream):
    return stream in client.list_streams()["StreamNames"]


async def kconsole(capsys, proxy, *argv, timeout_args=()):
    code = await asyncio.to_thread(
        main,
        [
            *map(str, argv),
            "--yes",
            "--endpoint-url",
            proxy.endpoint_url,
            "--region",
            "us-east-1",
            *map(str, timeout_args),
        ],
    )
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def intents_and_outcomes(log, operation):
    entries = log.entries()
    intents = [e for e in entries if e.get("kind") == "intent" and e["operation"] == operation]
    outcomes = {e["intent"]: e for e in entries if e.get("kind") == "outcome"}
    return [(intent, outcomes.get(intent["id"])) for intent in intents]


def table_row(case, fault, code, outcome, times):
    path = os.environ.get("FAULT_TABLE")
    if path:
        with open(path, "a", encoding="utf-8") as table:
            table.write(
                json.dumps({"call": case, "fault": fault, "exit": code, "logged": outcome, "applied_times": times})
                + "\n"
            )


# (case, operation, stream shards, argv after the stream is known, setup, how many times it happened)
POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "kinesis:GetRecords",
            "Resource": "*",
        }
    ],
}
POLICY_FILE = os.path.join(tempfile.mkdtemp(prefix="kconsole-lost-"), "policy.json")
with open(POLICY_FILE, "w", encoding="utf-8") as _policy:
    json.dump(POLICY, _policy)


def arn(c, s):
    return summary(c, s)["StreamARN"]


def tags(c, s):
    return {t["Key"]: t.get("Value") for t in c.list_tags_for_resource(ResourceARN=arn(c, s)).get("Tags", [])}


def policy(c, s):
    try:
        found = c.get_resource_policy(ResourceARN=arn(c, s)).get("Policy")
    except c.exceptions.ResourceNotFoundException:
        return None
    return None if not found or found.strip() == "{}" else found


def _split(c, s):
    shards = all_shards(c, s)
    children = [x for x in shards if x.get("ParentShardId") == "shardId-000000000000"]
    return len(children) // 2 if len(shards) == 2 + len(children) else -1


def _merge(c, s):
    shards = all_shards(c, s)
    return sum(1 for x in shards if x.get("AdjacentParentShardId")) if len(open_shards(c, s)) == 1 else -1


def _scale(c, s):
    # From 2 to 4 once: 4 open; a resend of the same target changes nothing, so count every shard made.
    return 1 if len(open_shards(c, s)) == 4 else 0


def _on_demand(c, s):
    c.update_stream_mode(StreamARN=arn(c, s), StreamModeDetails={"StreamMode": "ON_DEMAND"})


CHANNEL_FILES: dict[str, str] = {}  # stream -> the CreateChannel request written for it


def channel_request(c, s) -> dict:
    return {
        "ChannelName": f"ch-{s}",
        "ServiceExecutionRoleARN": "arn:aws:iam::123456789012:role/kinesis-channel",
        "StreamConfigurationList": [{"StreamARN": arn(c, s), "RecordConfiguration": {"RecordFormatType": "JSON"}}],
        "S3DestinationConfiguration": {
            "StorageConfiguration": {
                "BucketARN": "arn:aws:s3:::my-bucket",
                "ExpectedBucketOwner": "123456789012",
                "CompressionType": "GZIP",
            }
        },
    }


def _channel_file(c, s):
    _on_demand(c, s)
    path = os.path.join(tempfile.mkdtemp(prefix="kconsole-lost-"), "channel.json")
    with open(path, "w", encoding="utf-8") as request:
        json.dump(channel_request(c, s), request)
    CHANNEL_FILES[s] = path


def _with_channel(c, s):
    _on_demand(c, s)
    c.create_channel(**channel_request(c, s))


UPDATE_FILES: dict[str, str] = {}  # stream -> the UpdateChannel request written for its channel


def _with_channel_and_update_file(c, s):
    _with_channel(c, s)
    path = os.path.join(tempfile.mkdtemp(prefix="kconsole-lost-"), "change.json")
    with open(path, "w", encoding="utf-8") as request:
        json.dump({"S3DestinationConfiguration": {"DataFreshnessInSeconds": 600}}, request)
    UPDATE_FILES[s] = path
    time.sleep(0.6)  # CREATING, then ACTIVE: a channel is updated when ACTIVE


def freshness(c, s) -> int | None:
    [channel] = channels_named(c, s)
    described = c.describe_channel(ChannelARN=channel["ChannelARN"])["ChannelDescription"]
    return described["S3DestinationConfiguration"].get("DataFreshnessInSeconds")


def channels_named(c, s) -> list[dict]:
    return [
        ch
        for ch in c.list_channels().get("ChannelSummaries", [])
        if ch.get("ChannelName") == f"ch-{s}" and ch.get("ChannelStatus") != "DELETING"
    ]


def _on_demand_with_commitment(c, s):
    _on_demand(c, s)
    c.update_account_settings(MinimumThroughputBillingCommitment={"Status": "ENABLED"})


def _commitment_ending(c, _s):
    # Off, or (when another test turned it on) ending at its earliest allowed end: either way "on" is a change.
    c.update_account_settings(MinimumThroughputBillingCommitment={"Status": "DISABLED"})


CASES = {
    "split": ("SplitShard", 2, lambda s: ["reshard", "split", s, "--shard", "shardId-000000000000"], None, _split),
    "merge": (
        "MergeShards",
        2,
        lambda s: ["reshard", "merge", s, "--shard", "shardId-000000000000", "--adjacent", "shardId-000000000001"],
        None,
        _merge,
    ),
    "scale": ("UpdateShardCount", 2, lambda s: ["reshard", "scale", s, "--to", "4"], None, _scale),
    "create": (
        "CreateStream",
        None,
        lambda s: ["stream", "create", s, "--shards", "1"],
        None,
        lambda c, s: int(exists(c, s)),
    ),
    "delete": ("DeleteStream", 1, lambda s: ["stream", "delete", s], None, lambda c, s: int(not exists(c, s))),
    "retention": (
        "IncreaseStreamRetentionPeriod",
        1,
        lambda s: ["stream", "retention", s, "--hours", "48"],
        None,
        lambda c, s: int(summary(c, s)["RetentionPeriodHours"] == 48),
    ),
    "retention down": (
        "DecreaseStreamRetentionPeriod",
        1,
        lambda s: ["stream", "retention", s, "--hours", "24"],
        lambda c, s: c.increase_stream_retention_period(StreamName=s, RetentionPeriodHours=72),
        lambda c, s: int(summary(c, s)["RetentionPeriodHours"] == 24),
    ),
    "mode": (
        "UpdateStreamMode",
        1,
        lambda s: ["stream", "mode", s, "on-demand"],
        None,
        lambda c, s: int(summary(c, s)["StreamModeDetails"]["StreamMode"] == "ON_DEMAND"),
    ),
    "encryption on": (
        "StartStreamEncryption",
        1,
        lambda s: ["stream", "encryption", s, "--kms-key", "alias/aws/kinesis"],
        None,
        lambda c, s: int(summary(c, s).get("EncryptionType") == "KMS"),
    ),
    "encryption off": (
        "StopStreamEncryption",
        1,
        lambda s: ["stream", "encryption", s, "--off"],
        lambda c, s: c.start_stream_encryption(StreamName=s, EncryptionType="KMS", KeyId="alias/aws/kinesis"),
        lambda c, s: int(summary(c, s).get("EncryptionType", "NONE") == "NONE"),
    ),
    "register": (
        "RegisterStreamConsumer",
        1,
        lambda s: ["consumers", "register", s, "--name", "app"],
        None,
        lambda c, s: consumers(c, s).count("app"),
    ),
    "monitoring": (
        "EnableEnhancedMonitoring",
        1,
        lambda s: ["heat", s, "--enable-enhanced-monitoring"],
        None,
        lambda c, s: int(bool(summary(c, s)["EnhancedMonitoring"][0].get("ShardLevelMetrics"))),
    ),
    "monitoring off": (
        "DisableEnhancedMonitoring",
        1,
        lambda s: ["heat", s, "--disable-enhanced-monitoring"],
        lambda c, s: c.enable_enhanced_monitoring(StreamName=s, ShardLevelMetrics=["IncomingBytes"]),
        lambda c, s: int(not summary(c, s)["EnhancedMonitoring"][0].get("ShardLevelMetrics")),
    ),
    "tag": (
        "TagResource",
        1,
        lambda s: ["stream", "tag", s, "team=payments"],
        None,
        lambda c, s: int(tags(c, s).get("team") == "payments"),
    ),
    "untag": (
        "UntagResource",
        1,
        lambda s: ["stream", "untag", s, "team"],
        lambda c, s: c.tag_resource(ResourceARN=arn(c, s), Tags={"team": "x"}),
        lambda c, s: int("team" not in tags(c, s)),
    ),
    "policy": (
        "PutResourcePolicy",
        1,
        lambda s: ["stream", "policy", s, "--put", POLICY_FILE],
        None,
        lambda c, s: int(bool(policy(c, s))),
    ),
    "policy delete": (
        "DeleteResourcePolicy",
        1,
        lambda s: ["stream", "policy", s, "--delete"],
        lambda c, s: c.put_resource_policy(ResourceARN=arn(c, s), Policy=json.dumps(POLICY)),
        lambda c, s: int(not policy(c, s)),
    ),
    "record size": (
        "UpdateMaxRecordSize",
        1,
        lambda s: ["stream", "max-record-size", s, "--kib", "2048"],
        None,
        lambda c, s: int(summary(c, s).get("MaxRecordSizeInKiB") == 2048),
    ),
    "distribution": (
        "UpdateStreamRecordDistributionStrategy",
        1,
        lambda s: ["stream", "distribution", s, "auto"],
        _on_demand,
        lambda c, s: int(summary(c, s).get("RecordDistributionStrategy") == "AUTO"),
    ),
    "channel create": (
        "CreateChannel",
        1,
        lambda s: ["channels", "create", "--config", CHANNEL_FILES[s]],
        _channel_file,
        lambda c, s: len(channels_named(c, s)),
    ),
    "channel update": (
        "UpdateChannel",
        1,
        lambda s: ["channels", "update", f"ch-{s}", "--config", UPDATE_FILES[s]],
        _with_channel_and_update_file,
        lambda c, s: int(freshness(c, s) == 600),
    ),
    "channel delete": (
        "DeleteChannel",
        1,
        lambda s: ["channels", "delete", f"ch-{s}"],
        _with_channel,
        lambda c, s: int(not channels_named(c, s)),
    ),
    "warm throughput": (
        "UpdateStreamWarmThroughput",
        1,
        lambda s: ["stream", "warm-throughput", s, "--mibps", "100"],
        _on_demand_with_commitment,
        lambda c, s: int((summary(c, s).get("WarmThroughput") or {}).get("TargetMiBps") == 100),
    ),
    "account": (
        "UpdateAccountSettings",
        1,
        lambda _s: ["account", "--on-demand-advantage", "on"],
        _commitment_ending,
        lambda c, _s: int(
            c.describe_account_settings().get("MinimumThroughputBillingCommitment", {}).get("Status") == "ENABLED"
        ),
    ),
    "deregister": (
        "DeregisterStreamConsumer",
        1,
        lambda s: ["consumers", "deregister", s, "--name", "app"],
        lambda c, s: c.register_stream_consumer(StreamARN=summary(c, s)["StreamARN"], ConsumerName="app"),
        lambda c, s: int("app" not in consumers(c, s)),
    ),
}


# What the log names a change by, where that is not the stream: a channel's name, the account's region.
LOGGED_AS = {
    "channel create": lambda s: f"ch-{s}",
    "channel delete": lambda s: f"ch-{s}",
    "channel update": lambda s: f"ch-{s}",
    "account": lambda _s: "account",
}


async def prepared(case, local_kinesis, make_stream):
    operation, shards, argv, setup, happened = CASES[case]
    client = reader(local_kinesis)
    if shards is None:
        from tests.conftest import unique_stream_name

        stream = unique_stream_name("lost")
        make_stream.created.append(stream)
    else:
        stream = await make_stream(shards=shards)
        if setup is not None:
            setup(client, stream)
    return operation, stream, argv(stream), client, happened


def port_of(local_kinesis) -> int:
    return urlsplit(local_kinesis.endpoint_url).port


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_lost_reply_is_settled_by_reading_the_stream_back(case, capsys, local_kinesis, make_stream, log):
    operation, stream, argv, client, happened = await prepared(case, local_kinesis, make_stream)
    async with FaultProxy(port_of(local_kinesis), Faults.drop_reply(operation)) as proxy:
        code, _, err = await kconsole(capsys, proxy, *argv)
        sent = proxy.stats[f"reset_after:{operation}"] + proxy.stats[f"pass:{operation}"]
    [(intent, outcome)] = intents_and_outcomes(log, operation)
    times = happened(client, stream)
    table_row(case, "reply dropped after the server acted", code, outcome and outcome["outcome"], times)
    assert code == 0, err
    assert "the reply was lost; the stream shows the change" in err
    assert times == 1 and sent == 1  # applied once; the call went out once
    # A channel's change is logged under the channel's name; every other under the stream's.
    assert intent["stream"] == LOGGED_AS.get(case, lambda s: s)(stream)
    assert outcome["outcome"] == "applied"
    assert "the reply was lost" in outcome["evidence"]
    assert log.entries().index(intent) < log.entries().index(outcome)


async def test_a_read_timeout_after_the_split_is_settled_too(capsys, local_kinesis, make_stream, log):
    operation, stream, argv, client, happened = await prepared("split", local_kinesis, make_stream)
    faults = Faults(hold_reply=1.0, hold_seconds=READ_TIMEOUT + 1.0, operations=frozenset({operation}), limit=1)
    async with FaultProxy(port_of(local_kinesis), faults) as proxy:
        code, _, err = await kconsole(capsys, proxy, *argv, timeout_args=("--cli-read-timeout", READ_TIMEOUT))
        sent = proxy.stats[f"hold_reply:{operation}"] + proxy.stats[f"pass:{operation}"]
    [(_, outcome)] = intents_and_outcomes(log, operation)
    table_row("split", "read timeout after the server acted", code, outcome["outcome"], happened(client, stream))
    assert code == 0 and "the reply was lost; the stream shows the change" in err
    assert happened(client, stream) == 1 and sent == 1 and outcome["outcome"] == "applied"


@pytest.mark.parametrize("case", ["split", "scale", "retention", "register"])
async def test_a_server_error_after_the_server_acted_is_settled_not_resent(
    case, capsys, local_kinesis, make_stream, log
):
    """HTTP 500 on a change: the call path retries server errors on reads only, so the change is
    read back, not sent again."""
    operation, stream, argv, client, happened = await prepared(case, local_kinesis, make_stream)
    faults = Faults(fail_after=1.0, operations=frozenset({operation}), limit=1)
    async with FaultProxy(port_of(local_kinesis), faults) as proxy:
        code, _, err = await kconsole(capsys, proxy, *argv)
        sent = proxy.stats[f"fail_after:{operation}"] + proxy.stats[f"pass:{operation}"]
    [(_, outcome)] = intents_and_outcomes(log, operation)
    table_row(case, "HTTP 500 after the server acted", code, outcome["outcome"], happened(client, stream))
    assert code == 0 and "the reply was lost; the stream shows the change" in err
    assert happened(client, stream) == 1 and sent == 1 and outcome["outcome"] == "applied"


@pytest.mark.parametrize("case", ["split", "retention", "register"])
async def test_a_call_lost_before_the_server_saw_it_is_sent_once_more_after_a_fresh_check(
    case, capsys, local_kinesis, make_stream, log
):
    operation, stream, argv, client, happened = await prepared(case, local_kinesis, make_stream)
    faults = Faults(reset_before=1.0, operations=frozenset({operation}), limit=1)
    async with FaultProxy(port_of(local_kinesis), faults) as proxy:
        code, _, err = await kconsole(capsys, proxy, *argv)
    logged = intents_and_outcomes(log, operation)
    table_row(
        case,
        "request dropped before the server saw it",
        code,
        " then ".join(o["outcome"] for _, o in logged),
        happened(client, stream),
    )
    assert code == 0, err
    assert "shows no change" in err and "once more" in err
    assert happened(client, stream) == 1
    assert [o["outcome"] for _, o in logged] == ["not applied", "applied"]


async def test_an_outcome_nobody_can_read_back_is_unknown_and_names_the_check(
    capsys, local_kinesis, make_stream, log, monkeypatch
):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # the read-back meets a dead network: fail it fast
    operation, stream, argv, client, happened = await prepared("split", local_kinesis, make_stream)
    async with FaultProxy(port_of(local_kinesis), Faults.drop_reply(operation, down_after_fault=True)) as proxy:
        code, _, err = await kconsole(capsys, proxy, *argv)
    [(_, outcome)] = intents_and_outcomes(log, operation)
    table_row("split", "reply dropped, then the network down", code, outcome["outcome"], happened(client, stream))
    assert code == 1
    line = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(line) == 1 and "outcome is unknown" in line[0] and f"`kconsole shards {stream}`" in line[0]
    assert outcome["outcome"] == "unknown"
    assert happened(client, stream) == 1  # it did happen, and was not sent again


def test_every_mutating_call_has_a_case():
    assert {operation for operation, *_ in CASES.values()} == MUTATING_OPERATIONS


def test_the_daily_quota_counts_applied_and_unknown_intents_not_refused_ones(log):
    from console.reshard.actionlog import APPLIED, NOT_APPLIED, UNKNOWN

    for outcome in (APPLIED, NOT_APPLIED, UNKNOWN, None):  # None: crashed before the outcome was written
        intent = log.append(
            {"kind": "intent", "id": str(outcome), "operation": "UpdateShardCount", "stream": "s", "backend": "b"}
        )
        if outcome:
            log.append({"kind": "outcome", "intent": intent["id"], "outcome": outcome, "stream": "s", "backend": "b"})
    assert log.update_shard_count_calls("s", "b") == 3
