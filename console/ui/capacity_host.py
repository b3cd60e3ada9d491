"""Polling the stream's capacity from CloudWatch (the panels do no I/O of their own).

Once a stream is open, one worker loop fetches its free stream-level metrics every minute
(CloudWatch's resolution; more often would only cost more) and shows them in the header's summary,
the Heat tab and the Consumers tab. While the Heat tab is shown and enhanced monitoring has
shard-level metrics on, the same loop fetches the selected shard's metrics (only that shard: a
10,000-shard stream costs no more than one) when the selection changes, and again each minute.
One loop, so its fetches never overlap; a selection change wakes it early.
"""

from __future__ import annotations

import asyncio
import time

from textual import work

from console.errors import ConsoleError
from console.heat.capacity import (
    CapacitySummary,
    MetricSeries,
    enabled_shard_metrics,
    shard_metrics,
    stream_metrics,
    unavailable_reason,
)
from console.ui.panels.consumers import ConsumersPanel
from console.ui.panels.heat import HeatPanel

CAPACITY_INTERVAL = 60.0  # seconds between stream-level fetches
SETTLE_SECONDS = 0.3  # after a selection change: arrow keys held down fetch once, for where they stop
MONITORING_OFF = "per-shard CloudWatch metrics need enhanced monitoring on the stream (e turns it on)"


class CapacityHost:
    """Mixed into KConsoleApp. Expects `source`, `stream`, `header`, `selected_shard_id`; the app
    calls `watch_capacity(view)` with every poll's result."""

    CAPACITY_GROUP = "capacity"
    _capacity_stream: str | None = None
    _capacity_wake: asyncio.Event | None = None
    _heat_shown = False
    _shard_metrics_on: dict[str, str] = {}  # the enabled shard-level metrics and their statistics
    _shard_capacity: dict[str, MetricSeries]  # selected shards fetched since the last stream fetch

    def stop_panel_work(self) -> None:
        self.workers.cancel_group(self, self.CAPACITY_GROUP)
        self._capacity_stream = None
        self.header.update_state(capacity=None)
        super().stop_panel_work()

    def watch_capacity(self, view) -> None:
        """A poll's result: start the loop for a newly opened stream, wake it when enhanced
        monitoring was switched."""
        enabled = enabled_shard_metrics(view.summary.enhanced_metrics)
        changed, self._shard_metrics_on = enabled != self._shard_metrics_on, enabled
        if view.summary.name == self._capacity_stream:
            if changed:
                self._wake_capacity()
            return
        self._capacity_stream = view.summary.name
        self._shard_capacity = {}
        if not hasattr(self.source, "stream_metrics"):  # an in-memory source (tests, screenshots)
            self._heat_panel.show_capacity(None, "no CloudWatch metrics: this source has no CloudWatch")
            return
        self._capacity_wake = asyncio.Event()
        self._poll_capacity(view.summary.name, self._capacity_wake)

    @property
    def _heat_panel(self) -> HeatPanel:
        return self.query_one(HeatPanel)

    def _wake_capacity(self) -> None:
        if self._capacity_wake is not None:
            self._capacity_wake.set()

    def on_heat_panel_shown(self, _event: HeatPanel.Shown) -> None:
        self._heat_shown = True
        self._wake_capacity()

    def on_heat_panel_hidden(self, _event: HeatPanel.Hidden) -> None:
        self._heat_shown = False

    def on_heat_panel_selection_changed(self, _event: HeatPanel.SelectionChanged) -> None:
        if self._show_selected_shard_capacity():
            self._wake_capacity()

    @work(exclusive=True, group="capacity", exit_on_error=False)
    async def _poll_capacity(self, stream: str, wake: asyncio.Event) -> None:
        next_stream_fetch = 0.0
        while stream == self.stream:
            wake.clear()  # before fetching: a wake during the fetch starts the next round at once
            if time.monotonic() >= next_stream_fetch:
                await self._fetch_stream_capacity(stream)
                next_stream_fetch = time.monotonic() + CAPACITY_INTERVAL
                self._shard_capacity = {}  # a minute old: fetched again when next shown
            if self._heat_shown and self._show_selected_shard_capacity():
                await self._fetch_selected_shard_capacity(stream)
            try:
                await asyncio.wait_for(wake.wait(), max(0.0, next_stream_fetch - time.monotonic()))
            except TimeoutError:
                continue
            await asyncio.sleep(SETTLE_SECONDS)

    async def _fetch_stream_capacity(self, stream: str) -> None:
        consumers = self.query_one(ConsumersPanel)
        try:
            metrics = await stream_metrics(self.source, stream)
        except ConsoleError as error:
            reason = unavailable_reason(error)
            self._heat_panel.show_capacity(None, reason)
            consumers.show_metrics(None, reason)
            self.header.update_state(capacity=None)
            return
        if stream != self.stream:
            return
        self._heat_panel.show_capacity(metrics)
        consumers.show_metrics(metrics)
        self.header.update_state(capacity=CapacitySummary.of(metrics))

    def _selected_heat_shard(self) -> str | None:
        return self._heat_panel.selected_shard or self.selected_shard_id

    def _show_selected_shard_capacity(self) -> bool:
        """Show what is known of the selected shard's metrics; True when they still need fetching."""
        shard_id = self._selected_heat_shard()
        panel = self._heat_panel
        if not self._shard_metrics_on:
            panel.show_shard_capacity(shard_id, None, MONITORING_OFF)
            return False
        if shard_id is None:
            return False
        known = self._shard_capacity.get(shard_id)
        if known is not None:
            panel.show_shard_capacity(shard_id, known)
            return False
        panel.show_shard_capacity(shard_id, None, f"fetching CloudWatch metrics of {shard_id}…")
        return True

    async def _fetch_selected_shard_capacity(self, stream: str) -> None:
        shard_id = self._selected_heat_shard()
        if shard_id is None:
            return
        try:
            found = await shard_metrics(self.source, stream, [shard_id], self._shard_metrics_on)
        except ConsoleError as error:
            self._heat_panel.show_shard_capacity(shard_id, None, unavailable_reason(error))
            return
        if stream != self.stream:
            return
        self._shard_capacity[shard_id] = found[shard_id]
        if self._selected_heat_shard() == shard_id:
            self._heat_panel.show_shard_capacity(shard_id, found[shard_id])
