"""What a window of records holds: per field path of the decoded content, how often it is present, its
JSON types, how many distinct values (exact up to MAX_DISTINCT, then "at least"), numbers' min, max and
percentiles, and the most common values; per record, sizes, kinds and Glue schema versions.

Everything is bounded: distinct values and top-value counts stop growing at MAX_DISTINCT per path,
numbers keep a reservoir of MAX_SAMPLES for percentiles (exact below it), and at most MAX_PATHS paths
are tracked (records with more are counted under the paths already seen)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from console.read.decoding import DecodedRecord
from console.read.payloads import KIND_JSON
from console.words import counted

MAX_DISTINCT = 1000
MAX_SAMPLES = 10_000
MAX_PATHS = 500
TOP_VALUES = 5
MAX_VALUE_CHARS = 60


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@dataclass
class Numbers:
    """Min, max and a uniform reservoir of values for percentiles."""

    count: int = 0
    low: float | None = None
    high: float | None = None
    samples: list[float] = field(default_factory=list)
    _random: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def add(self, value: float) -> None:
        self.count += 1
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(value)
        else:
            slot = self._random.randrange(self.count)
            if slot < MAX_SAMPLES:
                self.samples[slot] = value

    def percentile(self, fraction: float) -> float | None:
        if not self.samples:
            return None
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def to_json(self) -> dict[str, Any]:
        return {
            "min": self.low,
            "max": self.high,
            "p50": self.percentile(0.5),
            "p95": self.percentile(0.95),
            "p99": self.percentile(0.99),
            "exact": self.count <= MAX_SAMPLES,
        }


@dataclass
class FieldProfile:
    present: int = 0  # records in which the path holds a value (null included)
    types: Counter[str] = field(default_factory=Counter)
    values: Counter[str] = field(default_factory=Counter)  # scalar values as text, up to MAX_DISTINCT of them
    saturated: bool = False  # more distinct values were met than are kept
    numbers: Numbers = field(default_factory=Numbers)

    def add(self, value: Any) -> None:
        self.present += 1
        kind = json_type(value)
        self.types[kind] += 1
        if kind in ("object", "array"):
            return
        if kind == "number":
            self.numbers.add(float(value))
        text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        text = text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"
        if text in self.values or len(self.values) < MAX_DISTINCT:
            self.values[text] += 1
        else:
            self.saturated = True

    def to_json(self, records: int) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "present": self.present,
            "present_share": round(self.present / records, 4) if records else 0.0,
            "types": dict(self.types.most_common()),
            "distinct": len(self.values),
            "distinct_at_least": self.saturated,
            "top": [{"value": value, "count": count} for value, count in self.values.most_common(TOP_VALUES)],
        }
        if self.numbers.count:
            doc["numbers"] = self.numbers.to_json()
        return doc


class WindowProfile:
    """Fed decoded records, one by one; reports per field path and per record."""

    def __init__(self) -> None:
        self.records = 0
        self.fields: dict[str, FieldProfile] = {}
        self.sizes = Numbers()
        self.kinds: Counter[str] = Counter()
        self.schemas: Counter[str] = Counter()

    def add(self, record: DecodedRecord) -> None:
        self.records += 1
        self.sizes.add(record.weight)
        self.kinds[record.kind_label] += 1
        if record.schema is not None:
            self.schemas[record.schema] += 1
        if record.kind == KIND_JSON:
            seen: set[str] = set()
            self._walk(record.value, "", seen)

    def _walk(self, value: Any, path: str, seen: set[str]) -> None:
        if path:
            self._field(path, value, seen)
        if isinstance(value, dict):
            for key, item in value.items():
                self._walk(item, f"{path}.{key}" if path else str(key), seen)
        elif isinstance(value, list):
            for item in value:
                self._walk(item, f"{path}[]", seen)

    def _field(self, path: str, value: Any, seen: set[str]) -> None:
        profile = self.fields.get(path)
        if profile is None:
            if len(self.fields) >= MAX_PATHS:
                return
            profile = self.fields[path] = FieldProfile()
        if path in seen:  # a path under a list: present once per record, every element's type and value counted
            profile.types[json_type(value)] += 1
            return
        seen.add(path)
        profile.add(value)

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "kinds": dict(self.kinds.most_common()),
            "schemas": dict(self.schemas.most_common()),
            "sizes": self.sizes.to_json() if self.sizes.count else None,
            "fields": {path: profile.to_json(self.records) for path, profile in sorted(self.fields.items())},
            "paths_capped": len(self.fields) >= MAX_PATHS,
        }

    def lines(self) -> list[str]:
        """The report as lines of text; what came from the stream in them is the caller's to escape."""
        lines = [f"{counted(self.records, 'record')}"]
        if self.kinds:
            lines.append("kinds: " + ", ".join(f"{kind} {count:,}" for kind, count in self.kinds.most_common()))
        if self.schemas:
            lines.append("schemas: " + ", ".join(f"{name} {count:,}" for name, count in self.schemas.most_common()))
        if self.sizes.count:
            sizes = self.sizes.to_json()
            lines.append(f"size: min {sizes['min']:.0f} B, p50 {sizes['p50']:.0f} B, max {sizes['max']:.0f} B")
        for path, profile in sorted(self.fields.items()):
            types = "/".join(profile.types)
            share = f"{100 * profile.present / self.records:.0f}%" if self.records else "-"
            distinct = f"{'≥' if profile.saturated else ''}{len(profile.values)} distinct" if profile.values else ""
            numbers = ""
            if profile.numbers.count:
                stats = profile.numbers.to_json()
                numbers = f" min {stats['min']:g} p50 {stats['p50']:g} max {stats['max']:g}"
            top = ", ".join(f"{value} ({count})" for value, count in profile.values.most_common(3))
            lines.append(
                f"  {path}  {share} {types} {distinct}{numbers}" + (f"  top: {top}" if top and not numbers else "")
            )
        return lines
