"""The shard table's columns: what each shows of a shard and its heat, how it sorts, and which of
them fit a terminal's width (console.ui.widgets.shard_table draws them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from console.topology.model import Shard
from console.ui.format import KEY_WIDTHS, format_hash_key, format_rate, format_share, short_shard_id


@dataclass(frozen=True, slots=True)
class ShardHeat:
    """Throughput of one shard, as the heat panel measures it (utilisation: 0..1+ of the shard limit)."""

    records_per_s: float
    bytes_per_s: float
    utilisation: float
    series: tuple[int, ...] = ()  # records per second, the last few seconds, oldest first


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    width: int
    text: Callable[[Shard, ShardHeat | None], str]
    sort_key: Callable[[Shard, ShardHeat | None], Any]
    align_right: bool = False


def _parents_text(shard: Shard, _heat: ShardHeat | None) -> str:
    return " ".join(short_shard_id(p) for p in shard.parents) or "-"


_SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: tuple[int, ...]) -> str:
    if not values:
        return ""
    top = max(values) or 1
    return "".join(_SPARKS[min(7, value * 8 // (top + 1))] for value in values)


def _throughput_text(_shard: Shard, heat: ShardHeat | None) -> str:
    if heat is None:
        return "-"
    return f"{sparkline(heat.series[-4:]):>4} {format_rate(heat.records_per_s, 'r/s')}"


COLUMNS: tuple[Column, ...] = (
    Column("shard", "Shard", 20, lambda s, h: s.shard_id, lambda s, h: (len(s.shard_id), s.shard_id)),
    Column(
        "state",
        "State",
        6,
        lambda s, h: "open" if s.is_open else "closed",
        lambda s, h: (not s.is_open, s.starting_hash_key, len(s.shard_id), s.shard_id),
    ),
    Column(
        "start",
        "Start key",
        KEY_WIDTHS["decimal"],
        lambda s, h: format_hash_key(s.starting_hash_key),
        lambda s, h: (s.starting_hash_key, not s.is_open, len(s.shard_id), s.shard_id),
        align_right=True,
    ),
    Column(
        "end",
        "End key",
        KEY_WIDTHS["decimal"],
        lambda s, h: format_hash_key(s.ending_hash_key),
        lambda s, h: (s.ending_hash_key, not s.is_open, len(s.shard_id), s.shard_id),
        align_right=True,
    ),
    Column(
        "share", "Share", 6, lambda s, h: format_share(s.share), lambda s, h: (s.share, s.shard_id), align_right=True
    ),
    Column("parents", "Parents", 12, _parents_text, lambda s, h: (s.parents, s.shard_id)),
    Column(
        "throughput",
        "Rate",
        14,
        _throughput_text,
        lambda s, h: (h.records_per_s if h else -1.0, s.shard_id),
        align_right=True,
    ),
)
# Shown when consumer lag is known (the Consumers tab): the worst lease's time behind on each shard.
LAG_COLUMN = Column("lag", "Lag", 9, lambda s, h: "", lambda s, h: s.shard_id, align_right=True)
NARROW_SHARD_WIDTH = 6  # "#12345": the short id, when the full one does not fit
NARROWEST_KEY_WIDTH = 12
# Keys at least this wide (a third of a decimal hash key) keep the shard ids whole; narrower, the ids
# shorten first.
KEYS_BESIDE_FULL_IDS = 14


def columns_for(key_format: str) -> tuple[Column, ...]:
    """The columns with hash keys written in `key_format` (console.ui.format.KEY_FORMATS)."""
    if key_format == "decimal":
        return COLUMNS
    hexed = {
        "start": lambda s, h: format_hash_key(s.starting_hash_key, "hex"),
        "end": lambda s, h: format_hash_key(s.ending_hash_key, "hex"),
    }
    return tuple(replace(c, width=KEY_WIDTHS["hex"], text=hexed[c.key]) if c.key in hexed else c for c in COLUMNS)


def fit_columns(columns: tuple[Column, ...], width: int) -> tuple[Column, ...]:
    """The columns that fit `width`, keys in full where they fit. On a narrower terminal, in turn:
    the keys narrow while they keep KEYS_BESIDE_FULL_IDS digits; then shard ids shorten to '#n'; the start and end keys share what is left, each keeping its leading
    digits (at least NARROWEST_KEY_WIDTH; the detail line shows the selected shard's keys in full), so
    an 80-column terminal still shows every column; only narrower, the end key goes (the next row's
    start key implies it), then the parents, and last the start key keeps fewer leading digits."""

    def total(cols: tuple[Column, ...]) -> int:
        return sum(c.width + 1 for c in cols) + 1

    def keys_share(cols: tuple[Column, ...]) -> tuple[Column, ...]:
        """The key columns narrowed (evenly) until the whole fits, none below NARROWEST_KEY_WIDTH."""
        keys = [c for c in cols if c.key in ("start", "end")]
        over = total(cols) - width
        if over <= 0 or not keys:
            return cols
        room = sum(c.width for c in keys) - over
        each, extra = divmod(max(room, NARROWEST_KEY_WIDTH * len(keys)), len(keys))
        widths = {c.key: min(c.width, each + (1 if i < extra else 0)) for i, c in enumerate(keys)}
        return tuple(replace(c, width=widths[c.key]) if c.key in widths else c for c in cols)

    if total(columns) <= width:
        return columns
    keys_narrowed = keys_share(columns)
    if total(keys_narrowed) <= width and all(
        c.width >= KEYS_BESIDE_FULL_IDS for c in keys_narrowed if c.key in ("start", "end")
    ):
        return keys_narrowed  # a full shard id is worth more than a key's last digits
    columns = tuple(
        replace(c, width=NARROW_SHARD_WIDTH, text=lambda s, h: short_shard_id(s.shard_id)) if c.key == "shard" else c
        for c in columns
    )
    for step in ("keys", "end", "parents"):
        if step != "keys":
            columns = tuple(c for c in columns if c.key != step)
        narrowed = keys_share(columns)
        if total(narrowed) <= width:
            return narrowed
    over = total(columns) - width
    if over > 0:
        columns = tuple(
            replace(c, width=max(NARROWEST_KEY_WIDTH, c.width - over)) if c.key == "start" else c for c in columns
        )
    return columns


COLUMN_BY_KEY = {column.key: column for column in COLUMNS}
