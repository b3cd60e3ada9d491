"""Glue Schema Registry records: written here as the AWS serializer lays them out (fastavro and json
directly, the header packed by hand), the schemas registered in the embedded server's Glue, and read back
by `kconsole tail` over HTTP, decoded, filtered, masked and exported."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import struct
import uuid
import zlib

import botocore.session
import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.read.decoding import KIND_ERROR, KIND_JSON, decode_record
from console.read.schemas import SchemaCatalog
from tests.cli_zygote import stand_in_path

AVRO_SCHEMA = {
    "type": "record",
    "name": "Payment",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "user", "type": {"type": "record", "name": "User", "fields": [{"name": "email", "type": "string"}]}},
        {"name": "card", "type": "string"},
        {"name": "tier", "type": "string"},
    ],
}
JSON_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "tier": {"type": "string"}}}


@pytest.fixture(autouse=True)
def fresh_glue_registries(request):
    """A Glue account holds at most 10 registries (moto enforces AWS's quota) and the server lives for the
    whole session: the registries earlier tests of this worker made (`reg-...`) go before each test."""
    if "local_kinesis" not in request.fixturenames:
        yield
        return
    glue = botocore.session.get_session().create_client(
        "glue",
        region_name="us-east-1",
        endpoint_url=request.getfixturevalue("local_kinesis").endpoint_url,
        aws_access_key_id="tests",
        aws_secret_access_key="tests",
    )
    for registry in glue.list_registries()["Registries"]:
        if registry["RegistryName"].startswith("reg-"):
            glue.delete_registry(RegistryId={"RegistryName": registry["RegistryName"]})
    yield


def serializer_bytes(version_id: str, body: bytes, *, compressed: bool = False) -> bytes:
    """The AWS Glue Schema Registry serializer's layout: header version 3, compression 0 or 5, the
    version id's UUID as two big-endian longs, then the payload (zlib-deflated when compressed)."""
    most, least = struct.unpack(">qq", uuid.UUID(version_id).bytes)
    header = struct.pack(">bbqq", 3, 5 if compressed else 0, most, least)
    return header + (zlib.compress(body) if compressed else body)


def avro_body(value: dict) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(AVRO_SCHEMA), value)
    return buffer.getvalue()


def payment(number: int) -> dict:
    return {
        "id": number,
        "user": {"email": f"user{number}@example.com"},
        "card": f"4000 0000 0000 {number:04d}",
        "tier": "gold" if number % 3 == 0 else "basic",
    }


async def kconsole(*argv: str, endpoint: str, timeout: float = 60.0) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *argv,
        "--endpoint-url",
        endpoint,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode or 0, out.decode(), err.decode()


async def registered(kinesis, name: str, data_format: str, definition: dict) -> str:
    registry = f"reg-{uuid.uuid4().hex[:8]}"
    await kinesis.glue.ensure_registry(registry)
    answer = await kinesis.glue.register_schema(registry, name, data_format, json.dumps(definition))
    return answer["SchemaVersionId"]


async def schema_stream(kinesis, make_stream, count: int = 12) -> tuple[str, str, str]:
    stream = await make_stream(shards=1)
    avro_id = await registered(kinesis, "payments", "AVRO", AVRO_SCHEMA)
    json_id = await registered(kinesis, "payments-json", "JSON", JSON_SCHEMA)
    records = []
    for number in range(count):
        value = payment(number)
        if number % 2 == 0:
            data = serializer_bytes(avro_id, avro_body(value), compressed=number % 4 == 0)
        else:
            data = serializer_bytes(json_id, json.dumps(value).encode())
        records.append({"Data": data, "PartitionKey": f"p{number}"})
    await kinesis.put_records(stream, records)
    return stream, avro_id, json_id


async def test_avro_and_json_schema_records_round_trip_through_tail_json(kinesis, make_stream, local_kinesis):
    stream, _, _ = await schema_stream(kinesis, make_stream)

    code, out, err = await kconsole("tail", stream, "--json", endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["content"] for line in lines] == [payment(number) for number in range(12)]
    schemas = {line["schema"].split("/", 1)[1] for line in lines}
    assert schemas == {"payments v1", "payments-json v1"}
    assert lines[0]["encoding"] == ["glue", "zlib"] and lines[2]["encoding"] == ["glue"]


async def test_where_filters_on_a_decoded_field_and_text_names_the_schema(kinesis, make_stream, local_kinesis):
    stream, _, _ = await schema_stream(kinesis, make_stream)

    code, out, err = await kconsole(
        "tail", stream, "--where", "data.tier == 'gold' && data.user.email != ''", endpoint=local_kinesis.endpoint_url
    )

    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[3] for line in lines] == [f"p{number}" for number in range(12) if number % 3 == 0]
    assert all("/payments v1]" in line or "/payments-json v1]" in line for line in lines)


