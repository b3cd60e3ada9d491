"""The fleet: the console's first screen when it starts without --stream (and `:streams`, `p`) —
every stream of the region with its rates, the last 30 minutes as a sparkline, utilisation, iterator
age, throttles and EFO consumers, worst first; a row in trouble is red and says why.

The screen runs its own work: the list (ListStreams' summaries, the first rows), then, together,
every stream's CloudWatch metrics in one batched read and each stream's summary for shard and
consumer counts (DESCRIBE_CONCURRENCY at once, as `kconsole streams` does, shown a batch at a time);
the metrics are read again once a minute, a refresh starting only when the previous one has ended.
Enter opens the highlighted stream; `/` filters by name; `s` changes the order; `r` refreshes now;
j / k move as everywhere in the console.

The table (console.ui.widgets.fleet_table) takes each batch of rows at once and draws only the lines
on screen, so a refresh of 1,000 streams never holds the keys up.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from console.backend.protocol import CLOUDWATCH, READERS, ConsoleBackend
from console.heat.fleet import (
    DESCRIBE_CONCURRENCY,
    FLEET_READ_COST,
    FLEET_REFRESH_S,
    RATE_WINDOW,
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
from console.ui.widgets.fleet_table import FleetLine, FleetTable
from console.words import counted

# The reason first after the name: on a narrow terminal the table scrolls sideways, the trouble stays;
# the figures before the 30-character sparkline, so a 140-column terminal shows every one of them.
COLUMNS = (
    "Stream",
    "Trouble",
    f"In rec/s ({RATE_WINDOW})",
    f"In KB/s ({RATE_WINDOW})",
    "Used",
    "Iter age",
    "Throttled W/R",
    "Shards",
    "EFO",
    "Last 30 min",
    "Mode",
    "Status",
)


# Streams described a batch at a time: the Shards and EFO columns fill as the answers come.
COUNTS_BATCH = 100
# Rows built (or their lines made) between two turns of the UI loop: ~10 ms of work, so a key waits no longer.
ROWS_PER_STEP = 50


def row_cells(row: FleetRow) -> tuple[str, ...]:
    """The row's text (console.heat.fleet.row_text, as `kconsole streams` shows it), in COLUMNS' order."""
    text = row_text(row)
    return (
        printable(row.name),
        printable(text.trouble),
        text.records_per_s,
        text.kib_per_s,
        text.used,
        text.iterator_age,
        text.throttled,
        text.shards,
        text.consumers,
        text.sparkline,
        text.mode,
        printable(row.facts.status),
    )


def fleet_line(row: FleetRow) -> FleetLine:
    """The table's line for a row (a row in trouble is drawn in the error colour)."""
    return FleetLine(row.name, row_cells(row), bool(row.trouble))


