"""Running the Consumers tab's polls (the panel does no I/O of its own).

Enter in the tab's lease-table box starts a loop in a worker: every poll interval, one
`consumer_report` (EFO consumers, the lease table, lag per leased shard) on the backend the console
polls, shown in the panel and as the shard table's Lag column (the stream's CloudWatch metrics come
from the app's once-a-minute capacity poll, console.ui.capacity_host). Lease polls and shard polls never
overlap: a lease poll waits for a running shard poll, and a shard poll due during a lease poll runs
right after it.
"""

from __future__ import annotations

import asyncio

from textual import work

from console.consumers.report import StallTracker, format_millis
from console.errors import ConsoleError


class ConsumersHost:
    """Mixed into KConsoleApp. Expects `source`, `stream`, `interval`, `table`, `poll_now` and
    `_poll_in_flight`."""

    consumers_poll_running = False
    consumers_lease_table: str | None = None  # the lease table the tab reads (the reshard preview uses it)
    _shard_poll_deferred = False

    def stop_panel_work(self) -> None:
        self.workers.cancel_group(self, "consumers")
        self.consumers_poll_running = False
        self.consumers_lease_table = None
        self.table.set_lag({})
        super().stop_panel_work()

    def on_consumers_panel_watch_requested(self, event) -> None:
        if not self.stream:
            event.panel.show_error("no stream open: press p to pick one")
            return
        self.consumers_lease_table = event.table
        self._watch_consumers(event.panel, self.stream, event.table)

    @work(exclusive=True, group="consumers", exit_on_error=False)
    async def _watch_consumers(self, panel, stream: str, lease_table: str | None) -> None:
        tracker = StallTracker()
        self.table.set_lag({})
        try:
            while stream == self.stream:
                while self._poll_in_flight:  # never alongside a shard poll
                    await asyncio.sleep(0.05)
                self.consumers_poll_running = True
                try:
                    await self._show_consumers(panel, stream, lease_table, tracker)
                finally:
                    self.consumers_poll_running = False
                    if self._shard_poll_deferred:
                        self._shard_poll_deferred = False
                        self.poll_now()
                await asyncio.sleep(self.interval)
        finally:
            self.consumers_poll_running = False
            if self._shard_poll_deferred and self.is_running:  # cancelled while a shard poll waited
                self._shard_poll_deferred = False
                self.poll_now()

    async def reshard_barrier_lines(self, stream: str, shards, plan) -> tuple[list[str], str | None]:
        """For the reshard preview, with a lease table open in the Consumers tab: the parents not yet
        finished and the lag the plan would put behind the barrier (lines), and why the plan is held
        back (None: it is not). A lease table that cannot be read holds it back too: the lag is unknown."""
        if not self.consumers_lease_table:
            return [], None
        from console.consumers.barrier import barrier_analysis, changed_shards
        from console.consumers.look import consumer_report

        table = self.consumers_lease_table
        try:
            report = await consumer_report(self.source, stream, lease_table=table, shards=shards)
        except ConsoleError as error:
            return ([f"Consumers: cannot read lease table {table}: {error.message}"],
                    f"the consumers' lag in lease table {table} is unknown")
        kept = (shard.shard_id for shard in plan.after if shard.unchanged and shard.shard_id)
        barrier = barrier_analysis(report, shards, changed_shards(plan.before, kept))
        return barrier.lines(), barrier.reason() if barrier.blocking else None

    async def _show_consumers(self, panel, stream: str, lease_table: str | None, tracker: StallTracker) -> None:
        from console.consumers.look import consumer_report

        try:
            view = self.view  # the shard poll's latest listing: no second ListShards
            shards = list(view.shards) if view is not None and view.summary.name == stream else None
            report = await consumer_report(self.source, stream, lease_table=lease_table, tracker=tracker,
                                           shards=shards, stream_arn=(view.summary.arn or None) if shards else None)
        except ConsoleError as error:
            panel.show_error(error.message)
        else:
            panel.show_report(report)
            self.table.set_lag({shard_id: format_millis(millis)
                                for shard_id, millis in report.worst_millis_by_shard().items()})
