"""The fleet: the console's first screen when it starts without --stream (and `:streams`, `p`) —
every stream of the region with its rates, the last 30 minutes as a sparkline, utilisation, iterator
age, throttles and EFO consumers, worst first; a row in trouble is red and says why.

The screen runs its own work: the list (ListStreams' summaries, the first rows), then every stream's
CloudWatch metrics in one batched read, then each stream's summary for shard and consumer counts;
the metrics are read again once a minute, a refresh starting only when the previous one has ended.
Enter opens the highlighted stream; `/` filters by name; `s` changes the order; `r` refreshes now.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from console.backend.protocol import CLOUDWATCH, READERS, ConsoleBackend
from console.heat.fleet import (
    FLEET_REFRESH_S,
    SORTS,
    Fleet,
    FleetRow,
    StreamFacts,
    build_row,
    fleet_from,
    read_fleet_metrics,
    row_text,
    sort_rows,
)
from console.read.printable import printable
from console.ui.source import describe_failure

# The reason first after the name: on a narrow terminal the table scrolls sideways, the trouble stays.
COLUMNS = (
    "Stream",
    "Trouble",
    "In rec/s",
    "In KB/s",
    "Last 30 min",
    "Used",
    "Iter age",
    "Throttled W/R",
    "Shards",
    "EFO",
    "Mode",
    "Status",
)


def row_cells(row: FleetRow) -> list[Any]:
    """The row's text (console.heat.fleet.row_text, as `kconsole streams` shows it), in COLUMNS' order."""
    text = row_text(row)
    style = "bold red" if row.trouble else ""
    return [
        Text(printable(row.name), style=style),
        Text(printable(text.trouble), style=style),
        text.records_per_s,
        text.kib_per_s,
        text.sparkline,
        text.used,
        text.iterator_age,
        text.throttled,
        text.shards,
        text.consumers,
        text.mode,
        row.facts.status,
    ]


class StreamPickerScreen(ModalScreen[str | None]):
    AUTO_FOCUS = "#picker-list"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel"),
        Binding("q", "app.quit", "Quit", id="picker.quit"),  # as everywhere else in the console
        Binding("r", "reload", "Refresh", id="picker.reload"),
        Binding("slash", "filter", "Filter", id="picker.filter"),
        Binding("s", "next_sort", "Sort", id="picker.sort"),
    ]
    DEFAULT_CSS = """
    StreamPickerScreen #picker-filter { display: none; }
    StreamPickerScreen #picker-filter.shown { display: block; }
    StreamPickerScreen #picker-list { height: 1fr; }
    """

    def __init__(
        self,
        source: ConsoleBackend,
        *,
        current: str | None = None,
        timeout: float = 15.0,
        refresh_every: float = FLEET_REFRESH_S,
    ) -> None:
        super().__init__()
        self._source = source
        self._current = current
        self._timeout = timeout
        self._refresh_every = refresh_every
        self._rows: dict[str, FleetRow] = {}
        self._facts: dict[str, StreamFacts] = {}
        self._filter = ""
        self._sort = "trouble"
        self._refreshing = False
        self._cursor_chosen = False  # the user moved the cursor (to a row it then follows)
        self._placed_row = 0  # where the screen last put the cursor itself
        self.streams: list[Any] = []  # the rows shown, in order (their facts: name, status, mode...)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Static("Streams, worst first", id="picker-title")
            yield Static("loading streams…", id="picker-status")
            yield Input(placeholder="filter by name (enter keeps it, escape clears)", id="picker-filter")
            table: DataTable = DataTable(id="picker-list", cursor_type="row", zebra_stripes=True)
            table.add_columns(*COLUMNS)
            yield table
            yield Static("enter opens · / filters · s sorts · r refreshes · escape cancels · q quits", id="picker-help")

    def on_mount(self) -> None:
        self.action_reload()
        self.set_interval(self._refresh_every, self._refresh_metrics)

    # ---- the work ------------------------------------------------------------------------------

    @work(exclusive=True, group="picker", exit_on_error=False)
    async def action_reload(self) -> None:
        """The list first (rows at once), then the metrics, then each stream's counts."""
        status = self.query_one("#picker-status", Static)
        status.update("loading streams…")
        try:
            facts = await asyncio.wait_for(self._list(), self._timeout)
        except Exception as error:  # shown, never raised: the user can retry with r
            status.update(f"cannot list streams: {describe_failure(error, self._timeout)}")
            return
        self._facts = {f.name: f for f in facts}
        self._rows = {f.name: self._rows.get(f.name) or build_row(f, None) for f in facts}
        self._show()
        if not facts:
            status.update(
                "this backend has no streams; create one: kconsole stream create NAME (plus this "
                "console's --endpoint-url), or kconsole --local for a demo stream"
            )
            return
        status.update(f"{len(facts)} stream{'s' if len(facts) != 1 else ''}; reading CloudWatch…")
        await self._metrics_once()
        await self._counts()

    async def _list(self) -> list[StreamFacts]:
        return [StreamFacts.from_stream(s) for s in await self._source.list_stream_summaries(page_size=1000)]

    async def _counts(self) -> None:
        """Shard and consumer counts (ListStreams' summaries have neither): one summary per stream."""
        if all(f.open_shards is not None for f in self._facts.values()):
            return
        try:
            described = await asyncio.wait_for(self._source.list_streams(), max(self._timeout, 60.0))
        except Exception:  # counts stay "-"; the rows and metrics stand
            return
        for summary in described:
            if summary.name in self._facts:
                self._facts[summary.name] = StreamFacts.from_stream(summary)
        self._recompute()
        self._show()

    def _refresh_metrics(self) -> None:
        if not self._refreshing and self._facts:  # never overlapping: a slow read delays the next one
            self._metrics_worker()

    @work(exclusive=False, group="picker-metrics", exit_on_error=False)
    async def _metrics_worker(self) -> None:
        await self._metrics_once()

    async def _metrics_once(self) -> None:
        if self._refreshing:
            return
        if CLOUDWATCH not in self._source.capabilities:
            self.query_one("#picker-status", Static).update(
                f"{len(self._facts)} streams; no metrics: this backend has no CloudWatch"
            )
            return
        self._refreshing = True
        status = self.query_one("#picker-status", Static)
        try:
            fleet = await self._fleet_with_readers()
        except Exception as error:  # a source without CloudWatch: the rows stand
            status.update(f"{len(self._facts)} streams; no metrics: {describe_failure(error, self._timeout)}")
            return
        finally:
            self._refreshing = False
        self._rows.update({row.name: row for row in fleet.rows})
        self._show()
        troubled = sum(1 for row in fleet.rows if row.trouble)
        status.update(
            f"{len(fleet.rows)} streams, {troubled} in trouble"
            + (f"; no metrics: {fleet.problem}" if fleet.problem else "")
        )

    async def _fleet_with_readers(self) -> Fleet:
        """The rows, with each stream's worst reader read beside the metrics when the source offers
        the readers' services (a few calls for the whole region: console.consumers.readers); a
        readers' service that cannot be listed only leaves the rows without their readers."""
        from console.consumers.readers import fleet_reader_lag

        facts = list(self._facts.values())
        names = [f.name for f in facts]
        readers = (
            asyncio.ensure_future(fleet_reader_lag(self._source, names))
            if READERS in self._source.capabilities
            else None
        )
        try:
            metrics = await read_fleet_metrics(self._source, names)
        except BaseException:
            if readers is not None:
                readers.cancel()
                await asyncio.gather(readers, return_exceptions=True)
            raise
        found = await readers if readers is not None else None
        fleet = fleet_from(facts, metrics, found.worst if found else None)
        fleet.readers_unavailable = found.unavailable if found else ()
        return fleet

    def _recompute(self) -> None:
        """Rows rebuilt on new counts keep their metrics (utilisation needs the shard count)."""
        for name, facts in self._facts.items():
            row = self._rows.get(name)
            if row is not None and row.facts != facts:
                self._rows[name] = row.with_facts(facts)

    # ---- the table -----------------------------------------------------------------------------

    def _show(self) -> None:
        """Rows updated in place, added or removed as the list changes, then put in order."""
        table = self.query_one("#picker-list", DataTable)
        wanted = [
            row for row in sort_rows(list(self._rows.values()), self._sort) if self._filter.lower() in row.name.lower()
        ]
        keys = {row.name for row in wanted}
        for row_key in list(table.rows):
            if row_key.value not in keys:
                table.remove_row(row_key)
        present = {k.value for k in table.rows}
        for row in wanted:
            cells = row_cells(row)
            if row.name in present:
                for column, value in zip(table.columns, cells):
                    table.update_cell(row.name, column, value, update_width=True)
            else:
                table.add_row(*cells, key=row.name)
        order = {row.name: index for index, row in enumerate(wanted)}
        # Until the user moves the cursor it stays on the stream the console showed, else on the top
        # row (the worst stream) as the rows re-sort; a row the user chose is followed.
        highlighted = (self._highlighted() if self._cursor_chosen else None) or self._current
        table.sort(key=lambda cells: order.get(cells[0].plain if isinstance(cells[0], Text) else str(cells[0]), 0))
        self.streams = [row.facts for row in wanted]
        if highlighted in order:
            self._placed_row = order[highlighted]
            table.move_cursor(row=self._placed_row)
        if not self.query_one("#picker-filter", Input).has_class("shown"):
            table.focus()

    def _highlighted(self) -> str | None:
        table = self.query_one("#picker-list", DataTable)
        if not table.row_count:
            return None
        try:
            return table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        except Exception:  # no row under the cursor yet
            return None

    # ---- keys ----------------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != self._placed_row:
            self._cursor_chosen = True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(event.row_key.value)

    def action_filter(self) -> None:
        box = self.query_one("#picker-filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._filter = event.value.strip()
        self._show()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.query_one("#picker-list", DataTable).focus()

    def action_next_sort(self) -> None:
        self._sort = SORTS[(SORTS.index(self._sort) + 1) % len(SORTS)]
        self.query_one("#picker-title", Static).update(f"Streams, by {self._sort}")
        self._show()

    def action_cancel(self) -> None:
        box = self.query_one("#picker-filter", Input)
        if box.has_class("shown"):
            box.value = ""
            box.remove_class("shown")
            self._filter = ""
            self._show()
            return
        self.dismiss(None)
