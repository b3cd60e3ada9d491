"""The tail view: a bounded ring of the last N decoded records, fed in batches, never blocking the UI.

The view runs its own reader: a `console.read.tail.TailReader` in a worker on the view (started by t
or h, restarted with new options, cancelled by t, by another stream being opened, or on quit) hands
each `TailBatch` to `TailView.add_batch` (cheap: it only queues). Every `flush_interval` (100 ms) the
queue is moved into the ring in one step and the screen is refreshed once, so 50k records/s cost
ten refreshes a second, not 50k. Only visible lines are rendered (console.ui.panels.tail_ring).

Two option rows above the records (console.ui.panels.tail_options) set where to start and stop, a
partition-key and a grep filter, as `kconsole tail --from --to --key --grep`. The Where box takes a
JMESPath filter (`kconsole tail --where`) and re-filters the records held, without reading again: what
the box shows is what filters, once the typing rests (enter and Start apply it at once).

Keys (when the record list has focus): the ring's own (move, expand, pause), w exports (JSON lines, CSV
or raw; what is held, or the whole From/To window read again: console.ui.panels.tail_export), t starts
(with the options shown) or stops reading, h starts reading from the oldest record (trim horizon),
f moves to the options (escape comes back), e switches GetRecords / EFO (console.ui.efo_consumer),
P shows the profile of the records shown in their place (console.ui.panels.tail_profile).
The app's mask (console.read.masking) is applied by the reader while the app's `masking` is on.
Starting and stopping are `StartRequested(options)` / `StopRequested()` messages the view posts and
acts on itself; they bubble on, so the app (or a test) sees what the operator asked for.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive, var
from textual.timer import Timer
from textual.widgets import Button, DataTable, Input, Select, Static
from textual.worker import Worker, get_current_worker

from console.backend.protocol import ConsoleBackend
from console.errors import ConsoleError
from console.read.decoding import DecodedRecord
from console.read.printable import printable
from console.read.share import EFO_READ_COST, ReadShare
from console.read.tail import TailBatch, TailOptions, TailReader
from console.read.where import RecordFilter
from console.read.window import RecordWindow
from console.ui.efo_consumer import EfoConsumer
from console.ui.format import format_rate, short_shard_id
from console.ui.panels.tail_export import export_records, export_window
from console.ui.panels.tail_options import (
    EFO,
    GET_RECORDS,
    OPTION_ROWS_CSS,
    describe_options,
    option_rows,
    options_from_rows,
)
from console.ui.panels.tail_profile import ProfileView
from console.ui.panels.tail_ring import DEFAULT_CAPACITY, RecordRing
from console.ui.source import CloudWatchReading
from console.userdirs import data_dir
from console.words import counted

FLUSH_INTERVAL = 0.1
RATE_WINDOW = 3.0  # seconds of history behind the records/s figure
WHERE_SETTLE = 0.3  # seconds the Where box rests before what it shows filters the records
IDLE_HINT = "t starts (options above, f edits them), h reads from the oldest"

EFO_OFFER = "e reads with EFO, without sharing"  # a throttled reading's offer


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


class TailView(Vertical):
    """Status line (records/s, per-shard lag, state) over the record ring. Feed it with `add_batch`."""

    DEFAULT_CSS = (
        OPTION_ROWS_CSS
        + """
    TailView { height: 1fr; }
    TailView #tail-status { height: 1; padding: 0 1; margin-top: 1; background: $boost; }
    TailView #tail-lag { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    )

    BINDINGS = [
        Binding("t", "toggle_tail", "Start/stop", id="tail.toggle"),
        Binding("h", "from_horizon", "From oldest", id="tail.horizon"),
        Binding("f", "edit_options", "From/key/grep", id="tail.options"),
        Binding("w", "save", "Export", id="tail.save"),
        Binding("e", "toggle_source", "GetRecords/EFO", id="tail.source"),
        Binding("P", "toggle_profile", "Profile", key_display="P", id="tail.profile"),
    ]

    # Followed from the app (data_bind): the stream the reader reads, and whether the mask is applied.
    stream: reactive[str | None] = reactive(None, init=False)
    masking: reactive[bool] = reactive(True, init=False)
    # Followed from the app too: the stream's CloudWatch metrics (readers throttled while the tab polls:
    # it backs off).
    cloudwatch: var[CloudWatchReading | None] = var(None, init=False)

    class StartRequested(Message):
        """The operator asked to read with these options (the view starts its reader)."""

        def __init__(self, options: TailOptions) -> None:
            super().__init__()
            self.options = options

    class StopRequested(Message):
        """The operator asked to stop reading (the view cancels its reader)."""

    def __init__(
        self,
        backend: ConsoleBackend | None = None,
        *,
        stream: str | None = None,
        capacity: int = DEFAULT_CAPACITY,
        flush_interval: float = FLUSH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        save_dir: Path | None = None,
        mask: Callable[[DecodedRecord], DecodedRecord] | None = None,
        masking: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self.set_reactive(TailView.stream, stream)
        # The config's masking, applied to what is read (so what is held, shown and exported is masked)
        # while the app's `masking` is on.
        self.mask_rules = mask
        self.set_reactive(TailView.masking, masking)
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
        self.options = TailOptions(follow=True, mask=self.mask)
        self.held = RecordWindow(capacity)  # every record received (the ring shows those the Where box passes)
        self.where: RecordFilter | None = None
        self._where_text = ""  # the Where box's text last applied (or refused): what it shows filters
        self._where_timer: Timer | None = None  # applies the box once the typing rests
        self._profile_stale = False  # records came since the profile (P) was made
        self.efo_reading = False  # the running reader subscribes (its reads take nothing of that budget)
        # The EFO consumer it reads as, and a temporary one's deregistration at the reading's end or the app's exit.
        self.efo = EfoConsumer(self, "tail")

    def compose(self) -> ComposeResult:
        # Where to start and what to show: the same options as `kconsole tail --from --key --grep`.
        yield from option_rows()
        yield Static("", id="tail-status")
        yield Static("", id="tail-lag")
        yield RecordRing(self.capacity, id="tail-ring")
        yield ProfileView(clock=self._clock, id="tail-profile")

    def on_mount(self) -> None:
        self._show_at_box()
        self.query_one("#tail-consumer", Input).display = False
        self.query_one(ProfileView).display = False
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
            message = "t stops, space pauses, enter expands, w saves, P profiles" if running else IDLE_HINT
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
            self._profile_stale = True
        if self._profile_stale and self.profiling and (self.profile_view.due() or not self.running):
            self.show_profile()
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
            cost = EFO_READ_COST if self.efo_reading else self.read_share.summary(EFO_OFFER)
            lag = f"{lag}\n{cost}" if lag else cost
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

    def _export_chosen(self, choice: tuple[str, str, str] | None) -> None:
        if choice is None:
            return
        output, scope, path = choice
        try:
            if Path(path).parent == self._export_folder():  # kconsole's own folder is made on first use
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            if scope == "held":
                count = self.export_held(output, Path(path))
                self.notify(f"exported {counted(count, 'record')} to {path}")
            else:
                self._export_window(output, Path(path), self.read_options())
        except ConsoleError as error:
            self.notify(f"could not export: {error.message}", severity="error")
        except OSError as error:
            self.notify(f"could not export: {error}", severity="error")

    def export_held(self, output: str, path: Path) -> int:
        """The records shown (the Where box's pick of what is held) to `path`, under a temporary name until done."""
        return export_records(list(self.ring.records), output, path)

    @work(exclusive=True, group="export", exit_on_error=False)
    async def _export_window(self, output: str, path: Path, options: TailOptions) -> None:
        """The whole From/To window (To empty: until now), read again and filtered, to `path`."""
        if self.backend is None or not self.stream:
            self.notify("no stream open", severity="error")
            return
        await export_window(self.backend, self.stream, options, self.where, output, path, self.notify)

    # --- reading ------------------------------------------------------------------------------------

    def read_options(self) -> TailOptions:
        """The option rows as TailOptions (follow: the view keeps reading); BadInput names the bad field."""
        return options_from_rows(self, self.mask)

    def apply_where(self, text: str) -> None:
        """Filter what is held (and what comes) with a JMESPath expression; empty shows everything. A bad
        one changes nothing, and the status lines say which filter still applies."""
        self._where_text = text.strip()
        try:
            self.where = RecordFilter(text, "Where") if text.strip() else None
        except ConsoleError as error:
            still = f"; still {self.where.expression.strip()!r}" if self.where is not None else ""
            self.set_running(self.running, f"filter not applied: {error.message}{still}")
            return
        ring = self.ring
        ring.clear()
        ring.extend(self.held if self.where is None else filter(self.where, self.held))
        if self.profiling:
            self.show_profile()
        shown = (
            f"{len(ring.records):,} of {len(self.held):,} held records pass {text.strip()!r}"
            if self.where
            else "filter cleared"
        )
        self.set_running(self.running, shown)

    def start_reading(self) -> None:
        """(Re)start with the options shown: the ring is cleared when reading from the past, so what is
        shown is exactly what the options select."""
        self._apply_where_box()  # typed but not yet applied: read with what the box shows
        try:
            if self._where_text and (self.where is None or self.where.expression.strip() != self._where_text):
                RecordFilter(self._where_text, "Where")  # refused: its error names the box
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
            if self.profiling:
                self.show_profile()
        self.options = options
        self.post_message(self.StartRequested(options))
        self._focus_records()

    def on_tail_view_start_requested(self, message: StartRequested) -> None:
        if not self.stream or self.backend is None:
            self.set_running(False, "no stream open: press p to pick one")
        else:
            self.reading_wanted = True
            self._read(self.backend, self.stream, message.options)

    def on_tail_view_stop_requested(self, _message: StopRequested) -> None:
        self.reading_wanted = False
        self.workers.cancel_group(self, "tail")
        self.set_running(False)

    # --- the profile (P) ----------------------------------------------------------------------------

    @property
    def profile_view(self) -> ProfileView:
        return self.query_one(ProfileView)

    @property
    def profiling(self) -> bool:
        """The profile is shown in place of the records."""
        return bool(self.profile_view.display)

    def action_toggle_profile(self) -> None:
        """The profile of the records shown, in place of them; P again goes back to the records."""
        profiling = not self.profiling
        self.profile_view.display = profiling
        self.ring.display = not profiling
        if profiling:
            self.show_profile()
        self._focus_records()
        self.set_running(self.running, "P: back to the records" if profiling else None)

    def show_profile(self) -> None:
        self._profile_stale = False
        self.profile_view.show(self.ring.records)

    def _focus_records(self) -> None:
        (self.profile_view.query_one(DataTable) if self.profiling else self.ring).focus()

    @property
    def mask(self) -> Callable[[DecodedRecord], DecodedRecord] | None:
        return self.mask_rules if self.masking else None

    def watch_masking(self, masking: bool) -> None:
        """Off: readings started from now on show records as they are. On again: what was read unmasked
        is dropped, and a reading going on starts again, masked."""
        if self.mask_rules is None:
            return
        if not masking:
            self.set_running(self.running, "masking off: t (twice while reading) reads again, unmasked")
            return
        self._pending.clear()
        self.held.clear()
        self.ring.clear()
        if self.profiling:
            self.show_profile()
        if self.running:
            self.start_reading()
        self.set_running(self.running, "masking on: the records read unmasked were cleared")

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
        """A reader reads the stream it was started on: another stream opened stops it, and the records
        held, their figures and the profile (the stream before's) leave the screen; the options stay."""
        self.reading_wanted = False
        stopped = self.running
        self.workers.cancel_group(self, "tail")
        self.running = False
        self._pending.clear()
        self.held.clear()
        self.lag.clear()
        self.read_share = None
        self.received = 0
        self._rate_marks.clear()
        self._rate_marks.append((self._clock(), 0))
        if not self.is_mounted:
            return
        self.ring.clear()
        if self.profiling:
            self.show_profile()
        self.set_running(False, "stopped: another stream was opened" if stopped else None)

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def _read(self, backend: ConsoleBackend, stream: str, options: TailOptions) -> None:
        # Whoever cancels this worker (a restart, t, another stream) says why it stopped; only a
        # reader that ends on its own says so here.
        worker = get_current_worker()
        self.set_running(True)
        try:
            await self._read_with(backend, stream, options, worker)
        finally:
            await self.efo.release()

    async def _read_with(
        self, backend: ConsoleBackend, stream: str, options: TailOptions, worker: Worker[None]
    ) -> None:
        try:
            consumer = self.query_one("#tail-consumer", Input).value.strip()
            subscribe = await self.efo.subscriptions(backend, stream, consumer) if self.reads_with_efo else None
            reader = TailReader(
                backend,
                stream,
                options,
                on_trouble=self._reader_trouble,
                subscribe=subscribe,
                read_share=ReadShare(getattr(self.app, "read_share", None)),
            )
            self.read_share, self.efo_reading = reader.read_share, subscribe is not None
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

    async def on_unmount(self) -> None:
        await self.efo.closed()

    def watch_cloudwatch(self, reading: CloudWatchReading | None) -> None:
        """The stream's ReadProvisionedThroughputExceeded rose while the tab polls: it gives the stream's
        readers back some of the shards' budget (and says so, offering EFO)."""
        if self.read_share is not None and reading is not None and reading.metrics is not None:
            self.read_share.stream_throttled(reading.metrics.latest("ReadProvisionedThroughputExceeded"))

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

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "tail-where":
            event.stop()
            self._stop_where_timer()
            self._where_timer = self.set_timer(WHERE_SETTLE, self._apply_where_box)

    def _stop_where_timer(self) -> None:
        if self._where_timer is not None:
            self._where_timer.stop()
            self._where_timer = None

    def _apply_where_box(self) -> None:
        """What the Where box shows filters the records (nothing to do when it already does)."""
        self._stop_where_timer()
        text = self.query_one("#tail-where", Input).value
        if text.strip() != self._where_text:
            self.apply_where(text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "tail-where":
            event.stop()
            self._stop_where_timer()
            self.apply_where(event.value)
            self._focus_records()
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

    def on_key(self, event: events.Key) -> None:
        # Escape from an option box goes back to the records, where t/h/w/f work (not to the tab strip).
        if event.key == "escape" and (
            self.query_one("#tail-options").has_focus_within or self.query_one("#tail-filters").has_focus_within
        ):
            self._focus_records()
            event.stop()

    def describe_options(self) -> str:
        return describe_options(self.options)

    def on_record_ring_pause_changed(self, _message: RecordRing.PauseChanged) -> None:
        self._render_status()
