"""What the consumers commands share: the lease table's name and scan cap checked."""

from __future__ import annotations

import re

from console.consumers.lag import MAX_SCAN_CAP
from console.errors import BadInput

_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")  # DynamoDB's table-name rule


def validate_table_name(name: str) -> str:
    if not _TABLE_NAME.match(name or ""):
        raise BadInput(
            f"not a valid DynamoDB table name: {name!r} (3 to 255 of a-z A-Z 0-9 _ . -)", code="bad_table_name"
        )
    return name


def validate_scan_cap(cap: int, most: int = MAX_SCAN_CAP) -> int:
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= most:
        raise BadInput(f"--scan-cap must be a whole number from 1 to {most:,}; got {cap!r}", code="usage")
    return cap
