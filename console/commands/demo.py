"""`kconsole demo lease-table STREAM` and `kconsole demo readers STREAM`: example data for the README
and for trying the console.

lease-table writes a KCL application's lease table for STREAM (console.consumers.sample_leases) into
the DynamoDB of the embedded server or a loopback endpoint, so `consumers --lease-table` and the
console's Consumers tab have a real table to read. readers makes one reader of each kind on STREAM
(console.backend.demo_readers) and a lease table, with the CloudWatch metrics of their lag. Demo data
never goes to a remote endpoint.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import backend_config, with_backend
from console.commands._confirm import refuse_if_read_only
from console.commands._options import options_from
from console.commands._output import emit, run_async
from console.commands._stream_args import validate_stream_name
from console.errors import BackendError, BadInput
from console.words import counted

if TYPE_CHECKING:
    from console.backend import BackendConfig
    from console.backend.protocol import DemoTables

TABLE_NAME_LIMIT = 255  # DynamoDB's table name length
TABLE_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def register(subparsers: Subparsers, common: Parents) -> None:
    demo = subparsers.add_parser(
        "demo",
        parents=common,
        help=command_help("demo"),
        description="Example data on the embedded local Kinesis (--local) or a loopback --endpoint-url "
        "(kconsole local serve): never on AWS.",
    )
    actions = demo.add_subparsers(dest="demo_action", metavar="ACTION", parser_class=type(demo))
    demo.set_defaults(handler=_no_action)
    lease_table = actions.add_parser(
        "lease-table",
        parents=common,
        help="a KCL application's lease table for STREAM (one lease per shard, two workers)",
        description="Write a KCL 2.x lease table for STREAM into DynamoDB: one lease per shard, owned by "
        "worker-a and worker-b in turn, closed shards checkpointed at SHARD_END and open ones at "
        "TRIM_HORIZON. The table is named STREAM-app unless --table says otherwise; an existing "
        "table is refused.",
    )
    lease_table.add_argument("stream", metavar="STREAM", help="stream whose shards get leases")
    lease_table.add_argument("--table", help="table name (default STREAM-app)")
    lease_table.set_defaults(handler=lease_table_command)
    readers = actions.add_parser(
        "readers",
        parents=common,
        help="one reader of each kind on STREAM, with the CloudWatch metrics of how far behind each is",
        description="Make one reader of each kind on STREAM: an enhanced fan-out consumer (STREAM-fan-out), "
        "a Lambda function (STREAM-reader) with an event source mapping on the stream and another on the "
        "consumer, a Firehose delivery stream (STREAM-to-s3), an EventBridge pipe (STREAM-pipe), a running "
        "Managed Flink application (STREAM-flink) and a KCL application's lease table (STREAM-kcl-app) "
        "checkpointed a third of the way into each shard. It puts a few hundred records on the stream and "
        "the last ten minutes of the metrics AWS publishes on each reader's lag, one reader ten minutes "
        "behind. A stream that already has any of these readers is refused.",
    )
    readers.add_argument("stream", metavar="STREAM", help="stream the readers read")
    readers.set_defaults(handler=readers_command)
    schemas = actions.add_parser(
        "schemas",
        parents=common,
        help="register an Avro, a JSON and a Protobuf schema in Glue's Schema Registry and put records "
        "encoded with them",
        description="Register an Avro schema (kconsole-demo/orders-avro), a JSON schema "
        "(kconsole-demo/orders-json) and a Protobuf schema (kconsole-demo/orders-proto) in the Glue Schema "
        "Registry, and put records on STREAM encoded as the AWS Glue Schema Registry serializer encodes them "
        "(its header naming the schema version, every fourth record zlib-compressed): `kconsole tail STREAM` "
        "shows them decoded. The orders carry "
        "made-up e-mail addresses and card numbers, for trying --mask.",
    )
    schemas.add_argument("stream", metavar="STREAM", help="stream the records go to")
    schemas.add_argument(
        "--count", type=int, default=20, metavar="N", help="records of each schema (default 20, at most 500)"
    )
    schemas.set_defaults(handler=schemas_command)


def _no_action(_args: argparse.Namespace) -> int:
    raise BadInput("kconsole demo: choose an action: lease-table, readers, schemas", code="usage")


def validate_table_name(name: str) -> str:
    if not 3 <= len(name) <= TABLE_NAME_LIMIT or not set(name) <= TABLE_NAME_CHARACTERS:
        raise BadInput(
            f"--table must be 3 to {TABLE_NAME_LIMIT} characters of a-z, A-Z, 0-9, '_', '-' and '.'; got {name[:80]!r}",
            code="usage",
        )
    return name


@dataclass(frozen=True)
class DemoOptions:
    stream: str
    table: str | None = None  # lease-table: default STREAM-app
    count: int = 20  # schemas: records of each schema


def lease_table_command(args: argparse.Namespace) -> int:
    options = options_from(DemoOptions, args)
    stream = validate_stream_name(options.stream)
    table = validate_table_name(options.table or f"{stream}-app")
    config = _demo_config(args)
    refuse_if_read_only(args, f"write the demo lease table {table}")
    leases = run_async(_write_lease_table(args, config, stream, table))
    emit(
        args,
        {"stream": stream, "lease_table": table, "leases": leases},
        lambda: (
            f"wrote lease table {table} for {stream}: {counted(leases, 'lease')} "
            f"(kconsole consumers {stream} --lease-table {table})"
        ),
    )
    return 0


def _demo_config(args: Any) -> BackendConfig:
    """The backend configuration, refused unless it is the embedded server or a loopback endpoint."""
    from console.backend.config import is_local_endpoint

    config = backend_config(args)
    if not (config.kind == "local" or (config.kind == "endpoint" and is_local_endpoint(config.endpoint_url))):
        raise BadInput(
            "kconsole demo writes example data only to the embedded server (--local) or a loopback "
            "--endpoint-url such as kconsole local serve's",
            code="usage",
        )
    return config


async def _write_lease_table(args: Any, config: BackendConfig, stream: str, table: str) -> int:
    async with with_backend(args, stream=stream, config=config) as kinesis:
        await _refuse_existing_table(kinesis, table, "name another with --table")
        return await _lease_table(kinesis, stream, table)


async def _refuse_existing_table(kinesis: DemoTables, table: str, advice: str) -> None:
    if table in await kinesis.table_names():
        raise BadInput(f"DynamoDB table {table!r} already exists on {kinesis.label}; {advice}", code="table_exists")


async def _lease_table(kinesis: DemoTables, stream: str, table: str, checkpoints: dict[str, str] | None = None) -> int:
    from console.consumers.sample_leases import lease_items

    items = lease_items(await kinesis.all_shards(stream), checkpoints)
    await kinesis.create_lease_table(table)
    await kinesis.put_table_items(table, items)
    return len(items)


def readers_command(args: argparse.Namespace) -> int:
    from console.backend.demo_readers import DemoNames

    options = options_from(DemoOptions, args)
    names = DemoNames.for_stream(validate_stream_name(options.stream))
    config = _demo_config(args)
    refuse_if_read_only(args, f"make the demo readers of {names.stream}")
    made, leases = run_async(_make_readers(args, config, names))
    readers = [reader.as_json() for reader in made.readers]
    lease_problem = leases if isinstance(leases, str) else None
    readers.append({"kind": "kcl", "name": names.lease_table, "arn": None, "lag_ms": None, "problem": lease_problem})
    next_command = f"kconsole readers {names.stream}"
    emit(
        args,
        {
            "stream": names.stream,
            "stream_arn": made.stream_arn,
            "readers": readers,
            "leases": 0 if lease_problem else leases,
            "records_put": made.records_put,
            "metric_points": made.metric_points,
            "metrics_problem": made.metrics_problem,
            "next": next_command,
        },
        lambda: _readers_text(made, readers, leases, next_command),
    )
    return 0


READER_KINDS = {
    "efo_consumer": "enhanced fan-out consumer",
    "lambda_mapping": "Lambda mapping (stream)",
    "lambda_mapping_efo": "Lambda mapping (consumer)",
    "firehose": "Firehose delivery stream",
    "pipe": "EventBridge pipe",
    "flink": "Managed Flink application",
    "kcl": "KCL lease table",
}


def _readers_text(made: Any, readers: list[dict[str, Any]], leases: int | str, next_command: str) -> str:
    from console.consumers.report import format_millis

    lines = [
        f"made readers of {made.names.stream} ({counted(made.records_put, 'record')} put, {counted(made.metric_points, 'metric point')}):"
    ]
    kind_width = max(len(text) for text in READER_KINDS.values())
    name_width = max(len(reader["name"]) for reader in readers)
    for reader in readers:
        if reader["problem"]:
            state = f"not made: {reader['problem']}"
        elif reader["kind"] == "kcl":
            state = f"{counted(leases, 'lease') if isinstance(leases, int) else leases}, checkpointed a third of the way into each shard"
        elif reader["lag_ms"] is not None:
            state = f"{format_millis(int(reader['lag_ms']))} behind"
        else:
            state = "no lag metric"
        lines.append(f"  {READER_KINDS[reader['kind']]:<{kind_width}}  {reader['name']:<{name_width}}  {state}")
    if made.metrics_problem:
        lines.append(f"  no metrics put: {made.metrics_problem}")
    lines.append(f"next: {next_command}")
    return "\n".join(lines)


async def _make_readers(args: Any, config: BackendConfig, names: Any) -> tuple[Any, int | str]:
    """The readers made, and the lease table's lease count (or why it could not be written: a
    server without DynamoDB)."""
    from console.backend.demo_readers import ReaderDemo

    async with with_backend(args, stream=names.stream, config=config) as kinesis:
        stream_arn = (await kinesis.describe_stream_summary(names.stream)).arn
        demo = ReaderDemo(kinesis, names)
        existing = await demo.existing(stream_arn)
        try:
            tables: list[str] | str = await kinesis.table_names()
        except BackendError as error:
            tables = error.message
        if isinstance(tables, list) and names.lease_table in tables:
            existing.append(f"lease table {names.lease_table}")
        if existing:
            raise BadInput(
                f"{names.stream} already has demo readers on {kinesis.label}: {', '.join(existing)}; "
                "the demo makes them once a stream (use another stream)",
                code="readers_exist",
            )
        made = await demo.make(stream_arn)
        if isinstance(tables, str):
            return made, tables
        return made, await _lease_table(kinesis, names.stream, names.lease_table, made.checkpoints)


DEMO_REGISTRY = "kconsole-demo"
ORDER_AVRO_SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "kconsole.demo",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "amount_cents", "type": "long"},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [{"name": "name", "type": "string"}, {"name": "email", "type": "string"}],
            },
        },
        {"name": "card", "type": "string"},
    ],
}
ORDER_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount_cents": {"type": "integer"},
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
        },
        "card": {"type": "string"},
    },
    "required": ["order_id"],
}
ORDER_PROTO_SCHEMA = """syntax = "proto3";
package kconsole.demo;