class StreamPickerScreen(ModalScreen[str | None]):
    AUTO_FOCUS = "#picker-list"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel"),
        Binding("q", "app.quit", "Quit", id="picker.quit"),  # as everywhere else in the console
        Binding("r", "reload", "Refresh", id="picker.reload"),
        Binding("slash", "filter", "Filter", id="picker.filter"),
        Binding("s", "next_sort", "Sort", id="picker.sort"),
        # The console's own j / k (a modal screen hides the app's keys); in the filter box they are letters.
        Binding("j", "app.vi_cursor('down')", "Down", show=False, id="picker.vi_down"),
        Binding("k", "app.vi_cursor('up')", "Up", show=False, id="picker.vi_up"),
    ]
    # Opaque: the dialog covers the whole terminal, so the console behind it is never drawn (a see-through
    # modal would composite it into every frame of the table).
    DEFAULT_CSS = """
    StreamPickerScreen { background: $surface; }
    StreamPickerScreen #picker-filter { display: none; }
    StreamPickerScreen #picker-filter.shown { display: block; }
    StreamPickerScreen #picker-list { height: 1fr; }
    """

    def __init__(
        self,
        backend: ConsoleBackend,
        *,
        current: str | None = None,
        timeout: float = 15.0,
        refresh_every: float = FLEET_REFRESH_S,
    ) -> None:
        super().__init__()
        self._backend = backend
        self._current = current
        self._timeout = timeout
        self._refresh_every = refresh_every
        self._rows: dict[str, FleetRow] = {}
        self._facts: dict[str, StreamFacts] = {}
        self._filter = ""
        self._sort = "trouble"
        self._refreshing = False
        self._cursor_chosen = False  # the user moved the cursor (to a row it then follows)
        self._lines: dict[str, tuple[FleetRow, FleetLine]] = {}  # each row's line, made again only for a new row
        self.streams: list[Any] = []  # the rows shown, in order (their facts: name, status, mode...)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Static("Streams, worst first", id="picker-title")
            yield Static("loading streams…", id="picker-status")
            yield Input(placeholder="filter by name (enter keeps it, escape clears)", id="picker-filter")
            yield FleetTable(COLUMNS, id="picker-list")
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
            listed = await asyncio.wait_for(self._backend.list_stream_summaries(page_size=1000), self._timeout)
        except Exception as error:  # shown, never raised: the user can retry with r
            status.update(f"cannot list streams: {describe_failure(error, self._timeout)}")
            return
        facts = [StreamFacts.from_stream(summary) for summary in listed]
        self._facts = {f.name: f for f in facts}
        self._rows = {f.name: self._rows.get(f.name) or build_row(f, None) for f in facts}
        await self._update_table()
        if not facts:
            status.update(
                "this backend has no streams; create one: kconsole stream create NAME (plus this "
                "console's --endpoint-url), or kconsole --local for a demo stream"
            )
            return
        status.update(f"{len(facts)} stream{'s' if len(facts) != 1 else ''}; reading CloudWatch…")
        # The metrics need only the names: they are read while the streams are described.
        await asyncio.gather(self._metrics_once(), self._counts(listed))

    async def _counts(self, listed: list[Any]) -> None:
        """Shard and consumer counts (ListStreams' summaries have neither): one DescribeStreamSummary a
        stream, DESCRIBE_CONCURRENCY at once, each batch of answers shown as it comes."""
        missing = [summary for summary in listed if summary.open_shard_count is None]
        for offset in range(0, len(missing), COUNTS_BATCH):
            batch = missing[offset : offset + COUNTS_BATCH]
            try:
                described = await asyncio.wait_for(
                    self._backend.describe_streams(batch, concurrency=DESCRIBE_CONCURRENCY), self._timeout
                )
            except Exception:
                return
            for summary in described:
                if summary.name in self._facts:
                    self._facts[summary.name] = StreamFacts.from_stream(summary)
            await self._update_table()

    def _refresh_metrics(self) -> None:
        if not self._refreshing and self._facts:  # never overlapping: a slow read delays the next one
            self._metrics_worker()

    @work(exclusive=False, group="picker-metrics", exit_on_error=False)
    async def _metrics_worker(self) -> None:
        await self._metrics_once()

    async def _metrics_once(self) -> None:
        if self._refreshing:
            return
        if CLOUDWATCH not in self._backend.capabilities:
            self.query_one("#picker-status", Static).update(
                f"{counted(len(self._facts), 'stream')}; no metrics: this backend has no CloudWatch"
            )
            return
        self._refreshing = True
        status = self.query_one("#picker-status", Static)
        try:
            fleet = await self._fleet_with_readers()
        except Exception as error:  # a source without CloudWatch: the rows stand
            status.update(
                f"{counted(len(self._facts), 'stream')}; no metrics: {describe_failure(error, self._timeout)}"
            )
            return
        finally:
            self._refreshing = False
        self._rows.update({row.name: row for row in fleet.rows})
        await self._update_table()  # the metrics were asked with the facts of then: counts described since stay
        troubled = sum(1 for row in fleet.rows if row.trouble)
        status.update(
            f"{counted(len(fleet.rows), 'stream')}, {troubled} in trouble"
            + (f"; no metrics: {fleet.problem}" if fleet.problem else "")
            + f"\n{FLEET_READ_COST}"
        )

    async def _fleet_with_readers(self) -> Fleet:
        """The rows, with each stream's worst reader read beside the metrics when the source offers
        the readers' services (a few calls for the whole region: console.consumers.readers); a
        readers' service that cannot be listed only leaves the rows without their readers."""
        facts = list(self._facts.values())
        names = [f.name for f in facts]
        readers = None
        if READERS in self._backend.capabilities:
            # Imported in a thread the first time: its ~60 ms of module code would hold the keys up.
            lag = await asyncio.to_thread(importlib.import_module, "console.consumers.readers")
            readers = asyncio.ensure_future(lag.fleet_reader_lag(self._backend, names))
        try:
            metrics = await read_fleet_metrics(self._backend, names)
        except BaseException:
            if readers is not None:
                readers.cancel()
                await asyncio.gather(readers, return_exceptions=True)
            raise
        found = await readers if readers is not None else None
        worst = found.worst if found else None
        # The rows a slice at a time, the keys served in between (1,000 rows are ~100 ms of work).
        part = fleet_from([], metrics, worst)
        rows: list[FleetRow] = []
        for offset in range(0, len(facts), ROWS_PER_STEP):
            part = fleet_from(facts[offset : offset + ROWS_PER_STEP], metrics, worst)
            rows.extend(part.rows)
            await asyncio.sleep(0)
        return Fleet(rows, part.metric_calls, part.problem, found.unavailable if found else ())

    async def _update_table(self) -> None:
        """Rows whose facts changed rebuilt (they keep their metrics: utilisation needs the shard count)
        and new rows' lines made, a slice at a time with the keys served in between; then the table
        at once. Each slice reads the newest rows and facts, so a writer that awaited meanwhile is
        never undone."""
        made_since_yield = 0
        for name in list(self._facts):
            row, facts = self._rows.get(name), self._facts.get(name)
            if row is None:
                continue
            if facts is not None and row.facts != facts:
                row = self._rows[name] = row.with_facts(facts)
            made = self._lines.get(name)
            if made is None or made[0] is not row:
                self._lines[name] = (row, fleet_line(row))
                made_since_yield += 1
                if made_since_yield >= ROWS_PER_STEP:
                    made_since_yield = 0
                    await asyncio.sleep(0)
        self._show()

    # ---- the table -----------------------------------------------------------------------------

    def _show(self) -> None:
        """The rows, filtered and in order, to the table in one batch. Until the user moves the cursor
        it stays on the stream the console showed, else on the top row (the worst stream) as the rows
        re-sort; a row the user chose is followed."""
        table = self.query_one("#picker-list", FleetTable)
        wanted = [
            row for row in sort_rows(list(self._rows.values()), self._sort) if self._filter.lower() in row.name.lower()
        ]
        lines = {}
        for row in wanted:
            made = self._lines.get(row.name)
            lines[row.name] = made if made is not None and made[0] is row else (row, fleet_line(row))
        self._lines = lines
        follow = table.cursor_key if self._cursor_chosen else self._current
        table.set_lines([line for _row, line in lines.values()], cursor_on=follow)
        self.streams = [row.facts for row in wanted]
        if not self.query_one("#picker-filter", Input).has_class("shown"):
            table.focus()

    # ---- keys ----------------------------------------------------------------------------------

    def on_fleet_table_highlighted(self, _event: FleetTable.Highlighted) -> None:
        self._cursor_chosen = True

    def on_fleet_table_selected(self, event: FleetTable.Selected) -> None:
        self.dismiss(event.key)

    def action_filter(self) -> None:
        box = self.query_one("#picker-filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._filter = event.value.strip()
        self._show()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.query_one("#picker-list", FleetTable).focus()

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
