"""What a shard poll shows: one `StreamView` written into every widget that shows the whole stream.

The app runs the poll (console.ui.app); a `StreamDisplay` takes each result (`show`) and writes it, in
steps that yield to the UI loop on a big stream, into the app's `view` (which the lineage tree, the
Placement tab and the Consumers tab follow themselves), the header, the shard table, the ribbon,
the detail line and the key-space tabs' AUTO notice, and tells the Heat tab the stream's summary
(its limits). A failed poll and a retried call go to the header. Once a poll has shown a stream, its CloudWatch metrics follow,
once a minute, into the header and the Heat and Consumers tabs. It keeps the little state that
writing needs: the last tiling problem said, since when the stream is AUTO, which stream the
CloudWatch loop follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker

from console.backend.protocol import CLOUDWATCH, BackendConnection, MetricsBackend
from console.errors import ConsoleError
from console.topology.model import StreamSummary, auto_notice
from console.ui.panels.shards import ShardsPanel
from console.ui.source import BIG_STREAM, CloudWatchReading, StreamView, describe_failure, with_lineage
from console.ui.startup import settle_heap
from console.ui.widgets.header import ConsoleHeader
from console.ui.widgets.ribbon import KeySpaceRibbon
from console.ui.widgets.shard_table import ShardTable

QueryType = TypeVar("QueryType", bound=Widget)


class StreamRefreshed(Message):
    """A poll succeeded and its result is on screen."""

    def __init__(self, view: StreamView) -> None:
        super().__init__()
        self.view = view


class EmbeddedServerRestarted(Message):
    """The embedded server died and came back empty on the same port, with the open stream recreated."""


class PollFailed(Message):
    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


CAPACITY_INTERVAL = 60.0  # seconds between fetches of the stream's CloudWatch metrics (its resolution)
NO_CLOUDWATCH = "no CloudWatch metrics: this source has no CloudWatch"


class DisplayedBackend(BackendConnection, MetricsBackend, Protocol):
    """What the display asks of the backend: its label (for the action log's AUTO switch), whether
    it has CloudWatch, and the stream's metrics."""


class DisplayedConsole(Protocol):
    """What a poll's result is written into (console.ui.app.KConsoleApp is one): the app's reactives,
    its stream-wide widgets and selection, and the Textual calls made on it."""

    view: StreamView | None
    auto_notice: str | None
    cloudwatch: CloudWatchReading | None

    @property
    def stream(self) -> str | None: ...

    @property
    def backend(self) -> DisplayedBackend: ...

    @property
    def selected_shard_id(self) -> str | None: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def poll_timeout(self) -> float: ...

    @property
    def header(self) -> ConsoleHeader: ...

    @property
    def table(self) -> ShardTable: ...

    @property
    def ribbon(self) -> KeySpaceRibbon: ...

    @property
    def is_running(self) -> bool: ...

    def select_shard(self, shard_id: str, origin: str | None = None) -> None: ...

    def query_one(self, selector: type[QueryType]) -> QueryType: ...

    def notify(self, message: str, **options: Any) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def run_worker(
        self, work: Coroutine[None, None, None], *, group: str, exclusive: bool, exit_on_error: bool
    ) -> Worker[None]: ...


class StreamDisplay:
    def __init__(self, app: DisplayedConsole) -> None:
        self.app = app
        self._last_tiling_problem: str | None = None
        self._auto_since: tuple[str, str | None] | None = None  # (stream, since when) of the last AUTO notice
        self._capacity_stream: str | None = None  # the stream the CloudWatch loop follows
        self._capacity_worker: Worker[None] | None = None

    def cleared(self, stream: str | None) -> None:
        """Another stream is open: nothing of the previous one stays on screen as if it were this
        one, found or not (the panels that show it clear themselves: they follow the app's `stream`)."""
        app = self.app
        if self._capacity_worker is not None:
            self._capacity_worker.cancel()
            self._capacity_worker = None
        self._capacity_stream = None
        app.cloudwatch = None  # the Heat and Consumers tabs say it is being fetched
        app.ribbon.set_shards([])
        app.ribbon.set_heat({})
        app.header.update_state(stream=stream, summary=None, refreshed_at=None, error=None, capacity=None)

    async def show(self, stream: str, view: StreamView, *, relisted: bool) -> None:
        """One poll of `stream`: all of it after a fresh listing (`relisted`), else the summary only
        (the same shards: nothing in the table or the lineage changed). Nothing once the console
        has moved on to another stream."""
        if stream != self.app.stream:
            return
        if not relisted:
            self.header(view)
            self.app.post_message(StreamRefreshed(view))
            return
        if len(view.shards) > BIG_STREAM:
            settle_heap()
        await self.shards(view)
        view = await with_lineage(view)
        if stream == self.app.stream:
            self.lineage(view)

    async def shards(self, view: StreamView) -> None:
        """A fresh listing: the header, then the table, then the selection and the ribbon. Each step
        is a few ms even at 10k shards, but together they would hold the UI loop for tens of ms, so
        the loop gets a turn between them."""
        self.header(view)
        await asyncio.sleep(0)
        await self.app.table.apply_async(view.shards)
        await asyncio.sleep(0)
        self.selection_and_ribbon(view)

    def header(self, view: StreamView) -> None:
        """The summary: the header, the Heat tab's limits, the AUTO notice, the Consumers tab's listing."""
        app = self.app
        app.view = view
        app.header.update_state(summary=view.summary, refreshed_at=app.clock(), error=None, notice=None)
        app.auto_notice = self.auto_notice(view.summary)  # the key-space tabs follow it
        self.follow_capacity(view.summary.name)

    def auto_notice(self, summary: StreamSummary) -> str | None:
        """The AUTO notice for the key-space tabs; since when, from the action log, read once per switch."""
        if not summary.auto_distribution:
            self._auto_since = None
            return None
        if self._auto_since is None or self._auto_since[0] != summary.name:
            from console.lifecycle.settings import switched_to_auto_at
            from console.reshard.actionlog import ActionLog

            since = switched_to_auto_at(ActionLog.default().entries(), summary.name, self.app.backend.label)
            self._auto_since = (summary.name, since)
        return auto_notice(summary.name, self._auto_since[1])

    def selection_and_ribbon(self, view: StreamView) -> None:
        app = self.app
        if view.index is not None:
            app.ribbon.set_index(view.index, view.share_summary)
        elif not app.ribbon.open_shard_ids:
            # First load: draw the ribbon now; later polls update it from the lineage's index,
            # which is already sorted, a moment later (sorting 10k shards here would stall the UI).
            app.ribbon.set_shards(view.shards)
        if app.selected_shard_id is None or app.table.shard(app.selected_shard_id) is None:
            first = app.table.selected_shard_id or (app.table.shard_ids[0] if app.table.row_count else None)
            if first:
                app.select_shard(first)
        else:
            self.detail()

    def lineage(self, view: StreamView) -> None:
        """The lineage, once the poll has built it: the ribbon's index, Placement, the lineage tree."""
        app = self.app
        app.view = view
        if view.lineage is None:
            return
        if view.index is not None:
            app.ribbon.set_index(view.index, view.share_summary)
        if view.tiling_problem and (self._last_tiling_problem != view.tiling_problem):
            app.notify(view.tiling_problem, title="shard map", severity="warning")
        self._last_tiling_problem = view.tiling_problem
        if len(view.shards) > BIG_STREAM:
            settle_heap()
        app.post_message(StreamRefreshed(view))

    def detail(self) -> None:
        app = self.app
        app.query_one(ShardsPanel).show_detail(
            app.table.shard(app.selected_shard_id) if app.selected_shard_id else None
        )

    def failure(self, stream: str, error: Exception) -> None:
        """A poll of `stream` failed (shown in the header until a poll succeeds); the next one retries."""
        app = self.app
        if stream != app.stream:
            return
        reason = describe_failure(error, app.poll_timeout)
        if isinstance(error, TimeoutError) and app.header.state.notice:  # cut short while retrying
            reason += f" (last: {app.header.state.notice.split(';')[0]})"
        app.header.update_state(error=reason)
        app.post_message(PollFailed(reason))

    def retry(self, event: Any) -> None:  # a console.backend retry event
        """A backend call is being retried (throttled, a dropped connection): say so until a poll succeeds."""
        if self.app.is_running:
            self.app.header.update_state(notice=event.describe())

    def follow_capacity(self, stream: str) -> None:
        """Start the CloudWatch loop for `stream` the first time a poll shows it."""
        if stream != self._capacity_stream:
            self._capacity_stream = stream
            if CLOUDWATCH in self.app.backend.capabilities:
                self._capacity_worker = self.app.run_worker(
                    self._poll_capacity(stream), group="capacity", exclusive=True, exit_on_error=False
                )
            else:  # an in-memory source (tests, screenshots)
                self.app.cloudwatch = CloudWatchReading(None, NO_CLOUDWATCH)

    async def _poll_capacity(self, stream: str) -> None:
        """The stream's CloudWatch metrics: free at stream level, fetched once a minute (CloudWatch's
        resolution; more often would only cost more) for the header, the Heat and the Consumers tabs."""
        from console.heat.capacity import CapacitySummary, stream_metrics, unavailable_reason

        app = self.app
        while stream == app.stream:
            try:
                metrics = await stream_metrics(app.backend, stream)
            except ConsoleError as error:
                app.cloudwatch = CloudWatchReading(None, unavailable_reason(error))
                app.header.update_state(capacity=None)
            else:
                if stream != app.stream:
                    return
                app.cloudwatch = CloudWatchReading(metrics)
                app.header.update_state(capacity=CapacitySummary.of(metrics))
            await asyncio.sleep(CAPACITY_INTERVAL)
