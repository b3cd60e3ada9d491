"""Hostile text a producer can put in a stream, and the check that none of it reaches a terminal raw."""

from __future__ import annotations

import asyncio

OSC_TITLE = "\x1b]0;pwned\x07"  # retitles the terminal
OSC_CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"  # writes the clipboard
CLEAR_SCREEN = "\x1b[2J"
C1 = "\x9b2J\x9d0;c1\x9c"  # CSI and OSC in their one-character C1 forms
BIDI = "\u202eevil\u2066x\u2069"  # right-to-left override, isolates
MARKUP = "[bold red]x[/]"
LONE_CLOSE = "[/]"

HOSTILE_KEYS = {
    "osc-title": f"k{OSC_TITLE}",
    "osc-clipboard": f"k{OSC_CLIPBOARD}",
    "csi": f"k{CLEAR_SCREEN}",
    "c1": f"k{C1}",
    "bidi": f"k{BIDI}",
    "markup": MARKUP,
    "lone-close": LONE_CLOSE,
}


def raw_controls(text: str) -> list[str]:
    """The characters in `text` a terminal would act on (or draw reordered): anything not printable but a
    line break. An empty list means the text is safe to write to a terminal."""
    return sorted({ch for ch in text if not ch.isprintable() and ch != "\n"})


async def write_hostile_keys(kinesis, stream: str, stop: asyncio.Event, *, repeats: int = 4) -> None:
    """Put every hostile key `repeats` times ten times a second until `stop` (hot keys for a heat view)."""
    while not stop.is_set():
        await kinesis.put_records(
            stream, [{"Data": b"{}", "PartitionKey": key} for key in HOSTILE_KEYS.values() for _ in range(repeats)]
        )
        await asyncio.sleep(0.1)
