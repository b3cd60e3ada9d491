"""Bounds on every number a user gives, from AWS's own limits, checked before any work starts.

One place for both faces: the CLI passes these to argparse as `type=` callables (`argtype`), and
the console's prompts call the same functions. Each returns the value or raises BadInput: one line,
exit 2, in milliseconds. A number is judged by its digits before int() sees it, so a 5,000-digit
argument costs nothing and a huge shard count never reaches a planner.

AWS's numbers (Amazon Kinesis Data Streams API reference and "Quotas and limits"):
- UpdateShardCount: the target may not exceed 10,000 shards per stream. It may also at most double
  and at least halve the open count; that needs the current count, so the plan reports it
  (console.reshard.limits.check_scale_step, which the console's rescale prompt applies too).
- Shards per account: 20,000 by default in the largest Regions, raisable on request. What kconsole
  will plan is capped at SHARD_COUNT_CEILING, five times that default, so a typo cannot build a
  plan of billions of shards; a raised quota below it is given with --account-shard-limit.
- Retention: 24 to 8,760 hours, so no read reaches further back than 8,760 hours.
The producer's numbers (PutRecords' 500 records and 5 MiB, 1 MiB a record) are checked by
console.produce.settings before anything is sent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

from console.errors import BadInput

T = TypeVar("T")

UPDATE_SHARD_COUNT_MAX = 10_000  # UpdateShardCount: "not above 10,000 shards in a stream"
DEFAULT_ACCOUNT_SHARD_QUOTA = 20_000  # the largest Regions' default shard quota
SHARD_COUNT_CEILING = 5 * DEFAULT_ACCOUNT_SHARD_QUOTA
MAX_RETENTION_HOURS = 8_760
MAX_RETENTION_SECONDS = MAX_RETENTION_HOURS * 3600
# What AWS accepts as a stream name; checked first so a typo is exit 2, not a server round trip.
_STREAM_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,128}")
MAX_TIMEOUT_SECONDS = 24 * 3600  # a wait longer than a day is a typo, and asyncio's timers overflow far above it


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def whole_number(value: object, *, what: str, low: int, high: int) -> int:
    """`value` (text or int) as a whole number in [low, high], judged by its digits first."""
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value
    else:
        text = str(value).strip().replace("_", "")
        digits = text.lstrip("0")
        number = int(text) if text.isascii() and text.isdigit() and len(digits) <= len(str(high)) else None
    if number is None or not low <= number <= high:
        raise BadInput(f"{what} must be a whole number from {low:,} to {high:,}; got {_shown(value)}", code="usage")
    return number


def seconds(value: Any, *, what: str, high: float = MAX_TIMEOUT_SECONDS) -> float:
    """A number of seconds above 0 and at most `high` (never nan or infinity)."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and 0 < number <= high):
        raise BadInput(f"{what} must be a number of seconds above 0 and at most {high:g}; got {_shown(value)}",
                       code="usage")
    return number


def shard_count(value: object, what: str = "--shards") -> int:
    """A stream's shard count to plan or predict against."""
    return whole_number(value, what=what, low=1, high=SHARD_COUNT_CEILING)


def scale_target(value: object, what: str = "--to") -> int:
    """UpdateShardCount's TargetShardCount: 1 to 10,000."""
    return whole_number(value, what=what, low=1, high=UPDATE_SHARD_COUNT_MAX)


def timeout(value: object, what: str = "--timeout") -> float:
    return seconds(value, what=what)


def retention_window(value: object, what: str) -> float:
    """How far back to read: no stream keeps records longer than the longest retention."""
    return seconds(value, what=what, high=MAX_RETENTION_SECONDS)


def validate_stream_name(name: str) -> str:
    if not isinstance(name, str) or not _STREAM_NAME.fullmatch(name):
        shown = name if not isinstance(name, str) or len(name) <= 60 else name[:60] + "..."
        raise BadInput(f"not a valid stream name: {shown!r} (1 to 128 of a-z A-Z 0-9 _ . -)", code="bad_stream_name")
    return name


def argtype(check: Callable[..., T], what: str, **bounds: object) -> Callable[[str], T]:
    """`check` as an argparse `type=`: the option's name in the message, BadInput straight through
    (argparse would reword a ValueError as "invalid value")."""
    def parse(text: str) -> T:
        return check(text, what=what, **bounds)

    parse.__name__ = what
    return parse
