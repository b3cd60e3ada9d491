"""`kconsole demo lease-table`: a KCL lease table the consumers views read back, on the embedded
server only."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import botocore.session
import pytest

from console.cli import main


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


async def kconsole(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


async def test_the_demo_lease_table_is_read_back_by_consumers(capsys, local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=3, prefix="demo")
    first = (await kinesis.all_shards(stream))[0]
    await kinesis.split_shard(stream, first.shard_id, first.starting_hash_key + 2**120)
    await kinesis.wait_for_active(stream)
    table = f"demo-{uuid.uuid4().hex[:8]}"
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)
    code, out, err = await kconsole(capsys, "demo", "lease-table", stream, "--table", table, *endpoint, "--json")
    assert code == 0, err
    assert json.loads(out) == {"stream": stream, "lease_table": table, "leases": 5}

    code, out, err = await kconsole(capsys, "consumers", stream, "--lease-table", table, *endpoint, "--json")
    assert code == 0, err
    leases = {lease["shard_id"]: lease for lease in json.loads(out)["leases"]}
    assert set(leases) == {shard.shard_id for shard in await kinesis.all_shards(stream)}
    assert leases[first.shard_id]["checkpoint"] == "SHARD_END" and leases[first.shard_id]["state"] == "finished"
    assert {lease["owner"] for lease in leases.values()} == {"worker-a", "worker-b"}

    code, _, err = await kconsole(capsys, "demo", "lease-table", stream, "--table", table, *endpoint)
    assert code == 2 and "already exists" in err  # a second run never overwrites a table


async def test_demo_data_never_goes_to_a_remote_endpoint_or_under_read_only(capsys, local_kinesis):
    code, _, err = await kconsole(
        capsys, "demo", "lease-table", "orders", "--endpoint-url", "https://kinesis.eu-west-1.amazonaws.com"
    )
    assert code == 2 and "only to the embedded server" in err and "Traceback" not in err
    code, _, err = await kconsole(
        capsys, "demo", "lease-table", "orders", "--endpoint-url", local_kinesis.endpoint_url, "--read-only"
    )
    assert code == 1 and "read-only" in err


# ---- kconsole demo readers ---------------------------------------------------------------------------


def sync_client(endpoint: str, service: str):
    return botocore.session.get_session().create_client(
        service,
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def latest_point(cloudwatch, namespace: str, metric: str, dimensions: dict[str, str]) -> tuple[float, int]:
    """The newest value of one series over the last 15 minutes, and how many points it has."""
    now = datetime.now(UTC)
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "m0",
                "MetricStat": {
                    "Metric": {
                        "Namespace": namespace,
                        "MetricName": metric,
                        "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()],
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ],
        StartTime=now - timedelta(minutes=15),
        EndTime=now,
    )["MetricDataResults"][0]
    points = sorted(zip(answer["Timestamps"], answer["Values"]))
    return points[-1][1], len(points)


async def test_demo_readers_makes_one_reader_of_each_kind_with_its_lag_metrics(capsys, local_kinesis, make_stream):
    stream = await make_stream(shards=3, prefix="readers")
    endpoint = local_kinesis.endpoint_url
    code, out, err = await kconsole(capsys, "demo", "readers", stream, "--endpoint-url", endpoint, "--json")
    assert code == 0, err
    made = json.loads(out)
    assert made["next"] == f"kconsole readers {stream}" and made["records_put"] == 300
    readers = {reader["kind"]: reader for reader in made["readers"]}
    assert [reader["problem"] for reader in made["readers"]] == [None] * 7
    arn = made["stream_arn"]

    kinesis, lam = sync_client(endpoint, "kinesis"), sync_client(endpoint, "lambda")
    consumers = kinesis.list_stream_consumers(StreamARN=arn)["Consumers"]
    assert [c["ConsumerName"] for c in consumers] == [f"{stream}-fan-out"]
    consumer_arn = consumers[0]["ConsumerARN"]
    assert readers["efo_consumer"]["arn"] == consumer_arn
    for source, kind in ((arn, "lambda_mapping"), (consumer_arn, "lambda_mapping_efo")):
        mappings = lam.list_event_source_mappings(EventSourceArn=source)["EventSourceMappings"]
        assert [m["EventSourceMappingArn"] for m in mappings] == [readers[kind]["arn"]]
        assert mappings[0]["FunctionArn"].endswith(f":function:{stream}-reader")
    delivery = sync_client(endpoint, "firehose").describe_delivery_stream(DeliveryStreamName=f"{stream}-to-s3")
    assert delivery["DeliveryStreamDescription"]["Source"]["KinesisStreamSourceDescription"]["KinesisStreamARN"] == arn
    pipe = sync_client(endpoint, "pipes").describe_pipe(Name=f"{stream}-pipe")
    assert (pipe["Source"], pipe["CurrentState"]) == (arn, "RUNNING")
    app = sync_client(endpoint, "kinesisanalyticsv2").describe_application(ApplicationName=f"{stream}-flink")
    detail = app["ApplicationDetail"]
    assert detail["ApplicationStatus"] == "RUNNING"
    groups = detail["ApplicationConfigurationDescription"]["EnvironmentPropertyDescriptions"][
        "PropertyGroupDescriptions"
    ]
    assert groups[0]["PropertyMap"]["input.stream.name"] == stream

    # The KCL application is behind: every shard's checkpoint has records after it.
    code, out, err = await kconsole(
        capsys, "consumers", stream, "--lease-table", f"{stream}-kcl-app", "--endpoint-url", endpoint, "--json"
    )
    assert code == 0, err
    leases = json.loads(out)["leases"]
    assert len(leases) == made["leases"] == 3
    assert all(lease["checkpoint"].isdigit() for lease in leases)
    assert all(lease["records_behind"] > 0 for lease in leases), leases

    # Each reader's lag is the latest point of the metric its service publishes; ten minutes of them.
    cloudwatch = sync_client(endpoint, "cloudwatch")
    series = {
        "efo_consumer": (
            "AWS/Kinesis",
            "SubscribeToShardEvent.MillisBehindLatest",
            {"StreamName": stream, "ConsumerName": f"{stream}-fan-out"},
        ),
        "lambda_mapping": ("AWS/Lambda", "IteratorAge", {"FunctionName": f"{stream}-reader"}),
        "firehose": ("AWS/Firehose", "KinesisMillisBehindLatest", {"DeliveryStreamName": f"{stream}-to-s3"}),
        "flink": ("AWS/KinesisAnalytics", "millisBehindLatest", {"Application": f"{stream}-flink"}),
    }
    lags = {}
    for kind, (namespace, metric, dimensions) in series.items():
        lags[kind], points = latest_point(cloudwatch, namespace, metric, dimensions)
        assert points == 10 and lags[kind] == readers[kind]["lag_ms"]
    assert sorted(lags, key=lags.get, reverse=True) == ["flink", "lambda_mapping", "firehose", "efo_consumer"]
    assert lags["flink"] == 600_000
    for namespace, metric, dimensions in (
        ("AWS/Lambda", "Errors", {"FunctionName": f"{stream}-reader"}),
        ("AWS/Lambda", "Throttles", {"FunctionName": f"{stream}-reader"}),
        ("AWS/Firehose", "DataReadFromKinesisStream.Records", {"DeliveryStreamName": f"{stream}-to-s3"}),
        ("AWS/Firehose", "DataReadFromKinesisStream.Bytes", {"DeliveryStreamName": f"{stream}-to-s3"}),
    ):
        assert latest_point(cloudwatch, namespace, metric, dimensions)[1] == 10

    # Puts still work with the mappings in place (the embedded server never invokes them).
    kinesis.put_record(StreamName=stream, Data=b"after", PartitionKey="k")

    code, _, err = await kconsole(capsys, "demo", "readers", stream, "--endpoint-url", endpoint)
    assert code == 2 and "already has demo readers" in err and f"Lambda function {stream}-reader" in err
    assert len(err.strip().splitlines()) == 1


async def test_demo_readers_text_names_each_reader_and_the_next_command(capsys, local_kinesis, make_stream):
    stream = await make_stream(shards=1, prefix="readers")
    code, out, err = await kconsole(capsys, "demo", "readers", stream, "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 0, err
    assert f"Managed Flink application  {stream}-flink" in out and "10.0 min behind" in out
    assert out.strip().splitlines()[-1] == f"next: kconsole readers {stream}"


async def test_demo_readers_refuses_bad_input_remote_endpoints_and_read_only(capsys, local_kinesis):
    code, out, err = await kconsole(
        capsys, "demo", "readers", "s" * 60, "--endpoint-url", local_kinesis.endpoint_url, "--json"
    )
    assert code == 2 and json.loads(out)["error"]["code"] == "usage" and "at most 52 characters" in out
    code, _, err = await kconsole(
        capsys, "demo", "readers", "orders", "--endpoint-url", "https://kinesis.eu-west-1.amazonaws.com"
    )
    assert code == 2 and "only to the embedded server" in err and "Traceback" not in err
    code, _, err = await kconsole(
        capsys, "demo", "readers", "orders", "--endpoint-url", local_kinesis.endpoint_url, "--read-only"
    )
    assert code == 1 and "read-only" in err


@pytest.mark.kinesis_mock
async def test_demo_readers_on_a_server_with_kinesis_alone_says_what_it_could_not_make(capsys, kinesis_mock):
    stream = f"readers-{uuid.uuid4().hex[:8]}"
    kinesis = sync_client(kinesis_mock.endpoint_url, "kinesis")
    kinesis.create_stream(StreamName=stream, ShardCount=2)
    for _ in range(100):
        if kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE":
            break
        await asyncio.sleep(0.1)
    code, out, err = await kconsole(
        capsys, "demo", "readers", stream, "--endpoint-url", kinesis_mock.endpoint_url, "--json"
    )
    assert code == 0, err
    made = json.loads(out)
    problems = {reader["kind"]: reader["problem"] for reader in made["readers"]}
    assert problems["efo_consumer"] is None  # kinesis-mock has enhanced fan-out
    assert all(problems[kind] for kind in ("lambda_mapping", "firehose", "pipe", "flink", "kcl")), problems
    assert made["metrics_problem"]
