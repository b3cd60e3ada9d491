"""The live console: header, key-space ribbon, and tabs (shards, lineage, placement, key tree,
producer, tail, heat, consumers).

The app keeps what is stream-wide: the layout, the keys, the selected shard, which stream is open,
and the two loops that follow the whole stream (the shard poll, and its CloudWatch metrics once a
minute). `stream` and `read_only` are reactives the panels follow (data_bind). Each panel runs its
own work in its own workers (the producer run, the tail reader, the heat sampler, the lease poll) and
posts typed messages for what other widgets need; the app routes them (heat and lag to the shard
table and the ribbon). Split, merge, rescale and the stream actions run through console.ui.changes,
given only the narrow objects they need. The shard poll and the lease poll share one lock, so they
never overlap.

The backend is injected (`source`: a console.backend.protocol.ConsoleBackend), so tests drive this
app against the embedded local Kinesis and the benchmark against a 10k-shard fake.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane, Tabs
from textual.worker import Worker, WorkerState

from console.backend.protocol import CLOUDWATCH, RETRY_EVENTS, ConsoleBackend
from console.errors import ConsoleError
from console.heat.capacity import CapacitySummary, stream_metrics, unavailable_reason
from console.topology.lineage import Lineage
from console.ui.bindings import APP_BINDINGS, MUTATING_ACTIONS, READ_ONLY_DISABLES
from console.ui.focus import FocusModel
from console.ui.format import short_shard_id
from console.ui.lazy_tabs import LazyPane
from console.ui.palette import ConsoleCommands
from console.ui.panels.lineage import LineageTree
from console.ui.panels.shards import ShardsPanel
from console.ui.screens.command_line import CommandLineHost, CommandLineScreen
from console.ui.source import (
    BIG_STREAM,
    ConnectionInfo,
    ListingSchedule,
    StreamView,
    describe_failure,
    fetch_stream,
    with_lineage,
)
from console.ui.startup import settle_heap, warm_lazy_imports
from console.ui.stream_display import PollFailed, StreamDisplay, StreamRefreshed
from console.ui.toasts import ToastsBehindDialogs
from console.ui.widgets.footer import CoalescingFooter
from console.ui.widgets.header import ConsoleHeader
from console.ui.widgets.ribbon import KeySpaceRibbon
from console.ui.widgets.shard_table import ShardHeat, ShardTable

if TYPE_CHECKING:  # loaded on first use: the hidden tabs' panels when first shown, the reshard flow
    from console.ui.changes import StreamChanges
    from console.ui.panels.consumers import ConsumersPanel
    from console.ui.panels.heat import HeatPanel
    from console.ui.panels.placement import PlacementPanel
    from console.ui.panels.producer import ProducerPanel
    from console.ui.reshard_flow import ReshardActivity, ReshardProgressed
    from console.ui.screens.stream_actions import StreamDeleted

# Where a shard was chosen (the widget that already shows it selected).
ShardChosen = ShardTable.Highlighted | LineageTree.ShardHighlighted | KeySpaceRibbon.ShardClicked
SHARD_CHOSEN_IN = {
    ShardTable.Highlighted: "table",
    LineageTree.ShardHighlighted: "tree",
    KeySpaceRibbon.ShardClicked: "ribbon",
}
CAPACITY_INTERVAL = 60.0  # seconds between fetches of the stream's CloudWatch metrics (its resolution)
NO_CLOUDWATCH = "no CloudWatch metrics: this source has no CloudWatch"


class KConsoleApp(CommandLineHost, App[None]):
    CSS_PATH = Path(__file__).parent / "kconsole.tcss"  # absolute, so subclasses elsewhere find it
    TITLE = "kconsole"
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    BINDINGS = APP_BINDINGS

    # What the panels follow (data_bind in compose).
    stream: reactive[str | None] = reactive(None, init=False)
    read_only: reactive[bool] = reactive(False, init=False)

    def __init__(
        self,
        source: ConsoleBackend,
        *,
        stream: str | None = None,
        interval: float = 5.0,
        read_only: bool = False,
        config_warning: str | None = None,
        theme: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        poll_timeout: float | None = None,
        on_stream_opened: Callable[[str], None] | None = None,
        last_stream: str | None = None,
        key_format: str = "decimal",
    ) -> None:
        super().__init__()
        self.source = source
        self.set_reactive(KConsoleApp.stream, stream)
        self.set_reactive(KConsoleApp.read_only, read_only)
        self.interval = interval
        self.poll_timeout = poll_timeout or max(5.0, min(30.0, interval * 3))
        self._config_warning = config_warning
        self._theme_name = theme
        self.clock = clock  # the header's and the poll's notion of now (tests pass a fake)
        self._on_stream_opened = on_stream_opened
        self._last_stream = last_stream
        self.key_format = key_format  # how hash keys are written (console.ui.format.KEY_FORMATS)
        self.connection = ConnectionInfo.of(source)
        self.view: StreamView | None = None
        self.selected_shard_id: str | None = None
        self.poll_count = 0
        # The shard poll and the Consumers tab's lease poll hold this while they call the backend:
        # they never overlap, and one due while the other runs simply waits its turn.
        self.poll_lock = asyncio.Lock()
        self._poll_worker: Worker | None = None
        self._poll_timer = None
        self._listing = ListingSchedule()
        self._capacity_stream: str | None = None  # the stream the CloudWatch loop follows
        self.focus_model = FocusModel(self)
        self.toasts = ToastsBehindDialogs(self)
        self._changes: StreamChanges | None = None  # split, merge, rescale, the stream actions
        self.stream_display = StreamDisplay(self)  # writes each poll's result into the widgets
        # Called with the theme's name when the user picks another one (the launcher saves it to the config).
        self.on_theme_changed: Callable[[str], None] | None = None
        self.ctrl_c_asked_at: float | None = None  # ctrl+c in a text box asks once (CommandLineHost)

    @property
    def changes(self) -> StreamChanges:
        """Split, merge, rescale and the stream actions (console.ui.changes), loaded on first use: the
        reshard flow and its executor are no part of the start-up."""
        if self._changes is None:
            from console.ui.changes import StreamChanges

            self._changes = StreamChanges(self, self.source)
        return self._changes

    # ---- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ConsoleHeader(clock=self.clock, id="header")
        yield KeySpaceRibbon(id="ribbon")
        with TabbedContent(id="tabs", initial="shards"):
            with TabPane("Shards", id="shards"):
                yield ShardsPanel(key_format=self.key_format, id="shards-body")
            with TabPane("Lineage", id="lineage"):
                yield LineageTree(id="lineage-tree")
            # Hidden tabs are built when first shown: none of their cost before the first shard row.
            yield LazyPane("Placement", self._placement_panel, id="placement")
            yield LazyPane("Key tree", self._keytree_panel, id="keytree")
            yield LazyPane("Producer", self._producer_panel, id="producer")
            yield LazyPane("Tail", self._tail_view, id="tail")
            yield LazyPane("Heat", self._heat_panel, id="heat")
            yield LazyPane("Consumers", self._consumers_panel, id="consumers")
        yield CoalescingFooter(compact=True)  # compact: more keys fit on an 80-column terminal

    # What each hidden tab holds, built the first time it is shown (imports here: loaded only then).

    def _placement_panel(self) -> Widget:
        from console.ui.panels.placement import PlacementPanel

        return PlacementPanel(key_format=self.key_format, id="placement-panel")

    def _keytree_panel(self) -> Widget:
        from console.ui.panels.keytree import KeyTreePanel

        return KeyTreePanel(id="keytree-panel")

    def _producer_panel(self) -> Widget:
        from console.ui.panels.producer import ProducerPanel

        # Pacing starts off on the embedded local Kinesis (it has no shard limits to respect).
        return ProducerPanel(
            self.source, local=self.connection.backend.startswith("local"), id="producer-panel"
        ).data_bind(KConsoleApp.stream, KConsoleApp.read_only)

    def _tail_view(self) -> Widget:
        from console.ui.panels.tail import TailView

        return TailView(self.source, stream=self.stream, id="tail-view").data_bind(KConsoleApp.stream)

    def _heat_panel(self) -> Widget:
        from console.ui.panels.heat import HeatPanel

        return HeatPanel(self.source, id="heat-panel").data_bind(KConsoleApp.stream)

    def _consumers_panel(self) -> Widget:
        from console.ui.panels.consumers import ConsumersPanel

        return ConsumersPanel(
            self.source, poll_lock=self.poll_lock, interval=self.interval, id="consumers-panel"
        ).data_bind(KConsoleApp.stream)

    def lazy_pane(self, tab: str) -> LazyPane:
        return self.query_one(f"#{tab}", LazyPane)

    def tell(self, tab: str, kind: str, call: Callable[[Any], object]) -> None:
        """Tell a hidden tab's panel something now, or when it is built (console.ui.lazy_tabs)."""
        self.lazy_pane(tab).tell(kind, call)

    def on_mount(self) -> None:
        warm_lazy_imports()
        asyncio.get_running_loop().run_in_executor(None, int)  # start the executor's first thread now
        if self._theme_name and self._theme_name in self.available_themes:
            self.theme = self._theme_name
        elif self._theme_name:
            self.notify(
                f"unknown theme {self._theme_name!r} in the config; using {self.theme}",
                title="config",
                severity="warning",
                timeout=8,
            )
        self.header.update_state(
            backend=self.connection.backend,
            region=self.connection.region,
            profile=self.connection.profile,
            stream=self.stream,
            read_only=self.read_only,
        )
        if RETRY_EVENTS in self.source.capabilities:  # retries go in the header, not on a stderr under the screen
            self.source.on_retry = self._show_retry
        if self._config_warning:
            self.notify(self._config_warning, title="config", severity="warning", timeout=10)
        if self.read_only:
            self.notify(f"read-only: {READ_ONLY_DISABLES} are disabled", timeout=5)
        self.table.focus()
        if self.stream:
            if self._on_stream_opened:
                self._on_stream_opened(self.stream)
            # First paint the empty console (its footer keys included: Textual builds them at the
            # first idle otherwise, in the middle of the first load), then load: the screen shows
            # at once on a slow backend.
            self.query_one(CoalescingFooter).build_then(self._start_first_poll)
        else:
            self.action_pick_stream()

    def _start_first_poll(self) -> None:
        # Collect the start-up garbage (Textual's compose and first layout: ~100k objects) once,
        # now, and freeze the survivors: otherwise the first listing's allocations trigger a full
        # collection over all of them in the middle of the load (~50 ms at 10k shards).
        gc.collect()
        gc.freeze()
        self.call_after_refresh(self.poll_now)

    @property
    def header(self) -> ConsoleHeader:
        return self.query_one(ConsoleHeader)

    @property
    def shards_panel(self) -> ShardsPanel:
        return self.query_one(ShardsPanel)

    @property
    def table(self) -> ShardTable:
        return self.query_one(ShardTable)

    @property
    def ribbon(self) -> KeySpaceRibbon:
        return self.query_one(KeySpaceRibbon)

    @property
    def lineage_tree(self) -> LineageTree:
        return self.query_one(LineageTree)

    # The hidden tabs' panels, once their tab was shown (NoMatches before: see `tell`).

    @property
    def placement(self) -> PlacementPanel:
        return cast("PlacementPanel", self.query_one("#placement-panel"))

    @property
    def heat_panel(self) -> HeatPanel:
        return cast("HeatPanel", self.query_one("#heat-panel"))

    @property
    def consumers_panel(self) -> ConsumersPanel:
        return cast("ConsumersPanel", self.query_one("#consumers-panel"))

    # ---- polling -------------------------------------------------------------------------------

    @property
    def poll_running(self) -> bool:
        return self._poll_worker is not None and not (self._poll_worker.is_finished or self._poll_worker.is_cancelled)

    def poll_now(self, *, list_all: bool = True) -> bool:
        """Start a poll unless one is running. The next one is armed when it ends (on_worker_state_changed).
        A timed poll (`list_all=False`) lists the shards only when the ListingSchedule says so."""
        if self.poll_running or not self.stream:
            return False
        if self._poll_timer is not None:
            self._poll_timer.stop()
            self._poll_timer = None
        self.header.update_state(polling=True)
        previous = self.view if self.view is not None and self.view.summary.name == self.stream else None
        if list_all or previous is None or self._listing.next_poll_lists_all():
            previous = None
        self._poll_worker = self._poll(self.stream, previous)
        return True

    def _timed_poll(self) -> None:
        if self.is_running:  # a timer may still fire while the app shuts down
            self.poll_now(list_all=False)

    # A description, or Textual builds one from repr() of the arguments: the whole previous view,
    # 10,000 shards, every five seconds (most of the idle CPU at that size).
    @work(exclusive=True, group="poll", exit_on_error=False, description="poll the stream")
    async def _poll(self, stream: str, previous: StreamView | None = None) -> None:
        try:
            async with self.poll_lock:  # a lease poll in flight finishes first
                view = await asyncio.wait_for(fetch_stream(self.source, stream, previous), self.poll_timeout)
            if stream != self.stream:
                return
            if previous is not None and view.shards is previous.shards:
                self.stream_display.header(view)  # the same shards: nothing in the table or the lineage changed
                self.post_message(StreamRefreshed(view))
                return
            self._listing.listed_all()
            if len(view.shards) > BIG_STREAM:
                settle_heap()
            await self.stream_display.shards(view)
            view = await with_lineage(view)
            if stream == self.stream:
                self.stream_display.lineage(view)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # every failure is shown in the header; the next poll retries
            if stream == self.stream:
                reason = describe_failure(error, self.poll_timeout)
                if isinstance(error, TimeoutError) and self.header.state.notice:  # cut short while retrying
                    reason += f" (last: {self.header.state.notice.split(';')[0]})"
                self._show_failure(reason)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A shard poll that ended (not one cancelled: another stream was opened) arms the next."""
        if event.worker is not self._poll_worker or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        self.poll_count += 1
        if self.is_running:
            self.header.update_state(polling=False)
            self._poll_timer = self.set_timer(self.interval, self._timed_poll)

    def _show_failure(self, reason: str) -> None:
        self.header.update_state(error=reason)
        self.post_message(PollFailed(reason))

    def follow_capacity(self, stream: str) -> None:
        """Start the CloudWatch loop for `stream` the first time a poll shows it."""
        if stream != self._capacity_stream:
            self._capacity_stream = stream
            if CLOUDWATCH in self.source.capabilities:
                self._poll_capacity(stream)
            else:  # an in-memory source (tests, screenshots)
                self.tell("heat", "capacity", lambda heat: heat.show_capacity(None, NO_CLOUDWATCH))

    # The stream's CloudWatch metrics: free at stream level, fetched once a minute (CloudWatch's
    # resolution; more often would only cost more) for the header, the Heat and the Consumers tabs.
    @work(exclusive=True, group="capacity", exit_on_error=False)
    async def _poll_capacity(self, stream: str) -> None:
        while stream == self.stream:
            try:
                metrics = await stream_metrics(self.source, stream)
            except ConsoleError as error:
                self._show_capacity(None, unavailable_reason(error))
                self.header.update_state(capacity=None)
            else:
                if stream != self.stream:
                    return
                self._show_capacity(metrics)
                self.header.update_state(capacity=CapacitySummary.of(metrics))
            await asyncio.sleep(CAPACITY_INTERVAL)

    def _show_capacity(self, metrics: Any, problem: str | None = None) -> None:
        """The stream's CloudWatch metrics (None: `problem` says why) in the Heat and Consumers tabs."""
        self.tell("heat", "capacity", lambda heat: heat.show_capacity(metrics, problem))
        self.tell("consumers", "metrics", lambda consumers: consumers.show_metrics(metrics, problem))

    def _show_retry(self, event) -> None:
        """A backend call is being retried (throttled, a dropped connection): say so until a poll succeeds."""
        if self.is_running:
            self.header.update_state(notice=event.describe())

    # ---- selection -----------------------------------------------------------------------------

    def select_shard(self, shard_id: str, origin: str | None = None) -> None:
        """Select a shard everywhere (table, ribbon, tree); `origin` is the widget that already shows it."""
        if origin is not None and shard_id == self.selected_shard_id:
            return
        self.selected_shard_id = shard_id
        if origin != "table":
            self.table.select(shard_id)
        if origin != "tree":
            self.lineage_tree.select_shard(shard_id)
        self.ribbon.set_selected(shard_id)
        self.stream_display.detail()

    @on(ShardTable.Highlighted)
    @on(LineageTree.ShardHighlighted)
    @on(KeySpaceRibbon.ShardClicked)
    def _shard_chosen(self, event: ShardChosen) -> None:
        self.select_shard(event.shard_id, origin=SHARD_CHOSEN_IN[type(event)])

    # The hidden tabs' messages are handled by name (on_<panel>_<message>): the app need not import
    # their panels to route them.

    def on_placement_panel_markers_changed(self, event: PlacementPanel.MarkersChanged) -> None:
        self.ribbon.set_markers(event.hash_keys)

    def on_heat_panel_heat_changed(self, event: HeatPanel.HeatChanged) -> None:
        if event.stream == self.stream:  # not a reading of the stream closed a moment ago
            self._show_heat_figures(event.heat)

    def _show_heat_figures(self, heat: dict[str, ShardHeat]) -> None:
        """Throughput column (with a sparkline) in the table, and the ribbon coloured by heat."""
        self.table.set_heat(heat)
        self.ribbon.set_heat({shard_id: figures.utilisation for shard_id, figures in heat.items()})

    def on_heat_panel_heat_stopped(self, _event: HeatPanel.HeatStopped) -> None:
        """The table keeps its last rates marked stale; the ribbon goes back to colouring by share
        (a heat colour that no longer updates would mislead)."""
        self.table.set_heat_stale()
        self.ribbon.set_heat({})

    def on_heat_panel_monitoring_enabled(self, event: HeatPanel.MonitoringEnabled) -> None:
        self._stream_written(event.stream)

    def on_producer_panel_run_finished(self, event: ProducerPanel.RunFinished) -> None:
        self._stream_written(event.stream)

    def _stream_written(self, stream: str) -> None:
        if stream == self.stream:
            self.poll_now()  # the table and the heat tab follow what the stream now holds

    def on_consumers_panel_lag_changed(self, event: ConsumersPanel.LagChanged) -> None:
        if event.stream == self.stream:
            self.table.set_lag(event.lag)

    @on(TabbedContent.TabActivated)
    async def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if isinstance(event.pane, LazyPane) and event.pane.panel is None:  # a click on a tab not built yet
            await event.pane.built()
            if self.query_one(TabbedContent).active != event.pane.id:
                return
        self.focus_model.focus_tab(event.pane.id)

    # ---- focus and toasts (console.ui.focus, console.ui.toasts) --------------------------------

    async def on_event(self, event: events.Event) -> None:
        if not await self.focus_model.handled(event):
            await super().on_event(event)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.focus_model.focused(event.widget)

    @property
    def tab_strip(self) -> Tabs:
        return self.focus_model.tab_strip

    def notify(self, message: str, **options: Any) -> None:
        if not self.toasts.held(message, options):
            super().notify(message, **options)

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        self.toasts.opening(screen)
        return super().push_screen(screen, *args, **kwargs)

    def pop_screen(self) -> Any:
        result = super().pop_screen()
        self.toasts.closed()
        return result

    # ---- filter --------------------------------------------------------------------------------

    async def action_filter(self) -> None:
        await self.action_show_tab("shards")
        self.shards_panel.open_filter()

    def on_key(self, event) -> None:
        self.focus_model.leave_text_box(event)
        if self.read_only and self.screen is self.screen_stack[0] and not self.focus_model.typing:
            disabled = next(
                (b for b in APP_BINDINGS if b.action in MUTATING_ACTIONS and event.key in b.key.split(",")), None
            )
            if disabled is not None:  # a greyed-out key does nothing; say why rather than stay silent
                self.notify(
                    f"{disabled.description}: disabled in read-only mode (R or :rw leaves it, after you "
                    "type the stream name)",
                    severity="warning",
                    timeout=4,
                )

    # ---- actions -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MUTATING_ACTIONS and self.read_only:
            return None  # shown greyed out in the footer, and the key does nothing
        if action == "show_tab":
            return not self.focus_model.typing  # False: the digit goes into the text box instead
        return True

    @on(CommandLineScreen.Entered)
    async def _command_entered(self, event: CommandLineScreen.Entered) -> None:
        await self.run_command(event.parsed)

    def action_refresh(self) -> None:
        if not self.stream:
            self.notify("no stream open: press p to pick one", severity="warning")
        elif not self.poll_now():
            self.notify("a refresh is already running", timeout=2)

    def action_help(self) -> None:
        from console.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.read_only))

    async def action_show_tab(self, tab: str) -> None:
        pane = self.query_one(f"TabPane#{tab}")
        if isinstance(pane, LazyPane):
            await pane.built()  # before it shows: never an empty tab, and its first focus is there
        tabs = self.query_one(TabbedContent)
        if tabs.active == tab:
            self.focus_model.focus_tab(tab)
        tabs.active = tab

    async def action_sort(self) -> None:
        await self.action_show_tab("shards")
        self.table.action_cycle_sort()

    def action_copy_keys(self) -> None:
        shard = self.table.shard(self.selected_shard_id) if self.selected_shard_id else None
        if shard is None:
            self.notify("select a shard first", severity="warning")
            return
        self.copy_to_clipboard(f"{shard.starting_hash_key} {shard.ending_hash_key}")
        self.notify(f"copied the hash keys of {short_shard_id(shard.shard_id)} (start end)", timeout=3)

    def action_pick_stream(self) -> None:
        from console.ui.screens.stream_picker import StreamPickerScreen

        self.push_screen(StreamPickerScreen(self.source, current=self.stream or self._last_stream), self._stream_picked)

    def _stream_picked(self, name: str | None) -> None:
        if name and name != self.stream:
            self.open_stream(name)
        elif not self.stream:
            self.notify("no stream open: press p to pick one", severity="warning")

    def open_stream(self, name: str) -> None:
        self.stream = name  # the panels follow it: each stops its own work on the old stream

    def watch_stream(self, name: str | None) -> None:
        if self._poll_timer is not None:
            self._poll_timer.stop()
            self._poll_timer = None
        self.workers.cancel_group(self, "poll")
        self.workers.cancel_group(self, "capacity")
        self._capacity_stream = None
        self.view = None
        self.selected_shard_id = None
        self.table.apply([])
        self.table.set_heat({})
        self.table.set_lag({})
        self.ribbon.set_shards([])
        self.ribbon.set_heat({})
        # Nothing of the previous stream stays on screen as if it were this one, found or not.
        self.stream_display.detail()
        self.tell("placement", "index", lambda placement: placement.set_index(None))
        self.lineage_tree.apply(Lineage.build([]))
        self._lineage_dirty = False
        self.header.update_state(stream=name, summary=None, refreshed_at=None, error=None, capacity=None)
        if name and self._on_stream_opened:
            self._on_stream_opened(name)
        self.poll_now()

    def action_split(self) -> None:
        self._reshard("split")

    def action_merge(self) -> None:
        self._reshard("merge")

    def action_scale(self) -> None:
        self._reshard("scale")

    def _reshard(self, operation: str) -> None:
        if self.read_only:
            self.notify(f"{operation}: not available in read-only mode", severity="warning")
            return
        if not self.stream or self.view is None:
            self.notify(f"{operation}: no stream loaded yet", severity="warning")
            return
        # On the heat tab, `s` splits the shard selected there at the median of its observed traffic.
        heat: HeatPanel | None = self.lazy_pane("heat").panel
        on_heat = operation == "split" and self.query_one(TabbedContent).active == "heat"
        suggestion = heat.selected.split if on_heat and heat is not None and heat.selected else None
        if suggestion is not None:
            self.select_shard(suggestion.shard_id)
        placement: PlacementPanel | None = self.lazy_pane("placement").panel
        consumers: ConsumersPanel | None = self.lazy_pane("consumers").panel  # a lease table is opened there
        from console.ui.reshard_flow import ReshardRequest

        request = ReshardRequest(
            operation,
            self.stream,
            self.view.shards,
            self.view.summary.open_shard_count,
            self.table.shard(self.selected_shard_id) if self.selected_shard_id else None,
            self.source,
            suggestion.at if suggestion is not None else None,
            key_format=self.key_format,
            sample=placement.key_sample() if placement is not None else None,
            barrier=consumers.barrier_lines if consumers is not None else None,
            last_poll=lambda: self.header.state.refreshed_at,
            clock=self.clock,
        )
        self.changes.reshard(request)

    # Messages of the reshard flow and the stream actions, handled by name (loaded on first use).

    def on_reshard_activity(self, event: ReshardActivity) -> None:
        self.header.update_state(activity=event.text)

    def on_reshard_progressed(self, _event: ReshardProgressed) -> None:
        self.poll_now()

    def action_stream_actions(self) -> None:
        if not self.stream or self.view is None:
            self.notify("stream actions: no stream loaded yet", severity="warning")
            return
        self.changes.choose_stream_action(self.view, lambda: self.read_only)

    def on_stream_deleted(self, _event: StreamDeleted) -> None:
        self.action_pick_stream()

    async def action_enable_monitoring(self) -> None:
        if self.read_only:
            self.notify("enhanced monitoring: not available in read-only mode", severity="warning")
            return
        heat: HeatPanel = await self.lazy_pane("heat").built()
        heat.enable_monitoring()