message Order {
  string order_id = 1;
  int64 amount_cents = 2;
  Customer customer = 3;
  string card = 4;

  message Customer {
    string name = 1;
    string email = 2;
  }
}
"""
DEMO_NAMES = ("Ada", "Grace", "Edsger", "Barbara", "Ken")


def demo_order(number: int) -> dict[str, Any]:
    """A made-up order: the card number is a test number's shape, the e-mail an example.com address."""
    name = DEMO_NAMES[number % len(DEMO_NAMES)]
    return {
        "order_id": f"order-{number:04d}",
        "amount_cents": 100 + 37 * number,
        "customer": {"name": name, "email": f"{name.lower()}@example.com"},
        "card": f"4111 1111 1111 {number:04d}",
    }


def schemas_command(args: argparse.Namespace) -> int:
    options = options_from(DemoOptions, args)
    stream = validate_stream_name(options.stream)
    if not 1 <= options.count <= 500:
        raise BadInput(f"--count must be from 1 to 500; got {options.count}", code="usage")
    config = _demo_config(args)
    refuse_if_read_only(args, f"register the demo schemas and put records on {stream}")
    made = run_async(_put_schema_records(args, config, stream, options.count))
    emit(
        args,
        made,
        lambda: "\n".join(
            [f"registered {schema['name']} v{schema['version']} ({schema['format']})" for schema in made["schemas"]]
            + [f"put {counted(made['records_put'], 'record')} on {stream}", f"next: kconsole tail {stream}"]
        ),
    )
    return 0


