"""Heat panel: a heat map of the shards over the last five minutes (console.ui.widgets.heat_map),
the stream total, the stream's CloudWatch metrics of the last 30 minutes, and the top keys (and, with
enhanced monitoring, the shard-level CloudWatch metrics) of the selected shard.

No I/O here: the app runs `console.heat.sampler.HeatSampler` in a worker and calls
`update_snapshot()` with each `StreamHeatSnapshot`, and polls CloudWatch (console.ui.capacity_host),
calling `show_capacity()` and `show_shard_capacity()`. The panel posts `HeatPanel.Shown` / `HeatPanel.Hidden`
so the app can start the sampler when the panel appears and stop it when it is hidden (or on quit),
and `HeatPanel.SelectionChanged` so it can fetch the newly selected shard's metrics.

Keys: up/down (or k/j) select a shard, h toggles hottest-first order, e turns on CloudWatch
enhanced monitoring (the app asks for the stream name first; greyed out when read-only).
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from console.heat.capacity import MetricSeries
from console.heat.snapshot import RECENT_SECONDS, ShardHeatSnapshot, StreamHeatSnapshot
from console.read.printable import printable
from console.ui.widgets.heat_map import HeatMap, HeatRow, legend
from console.ui.widgets.metric_lines import capacity_text, stream_capacity_text


def top_keys_text(shard: ShardHeatSnapshot | None, stream: str) -> Text:
    if shard is None:
        return Text("no shard selected", style="dim")
    text = Text(f"{shard.shard_id}: peak {shard.peak_records_per_s} rec/s, "
                f"peak utilisation {shard.peak_utilisation:.0%}\n", style="bold")
    repeated = [row for row in shard.top_keys if row.guaranteed_records > 1]  # a key seen once is not heat
    if not shard.records:
        text.append("no records sampled yet\n", style="dim")
    elif not repeated:
        text.append("no key repeats: the traffic is spread\n", style="dim")
    for row in repeated:
        text.append(f"  {printable(row.key)}  {row.records} records  {row.share:.0%}\n")
    if shard.split is not None and shard.records:
        text.append(f"split at median (children ~{shard.split.lower_share:.0%} / {1 - shard.split.lower_share:.0%}): "
                    f"{shard.split.command(stream)}\n", style="cyan")
        if shard.split.dominant_key:
            text.append(f"  {printable(shard.split.dominant_key)} carries {shard.split.dominant_share:.0%}: "
                        "write-shard it (`kconsole heat` shows the what-if)\n", style="yellow")
    return text


class HeatPanel(Widget, can_focus=True):
    DEFAULT_CSS = """
    HeatPanel { height: 1fr; }
    HeatPanel #heat-total { height: auto; }
    HeatPanel #heat-legend { height: auto; }
    HeatPanel #heat-map { height: 1fr; min-height: 5; }
    HeatPanel #heat-capacity { height: auto; margin-bottom: 1; }
    HeatPanel #heat-keys { height: auto; max-height: 35%; }
    HeatPanel #heat-shard-capacity { height: auto; }
    """

    BINDINGS = [
        Binding("up,k", "select(-1)", "Previous shard", show=False),
        Binding("down,j", "select(1)", "Next shard", show=False),
        Binding("h", "toggle_order", "Hottest first", id="heat.order"),
        # The app runs it (confirmation, read-only gating, the backend call in a worker).
        Binding("e", "app.enable_monitoring", "Enhanced monitoring", id="heat.monitoring"),
    ]

    class Shown(Message):
        """The panel became visible: start sampling."""

    class Hidden(Message):
        """The panel was hidden: stop sampling."""

    class SelectionChanged(Message):
        """Another shard is selected: its shard-level metrics are wanted."""

        def __init__(self, shard_id: str | None) -> None:
            super().__init__()
            self.shard_id = shard_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.snapshot: StreamHeatSnapshot | None = None
        self.hottest_first = False
        self.selected_shard: str | None = None

    def compose(self) -> ComposeResult:
        # Scrolls (mouse wheel) on a short terminal rather than cutting the metrics off; the keys
        # stay with the panel, which keeps the focus.
        with VerticalScroll(can_focus=False):
            yield Static("heat: waiting for the sampler...", id="heat-total")
            yield Static(id="heat-legend")
            yield HeatMap(id="heat-map")
            yield Static(Text("fetching the stream's CloudWatch metrics…", style="dim"), id="heat-capacity")
            yield Static(id="heat-keys")
            yield Static(id="heat-shard-capacity")

    def on_show(self, event: events.Show) -> None:
        self.post_message(self.Shown())

    def on_hide(self, event: events.Hide) -> None:
        self.post_message(self.Hidden())

    # ---- fed by the app ---------------------------------------------------------------------

    def update_snapshot(self, snapshot: StreamHeatSnapshot) -> None:
        self.snapshot = snapshot
        if self.selected_shard not in {shard.shard_id for shard in snapshot.shards}:
            hottest = snapshot.hottest
            self._select(hottest.shard_id if hottest else (snapshot.shards[0].shard_id if snapshot.shards else None))
        self._render_snapshot()

    def show_capacity(self, metrics: MetricSeries | None, problem: str | None = None) -> None:
        """The stream-level CloudWatch metrics (None: `problem` says why there are none)."""
        self.query_one("#heat-capacity", Static).update(stream_capacity_text(metrics, problem))

    def show_shard_capacity(self, shard_id: str | None, metrics: MetricSeries | None, note: str | None = None) -> None:
        """The selected shard's shard-level CloudWatch metrics, or a line saying why there are none
        (`note`; empty: nothing to say)."""
        widget = self.query_one("#heat-shard-capacity", Static)
        if metrics is None:
            widget.update(Text(printable(note or ""), style="dim"))
            return
        shard = printable(shard_id or "")
        widget.update(capacity_text(metrics, None, title=f"CloudWatch · {shard} · enhanced monitoring",
                                    empty=f"CloudWatch: no data for {shard} yet"))

    def _select(self, shard_id: str | None) -> None:
        if shard_id != self.selected_shard:
            self.selected_shard = shard_id
            self.post_message(self.SelectionChanged(shard_id))

    @property
    def ordered_shards(self) -> list[ShardHeatSnapshot]:
        if self.snapshot is None:
            return []
        return self.snapshot.hottest_first() if self.hottest_first else list(self.snapshot.shards)

    def _render_snapshot(self) -> None:
        snapshot = self.snapshot
        if snapshot is None or not self.is_mounted:
            return
        recent = sum(shard.recent_records_per_s for shard in snapshot.shards)
        recent_bytes = sum(shard.recent_bytes_per_s for shard in snapshot.shards)
        order = "hottest first" if self.hottest_first else "key-space order"
        if snapshot.shards and not snapshot.series:
            total = Text(f"{snapshot.stream}: sampling started; the first second is being read …", style="italic")
        elif not any(shard.records for shard in snapshot.shards):
            total = Text(f"{snapshot.stream}: idle, no records written in the "
                         f"{snapshot.window_end - snapshot.window_start:.0f} s sampled so far", style="italic")
        else:
            total = Text(f"{snapshot.stream}: {recent:,.1f} rec/s  {recent_bytes / 1024:,.1f} KiB/s "
                         f"(last {RECENT_SECONDS} s; {snapshot.records_per_s:,.1f} rec/s over "
                         f"{snapshot.window_end - snapshot.window_start:.0f} s)")
        total.append(f"  ({order}; h toggles, ↑↓ select)", style="dim")
        self.query_one("#heat-total", Static).update(total)
        heat_map = self.query_one(HeatMap)
        heat_map.show([HeatRow(shard.shard_id, shard.is_open, shard.recent_records_per_s, shard.recent_utilisation,
                               shard.utilisation_series) for shard in self.ordered_shards], self.selected_shard)
        self.query_one("#heat-legend", Static).update(Text.assemble(*((seg.text, seg.style) for seg in
                                                                      legend(heat_map.per_cell))))
        self.query_one("#heat-keys", Static).update(top_keys_text(self.selected, snapshot.stream))

    @on(HeatMap.RowClicked)
    def _row_clicked(self, event: HeatMap.RowClicked) -> None:
        self._select(event.shard_id)
        self._render_snapshot()

    @property
    def selected(self) -> ShardHeatSnapshot | None:
        for shard in self.ordered_shards:
            if shard.shard_id == self.selected_shard:
                return shard
        return None

    # ---- keys -------------------------------------------------------------------------------

    def action_select(self, step: int) -> None:
        ordered = self.ordered_shards
        if not ordered:
            return
        ids = [shard.shard_id for shard in ordered]
        position = ids.index(self.selected_shard) if self.selected_shard in ids else 0
        self._select(ids[(position + step) % len(ids)])
        self._render_snapshot()

    def action_toggle_order(self) -> None:
        self.hottest_first = not self.hottest_first
        self._render_snapshot()