async def test_a_version_that_cannot_be_fetched_is_shown_raw_with_its_reason(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    gone = str(uuid.uuid4())  # never registered: GetSchemaVersion answers EntityNotFound
    await kinesis.put_record(stream, serializer_bytes(gone, avro_body(payment(1))), "gone")
    await kinesis.put_record(stream, b'{"plain": true}', "plain")

    code, out, err = await kconsole("tail", stream, "--json", endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["kind"] == "decode-error" and gone in first["error"] and "not fetched" in first["error"]
    assert first["content"].startswith("0300")  # the bytes as stored
    assert second["content"] == {"plain": True}


async def test_masking_hides_cards_and_emails_in_text_json_and_csv(kinesis, make_stream, local_kinesis, tmp_path):
    stream, _, _ = await schema_stream(kinesis, make_stream, count=6)
    endpoint = local_kinesis.endpoint_url
    mask = ("--mask", "user.email", "--mask", "@cards")

    text = await kconsole("tail", stream, *mask, endpoint=endpoint)
    lines = await kconsole("tail", stream, "--json", *mask, endpoint=endpoint)
    out = tmp_path / "window.csv"
    table = await kconsole(
        "tail",
        stream,
        *mask,
        "--output",
        "csv",
        "--fields",
        "key,data.card,data.user.email,data.tier",
        "--out",
        str(out),
        endpoint=endpoint,
    )

    for code, output, err in (text, lines, table):
        assert code == 0, err
        assert "masking on: user.email, @cards" in err
        assert "@example.com" not in output and "4000 0000" not in output
    rows = list(csv.reader(out.read_text().splitlines()))[1:]
    assert len(rows) == 6
    assert all(row[1].startswith("<masked 19 #") and row[2].startswith("<masked ") for row in rows)
    assert [row[3] for row in rows] == [payment(number)["tier"] for number in range(6)]
    contents = [json.loads(line)["content"] for line in lines[1].splitlines()]
    # equal values mask alike within one run, different ones differently
    assert len({content["card"] for content in contents}) == 6


async def test_a_mask_rule_that_does_not_parse_is_bad_input(local_kinesis):
    code, _out, err = await kconsole("tail", "anything", "--mask", "re:(", endpoint=local_kinesis.endpoint_url)

    assert code == 2
    assert "not a regular expression" in err and "Traceback" not in err


AVRO_ID = str(uuid.uuid4())
JSON_ID = str(uuid.uuid4())
ANSWERS = {
    AVRO_ID: {
        "SchemaArn": "arn:aws:glue:r:1:schema/r/a",
        "VersionNumber": 1,
        "DataFormat": "AVRO",
        "SchemaDefinition": json.dumps(AVRO_SCHEMA),
    },
    JSON_ID: {
        "SchemaArn": "arn:aws:glue:r:1:schema/r/j",
        "VersionNumber": 2,
        "DataFormat": "JSON",
        "SchemaDefinition": json.dumps(JSON_SCHEMA),
    },
}


def filled_catalog() -> SchemaCatalog:
    async def lookup(version_id: str) -> dict:
        return ANSWERS[version_id]

    catalog = SchemaCatalog(lookup)
    asyncio.run(catalog.prefetch(serializer_bytes(version_id, b"") for version_id in ANSWERS))
    return catalog


CATALOG = filled_catalog()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    version_id=st.sampled_from([AVRO_ID, JSON_ID, str(uuid.UUID(int=0))]),
    compressed=st.booleans(),
    body=st.binary(max_size=200),
)
def test_any_bytes_after_a_serializer_header_decode_or_say_why(version_id, compressed, body):
    data = serializer_bytes(version_id, body, compressed=compressed)
    if compressed and body[:1] == b"\x00":
        data = data[:18] + body  # a body that is not zlib at all

    [record] = decode_record(data, shard_id="s", sequence_number="1", partition_key="k", schemas=CATALOG)

    assert record.kind in (KIND_JSON, KIND_ERROR)
    if record.kind == KIND_ERROR:
        assert record.error and record.value == data
    json.loads(record.json_line())
    record.content_text()


def test_an_avro_record_decodes_to_what_was_written():
    data = serializer_bytes(AVRO_ID, avro_body(payment(7)))

    [record] = decode_record(data, shard_id="s", sequence_number="1", partition_key="k", schemas=CATALOG)

    assert record.value == payment(7) and record.schema == "r/a v1"


async def test_copy_where_filters_on_a_decoded_field_and_copies_the_bytes(kinesis, make_stream, local_kinesis):
    stream, _, _ = await schema_stream(kinesis, make_stream, count=6)
    target = await make_stream(shards=1)

    code, out, err = await kconsole(
        "copy",
        stream,
        target,
        "--from",
        "trim-horizon",
        "--where",
        "data.tier == 'gold'",
        "--yes",
        endpoint=local_kinesis.endpoint_url,
    )

    assert code == 0, err
    code, out, err = await kconsole("tail", target, "--json", endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert [json.loads(line)["content"] for line in out.splitlines()] == [payment(0), payment(3)]


async def test_summarize_reports_each_field_path_as_an_independent_count(kinesis, make_stream, local_kinesis):
    stream, _, _ = await schema_stream(kinesis, make_stream, count=10)
    await kinesis.put_record(stream, b'{"id": "x", "extra": [1, 2]}', "odd")

    code, out, err = await kconsole("tail", stream, "--summarize", "--json", endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    report = json.loads(out)
    documents = [payment(number) for number in range(10)] + [{"id": "x", "extra": [1, 2]}]
    assert report["records"] == 11
    assert report["fields"]["user.email"]["present"] == 10 and report["fields"]["user.email"]["distinct"] == 10
    assert report["fields"]["id"]["types"] == {"number": 10, "string": 1}
    assert report["fields"]["tier"]["top"][0] == {
        "value": "basic",
        "count": sum(1 for document in documents if document.get("tier") == "basic"),
    }
    assert report["fields"]["id"]["numbers"]["min"] == 0 and report["fields"]["id"]["numbers"]["max"] == 9
    assert sum(report["schemas"].values()) == 10
