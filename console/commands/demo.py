"""`kconsole demo lease-table STREAM`: example data for the README and for trying the console.

It writes a KCL application's lease table for STREAM (console.consumers.sample_leases) into the
DynamoDB of the embedded server or a loopback endpoint, so `consumers --lease-table` and the console's
Consumers tab have a real table to read. Demo data never goes to a remote endpoint.
"""

from __future__ import annotations

from typing import Any

from console.commands import command_help
from console.commands._confirm import refuse_if_read_only
from console.commands._output import emit, run_async
from console.commands._stream_args import ensure_local_stream, validate_stream_name
from console.errors import BadInput

TABLE_NAME_LIMIT = 255  # DynamoDB's table name length
TABLE_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def register(subparsers, common) -> None:
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


def _no_action(args: Any) -> int:
    raise BadInput("kconsole demo: choose an action: lease-table", code="usage")


def validate_table_name(name: str) -> str:
    if not 3 <= len(name) <= TABLE_NAME_LIMIT or not set(name) <= TABLE_NAME_CHARACTERS:
        raise BadInput(
            f"--table must be 3 to {TABLE_NAME_LIMIT} characters of a-z, A-Z, 0-9, '_', '-' and '.'; got {name[:80]!r}",
            code="usage",
        )
    return name


def lease_table_command(args: Any) -> int:
    from console.backend import BackendConfig
    from console.backend.config import is_local_endpoint

    stream = validate_stream_name(args.stream)
    table = validate_table_name(args.table or f"{stream}-app")
    config = BackendConfig.from_args(args)
    if not (config.kind == "local" or (config.kind == "endpoint" and is_local_endpoint(config.endpoint_url))):
        raise BadInput(
            "kconsole demo writes example data only to the embedded server (--local) or a loopback "
            "--endpoint-url such as kconsole local serve's",
            code="usage",
        )
    refuse_if_read_only(args, f"write the demo lease table {table}")
    leases = run_async(_write_lease_table(args, config, stream, table))
    emit(
        args,
        {"stream": stream, "lease_table": table, "leases": leases},
        lambda: (
            f"wrote lease table {table} for {stream}: {leases} leases "
            f"(kconsole consumers {stream} --lease-table {table})"
        ),
    )
    return 0


async def _write_lease_table(args: Any, config: Any, stream: str, table: str) -> int:
    from console.backend import open_backend
    from console.consumers.sample_leases import lease_items

    async with open_backend(config) as kinesis:
        if config.kind == "local":
            await ensure_local_stream(kinesis, stream, args)
        shards = await kinesis.all_shards(stream)
        if table in await kinesis.table_names():
            raise BadInput(
                f"DynamoDB table {table!r} already exists on {kinesis.label}; name another with --table",
                code="table_exists",
            )
        items = lease_items(shards)
        await kinesis.create_lease_table(table)
        await kinesis.put_table_items(table, items)
        return len(items)
