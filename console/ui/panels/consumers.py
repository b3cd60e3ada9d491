"""The Consumers tab: EFO consumers and, once a KCL lease table is named, every lease with its owner,
checkpoint, records and time behind, and state; open shards without a lease below; and the Workers
section: per KCL worker its leases (open of all), throughput, CPU, metrics age, leader and flags,
with the table's layout, migration state and other streams' leases in one line.

The panel runs its own lease poll: Enter in the table box posts `WatchRequested` (the panel acts on it
itself; it bubbles on), and a worker on the panel reads one `consumer_report` (EFO consumers, the lease
table, lag per leased shard) every poll interval, shown in the panel's own tables. A lease poll and
the app's shard poll never run at once: both hold the one `poll_lock` the app hands the panel. What
the shard table needs leaves as a message: `LagChanged` (its Lag column). Rows are updated in place.
Every text from the lease table or the stream is shown escaped and as plain text (no markup).

`w` with a lease table read here opens the rewind dialog on it (console.ui.screens.rewind), as `w` on
the KCL application in the Readers tab does; greyed out in read-only mode and without a lease table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive, var
from textual.widgets import DataTable, Input, Static

from console.backend.protocol import ConsoleBackend, ConsumersBackend, MetricsBackend, RecordsBackend
from console.consumers.report import ConsumerReport, LeaseRow, StallTracker, format_millis
from console.errors import ConsoleError
from console.read.efo import is_temporary_consumer
from console.read.printable import printable
from console.topology.model import Shard
from console.ui.source import CloudWatchReading, StreamView
from console.ui.widgets.metric_lines import stream_capacity_text
from console.ui.widgets.table_rows import plain, replace_rows

LEASE_COLUMNS = ("Shard", "State", "Owner", "Checkpoint", "Behind", "Time", "Problem")
EFO_COLUMNS = ("EFO consumer", "Status", "Created")
WORKER_COLUMNS = ("Worker", "Leases", "Open", "KB/s", "CPU", "Metrics age", "Leader", "Flags")
# Below this many rows (an 80x24 terminal leaves the panel about 15) the seven metric lines give way,
# so the lease table and the Workers section keep rows; the Heat tab shows the same metrics.
SHORT_PANEL_ROWS = 24


def metrics_text(reading: CloudWatchReading | None) -> Text:
    return Text("") if reading is None else stream_capacity_text(reading.metrics, reading.problem)


def lease_cells(row: LeaseRow, cap: int) -> tuple[Text, ...]:
    checkpoint = row.lease.checkpoint or "-"
    if len(checkpoint) > 14:
        checkpoint = "…" + checkpoint[-13:]
    return (
        plain(row.shard_id),
        plain(row.state),
        plain(row.lease.owner or "-"),
        plain(checkpoint),
        Text(row.records_text(cap), justify="right"),
        Text(format_millis(row.millis_behind), justify="right"),
        plain(f"! {row.problem}" if row.problem else ""),
    )


def worker_cells(row: Any) -> tuple[Text, ...]:
    style = "bold red" if row.flags else ""
    cells = row.cells()
    return (
        Text(printable(cells[0]), style=style),
        *(Text(cell, justify="right") for cell in cells[1:6]),
        Text(cells[6]),
        Text(printable(cells[7]), style=style),
    )


def workers_line(view: Any) -> str:
    """The Workers section's heading: layout, leader, migration state, unowned and other streams."""
    return "Workers: " + " · ".join(view.summary_lines())


class LeasePollBackend(ConsumersBackend, MetricsBackend, RecordsBackend, Protocol):
    """What the lease poll asks of the backend: the EFO registrations and lease tables
    (console.consumers.look), and each shard's throughput from CloudWatch or, without its shard-level
    metrics, from the records (console.consumers.throughput)."""


