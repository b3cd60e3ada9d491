"""Every reader of a stream (console/consumers/readers.py) against the embedded server over HTTP:
readers of each kind created as their services create them, lag put into CloudWatch as the services
publish it, failures injected where the HTTP request would be sent, and kinesis-mock for an endpoint
that serves Kinesis alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from aiobotocore.awsrequest import AioAWSResponse

from console.backend import BackendConfig, open_backend
from console.consumers.look import find_lease_tables
from console.consumers.reader_impact import fleet_reader_lag, reshard_impact
from console.consumers.reader_model import ReadersReport
from console.consumers.readers import readers_report
from tests.commands.test_cli_reshard import kconsole, one_clean_line
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.consumers.reader_resources import ReaderFactory


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
async def made(local_kinesis):
    async with ReaderFactory(local_kinesis.endpoint_url) as factory:
        yield factory


@pytest.fixture
async def ddb(local_kinesis):
    async with dynamodb(local_kinesis.endpoint_url) as client:
        yield client


def minute_ago() -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1, seconds=-10)


class CannedAnswer:
    """What a service answers, injected where the HTTP request would be sent (moto enforces no IAM
    and never throttles): `status` and a JSON body with the error type, or a given body."""

    class _Body:
        def __init__(self, body: bytes) -> None:
            self.body = body

        async def read(self) -> bytes:
            return self.body

    def __init__(self, status: int, body: dict, *, error_type: str | None = None, only_naming: str = "") -> None:
        self.status, self.body, self.error_type = status, body, error_type
        self.only_naming = only_naming.encode()  # answer only requests naming this; the server answers the rest
        self.calls = 0

    def __call__(self, request, **_):
        if self.only_naming and self.only_naming not in (request.body or b""):
            return None
        self.calls += 1
        headers = {"x-amzn-requestid": "x", "content-type": "application/json"}
        if self.error_type:
            headers["x-amzn-errortype"] = self.error_type
        return AioAWSResponse(request.url, self.status, headers, self._Body(json.dumps(self.body).encode()))


async def test_every_kind_of_reader_worst_first_with_its_lag_from_cloudwatch(kinesis, make_stream, made, ddb):
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    shards = await kinesis.all_shards(stream)
    for i in range(5):
        await kinesis.put_record(stream, f"r{i}".encode(), f"k{i}", explicit_hash_key=shards[0].starting_hash_key)
    consumer = await kinesis.register_stream_consumer(arn, "efo-reader")
    await kinesis.register_stream_consumer(arn, "efo-flink")
    await kinesis.register_stream_consumer(arn, "efo-unused")
    far, near, through = await made.function(), await made.function(), await made.function()
    await made.mapping(arn, far, BatchSize=500, ParallelizationFactor=4, BisectBatchOnFunctionError=True)
    await made.mapping(arn, near)
    await made.mapping(consumer.arn, through)
    delivery = await made.delivery_stream(arn)
    pipe = await made.pipe(arn)
    flink = await made.flink({"input.stream": stream, "efo.consumername": "efo-flink"})
    await made.flink({"input.stream": stream + "-other"})  # names another stream: not a reader
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shards[0].shard_id), kcl_lease(shards[1].shard_id)])

    at = minute_ago()
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": far}, 600_000, at)
    await made.metric("AWS/Lambda", "Errors", {"FunctionName": far}, 3, at)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": near}, 2_000, at)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": through}, 150_000, at)
    await made.metric("AWS/Firehose", "KinesisMillisBehindLatest", {"DeliveryStreamName": delivery}, 200_000, at)
    await made.metric("AWS/Firehose", "DataReadFromKinesisStream.Records", {"DeliveryStreamName": delivery}, 42, at)
    await made.metric("AWS/KinesisAnalytics", "millisBehindLatest", {"Application": flink}, 300_000, at)
    await made.metric(
        "AWS/Kinesis",
        "SubscribeToShardEvent.MillisBehindLatest",
        {"StreamName": stream, "ConsumerName": "efo-reader"},
        100_000,
        at,
    )

    # the table is named: other tests' tables of two TRIM_HORIZON leases would fit this stream as well
    report = await readers_report(kinesis, stream, lease_tables=[table])
    order = [(r.kind, r.name) for r in report.readers]
    assert order[:5] == [
        ("lambda", far),
        ("flink", flink),
        ("firehose", delivery),
        ("lambda", through),
        ("efo", "efo-reader"),
    ], order
    # then the KCL application (seconds behind: its records were put moments ago) and the others
    known = [r.millis_behind for r in report.readers if r.millis_behind is not None]
    assert known == sorted(known, reverse=True) and len(known) == 7
    assert {(r.kind, r.name) for r in report.readers[5:7]} == {("kcl", table), ("lambda", near)}
    assert {(r.kind, r.name) for r in report.readers[7:]} == {
        ("pipe", pipe),
        ("efo", "efo-flink"),
        ("efo", "efo-unused"),
    }
    assert report.readers[1].via == "efo-flink"  # the Flink application's properties name the consumer
    assert report.unavailable == ()
    by_name = {r.name: r for r in report.readers}
    assert by_name[far].millis_behind == 600_000 and by_name[far].errors == "3 errors in 5 min"
    assert by_name[far].settings["parallelization_factor"] == 4 and by_name[far].settings["bisect_on_error"] is True
    assert by_name[through].via == "efo-reader"
    assert by_name["efo-reader"].settings["used_by"] == [f"lambda {through}"]
    assert by_name["efo-unused"].reason == "no known reader uses it"
    assert by_name["efo-flink"].reason is None and by_name["efo-flink"].settings["used_by"] == [f"flink {flink}"]
    assert by_name[delivery].settings["read_records"] == 42 and by_name[delivery].settings["destination"] == "S3"
    assert by_name[flink].heuristic and by_name[flink].settings["named_by"] == "consumer.input.stream"
    assert by_name[pipe].millis_behind is None and "no iterator age" in str(by_name[pipe].settings["lag"])
    kcl = by_name[table]
    assert kcl.records_behind == 5 and kcl.shards is not None
    assert [(p.shard_id, p.records_behind, p.checkpoint) for p in kcl.shards] == [
        (shards[0].shard_id, 5, "TRIM_HORIZON"),
        (shards[1].shard_id, 0, "TRIM_HORIZON"),
    ]
    on_first = report.positions_on(shards[0].shard_id)
    assert len(on_first) == len(report.readers)
    assert [p.records_behind for r, p in on_first if r.kind == "kcl"] == [5]
    assert all(p is None for r, p in on_first if r.kind != "kcl")
    document = report.to_json()
    assert [r["name"] for r in document["readers"]] == [r.name for r in report.readers]
    assert json.loads(json.dumps(document)) == document


async def test_mappings_on_an_efo_consumer_are_found_through_its_arn(kinesis, make_stream, made):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    consumer = await kinesis.register_stream_consumer(arn, "fanout")
    function = await made.function()
    await made.mapping(consumer.arn, function)
    report = await readers_report(kinesis, stream, lease_tables=[])
    [mapped] = [r for r in report.readers if r.kind == "lambda"]
    assert mapped.name == function and mapped.via == "fanout"
    [efo] = [r for r in report.readers if r.kind == "efo"]
    assert efo.reason is None and efo.settings["used_by"] == [f"lambda {function}"]


async def test_two_hundred_mappings_are_all_listed(kinesis, make_stream, made):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    functions = [await made.function() for _ in range(20)]
    for i in range(200):
        await made.mapping(arn, functions[i % 20], BatchSize=100 + i)
    report = await readers_report(kinesis, stream, lease_tables=[])
    mapped = [r for r in report.readers if r.kind == "lambda"]
    assert len(mapped) == 200
    assert sorted(r.settings["batch_size"] for r in mapped) == list(range(100, 300))


async def test_a_function_deleted_under_its_mapping_is_said_in_its_row(kinesis, make_stream, made):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    kept, gone = await made.function(), await made.function()
    await made.mapping(arn, kept)
    await made.mapping(arn, gone)
    await made.__getattr__("lambda").delete_function(FunctionName=gone)
    report = await readers_report(kinesis, stream, lease_tables=[])
    rows = {r.name: r for r in report.readers}
    assert rows[gone].state == "function deleted" and "no longer exists" in (rows[gone].errors or "")
    assert report.readers[0].name == gone  # a reader that reads nothing comes first
    assert rows[kept].state == "Enabled" and rows[kept].errors is None


async def test_a_delivery_stream_that_failed_to_create_says_why(kinesis, make_stream, made):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    name = await made.delivery_stream(arn)
    real = await made.firehose.describe_delivery_stream(DeliveryStreamName=name)
    description = real["DeliveryStreamDescription"]
    failed = {
        **{k: v for k, v in description.items() if not k.endswith("Timestamp")},
        "DeliveryStreamStatus": "CREATING_FAILED",
        "FailureDescription": {"Type": "INVALID_KMS_KEY", "Details": "the key is disabled"},
    }
    client = await kinesis._side_client("firehose")
    client.meta.events.register(
        "before-send.firehose.DescribeDeliveryStream",
        CannedAnswer(200, {"DeliveryStreamDescription": failed}, only_naming=name),
    )
    report = await readers_report(kinesis, stream, lease_tables=[])
    [row] = [r for r in report.readers if r.kind == "firehose"]
    assert row.state == "CREATING_FAILED" and row.reason == "INVALID_KMS_KEY: the key is disabled"
    assert row.errors == row.reason and row.failing


async def test_a_throttled_or_denied_service_is_one_line_and_the_rest_stands(local_kinesis, make_stream, made):
    config = BackendConfig(kind="local", region="us-east-1", endpoint_url=local_kinesis.endpoint_url, max_attempts=2)
    async with open_backend(config) as backend:
        backend.on_retry = None
        stream = await make_stream(shards=1)
        arn = (await backend.describe_stream_summary(stream)).arn
        await made.mapping(arn, await made.function())
        pipe = await made.pipe(arn)
        throttled = CannedAnswer(429, {"message": "Rate exceeded"}, error_type="TooManyRequestsException")
        (await backend._side_client("lambda")).meta.events.register(
            "before-send.lambda.ListEventSourceMappings", throttled
        )
        denied = CannedAnswer(
            400,
            {"__type": "AccessDeniedException", "message": "not authorized to perform firehose:ListDeliveryStreams"},
        )
        (await backend._side_client("firehose")).meta.events.register(
            "before-send.firehose.ListDeliveryStreams", denied
        )
        report = await readers_report(backend, stream, lease_tables=[])
    assert throttled.calls == 2  # retried, then given up
    assert [r.name for r in report.readers] == [pipe]
    assert len(report.unavailable) == 2
    firehose_line, lambda_line = report.unavailable
    assert firehose_line.startswith("Firehose: access denied for firehose:ListDeliveryStreams")
    assert lambda_line.startswith("Lambda: throttled") and "ListEventSourceMappings" in lambda_line
    assert all("\n" not in line for line in report.unavailable)


async def test_lease_tables_of_other_streams_with_the_same_shard_ids_are_not_this_streams(kinesis, make_stream, ddb):
    first = await make_stream(shards=1)
    [shard] = await kinesis.all_shards(first)
    answer = await kinesis.put_record(first, b"x", "k")
    second = await make_stream(shards=1)  # created later: its shard's sequence numbers start above the put's
    second_shards = await kinesis.all_shards(second)
    assert [s.shard_id for s in second_shards] == [shard.shard_id]  # the same shard id in both
    first_table, foreign, second_table = [await create_lease_table(ddb) for _ in range(3)]
    await put_items(ddb, first_table, [kcl_lease(shard.shard_id, checkpoint=answer["SequenceNumber"])])
    # leases on a shard the stream has and on one it does not: another stream's table
    await put_items(ddb, foreign, [kcl_lease(shard.shard_id), kcl_lease("shardId-000000000099")])
    await put_items(ddb, second_table, [kcl_lease(shard.shard_id, checkpoint="LATEST")])
    found_first = await find_lease_tables(kinesis, first, await kinesis.all_shards(first))
    found_second = await find_lease_tables(kinesis, second, second_shards)
    assert first_table in found_first and foreign not in found_first
    assert second_table in found_second and first_table not in found_second and foreign not in found_second


async def test_a_reshard_names_the_readers_it_affects(kinesis, make_stream, made, ddb):
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    shards = await kinesis.all_shards(stream)
    for i in range(3):
        await kinesis.put_record(stream, f"r{i}".encode(), f"k{i}", explicit_hash_key=shards[0].starting_hash_key)
    function = await made.function()
    await made.mapping(arn, function, ParallelizationFactor=2)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(s.shard_id, owner="w1") for s in shards])
    report = await readers_report(kinesis, stream, lease_tables=[table])
    impacts = {
        i.reader: i.lines for i in reshard_impact(report, parents=[shards[0].shard_id], shards_before=2, shards_after=3)
    }
    assert impacts[f"lambda {function}"] == (
        "reads the children only after the parents are drained (its backlog is unknown)",
        "concurrency 4 → 6 (parallelization factor 2 × shards)",
    )
    assert impacts[f"kcl {table}"][0] == (
        "reads the children only after the parents are drained (the parents' backlog: 3 records, "
        + impacts[f"kcl {table}"][0].split("3 records, ")[1]
    )
    tight = reshard_impact(
        report, parents=[shards[0].shard_id], shards_before=2, shards_after=3, workers={table: (1, 2)}
    )
    [kcl_lines] = [i.lines for i in tight if i.reader == f"kcl {table}"]
    assert "1 worker × maxLeasesForWorker 2 hold 2 leases, fewer than 3 shards: 1 would go unread" in kcl_lines


async def test_the_fleet_sees_every_streams_worst_reader_in_a_few_calls(kinesis, make_stream, made):
    behind, fine, quiet = await make_stream(shards=1), await make_stream(shards=1), await make_stream(shards=1)
    arns = {s: (await kinesis.describe_stream_summary(s)).arn for s in (behind, fine, quiet)}
    slow, quick = await made.function(), await made.function()
    await made.mapping(arns[behind], slow)
    consumer = await kinesis.register_stream_consumer(arns[fine], "fleet-efo")
    await made.mapping(consumer.arn, quick)
    delivery = await made.delivery_stream(arns[behind])
    at = minute_ago()
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": slow}, 300_000, at)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": quick}, 1_000, at)
    await made.metric("AWS/Firehose", "KinesisMillisBehindLatest", {"DeliveryStreamName": delivery}, 900_000, at)
    flink = await made.flink({"streams": f"{fine},{arns[quiet]}"})
    await made.metric("AWS/KinesisAnalytics", "millisBehindLatest", {"Application": flink}, 20_000, at)
    silent = await make_stream(shards=1)
    fleet = await fleet_reader_lag(kinesis, [behind, fine, quiet, silent])
    assert fleet.worst[behind] == (f"firehose {delivery}", 900_000)
    assert fleet.worst[fine] == (f"flink {flink}", 20_000)  # further behind than its Lambda reader
    assert fleet.worst[quiet] == (f"flink {flink}", 20_000)  # named by its ARN
    assert silent not in fleet.worst and fleet.unavailable == ()


# ---- the CLI -------------------------------------------------------------------------------------


async def test_the_command_lists_readers_in_json_and_text(capsys, local_kinesis, kinesis, make_stream, made):
    stream = await make_stream(shards=7)  # no other test's lease table holds exactly these seven shards
    arn = (await kinesis.describe_stream_summary(stream)).arn
    function = await made.function()
    await made.mapping(arn, function, BatchSize=250)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": function}, 720_000, minute_ago())
    where = ("--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1")
    code, out, err = await kconsole(capsys, "readers", stream, "--json", *where)
    assert code == 0, err
    document = json.loads(out)
    assert document["stream"] == stream and document["unavailable"] == []
    assert [(r["kind"], r["name"], r["millis_behind"]) for r in document["readers"]] == [("lambda", function, 720_000)]
    code, out, err = await kconsole(capsys, "readers", stream, *where)
    assert code == 0 and function in out and "12.0 min" in out and "batch_size=250" in out
    code, out, err = await kconsole(capsys, "readers", stream, "--query", "readers[0].settings.batch_size", *where)
    assert code == 0 and out.strip() == "250"
    code, out, err = await kconsole(capsys, "readers", "bad name!", *where)
    assert code == 2 and "stream" in one_clean_line(err)
    code, out, err = await kconsole(capsys, "readers", f"missing-{stream}", "--json", *where)
    assert code == 1 and json.loads(out)["error"]["code"] == "stream_not_found"


@pytest.mark.kinesis_mock
async def test_an_endpoint_serving_kinesis_alone_costs_one_line_per_service(capsys, kinesis_mock):
    url = kinesis_mock.endpoint_url
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=url)) as backend:
        await backend.create_stream("readers-kinesis-only", 1)
        await backend.wait_for_active("readers-kinesis-only")
        arn = (await backend.describe_stream_summary("readers-kinesis-only")).arn
        await backend.register_stream_consumer(arn, "lonely")
    code, out, err = await kconsole(
        capsys, "readers", "readers-kinesis-only", "--json", "--endpoint-url", url, "--region", "us-east-1"
    )
    assert code == 0, err
    report = json.loads(out)
    assert [(r["kind"], r["name"], r["reason"]) for r in report["readers"]] == [
        ("efo", "lonely", "no known reader uses it")
    ]
    services = [line.split(":")[0] for line in report["unavailable"]]
    assert services == [
        "CloudWatch",
        "EventBridge Pipes",
        "Firehose",
        "KCL lease tables",
        "Lambda",
        "Managed Service for Apache Flink",
    ], report["unavailable"]
    assert all("\n" not in line and "Traceback" not in line for line in report["unavailable"])


def test_an_empty_report_renders():
    from console.commands.readers import render_readers

    assert render_readers(ReadersReport("s", (), ("Lambda: access denied",))) == (
        "stream s: 0 reader(s), worst first\nunavailable: Lambda: access denied"
    )


async def test_a_plan_names_the_readers_it_affects_in_text_and_json(capsys, local_kinesis, kinesis, make_stream, made):
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    function = await made.function()
    await made.mapping(arn, function, ParallelizationFactor=3)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": function}, 90_000, minute_ago())
    where = ("--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1")
    code, out, err = await kconsole(capsys, "plan", "scale", stream, "--to", "4", "--json", *where)
    assert code == 0, err
    readers = json.loads(out)["readers"]
    [affected] = [a for a in readers["affected"] if a["reader"] == f"lambda {function}"]
    assert affected["lines"] == [
        "reads the children only after the parents are drained (now 90.0 s behind)",
        "concurrency 6 → 12 (parallelization factor 3 × shards)",
    ]
    code, out, err = await kconsole(capsys, "plan", "scale", stream, "--to", "4", *where)
    assert code == 0 and f"reader lambda {function}: concurrency 6 → 12" in out
    code, out, err = await kconsole(capsys, "reshard", "scale", stream, "--to", "4", "--yes", "--json", *where)
    assert code == 0, err
    [done] = [a for a in json.loads(out)["readers"]["affected"] if a["reader"] == f"lambda {function}"]
    assert done["lines"] == affected["lines"]
    assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 4


async def test_the_stream_list_puts_a_stream_whose_reader_is_behind_in_trouble(
    capsys, local_kinesis, kinesis, make_stream, made
):
    behind, fine = await make_stream(shards=1), await make_stream(shards=1)
    slow = await made.function()
    await made.mapping((await kinesis.describe_stream_summary(behind)).arn, slow)
    await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": slow}, 600_000, minute_ago())
    where = ("--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1")
    code, out, err = await kconsole(capsys, "streams", "--json", *where)
    assert code == 0, err
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows[behind]["worst_reader"] == {"reader": f"lambda {slow}", "millis_behind": 600_000}
    assert f"reader lambda {slow} 10 min behind" in rows[behind]["trouble"]
    assert rows[fine]["worst_reader"] is None and rows[fine]["trouble"] == []
    code, out, err = await kconsole(capsys, "streams", *where)
    assert code == 0 and f"! reader lambda {slow} 10 min behind" in out


def test_a_flink_application_names_the_stream_only_as_a_whole_word():
    from console.consumers.reader_sources import flink_names_stream

    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"

    def app(value: str) -> dict:
        groups = [{"PropertyGroupId": "source", "PropertyMap": {"streams": value}}]
        return {
            "ApplicationConfigurationDescription": {
                "EnvironmentPropertyDescriptions": {"PropertyGroupDescriptions": groups}
            }
        }

    for value in ("orders", f" {arn} ", "clicks, orders", f"{arn}/consumer/flink:1700000000"):
        assert flink_names_stream(app(value), "orders", arn) == "source.streams", value
    for value in ("orders2", f"{arn}2", "my-orders", "arn:aws:kinesis:us-east-1:123456789012:stream/orders-eu"):
        assert flink_names_stream(app(value), "orders", arn) is None, value


async def test_the_demo_readers_come_back_worst_first_with_the_lag_their_metrics_say(
    capsys, local_kinesis, make_stream
):
    from console.backend.demo_readers import LAG_MS

    stream = await make_stream(shards=2)
    where = ("--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1")
    code, out, err = await kconsole(capsys, "demo", "readers", stream, "--json", *where)
    assert code == 0, err
    code, out, err = await kconsole(capsys, "readers", stream, "--json", *where)
    assert code == 0, err
    report = json.loads(out)
    assert report["unavailable"] == []
    rows = [(r["kind"], r["name"], r["via"], r["millis_behind"]) for r in report["readers"]]
    assert rows[:3] == [
        ("flink", f"{stream}-flink", None, LAG_MS["flink"]),
        ("lambda", f"{stream}-reader", None, LAG_MS["lambda"]),
        ("lambda", f"{stream}-reader", f"{stream}-fan-out", LAG_MS["lambda"]),
    ], rows
    by_kind = {(r["kind"], r["via"]): r for r in report["readers"]}
    assert by_kind[("firehose", None)]["millis_behind"] == LAG_MS["firehose"]
    assert by_kind[("efo", None)]["millis_behind"] == LAG_MS["efo_consumer"]
    assert by_kind[("efo", None)]["settings"]["used_by"] == [f"lambda {stream}-reader"]
    # (other tests' tables of two TRIM_HORIZON leases fit this two-shard stream as well: found too)
    [kcl] = [r for r in report["readers"] if r["kind"] == "kcl" and r["name"] == f"{stream}-kcl-app"]
    assert kcl["records_behind"] > 0 and len(kcl["shards"]) == 2
    [pipe_at] = [i for i, row in enumerate(rows) if row[0] == "pipe"]
    assert all(row[3] is None for row in rows[pipe_at:])  # Pipes publish no lag: among the last
    known = [row[3] for row in rows if row[3] is not None]
    assert known == sorted(known, reverse=True)


async def test_mappings_over_many_pages_are_all_read(kinesis, make_stream, made):
    """ListEventSourceMappings pages (MaxItems 100, NextMarker) as AWS answers them: the embedded
    server answers every mapping at once, so its answer is cut into AWS's pages on the way back."""
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    function = await made.function()
    for i in range(250):
        await made.mapping(arn, function, BatchSize=100 + i)
    markers: list[str | None] = []

    def remember(params, **_):
        markers.append(params.get("Marker"))

    def one_page(parsed, **_):
        start = int(markers[-1] or 0)
        every = parsed["EventSourceMappings"]
        parsed["EventSourceMappings"] = every[start : start + 100]
        if start + 100 < len(every):
            parsed["NextMarker"] = str(start + 100)

    client = await kinesis._side_client("lambda")
    client.meta.events.register("provide-client-params.lambda.ListEventSourceMappings", remember)
    client.meta.events.register("after-call.lambda.ListEventSourceMappings", one_page)
    report = await readers_report(kinesis, stream, lease_tables=[])
    assert markers == [None, "100", "200"]
    assert sorted(r.settings["batch_size"] for r in report.readers if r.kind == "lambda") == list(range(100, 350))


async def test_a_kcl_application_reading_through_its_efo_consumer_uses_it(kinesis, make_stream, ddb):
    """The KCL registers its enhanced fan-out consumer under the application's name, its lease table's."""
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    [shard] = await kinesis.all_shards(stream)
    table = await create_lease_table(ddb)
    await put_items(ddb, table, [kcl_lease(shard.shard_id)])
    await kinesis.register_stream_consumer(arn, table)
    report = await readers_report(kinesis, stream, lease_tables=[table])
    rows = {r.kind: r for r in report.readers}
    assert rows["kcl"].via == table and rows["kcl"].label == f"kcl {table} (via {table})"
    assert rows["efo"].settings["used_by"] == [f"kcl {table}"] and rows["efo"].reason is None
