"""Counted nouns in what kconsole says: "1 key", "2 keys", "1,000 records"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
