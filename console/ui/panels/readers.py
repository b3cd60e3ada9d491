"""The Readers tab: every reader of the open stream, one row each, worst first (Lambda event source
mappings, Firehose delivery streams, EventBridge Pipes, Flink applications, EFO consumers, KCL
applications), from console.consumers.readers. Below the rows, the selected reader's settings and its
position on each shard where the leases tell (KCL), or that its lag is known only as a whole; and a
line with every reader's position on the shard selected in the console (the table, the ribbon, the
lineage tree).

Its keys put a reader right: `w` on a KCL application opens the rewind dialog
(console.ui.screens.rewind), `d` / `e` disable or enable a Lambda event source mapping, each
prepared and run by the domain (console.consumers.rewind, console.consumers.mappings: the command
line's plans), confirmed by a typed name and logged in the action log. Each key is greyed out where
it does not apply (another kind of reader) and in read-only mode, and says why when pressed.

The panel polls while it is shown: a worker of its own reads one `readers_report` every `interval`
seconds, holding the `poll_lock` the app hands it (never alongside a shard poll or a lease poll).
A service the endpoint lacks or a permission missing is one line in place of its rows. Every name
and reason from the services is shown escaped and as plain text (no markup). The Consumers tab keeps
the detail of EFO consumers and KCL leases; this tab is the overview.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from console.backend.protocol import READERS, ConsoleBackend
from console.consumers.reader_model import KCL, LAMBDA
from console.consumers.report import format_millis
from console.errors import ConsoleError
from console.read.printable import printable
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.widgets.table_rows import plain, replace_rows
from console.words import counted

if TYPE_CHECKING:
    from console.consumers.readers import Reader, ReadersReport, ShardPosition

READER_COLUMNS = ("Kind", "Name", "State", "Behind", "Errors / why")
NAME_WIDTH = 40  # longer names are cut in the row; the detail below shows them whole
# Below this many rows (an 80x24 terminal leaves the panel about 15) the detail gives the rows room.
SHORT_PANEL_ROWS = 24
WHOLE_ONLY = "lag known only as a whole"
NO_READER_SERVICES = (
    "this source offers none of the readers' services (Lambda, Firehose, Pipes, Flink); "
    "the Consumers tab (8) reads EFO consumers and KCL leases"
)


# What each key changes, and the kind of reader it applies to.
READER_CHANGES = {"rewind": KCL, "disable_mapping": LAMBDA, "enable_mapping": LAMBDA}
NOT_THIS_KIND = {
    KCL: "w rewinds a KCL application: select a kcl row",
    LAMBDA: "d / e disable or enable a Lambda mapping: select a lambda row",
}
READ_ONLY_REFUSAL = "{what}: disabled in read-only mode (R or :rw leaves it, after you type the stream name)"


def reader_key(reader: Reader) -> str:
    return f"{reader.kind}:{reader.arn or reader.name}"


def reader_cells(reader: Reader) -> tuple[Text, ...]:
    name = reader.name + (f" via {reader.via}" if reader.via else "")
    if len(name) > NAME_WIDTH:
        name = name[: NAME_WIDTH - 1] + "…"
    why = "; ".join(part for part in (reader.errors, reader.reason) if part)
    return (
        plain(reader.kind + (" ~" if reader.heuristic else "")),
        plain(name),
        Text(printable(reader.state), style="bold red" if reader.failing else ""),
        Text(
            printable(reader.behind_text()),
            style="dim" if reader.millis_behind is None and reader.records_behind is None else "",
            justify="right",
        ),
        Text(printable(why), style="red" if reader.errors or reader.failing else ""),
    )


def position_text(position: ShardPosition) -> str:
    parts = []
    if position.millis_behind is not None:
        parts.append(format_millis(position.millis_behind))
    if position.records_behind is not None:
        parts.append(f"{counted(position.records_behind, 'record')}")
    return ", ".join(parts) or f"checkpoint {position.checkpoint or 'none'}"


def shard_line(report: ReadersReport | None, shard_id: str | None) -> Text:
    """Every reader's position on the selected shard, in one line."""
    if shard_id is None:
        return Text("select a shard (table, ribbon, lineage) to see where each reader is on it", style="dim")
    if report is None:
        return Text(printable(f"readers on {shard_id}: reading…"), style="dim")
    if not report.readers:
        return Text(printable(f"readers on {shard_id}: none found"), style="dim")
    on_shard, as_a_whole = [], []
    for reader, position in report.positions_on(shard_id):
        if position is not None:
            on_shard.append(f"{reader.label} {position_text(position)}")
        elif reader.shards is not None:
            on_shard.append(f"{reader.label} no lease on it")
        else:
            as_a_whole.append(f"{reader.label} {reader.behind_text()}")
    line = " · ".join(on_shard)
    if as_a_whole:
        line += ("; " if line else "") + "as a whole: " + " · ".join(as_a_whole)
    return Text(printable(f"readers on {shard_id}: {line}"))