async def _put_schema_records(args: Any, config: BackendConfig, stream: str, count: int) -> dict[str, Any]:
    import io
    import json
    import zlib

    import fastavro

    from console.read.protobuf_schemas import build
    from console.read.schemas import encode_header

    definitions = (
        ("orders-avro", "AVRO", json.dumps(ORDER_AVRO_SCHEMA)),
        ("orders-json", "JSON", json.dumps(ORDER_JSON_SCHEMA)),
        ("orders-proto", "PROTOBUF", ORDER_PROTO_SCHEMA),
    )
    avro, proto = fastavro.parse_schema(ORDER_AVRO_SCHEMA), build(ORDER_PROTO_SCHEMA)

    def body(data_format: str, order: dict[str, Any]) -> bytes:
        if data_format == "AVRO":
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, avro, order)
            return buffer.getvalue()
        if data_format == "PROTOBUF":
            return proto.encode(order)  # the message index, then the message
        return json.dumps(order).encode()

    async with with_backend(args, stream=stream, config=config) as kinesis:
        await kinesis.glue.ensure_registry(DEMO_REGISTRY)
        versions = [
            await kinesis.glue.register_schema(DEMO_REGISTRY, name, data_format, definition)
            for name, data_format, definition in definitions
        ]
        records = []
        for number in range(count * len(definitions)):
            order = demo_order(number)
            (_, data_format, _), version = definitions[number % 3], versions[number % 3]
            encoded, compressed = body(data_format, order), number % 4 == 3
            payload = encode_header(version["SchemaVersionId"], compressed=compressed) + (
                zlib.compress(encoded) if compressed else encoded
            )
            records.append({"Data": payload, "PartitionKey": order["order_id"]})
        for start in range(0, len(records), 500):
            await kinesis.put_records(stream, records[start : start + 500])
    return {
        "stream": stream,
        "schemas": [
            {
                "name": f"{DEMO_REGISTRY}/{name}",
                "format": data_format,
                "version": version.get("VersionNumber"),
                "version_id": version["SchemaVersionId"],
            }
            for (name, data_format, _), version in zip(definitions, versions, strict=True)
        ],
        "records_put": len(records),
    }
