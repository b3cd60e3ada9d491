"""A request to the embedded server checked against botocore's Kinesis model as AWS's front door checks
it (the first failure, as a ValidationException), and the errors today's API answers with."""

from __future__ import annotations

import json
import re
from typing import Any


def _service_model() -> Any:
    from moto.core.utils import get_service_model

    return get_service_model("kinesis")


def _validation_error(value: Any, path: str, constraint: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    shown = "null" if value is None else repr(value)[:200] if not isinstance(value, str) else value[:200]
    return JsonRESTError(
        "ValidationException",
        f"1 validation error detected: Value '{shown}' at '{path}' "
        f"failed to satisfy constraint: Member must {constraint}",
    )


def _check(shape: Any, value: Any, path: str) -> None:
    """AWS's front-door validation of one value against its shape (types, required members, ranges,
    lengths, patterns, enums); raises ValidationException for the first failure, as AWS reports it."""
    kind = shape.type_name
    metadata = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            raise _validation_error(value, path, "be a structure")
        for name in shape.required_members:
            if value.get(name) is None:
                raise _validation_error(None, _member_path(path, name), "not be null")
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _check(member, value[name], _member_path(path, name))
        return
    if kind == "list":
        if not isinstance(value, list):
            raise _validation_error(value, path, "be a list")
        _check_size(len(value), metadata, value, path)
        for index, item in enumerate(value, 1):
            _check(shape.member, item, f"{path}.{index}.member")
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise _validation_error(value, path, "be a map")
        _check_size(len(value), metadata, value, path)
        for key, item in value.items():
            _check(shape.key, key, f"{path}.key")
            _check(shape.value, item, f"{path}.{key}")
        return
    if kind == "string":
        if not isinstance(value, str):
            raise _validation_error(value, path, "be a string")
        _check_size(len(value), metadata, value, path)
        if "pattern" in metadata and not re.fullmatch(metadata["pattern"], value):
            raise _validation_error(value, path, f"satisfy regular expression pattern: {metadata['pattern']}")
        if shape.enum and value not in shape.enum:
            raise _validation_error(value, path, f"satisfy enum value set: [{', '.join(shape.enum)}]")
        return
    if kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise _validation_error(value, path, "be an integer")
        if "min" in metadata and value < metadata["min"]:
            raise _validation_error(value, path, f"have value greater than or equal to {metadata['min']}")
        if "max" in metadata and value > metadata["max"]:
            raise _validation_error(value, path, f"have value less than or equal to {metadata['max']}")
        return
    if kind == "boolean" and not isinstance(value, bool):
        raise _validation_error(value, path, "be a boolean")
    if kind == "timestamp" and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
        raise _validation_error(value, path, "be a timestamp")


def _check_size(size: int, metadata: dict, value: Any, path: str) -> None:
    if "min" in metadata and size < metadata["min"]:
        raise _validation_error(value, path, f"have length greater than or equal to {metadata['min']}")
    if "max" in metadata and size > metadata["max"]:
        raise _validation_error(value, path, f"have length less than or equal to {metadata['max']}")


def _member_path(path: str, name: str) -> str:
    member = name[:1].lower() + name[1:]
    return f"{path}.{member}" if path else member


def validated(response: Any, operation: str) -> dict[str, Any]:
    """The request's JSON parameters, checked against the operation's input shape."""
    try:
        params = json.loads(response.body or "{}")
    except (TypeError, ValueError):
        raise invalid(f"the {operation} request is not a JSON object") from None
    _check(_service_model().operation_model(operation).input_shape, params, "")
    return params


def check_member(operation: str, member: str, value: Any) -> None:
    """One member of a request checked as `validated` checks a whole request (for a request whose other
    members AWS checks its own way)."""
    shape = _service_model().operation_model(operation).input_shape
    if value is None:
        if member in shape.required_members:
            raise _validation_error(None, _member_path("", member), "not be null")
        return
    _check(shape.members[member], value, _member_path("", member))


def invalid(message: str) -> Exception:
    from moto.kinesis.exceptions import InvalidArgumentError

    return InvalidArgumentError(message)


def not_found(message: str) -> Exception:
    from moto.kinesis.exceptions import ResourceNotFoundError

    return ResourceNotFoundError(message)


def in_use(message: str) -> Exception:
    from moto.kinesis.exceptions import ResourceInUseError

    return ResourceInUseError(message)


def limit_exceeded(message: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    return JsonRESTError("LimitExceededException", message)