def setting_text(value: object) -> str | None:
    """A setting as shown, None for one not set."""
    if value is None or value is False or value == "" or value == [] or value == {}:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value)
    return str(value)


def mapping_uuid(reader: Reader) -> str | None:
    """A Lambda reader's event source mapping UUID: the end of its ARN (or the ARN field itself
    when the server gives only the UUID)."""
    return (reader.arn or "").rpartition(":")[2] or None


def lease_table_of(reader: Reader) -> str:
    return str(reader.settings.get("lease_table") or reader.name)


def detail_text(reader: Reader | None) -> Text:
    """The selected reader: what it is, its state, errors and settings, and where it is per shard."""
    if reader is None:
        return Text("")
    text = Text(printable(reader.label), style="bold")  # with the EFO consumer it reads through
    behind = reader.behind_text()
    state = f"state {reader.state}" + (f": {reader.reason}" if reader.reason else "")
    lines: list[tuple[str, str]] = [(f"{state} · {behind if behind == 'lag unknown' else 'behind ' + behind}", "")]
    if reader.errors:
        lines.append((reader.errors, "red"))
    if reader.heuristic:
        lines.append(("found by its runtime properties naming the stream; its source is in its code", "dim"))
    settings = [
        f"{name} {shown}" for name, value in reader.settings.items() if (shown := setting_text(value)) is not None
    ]
    if settings:
        lines.append(("settings: " + " · ".join(settings), ""))
    if reader.shards is None:
        lines.append((f"positions: {WHOLE_ONLY}", "dim"))
    elif not reader.shards:
        lines.append(("positions: no shard held", "dim"))
    else:
        for position in reader.shards:
            checkpoint = position.checkpoint or "-"
            if len(checkpoint) > 16:
                checkpoint = "…" + checkpoint[-15:]
            lines.append((f"  {position.shard_id}  {checkpoint:<16}  {position_text(position)}", ""))
    if reader.arn:
        lines.append((reader.arn, "dim"))
    for line, style in lines:
        text.append("\n")
        text.append(printable(line), style=style)
    return text


