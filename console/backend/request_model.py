"""A Kinesis request checked against botocore's own model before it is sent: required and unknown
members and types (botocore's ParamValidator), then what botocore leaves to the service — maximum
lengths and values, patterns and enums. A request that does not match is one line, exit 2."""

from __future__ import annotations

import re
from typing import Any

from console.errors import BadInput
from console.words import counted

MAX_PROBLEMS_SHOWN = 3


def validate_request(operation: str, params: dict[str, Any], *, where: str = "the request") -> None:
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("kinesis")
    shape = model.operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    problems = (
        [line.strip() for line in report.generate_report().splitlines() if line.strip()] if report.has_errors() else []
    )
    if not problems:
        _constraints(shape, params, operation, problems)
    if problems:
        shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = f" (+{len(problems) - MAX_PROBLEMS_SHOWN} more)" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise BadInput(
            f"{where} does not match {operation} in the Kinesis API model: {shown}{more}; nothing was called",
            code="bad_request",
        )


def _constraints(shape: Any, value: Any, path: str, problems: list[str]) -> None:
    kind, meta = shape.type_name, shape.metadata
    if kind == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if name in value:
                _constraints(member, value[name], f"{path}.{name}", problems)
    elif kind == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{path} holds {counted(len(value), 'item')}, at most {meta['max']}")
        for index, item in enumerate(value):
            _constraints(shape.member, item, f"{path}[{index}]", problems)
    elif kind == "map" and isinstance(value, dict):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{path} holds {counted(len(value), 'entry', 'entries')}, at most {meta['max']}")
        for key, item in value.items():
            _constraints(shape.key, key, f"{path} key", problems)
            _constraints(shape.value, item, f"{path}[{key!r}]", problems)
    elif kind == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{path} is {len(value)} characters, at most {meta['max']}")
        if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
            problems.append(f"{path} {_shown(value)} does not match {meta['pattern']}")
        if shape.enum and value not in shape.enum:
            problems.append(f"{path} {_shown(value)} is not one of {', '.join(shape.enum)}")
    elif kind in ("integer", "long") and isinstance(value, int) and "max" in meta and value > meta["max"]:
        problems.append(f"{path} is {value}, at most {meta['max']}")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:60] + "...")
