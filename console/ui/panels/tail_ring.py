"""The Tail tab's record list: the last N decoded records, one line each (more when expanded),
rendered on demand (a line-API ScrollView), so 50k records cost only the lines in view.

Keys (when it has focus): up/down/page/home/end move the cursor (end: follow new records again), enter
expands or collapses the record under the cursor (pretty JSON, text lines, or a hex dump), space
pauses the display (`PauseChanged` says so to the view above it).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.read.decoding import DecodedRecord
from console.read.payloads import KIND_ERROR, KIND_JSON, KIND_TEXT
from console.read.printable import printable
from console.read.window import RecordWindow
from console.ui.format import short_shard_id

DEFAULT_CAPACITY = 2000
HEX_DUMP_WIDTH = 32  # bytes per line when a binary record is expanded
MAX_EXPANDED_LINES = 500  # a huge record expands to its first lines, not to a million rows

_KIND_STYLES = {"json": "green", "text": "cyan", "hex": "magenta", KIND_ERROR: "bold red"}


def _clock_time(moment: datetime | None) -> str:
    if moment is None:
        return "--:--:--.---"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3]


def expanded_lines(record: DecodedRecord) -> list[str]:
    """What an expanded record shows under its summary line."""
    head = f"  seq {record.position}  key {printable(record.key_text)}"
    if record.explicit_hash_key:
        head += f"  ehk {printable(record.explicit_hash_key)}"
    head += f"  {record.size} B  {record.kind_label}"
    lines = [head]
    if record.error:
        lines.append(f"  error: {printable(record.error)}")
    if record.kind in (KIND_JSON, KIND_TEXT):
        body = record.content_text(pretty=True).splitlines() or [""]
    else:
        raw = bytes(record.value)
        body = [
            f"{offset:08x}  {raw[offset : offset + HEX_DUMP_WIDTH].hex(' ')}"
            for offset in range(0, len(raw), HEX_DUMP_WIDTH)
        ] or ["(empty)"]
    if len(body) > MAX_EXPANDED_LINES:
        body = [*body[:MAX_EXPANDED_LINES], f"… {len(body) - MAX_EXPANDED_LINES} more lines (w saves it all)"]
    lines.extend("    " + printable(line) for line in body)
    return lines


class RecordRing(ScrollView, can_focus=True):
    """The last `capacity` records, one line each (more when expanded), rendered on demand."""

    DEFAULT_CSS = """
    RecordRing { height: 1fr; background: $surface; overflow-x: hidden; }
    RecordRing:focus { background-tint: $foreground 5%; }
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "Oldest", show=False),
        Binding("end", "follow", "Follow", show=False),
        Binding("enter", "toggle_expand", "Expand"),
        Binding("space", "toggle_pause", "Pause"),
    ]

    class PauseChanged(Message):
        def __init__(self, paused: bool) -> None:
            super().__init__()
            self.paused = paused

    def __init__(self, capacity: int = DEFAULT_CAPACITY, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.capacity = capacity
        self.records = RecordWindow(capacity)  # bounded in bytes too
        self.first_serial = 0  # serial of records[0]; serials never repeat, so they survive the ring moving
        self.cursor: int | None = None  # a serial; None = follow the newest record
        self.expanded: set[int] = set()
        self.paused = False
        self._starts: list[int] | None = None
        self._total_lines = 0  # first line of each record, when any is expanded
        self._expanded_cache: dict[int, list[str]] = {}

    # --- contents ---------------------------------------------------------------------------------

    def extend(self, records: Iterable[DecodedRecord]) -> int:
        """Append records (oldest fall off the front); returns how many were appended."""
        incoming = list(records)
        dropped = self.records.extend(incoming)
        self.first_serial += dropped
        if dropped:
            self.expanded = {serial for serial in self.expanded if serial >= self.first_serial}
            self._expanded_cache = {s: v for s, v in self._expanded_cache.items() if s >= self.first_serial}
            if self.cursor is not None and self.cursor < self.first_serial:
                self.cursor = self.first_serial
        self._relayout()
        return len(incoming)

    def clear(self) -> None:
        self.first_serial += len(self.records)
        self.records.clear()
        self.expanded.clear()
        self._expanded_cache.clear()
        self.cursor = None
        self._relayout()

    @property
    def following(self) -> bool:
        return self.cursor is None

    def _relayout(self) -> None:
        if self.expanded:
            starts, line = [], 0
            first = self.first_serial
            for index in range(len(self.records)):
                starts.append(line)
                line += 1 + (len(self._lines_of(first + index)) if first + index in self.expanded else 0)
            self._starts = starts
            total = line
        else:
            self._starts = None
            total = len(self.records)
        self._total_lines = total
        self.virtual_size = Size(self.size.width, total)
        if self.following and not self.paused:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        self.refresh()

    def _lines_of(self, serial: int) -> list[str]:
        lines = self._expanded_cache.get(serial)
        if lines is None:
            lines = expanded_lines(self.records[serial - self.first_serial])
            self._expanded_cache[serial] = lines
        return lines

    def _locate(self, y: int) -> tuple[int, int] | None:
        """(ring index, line within the record) of virtual line y."""
        if not 0 <= y < self._total_lines:
            return None
        if self._starts is None:
            return y, 0
        index = bisect.bisect_right(self._starts, y) - 1
        return index, y - self._starts[index]

    def _line_of(self, serial: int) -> int:
        index = serial - self.first_serial
        return self._starts[index] if self._starts is not None else index

    # --- rendering --------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        style = self.rich_style
        where = self._locate(scroll_y + y)
        if where is None:
            return Strip.blank(width, style)
        index, sub_line = where
        serial = self.first_serial + index
        record = self.records[index]
        if sub_line == 0:
            text = self.summary(record)
            if serial in self.expanded:
                text = Text("▾ ").append_text(text)
            else:
                text = Text("▸ " if record.kind == KIND_JSON else "  ").append_text(text)
        else:
            text = Text(self._lines_of(serial)[sub_line - 1], style="dim" if sub_line == 1 else "")
        if serial == self.cursor and self.has_focus:
            text.stylize("reverse")
        elif serial == self.cursor:
            text.stylize("underline")
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, scroll_y + y)

    @staticmethod
    def summary(record: DecodedRecord) -> Text:
        text = Text(no_wrap=True)
        text.append(_clock_time(record.arrival), style="dim")
        text.append(f" {short_shard_id(record.shard_id):>5} ", style="bold")
        text.append(f"…{record.sequence_number[-6:]}", style="dim")
        if record.sub_sequence_number is not None:
            text.append(f"/{record.sub_sequence_number}", style="dim")
        text.append(f" {printable(record.key_text)} ", style="yellow")
        text.append(record.kind_label, style=_KIND_STYLES.get(record.kind, ""))
        content = record.content_text(max_hex_bytes=48)
        if record.kind == KIND_ERROR:
            content = f"{record.error}"
        text.append(" " + printable(content[:400].replace("\n", "⏎").replace("\r", "")))
        return text

    # --- keys -------------------------------------------------------------------------------------

    def _move_to(self, serial: int | None) -> None:
        if not self.records:
            self.cursor = None
            return
        last = self.first_serial + len(self.records) - 1
        self.cursor = None if serial is None else max(self.first_serial, min(last, serial))
        if self.cursor is not None:
            line = self._line_of(self.cursor)
            self.scroll_to_region_line(line)
        else:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        self.refresh()

    def scroll_to_region_line(self, line: int) -> None:
        top, height = self.scroll_offset.y, max(1, self.size.height)
        if line < top:
            self.scroll_to(y=line, animate=False, immediate=True, force=True)
        elif line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False, immediate=True, force=True)

    def action_cursor(self, step: int) -> None:
        if not self.records:
            return
        current = self.cursor if self.cursor is not None else self.first_serial + len(self.records)
        self._move_to(current + step)

    def action_page(self, step: int) -> None:
        self.action_cursor(step * max(1, self.size.height - 1))

    def action_first(self) -> None:
        self._move_to(self.first_serial)

    def action_follow(self) -> None:
        self._move_to(None)

    def action_toggle_expand(self) -> None:
        serial = self.cursor if self.cursor is not None else self.first_serial + len(self.records) - 1
        if not self.records:
            return
        if serial in self.expanded:
            self.expanded.discard(serial)
        else:
            self.expanded.add(serial)
            if self.cursor is None:
                self.cursor = serial
        self._relayout()
        self.scroll_to_region_line(self._line_of(serial))

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.post_message(self.PauseChanged(self.paused))

    def on_resize(self, _event: events.Resize) -> None:
        # The lines above (lag, messages) grow and shrink: a following view keeps the newest in sight.
        self.virtual_size = Size(self.size.width, self._total_lines)
        if self.following and not self.paused:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
