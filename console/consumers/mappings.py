"""Pausing, resuming and replaying a Lambda event source mapping on a stream — prepared and run here
once; the command line (and a dialog) render `plan.lines()`, collect the confirmation and call `run`:

    plan = await prepare_toggle(backend, "orders", uuid, enable=False)      # stop the bleeding
    plan = await prepare_replay(backend, "orders", uuid, "AT_TIMESTAMP", moment)
    plan.aws_commands()                                                     # the same, as `aws lambda` lines
    await run(backend, plan, action_log=ActionLog.default())

A replay creates a new mapping with the old one's settings starting at the point (Lambda cannot move
an existing mapping's position), then disables the old one. Each call goes through the action log,
intent first; a lost reply is settled by reading the mappings back (an UpdateEventSourceMapping the
read-back shows not applied is sent once more: it says the same thing twice; a create is never resent
blindly). No I/O of its own: it calls the backend given.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.backend.protocol import MappingWrites
from console.errors import BadInput

# The settings a replay copies from the old mapping (CreateEventSourceMapping's own members).
COPIED = (
    "BatchSize",
    "MaximumBatchingWindowInSeconds",
    "ParallelizationFactor",
    "DestinationConfig",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
    "MaximumRetryAttempts",
    "TumblingWindowInSeconds",
    "FunctionResponseTypes",
    "FilterCriteria",
    "MetricsConfig",
)
ON = ("Enabled", "Enabling", "Creating")
OFF = ("Disabled", "Disabling")


@dataclass(frozen=True)
class MappingCall:
    operation: str  # UpdateEventSourceMapping | CreateEventSourceMapping
    parameters: dict[str, Any]

    def describe(self) -> str:
        if self.operation == "UpdateEventSourceMapping":
            verb = "enable" if self.parameters["Enabled"] else "disable"
            return f"{verb} mapping {self.parameters['UUID']}"
        start = self.parameters["StartingPosition"]
        when = self.parameters.get("StartingPositionTimestamp")
        at = f" {_iso(when)}" if isinstance(when, datetime) else ""
        function = str(self.parameters["FunctionName"]).rpartition(":function:")[2] or self.parameters["FunctionName"]
        return f"create a mapping of {function} from {start}{at}"

    def aws_command(self) -> str:
        if self.operation == "UpdateEventSourceMapping":
            flag = "--enabled" if self.parameters["Enabled"] else "--no-enabled"
            return f"aws lambda update-event-source-mapping --uuid {shlex.quote(self.parameters['UUID'])} {flag}"
        request = {k: (_iso(v) if isinstance(v, datetime) else v) for k, v in self.parameters.items() if v is not None}
        return "aws lambda create-event-source-mapping --cli-input-json " + shlex.quote(json.dumps(request))


@dataclass(frozen=True)
class MappingPlan:
    action: str  # disable | enable | replay
    stream: str
    uuid: str
    function: str
    state: str
    calls: tuple[MappingCall, ...]
    consequences: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if not self.calls:
            return f"mapping {self.uuid} is already {self.state}"
        return "; then ".join(call.describe() for call in self.calls)

    def lines(self) -> list[str]:
        lines = [f"{self.action} Lambda mapping {self.uuid} ({self.function}) on {self.stream}: now {self.state}"]
        lines += [f"  {index}. {call.describe()}" for index, call in enumerate(self.calls, 1)]
        lines += [f"  {text}" for text in self.consequences]
        if not self.calls:
            lines.append("nothing to change")
        return lines

    def aws_commands(self) -> list[str]:
        return [call.aws_command() for call in self.calls]

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "stream": self.stream,
            "mapping": self.uuid,
            "function": self.function,
            "state": self.state,
            "calls": [
                {"operation": c.operation, "description": c.describe(), "aws": c.aws_command()} for c in self.calls
            ],
            "consequences": list(self.consequences),
        }


async def _mapping_of_stream(backend: MappingWrites, stream: str, uuid: str) -> dict[str, Any]:
    """The mapping, which must read this stream (directly or through one of its EFO consumers)."""
    summary = await backend.describe_stream_summary(stream)
    mapping = await backend.event_source_mapping(uuid)
    source = str(mapping.get("EventSourceArn") or "")
    if not summary.arn or not (source == summary.arn or source.startswith(summary.arn + "/consumer/")):
        raise BadInput(f"mapping {uuid} reads {source or 'another source'}, not {stream}", code="not_found")
    return mapping


async def prepare_toggle(backend: MappingWrites, stream: str, uuid: str, *, enable: bool) -> MappingPlan:
    mapping = await _mapping_of_stream(backend, stream, uuid)
    state = str(mapping.get("State") or "?")
    already = state in (ON if enable else OFF)
    calls = () if already else (MappingCall("UpdateEventSourceMapping", {"UUID": uuid, "Enabled": enable}),)
    consequence = (
        ("the function reads on from where the mapping stopped",)
        if enable
        else ("records wait in the stream (within its retention) until the mapping is enabled again",)
    )
    return MappingPlan("enable" if enable else "disable", stream, uuid, _function(mapping), state, calls, consequence)


async def prepare_replay(
    backend: MappingWrites, stream: str, uuid: str, starting_position: str, moment: datetime | None
) -> MappingPlan:
    """A new mapping of the same function with the old one's settings, from TRIM_HORIZON, LATEST or
    AT_TIMESTAMP `moment`; then the old one disabled."""
    mapping = await _mapping_of_stream(backend, stream, uuid)
    request: dict[str, Any] = {
        "EventSourceArn": mapping["EventSourceArn"],
        "FunctionName": mapping.get("FunctionArn") or _function(mapping),
        "Enabled": True,
        "StartingPosition": starting_position,
        **{name: mapping[name] for name in COPIED if mapping.get(name) is not None},
    }
    if moment is not None:
        request["StartingPositionTimestamp"] = moment
    calls = (
        MappingCall("CreateEventSourceMapping", request),
        MappingCall("UpdateEventSourceMapping", {"UUID": uuid, "Enabled": False}),
    )
    return MappingPlan(
        "replay",
        stream,
        uuid,
        _function(mapping),
        str(mapping.get("State") or "?"),
        calls,
        (
            "the function reads the records from the point again: it must tolerate duplicates",
            "both mappings run until the old one is disabled (seconds): a batch may be handled twice",
        ),
    )


def _function(mapping: dict[str, Any]) -> str:
    return str(mapping.get("FunctionArn") or "?").rpartition(":function:")[2] or "?"


@dataclass(frozen=True)
class Made:
    call: MappingCall
    change: Any
    answer: dict[str, Any] | None


async def run(
    backend: MappingWrites,
    plan: MappingPlan,
    *,
    action_log: Any,
    who: str | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> list[Made]:
    made: list[Made] = []
    for call in plan.calls:
        before = (
            {m.get("UUID") for m in await backend.event_source_mappings(call.parameters["EventSourceArn"])}
            if call.operation == "CreateEventSourceMapping"
            else set()
        )
        answered: list[dict[str, Any]] = []

        async def make(call: MappingCall = call, answered: list[dict[str, Any]] = answered) -> None:
            if call.operation == "UpdateEventSourceMapping":
                answered.append(
                    await backend.set_event_source_mapping_enabled(call.parameters["UUID"], call.parameters["Enabled"])
                )
            else:
                answered.append(await backend.create_event_source_mapping(call.parameters))

        async def settle(call: MappingCall = call, before: set[str | None] = before) -> tuple[bool | None, str]:
            if call.operation == "UpdateEventSourceMapping":
                state = (await backend.event_source_mapping(call.parameters["UUID"])).get("State")
                wanted = ON if call.parameters["Enabled"] else OFF
                return state in wanted, f"the mapping is {state}"
            now = await backend.event_source_mappings(call.parameters["EventSourceArn"])
            new = [m for m in now if m.get("UUID") not in before]
            return bool(new), (f"mapping {new[0].get('UUID')} exists" if new else "no new mapping")

        async def again(make: Callable[[], Awaitable[None]] = make) -> Callable[[], Awaitable[None]]:
            return make

        progress(f"calling {call.describe()}")
        change = await action_log.call(
            call.operation,
            {"action": f"readers {plan.action}", "mapping": plan.uuid, "call": call.describe()},
            make,
            stream=plan.stream,
            backend=backend.label,
            who=who,
            settle=settle,
            check=f"kconsole readers {plan.stream}",
            again=again if call.operation == "UpdateEventSourceMapping" else None,
        )
        if change.reply_lost:
            progress(f"{call.operation}: the reply was lost; the mappings show the change")
        made.append(Made(call, change, answered[-1] if answered else None))
    return made


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
