"""The Tail tab's two option rows, the same options as `kconsole tail --from --to --key --grep --where`
and `--efo [--consumer]`: where to start (latest, trim-horizon, or at a timestamp / sequence number),
where to stop (empty: never; now, latest or a time: that window, then stop), a partition-key and a grep
filter, a JMESPath filter of the records held, and whether to read with GetRecords or enhanced fan-out.

`option_rows()` yields the rows inside the view's compose; `options_from_rows(view)` reads them back as
TailOptions (BadInput names the bad box); `describe_options` words them for the status line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from textual.containers import Horizontal
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select

from console.errors import BadInput
from console.keyspace.hashkeys import validate_partition_key
from console.read.decoding import DecodedRecord
from console.read.positions import EndPosition, parse_end
from console.read.printable import printable
from console.read.tail import TailOptions, parse_start

GET_RECORDS, EFO = "getrecords", "efo"
# GetRecords shares each shard's 5 calls and 2 MiB a second with every polling reader; an enhanced fan-out
# consumer has 2 MiB/s per shard of its own, pushed over HTTP/2 (console/read/efo.py).
SOURCE_CHOICES = [("GetRecords", GET_RECORDS), ("EFO", EFO)]
START_CHOICES = [("latest", "latest"), ("trim-horizon", "trim-horizon"), ("at time / seq", "at")]

OPTION_ROWS_CSS = """
    TailView #tail-options { height: 1; padding: 0 1; margin: 1 0 0 0; }
    TailView #tail-filters { height: 1; padding: 0 1; }
    TailView .tail-row Label { color: $text-muted; margin-right: 1; }
    TailView #tail-options Select { width: 16; margin-right: 1; }
    TailView #tail-at { width: 1fr; min-width: 12; margin-right: 1; }
    TailView #tail-key { width: 1fr; margin-right: 1; }
    TailView #tail-grep { width: 1fr; margin-right: 1; }
    TailView #tail-to { width: 14; margin-right: 1; }
    TailView #tail-where { width: 2fr; margin-right: 1; }
    TailView #tail-start { min-width: 7; }
"""


def option_rows() -> Iterator[Widget]:
    """The two rows, for the view's compose (`yield from option_rows()`)."""
    with Horizontal(id="tail-options", classes="tail-row"):
        yield Label("From")
        yield Select(START_CHOICES, value="latest", allow_blank=False, id="tail-from", compact=True)
        yield Input(
            placeholder="timestamp or seq no.",
            id="tail-at",
            compact=True,
            tooltip="for 'at': an ISO-8601 time (2026-11-22T20:00:00Z, UTC if no offset) or a sequence number",
        )
        yield Label("To")
        yield Input(
            placeholder="never",
            id="tail-to",
            compact=True,
            tooltip="empty: keep reading; now, latest or an ISO-8601 time: read that window, then stop",
        )
        yield Label("Key")
        yield Input(placeholder="any", id="tail-key", compact=True, tooltip="only this partition key")
        yield Button("Start", id="tail-start", variant="primary", compact=True)
    with Horizontal(id="tail-filters", classes="tail-row"):
        yield Label("Grep")
        yield Input(
            placeholder="any",
            id="tail-grep",
            compact=True,
            tooltip="only records whose content or key contains this text",
        )
        yield Label("Where")
        yield Input(
            placeholder="JMESPath, e.g. data.tenant == '42'",
            id="tail-where",
            compact=True,
            tooltip="filters the records held at once (key, shard_id, seq, arrival, size, kind, data)",
        )
        yield Label("Read with")
        yield Select(SOURCE_CHOICES, value=GET_RECORDS, allow_blank=False, id="tail-source", compact=True)
        yield Input(
            placeholder="consumer name or ARN",
            id="tail-consumer",
            compact=True,
            tooltip="EFO: the registered consumer to read as (its own 2 MiB/s per shard, shared with no "
            "GetRecords reader); `kconsole consumers register` registers one",
        )


def options_from_rows(view: DOMNode, mask: Callable[[DecodedRecord], DecodedRecord] | None) -> TailOptions:
    """The rows as TailOptions (follow: the view keeps reading); BadInput names the bad field."""
    choice = view.query_one("#tail-from", Select).value
    at_text = view.query_one("#tail-at", Input).value.strip()
    if choice == "at":
        if not at_text:
            raise BadInput("from 'at': type an ISO-8601 timestamp or a sequence number in the box")
        start = parse_start(at_text)
    else:
        start = parse_start(str(choice))
    key = view.query_one("#tail-key", Input).value.strip() or None
    if key is not None:
        validate_partition_key(key)
    grep = view.query_one("#tail-grep", Input).value or None
    to_text = view.query_one("#tail-to", Input).value.strip()
    end = parse_end(to_text, datetime.now(UTC)) if to_text else EndPosition()
    if end.moment is not None and start.timestamp is not None and end.moment < start.timestamp:
        raise BadInput(f"To {end.describe()} is before From {start.describe()}")
    # A To (even latest) makes a window: read it, then stop; without one the view keeps following.
    return TailOptions(start=start, partition_key=key, grep=grep, follow=not to_text, end=end, mask=mask)


def describe_options(options: TailOptions) -> str:
    parts = [f"from {options.start.describe()}"]
    if options.end.moment is not None or not options.follow:
        parts.append(f"to {options.end.describe()}")
    if options.partition_key is not None:
        parts.append(f"key {printable(options.partition_key)}")
    if options.grep is not None:
        parts.append(f"grep {printable(repr(options.grep))}")
    return ", ".join(parts)
