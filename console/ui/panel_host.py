"""Running the I/O behind the producer, tail and heat panels (which do none themselves).

Each panel asks with a message; the app runs the domain code (console.produce.verify, console.read.tail,
console.heat.sampler) in a worker on the same backend the console polls, and feeds the panel.
Workers are grouped per panel, so Stop (or hiding the heat panel, or opening another stream, or
quitting) cancels exactly that panel's work and no task outlives it.
"""

from __future__ import annotations

from textual import work

from console.errors import ConsoleError
from console.heat.cloudwatch import SHARD_LEVEL_METRICS
from console.heat.sampler import HeatSampler
from console.produce.verify import run_and_verify
from console.read.printable import printable
from console.read.tail import TailReader
from console.ui.panels.heat import HeatPanel
from console.ui.panels.producer import ProducerPanel
from console.ui.panels.tail import TailView
from console.ui.screens.reshard import ConfirmByNameScreen
from console.ui.widgets.heat_map import MAP_SECONDS
from console.ui.widgets.shard_table import ShardHeat


class PanelHost:
    """Mixed into KConsoleApp. Expects `source`, `stream`, `read_only`, `table`, `ribbon`."""

    PANEL_GROUPS = ("producer", "tail", "heat")

    def stop_panel_work(self) -> None:
        """Cancel every panel's worker (another stream was opened)."""
        for group in self.PANEL_GROUPS:
            self.workers.cancel_group(self, group)
        self._clear_heat()

    # ---- producer --------------------------------------------------------------------------------

    # Handlers by name (on_<panel>_<message>), not @on: Textual collects @on handlers only from
    # classes that are message pumps themselves, and this is a mixin.

    def on_producer_panel_start_requested(self, event: ProducerPanel.StartRequested) -> None:
        if self.read_only:
            event.panel.show_error("read-only: the producer writes records, so it is disabled (--read-only)")
            return
        if not self.stream:
            event.panel.show_error("no stream open: press p to pick one")
            return

        panel, settings, verify, stream = event.panel, event.settings, event.verify, self.stream

        def confirmed(yes: bool | None) -> None:
            # Writing to a stream is a change like a reshard: the operator types its name first.
            if yes:
                self._run_producer(panel, settings, verify, stream)
            else:
                panel.show_error("cancelled: nothing was written")

        self.push_screen(ConfirmByNameScreen(stream, f"Write {settings.total} test records ({settings.keys} keys x "
                                                     f"{settings.records_per_key}) to {stream}"), confirmed)

    def on_producer_panel_stop_requested(self, event: ProducerPanel.StopRequested) -> None:
        self.workers.cancel_group(self, "producer")
        event.panel.show_error("stopped")

    @work(exclusive=True, group="producer", exit_on_error=False)
    async def _run_producer(self, panel: ProducerPanel, settings, verify: bool, stream: str) -> None:
        panel.show_started(settings)
        try:
            result, report = await run_and_verify(self.source, stream, settings, verify=verify,
                                                  on_progress=panel.show_progress, on_verifying=panel.show_verifying)
        except ConsoleError as error:
            panel.show_error(error.message)
            return
        if report is not None:
            panel.show_report(report)
        else:
            panel.show_finished()
        trouble = [text for text in (result.stopped and f"stopped early: {result.stopped}",
                                     result.verification_error) if text]
        if trouble:  # the partial report stays on screen; the status line says what went wrong
            panel.show_error(f"{result.sent} sent, {result.acknowledged} acknowledged, {len(result.failed)} failed, "
                             f"{result.not_attempted} not attempted; " + "; ".join(trouble))
        self.poll_now()

    # ---- tail ------------------------------------------------------------------------------------

    def on_tail_view_start_requested(self, event: TailView.StartRequested) -> None:
        view = self.query_one(TailView)
        if not self.stream:
            view.set_running(False, "no stream open: press p to pick one")
            return
        self._run_tail(view, event.options, self.stream)

    def on_tail_view_stop_requested(self, _event: TailView.StopRequested) -> None:
        self._tail_run = None
        self.workers.cancel_group(self, "tail")
        self.query_one(TailView).set_running(False)

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def _run_tail(self, view: TailView, options, stream: str) -> None:
        # A restart (new options) cancels this worker while the next one starts: only the reader
        # that is still the latest may say "stopped".
        run = object()
        self._tail_run = run
        view.stream = stream
        view.set_running(True)
        message = None
        try:
            async for batch in TailReader(self.source, stream, options).batches():
                if self._tail_run is not run:  # replaced or stopped; the cancel has not landed yet
                    return
                view.add_batch(batch)
            message = "reached the end of what the stream holds (t tails new records)"
        except ConsoleError as error:
            message = f"tail stopped: {error.message}"
        except Exception as error:  # a reader bug must say so on the tab, not stop it silently
            message = f"tail stopped: internal error: {type(error).__name__}: {printable(str(error))}"
        finally:
            if getattr(self, "_tail_run", None) is run:
                view.set_running(False, message)

    # ---- heat ------------------------------------------------------------------------------------

    def on_heat_panel_shown(self, _event: HeatPanel.Shown) -> None:
        if self.stream:
            self._run_heat(self.stream)

    def on_heat_panel_hidden(self, _event: HeatPanel.Hidden) -> None:
        # The sampler's readers stop with the worker (HeatSampler.__aexit__ awaits them all).
        self.workers.cancel_group(self, "heat")
        self._heat_stopped()

    def _heat_stopped(self) -> None:
        """No sampler runs: the table keeps its last rates marked stale; the ribbon goes back to
        colouring by share (a heat colour that no longer updates would mislead)."""
        self.table.set_heat_stale()
        self.ribbon.set_heat({})

    @work(exclusive=True, group="heat", exit_on_error=False)
    async def _run_heat(self, stream: str) -> None:
        panel = self.query_one(HeatPanel)
        try:
            async with HeatSampler(self.source, stream) as sampler:
                async for snapshot in sampler.snapshots(every=1.0, series_seconds=MAP_SECONDS):
                    panel.update_snapshot(snapshot)
                    self._show_heat(snapshot)
        except ConsoleError as error:
            self.notify(f"heat: {error.message}", severity="error", timeout=8)
            self._heat_stopped()

    def _show_heat(self, snapshot) -> None:
        # The live figures: the last few seconds (recent_*), not the window's average, which would
        # flatten a burst that started a moment ago.
        heat = {shard.shard_id: ShardHeat(shard.recent_records_per_s, shard.recent_bytes_per_s,
                                          shard.recent_utilisation, tuple(shard.series[-4:]))
                for shard in snapshot.shards}
        self._show_heat_figures(heat)

    def _show_heat_figures(self, heat: dict[str, ShardHeat]) -> None:
        """Throughput column (with a sparkline) in the table, and the ribbon coloured by heat."""
        self.table.set_heat(heat)
        self.ribbon.set_heat({sid: figures.utilisation for sid, figures in heat.items()})

    def _clear_heat(self) -> None:
        self.table.set_heat({})
        self.ribbon.set_heat({})

    # ---- enhanced monitoring (a change to the stream: confirmed, and refused read-only) -------------

    def action_enable_monitoring(self) -> None:
        if self.read_only:
            self.notify("enhanced monitoring: not available in read-only mode", severity="warning")
            return
        if not self.stream:
            self.notify("no stream open: press p to pick one", severity="warning")
            return
        stream = self.stream
        what = f"enable shard-level enhanced monitoring ({', '.join(SHARD_LEVEL_METRICS)}; billed per shard)"

        def confirmed(ok: bool | None) -> None:
            if ok and stream == self.stream:
                self._enable_monitoring(stream, SHARD_LEVEL_METRICS)
            else:
                self.notify("enhanced monitoring: cancelled, nothing was called", timeout=4)

        self.push_screen(ConfirmByNameScreen(stream, what), confirmed)

    @work(exclusive=True, group="monitoring", exit_on_error=False)
    async def _enable_monitoring(self, stream: str, metrics: tuple[str, ...]) -> None:
        try:
            await self.source.enable_enhanced_monitoring(stream, list(metrics))
            enabled = (await self.source.describe_stream_summary(stream)).enhanced_metrics
        except ConsoleError as error:
            self.notify(f"enhanced monitoring: {error.message}", severity="error", timeout=10)
            return
        self.notify(f"enhanced monitoring on {stream}: {', '.join(sorted(enabled)) or 'none'}",
                    title="heat", timeout=8)
        self.poll_now()  # the poll's summary is what the shard-level CloudWatch view follows
