"""The two-line header: which stream and how healthy it is, where we are connected, how fresh the data is.

    orders  ACTIVE  PROVISIONED  4 open shards  retention 24h
    local 127.0.0.1:4567 · us-east-1 · profile ops  lag 3.2 s  throttled 0  MASKED  READ-ONLY  refreshed 3s ago

It turns red with the reason when a poll fails and goes back to normal on the next good poll.
The right-hand parts (a running reshard, masking, read-only, the age) stay put; a long left part is cut
with an ellipsis first, so an 80-column terminal still shows every field. A stream line too wide
for the terminal is worded compactly ("4 shards 24h", badges "AUTO", "4 MiB records") before anything
is cut, so the badges that change how the stream behaves stay in view. The capacity summary
(CloudWatch's iterator age and throttled requests of the last 5 minutes) is shown only when it fits
without cutting anything; the Heat tab always has it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from console.topology.model import StreamSummary
from console.ui.format import format_age
from console.ui.widgets.metric_lines import summary_text
from console.words import counted

if TYPE_CHECKING:
    from console.heat.capacity import CapacitySummary

GAP = "  "  # fields are separated by space, not punctuation: easier to scan


@dataclass(frozen=True)
class HeaderState:
    connected_to: str = ""  # the backend's label
    region: str | None = None
    profile: str | None = None
    stream: str | None = None
    summary: StreamSummary | None = None
    refreshed_at: float | None = None  # clock() time of the last good poll
    error: str | None = None  # why the last poll failed; None when healthy
    read_only: bool = False
    masking: str | None = None  # MASKED, UNMASKED (the mask rules turned off), None: no mask rules
    polling: bool = False
    activity: str | None = None  # a long-running action in progress (e.g. a reshard waiting for ACTIVE)
    notice: str | None = None  # the latest retried call ("connection dropped on ListShards; retry 2 in 0.4 s")
    capacity: CapacitySummary | None = None  # CloudWatch's last few minutes (None: no data)
    server: str | None = None  # the embedded server's fate ("embedded server exited (signal 9); restarting")


class ConsoleHeader(Widget):
    """Always visible; re-renders once a second so the refresh age stays true."""

    COMPONENT_CLASSES = {"console-header--ok", "console-header--busy", "console-header--dim", "console-header--badge"}

    DEFAULT_CSS = """
    ConsoleHeader > .console-header--ok { color: $text-success; text-style: bold; }
    ConsoleHeader > .console-header--busy { color: $text-warning; text-style: bold; }
    ConsoleHeader > .console-header--dim { color: $text-muted; }
    ConsoleHeader > .console-header--badge { color: $text-warning; text-style: bold; }
    ConsoleHeader.-failing > .console-header--dim { color: $text; }
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self.state = HeaderState()

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)

    def update_state(self, **changes: Any) -> None:
        self.state = replace(self.state, **changes)
        failing = self.state.error is not None
        if failing != self.has_class("-failing"):  # a class change re-applies styles: only when it flips
            self.set_class(failing, "-failing")
        self.refresh()

    @property
    def failing(self) -> bool:
        return self.state.error is not None

    def _part(self, name: str) -> Style:
        return self.get_component_rich_style(f"console-header--{name}", partial=True)

    def render(self) -> Text:
        state = self.state
        width = self.content_region.width or 80
        age = "never" if state.refreshed_at is None else format_age(max(0.0, self._clock() - state.refreshed_at))
        dim = self._part("dim")

        stream_line = self._stream_line(compact=False)
        if stream_line.cell_len > width:  # the badges matter more than the words around the counts
            stream_line = self._stream_line(compact=True)
        if state.error is None and state.notice is not None:
            stream_line.append(f"{GAP}{state.notice}", style=self._part("busy"))

        where = Text(f" {state.connected_to or 'not connected'}", style=dim)
        if state.region and state.region not in state.connected_to:
            where.append(f" · {state.region}")
        if state.profile and state.profile not in state.connected_to:
            where.append(f" · profile {state.profile}")
        if state.server:
            where.append(f" · {state.server}", style=self._part("busy"))
        right = Text()
        if state.activity:
            right.append(f"{state.activity}{GAP}", style=self._part("busy"))
        if state.masking:
            masked = state.masking == "MASKED"  # turned off, it stands out: what is shown may be personal data
            right.append(
                f" {state.masking} ", style=self._part("badge") if masked else self._part("busy") + Style(reverse=True)
            )
            right.append(GAP)
        if state.read_only:
            right.append(" READ-ONLY ", style=self._part("badge") + Style(reverse=True))
            right.append(GAP)
        if state.error is not None:
            right.append(f"last good data {age}, retrying ", style="bold")
        else:
            right.append("refreshing… " if state.polling else f"refreshed {age} ", style=dim)
        if state.capacity is not None and state.error is None:
            capacity = Text(
                summary_text(state.capacity) + GAP, style=self._part("busy") if state.capacity.throttled else dim
            )
            if where.cell_len + 1 + capacity.cell_len + right.cell_len <= width:  # only where nothing is cut
                right = capacity + right
        return Text("\n").join([_spread(stream_line, Text(), width), _spread(where, right, width)])

    def _stream_line(self, *, compact: bool) -> Text:
        """Name, status, mode, shards, retention and the badges; `compact` in fewer columns."""
        state = self.state
        gap = " " if compact else GAP
        line = Text()
        line.append(f" {state.stream or '(no stream: press p)'}", style="bold")
        summary = state.summary
        if state.error is not None:
            line.append(f"{GAP}POLL FAILED: {state.error}", style="bold")
        elif summary is not None:
            healthy = summary.status == "ACTIVE"
            line.append(gap)
            # The gap goes inside the styled span: SVG renderers that drop a span's leading spaces
            # (the screenshots) would otherwise run the words together.
            line.append(summary.status + gap, style=self._part("ok" if healthy else "busy"))
            shards, retention = (
                (f"{counted(summary.open_shard_count, 'shard')}", f"{summary.retention_hours}h")
                if compact
                else (f"{counted(summary.open_shard_count, 'open shard')}", f"retention {summary.retention_hours}h")
            )
            line.append(f"{summary.mode}{gap}{shards}{gap}{retention}")
            for badge in summary.badges(compact=compact):  # what changes how the stream behaves
                line.append(gap)
                line.append(f" {badge} ", style=self._part("badge") + Style(reverse=True))
        return line


def _spread(left: Text, right: Text, width: int) -> Text:
    """`left` then `right` flush with the right edge, at least a space between them; the left part is
    cut (with …) when both do not fit."""
    room = max(0, width - right.cell_len - (1 if right.cell_len else 0))
    if left.cell_len > room:
        left = left.copy()
        left.truncate(room, overflow="ellipsis")  # ends in "…"
    line = left.copy()
    line.append(" " * max(0, width - left.cell_len - right.cell_len))
    line.append_text(right)
    line.no_wrap = True
    line.overflow = "ellipsis"
    return line
