"""Counted nouns in what kconsole says: "1 key", "2 keys", "1,000 records"; numbers as a person
writes them ("99,999,999,999", never "1e+11")."""

from __future__ import annotations

import math


def counted(count: int | None, noun: str, plural: str | None = None) -> str:
    """`count` and the noun in its number; a count not known yet (None) is "?" ("? open shards")."""
    if count is None:
        return f"? {plural or noun + 's'}"
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def plain_number(value: float) -> str:
    """`value` without exponent notation: 99999999999.0 -> "99,999,999,999", 0.25 -> "0.25"."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.6f}".rstrip("0").rstrip(".")
