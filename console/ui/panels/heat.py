"""Heat panel: a heat map of the shards over the last five minutes (console.ui.widgets.heat_map),
the stream total, the stream's CloudWatch metrics of the last 30 minutes, and the top keys (and, with
enhanced monitoring, the shard-level CloudWatch metrics) of the selected shard.

The panel runs its own work while it is shown: `console.heat.sampler.HeatSampler` in one worker, a
thread with its own event loop and its own backend (opened again the way the app's was,
`opened_again`), so that GetRecords' calls, their decoding, the counting and each second's reading
(`ReadingMaker`) never hold up a key; each `Reading` is posted to the panel, which only shows it (with
EFO, whose subscriptions live on the app's backend, the sampler runs on the UI's loop; the sampler's run,
its readings and their messages are in console.ui.panels.heat_sampling); a stream with more open shards than
`shards_per_second` is read in turn (console.heat.rotation: the selected shard and the hottest every
second, the rest once a pass), the header says how much a pass covers and each row how old its
figures are. Only the rows of shards read since the last snapshot are built again, so a
10,000-shard stream costs a second of sampling what a few dozen shards do, and the selected shard's CloudWatch metrics
in another (only that shard: a 10,000-shard stream costs no more than one; fetched when the selection
settles, and again each minute: console.ui.panels.heat_shard_metrics, with e's enhanced monitoring). Hiding the panel, or another stream being opened, cancels both.
What the shard table and the ribbon need leaves as messages the app routes: `HeatChanged` (the live
figures per shard) and `HeatStopped` (no sampler runs: the figures are stale). The stream-level
CloudWatch metrics come from the app's once-a-minute fetch (its `cloudwatch`, followed here), and each
shard poll's summary (the app's `view`, followed too) says which shard-level metrics enhanced
monitoring has on.

It samples with GetRecords within kconsole's read share (the header's last line says what it takes),
or, switched with f, from enhanced fan-out's pushed events as a temporary consumer (console.ui.efo_consumer).

Keys: up/down (or k/j) select a shard, h toggles hottest-first order, f switches GetRecords/EFO, e turns
on CloudWatch enhanced monitoring (the app asks for the stream name first; greyed out when read-only).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive, var
from textual.widget import Widget
from textual.widgets import Static

from console.backend.protocol import CLOUDWATCH, OWN_LOOP, ConsoleBackend
from console.errors import ConsoleError
from console.heat.capacity import MetricSeries, enabled_shard_metrics
from console.heat.cloudwatch import SHARD_LEVEL_METRICS
from console.heat.rotation import DEFAULT_SHARDS_PER_SECOND
from console.heat.sampler import HeatSampler
from console.heat.snapshot import ShardHeatSnapshot, StreamHeatSnapshot
from console.heat.stream_heat import StreamHeat
from console.read.efo import Subscribe
from console.read.printable import printable
from console.topology.model import StreamSummary
from console.ui.efo_consumer import EfoConsumer
from console.ui.panels.heat_sampling import (
    Reading,
    ReadingPosted,
    SamplerRetried,
    SamplingFailed,
    sample,
    sample_in_this_thread,
)
from console.ui.panels.heat_shard_metrics import (
    enable_enhanced_monitoring,
    show_selected_shard_metrics,
    watch_selected_shard_metrics,
)
from console.ui.panels.heat_text import HeatRows, cloudwatch_text, top_keys_text, total_text
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.source import CloudWatchReading, StreamView
from console.ui.widgets.heat_map import HeatMap, HeatRow, legend
from console.ui.widgets.metric_lines import capacity_text
from console.ui.widgets.shard_columns import ShardHeat


class HeatPanel(Widget, can_focus=True):
    DEFAULT_CSS = """
    HeatPanel { height: 1fr; }
    HeatPanel #heat-total { height: auto; }
    HeatPanel #heat-legend { height: auto; }
    HeatPanel #heat-map { height: 1fr; min-height: 5; overflow-x: hidden; }
    HeatPanel #heat-capacity { height: auto; margin-bottom: 1; }
    HeatPanel #heat-keys { height: auto; max-height: 35%; }
    HeatPanel #heat-shard-capacity { height: auto; }
    """

    BINDINGS = [
        Binding("up,k", "select(-1)", "Previous shard", show=False),
        Binding("down,j", "select(1)", "Next shard", show=False),
        Binding("h", "toggle_order", "Hottest first", id="heat.order"),
        Binding("f", "toggle_source", "GetRecords/EFO", id="heat.source"),
        # On a short terminal the selected shard's keys sit below the map: the keyboard scrolls to them too.
        Binding("pagedown", "scroll_view(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_view(-1)", "Scroll up", show=False),
        # An app key (greyed out there when read-only); the panel asks for the name and makes the call.
        Binding("e", "app.enable_monitoring", "Enhanced monitoring", id="heat.monitoring"),
    ]

    # Followed from the app (data_bind): the stream sampled, its last poll (the summary says which
    # shard-level metrics enhanced monitoring has on) and its stream-level CloudWatch metrics.
    stream: reactive[str | None] = reactive(None, init=False)
    view: var[StreamView | None] = var(None, init=False, always_update=True)
    cloudwatch: var[CloudWatchReading | None] = var(None, init=False)
    masking: reactive[bool] = reactive(True, init=False)  # the app's: key_mask applies while on

    class Shown(Message):
        """The panel became visible (it starts sampling)."""

    class Hidden(Message):
        """The panel was hidden (it stops sampling)."""

    class SelectionChanged(Message):
        """Another shard is selected in the heat map."""

        def __init__(self, shard_id: str | None) -> None:
            super().__init__()
            self.shard_id = shard_id

    class HeatChanged(Message):
        """A new reading of `stream`: the live figures per shard (the last few seconds)."""

        def __init__(self, stream: str, heat: dict[str, ShardHeat]) -> None:
            super().__init__()
            self.stream = stream
            self.heat = heat

    class HeatStopped(Message):
        """No sampler runs any more: figures shown elsewhere no longer update."""

    class MonitoringEnabled(Message):
        """Enhanced monitoring was switched on for `stream` (its summary now lists the metrics)."""

        def __init__(self, stream: str) -> None:
            super().__init__()
            self.stream = stream

    def __init__(
        self,
        backend: ConsoleBackend | None = None,
        *,
        id: str | None = None,
        shards_per_second: int = DEFAULT_SHARDS_PER_SECOND,
        key_mask: Callable[[str], str] | None = None,
        masking: bool = True,
    ) -> None:
        super().__init__(id=id)
        self.backend = backend
        self.key_mask = key_mask  # how partition keys are shown when masked (mask_keys: keys can be personal data)
        self.set_reactive(HeatPanel.masking, masking)
        self.snapshot: StreamHeatSnapshot | None = None
        self.hottest_first = False
        self.selected_shard: str | None = None
        # More open shards than this: they are read in turn (taken when the sampler starts).
        self.shards_per_second = shards_per_second
        self.coverage = ""  # what a second of sampling covers (the header's second line when rotating)
        self.read_cost = ""  # what kconsole's own reads take of each shard's budget (the header's last line)
        self.rotating = False
        self.reads_with_efo = False  # f: sample from enhanced fan-out's pushed events
        self.efo = EfoConsumer(self, "heat")
        # The running sampler and the loop it runs on (a worker thread's, or the UI's with EFO).
        self._sampler: HeatSampler | None = None
        self._sampler_loop: asyncio.AbstractEventLoop | None = None
        self._run = 0  # which sampling run the readings shown come from (a stopped run's are dropped)
        self._sampling_done = threading.Event()  # set when the last sampler's thread has stopped
        self._sampling_done.set()
        self._ordered: list[ShardHeatSnapshot] | None = None  # ordered_shards of this snapshot and order
        self._positions: dict[str, int] = {}  # shard id -> its place in _ordered
        # Per shard, the snapshot a row (or the live figures) was made from: made again only when it changes.
        self._rows: dict[str, tuple[ShardHeatSnapshot, HeatRow]] = {}
        # Per Static: what it shows, at what width, in how many lines.
        self._texts: dict[str, tuple[Text, int, int]] = {}
        self._shown = False
        self._history: StreamHeat | None = None  # the last sampler's window, carried on when shown again
        self._shard_metrics_on: dict[str, str] = {}  # enhanced monitoring's shard-level metrics and statistics
        self._shard_capacity: dict[str, MetricSeries] = {}  # selected shards fetched in the last minute
        self._wake = asyncio.Event()  # the selection or enhanced monitoring changed
        self._auto_distribution = False  # AUTO: keys are only as sent; no split by them is suggested

    def compose(self) -> ComposeResult:
        # Scrolls (mouse wheel) on a short terminal rather than cutting the metrics off; the keys
        # stay with the panel, which keeps the focus.
        with VerticalScroll(can_focus=False):
            yield Static("heat: waiting for the sampler...", id="heat-total")
            yield Static(id="heat-legend")
            yield HeatMap(id="heat-map")
            yield Static(cloudwatch_text(self.cloudwatch), id="heat-capacity")
            yield Static(id="heat-keys")
            yield Static(id="heat-shard-capacity")

    # ---- its work ---------------------------------------------------------------------------

    def on_show(self, _event: events.Show) -> None:
        self._shown = True
        self.post_message(self.Shown())
        self._start_work()

    def on_hide(self, _event: events.Hide) -> None:
        self._shown = False
        self.post_message(self.Hidden())
        self._stop_work()
        self.post_message(self.HeatStopped())

    def watch_stream(self) -> None:
        self._stop_work()
        self._history = None  # another stream's history is not this one's
        self._shard_capacity = {}
        if self.is_mounted:
            self._show_no_snapshot(Text("heat: waiting for the sampler..."))
        if self._shown:
            self._start_work()

    def _start_work(self) -> None:
        if self.stream is None or self.backend is None:
            return
        self._sample(self.backend, self.stream)
        if CLOUDWATCH in self.backend.capabilities:
            self._watch_shard_capacity(self.backend, self.stream)

    def _stop_work(self) -> None:
        # The sampler's readers stop with the worker (HeatSampler.__aexit__ awaits them all); what its
        # thread posted meanwhile is not shown.
        self._run += 1
        self.workers.cancel_group(self, "heat")
        self.workers.cancel_group(self, "heat-cloudwatch")

    async def on_unmount(self) -> None:
        await self.efo.closed()

    def action_toggle_source(self) -> None:
        self.reads_with_efo = not self.reads_with_efo
        self.notify(f"heat: sampling with {'enhanced fan-out' if self.reads_with_efo else 'GetRecords'}", timeout=4)
        if self._shown and self.stream is not None and self.backend is not None:
            self._sample(self.backend, self.stream)  # exclusive: the running sampler stops first

    async def _subscriptions(self, backend: ConsoleBackend, stream: str) -> Subscribe | None:
        """With EFO: a temporary consumer's subscriptions, once the price is confirmed. Cancelled or
        refused (an endpoint without HTTP/2), it samples with GetRecords again and says why."""
        if not self.reads_with_efo:
            return None
        try:
            return await self.efo.subscriptions(backend, stream, "")
        except ConsoleError as error:
            self.reads_with_efo = False
            self.notify(f"heat: {error.message}; sampling with GetRecords", severity="warning", timeout=8)
            return None

    def _sample(self, backend: ConsoleBackend, stream: str) -> None:
        """Start sampling `stream` (the running sampler stops first). GetRecords' calls, their decoding
        and the counting run in a worker thread on its own loop and backend, so keys never wait behind
        them; only the readings come to the UI's loop. With EFO (its subscriptions live on the app's
        backend), or a source that cannot be opened again, the sampler runs on the UI's loop."""
        self._run += 1
        if self.reads_with_efo or OWN_LOOP not in backend.capabilities:
            self._sample_on_loop(backend, stream, self._run)
            return
        previous, self._sampling_done = self._sampling_done, threading.Event()
        self._sample_in_thread(backend, stream, self._run, previous, self._sampling_done)

    @work(exclusive=True, group="heat", exit_on_error=False)
    async def _sample_on_loop(self, backend: ConsoleBackend, stream: str, run: int) -> None:
        try:
            subscribe = await self._subscriptions(backend, stream)
            await sample(self, backend, stream, subscribe, lambda reading: self._take_reading(run, reading))
        except ConsoleError as error:
            self._sampling_failed(run, stream, error.message)
        finally:
            await self.efo.release()

    @work(thread=True, exclusive=True, group="heat", exit_on_error=False)
    async def _sample_in_thread(
        self, backend: ConsoleBackend, stream: str, run: int, previous: threading.Event, done: threading.Event
    ) -> None:
        """The sampler on this thread's own loop and backend; each reading is posted to the panel."""
        await sample_in_this_thread(self, backend, stream, run, previous, done)

    @on(ReadingPosted)
    def _reading_posted(self, message: ReadingPosted) -> None:
        self._take_reading(message.run, message.reading)

    @on(SamplingFailed)
    def _failure_posted(self, message: SamplingFailed) -> None:
        self._sampling_failed(message.run, message.stream, message.message)

    @on(SamplerRetried)
    def _retry_posted(self, message: SamplerRetried) -> None:
        if message.run == self._run and self.backend is not None and self.backend.on_retry is not None:
            self.backend.on_retry(message.event)

    def _take_reading(self, run: int, reading: Reading) -> None:
        if run != self._run or reading.stream != self.stream:
            return  # a sampler stopped since: its last readings are not shown
        self.rotating, self.coverage, self.read_cost = reading.rotating, reading.coverage, reading.read_cost
        self._show_snapshot(
            reading.snapshot,
            positions=reading.positions,
            total=reading.total if reading.hottest_first == self.hottest_first else None,
        )
        self.post_message(self.HeatChanged(reading.stream, reading.figures))

    def _sampling_failed(self, run: int, stream: str, message: str) -> None:
        if run != self._run:
            return
        self.notify(f"heat: {message}", severity="error", timeout=8)
        if stream == self.stream:  # the toast goes; the panel keeps saying why it has no rows
            self._show_no_snapshot(Text(f"heat: {printable(message)}", style="bold red"))
        self.post_message(self.HeatStopped())

    @work(exclusive=True, group="heat-cloudwatch", exit_on_error=False)
    async def _watch_shard_capacity(self, backend: ConsoleBackend, stream: str) -> None:
        """The selected shard's CloudWatch metrics, in a loop of their own until cancelled."""
        await watch_selected_shard_metrics(self, backend, stream)

    def enable_monitoring(self) -> None:
        """Turn on shard-level enhanced monitoring, once the operator typed the stream name (it is a
        change to the stream, billed per shard)."""
        stream, backend = self.stream, self.backend
        if not stream or backend is None:
            self.notify("no stream open: press p to pick one", severity="warning")
            return
        what = f"enable shard-level enhanced monitoring ({', '.join(SHARD_LEVEL_METRICS)}; billed per shard)"

        def confirmed(ok: bool | None) -> None:
            if ok and stream == self.stream:
                self._enable_monitoring(backend, stream, SHARD_LEVEL_METRICS)
            else:
                self.notify("enhanced monitoring: cancelled, nothing was called", timeout=4)

        self.app.push_screen(ConfirmByNameScreen(stream, what), confirmed)

    @work(exclusive=True, group="heat-monitoring", exit_on_error=False)
    async def _enable_monitoring(self, backend: ConsoleBackend, stream: str, metrics: tuple[str, ...]) -> None:
        """Prepared and run by console.lifecycle.actions, as `kconsole heat --enable-enhanced-monitoring`."""
        if await enable_enhanced_monitoring(self, backend, stream, metrics):
            self.post_message(self.MonitoringEnabled(stream))

    # ---- fed by its workers and the app's polls -----------------------------------------------

    def watch_masking(self, masking: bool) -> None:
        if masking and self.snapshot is not None:  # the keys shown unmasked go at once, not at the next second
            self.update_snapshot(self.snapshot)

    def watch_view(self, view: StreamView | None) -> None:
        if view is not None and view.summary.name == self.stream:
            self.show_summary(view.summary)

    def show_summary(self, summary: StreamSummary) -> None:
        """A shard poll's summary: which shard-level metrics enhanced monitoring has on."""
        self._auto_distribution = summary.auto_distribution
        enabled = enabled_shard_metrics(summary.enhanced_metrics)
        if enabled != self._shard_metrics_on:
            self._shard_metrics_on = enabled
            self._wake.set()
            if self._sampler is not None:
                self._sampler.rank_by_cloudwatch = self._cloudwatch_ranks()

    def _cloudwatch_ranks(self) -> bool:
        """CloudWatch can rank the shards a rotating sampler reads first: it has every shard's load."""
        has = self.backend is not None and CLOUDWATCH in self.backend.capabilities
        return has and {"IncomingRecords", "IncomingBytes"} <= self._shard_metrics_on.keys()

    def update_snapshot(self, snapshot: StreamHeatSnapshot) -> None:
        if self.key_mask is not None and self.masking:
            snapshot = snapshot.with_keys(self.key_mask)
        self._show_snapshot(snapshot)

    def _show_snapshot(
        self, snapshot: StreamHeatSnapshot, *, positions: dict[str, int] | None = None, total: Text | None = None
    ) -> None:
        """Show a snapshot; `positions` (each shard's place in key-space order) and `total` (the header)
        when its reading worked them out already."""
        self.snapshot = snapshot
        self._ordered = None
        if positions is not None and not self.hottest_first:
            self._ordered, self._positions = list(snapshot.shards), positions
        if self.selected_shard not in self._ordered_positions():
            hottest = snapshot.hottest
            self._select(hottest.shard_id if hottest else (snapshot.shards[0].shard_id if snapshot.shards else None))
        self._render_snapshot(total)

    def watch_cloudwatch(self, reading: CloudWatchReading | None) -> None:
        """The stream-level CloudWatch metrics (no metrics: the reading's problem says why)."""
        if self.is_mounted:
            self.query_one("#heat-capacity", Static).update(cloudwatch_text(reading))
        sampler, loop = self._sampler, self._sampler_loop
        if sampler is not None and loop is not None and reading is not None and reading.metrics is not None:
            # Readers refused while kconsole samples: it gives them back some of the shards' budget
            # (on the sampler's own loop, which may be its thread's).
            refused = reading.metrics.latest("ReadProvisionedThroughputExceeded")
            with contextlib.suppress(RuntimeError):  # its loop has just closed: nothing to give back
                loop.call_soon_threadsafe(sampler.read_share.stream_throttled, refused)

    def show_shard_capacity(self, shard_id: str | None, metrics: MetricSeries | None, note: str | None = None) -> None:
        """The selected shard's shard-level CloudWatch metrics, or a line saying why there are none
        (`note`; empty: nothing to say)."""
        if metrics is None:
            self._show_text("#heat-shard-capacity", Text(printable(note or ""), style="dim"))
            return
        shard = printable(shard_id or "")
        self._show_text(
            "#heat-shard-capacity",
            capacity_text(
                metrics,
                None,
                title=f"CloudWatch · {shard} · enhanced monitoring",
                empty=f"CloudWatch: no data for {shard} yet",
            ),
        )

    def _select(self, shard_id: str | None) -> None:
        if shard_id != self.selected_shard:
            self.selected_shard = shard_id
            if self._sampler is not None:
                self._sampler.selected = shard_id  # read every second from now on
            self.post_message(self.SelectionChanged(shard_id))
            if self.backend is not None and show_selected_shard_metrics(self):
                self._wake.set()

    @property
    def ordered_shards(self) -> list[ShardHeatSnapshot]:
        if self.snapshot is None:
            return []
        if self._ordered is None:
            self._ordered = self.snapshot.hottest_first() if self.hottest_first else list(self.snapshot.shards)
            self._positions = {}
        return self._ordered

    def _ordered_positions(self) -> dict[str, int]:
        ordered = self.ordered_shards
        if not self._positions and ordered:
            self._positions = {shard.shard_id: index for index, shard in enumerate(ordered)}
        return self._positions

    def _row(self, shard: ShardHeatSnapshot) -> HeatRow:
        made = self._rows.get(shard.shard_id)
        if made is not None and made[0] is shard:
            return made[1]
        row = HeatRow(
            shard.shard_id,
            shard.is_open,
            shard.recent_records_per_s,
            shard.recent_utilisation,
            shard.utilisation_series,
            shard.sampled_at,
        )
        self._rows[shard.shard_id] = (shard, row)
        return row

    def _render_snapshot(self, total: Text | None = None) -> None:
        snapshot = self.snapshot
        if snapshot is None or not self.is_mounted:
            return
        if total is None:
            total = total_text(
                snapshot,
                rotating=self.rotating,
                hottest_first=self.hottest_first,
                coverage=self.coverage,
                read_cost=self.read_cost,
            )
        self._show_text("#heat-total", total)
        heat_map = self.query_one(HeatMap)
        heat_map.show(
            HeatRows(self.ordered_shards, self._row),
            self.selected_shard,
            self._ordered_positions().get(self.selected_shard or ""),
            now=snapshot.window_end,
            ages=self.rotating,
        )
        self._show_text(
            "#heat-legend",
            Text.assemble(*((seg.text, seg.style or "") for seg in legend(heat_map.per_cell, ages=self.rotating))),
        )
        self._render_selected_keys()

    def _render_selection(self) -> None:
        """Another shard selected: the marker moves and its keys show (the rows are not made again)."""
        if self.snapshot is None or not self.is_mounted:
            return
        self.query_one(HeatMap).select(self.selected_shard, self._ordered_positions().get(self.selected_shard or ""))
        self._render_selected_keys()

    def _render_selected_keys(self) -> None:
        if self.snapshot is not None:
            self._show_text(
                "#heat-keys", top_keys_text(self.selected, self.snapshot.stream, auto=self.snapshot.auto_distribution)
            )

    def _show_no_snapshot(self, why: Text) -> None:
        """No figures of the stream now shown (another stream, or its sampler failed): nothing of the
        last snapshot stays on screen, and `why` says what is going on."""
        self.snapshot = None
        self._ordered = None
        self._positions = {}
        self._show_text("#heat-total", why)
        self._show_text("#heat-keys", Text(""))
        self.query_one(HeatMap).show((), None)

    def _show_text(self, selector: str, text: Text) -> None:
        """Update a Static each second without laying the screen out again (which repaints all of it)
        unless its text changed its height."""
        shown = self._texts.get(selector)
        if shown is not None and shown[0] == text:
            return
        widget = self.query_one(selector, Static)
        width = widget.content_region.width
        lines = len(text.wrap(self.app.console, width)) if width > 0 else 0
        self._texts[selector] = (text, width, lines)
        widget.update(text, layout=shown is None or width <= 0 or (width, lines) != shown[1:])

    def select_shard(self, shard_id: str) -> None:
        """Select a shard of the map (as a click on its row does)."""
        self._select(shard_id)
        self._render_selection()

    @on(HeatMap.RowClicked)
    def _row_clicked(self, event: HeatMap.RowClicked) -> None:
        self.select_shard(event.shard_id)

    @property
    def selected(self) -> ShardHeatSnapshot | None:
        position = self._ordered_positions().get(self.selected_shard or "")
        return None if position is None else self.ordered_shards[position]

    # ---- keys -------------------------------------------------------------------------------

    def action_select(self, step: int) -> None:
        ordered = self.ordered_shards
        if not ordered:
            return
        position = self._ordered_positions().get(self.selected_shard or "", 0)
        self._select(ordered[(position + step) % len(ordered)].shard_id)
        self._render_selection()

    def action_scroll_view(self, pages: int) -> None:
        view = self.query_one(VerticalScroll)
        if pages > 0:
            view.scroll_page_down(animate=False)
        else:
            view.scroll_page_up(animate=False)

    def action_toggle_order(self) -> None:
        self.hottest_first = not self.hottest_first
        self._ordered = None
        self._render_snapshot()
