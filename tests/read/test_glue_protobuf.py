"""Glue Schema Registry Protobuf records: written here as the AWS serializer lays them out (the protobuf
runtime directly, with descriptors built by hand from descriptor.proto, and the header and message
index packed by hand), the .proto text registered in the embedded server's Glue, and read back by
`kconsole tail` and `kconsole copy` over HTTP."""

from __future__ import annotations

import asyncio
import csv
import json
import uuid

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.read.decoding import KIND_ERROR, KIND_JSON, decode_record
from console.read.schemas import SchemaCatalog
from tests.read.test_glue_schemas import fresh_glue_registries, kconsole, serializer_bytes  # noqa: F401 - the fixture

PROTO_SCHEMA = """syntax = "proto3";
package shop;

message Payment {
  int32 id = 1;
  User user = 2;
  string card = 3;
  string tier = 4;
  repeated string tags = 5;

  message User {
    string email = 1;
    Address address = 2;
  }
  message Address {
    string city = 1;
  }
}

// Audit sorts before Payment: the serializer's message index of Payment is 1, not 0 (and Payment,
// declared first, is what `put --schema` encodes).
message Audit {
  string note = 1;
}
"""
CITIES = ("Oslo", "Lima", "Pune", "Kyiv")
STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED


def payment_class():
    """The schema above as protoc would describe it, written out field by field."""
    file = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3")
    audit = file.message_type.add(name="Audit")
    audit.field.add(name="note", number=1, type=STRING, label=OPTIONAL)
    payment = file.message_type.add(name="Payment")
    payment.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32, label=OPTIONAL)
    payment.field.add(name="user", number=2, type=MESSAGE, label=OPTIONAL, type_name=".shop.Payment.User")
    payment.field.add(name="card", number=3, type=STRING, label=OPTIONAL)
    payment.field.add(name="tier", number=4, type=STRING, label=OPTIONAL)
    payment.field.add(name="tags", number=5, type=STRING, label=REPEATED)
    user = payment.nested_type.add(name="User")
    user.field.add(name="email", number=1, type=STRING, label=OPTIONAL)
    user.field.add(name="address", number=2, type=MESSAGE, label=OPTIONAL, type_name=".shop.Payment.Address")
    address = payment.nested_type.add(name="Address")
    address.field.add(name="city", number=1, type=STRING, label=OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Payment"))


Payment = payment_class()
PAYMENT_INDEX = b"\x01"  # shop.Audit, shop.Payment, shop.Payment.Address, shop.Payment.User


def payment(number: int) -> dict:
    return {
        "id": number,
        "user": {"email": f"user{number}@example.com", "address": {"city": CITIES[number % len(CITIES)]}},
        "card": f"4000 0000 0000 {number:04d}",
        "tier": "gold" if number % 3 == 0 else "basic",
        "tags": [f"t{number % 5}"] * (number % 3),
    }


def protobuf_body(value: dict) -> bytes:
    message = Payment(
        id=value["id"],
        user=Payment.User(email=value["user"]["email"], address=Payment.Address(city=value["user"]["address"]["city"])),
        card=value["card"],
        tier=value["tier"],
        tags=value["tags"],
    )
    return PAYMENT_INDEX + message.SerializeToString()


async def register_proto(kinesis, definition: str, name: str = "payments-proto") -> str:
    registry = f"reg-{uuid.uuid4().hex[:8]}"
    await kinesis.glue.ensure_registry(registry)
    answer = await kinesis.glue.register_schema(registry, name, "PROTOBUF", definition)
    return answer["SchemaVersionId"]


async def put_all(kinesis, stream: str, records: list[dict]) -> None:
    for start in range(0, len(records), 500):
        await kinesis.put_records(stream, records[start : start + 500])


async def test_1000_protobuf_records_are_decoded_filtered_exported_and_copied(
    kinesis, make_stream, local_kinesis, tmp_path
):
    stream = await make_stream(shards=2)
    version_id = await register_proto(kinesis, PROTO_SCHEMA)
    count = 1000
    await put_all(
        kinesis,
        stream,
        [
            {
                "Data": serializer_bytes(version_id, protobuf_body(payment(number)), compressed=number % 7 == 0),
                "PartitionKey": f"p{number}",
            }
            for number in range(count)
        ],
    )
    endpoint = local_kinesis.endpoint_url

    code, out, err = await kconsole("tail", stream, "--json", endpoint=endpoint, timeout=120)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted((line["content"] for line in lines), key=lambda content: content["id"]) == [
        payment(number) for number in range(count)
    ]
    assert {line["schema"].split("/", 1)[1] for line in lines} == {"payments-proto v1"}
    assert sum(line["encoding"] == ["glue", "zlib"] for line in lines) == len(range(0, count, 7))

    code, out, err = await kconsole(
        "tail",
        stream,
        "--where",
        "data.user.address.city == 'Oslo' && data.tier == 'gold'",
        "--json",
        endpoint=endpoint,
    )
    assert code == 0, err
    wanted = [number for number in range(count) if number % 4 == 0 and number % 3 == 0]
    assert sorted(json.loads(line)["content"]["id"] for line in out.splitlines()) == wanted

    table = tmp_path / "payments.csv"
    code, out, err = await kconsole(
        "tail",
        stream,
        "--output",
        "csv",
        "--fields",
        "key,data.user.address.city,data.tier",
        "--out",
        str(table),
        endpoint=endpoint,
    )
    assert code == 0, err
    _header, *rows = list(csv.reader(table.read_text().splitlines()))
    assert len(rows) == count
    assert sorted(rows) == sorted(
        [f"p{number}", payment(number)["user"]["address"]["city"], payment(number)["tier"]] for number in range(count)
    )

    target = await make_stream(shards=1)
    code, out, err = await kconsole(
        "copy",
        stream,
        target,
        "--from",
        "trim-horizon",
        "--where",
        "data.user.address.city == 'Lima'",
        "--yes",
        endpoint=endpoint,
        timeout=120,
    )
    assert code == 0, err
    code, out, err = await kconsole("tail", target, "--json", endpoint=endpoint)
    assert code == 0, err
    copied = [json.loads(line) for line in out.splitlines()]
    assert sorted(line["content"]["id"] for line in copied) == [n for n in range(count) if n % 4 == 1]
    assert all(line["schema"].endswith("/payments-proto v1") for line in copied)


async def test_bad_protobuf_input_is_shown_raw_with_one_reason_each(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    good = await register_proto(kinesis, PROTO_SCHEMA)
    importing = await register_proto(
        kinesis, 'syntax = "proto3";\nimport "company/common.proto";\nmessage A { string a = 1; }\n', "imports"
    )
    fields = "\n".join(f"  string field_{number} = {number};" for number in range(1, 1400))
    too_large = await register_proto(kinesis, f'syntax = "proto3";\nmessage Wide {{\n{fields}\n}}\n', "wide")
    other = descriptor_pb2.FileDescriptorProto(syntax="proto3")  # another message's bytes: its field 12
    cases = {
        "imports": serializer_bytes(importing, b"\x00\x0a\x01a"),
        "too-large": serializer_bytes(too_large, b"\x00"),
        "no-such-message": serializer_bytes(good, b"\x09" + Payment(id=1).SerializeToString()),
        "other-bytes": serializer_bytes(good, PAYMENT_INDEX + other.SerializeToString()),
        "truncated": serializer_bytes(good, protobuf_body(payment(5))[:-3]),
    }
    for key, data in cases.items():
        await kinesis.put_record(stream, data, key)
    await kinesis.put_record(stream, serializer_bytes(good, protobuf_body(payment(2))), "fine")

    code, out, err = await kconsole("tail", stream, "--json", endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    records = {line["partition_key"]: line for line in map(json.loads, out.splitlines())}
    assert records["fine"]["content"] == payment(2)
    errors = {key: records[key]["error"] for key in cases}
    assert all(records[key]["kind"] == "decode-error" for key in cases)
    assert all(records[key]["content"] == data.hex() for key, data in cases.items())
    assert "imports 'company/common.proto'" in errors["imports"]
    assert "larger than the 32,768 kconsole parses" in errors["too-large"]
    assert "message index 9 names no message type" in errors["no-such-message"]
    assert "shop.Payment has no field numbered 12" in errors["other-bytes"]
    assert "shop.Payment: its bytes do not parse" in errors["truncated"]
    assert all("\n" not in error for error in errors.values())
    code, out, err = await kconsole("tail", stream, endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert "tail: 6 records, 5 decode-errors" in err
    assert sum("payload does not match the Protobuf schema" in line for line in out.splitlines()) == 3


PROTO_ID = str(uuid.uuid4())


def proto_catalog() -> SchemaCatalog:
    answer = {
        "SchemaArn": "arn:aws:glue:r:1:schema/r/p",
        "VersionNumber": 3,
        "DataFormat": "PROTOBUF",
        "SchemaDefinition": PROTO_SCHEMA,
    }

    async def lookup(_version_id: str) -> dict:
        return answer

    catalog = SchemaCatalog(lookup)
    asyncio.run(catalog.prefetch([serializer_bytes(PROTO_ID, b"")]))
    return catalog


PROTO_CATALOG = proto_catalog()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.binary(max_size=3), body=st.binary(max_size=200), compressed=st.booleans())
def test_any_bytes_after_a_protobuf_header_decode_or_say_why(index, body, compressed):
    data = serializer_bytes(PROTO_ID, index + body, compressed=compressed)

    [record] = decode_record(data, shard_id="s", sequence_number="1", partition_key="k", schemas=PROTO_CATALOG)

    assert record.kind in (KIND_JSON, KIND_ERROR)
    if record.kind == KIND_ERROR:
        assert record.error and "\n" not in record.error and record.value == data
    json.loads(record.json_line())


def test_a_protobuf_record_decodes_to_what_the_runtime_wrote():
    data = serializer_bytes(PROTO_ID, protobuf_body(payment(6)))

    [record] = decode_record(data, shard_id="s", sequence_number="1", partition_key="k", schemas=PROTO_CATALOG)

    assert record.value == payment(6) and record.schema == "r/p v3"
