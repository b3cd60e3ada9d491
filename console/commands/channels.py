"""`kconsole channels`: channels that deliver a stream's records to S3 or S3 Tables.

    kconsole channels                            # every channel: name, status, destination, stream
    kconsole channels orders                     # the channels reading from stream orders, described
    kconsole channels describe to-s3
    kconsole channels create --config channel.json    # CreateChannel's request as JSON, checked first
    kconsole channels update to-s3 --config change.json   # UpdateChannel's members: destination, logging
    kconsole channels delete to-s3

`create` and `update` check the request against CreateChannel / UpdateChannel in botocore's Kinesis
model (members, types, lengths, patterns, enums) before any call; `create`, `update` and `delete` show
their plan, ask for the
channel's name on a TTY (--yes without one), are refused under --read-only and go to the action log.
A stream with active channels cannot be deleted (`kconsole stream delete` says so before calling).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_typing, refuse_if_read_only
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.errors import BadInput, PlanRejected
from console.lifecycle import actions
from console.lifecycle.channels import channel_json, read_channel_config, read_channel_update
from console.lifecycle.plans import LifecyclePlan

if TYPE_CHECKING:
    from console.backend.protocol import StreamChangesBackend

ACTIONS = ("describe", "create", "update", "delete")


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "channels",
        parents=common,
        help=command_help("channels"),
        description="Without arguments, list every channel; with a STREAM, describe the channels reading from "
        "it. `describe NAME`, `create --config FILE` (CreateChannel's request as JSON, checked "
        "against the Kinesis API model first), `update NAME --config FILE` (UpdateChannel's members but "
        "the ARN: destination settings, logging) and `delete NAME` act on one channel; create, update and "
        "delete ask first (--yes without a TTY) and are refused under --read-only.",
    )
    parser.add_argument(
        "words",
        nargs="*",
        metavar="STREAM | describe NAME | create | update NAME | delete NAME",
        help="what to do (a stream named like an action: --stream-name)",
    )
    parser.add_argument("--stream-name", metavar="STREAM", default=None, help="list the channels of this stream")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="with create: the CreateChannel request as JSON; with update: UpdateChannel's, without the ARN",
    )
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
    parser.set_defaults(handler=run_channels)


@dataclass(frozen=True)
class ChannelsOptions:
    words: list[str] = field(default_factory=list)  # STREAM, or an action and its channel NAME
    stream_name: str | None = None
    config: str | None = None  # create's request file


def run_channels(args: argparse.Namespace) -> int:
    options = options_from(ChannelsOptions, args)
    words = list(options.words)
    action = words[0] if words and words[0] in ACTIONS else None
    if action is None:
        if len(words) > 1 or (words and options.stream_name):
            raise BadInput(
                "kconsole channels: give one STREAM, or describe NAME, create --config FILE, "
                "update NAME --config FILE, delete NAME",
                code="usage",
            )
        stream = options.stream_name or (words[0] if words else None)
        if stream is not None:
            from console.bounds import validate_stream_name

            validate_stream_name(stream)
        return run_async(_list(args, stream))
    if action == "create":
        if len(words) != 1 or not options.config:
            raise BadInput(
                "kconsole channels create takes --config FILE (the CreateChannel request as JSON)", code="usage"
            )
        request = read_channel_config(options.config)
        refuse_if_read_only(args, f"create channel {request['ChannelName']}")
        return run_async(_create(args, request))
    if len(words) != 2:
        raise BadInput(f"kconsole channels {action} takes one channel NAME", code="usage")
    name = check_channel_name(words[1])
    if action == "update":
        if not options.config:
            raise BadInput(
                "kconsole channels update NAME takes --config FILE (UpdateChannel's request as JSON)", code="usage"
            )
        request = read_channel_update(options.config)
        refuse_if_read_only(args, f"update channel {name}")
        return run_async(_update(args, name, request))
    if action == "delete":
        refuse_if_read_only(args, f"delete channel {name}")
        return run_async(_delete(args, name))
    return run_async(_describe(args, name))


def check_channel_name(name: str) -> str:
    from console.backend.request_model import validate_request

    validate_request(
        "CreateChannel",
        {
            "ChannelName": name,
            "ServiceExecutionRoleARN": "arn:aws:iam::000000000000:role/r",
            "StreamConfigurationList": [
                {
                    "StreamARN": "arn:aws:kinesis:us-east-1:000000000000:stream/s",
                    "RecordConfiguration": {"RecordFormatType": "JSON"},
                }
            ],
        },
        where=f"channel name {name[:60]!r}",
    )
    return name


# ---- reading -------------------------------------------------------------------------------------


async def _list(args: Any, stream: str | None) -> int:
    async with with_backend(args) as kinesis:
        arn = (await kinesis.describe_stream_summary(stream)).arn if stream else None
        summaries = await kinesis.list_channels(stream_arn=arn)
        described = [await kinesis.describe_channel(c["ChannelARN"]) for c in summaries] if stream else []
        label = kinesis.label
    rows = [channel_json(c) for c in (described or summaries)]
    document = {"backend": label, "stream": stream, "channels": rows}
    emit(args, document, lambda: render_channels(rows, label, stream))
    return 0


async def _describe(args: Any, name: str) -> int:
    async with with_backend(args) as kinesis:
        description = await kinesis.describe_channel(await actions.channel_arn(kinesis, name))
    document = channel_json(description)
    emit(args, document, lambda: render_table(("FIELD", "VALUE"), [(k, _text(v)) for k, v in document.items()]))
    return 0


def _text(value: Any) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def render_channels(rows: list[dict[str, Any]], label: str, stream: str | None) -> str:
    if not rows:
        return f"no channels {'reading from ' + stream + ' ' if stream else ''}on {label}"
    table = [
        (r["name"], r["status"], r["destination"] or "-", ", ".join(s.rsplit("/", 1)[-1] for s in r["streams"]))
        for r in rows
    ]
    return render_table(("CHANNEL", "STATUS", "DESTINATION", "STREAMS"), table)


# ---- changing ------------------------------------------------------------------------------------


async def _create(args: Any, request: dict[str, Any]) -> int:
    async with with_backend(args) as kinesis:
        plan = await actions.prepare_channel_create(kinesis, request)
        made = await _change(args, kinesis, plan)
        document: dict[str, Any] = {
            "executed": True,
            "plan": plan.to_json(),
            "channel": channel_json(made[0].answer if made and made[0].answer else {}),
        }
    emit(args, document, lambda: plan.render() + f"\nDone: channel {plan.stream} is {document['channel']['status']}")
    return 0


async def _update(args: Any, name: str, request: dict[str, Any]) -> int:
    async with with_backend(args) as kinesis:
        plan = await actions.prepare_channel_update(kinesis, name, request)
        if plan.is_noop:
            emit(args, {"executed": False, "plan": plan.to_json()}, plan.render())
            return 0
        made = await _change(args, kinesis, plan)
        document: dict[str, Any] = {
            "executed": True,
            "plan": plan.to_json(),
            "channel": channel_json(made[0].answer if made and made[0].answer else {}),
        }
    emit(args, document, lambda: plan.render() + f"\nDone: channel {name} is {document['channel']['status']}")
    return 0


async def _delete(args: Any, name: str) -> int:
    async with with_backend(args) as kinesis:
        plan = await actions.prepare_channel_delete(kinesis, name)
        await _change(args, kinesis, plan)
    emit(args, {"executed": True, "plan": plan.to_json()}, plan.render() + f"\nDone: channel {name} deleted")
    return 0


async def _change(args: argparse.Namespace, kinesis: StreamChangesBackend, plan: LifecyclePlan) -> list[Any]:
    from console.reshard.actionlog import ActionLog

    if plan.refusal:
        raise PlanRejected(f"{plan.action} channel {plan.stream} refused, nothing was called: {plan.refusal}")
    confirm_by_typing(
        args,
        plan.stream,
        what="the channel name",
        change=f"{plan.action} channel {plan.stream}",
        consequence=plan.summary,
        preview=plan.render() + "\n",
    )
    return await actions.run(
        kinesis,
        plan,
        action_log=ActionLog.default(),
        progress=lambda text: None if text.startswith("calling") else note(f"kconsole: {text}"),
    )
