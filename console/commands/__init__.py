"""One module per CLI command group; each exposes `register(subparsers, common)`.

COMMANDS names every top-level command, the module that registers it and its one-line help, so the
CLI can list them all in `kconsole --help` and import only the module of the command being run.
Order here is the order in `kconsole --help`; a module's commands sit together, in its own order.
"""

import argparse
from typing import TypeAlias

# What `register` is handed: the subparsers to add its command to, and the parents that bring the
# options every command takes (--json, --local, --endpoint-url...).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Parents: TypeAlias = list[argparse.ArgumentParser]

COMMANDS: dict[str, tuple[str, str]] = {
    "predict": ("console.commands.keyspace", "which shard each partition key (or explicit hash key) lands on"),
    "keytree": (
        "console.commands.keyspace",
        "balanced explicit hash keys: the next keys that keep every split of the key space even",
    ),
    "spread": (
        "console.commands.keyspace",
        "write-shard a hot partition key: where PK:0 .. PK:n-1 land and how sort keys spread",
    ),
    "streams": ("console.commands.streams", "list streams: status, mode, open shards, retention, encryption"),
    "shards": ("console.commands.streams", "list a stream's shards with hash ranges and lineage"),
    "stream": ("console.commands.stream", "create, describe, change or delete a stream"),
    "account": (
        "console.commands.account",
        "the account's Kinesis settings: On-demand Advantage (minimum throughput commitment)",
    ),
    "channels": (
        "console.commands.channels",
        "channels that deliver a stream to S3 or S3 Tables: list, describe, create from a JSON request, delete",
    ),
    "put": ("console.commands.put", "send JSON lines (file or stdin) as records, in order per key"),
    "plan": ("console.commands.reshard", "what-if: show what a reshard would do (changes nothing)"),
    "reshard": ("console.commands.reshard", "split, merge or rescale a stream (asks first)"),
    "produce": (
        "console.commands.produce",
        "write ordered test records to a stream and optionally read them back to verify order",
    ),
    "heat": ("console.commands.heat", "live heat per shard: rates, peak, utilisation, top keys"),
    "tail": ("console.commands.tail", "print the records in a stream, decoded (JSON, gzip, KPL aggregates)"),
    "copy": ("console.commands.copy", "copy a window of records from one stream to another, in order per key"),
    "consumers": ("console.commands.consumers", "EFO consumers and KCL leases: owner, lag and state per shard"),
    "readers": (
        "console.commands.readers",
        "every reader of a stream, worst first: Lambda, Firehose, Pipes, Flink, EFO, KCL",
    ),
    "recommend": ("console.commands.consumers", "shard count and plan that keep peak utilisation under a target"),
    "local": ("console.commands.local", "the embedded local Kinesis (moto, patched)"),
    "demo": (
        "console.commands.demo",
        "example data on the embedded server: a KCL lease table, one reader of each kind, or schema-encoded records",
    ),
    "completion": ("console.commands.completion", "print a shell completion script (bash, zsh or fish)"),
    "mcp": (
        "console.mcp_server.command",
        "serve the commands as Model Context Protocol tools for an AI assistant (stdio, or --http PORT)",
    ),
    "web": ("console.commands.web", "serve the live console to a browser tab on 127.0.0.1 (textual-serve)"),
}


def command_help(name: str) -> str:
    return COMMANDS[name][1]
