"""The tail view: a bounded ring of the last N decoded records, fed in batches, never blocking the UI.

The view runs its own reader: a `console.read.tail.TailReader` in a worker on the view (started by t
or h, restarted with new options, cancelled by t, by another stream being opened, or on quit) hands
each `TailBatch` to `TailView.add_batch` (cheap: it only queues). Every `flush_interval` (100 ms) the
queue is moved into the ring in one step and the screen is refreshed once, so 50k records/s cost
ten refreshes a second, not 50k. Only visible lines are rendered (a line-API ScrollView).

An option row above the records sets where to start (latest, trim-horizon, or at a timestamp /
sequence number), where to stop (empty: never; now, latest or a time: that window, then stop), a
partition-key filter and a grep filter, as `kconsole tail --from --to --key --grep`. The Where box takes a
JMESPath filter (`kconsole tail --where`) and re-filters the records held at once, without reading again.

Keys (when the record list has focus): up/down/page/home/end move the cursor (end: follow new
records again), enter expands or collapses the record under the cursor (pretty JSON, text lines,
or a hex dump), space pauses the display, w exports (JSON lines, CSV or raw; what is held, or the
whole From/To window read again), t starts
(with the options shown) or stops reading, h starts reading from the oldest record (trim horizon),
f moves to the options (escape comes back).
Starting and stopping are `StartRequested(options)` / `StopRequested()` messages the view posts and
acts on itself; they bubble on, so the app (or a test) sees what the operator asked for.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import get_current_worker

from console.backend.protocol import ConsoleBackend
from console.errors import BadInput, ConsoleError
from console.keyspace.hashkeys import validate_partition_key
from console.read.decoding import KIND_ERROR, KIND_JSON, KIND_TEXT, DecodedRecord
from console.read.efo import (
    Subscribe,
    named_consumer_arn,
    temporary_consumer_name,
    temporary_consumer_preview,
    until_active,
)
from console.read.export import (
    EXPORT_FORMATS,
    CsvEncoder,
    ExportTarget,
    encode_jsonl,
    encode_length_prefixed,
    parse_fields,
)
from console.read.positions import EndPosition, parse_end
from console.read.printable import printable
from console.read.share import ReadShare
from console.read.tail import TailBatch, TailOptions, TailReader, parse_start
from console.read.where import RecordFilter
from console.read.window import RecordWindow
from console.ui.format import format_rate, short_shard_id
from console.userdirs import data_dir

DEFAULT_CAPACITY = 2000
FLUSH_INTERVAL = 0.1
RATE_WINDOW = 3.0  # seconds of history behind the records/s figure
HEX_DUMP_WIDTH = 32  # bytes per line when a binary record is expanded
MAX_EXPANDED_LINES = 500  # a huge record expands to its first lines, not to a million rows

GET_RECORDS, EFO = "getrecords", "efo"
# GetRecords shares each shard's 5 calls and 2 MiB a second with every polling reader; an enhanced fan-out
# consumer has 2 MiB/s per shard of its own, pushed over HTTP/2 (console/read/efo.py).
SOURCE_CHOICES = [("GetRecords", GET_RECORDS), ("EFO", EFO)]
START_CHOICES = [("latest", "latest"), ("trim-horizon", "trim-horizon"), ("at time / seq", "at")]
IDLE_HINT = "t starts (options above, f edits them), h reads from the oldest"

_KIND_STYLES = {"json": "green", "text": "cyan", "hex": "magenta", KIND_ERROR: "bold red"}


def _clock_time(moment: datetime | None) -> str:
    if moment is None:
        return "--:--:--.---"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3]


def format_lag(millis: int | None) -> str:
    if millis is None:
        return "?"
    if millis < 1000:
        return f"{millis} ms"
    if millis < 60_000:
        return f"{millis / 1000:.1f} s"
    if millis < 3_600_000:
        return f"{millis / 60_000:.1f} min"
    return f"{millis / 3_600_000:.1f} h"


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

    def __init__(self, capacity: int = DEFAULT_CAPACITY, **kwargs) -> None:
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
        self.post_message(TailView.PauseChanged(self.paused))

    def on_resize(self, _event) -> None:
        # The lines above (lag, messages) grow and shrink: a following view keeps the newest in sight.
        self.virtual_size = Size(self.size.width, self._total_lines)
        if self.following and not self.paused:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


class TailView(Vertical):
    """Status line (records/s, per-shard lag, state) over the record ring. Feed it with `add_batch`."""

    DEFAULT_CSS = """
    TailView { height: 1fr; }
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
    TailView #tail-status { height: 1; padding: 0 1; margin-top: 1; background: $boost; }
    TailView #tail-lag { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("t", "toggle_tail", "Start/stop", id="tail.toggle"),
        Binding("h", "from_horizon", "From oldest", id="tail.horizon"),
        Binding("f", "edit_options", "From/key/grep", id="tail.options"),
        Binding("w", "save", "Export", id="tail.save"),
        Binding("e", "toggle_source", "GetRecords/EFO", id="tail.source"),
    ]

    # Followed from the app (data_bind): the stream the reader reads.
    stream: reactive[str | None] = reactive(None, init=False)

    class StartRequested(Message):
        """The operator asked to read with these options (the view starts its reader)."""

        def __init__(self, options: TailOptions) -> None:
            super().__init__()
            self.options = options

    class StopRequested(Message):
        """The operator asked to stop reading (the view cancels its reader)."""

    class PauseChanged(Message):
        def __init__(self, paused: bool) -> None:
            super().__init__()
            self.paused = paused

    def __init__(
        self,
        source: ConsoleBackend | None = None,
        *,
        stream: str | None = None,
        capacity: int = DEFAULT_CAPACITY,
        flush_interval: float = FLUSH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        save_dir: Path | None = None,
        mask: Callable[[DecodedRecord], DecodedRecord] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.set_reactive(TailView.stream, stream)
        # The config's masking, applied to what is read (so what is held, shown and exported is masked).
        self.mask = mask
        self.capacity = capacity
        self.flush_interval = flush_interval
        self.save_dir = save_dir
        self.running = False
        # The operator asked for a reading that has not been stopped (by t, another stream, or its end):
        # a reading cut short by the embedded server's restart goes on in the recreated stream.
        self.reading_wanted = False
        self._flush_timer: Timer | None = None
        self.lag: dict[str, int | None] = {}
        self.read_share: ReadShare | None = None  # the running reader's own share of each shard's budget
        self.received = 0  # records handed to the view, ever
        self._clock = clock
        self._pending = RecordWindow(capacity)  # never more than the ring can show
        self._rate_marks: deque[tuple[float, int]] = deque()
        self._last_message = IDLE_HINT
        self._shown_status: str | None = None  # what the status lines show now (see _render_status)
        self._shown_lag: str | None = None
        self.options = TailOptions(follow=True, mask=mask)
        self.held = RecordWindow(capacity)  # every record received (the ring shows those the Where box passes)
        self.where: RecordFilter | None = None
        # The temporary EFO consumer this tab registered (source, stream, name) and its deregistration once
        # begun: the reading's end or the app's exit, whichever comes first, starts it; both wait for it.
        self._temporary: tuple[ConsoleBackend, str, str] | None = None
        self._releasing: asyncio.Task | None = None

    def compose(self):
        # Where to start and what to show: the same options as `kconsole tail --from --key --grep`.
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
        yield Static("", id="tail-status")
        yield Static("", id="tail-lag")
        yield RecordRing(self.capacity, id="tail-ring")

    def on_mount(self) -> None:
        self._show_at_box()
        self.query_one("#tail-consumer", Input).display = False
        self._rate_marks.append((self._clock(), self.received))
        # The flush timer runs only while a reader runs or records wait: idle, a 100 ms timer would be
        # most of the console's CPU.
        self._flush_timer = self.set_interval(self.flush_interval, self.flush, pause=not self.running)
        self._render_status()

    @property
    def ring(self) -> RecordRing:
        return self.query_one(RecordRing)

    # --- feeding (from the reader's worker, on the loop) --------------------------------------------

    def add_batch(self, batch: TailBatch) -> None:
        """Queue a reader batch; shown at the next flush. O(len(batch)), no rendering."""
        self.lag[batch.shard_id] = batch.millis_behind
        if batch.ended:
            self.lag.pop(batch.shard_id, None)
        self.add_records(batch.records)

    def add_records(self, records: list[DecodedRecord]) -> None:
        self.received += len(records)
        self._pending.extend(records)  # bounded: at most the ring's capacity waits
        if self._flush_timer is not None and records:
            self._flush_timer.resume()

    def set_running(self, running: bool, message: str | None = None) -> None:
        """Whether a reader is running (and why it stopped, e.g. an error line)."""
        self.running = running
        if self._flush_timer is not None:
            if running:
                self._flush_timer.resume()
            else:
                self._flush_timer.pause()
                self.flush()  # what the reader queued last is shown
        if message is None:
            message = "t stops, space pauses, enter expands, w saves" if running else IDLE_HINT
        self._last_message = message
        if not running:
            self.lag.clear()
        self._render_status()

    def flush(self) -> None:
        """Move queued records into the ring and refresh once (the timer calls this every 100 ms)."""
        now = self._clock()
        self._rate_marks.append((now, self.received))
        while len(self._rate_marks) > 2 and now - self._rate_marks[0][0] > RATE_WINDOW:
            self._rate_marks.popleft()
        ring = self.ring
        if self._pending and not ring.paused:
            self.held.extend(self._pending)
            ring.extend(self._pending if self.where is None else filter(self.where, self._pending))
            self._pending.clear()
        self._render_status()
        if not self.running and not self._pending and self._flush_timer is not None:
            self._flush_timer.pause()

    @property
    def rate(self) -> float:
        """Records per second over the last few seconds."""
        if len(self._rate_marks) < 2:
            return 0.0
        (start, first), (end, last) = self._rate_marks[0], self._rate_marks[-1]
        return (last - first) / (end - start) if end > start else 0.0

    def _render_status(self) -> None:
        ring = self.ring
        state = "paused" if ring.paused else (f"reading {self.describe_options()}" if self.running else "stopped")
        parts = [
            state,
            format_rate(self.rate, " rec/s"),
            f"{len(ring.records):,}/{ring.capacity:,} shown",
            f"{self.received:,} received",
        ]
        if self._pending and ring.paused:
            parts.append(f"{len(self._pending):,} waiting")
        if not ring.following:
            parts.append("cursor (end: follow)")
        # Update a Static only when its text changed: every update asks for a screen layout, and this
        # runs on a 100 ms timer even while the tab is hidden and nothing is being read.
        status = " · ".join(parts)
        if status != self._shown_status:
            self._shown_status = status
            self.query_one("#tail-status", Static).update(Text(status))
        # Under the figures: per-shard lag, then what the keys do now (or why reading stopped).
        lag = self.lag_text()
        if self.read_share is not None:  # what kconsole's own reads take of each shard's budget
            lag = f"{lag}\n{self.read_share.summary()}" if lag else self.read_share.summary()
        lag_line = f"{lag}\n{self._last_message}" if lag else self._last_message
        if lag_line != self._shown_lag:
            self._shown_lag = lag_line
            self.query_one("#tail-lag", Static).update(Text(lag_line))

    def lag_text(self) -> str:
        if not self.lag:
            return ""
        ordered = sorted(self.lag.items(), key=lambda item: -(item[1] or 0))
        return "lag  " + "  ".join(f"{short_shard_id(shard)} {format_lag(millis)}" for shard, millis in ordered)

    # --- saving -------------------------------------------------------------------------------------

    def action_save(self) -> None:
        from console.ui.screens.export import ExportScreen

        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.app.push_screen(
            ExportScreen(self._export_folder() / f"{self.stream or 'tail'}-{stamp}", len(self.ring.records)),
            self._export_chosen,
        )

    def _export_folder(self) -> Path:
        return self.save_dir or (data_dir() / "tails")

    def _export_chosen(self, choice) -> None:
        if choice is None:
            return
        output, scope, path = choice
        try:
            if Path(path).parent == self._export_folder():  # kconsole's own folder is made on first use
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            if scope == "held":
                count = self.export_held(output, Path(path))
                self.notify(f"exported {count} records to {path}")
            else:
                self._export_window(output, Path(path), self.read_options())
        except ConsoleError as error:
            self.notify(f"could not export: {error.message}", severity="error")
        except OSError as error:
            self.notify(f"could not export: {error}", severity="error")

    def export_held(self, output: str, path: Path) -> int:
        """The records shown (the Where box's pick of what is held) to `path`, under a temporary name until done."""
        records = list(self.ring.records)
        target = ExportTarget(str(path), directory=False)
        try:
            _write_export(target, output, records, header=True)
        except BaseException:
            target.discard()
            raise
        target.commit()
        return len(records)

    @work(exclusive=True, group="export", exit_on_error=False)
    async def _export_window(self, output: str, path: Path, options: TailOptions) -> None:
        """The whole From/To window (To empty: until now), read again and filtered, to `path`."""
        end = options.end if options.end.moment is not None else EndPosition(datetime.now(UTC))
        options = replace(options, follow=False, end=end, where=self.where)
        if self.source is None or not self.stream:
            self.notify("no stream open", severity="error")
            return
        try:
            target = ExportTarget(str(path), directory=False)
        except ConsoleError as error:
            self.notify(f"could not export: {error.message}", severity="error")
            return
        header = output == "csv"
        try:
            self.notify(f"exporting {self.stream} from {options.start.describe()} to {end.describe()} to {path}")
            async for batch in TailReader(self.source, self.stream, options).batches():
                _write_export(target, output, batch.records, header=header)
                header = False
            if header:
                _write_export(target, output, [], header=True)
        except BaseException as error:
            target.discard()
            if isinstance(error, ConsoleError):
                self.notify(f"export stopped: {error.message}", severity="error")
                return
            raise
        target.commit()
        self.notify(f"exported {target.records} records to {path}")

    # --- reading ------------------------------------------------------------------------------------

    def read_options(self) -> TailOptions:
        """The option row as TailOptions (follow: the view keeps reading); BadInput names the bad field."""
        choice = self.query_one("#tail-from", Select).value
        at_text = self.query_one("#tail-at", Input).value.strip()
        if choice == "at":
            if not at_text:
                raise BadInput("from 'at': type an ISO-8601 timestamp or a sequence number in the box")
            start = parse_start(at_text)
        else:
            start = parse_start(str(choice))
        key = self.query_one("#tail-key", Input).value.strip() or None
        if key is not None:
            validate_partition_key(key)
        grep = self.query_one("#tail-grep", Input).value or None
        to_text = self.query_one("#tail-to", Input).value.strip()
        end = parse_end(to_text, datetime.now(UTC)) if to_text else EndPosition()
        if end.moment is not None and start.timestamp is not None and end.moment < start.timestamp:
            raise BadInput(f"To {end.describe()} is before From {start.describe()}")
        # A To (even latest) makes a window: read it, then stop; without one the view keeps following.
        return TailOptions(start=start, partition_key=key, grep=grep, follow=not to_text, end=end, mask=self.mask)

    def apply_where(self, text: str) -> None:
        """Filter what is held (and what comes) with a JMESPath expression; empty shows everything."""
        try:
            self.where = RecordFilter(text, "Where") if text.strip() else None
        except ConsoleError as error:
            self.set_running(self.running, f"filter not applied: {error.message}")
            return
        ring = self.ring
        ring.clear()
        ring.extend(self.held if self.where is None else filter(self.where, self.held))
        shown = (
            f"{len(ring.records):,} of {len(self.held):,} held records pass {text.strip()!r}"
            if self.where
            else "filter cleared"
        )
        self.set_running(self.running, shown)

    def start_reading(self) -> None:
        """(Re)start with the options shown: the ring is cleared when reading from the past, so what is
        shown is exactly what the options select."""
        try:
            options = self.read_options()
        except ConsoleError as error:
            self.set_running(self.running, f"cannot start: {error.message}")
            return
        if self.running:
            self.post_message(self.StopRequested())
        if options.start.reads_history or options.partition_key or options.grep:
            self._pending.clear()  # records of the previous reading must not land after the clear
            self.held.clear()
            self.ring.clear()
        self.options = options
        self.post_message(self.StartRequested(options))
        self.ring.focus()

    def on_tail_view_start_requested(self, message: StartRequested) -> None:
        if not self.stream or self.source is None:
            self.set_running(False, "no stream open: press p to pick one")
        else:
            self.reading_wanted = True
            self._read(self.source, self.stream, message.options)

    def on_tail_view_stop_requested(self, _message: StopRequested) -> None:
        self.reading_wanted = False
        self.workers.cancel_group(self, "tail")
        self.set_running(False)

    def read_recreated_stream(self) -> None:
        """The embedded server came back empty with the stream recreated: a reading that was going on, or
        that stopped on the stream missing meanwhile, reads the new stream from its start (the old sequence
        numbers mean nothing there)."""
        if not self.reading_wanted:
            return
        self.workers.cancel_group(self, "tail")
        self.set_running(False, "the embedded server restarted: reading the recreated stream from its start")
        self.action_from_horizon()

    def watch_stream(self) -> None:
        self.reading_wanted = False
        if self.running:  # a reader reads the stream it was started on
            self.workers.cancel_group(self, "tail")
            self.set_running(False, "stopped: another stream was opened")

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def _read(self, source: ConsoleBackend, stream: str, options: TailOptions) -> None:
        # Whoever cancels this worker (a restart, t, another stream) says why it stopped; only a
        # reader that ends on its own says so here.
        worker = get_current_worker()
        self.set_running(True)
        try:
            await self._read_with(source, stream, options, worker)
        finally:
            await self._release_temporary()

    async def _read_with(self, source: ConsoleBackend, stream: str, options: TailOptions, worker) -> None:
        try:
            subscribe = await self._subscriptions(source, stream) if self.reads_with_efo else None
            reader = TailReader(
                source,
                stream,
                options,
                on_trouble=self._reader_trouble,
                subscribe=subscribe,
                read_share=ReadShare(getattr(self.app, "read_share", None)),
            )
            self.read_share = reader.read_share
            async for batch in reader.batches():
                if worker.is_cancelled:  # the cancel has not landed yet
                    return
                self.add_batch(batch)
            message = "reached the end of what the stream holds (t tails new records)"
            self.reading_wanted = False
        except ConsoleError as error:
            message = f"tail stopped: {error.message}"
        except Exception as error:  # a reader bug must say so on the tab, not stop it silently
            message = f"tail stopped: internal error: {type(error).__name__}: {printable(str(error))}"
        if not worker.is_cancelled:
            self.set_running(False, message)

    @property
    def reads_with_efo(self) -> bool:
        return self.query_one("#tail-source", Select).value == EFO

    async def _subscriptions(self, source: ConsoleBackend, stream: str) -> Subscribe:
        """SubscribeToShard as the consumer named in the box (checked first: one line on the tab), or,
        with the box empty, as a temporary consumer registered once the operator confirmed its price;
        deregistered when the reading ends or the app exits."""
        transport = getattr(source, "subscriptions", lambda: None)()
        if transport is None:
            raise BadInput("this source cannot read with enhanced fan-out: read with GetRecords")
        await transport.check()  # an endpoint without HTTP/2 is one line before anything is read
        name = self.query_one("#tail-consumer", Input).value.strip()
        if name:
            consumer_arn = await named_consumer_arn(source, stream, name)
        else:
            consumer_arn = await self._register_temporary(source, stream)
        return lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position)

    async def _register_temporary(self, source: ConsoleBackend, stream: str) -> str:
        """Prepared and run by console.lifecycle.actions as `kconsole tail --efo` does, after the price."""
        import os
        import socket

        from console.lifecycle import actions
        from console.reshard.actionlog import ActionLog
        from console.ui.screens.confirm import ConfirmByNameScreen

        name = temporary_consumer_name(socket.gethostname(), os.getpid(), datetime.now(UTC))
        shards = sum(1 for shard in await source.all_shards(stream) if shard.is_open)
        plan = await actions.prepare_register_consumer(source, stream, name)
        preview = f"{temporary_consumer_preview(name, stream, shards)}\n{plan.render()}"
        if not await self.app.push_screen_wait(ConfirmByNameScreen(stream, preview)):
            raise BadInput("EFO: cancelled, no consumer was registered (or type a registered consumer's name)")
        self._temporary = (source, stream, name)  # from here on it is deregistered, whatever happens
        await actions.run(source, plan, action_log=ActionLog.default(), progress=self._change_progress)
        kinesis: Any = source  # the consumer calls are the full backend's, not the views' protocol
        stream_arn = (await kinesis.describe_stream_summary(stream)).arn
        await until_active(kinesis, stream_arn, name)
        self.notify(f"registered the temporary consumer {name}; deregistered when the tab stops reading", title="tail")
        return (await kinesis.describe_stream_consumer(stream_arn, name))["ConsumerARN"]

    async def _release_temporary(self) -> None:
        """Deregister the temporary consumer, once: shielded, so the cancel that stops a reading (or the
        app's exit) does not cut the call short; the view's unmount waits for it."""
        if self._temporary is not None:
            source, stream, name = self._temporary
            self._temporary = None
            self._releasing = asyncio.create_task(self._deregister_temporary(source, stream, name))
        if self._releasing is not None and not self._releasing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._releasing)

    async def on_unmount(self) -> None:
        await self._release_temporary()
        if self._releasing is not None:
            await self._releasing

    async def _deregister_temporary(self, source: ConsoleBackend, stream: str, name: str) -> None:
        from console.lifecycle import actions
        from console.reshard.actionlog import ActionLog

        try:
            plan = await actions.prepare_deregister_consumer(source, stream, name)
            await actions.run(source, plan, action_log=ActionLog.default(), progress=self._change_progress)
        except ConsoleError as error:
            self.notify(f"could not deregister the temporary consumer {name}: {error.message}", severity="error")
            return
        self.notify(f"deregistered the temporary consumer {name}", title="tail")

    def _change_progress(self, text: str) -> None:
        if not text.startswith("calling"):
            self.notify(text, title="tail", timeout=5)

    def action_toggle_source(self) -> None:
        source = self.query_one("#tail-source", Select)
        source.value = GET_RECORDS if source.value == EFO else EFO

    def _reader_trouble(self, message: str) -> None:
        # The reader cannot reach a shard and retries on its own (or reads again): said in the status lines.
        self.set_running(self.running, message.removeprefix("tail: "))

    def action_toggle_tail(self) -> None:
        if self.running:
            self.post_message(self.StopRequested())
        else:
            self.start_reading()

    def action_from_horizon(self) -> None:
        self.query_one("#tail-from", Select).value = "trim-horizon"
        self.start_reading()

    def action_edit_options(self) -> None:
        self.query_one("#tail-from", Select).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "tail-start":
            event.stop()
            self.start_reading()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "tail-where":
            event.stop()
            self.apply_where(event.value)
            self.ring.focus()
            return
        if event.input.id in ("tail-at", "tail-to", "tail-key", "tail-grep", "tail-consumer"):
            event.stop()
            self.start_reading()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "tail-from":
            event.stop()
            self._show_at_box()
        elif event.select.id == "tail-source":
            event.stop()
            self.query_one("#tail-consumer", Input).display = event.value == EFO
            if self.running and (event.value != EFO or self.query_one("#tail-consumer", Input).value.strip()):
                self.start_reading()  # the options shown, read the other way

    def _show_at_box(self) -> None:
        self.query_one("#tail-at", Input).display = self.query_one("#tail-from", Select).value == "at"

    def on_key(self, event) -> None:
        # Escape from an option box goes back to the records, where t/h/w/f work (not to the tab strip).
        if event.key == "escape" and (
            self.query_one("#tail-options").has_focus_within or self.query_one("#tail-filters").has_focus_within
        ):
            self.ring.focus()
            event.stop()

    def describe_options(self) -> str:
        options = self.options
        parts = [f"from {options.start.describe()}"]
        if options.end.moment is not None or not options.follow:
            parts.append(f"to {options.end.describe()}")
        if options.partition_key is not None:
            parts.append(f"key {printable(options.partition_key)}")
        if options.grep is not None:
            parts.append(f"grep {printable(repr(options.grep))}")
        return ", ".join(parts)

    def on_tail_view_pause_changed(self, _message: PauseChanged) -> None:
        self._render_status()


def _write_export(target: ExportTarget, output: str, records: list[DecodedRecord], *, header: bool = False) -> None:
    """Records to an export file in one of `EXPORT_FORMATS` (raw: length-prefixed; CSV: the default columns)."""
    if output == "jsonl":
        target.write(b"".join(encode_jsonl(record) for record in records), len(records))
    elif output == "csv":
        encoder = CsvEncoder(parse_fields(None))
        target.write((encoder.header() if header else b"") + b"".join(encoder.encode(r) for r in records), len(records))
    elif output == "raw":
        target.write(b"".join(encode_length_prefixed(record) for record in records), len(records))
    else:
        raise BadInput(f"export formats are {', '.join(EXPORT_FORMATS)}; got {output!r}")
