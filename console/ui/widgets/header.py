"""The two-line header: where we are connected, which stream, its health, and how fresh the data is.

It turns red with the reason when a poll fails and goes back to normal on the next good poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rich.text import Text
from textual.widget import Widget

from console.model import StreamSummary
from console.ui.format import format_age


@dataclass(frozen=True)
class HeaderState:
    backend: str = ""
    region: str | None = None
    profile: str | None = None
    stream: str | None = None
    summary: StreamSummary | None = None
    refreshed_at: float | None = None  # clock() time of the last good poll
    error: str | None = None  # why the last poll failed; None when healthy
    read_only: bool = False
    polling: bool = False


class ConsoleHeader(Widget):
    """Always visible; re-renders once a second so the refresh age stays true."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self.state = HeaderState()

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)

    def update_state(self, **changes) -> None:
        self.state = replace(self.state, **changes)
        failing = self.state.error is not None
        if failing != self.has_class("-failing"):  # a class change re-applies styles: only when it flips
            self.set_class(failing, "-failing")
        self.refresh()

    @property
    def failing(self) -> bool:
        return self.state.error is not None

    def render(self) -> Text:
        state = self.state
        age = "never" if state.refreshed_at is None else format_age(max(0.0, self._clock() - state.refreshed_at))
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append(" kconsole ", style="bold reverse")
        top.append(f" {state.backend or 'not connected'}", style="bold")
        if state.region and state.region not in state.backend:
            top.append(f" · {state.region}")
        if state.profile and state.profile not in state.backend:
            top.append(f" · profile {state.profile}")
        if state.read_only:
            top.append(" ")
            top.append(" READ-ONLY ", style="bold reverse")
        if state.error is None:
            top.append(f" · refreshed {age}")
            if state.polling:
                top.append(" ⟳")
        bottom = Text(no_wrap=True, overflow="ellipsis")
        bottom.append(f" {state.stream or '(no stream: press p)'}", style="bold")
        summary = state.summary
        if state.error is not None:
            bottom.append(" · ")
            bottom.append(f"POLL FAILED: {state.error}", style="bold")
            bottom.append(f" · last good {age} · retrying")
        elif summary is not None:
            bottom.append(" · ")
            bottom.append(summary.status, style="bold" if summary.status == "ACTIVE" else "bold reverse")
            bottom.append(f" · {summary.mode} · {summary.open_shard_count} open shards"
                          f" · retention {summary.retention_hours}h")
        return Text("\n").join([top, bottom])
