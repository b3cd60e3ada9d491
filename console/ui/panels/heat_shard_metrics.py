"""The selected shard's shard-level CloudWatch metrics in the Heat tab (enhanced monitoring): fetched
for that shard only (a 10,000-shard stream costs no more than one), when the selection (or enhanced
monitoring) changes and settles and again each minute; and enhanced monitoring switched on (e). The
panel (console.ui.panels.heat) owns the workers that run these and shows what they find.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from textual.notifications import SeverityLevel

from console.backend.protocol import ConsoleBackend
from console.errors import ConsoleError
from console.heat.capacity import MetricSeries, shard_metrics, unavailable_reason

SHARD_CAPACITY_SECONDS = 60.0  # a selected shard's metrics are fetched again after this long (CloudWatch's resolution)
SETTLE_SECONDS = 0.3  # after a selection change: arrow keys held down fetch once, for where they stop
MONITORING_OFF = "per-shard CloudWatch metrics need enhanced monitoring on the stream (e turns it on)"


class ShardMetricsPanel(Protocol):
    """What these read and set on the Heat panel (console.ui.panels.heat.HeatPanel)."""

    selected_shard: str | None
    _shard_metrics_on: dict[str, str]  # enhanced monitoring's shard-level metrics and statistics
    _shard_capacity: dict[str, MetricSeries]  # selected shards fetched in the last minute
    _wake: asyncio.Event  # the selection or enhanced monitoring changed

    def show_shard_capacity(
        self, shard_id: str | None, metrics: MetricSeries | None, note: str | None = None
    ) -> None: ...

    def notify(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None
    ) -> None: ...


async def watch_selected_shard_metrics(panel: ShardMetricsPanel, backend: ConsoleBackend, stream: str) -> None:
    """The selected shard's CloudWatch metrics: fetched when the selection (or enhanced
    monitoring) changes and settles, and again each minute. One loop: fetches never overlap."""
    while True:
        panel._wake.clear()  # before fetching: a wake during the fetch starts the next round at once
        if show_selected_shard_metrics(panel):
            await fetch_selected_shard_metrics(panel, backend, stream)
        try:
            await asyncio.wait_for(panel._wake.wait(), SHARD_CAPACITY_SECONDS)
        except TimeoutError:
            panel._shard_capacity = {}  # a minute old: fetched again
            continue
        await asyncio.sleep(SETTLE_SECONDS)


def show_selected_shard_metrics(panel: ShardMetricsPanel) -> bool:
    """Show what is known of the selected shard's metrics; True when they still need fetching."""
    shard_id = panel.selected_shard
    if not panel._shard_metrics_on:
        panel.show_shard_capacity(shard_id, None, MONITORING_OFF)
        return False
    if shard_id is None:
        return False
    known = panel._shard_capacity.get(shard_id)
    if known is not None:
        panel.show_shard_capacity(shard_id, known)
        return False
    panel.show_shard_capacity(shard_id, None, f"fetching CloudWatch metrics of {shard_id}…")
    return True


async def fetch_selected_shard_metrics(panel: ShardMetricsPanel, backend: ConsoleBackend, stream: str) -> None:
    shard_id = panel.selected_shard
    if shard_id is None:
        return
    try:
        found = await shard_metrics(backend, stream, [shard_id], panel._shard_metrics_on)
    except ConsoleError as error:
        panel.show_shard_capacity(shard_id, None, unavailable_reason(error))
        return
    panel._shard_capacity[shard_id] = found[shard_id]
    if panel.selected_shard == shard_id:
        panel.show_shard_capacity(shard_id, found[shard_id])


async def enable_enhanced_monitoring(
    panel: ShardMetricsPanel, backend: ConsoleBackend, stream: str, metrics: tuple[str, ...]
) -> bool:
    """Prepared and run by console.lifecycle.actions, as `kconsole heat --enable-enhanced-monitoring`; True
    when it was switched on."""
    from console.lifecycle import actions
    from console.reshard.actionlog import ActionLog

    try:
        plan = await actions.prepare_enhanced_monitoring(backend, stream, metrics)
        await actions.run(
            backend,
            plan,
            action_log=ActionLog.default(),
            progress=lambda text: None if text.startswith("calling") else panel.notify(text, title="heat", timeout=5),
        )
        enabled = (await backend.describe_stream_summary(stream)).enhanced_metrics
    except ConsoleError as error:
        panel.notify(f"enhanced monitoring: {error.message}", severity="error", timeout=10)
        return False
    panel.notify(f"enhanced monitoring on {stream}: {', '.join(sorted(enabled)) or 'none'}", title="heat", timeout=8)
    return True
