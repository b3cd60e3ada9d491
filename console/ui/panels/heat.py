"""Heat panel: a sparkline per shard, the stream total, and the top keys of the selected shard.

No I/O here: the app runs `console.heat.sampler.HeatSampler` in a worker and calls
`update_snapshot()` with each `StreamHeatSnapshot`. The panel posts `HeatPanel.Shown` / `HeatPanel.Hidden`
so the app can start the sampler when the panel appears and stop it when it is hidden (or on quit).

Keys: up/down (or k/j) select a shard, h toggles hottest-first order, e turns on CloudWatch
enhanced monitoring (the app asks for the stream name first; greyed out when read-only).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Sparkline, Static

from console.heat.rates import RECENT_SECONDS, ShardHeatSnapshot, StreamHeatSnapshot
from console.read.printable import printable

SPARK_SECONDS = 60


def heat_style(utilisation: float) -> str:
    """Colour by share of the shard limit: calm, warm, hot."""
    if utilisation >= 0.8:
        return "bold red"
    if utilisation >= 0.5:
        return "yellow"
    return "green"


def shard_label(shard: ShardHeatSnapshot, *, selected: bool) -> Text:
    text = Text("▶ " if selected else "  ")
    text.append(f"{shard.shard_id[-6:]:>6}{' ' if shard.is_open else 'x'}", style="bold" if selected else "")
    # The live view shows the last whole seconds; the window average would flatten a new burst.
    now = shard.recent_utilisation
    text.append(f"{shard.recent_records_per_s:8.1f} rec/s {shard.recent_bytes_per_s / 1024:8.1f} KiB/s ")
    text.append(f"{now:4.0%}", style=heat_style(now))
    return text


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


class ShardHeatRow(Horizontal):
    """One shard: its label and a sparkline of records per second."""

    DEFAULT_CSS = """
    ShardHeatRow { height: 1; }
    ShardHeatRow > Static { width: 46; }
    ShardHeatRow > Sparkline { width: 1fr; }
    """

    def __init__(self, shard_id: str) -> None:
        super().__init__(classes="heat-row")
        self.shard_id = shard_id

    def compose(self) -> ComposeResult:
        yield Static(classes="heat-label")
        yield Sparkline([], summary_function=max, classes="heat-spark")

    def show(self, shard: ShardHeatSnapshot, *, selected: bool) -> None:
        self.query_one(".heat-label", Static).update(shard_label(shard, selected=selected))
        self.query_one(".heat-spark", Sparkline).data = list(shard.series[-SPARK_SECONDS:]) or [0]


class HeatPanel(Widget, can_focus=True):
    DEFAULT_CSS = """
    HeatPanel { height: 1fr; }
    HeatPanel #heat-total { height: 1; }
    HeatPanel #heat-total-spark { height: 2; }
    HeatPanel #heat-rows { height: 1fr; }
    HeatPanel #heat-keys { height: auto; max-height: 12; }
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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.snapshot: StreamHeatSnapshot | None = None
        self.hottest_first = False
        self.selected_shard: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("heat: waiting for the sampler...", id="heat-total")
            yield Sparkline([0], summary_function=max, id="heat-total-spark")
            yield VerticalScroll(id="heat-rows")
            yield Static(id="heat-keys")

    def on_show(self, event: events.Show) -> None:
        self.post_message(self.Shown())

    def on_hide(self, event: events.Hide) -> None:
        self.post_message(self.Hidden())

    # ---- fed by the app ---------------------------------------------------------------------

    def update_snapshot(self, snapshot: StreamHeatSnapshot) -> None:
        self.snapshot = snapshot
        if self.selected_shard not in {shard.shard_id for shard in snapshot.shards}:
            hottest = snapshot.hottest
            self.selected_shard = hottest.shard_id if hottest else (
                snapshot.shards[0].shard_id if snapshot.shards else None)
        self._render_snapshot()

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
        total = Text(f"{snapshot.stream}: {recent:,.1f} rec/s  {recent_bytes / 1024:,.1f} KiB/s "
                     f"(last {RECENT_SECONDS} s; {snapshot.records_per_s:,.1f} rec/s over "
                     f"{snapshot.window_end - snapshot.window_start:.0f} s)"
                     f"  ({'hottest first' if self.hottest_first else 'key-space order'}; h toggles)")
        self.query_one("#heat-total", Static).update(total)
        self.query_one("#heat-total-spark", Sparkline).data = list(snapshot.series[-SPARK_SECONDS:]) or [0]
        rows_box = self.query_one("#heat-rows", VerticalScroll)
        ordered = self.ordered_shards
        rows = list(rows_box.query(ShardHeatRow))
        if [row.shard_id for row in rows] != [shard.shard_id for shard in ordered]:
            rows_box.remove_children()
            rows = [ShardHeatRow(shard.shard_id) for shard in ordered]
            rows_box.mount_all(rows)
            self.call_after_refresh(self._render_snapshot)  # rows compose first; fill them next frame
            return
        for row, shard in zip(rows, ordered):
            row.show(shard, selected=shard.shard_id == self.selected_shard)
        self.query_one("#heat-keys", Static).update(top_keys_text(self.selected, snapshot.stream))

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
        self.selected_shard = ids[(position + step) % len(ids)]
        self._render_snapshot()

    def action_toggle_order(self) -> None:
        self.hottest_first = not self.hottest_first
        self._render_snapshot()

