"""The console's shard poll: the open stream's summary and shards, every `interval` seconds.

One poll at a time, in a worker of the app's "poll" group; the next is armed `interval` after one
ends (not after one cancelled: another stream was opened). A timed poll lists the shards only when
the ListingSchedule says so; a poll asked for (a key, a change that landed) lists them all. The poll
holds the app's `poll_lock` while it calls the backend, so it never overlaps the Consumers tab's lease
poll. What it finds is written by the app's StreamDisplay.

The launcher asks for the first poll's answer before the UI starts (the server works on it while
Textual loads): handed in as `first_view`, it is the first poll's result when that poll is of the
same stream, and dropped otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Protocol

from textual.css.query import DOMQuery
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from console.backend.protocol import StreamReads
from console.ui.source import ListingSchedule, StreamView, fetch_stream
from console.ui.stream_display import StreamDisplay
from console.ui.widgets.header import ConsoleHeader


class PolledConsole(Protocol):
    """What the poll reads of the console app (console.ui.app.KConsoleApp is one), where it writes
    what it found (`stream_display`), and the Textual calls it makes on it."""

    interval: float
    poll_timeout: float
    poll_lock: asyncio.Lock
    stream_display: StreamDisplay

    @property
    def backend(self) -> StreamReads: ...

    @property
    def stream(self) -> str | None: ...

    @property
    def view(self) -> StreamView | None: ...

    @property
    def header(self) -> ConsoleHeader: ...

    @property
    def is_running(self) -> bool: ...

    def query(self, selector: type[Widget]) -> DOMQuery[Widget]: ...

    def set_timer(self, delay: float, callback: Callable[[], object]) -> Timer: ...

    def run_worker(
        self,
        work: Callable[[], Coroutine[None, None, None]],
        *,
        group: str,
        exclusive: bool,
        exit_on_error: bool,
        description: str,
    ) -> Worker[None]: ...


class ShardPoll:
    def __init__(self, app: PolledConsole, *, first_view: tuple[str, Awaitable[StreamView]] | None = None) -> None:
        self.app = app
        self._first_view = first_view  # (stream, its view asked for before the UI started)
        self.count = 0  # polls that ended
        self._worker: Worker[None] | None = None
        self._timer: Timer | None = None
        self._listing = ListingSchedule()

    @property
    def running(self) -> bool:
        return self._worker is not None and not (self._worker.is_finished or self._worker.is_cancelled)

    def start(self, *, list_all: bool = True) -> bool:
        """Start a poll unless one is running (False then)."""
        app = self.app
        if self.running or not app.stream or not app.query(ConsoleHeader):
            return False  # (no header: the console is closing, and a late message asked for a poll)
        self._disarm()
        app.header.update_state(polling=True)
        previous = app.view if app.view is not None and app.view.summary.name == app.stream else None
        if list_all or previous is None or self._listing.next_poll_lists_all():
            previous = None
        # A description, or Textual builds one from repr() of the arguments: the whole previous view,
        # 10,000 shards, every five seconds (most of the idle CPU at that size).
        self._worker = app.run_worker(
            partial(self._poll, app.stream, previous),
            group="poll",
            exclusive=True,
            exit_on_error=False,
            description="poll the stream",
        )
        return True

    def stop(self) -> None:
        """Another stream opens: the poll in flight is cancelled and none is armed."""
        self._disarm()
        self._first_view = None
        if self._worker is not None:
            self._worker.cancel()

    def ended(self, event: Worker.StateChanged) -> None:
        """A poll that ended (succeeded or failed, not cancelled) arms the next."""
        if event.worker is not self._worker or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        self.count += 1
        if self.app.is_running:
            self.app.header.update_state(polling=False)
            self._timer = self.app.set_timer(self.app.interval, self._timed)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _timed(self) -> None:
        if self.app.is_running:  # a timer may still fire while the app shuts down
            self.start(list_all=False)

    async def _poll(self, stream: str, previous: StreamView | None) -> None:
        app = self.app
        try:
            first, self._first_view = self._first_view, None
            async with app.poll_lock:  # a lease poll in flight finishes first
                asked = (
                    first[1]
                    if first is not None and first[0] == stream
                    else fetch_stream(app.backend, stream, previous)
                )
                view = await asyncio.wait_for(asked, app.poll_timeout)
            relisted = previous is None or view.shards is not previous.shards
            if relisted and stream == app.stream:
                self._listing.listed_all()
            await app.stream_display.show(stream, view, relisted=relisted)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # every failure is shown in the header; the next poll retries
            app.stream_display.failure(stream, error)
