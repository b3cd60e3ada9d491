"""Changes to the open stream that the console's keys start: split, merge and rescale
(console.ui.reshard_flow) and the stream actions: retention, capacity mode, encryption, today's
settings, tags, the policy, channels, the account and delete (console.ui.screens.stream_actions),
and enhanced monitoring (the Heat tab's own change).

Each asks what it needs in dialogs, previews the plan the domain prepared (console.reshard,
console.lifecycle.actions: the command line's plans and rules), takes the typed stream name, then
has the domain run it, in a worker (one split, merge or rescale at a time; one stream action at a
time). What happens comes back to the app as messages: `ReshardActivity` (the header's activity line),
`ReshardProgressed` (the stream changed shape: poll it now) and `StreamDeleted`. Nothing here
starts while the console is read-only, whichever way it was asked for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol, TypeVar

from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabbedContent

from console.backend.protocol import ConsoleBackend
from console.ui import reshard_flow
from console.ui.lazy_tabs import LazyPane
from console.ui.panels.consumers import ConsumersPanel
from console.ui.panels.heat import HeatPanel
from console.ui.panels.placement import PlacementPanel
from console.ui.reshard_flow import ReshardDialogs, ReshardRequest
from console.ui.screens import stream_actions
from console.ui.screens.stream_actions import StreamActionRequest, StreamActionsScreen
from console.ui.source import StreamView
from console.ui.widgets.header import ConsoleHeader
from console.ui.widgets.shard_table import ShardTable

QueryType = TypeVar("QueryType", bound=Widget)


class ChangingConsole(Protocol):
    """What the changes read of the console app (console.ui.app.KConsoleApp is one) and the Textual
    calls they make on it."""

    @property
    def stream(self) -> str | None: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def view(self) -> StreamView | None: ...

    @property
    def selected_shard_id(self) -> str | None: ...

    @property
    def key_format(self) -> str: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    def select_shard(self, shard_id: str, origin: str | None = None) -> None: ...

    def query_one(self, selector: type[QueryType]) -> QueryType: ...

    def lazy_pane(self, tab: str) -> LazyPane[Any]: ...

    def notify(self, message: str, **options: Any) -> None: ...

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any: ...

    async def push_screen_wait(self, screen: Screen[Any]) -> Any: ...

    def post_message(self, message: Message) -> bool: ...

    # A callable rather than a coroutine: a worker replaced before it starts never leaves one unawaited.
    def run_worker(
        self, work: Callable[[], Awaitable[None]], *, group: str, description: str, exit_on_error: bool, exclusive: bool
    ) -> object: ...


class StreamChanges:
    """Held by the app: starts each change in a worker of the app, its dialogs pushed there."""

    def __init__(self, console: ChangingConsole, backend: ConsoleBackend) -> None:
        self.console = console
        self.backend = backend

    def _dialogs(self) -> ReshardDialogs:
        console = self.console
        return ReshardDialogs(console.push_screen_wait, console.notify, console.post_message)

    def _refused_in_read_only(self, what: str) -> bool:
        if self.console.read_only:
            self.console.notify(f"{what}: not available in read-only mode", severity="warning")
        return self.console.read_only

    def _loaded(self, what: str) -> tuple[str, StreamView] | None:
        """The open stream and its last poll, or None (and a toast) when no stream is loaded yet."""
        stream, view = self.console.stream, self.console.view
        if not stream or view is None:
            self.console.notify(f"{what}: no stream loaded yet", severity="warning")
            return None
        return stream, view

    def reshard(self, operation: str) -> None:
        """Split (on the Heat tab: the shard selected there, at the median of its observed traffic),
        merge the selected shard with a neighbour, or rescale the stream."""
        console = self.console
        if self._refused_in_read_only(operation) or (loaded := self._loaded(operation)) is None:
            return
        stream, view = loaded
        # A tab never opened (console.ui.lazy_tabs) has no split suggestion, key sample or barrier.
        heat: HeatPanel | None = console.lazy_pane("heat").panel
        placement: PlacementPanel | None = console.lazy_pane("placement").panel
        consumers: ConsumersPanel | None = console.lazy_pane("consumers").panel  # a lease table is opened there
        on_heat = operation == "split" and console.query_one(TabbedContent).active == "heat"
        suggestion = heat.selected.split if on_heat and heat is not None and heat.selected else None
        if suggestion is not None:
            console.select_shard(suggestion.shard_id)
        header, selected = console.query_one(ConsoleHeader), console.selected_shard_id
        open_count = view.summary.open_shard_count
        request = ReshardRequest(
            operation,
            stream,
            view.shards,
            open_count if open_count is not None else sum(shard.is_open for shard in view.shards),
            console.query_one(ShardTable).shard(selected) if selected else None,
            self.backend,
            suggestion.at if suggestion is not None else None,
            key_format=console.key_format,
            sample=placement.key_sample() if placement is not None else None,
            barrier=consumers.barrier_lines if consumers is not None else None,
            last_poll=lambda: header.state.refreshed_at,
            clock=console.clock,
        )
        problem = reshard_flow.refusal(request)
        if problem:
            console.notify(problem, severity="warning")
            return
        console.run_worker(
            partial(reshard_flow.run_reshard, request, self._dialogs()),
            group="reshard",
            exclusive=True,
            exit_on_error=False,
            description="reshard",
        )

    def choose_stream_action(self) -> None:
        """The stream actions menu (its entries greyed when read-only), then the chosen action."""
        console = self.console
        if (loaded := self._loaded("stream actions")) is None:
            return
        _stream, view = loaded

        def chosen(action: str | None) -> None:
            if action:
                request = StreamActionRequest(action, view.summary, self.backend)
                console.run_worker(
                    partial(self._stream_action, request),
                    group="stream-actions",
                    exclusive=True,
                    exit_on_error=False,
                    description=f"stream action {action}",
                )

        console.push_screen(StreamActionsScreen(view.summary, read_only=console.read_only), chosen)

    async def _stream_action(self, request: StreamActionRequest) -> None:
        if self._refused_in_read_only(request.action):  # the menu greys its entries; this guards any other way in
            return
        await stream_actions.run_action(request, self._dialogs())

    async def enable_monitoring(self) -> None:
        if not self._refused_in_read_only("enhanced monitoring"):
            heat: HeatPanel = await self.console.lazy_pane("heat").built()
            heat.enable_monitoring()
