"""The Consumers tab: EFO consumers and, once a KCL lease table is named, every lease with its owner,
checkpoint, records and time behind, and state; open shards without a lease below.

The panel does no I/O: Enter in the table box posts `ConsumersPanel.WatchRequested`; the app
(ConsumersHost) polls in a worker and calls `show_report` / `show_error`. Rows are updated in place.
Every text from the lease table or the stream is shown escaped and as plain text (no markup).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from console.consumers.report import ConsumerReport, LeaseRow, format_millis
from console.heat.capacity import MetricSeries
from console.read.printable import printable
from console.ui.widgets.metric_lines import stream_capacity_text

LEASE_COLUMNS = ("Shard", "State", "Owner", "Checkpoint", "Behind", "Time", "Problem")
EFO_COLUMNS = ("EFO consumer", "Status", "Created")


def plain(value: object) -> Text:
    return Text(printable(str(value)))


def lease_cells(row: LeaseRow, cap: int) -> tuple[Text, ...]:
    checkpoint = row.lease.checkpoint or "-"
    if len(checkpoint) > 14:
        checkpoint = "…" + checkpoint[-13:]
    return (plain(row.shard_id), plain(row.state), plain(row.lease.owner or "-"), plain(checkpoint),
            Text(row.records_text(cap), justify="right"), Text(format_millis(row.millis_behind), justify="right"),
            plain(f"! {row.problem}" if row.problem else ""))


class ConsumersPanel(Vertical):
    DEFAULT_CSS = """
    ConsumersPanel #consumers-efo { height: auto; max-height: 8; }
    ConsumersPanel #consumers-leases { height: 1fr; }
    ConsumersPanel #consumers-status { height: auto; }
    ConsumersPanel #consumers-metrics { height: auto; color: $text-muted; }
    """

    class WatchRequested(Message):
        """Poll this lease table (None: EFO consumers only)."""

        def __init__(self, panel: "ConsumersPanel", table: str | None) -> None:
            super().__init__()
            self.panel = panel
            self.table = table

    def compose(self) -> ComposeResult:
        yield Input(placeholder="KCL lease table (enter reads it; empty: EFO consumers only)", id="consumers-table")
        yield Static("", id="consumers-status")
        yield Static("", id="consumers-metrics")
        yield DataTable(id="consumers-efo", cursor_type="row", zebra_stripes=False)
        yield DataTable(id="consumers-leases", cursor_type="row")

    def on_mount(self) -> None:
        efo = self.query_one("#consumers-efo", DataTable)
        for label in EFO_COLUMNS:
            efo.add_column(label, key=label)
        leases = self.query_one("#consumers-leases", DataTable)
        for label in LEASE_COLUMNS:
            leases.add_column(label, key=label)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        table = event.value.strip() or None
        self.show_status(f"reading {table}…" if table else "reading EFO consumers…")
        self.post_message(self.WatchRequested(self, table))
        self.query_one("#consumers-leases", DataTable).focus()

    def show_status(self, text: str) -> None:
        self.query_one("#consumers-status", Static).update(Text(text))

    def show_error(self, message: str) -> None:
        self.query_one("#consumers-status", Static).update(Text(printable(message), style="bold red"))

    def show_metrics(self, metrics: MetricSeries | None, problem: str | None = None) -> None:
        """The stream-level CloudWatch metrics (the app polls them once a minute for the Heat tab too)."""
        self.query_one("#consumers-metrics", Static).update(stream_capacity_text(metrics, problem))

    def show_report(self, report: ConsumerReport) -> None:
        _replace_rows(self.query_one("#consumers-efo", DataTable), EFO_COLUMNS,
                      {c.arn or c.name: (plain(c.name), plain(c.status), plain(c.created[:19])) for c in report.efo_consumers})
        _replace_rows(self.query_one("#consumers-leases", DataTable), LEASE_COLUMNS,
                      {row.lease.lease_key: lease_cells(row, report.scan_cap) for row in report.rows})
        parts = [f"{len(report.efo_consumers)} EFO consumer(s)"]
        if report.lease_table:
            parts.append(f"{len(report.rows)} lease(s) in {report.lease_table}")
            stalled = sum(1 for row in report.rows if row.state == "stalled")
            if stalled:
                parts.append(f"{stalled} stalled")
            if report.unleased_shards:
                waiting = [f"{s} (waits for {', '.join(report.waiting_on_parents[s])})"
                           if s in report.waiting_on_parents else s for s in report.unleased_shards]
                parts.append("no lease: " + ", ".join(waiting))
            if report.problems:
                parts.append(f"{len(report.problems)} marked !")
        self.show_status(" · ".join(parts))


def _replace_rows(table: DataTable, columns: tuple[str, ...], rows: dict[str, tuple[Text, ...]]) -> None:
    """Rows keyed by `rows`' keys: changed cells updated in place, gone rows removed, new rows added."""
    present = {key.value for key in table.rows}
    for key in present - rows.keys():
        table.remove_row(key)
    for key, cells in rows.items():
        if key in present:
            for column, cell in zip(columns, cells):
                if table.get_cell(key, column) != cell:
                    table.update_cell(key, column, cell, update_width=True)
        else:
            table.add_row(*cells, key=key)
