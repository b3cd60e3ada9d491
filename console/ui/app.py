"""The live console: header, key-space ribbon, and tabs (shards, lineage, placement, key tree,
producer, tail, heat, consumers).

The app keeps what is stream-wide: the layout, the keys, the selected shard, which stream is open,
and the shard poll (console.ui.shard_poll), whose results (and the stream's CloudWatch metrics that
follow them) its StreamDisplay writes into the stream-wide widgets. `stream`, `read_only` and `view`
and what each poll says (the selected shard, the AUTO notice, the CloudWatch reading) are reactives
the panels follow (data_bind). The tabs come from one list (console.ui.tabs); those after Lineage are
built on first visit (console.ui.lazy_tabs). Each panel runs its own work in its own workers (the producer run, the
tail reader, the heat sampler, the lease poll) and posts typed messages for what other widgets
need; the app routes them (heat and lag to the shard table and the ribbon). Split, merge, rescale
and the stream actions start from console.ui.changes; `:`, ctrl+c, j / k and R from
console.ui.screens.command_line. The shard poll and the lease poll share one lock, so they never
overlap.

The backend is injected (`backend`: a console.backend.protocol.ConsoleBackend), so tests drive this
app against the embedded local Kinesis and the benchmark against a 10k-shard fake. The launcher may
hand it the first poll's answer too (`first_view`), asked for while Textual started.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.reactive import reactive, var
from textual.widgets import TabbedContent, Tabs
from textual.worker import Worker, WorkerState

from console.backend.protocol import RETRY_EVENTS, ConsoleBackend
from console.ui.bindings import (
    APP_BINDINGS,
    MUTATING_ACTIONS,
    disabled_key_notice,
    masking_notice,
    read_only_notice,
)
from console.ui.focus import FocusModel
from console.ui.lazy_tabs import LazyPane
from console.ui.palette import ConsoleCommands
from console.ui.panels.lineage import LineageTree
from console.ui.panels.shards import ShardsPanel
from console.ui.screens.command_line import CommandLineScreen, K9sHabits
from console.ui.shard_poll import ShardPoll
from console.ui.source import CloudWatchReading, ConnectionInfo, StreamView
from console.ui.startup import freeze_startup_garbage, warm_up
from console.ui.stream_display import EmbeddedServerRestarted, StreamDisplay
from console.ui.tabs import TABS, tab_panes
from console.ui.toasts import ToastsBehindDialogs
from console.ui.widgets.footer import CoalescingFooter
from console.ui.widgets.header import ConsoleHeader
from console.ui.widgets.ribbon import KeySpaceRibbon
from console.ui.widgets.shard_columns import ShardHeat
from console.ui.widgets.shard_table import ShardTable

if TYPE_CHECKING:  # loaded on first use: the hidden tabs' panels when first shown, the reshard flow
    from console.ui.changes import StreamChanges
    from console.ui.panels.consumers import ConsumersPanel
    from console.ui.panels.heat import HeatPanel
    from console.ui.panels.placement import PlacementPanel
    from console.ui.panels.producer import ProducerPanel
    from console.ui.panels.tail import TailView
    from console.ui.reshard_flow import ReshardActivity, ReshardProgressed
    from console.ui.screens.stream_actions import StreamDeleted

# Where a shard was chosen (the widget that already shows it selected).
ShardChosen = ShardTable.Highlighted | LineageTree.ShardHighlighted | KeySpaceRibbon.ShardClicked
SHARD_CHOSEN_IN = {
    ShardTable.Highlighted: "table",
    LineageTree.ShardHighlighted: "tree",
    KeySpaceRibbon.ShardClicked: "ribbon",
}


class KConsoleApp(App[None]):
    CSS_PATH = Path(__file__).parent / "kconsole.tcss"  # absolute, so subclasses elsewhere find it
    TITLE = "kconsole"
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    BINDINGS: ClassVar[list[BindingType]] = [*APP_BINDINGS]

    # What the panels follow (data_bind in compose): the open stream, read-only mode, and the open
    # stream's last good poll (None until one came back; set by the StreamDisplay). A `var`, and
    # never compared: a new poll is always news, and comparing 10k shards would cost more than it saves.
    stream: reactive[str | None] = reactive(None, init=False)
    read_only: reactive[bool] = reactive(False, init=False)
    # The mask rules (mask_rules) are applied: off only after the operator typed the stream name (`:unmask`).
    masking: reactive[bool] = reactive(True, init=False)
    view: var[StreamView | None] = var(None, init=False, always_update=True)
    # The shard selected on the table, the ribbon or the lineage tree (select_shard).
    selected_shard_id: reactive[str | None] = reactive(None, init=False)
    # Set by the StreamDisplay from each poll and the once-a-minute CloudWatch fetch: the key-space
    # tabs' AUTO notice (None: the stream routes by key), and the stream's CloudWatch metrics.
    auto_notice: reactive[str | None] = reactive(None, init=False)
    cloudwatch: var[CloudWatchReading | None] = var(None, init=False)

    def __init__(
        self,
        backend: ConsoleBackend,
        *,
        stream: str | None = None,
        first_view: Awaitable[StreamView] | None = None,
        interval: float = 5.0,
        read_only: bool = False,
        config_warning: str | None = None,
        theme: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        poll_timeout: float | None = None,
        on_stream_opened: Callable[[str], None] | None = None,
        last_stream: str | None = None,
        key_format: str = "decimal",
        mask_rules: tuple[str, ...] = (),
        masking: bool = True,
        read_share: float | None = None,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.set_reactive(KConsoleApp.stream, stream)
        self.set_reactive(KConsoleApp.read_only, read_only)
        self.set_reactive(KConsoleApp.masking, masking)
        self.interval = interval
        self.poll_timeout = poll_timeout or max(5.0, min(30.0, interval * 3))
        self._config_warning = config_warning
        self._theme_name = theme
        self.clock = clock  # the header's and the poll's notion of now (tests pass a fake)
        self._on_stream_opened = on_stream_opened
        self._last_stream = last_stream
        self.key_format = key_format  # how hash keys are written (console.ui.format.KEY_FORMATS)
        # The config's and the command line's mask rules (console.read.masking): the Tail tab shows records
        # masked, and with @keys (mask_keys) the Heat tab its hot keys.
        self.mask_rules = mask_rules
        # The most of each shard's GetRecords budget the Tail and Heat views take (None: unbounded).
        self.read_share = read_share
        self.connection = ConnectionInfo.of(backend)
        # The shard poll and the Consumers tab's lease poll hold this while they call the backend:
        # they never overlap, and one due while the other runs simply waits its turn.
        self.poll_lock = asyncio.Lock()
        self.shard_poll = ShardPoll(self, first_view=(stream, first_view) if stream and first_view else None)
        self.focus_model = FocusModel(self)
        self.toasts = ToastsBehindDialogs(self)
        self._changes: StreamChanges | None = None  # split, merge, rescale, the stream actions
        self.habits = K9sHabits(self)  # `:` command mode, ctrl+c, j / k, the read-only toggle
        self.stream_display = StreamDisplay(self)  # writes each poll's result into the widgets
        # Called with the theme's name when the user picks another one (the launcher saves it to the config).
        self.on_theme_changed: Callable[[str], None] | None = None

    @property
    def changes(self) -> StreamChanges:
        """Split, merge, rescale and the stream actions (console.ui.changes), loaded on first use: the
        reshard flow and its executor are no part of the start-up."""
        if self._changes is None:
            from console.ui.changes import StreamChanges

            self._changes = StreamChanges(self, self.backend)
        return self._changes

    # ---- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ConsoleHeader(clock=self.clock, id="header")
        yield KeySpaceRibbon(id="ribbon")
        with TabbedContent(id="tabs", initial=TABS[0].id):
            # Hidden tabs are built when first shown: none of their cost before the first shard row.
            yield from tab_panes(self)
        yield CoalescingFooter(compact=True)  # compact: more keys fit on an 80-column terminal

    def lazy_pane(self, tab: str) -> LazyPane[Any]:
        return self.query_one(f"#{tab}", LazyPane)

    def on_mount(self) -> None:
        warm_up()
        self.habits.use_theme(self._theme_name)
        self.header.update_state(
            connected_to=self.connection.connected_to,
            region=self.connection.region,
            profile=self.connection.profile,
            stream=self.stream,
            read_only=self.read_only,
            masking=self.masking_badge,
        )
        if RETRY_EVENTS in self.backend.capabilities:  # retries go in the header, not on a stderr under the screen
            self.backend.on_retry = self.stream_display.retry
        if self._config_warning:
            self.notify(self._config_warning, title="config", severity="warning", timeout=10)
        if self.read_only:
            self.notify(read_only_notice(True), timeout=5)
        if self.mask_rules:
            self.notify(masking_notice(self.mask_rules, self.masking), title="masking", timeout=5, markup=False)
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
        freeze_startup_garbage()
        self.call_after_refresh(self.poll_now)

    @property
    def header(self) -> ConsoleHeader:
        return self.query_one(ConsoleHeader)

    @property
    def table(self) -> ShardTable:
        return self.query_one(ShardTable)

    @property
    def ribbon(self) -> KeySpaceRibbon:
        return self.query_one(KeySpaceRibbon)

    @property
    def lineage_tree(self) -> LineageTree:
        return self.query_one(LineageTree)

    # The hidden tabs' panels, once their tab was shown (NoMatches before).

    @property
    def placement(self) -> PlacementPanel:
        return cast("PlacementPanel", self.query_one("#placement-panel"))

    # ---- polling (console.ui.shard_poll) -------------------------------------------------------

    def poll_now(self, *, list_all: bool = True) -> bool:
        return self.shard_poll.start(list_all=list_all)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.shard_poll.ended(event)
        if event.state == WorkerState.ERROR:
            # Each worker says the failures it expects itself; one that escapes is a defect: shown, not lost.
            error = event.worker.error
            self.notify(
                f"{event.worker.description or event.worker.name} stopped: internal error: "
                f"{type(error).__name__}: {error}",
                severity="error",
                timeout=20,
                markup=False,
            )

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
        (a heat colour that no longer updates would mislead). The sampler's stop can arrive while a
        dialog covers the console (the shards view is on the screen below it), or while the app closes
        and the shards view is gone: nothing is left to mark then."""
        if not self.screen_stack:
            return
        console = self.screen_stack[0]
        for table in console.query(ShardTable):
            table.set_heat_stale()
        for ribbon in console.query(KeySpaceRibbon):
            ribbon.set_heat({})

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
        focused = self.focused
        if event.pane.id and (focused is None or event.pane not in focused.ancestors):  # a click on the tab strip
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
        self.focus_model.dialog_closed()
        self.toasts.closed()
        return result

    # ---- keys ----------------------------------------------------------------------------------

    async def action_filter(self) -> None:
        await self.action_show_tab("shards")
        self.query_one(ShardsPanel).open_filter()

    def on_key(self, event: events.Key) -> None:
        self.focus_model.leave_text_box(event)
        if (
            self.read_only
            and self.screen is self.screen_stack[0]
            and not self.focus_model.typing
            and (notice := disabled_key_notice(event.key))
        ):
            self.notify(notice, severity="warning", timeout=4)

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        if action in MUTATING_ACTIONS and self.read_only:
            return None  # shown greyed out in the footer, and the key does nothing
        if action == "show_tab":
            return not self.focus_model.typing  # False: the digit goes into the text box instead
        return True

    # ---- k9s habits (console.ui.screens.command_line) and the read-only mode -------------------

    def action_command_line(self) -> None:
        self.habits.open_command_line()

    @on(CommandLineScreen.Entered)
    async def _command_entered(self, event: CommandLineScreen.Entered) -> None:
        await self.habits.run(event.parsed)

    async def action_ctrl_c_quit(self) -> None:
        await self.habits.ctrl_c_quit()

    def action_vi_cursor(self, direction: str) -> None:
        self.habits.vi_cursor(direction)

    def action_toggle_read_only(self) -> None:
        self.habits.toggle_read_only()

    def watch_read_only(self, read_only: bool) -> None:
        self.header.update_state(read_only=read_only)
        self.refresh_bindings()  # the mutating keys grey out in the footer, or come back
        self.notify(read_only_notice(read_only), timeout=4)

    @property
    def masking_badge(self) -> str | None:
        """The header's masking badge: MASKED, UNMASKED (rules turned off), or none without rules."""
        if not self.mask_rules:
            return None
        return "MASKED" if self.masking else "UNMASKED"

    def watch_masking(self, masking: bool) -> None:
        self.header.update_state(masking=self.masking_badge)
        self.notify(masking_notice(self.mask_rules, masking), title="masking", timeout=5, markup=False)

    def watch_theme(self, old: str, new: str) -> None:
        if old != new and self.on_theme_changed is not None and self.is_running:
            self.on_theme_changed(new)

    # ---- actions -------------------------------------------------------------------------------

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
        self.query_one(TabbedContent).active = tab
        # Focused here, not when TabActivated arrives: the key after the tab key (enter, to enter its
        # field) must find the focus on the tab it opened.
        self.focus_model.focus_tab(tab)

    async def action_sort(self) -> None:
        await self.action_show_tab("shards")
        self.table.action_cycle_sort()

    def action_copy_keys(self) -> None:
        self.query_one(ShardsPanel).copy_keys(self.selected_shard_id)

    def action_pick_stream(self) -> None:
        from console.ui.screens.stream_picker import StreamPickerScreen

        self.push_screen(
            StreamPickerScreen(self.backend, current=self.stream or self._last_stream), self._stream_picked
        )

    def _stream_picked(self, name: str | None) -> None:
        if name and name != self.stream:
            self.open_stream(name)
        elif not self.stream:
            self.notify("no stream open: press p to pick one", severity="warning")

    def open_stream(self, name: str) -> None:
        self.stream = name  # the panels follow it: each stops its own work on the old stream

    def watch_stream(self, name: str | None) -> None:
        self.shard_poll.stop()
        self.view = None
        self.selected_shard_id = None
        self.stream_display.cleared(name)
        if name and self._on_stream_opened:
            self._on_stream_opened(name)
        self.poll_now()

    def action_split(self) -> None:
        self.changes.reshard("split")

    def action_merge(self) -> None:
        self.changes.reshard("merge")

    def action_scale(self) -> None:
        self.changes.reshard("scale")

    # Messages of the reshard flow and the stream actions, handled by name (loaded on first use).

    def on_reshard_activity(self, event: ReshardActivity) -> None:
        self.header.update_state(activity=event.text)

    def on_reshard_progressed(self, _event: ReshardProgressed) -> None:
        self.poll_now()

    def action_stream_actions(self) -> None:
        self.changes.choose_stream_action()

    def on_stream_deleted(self, _event: StreamDeleted) -> None:
        self.action_pick_stream()

    def on_embedded_server_restarted(self, _event: EmbeddedServerRestarted) -> None:
        for view in self.query("#tail-view"):
            cast("TailView", view).read_recreated_stream()

    async def action_enable_monitoring(self) -> None:
        await self.changes.enable_monitoring()
