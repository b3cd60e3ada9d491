"""Short, fixed-width text for shard ids, hash keys, shares and rates (shared by the UI widgets)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY

_NUMBERED_SHARD = re.compile(r"^shardId-(\d+)$")


def short_shard_id(shard_id: str) -> str:
    """'shardId-000000000012' -> '#12'; anything else (other servers' ids) is kept whole."""
    match = _NUMBERED_SHARD.match(shard_id)
    return f"#{int(match.group(1))}" if match else shard_id


# How the console writes hash keys, chosen once (the `key_format` setting) and used in every view:
# decimal as AWS takes them (ExplicitHashKey, StartingHashKey), or the same 128 bits in hex.
KEY_FORMATS = ("decimal", "hex")
KEY_WIDTHS = {"decimal": len(str(MAX_HASH_KEY)), "hex": 2 + 32}


def format_hash_key(value: int, key_format: str = "decimal") -> str:
    """A hash key in full, never rounded: up to 39 decimal digits, or 0x and 32 hex digits."""
    return f"0x{value:032x}" if key_format == "hex" else str(value)


def shorten_middle(text: str, width: int) -> str:
    """`text` whole if it fits `width`, else its start and its end around "…": keys that differ
    only at the end (2**128 and 2**128 - 1, "order-17" and "order-18") stay apart."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return f"{text[:head]}…{text[len(text) - (width - 1 - head) :]}"


def format_share(share: float) -> str:
    if share >= 0.0995:
        return f"{share * 100:.1f}%"
    if share >= 0.0001:
        return f"{share * 100:.2f}%"
    return f"{share * 100:.0e}%"


def format_rate(value: float, unit: str) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix}{unit}"
    return f"{value:.0f}{unit}"


def format_age(seconds: float) -> str:
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s ago"
    return f"{seconds / 3600:.1f}h ago"


def summarise_shares(starts: Sequence[int], ends: Sequence[int], ids: Sequence[str]) -> str:
    """The summary line: how uneven the open shards' shares are. Pure (10k shards: a few ms), so the
    poll worker works it out in its thread and hands it to the ribbon (console.ui.widgets.ribbon)."""
    count = len(ids)
    if not count:
        return ""
    widths = list(map(int.__sub__, ends, starts))
    smallest = widths.index(min(widths))
    largest = widths.index(max(widths))
    shares = {i: (widths[i] + 1) / HASH_SPACE for i in (smallest, largest)}
    spread = shares[largest] / shares[smallest]
    verdict = "even" if spread < 1.01 else f"uneven {spread:.1f}x"
    return (
        f"{count} open · {verdict} · min {format_share(shares[smallest])} {short_shard_id(ids[smallest])}"
        f" · max {format_share(shares[largest])} {short_shard_id(ids[largest])}"
        f" · even {format_share(1 / count)}"
    )