class ReadersPanel(Vertical):
    DEFAULT_CSS = """
    ReadersPanel #readers-status { height: auto; }
    ReadersPanel #readers-unavailable { height: auto; color: $warning; }
    ReadersPanel #readers-table { height: auto; max-height: 70%; }
    ReadersPanel #readers-shard { height: auto; max-height: 3; }
    ReadersPanel #readers-detail-box { height: 1fr; min-height: 3; border-top: solid $primary-darken-2; }
    ReadersPanel.-short #readers-table { max-height: 55%; }
    ReadersPanel.-short #readers-shard { max-height: 2; }
    """

    BINDINGS = [
        Binding("w", "rewind", "Rewind", id="readers.rewind"),
        Binding("d", "disable_mapping", "Disable mapping", id="readers.disable"),
        Binding("e", "enable_mapping", "Enable mapping", id="readers.enable"),
    ]

    # Followed from the app (data_bind): the stream whose readers are shown, the shard selected
    # in the console (the app's selected_shard_id), and whether changes are allowed.
    stream: reactive[str | None] = reactive(None, init=False)
    shard: reactive[str | None] = reactive(None, init=False)
    read_only: reactive[bool] = reactive(False, init=False)

    def __init__(
        self,
        backend: ConsoleBackend | None = None,
        *,
        poll_lock: asyncio.Lock | None = None,
        interval: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self.poll_lock = poll_lock or asyncio.Lock()  # shared with the app's shard poll
        self.interval = interval
        self.report: ReadersReport | None = None  # the last one read of `stream`
        self._readers: dict[str, Reader] = {}  # by row key
        self._shown = False
        self.watch_seconds: float | None = None  # the rewind's watch before writing (None: the domain's default)

    def compose(self) -> ComposeResult:
        yield Static("", id="readers-status")
        unavailable = Static("", id="readers-unavailable")
        unavailable.display = False
        yield unavailable
        yield DataTable(id="readers-table", cursor_type="row")
        yield Static(shard_line(None, self.shard), id="readers-shard")
        with VerticalScroll(id="readers-detail-box", can_focus=False):
            yield Static("", id="readers-detail")

    def on_mount(self) -> None:
        table = self.query_one("#readers-table", DataTable)
        for label in READER_COLUMNS:
            table.add_column(label, key=label)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_PANEL_ROWS, "-short")

    # ---- its work -------------------------------------------------------------------------------

    def on_show(self) -> None:
        self._shown = True
        self._start()

    def on_hide(self) -> None:
        self._shown = False
        self.workers.cancel_group(self, "readers")

    def watch_stream(self) -> None:
        self.workers.cancel_group(self, "readers")
        self.report = None
        self._readers = {}
        if self.is_mounted:
            self.query_one("#readers-table", DataTable).clear()
            self.query_one("#readers-unavailable", Static).display = False
            self.query_one("#readers-detail", Static).update("")
            self._show_shard_line()
        self._start()

    def watch_shard(self) -> None:
        if self.is_mounted:
            self._show_shard_line()

    def _start(self) -> None:
        if not self._shown or not self.is_mounted:
            return
        if not self.stream or self.backend is None:
            self.show_error("no stream open: press p to pick one")
            return
        if READERS not in self.backend.capabilities:  # an in-memory source (tests, screenshots)
            self.show_status(NO_READER_SERVICES)
            return
        if self.report is None:
            self.show_status(f"reading the readers of {self.stream}…")
        self._poll(self.backend, self.stream)

    @work(exclusive=True, group="readers", exit_on_error=False, description="read the stream's readers")
    async def _poll(self, backend: ConsoleBackend, stream: str) -> None:
        from console.consumers.readers import readers_report  # loaded when first used, not at start-up

        while True:
            problem = None
            async with self.poll_lock:  # never alongside a shard poll or a lease poll
                try:
                    report = await readers_report(backend, stream)
                except ConsoleError as error:
                    problem = error.message
            if stream != self.stream:
                return
            if problem is None:
                self.show_report(report)
            else:  # the rows of the last good poll stay, under the reason this one failed
                self.show_error(f"readers of {stream}: {problem}")
            await asyncio.sleep(self.interval)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failure the poll does not expect (it expects ConsoleError) is a defect: said, not lost."""
        if event.worker.group == "readers" and event.state == WorkerState.ERROR:
            error = event.worker.error
            self.show_error(f"readers stopped: internal error: {type(error).__name__}: {error}")

    # ---- what it shows --------------------------------------------------------------------------

    def show_status(self, text: str) -> None:
        self.query_one("#readers-status", Static).update(Text(printable(text)))

    def show_error(self, message: str) -> None:
        self.query_one("#readers-status", Static).update(Text(printable(message), style="bold red"))

    def show_report(self, report: ReadersReport) -> None:
        self.report = report
        self._readers = {reader_key(reader): reader for reader in report.readers}
        table = self.query_one("#readers-table", DataTable)
        rows = {key: reader_cells(reader) for key, reader in self._readers.items()}
        if [row.key.value for row in table.ordered_rows] == list(rows):
            replace_rows(table, READER_COLUMNS, rows)  # the same order: cells updated in place
        else:  # worst first has changed: the rows again, the cursor kept on its reader
            selected = self.selected_reader
            table.clear()
            for key, cells in rows.items():
                table.add_row(*cells, key=key)
            if selected is not None and reader_key(selected) in rows:
                table.move_cursor(row=list(rows).index(reader_key(selected)))
        count = len(report.readers)
        failing = sum(1 for reader in report.readers if reader.failing)
        parts = [f"{count} reader(s) of {report.stream}, worst first"]
        if failing:
            parts.append(f"{failing} failing")
        parts.append(f"time behind: CloudWatch, last {report.window_minutes} min")
        self.show_status(
            " · ".join(parts)
            if count
            else f"no readers of {report.stream} found (looked for Lambda mappings, Firehose, "
            "Pipes, Flink apps, EFO consumers and KCL lease tables)"
        )
        unavailable = self.query_one("#readers-unavailable", Static)
        unavailable.update(Text("\n".join(printable(line) for line in report.unavailable)))
        unavailable.display = bool(report.unavailable)
        self._show_shard_line()
        self._show_detail()

    def _show_shard_line(self) -> None:
        self.query_one("#readers-shard", Static).update(shard_line(self.report, self.shard))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()
        self.refresh_bindings()  # w, d and e follow the kind of reader on the cursor

    def _show_detail(self) -> None:
        self.query_one("#readers-detail", Static).update(detail_text(self.selected_reader))

    @property
    def selected_reader(self) -> Reader | None:
        """The reader on the table's cursor row."""
        table = self.query_one("#readers-table", DataTable)
        if not table.row_count:
            return None
        return self._readers.get(str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))

    # ---- putting a reader right ---------------------------------------------------------------

    def refusal(self, action: str) -> str | None:
        """Why the key of `action` does nothing now (None: it acts)."""
        what = {"rewind": "rewind", "disable_mapping": "disable mapping", "enable_mapping": "enable mapping"}[action]
        if self.read_only:
            return READ_ONLY_REFUSAL.format(what=what)
        if not self.stream or self.backend is None:
            return "no stream open: press p to pick one"
        reader = self.selected_reader
        kind = READER_CHANGES[action]
        if reader is None or reader.kind != kind:
            return NOT_THIS_KIND[kind]
        return None

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """A change is greyed out (None) in read-only mode and where the row is another kind of reader."""
        if action in READER_CHANGES:
            return None if self.refusal(action) else True
        return True

    def watch_read_only(self) -> None:
        self.refresh_bindings()

    def on_key(self, event: events.Key) -> None:
        """A greyed-out key says why rather than stay silent."""
        action = next((b.action for b in self.BINDINGS if isinstance(b, Binding) and b.key == event.key), None)
        if action is not None and (problem := self.refusal(action)):
            event.stop()
            self.app.notify(problem, severity="warning", timeout=4)

    def action_rewind(self) -> None:
        if (problem := self.refusal("rewind")) is not None:
            self.app.notify(problem, severity="warning", timeout=4)
            return
        from console.ui.screens.rewind import RewindScreen

        reader, stream = self.selected_reader, self.stream
        assert reader is not None and stream is not None and self.backend is not None
        self.app.push_screen(
            RewindScreen(self.backend, stream, lease_table_of(reader), watch_seconds=self.watch_seconds),
            lambda _result: self._start(),
        )

    def action_disable_mapping(self) -> None:
        self._toggle_mapping(enable=False)

    def action_enable_mapping(self) -> None:
        self._toggle_mapping(enable=True)

    def _toggle_mapping(self, *, enable: bool) -> None:
        action = "enable_mapping" if enable else "disable_mapping"
        if (problem := self.refusal(action)) is not None:
            self.app.notify(problem, severity="warning", timeout=4)
            return
        reader = self.selected_reader
        uuid = mapping_uuid(reader) if reader is not None else None
        if not uuid or not self.stream:
            self.app.notify("this Lambda reader names no mapping", severity="warning")
            return
        self._change_mapping(self.stream, uuid, enable)

    @work(exclusive=True, group="reader-change", exit_on_error=False, description="change a Lambda mapping")
    async def _change_mapping(self, stream: str, uuid: str, enable: bool) -> None:
        from console.consumers import mappings
        from console.lifecycle.actions import actor
        from console.reshard.actionlog import ActionLog

        verb = "enable" if enable else "disable"
        assert self.backend is not None
        try:
            plan = await mappings.prepare_toggle(self.backend, stream, uuid, enable=enable)
        except ConsoleError as error:
            self.app.notify(f"{verb} mapping: {error.message}", severity="error", timeout=10)
            return
        if not plan.calls:
            self.app.notify(printable(plan.summary), timeout=5)
            return
        confirmed = await self.app.push_screen_wait(ConfirmByNameScreen(stream, "\n".join(plan.lines())))
        if not confirmed or self.read_only or stream != self.stream:
            self.app.notify(f"{verb} mapping {uuid}: cancelled, nothing was called", timeout=4)
            return
        try:
            made = await mappings.run(self.backend, plan, action_log=ActionLog.default(), who=await actor(self.backend))
        except ConsoleError as error:
            self.app.notify(f"{verb} mapping {uuid} failed: {error.message}", severity="error", timeout=15)
        else:
            done = "; ".join(f"{m.call.describe()}: {m.change.outcome}" for m in made)
            self.app.notify(printable(done), title=f"{verb} mapping", timeout=8)
        self._start()  # read the readers again: the mapping's state shows at once