class ConsumersPanel(Vertical):
    DEFAULT_CSS = """
    ConsumersPanel #consumers-efo { height: auto; max-height: 8; }
    ConsumersPanel #consumers-leases { height: 1fr; }
    ConsumersPanel #consumers-workers-status { height: auto; }
    ConsumersPanel #consumers-workers { height: auto; max-height: 12; }
    ConsumersPanel #consumers-status { height: auto; }
    ConsumersPanel #consumers-metrics { height: auto; color: $text-muted; }
    ConsumersPanel.-short #consumers-metrics { display: none; }
    """

    BINDINGS = [Binding("w", "rewind", "Rewind", id="consumers.rewind")]

    # Followed from the app (data_bind): the stream whose consumers are shown, and whether changes are allowed.
    stream: reactive[str | None] = reactive(None, init=False)
    read_only: reactive[bool] = reactive(False, init=False)
    # The app's last shard poll, so the lease poll need not list the shards again.
    view: var[StreamView | None] = var(None, init=False, always_update=True)  # the app's (data_bind)
    # The app's once-a-minute fetch of the stream-level CloudWatch metrics (the Heat tab shows them too).
    cloudwatch: var[CloudWatchReading | None] = var(None, init=False)  # the app's (data_bind)

    class WatchRequested(Message):
        """The operator asked to poll this lease table (None: EFO consumers only)."""

        def __init__(self, panel: ConsumersPanel, table: str | None) -> None:
            super().__init__()
            self.panel = panel
            self.table = table

    class LagChanged(Message):
        """The worst time behind on each leased shard of `stream`, formatted (empty: no lag known)."""

        def __init__(self, stream: str | None, lag: dict[str, str]) -> None:
            super().__init__()
            self.stream = stream
            self.lag = lag

    def __init__(
        self,
        backend: ConsoleBackend | None = None,  # the lease poll, and the rewind dialog it opens
        *,
        poll_lock: asyncio.Lock | None = None,
        interval: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self.poll_lock = poll_lock or asyncio.Lock()  # shared with the app's shard poll
        self.interval = interval
        self.lease_table: str | None = None  # the lease table polled (the reshard preview reads it too)
        # The shard poll's latest listing of the stream (no second ListShards), and its ARN.
        self._shards: Sequence[Shard] | None = None
        self._stream_arn: str | None = None
        self._meter: Any = None  # measures shards' throughput for leases without their own, once a minute
        self.watch_seconds: float | None = None  # the rewind's watch before writing (None: the domain's default)

    def compose(self) -> ComposeResult:
        yield Input(placeholder="KCL lease table (enter reads it; empty: EFO consumers only)", id="consumers-table")
        yield Static("", id="consumers-status")
        yield Static(metrics_text(self.cloudwatch), id="consumers-metrics")
        yield DataTable(id="consumers-efo", cursor_type="row", zebra_stripes=False)
        yield DataTable(id="consumers-leases", cursor_type="row")
        yield Static("", id="consumers-workers-status")
        yield DataTable(id="consumers-workers", cursor_type="row")

    def on_mount(self) -> None:
        efo = self.query_one("#consumers-efo", DataTable)
        for label in EFO_COLUMNS:
            efo.add_column(label, key=label)
        leases = self.query_one("#consumers-leases", DataTable)
        for label in LEASE_COLUMNS:
            leases.add_column(label, key=label)
        workers = self.query_one("#consumers-workers", DataTable)
        for label in WORKER_COLUMNS:
            workers.add_column(label, key=label)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_PANEL_ROWS, "-short")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        table = event.value.strip() or None
        self.show_status(f"reading {table}…" if table else "reading EFO consumers…")
        self.post_message(self.WatchRequested(self, table))
        self.query_one("#consumers-leases", DataTable).focus()

    # ---- its work -------------------------------------------------------------------------------

    def on_consumers_panel_watch_requested(self, message: WatchRequested) -> None:
        if not self.stream or self.backend is None:
            self.show_error("no stream open: press p to pick one")
            return
        self.lease_table = message.table
        self.refresh_bindings()
        self._watch(self.backend, self.stream, message.table)

    # ---- rewinding the application whose lease table is read here --------------------------------

    def rewind_refusal(self) -> str | None:
        """Why `w` does nothing now (None: it opens the rewind dialog)."""
        if self.read_only:
            return "rewind: disabled in read-only mode (R or :rw leaves it, after you type the stream name)"
        if not self.stream or self.backend is None:
            return "no stream open: press p to pick one"
        if not self.lease_table:
            return "w rewinds a KCL application: type its lease table above and press enter first"
        return None

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        if action == "rewind":
            return None if self.rewind_refusal() else True  # greyed out in the footer
        return True

    def watch_read_only(self) -> None:
        self.refresh_bindings()

    def on_key(self, event: events.Key) -> None:
        """A greyed-out w says why rather than stay silent (typed into the lease table box, it is a letter)."""
        if event.key == "w" and not isinstance(self.app.focused, Input) and (problem := self.rewind_refusal()):
            event.stop()
            self.app.notify(problem, severity="warning", timeout=4)

    def action_rewind(self) -> None:
        if (problem := self.rewind_refusal()) is not None:
            self.app.notify(problem, severity="warning", timeout=4)
            return
        from console.ui.screens.rewind import RewindScreen

        assert self.stream is not None and self.lease_table is not None and self.backend is not None
        self.app.push_screen(
            RewindScreen(self.backend, self.stream, self.lease_table, watch_seconds=self.watch_seconds)
        )

    def watch_stream(self) -> None:
        """Another stream: the lease poll stops and nothing of the stream before stays on screen, the
        lease table's name included (it names the previous stream's application)."""
        self.workers.cancel_group(self, "consumers")
        if self.is_mounted:
            for table in self.query(DataTable):
                table.clear()
            self.query_one("#consumers-workers-status", Static).update("")
            self.query_one("#consumers-table", Input).value = ""
            self.show_status("")
        self.lease_table = None
        self.refresh_bindings()
        self._shards = self._stream_arn = None
        self._meter = None
        self.post_message(self.LagChanged(self.stream, {}))

    def watch_view(self, view: StreamView | None) -> None:
        if view is not None and view.summary.name == self.stream:
            self._shards, self._stream_arn = view.shards, view.summary.arn or None

    @work(exclusive=True, group="consumers", exit_on_error=False)
    async def _watch(self, backend: LeasePollBackend, stream: str, lease_table: str | None) -> None:
        tracker = StallTracker()
        self.post_message(self.LagChanged(stream, {}))
        while True:
            async with self.poll_lock:  # never alongside a shard poll
                await self._show_consumers(backend, stream, lease_table, tracker)
            await asyncio.sleep(self.interval)

    async def _show_consumers(
        self, backend: LeasePollBackend, stream: str, lease_table: str | None, tracker: StallTracker
    ) -> None:
        from console.consumers.look import consumer_report  # loaded when first used, not at start-up

        shards = list(self._shards) if self._shards is not None else None
        try:
            report = await consumer_report(
                backend,
                stream,
                lease_table=lease_table,
                tracker=tracker,
                shards=shards,
                stream_arn=self._stream_arn if shards is not None else None,
            )
        except ConsoleError as error:
            self.show_error(error.message)
        else:
            self.show_report(report)
            self.post_message(
                self.LagChanged(
                    stream,
                    {shard_id: format_millis(millis) for shard_id, millis in report.worst_millis_by_shard().items()},
                )
            )
        if lease_table:
            await self._show_workers(backend, stream, lease_table, shards)

    async def _show_workers(
        self, backend: LeasePollBackend, stream: str, lease_table: str, shards: Sequence[Shard] | None
    ) -> None:
        import time

        from console.consumers.throughput import ShardThroughputMeter
        from console.consumers.workers import read_workers
        from console.read.share import ReadShare

        if self._meter is None or self._meter.stream != stream or self._meter.backend is not backend:
            share = ReadShare(getattr(self.app, "read_share", None))  # its samples count against the shards' budget
            self._meter = ShardThroughputMeter(backend, stream, clock=time.monotonic, read_share=share)
        try:
            view = await read_workers(
                backend,
                lease_table,
                stream,
                now=time.time(),
                open_shard_ids=None if shards is None else [s.shard_id for s in shards if s.is_open],
                meter=self._meter,
            )
        except ConsoleError as error:
            self.query_one("#consumers-workers-status", Static).update(
                Text(printable(f"Workers: {error.message}"), style="bold red")
            )
            return
        self.query_one("#consumers-workers-status", Static).update(Text(printable(workers_line(view))))
        replace_rows(
            self.query_one("#consumers-workers", DataTable),
            WORKER_COLUMNS,
            {row.worker_id: worker_cells(row) for row in view.rows},
        )

    async def barrier_lines(self, stream: str, shards: Any, plan: Any) -> tuple[list[str], str | None]:
        """For the reshard preview, with a lease table open here: the parents not yet finished and the
        lag the plan would put behind the barrier (lines), and why the plan is held back (None: it is
        not). A lease table that cannot be read holds it back too: the lag is unknown."""
        from console.consumers.barrier import barrier_analysis, changed_shards
        from console.consumers.look import consumer_report

        table = self.lease_table
        if not table or self.backend is None:
            return [], None
        try:
            report = await consumer_report(self.backend, stream, lease_table=table, shards=shards)
        except ConsoleError as error:
            return (
                [f"Consumers: cannot read lease table {table}: {error.message}"],
                f"the consumers' lag in lease table {table} is unknown",
            )
        kept = (shard.shard_id for shard in plan.after if shard.unchanged and shard.shard_id)
        barrier = barrier_analysis(report, shards, changed_shards(plan.before, kept))
        return barrier.lines(), barrier.reason() if barrier.blocking else None

    def show_status(self, text: str) -> None:
        self.query_one("#consumers-status", Static).update(Text(text))

    def show_error(self, message: str) -> None:
        self.query_one("#consumers-status", Static).update(Text(printable(message), style="bold red"))

    def watch_cloudwatch(self, reading: CloudWatchReading | None) -> None:
        if self.is_mounted:
            self.query_one("#consumers-metrics", Static).update(metrics_text(reading))

    def show_report(self, report: ConsumerReport) -> None:
        replace_rows(
            self.query_one("#consumers-efo", DataTable),
            EFO_COLUMNS,
            {
                c.arn or c.name: (
                    plain(f"{c.name} (kconsole's own, temporary)" if is_temporary_consumer(c.name) else c.name),
                    plain(c.status),
                    plain(c.created_iso[:19]),
                )
                for c in report.efo_consumers
            },
        )
        replace_rows(
            self.query_one("#consumers-leases", DataTable),
            LEASE_COLUMNS,
            {row.lease.lease_key: lease_cells(row, report.scan_cap) for row in report.rows},
        )
        parts = [
            f"EFO consumers unknown ({report.efo_unknown})"
            if report.efo_unknown
            else f"{len(report.efo_consumers)} EFO consumer(s)"
        ]
        if report.lease_table:
            parts.append(f"{len(report.rows)} lease(s) in {report.lease_table}")
            stalled = sum(1 for row in report.rows if row.state == "stalled")
            if stalled:
                parts.append(f"{stalled} stalled")
            if report.unleased_shards:
                waiting = [
                    f"{s} (waits for {', '.join(report.waiting_on_parents[s])})"
                    if s in report.waiting_on_parents
                    else s
                    for s in report.unleased_shards
                ]
                parts.append("no lease: " + ", ".join(waiting))
            if report.problems:
                parts.append(f"{len(report.problems)} marked !")
        self.show_status(" · ".join(parts))
