"""Today's Kinesis as a user drives it from the command line, against the embedded server: AUTO
record distribution switched on and off (and what every key-space command then says), keyless puts
verified for delivery, records up to 10 MiB, warm throughput with the account's commitment, tags v2,
resource policies, channels; every change refused under --read-only, bad input one line and exit 2."""

from __future__ import annotations

import asyncio
import json

import pytest

from console.backend import BackendConfig, open_backend
from console.reshard.actionlog import ActionLog
from tests.commands.test_cli_put import kconsole, stored_records


def channel_request(name: str, stream_arn: str) -> dict:
    """A CreateChannel request as the API model has it: one stream's JSON records to an S3 bucket."""
    return {
        "ChannelName": name,
        "ServiceExecutionRoleARN": "arn:aws:iam::123456789012:role/kinesis-channel",
        "StreamConfigurationList": [{"StreamARN": stream_arn, "RecordConfiguration": {"RecordFormatType": "JSON"}}],
        "S3DestinationConfiguration": {
            "StorageConfiguration": {
                "BucketARN": "arn:aws:s3:::my-bucket",
                "ExpectedBucketOwner": "123456789012",
                "CompressionType": "GZIP",
            }
        },
    }


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


async def on_demand(endpoint: str, name: str) -> str:
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        await kinesis.create_stream(name, None, on_demand=True)
        return (await kinesis.wait_for_active(name)).arn


def changes() -> list[tuple[str, dict, str | None]]:
    """(operation, logged plan, outcome) of every change in the action log, in order."""
    entries = ActionLog.default().entries()
    outcomes = {e["intent"]: e["outcome"] for e in entries if e.get("kind") == "outcome"}
    return [(e["operation"], e["plan"], outcomes.get(e["id"])) for e in entries if e.get("kind") == "intent"]


def run(endpoint: str, *argv: str, stdin: bytes | None = None):
    return kconsole(*argv, "--endpoint-url", endpoint, stdin=stdin)


