"""--efo and --consumer, as the commands that read a stream take them (tail, copy, heat, put and produce
with --verify): the consumer named, or a temporary one prepared and run by
console.lifecycle.temporary_consumer once the operator confirmed its price, deregistered when the
command ends (Ctrl-C included)."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from console.commands._output import note
from console.errors import BadInput
from console.processes import is_running
from console.read.efo import Subscribe, named_consumer_arn

if TYPE_CHECKING:
    from console.backend.protocol import EfoReadingBackend


def add_efo_arguments(parser: Any, reads: str = "read") -> None:
    """--efo and --consumer (`reads`: what --efo reads, e.g. "with --verify: read the run back")."""
    parser.add_argument(
        "--efo",
        action="store_true",
        help=f"{reads} with enhanced fan-out (SubscribeToShard over HTTP/2): a 2 MiB/s per shard of its own, "
        "not shared with the stream's GetRecords readers; without --consumer a temporary consumer is "
        "registered (priced and confirmed first) and deregistered at the end",
    )
    parser.add_argument(
        "--consumer",
        metavar="NAME",
        help="with --efo: read as this registered consumer (its name or ARN) instead of a temporary one",
    )


def check_efo_args(args: argparse.Namespace, stream: str) -> None:
    """--consumer belongs to --efo; registering a temporary consumer is a change (refused read-only)."""
    efo, consumer = getattr(args, "efo", False), getattr(args, "consumer", None)
    if consumer is not None and not efo:
        raise BadInput("--consumer names the enhanced fan-out consumer of --efo: give --efo too", code="usage")
    if consumer is not None and not consumer:
        raise BadInput("--consumer needs a consumer name or ARN", code="usage")
    if efo and consumer is None:
        from console.commands._confirm import refuse_if_read_only

        refuse_if_read_only(args, f"register a temporary enhanced fan-out consumer on {stream}")


async def efo_subscriptions(
    kinesis: EfoReadingBackend, stream: str, args: Any, stack: contextlib.AsyncExitStack, *, command: str = "tail"
) -> Subscribe:
    """--efo: check the endpoint speaks HTTP/2, then find the consumer named with --consumer, or register
    a temporary one (priced, confirmed, logged write-ahead) that `stack` deregisters on the way out,
    Ctrl-C included. Returns `subscribe(shard, position)` for the reader."""
    from console.commands._confirm import confirm_by_stream_name
    from console.lifecycle import temporary_consumer
    from console.reshard.actionlog import ActionLog

    transport = kinesis.subscriptions()
    await transport.check()  # one line for an endpoint without HTTP/2, before anything is registered
    if args.consumer is not None:
        consumer_arn = await named_consumer_arn(kinesis, stream, args.consumer)
    else:
        consumer = await temporary_consumer.prepare(
            kinesis,
            stream,
            host=socket.gethostname(),
            pid=os.getpid(),
            now=datetime.now(UTC),
            is_running=is_running,
            reading=command,
        )
        if args.yes:
            note(consumer.what_it_costs())  # what it costs is said whether or not it is asked
        confirm_by_stream_name(
            argparse.Namespace(stream=stream, yes=args.yes),  # the stream read, whatever the command calls it
            change=f"register a temporary consumer on {stream}",
            consequence=consumer.consequence(),
            preview=consumer.preview(),
        )

        def registered() -> None:
            stack.push_async_callback(_release, kinesis, stream, consumer.name, command)
            note(
                f"{command}: registered the temporary consumer {consumer.name}; it is deregistered when {command} ends"
            )

        consumer_arn = await temporary_consumer.run(
            kinesis,
            consumer,
            action_log=ActionLog.default(),
            progress=_change_progress,
            removed=lambda old: note(f"{command}: deregistered the left-over temporary consumer {old}"),
            registered=registered,
        )
    return lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position)


async def _release(kinesis: EfoReadingBackend, stream: str, name: str, command: str) -> None:
    from console.lifecycle import temporary_consumer
    from console.reshard.actionlog import ActionLog

    await temporary_consumer.release(kinesis, stream, name, action_log=ActionLog.default(), progress=_change_progress)
    note(f"{command}: deregistered the temporary consumer {name}")


def _change_progress(text: str) -> None:
    if not text.startswith("calling"):
        note(f"kconsole: {text}")
