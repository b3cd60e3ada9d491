"""The Tail tab's profile (P): what the records shown hold, as `kconsole tail --summarize` reports a
window (console.read.profile.WindowProfile, the same figures): per field path of the decoded content,
how often it is present, its types, its distinct values, numbers' min, p50, p95 and max, and the most
common values; above them the records' kinds, sizes and schema versions.

The records profiled are the ones shown (the Where box's pick of what is held), masked as shown. While
the profile is in view it is made again as records come, at most once every REFRESH_SECONDS."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from console.read.decoding import DecodedRecord
from console.read.printable import printable
from console.read.profile import WindowProfile
from console.ui.widgets.table_rows import plain

REFRESH_SECONDS = 1.0
COLUMNS = ("FIELD", "PRESENT", "TYPES", "DISTINCT", "MIN", "P50", "P95", "MAX", "TOP VALUES")


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def profile_rows(profile: WindowProfile) -> list[tuple[str, ...]]:
    """One row per field path, in COLUMNS' order, from the profile's JSON (what --summarize --json says)."""
    rows: list[tuple[str, ...]] = []
    for path, field in profile.to_json()["fields"].items():
        numbers = field.get("numbers") or {}
        distinct = f"{'≥' if field['distinct_at_least'] else ''}{field['distinct']}" if field["distinct"] else ""
        top = ", ".join(f"{row['value']} ({row['count']})" for row in field["top"][:3])
        rows.append(
            (
                path,
                f"{field['present']} ({field['present_share']:.0%})",
                "/".join(f"{kind} {count}" for kind, count in field["types"].items()),
                distinct,
                _number(numbers.get("min")),
                _number(numbers.get("p50")),
                _number(numbers.get("p95")),
                _number(numbers.get("max")),
                top,
            )
        )
    return rows


def profile_summary(profile: WindowProfile) -> str:
    """The lines above the table: records, kinds, schema versions, sizes."""
    lines = profile.lines()
    fields_at = 1 + sum(1 for line in lines[1:] if not line.startswith("  "))
    return " · ".join(lines[:fields_at]) + ("" if profile.fields else " · no JSON fields")


class ProfileView(Vertical):
    """The profile of the records given to `show`; hidden until the view's P shows it."""

    DEFAULT_CSS = """
    ProfileView { height: 1fr; }
    ProfileView #tail-profile-summary { height: auto; padding: 0 1; color: $text-muted; }
    ProfileView DataTable { height: 1fr; }
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._clock = clock
        self.shown_at: float | None = None  # when the profile was last made
        self.profile: WindowProfile | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="tail-profile-summary")
        table: DataTable[str | Text] = DataTable(id="tail-profile-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table

    def show(self, records: Iterable[DecodedRecord]) -> WindowProfile:
        """Profile `records` and put the result on screen."""
        profile = WindowProfile()
        for record in records:
            profile.add(record)
        self.profile = profile
        self.shown_at = self._clock()
        self.query_one("#tail-profile-summary", Static).update(Text(printable(profile_summary(profile))))
        table = self.query_one(DataTable)
        table.clear()
        for row in profile_rows(profile):
            table.add_row(*(plain(cell) for cell in row), key=row[0])
        return profile

    def due(self) -> bool:
        """Whether new records may be profiled again (at most once every REFRESH_SECONDS)."""
        return self.shown_at is None or self._clock() - self.shown_at >= REFRESH_SECONDS