async def test_auto_distribution_round_trip_and_what_every_key_space_view_says(local_kinesis, tmp_path):
    endpoint = local_kinesis.endpoint_url
    stream = f"auto-{tmp_path.name[-8:]}"
    await on_demand(endpoint, stream)

    code, out, err = await run(endpoint, "stream", "distribution", stream, "auto", "--yes", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["executed"] and document["stream"]["record_distribution"] == "AUTO"
    assert any("per-key order is gone" in line for line in document["plan"]["consequences"])
    operation, logged, outcome = changes()[-1]
    assert (operation, logged["action"], logged["target"], outcome) == (
        "UpdateStreamRecordDistributionStrategy",
        "stream distribution",
        "AUTO",
        "applied",
    )

    code, out, err = await run(endpoint, "stream", "describe", stream)
    assert code == 0, err and out.splitlines()[0].startswith("AUTO distribution")
    assert out.splitlines()[0].startswith("AUTO distribution")

    code, out, err = await run(endpoint, "predict", "user-1", "user-2", "--stream", stream, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["placement"] == "auto" and {k["placement"] for k in document["keys"]} == {"auto"}
    assert "since" in document["notice"] and "ignores partition and explicit hash keys" in document["notice"]
    code, out, _ = await run(endpoint, "predict", "user-1", "--stream", stream)
    assert out.splitlines()[0].startswith(f"{stream} uses AUTO record distribution since ")
    code, out, _ = await kconsole("predict", "user-1", "--shards", "4")  # offline what-ifs still answer
    assert code == 0 and "shardId-" in out

    shard = "shardId-000000000000"
    code, out, err = await run(endpoint, "plan", "split", stream, "--shard", shard, "--at-median-of-recent")
    assert code == 1 and "--at-median-of-recent refused" in err and "AUTO record distribution" in err
    keys = tmp_path / "keys.txt"
    keys.write_text("".join(f"user-{n}\n" for n in range(50)))
    code, out, err = await run(
        endpoint, "plan", "split", stream, "--shard", shard, "--at", "midpoint", "--sample-keys", str(keys), "--json"
    )
    plan = json.loads(out)  # on-demand: the split breaches a limit (exit 1), and the plan is still shown
    assert code == 1 and plan["operations"], err
    assert plan["key_movement"] is None  # keys place nothing on an AUTO stream

    lines = b"".join(json.dumps({"data": {"n": n}}).encode() + b"\n" for n in range(500))
    code, out, err = await run(endpoint, "put", stream, "--verify", "--json", stdin=lines)
    assert code == 0, err
    document = json.loads(out)
    assert document["acknowledged"] == 500 and document["keyless_records"] == 500
    verification = document["verification"]
    assert verification["checks"] == "delivery" and verification["ok"] and verification["lost"] == 0
    assert verification["read_back"] == 500 and "order is not a property" in verification["checks_note"]
    assert len(document["shards"]) > 1  # the service spread them
    assert all(row["key"] is None for row in document["landed"])
    first_lines = b"".join(lines.splitlines(keepends=True)[:2])
    code, out, err = await run(endpoint, "put", stream, "--verify", stdin=first_lines)
    assert code == 0 and "delivery OK: read back" in out and "order is not a property of an AUTO stream" in out

    stored = await stored_records(endpoint, stream)
    assert len(stored) == 500 + 2 and all("PartitionKey" not in record for record in stored)
    code, out, err = await run(endpoint, "tail", stream, "--from", "trim-horizon", "--limit", "5", "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(rows) == 5 and all(row["partition_key"] is None for row in rows)
    code, out, err = await run(endpoint, "tail", stream, "--from", "trim-horizon", "--limit", "3")
    assert code == 0 and all(" \u2014 " in line for line in out.splitlines()[:3])

    code, out, err = await run(endpoint, "stream", "distribution", stream, "partition-key", "--yes")
    assert code == 0, err
    code, out, err = await run(endpoint, "predict", "user-1", "--stream", stream, "--json")
    assert code == 0 and json.loads(out)["keys"][0]["shard_id"].startswith("shardId-")
    code, out, err = await run(endpoint, "put", stream, stdin=first_lines)
    assert code == 2 and "line 1: no partition key" in err and "nothing was sent" in err


async def test_auto_on_a_provisioned_stream_is_bad_input_and_nothing_is_called(local_kinesis, make_stream):
    stream = await make_stream(shards=1)
    code, out, err = await run(local_kinesis.endpoint_url, "stream", "distribution", stream, "auto", "--yes", "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "AUTO record distribution applies to on-demand streams" in err
    assert json.loads(out)["error"]["code"] == "not_on_demand"
    assert ActionLog.default().entries() == []


async def test_a_nine_mib_record_goes_through_on_a_raised_stream_and_is_refused_on_one_mib(local_kinesis, tmp_path):
    endpoint = local_kinesis.endpoint_url
    big, small = f"big-{tmp_path.name[-8:]}", f"small-{tmp_path.name[-8:]}"
    for name in (big, small):
        await on_demand(endpoint, name)
    code, out, err = await run(endpoint, "stream", "max-record-size", big, "--kib", "10240", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["stream"]["max_record_size_kib"] == 10240
    payload = "".join(chr(0x41 + n % 26) for n in range(9 * 1024 * 1024))
    line = json.dumps({"key": "large", "data": payload}).encode() + b"\n"
    code, out, err = await run(endpoint, "put", small, "--json", stdin=b'{"key": "a", "data": 1}\n' + line)
    assert code == 2 and "line 2: record is 9,437,189 bytes" in err
    assert f"stream {small} takes at most 1,048,576 (1 MiB)" in err
    assert f"kconsole stream max-record-size {small} --kib 9217" in err
    assert await stored_records(endpoint, small) == []

    code, out, err = await run(endpoint, "put", big, "--verify", "--json", stdin=line)
    assert code == 0, err
    assert json.loads(out)["verification"]["ok"]
    (stored,) = await stored_records(endpoint, big)
    assert stored["Data"] == payload.encode()
    code, out, err = await run(endpoint, "tail", big, "--from", "trim-horizon", "--limit", "1", "--json")
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert row["size"] == len(payload) and row["content"] == payload

    code, out, err = await run(
        endpoint, "produce", big, "--keys", "1", "--records-per-key", "1", "--payload-bytes", str(10 * 1024 * 1024 + 1)
    )
    assert code == 2 and "payload bytes" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["stream", "max-record-size", "s", "--kib", "0"], "--kib must be a whole number from 1,024 to 10,240"),
        (["stream", "max-record-size", "s", "--kib", "10241"], "--kib must be a whole number from 1,024 to 10,240"),
        (["stream", "warm-throughput", "s", "--mibps", "10241"], "--mibps must be a whole number from 0 to 10,240"),
        (["stream", "distribution", "s", "sideways"], "record distribution must be auto or partition-key"),
        (["stream", "tag", "s", "novalue"], "a tag is KEY=VALUE"),
        (["stream", "tag", "s", "aws:owner=me"], "tag keys starting with aws: are AWS's own"),
    ],
)
async def test_out_of_range_settings_are_one_line_and_exit_2_before_any_call(argv, message):
    code, out, err = await kconsole(*argv, "--endpoint-url", "http://127.0.0.1:9", "--json")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and json.loads(out)["error"]


async def test_warm_throughput_needs_on_demand_and_the_commitment(local_kinesis, make_stream, tmp_path):
    endpoint = local_kinesis.endpoint_url
    provisioned = await make_stream(shards=1)
    code, _, err = await run(endpoint, "stream", "warm-throughput", provisioned, "--mibps", "100", "--yes")
    assert code == 2 and "warm throughput applies to on-demand streams" in err
    stream = f"warm-{tmp_path.name[-8:]}"
    await on_demand(endpoint, stream)
    code, out, err = await run(endpoint, "account", "--json")
    assert code == 0, err
    if json.loads(out)["on_demand_advantage"]["status"] == "DISABLED":
        code, _, err = await run(endpoint, "stream", "warm-throughput", stream, "--mibps", "100", "--yes")
        assert code == 2 and "needs the account's On-demand Advantage" in err
    code, _, err = await run(endpoint, "account", "--on-demand-advantage", "on", "--read-only")
    assert code == 1 and "read-only mode (--read-only)" in err
    code, out, err = await run(endpoint, "account", "--on-demand-advantage", "on", "--yes", "--json")
    assert code == 0, err
    commitment = json.loads(out)["on_demand_advantage"]
    assert commitment["status"] == "ENABLED" and commitment["earliest_allowed_end_at"]
    code, out, err = await run(endpoint, "stream", "warm-throughput", stream, "--mibps", "100", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["stream"]["warm_throughput"] == {"target_mibps": 100, "current_mibps": 100}
    code, out, _ = await run(endpoint, "stream", "describe", stream)
    assert "warm 100 MiB/s" in out.splitlines()[0]


async def test_tags_and_policy_round_trip_and_are_refused_read_only(local_kinesis, make_stream, tmp_path):
    endpoint = local_kinesis.endpoint_url
    stream = await make_stream(shards=1)
    code, out, err = await run(endpoint, "stream", "tag", stream, "team=payments", "tier=1", "--yes", "--json")
    assert code == 0, err
    code, out, _ = await run(endpoint, "stream", "describe", stream, "--json")
    assert json.loads(out)["tags"] == {"team": "payments", "tier": "1"}
    code, out, err = await run(endpoint, "stream", "untag", stream, "tier", "--yes")
    assert code == 0, err
    code, out, _ = await run(endpoint, "stream", "describe", stream, "--json")
    assert json.loads(out)["tags"] == {"team": "payments"}

    bad = tmp_path / "bad.json"
    bad.write_text('{"Version": "2012-10-17", "Statement": [{"Effect": "Maybe"}]}')
    code, _, err = await run(endpoint, "stream", "policy", stream, "--put", str(bad), "--yes")
    assert code == 2 and 'statement 1 needs "Effect": "Allow" or "Deny"' in err
    policy = {
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
    good = tmp_path / "policy.json"
    good.write_text(json.dumps(policy))
    code, out, err = await run(endpoint, "stream", "policy", stream, "--put", str(good), "--yes")
    assert code == 0, err
    code, out, err = await run(endpoint, "stream", "policy", stream, "--show", "--json", "--read-only")
    assert code == 0 and json.loads(out)["policy"] == policy
    code, out, err = await run(endpoint, "stream", "policy", stream, "--json", "--read-only")  # --show by default
    assert code == 0 and json.loads(out)["policy"] == policy, err
    code, out, err = await run(endpoint, "stream", "policy", stream, "--delete", "--yes")
    assert code == 0, err
    code, out, _ = await run(endpoint, "stream", "policy", stream, "--show")
    assert "has no resource policy" in out

    for argv in (
        ["stream", "tag", stream, "a=b"],
        ["stream", "untag", stream, "team"],
        ["stream", "policy", stream, "--delete"],
        ["stream", "max-record-size", stream, "--kib", "2048"],
        ["stream", "warm-throughput", stream, "--mibps", "1"],
        ["stream", "distribution", stream, "auto"],
        ["channels", "delete", "to-s3"],
        ["account", "--on-demand-advantage", "off"],
    ):
        code, _, err = await run(endpoint, *argv, "--yes", "--read-only")
        assert code == 1 and "read-only mode (--read-only): refusing to" in err, argv
    assert [(operation, outcome) for operation, _, outcome in changes()] == [
        ("TagResource", "applied"),
        ("UntagResource", "applied"),
        ("PutResourcePolicy", "applied"),
        ("DeleteResourcePolicy", "applied"),
    ]


async def test_channels_create_list_block_stream_delete_and_go(local_kinesis, tmp_path):
    endpoint = local_kinesis.endpoint_url
    stream = f"chan-{tmp_path.name[-8:]}"
    arn = await on_demand(endpoint, stream)
    request = channel_request(f"to-s3-{tmp_path.name[-6:]}", arn)
    name = request["ChannelName"]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**request, "StreamConfigurationList": [{"StreamARN": arn}], "Colour": "red"}))
    code, out, err = await run(endpoint, "channels", "create", "--config", str(wrong), "--yes", "--json")
    assert code == 2 and "does not match CreateChannel in the Kinesis API model" in err
    assert 'Unknown parameter in input: "Colour"' in err and json.loads(out)["error"]["code"] == "bad_request"
    pattern = tmp_path / "pattern.json"
    pattern.write_text(json.dumps({**request, "ServiceExecutionRoleARN": "not-a-role"}))
    code, _, err = await run(endpoint, "channels", "create", "--config", str(pattern), "--yes")
    assert code == 2 and "ServiceExecutionRoleARN 'not-a-role' does not match" in err

    config = tmp_path / "channel.json"
    config.write_text(json.dumps(request))
    code, _, err = await run(endpoint, "channels", "create", "--config", str(config), "--yes", "--read-only")
    assert code == 1 and f"read-only mode (--read-only): refusing to create channel {name}" in err
    code, out, err = await run(endpoint, "channels", "create", "--config", str(config), "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["channel"]["name"] == name
    code, out, err = await run(endpoint, "channels", stream, "--json")
    assert code == 0 and [c["name"] for c in json.loads(out)["channels"]] == [name]
    code, out, _ = await run(endpoint, "channels")
    assert name in out and "S3" in out

    code, out, err = await run(endpoint, "stream", "delete", stream, "--yes")
    assert code == 1 and "active channel(s)" in err and name in err
    code, out, err = await run(endpoint, "channels", "delete", name, "--yes")
    assert code == 0, err
    code, out, _ = await run(endpoint, "channels", stream, "--json")
    assert json.loads(out)["channels"] == []
    code, out, err = await run(endpoint, "stream", "delete", stream, "--yes")
    assert code == 0, err


async def test_a_channel_from_a_provisioned_stream_is_refused_before_any_call(local_kinesis, make_stream, tmp_path):
    """CreateChannel is for on-demand streams only (API reference): kconsole says so, as for AUTO and warm
    throughput, before the call; the action log holds no intent."""
    endpoint = local_kinesis.endpoint_url
    stream = await make_stream(shards=1)
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        arn = (await kinesis.describe_stream_summary(stream)).arn
    request = channel_request(f"prov-{tmp_path.name[-6:]}", arn)
    path = tmp_path / "channel.json"
    path.write_text(json.dumps(request))
    code, out, err = await run(endpoint, "channels", "create", "--config", str(path), "--yes", "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{stream} is provisioned" in err and "nothing was called" in err
    assert json.loads(out)["error"]["code"] == "not_on_demand"
    assert changes() == []
    code, out, _ = await run(endpoint, "channels", "--json")
    assert request["ChannelName"] not in out


async def test_kinesis_mock_lacking_an_operation_costs_one_line(kinesis_mock, tmp_path):
    endpoint = kinesis_mock.endpoint_url
    code, out, err = await kconsole("channels", "--endpoint-url", endpoint, "--json")
    assert code == 1 and "this endpoint does not support ListChannels" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "unsupported_operation"

    stream = f"km-{tmp_path.name[-8:]}"
    await on_demand(endpoint, stream)
    code, out, err = await run(endpoint, "stream", "distribution", stream, "auto", "--yes", "--json")
    assert code == 1 and "this endpoint does not support UpdateStreamRecordDistributionStrategy" in err
    assert len(err.strip().splitlines()) == 1 and json.loads(out)["error"]["code"] == "unsupported_operation"
    # The intent went to the log before the call; the server's answer settled it as not applied.
    assert changes() == [("UpdateStreamRecordDistributionStrategy", changes()[0][1], "not applied")]
    # What kinesis-mock has works: a policy it has none of, a record size, tags; a delete that
    # cannot ask for channels goes ahead.
    code, out, _ = await run(endpoint, "stream", "policy", stream, "--show")
    assert code == 0 and "has no resource policy" in out
    code, out, err = await run(endpoint, "stream", "max-record-size", stream, "--kib", "2048", "--yes", "--json")
    assert code == 0 and json.loads(out)["stream"]["max_record_size_kib"] == 2048, err
    code, _, err = await run(endpoint, "stream", "delete", stream, "--yes")
    assert code == 0, err


async def test_produce_follows_the_stream_size_and_sends_keyless_records_to_an_auto_stream(local_kinesis, tmp_path):
    endpoint = local_kinesis.endpoint_url
    stream = f"prod-{tmp_path.name[-8:]}"
    await on_demand(endpoint, stream)
    code, out, err = await run(
        endpoint,
        "produce",
        stream,
        "--keys",
        "1",
        "--records-per-key",
        "1",
        "--payload-bytes",
        str(2 * 1024 * 1024),
        "--yes",
        "--json",
    )
    assert code == 2 and f"stream {stream} takes" in err and f"max-record-size {stream} --kib" in err
    assert await stored_records(endpoint, stream) == []
    code, out, err = await run(
        endpoint, "produce", stream, "--keys", "3", "--records-per-key", "4", "--no-key", "--yes"
    )
    assert code == 2 and "--no-key: stream" in err and "USER_PARTITION_KEY" in err

    code, _, err = await run(endpoint, "stream", "distribution", stream, "auto", "--yes")
    assert code == 0, err
    code, out, err = await run(
        endpoint, "produce", stream, "--keys", "3", "--records-per-key", "4", "--no-key", "--verify", "--yes", "--json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["checks"] == "delivery" and document["ok"] and document["read_back"] == 12
    assert all("PartitionKey" not in record for record in await stored_records(endpoint, stream))


async def test_heat_on_an_auto_stream_counts_keyless_records_and_suggests_no_key_split(local_kinesis, tmp_path):
    import asyncio
    import sys

    endpoint = local_kinesis.endpoint_url
    stream = f"heat-{tmp_path.name[-8:]}"
    arn = await on_demand(endpoint, stream)
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)
    async with open_backend(config) as kinesis:
        await kinesis.update_record_distribution(arn, "AUTO")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "console.cli",
            "heat",
            stream,
            "--seconds",
            "5",
            "--json",
            "--endpoint-url",
            endpoint,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        said = []  # the sampler reads from LATEST: the records are put once it says it samples
        while not said or (said[-1] and b"sampling" not in said[-1]):
            said.append(await asyncio.wait_for(process.stderr.readline(), 60))
        for _ in range(3):
            await kinesis.put_records(
                stream,
                [{"Data": b'{"n": %d}' % n} for n in range(40)]
                + [{"Data": b"keyed", "PartitionKey": "hot"} for _ in range(20)],
            )
            await asyncio.sleep(0.3)
        out, rest = await asyncio.wait_for(process.communicate(), 60)
        err = b"".join(said) + rest
    assert process.returncode == 0, err.decode()
    document = json.loads(out)
    assert document["record_distribution"] == "AUTO" and document["keyless_records"] == 120
    assert sum(shard["records"] for shard in document["shards"]) == 180
    assert sum(1 for shard in document["shards"] if shard["records"]) > 1  # the service's spread
    assert document["split_suggestion"] is None and document["hot_keys"] == []
    assert "uses AUTO record distribution" in err.decode()


@pytest.mark.parametrize(
    "operation, argv, shown",
    [
        (
            "UpdateMaxRecordSize",
            ["stream", "max-record-size", "{s}", "--kib", "4096"],
            lambda c, s: (
                c.describe_stream_summary(StreamName=s)["StreamDescriptionSummary"]["MaxRecordSizeInKiB"] == 4096
            ),
        ),
        (
            "UpdateStreamRecordDistributionStrategy",
            ["stream", "distribution", "{s}", "auto"],
            lambda c, s: (
                c.describe_stream_summary(StreamName=s)["StreamDescriptionSummary"]["RecordDistributionStrategy"]
                == "AUTO"
            ),
        ),
        (
            "TagResource",
            ["stream", "tag", "{s}", "team=payments"],
            lambda c, s: c.list_tags_for_stream(StreamName=s)["Tags"] == [{"Key": "team", "Value": "payments"}],
        ),
    ],
)
async def test_a_lost_reply_is_settled_by_reading_the_setting_back(local_kinesis, tmp_path, operation, argv, shown):
    """Through the fault proxy, the one changing call's reply dropped after the server acted: the
    setting is read back (applied, logged so), and the call went out exactly once."""
    from urllib.parse import urlsplit

    import botocore.session

    from tests.faultproxy import FaultProxy, Faults

    stream = f"lost-{tmp_path.name[-8:]}"
    await on_demand(local_kinesis.endpoint_url, stream)
    truth = botocore.session.get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=local_kinesis.endpoint_url,
        aws_access_key_id="truth",
        aws_secret_access_key="truth",
    )
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, Faults.drop_reply(operation)) as proxy:
        code, _out, err = await run(proxy.endpoint_url, *[part.format(s=stream) for part in argv], "--yes")
        sent = proxy.stats[f"reset_after:{operation}"] + proxy.stats[f"pass:{operation}"]
    assert code == 0, err
    assert "the reply was lost; the stream shows the change" in err and "Traceback" not in err
    assert sent == 1 and shown(truth, stream)
    [(logged_operation, _, outcome)] = changes()
    assert (logged_operation, outcome) == (operation, "applied")


async def test_channels_update_plans_the_change_checks_it_and_reads_it_back(local_kinesis, tmp_path):
    """UpdateChannel: its members checked against the API model before any call, the change planned
    against the channel as described (only what differs), logged, and read back."""
    endpoint = local_kinesis.endpoint_url
    stream = f"upd-{tmp_path.name[-8:]}"
    arn = await on_demand(endpoint, stream)
    request = channel_request(f"upd-{tmp_path.name[-6:]}", arn)
    name = request["ChannelName"]
    (tmp_path / "channel.json").write_text(json.dumps(request))
    code, _, err = await run(endpoint, "channels", "create", "--config", str(tmp_path / "channel.json"), "--yes")
    assert code == 0, err

    def change_file(file: str, change: dict) -> str:
        (tmp_path / file).write_text(json.dumps(change))
        return str(tmp_path / file)

    fresher = change_file("fresher.json", {"S3DestinationConfiguration": {"DataFreshnessInSeconds": 600}})
    bad_input = {
        "typed.json": (
            {"S3DestinationConfiguration": {"DataFreshnessInSeconds": "soon"}},
            "does not match UpdateChannel",
        ),
        "empty.json": ({}, "changes nothing"),
        "arn.json": ({"ChannelARN": "x", "LoggingConfiguration": {}}, "leave ChannelARN out"),
        "tables.json": (
            {"S3TablesDestinationConfiguration": {"DataFreshnessInSeconds": 600}},
            "has no S3TablesDestinationConfiguration",
        ),
    }
    for file, (change, said) in bad_input.items():
        code, out, err = await run(
            endpoint, "channels", "update", name, "--config", change_file(file, change), "--yes", "--json"
        )
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, (file, err)
        assert json.loads(out)["error"]["code"] == "bad_request"
    code, _, err = await run(endpoint, "channels", "update", name, "--config", fresher, "--yes", "--read-only")
    assert code == 1 and f"refusing to update channel {name}" in err
    assert [(operation, outcome) for operation, _plan, outcome in changes()] == [("CreateChannel", "applied")]

    code, out, err = await run(endpoint, "channels", "update", name, "--config", fresher, "--yes", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert (
        document["executed"]
        and "S3DestinationConfiguration.DataFreshnessInSeconds: 300 -> 600" in document["plan"]["consequences"]
    )
    assert document["channel"]["S3DestinationConfiguration"]["DataFreshnessInSeconds"] == 600
    assert [(operation, outcome) for operation, _plan, outcome in changes()] == [
        ("CreateChannel", "applied"),
        ("UpdateChannel", "applied"),
    ]
    code, out, err = await run(endpoint, "channels", "describe", name, "--json")
    assert json.loads(out)["S3DestinationConfiguration"]["DataFreshnessInSeconds"] == 600, out
    await asyncio.sleep(0.6)  # the embedded server's channel settles (UPDATING, then ACTIVE)
    code, out, err = await run(endpoint, "channels", "update", name, "--config", fresher, "--yes", "--json")
    assert code == 0 and json.loads(out) == {"executed": False, "plan": json.loads(out)["plan"]}
    assert "already has these settings" in json.loads(out)["plan"]["summary"]
    assert len(changes()) == 2
    code, _, err = await run(endpoint, "channels", "update", "no-such-channel", "--config", fresher, "--yes")
    assert code == 2 and "no channel named 'no-such-channel'" in err
