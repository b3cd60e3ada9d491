"""`put --schema REGISTRY/NAME[:VERSION]` and `produce --schema`: JSON lines and test records encoded with a schema registered in the embedded
server's Glue, verified by reading back, and the bytes read back decoded here independently (fastavro,
the protobuf runtime with hand-built descriptors, json) after checking the serializer's header by hand."""

from __future__ import annotations

import asyncio
import io
import json
import struct
import sys
import uuid

import fastavro
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.read.test_glue_protobuf import PAYMENT_INDEX, PROTO_SCHEMA, Payment, payment, register_proto
from tests.read.test_glue_schemas import AVRO_SCHEMA, JSON_SCHEMA, fresh_glue_registries, kconsole  # noqa: F401 - the fixture
from tests.read.test_glue_schemas import payment as avro_payment


async def put(*argv: str, lines: list[dict], endpoint: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "put",
        *argv,
        "--endpoint-url",
        endpoint,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    out, err = await asyncio.wait_for(process.communicate(text), 120)
    return process.returncode or 0, out.decode(), err.decode()


async def stored(kinesis, stream: str) -> list[bytes]:
    iterator = await kinesis.get_shard_iterator(stream, "shardId-000000000000", "TRIM_HORIZON")
    answer = await kinesis.get_records(iterator)
    return [bytes(record["Data"]) for record in answer["Records"]]


def split_header(data: bytes) -> tuple[str, bytes]:
    """The AWS serializer's header: version 3, compression 0, the version id as two big-endian longs."""
    version, compression, most, least = struct.unpack(">bbqq", data[:18])
    assert (version, compression) == (3, 0)
    return str(uuid.UUID(bytes=struct.pack(">qq", most, least))), data[18:]


async def registry_with_schemas(kinesis) -> str:
    registry = f"reg-{uuid.uuid4().hex[:8]}"
    await kinesis.glue.ensure_registry(registry)
    return registry


async def test_put_schema_verify_round_trips_protobuf_avro_and_json(kinesis, make_stream, local_kinesis):
    endpoint = local_kinesis.endpoint_url
    proto_id = await register_proto(kinesis, PROTO_SCHEMA)
    proto_name = (await kinesis.glue.schema_version(proto_id))["SchemaArn"].split(":schema/", 1)[1]
    registry = await registry_with_schemas(kinesis)
    avro_id = (await kinesis.glue.register_schema(registry, "pay-avro", "AVRO", json.dumps(AVRO_SCHEMA)))[
        "SchemaVersionId"
    ]
    json_id = (await kinesis.glue.register_schema(registry, "pay-json", "JSON", json.dumps(JSON_SCHEMA)))[
        "SchemaVersionId"
    ]
    cases = (
        (proto_name, proto_id, payment, lambda body: body[:1] == PAYMENT_INDEX and Payment.FromString(body[1:])),
        (f"{registry}/pay-avro:1", avro_id, avro_payment, None),
        (f"{registry}/pay-json", json_id, lambda n: {"id": n, "tier": "gold"}, None),
    )
    for name, version_id, document, _ in cases:
        stream = await make_stream(shards=1)
        lines = [{"key": f"k{number % 7}", "data": document(number)} for number in range(60)]

        code, out, err = await put(stream, "--schema", name, "--verify", "--json", lines=lines, endpoint=endpoint)

        assert code == 0, err
        summary = json.loads(out)
        assert summary["acknowledged"] == 60 and summary["verification"]["ok"] is True
        bodies = []
        for data in await stored(kinesis, stream):
            named, body = split_header(data)
            assert named == version_id
            bodies.append(body)
        if name == proto_name:
            assert all(body[:1] == PAYMENT_INDEX for body in bodies)
            decoded = [Payment.FromString(body[1:]) for body in bodies]
            assert sorted(message.id for message in decoded) == list(range(60))
            assert {message.user.address.city for message in decoded} == {"Oslo", "Lima", "Pune", "Kyiv"}
            assert all(list(message.tags) == payment(message.id)["tags"] for message in decoded)
        elif "avro" in name:
            parsed = fastavro.parse_schema(AVRO_SCHEMA)
            values = [fastavro.schemaless_reader(io.BytesIO(body), parsed, None) for body in bodies]
            assert sorted(values, key=lambda value: value["id"]) == [avro_payment(n) for n in range(60)]
        else:
            assert sorted(json.loads(body)["id"] for body in bodies) == list(range(60))


async def test_a_line_that_does_not_fit_names_its_line_and_field_and_nothing_is_sent(
    kinesis, make_stream, local_kinesis
):
    endpoint = local_kinesis.endpoint_url
    proto_id = await register_proto(kinesis, PROTO_SCHEMA)
    proto_name = (await kinesis.glue.schema_version(proto_id))["SchemaArn"].split(":schema/", 1)[1]
    registry = await registry_with_schemas(kinesis)
    await kinesis.glue.register_schema(registry, "pay-avro", "AVRO", json.dumps(AVRO_SCHEMA))
    stream = await make_stream(shards=1)
    wrong_proto = payment(3)
    wrong_proto["user"] = {"emial": "x@example.com"}
    wrong_avro = avro_payment(2)
    wrong_avro["user"]["email"] = 5

    proto = await put(
        stream,
        "--schema",
        proto_name,
        lines=[{"key": "a", "data": payment(1)}, {"key": "a", "data": wrong_proto}],
        endpoint=endpoint,
    )
    avro = await put(
        stream,
        "--schema",
        f"{registry}/pay-avro",
        lines=[{"key": "a", "data": avro_payment(1)}, {"key": "b", "data": wrong_avro}],
        endpoint=endpoint,
    )
    missing = await put(stream, "--schema", f"{registry}/absent", lines=[{"key": "a", "data": {}}], endpoint=endpoint)
    malformed = await put(stream, "--schema", "no-slash", lines=[{"key": "a", "data": {}}], endpoint=endpoint)

    for code, _, err in (proto, avro, missing, malformed):
        assert code == 2, err
        assert "Traceback" not in err
    assert "line 2:" in proto[2] and 'no field named "emial"' in proto[2] and "line 1:" not in proto[2]
    assert "line 2:" in avro[2] and "field Payment.user.User.email: expected string; got 5" in avro[2]
    assert "absent" in missing[2] and "not read" in missing[2]
    assert "--schema takes REGISTRY/NAME" in malformed[2]
    assert await stored(kinesis, stream) == []


TEST_RECORD_PROTO = """syntax = "proto3";
package loadtest;

message Probe {
  string run = 1;
  string key = 2;
  int64 seq = 3;
  double ts = 4;
}
"""
TEST_RECORD_AVRO = {
    "type": "record",
    "name": "Probe",
    "fields": [
        {"name": "run", "type": "string"},
        {"name": "key", "type": "string"},
        {"name": "seq", "type": "long"},
        {"name": "ts", "type": "double"},
    ],
}


async def produce(*argv: str, endpoint: str) -> tuple[int, str, str]:
    return await kconsole("produce", *argv, "--yes", endpoint=endpoint, timeout=180)


async def test_produce_schema_verify_round_trips_the_test_records(kinesis, make_stream, local_kinesis):
    endpoint = local_kinesis.endpoint_url
    registry = await registry_with_schemas(kinesis)
    proto_id = (await kinesis.glue.register_schema(registry, "probe-proto", "PROTOBUF", TEST_RECORD_PROTO))[
        "SchemaVersionId"
    ]
    avro_id = (await kinesis.glue.register_schema(registry, "probe-avro", "AVRO", json.dumps(TEST_RECORD_AVRO)))[
        "SchemaVersionId"
    ]
    file = descriptor_pb2.FileDescriptorProto(name="probe.proto", package="loadtest", syntax="proto3")
    probe = file.message_type.add(name="Probe")
    for number, (name, kind) in enumerate(
        (("run", "TYPE_STRING"), ("key", "TYPE_STRING"), ("seq", "TYPE_INT64"), ("ts", "TYPE_DOUBLE")), 1
    ):
        probe.field.add(name=name, number=number, type=getattr(descriptor_pb2.FieldDescriptorProto, kind), label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    Probe = message_factory.GetMessageClass(pool.FindMessageTypeByName("loadtest.Probe"))
    for schema, version_id in ((f"{registry}/probe-proto", proto_id), (f"{registry}/probe-avro:1", avro_id)):
        stream = await make_stream(shards=1)

        code, out, err = await produce(
            stream,
            "--keys",
            "20",
            "--records-per-key",
            "10",
            "--schema",
            schema,
            "--verify",
            "--json",
            endpoint=endpoint,
        )

        assert code == 0, err
        summary = json.loads(out)
        assert summary["verified"] is True and summary["read_back"] == 200 and summary["lost"] == 0
        assert summary["out_of_order"] == 0
        seen = []
        for data in await stored(kinesis, stream):
            named, body = split_header(data)
            assert named == version_id
            if "proto" in schema:
                assert body[:1] == b"\x00"  # the file's only message
                message = Probe.FromString(body[1:])
                seen.append((message.run, message.key, message.seq))
            else:
                value = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(TEST_RECORD_AVRO), None)
                seen.append((value["run"], value["key"], value["seq"]))
        assert len({run for run, _, _ in seen}) == 1
        per_key: dict[str, list[int]] = {}
        for _, key, seq in seen:
            per_key.setdefault(key, []).append(seq)
        assert len(per_key) == 20 and all(seqs == list(range(10)) for seqs in per_key.values())


async def test_produce_refuses_a_schema_that_cannot_carry_the_test_records(kinesis, make_stream, local_kinesis):
    endpoint = local_kinesis.endpoint_url
    proto_id = await register_proto(kinesis, PROTO_SCHEMA)  # Payment: no run, key, seq or ts
    proto_name = (await kinesis.glue.schema_version(proto_id))["SchemaArn"].split(":schema/", 1)[1]
    stream = await make_stream(shards=1)

    code, _out, err = await produce(
        stream, "--keys", "2", "--records-per-key", "2", "--schema", proto_name, "--verify", endpoint=endpoint
    )

    assert code == 2, err
    assert "cannot carry kconsole's test records" in err or "does not keep the test records'" in err
    assert "Traceback" not in err
    assert await stored(kinesis, stream) == []
