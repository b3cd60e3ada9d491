"""The producer panel: set up a test run, watch it per shard, then read the verification report.

The panel runs its own work: Start posts `StartRequested(panel, settings, verify, aggregate)` (Mode
"Aggregate (KPL)" is batch mode with KPL aggregation, console.produce.aggregate), which the panel
acts on itself (and which bubbles on, for whoever watches): after the operator types the stream name
(writing is a change), `console.produce.verify.run_and_verify` runs in a worker on the panel and feeds
the panel's own widgets (progress, per-shard table, report). Stop (`StopRequested`), or another
stream being opened, cancels it. What the rest of the console needs leaves as a message:
`RunFinished` (the stream holds new records: the app polls it). Failures in the report are rows of a table: selecting one lists the
records of its key, as read and as acknowledged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Checkbox, DataTable, Input, Label, ProgressBar, Select, Static

from console.backend.protocol import RecordsBackend, ShardsBackend
from console.errors import ConsoleError
from console.produce.aggregate import DEFAULT_MAX_AGGREGATE_BYTES, aggregation_line
from console.produce.report import ProduceResult, ProducerProgress, verifying_line
from console.produce.settings import ProducerSettings
from console.produce.verify import run_and_verify
from console.produce.verify_analysis import VerificationReport
from console.read.printable import printable
from console.ui.format import format_rate, short_shard_id
from console.ui.screens.confirm import ConfirmByNameScreen
from console.words import counted

READ_ONLY_REFUSAL = "read-only: the producer writes records, so it is disabled (--read-only)"
NO_STREAM = "no stream open: press p to pick one"
FORM_HINT = "enter edits a field, tab moves to the next; ctrl+s or Start runs."

AGGREGATE = "aggregate"  # the Mode choice that aggregates (batch mode underneath)
# ProducerSettings.mode and .explicit_hash_keys, as the panel's selects offer them.
ProducerMode = Literal["batch", "sequential"]
HashKeySource = Literal["none", "keytree"]


class ProducerBackend(RecordsBackend, ShardsBackend, Protocol):
    """What a run asks of the backend (console.produce.verify): the shard map's pages, the writes and
    the read-back."""


class ProducerPanel(Vertical):
    # A compact grid (label, field) x 3 per line: the whole form takes three lines, so the progress
    # and the per-shard table still have room on an 80x24 terminal.
    DEFAULT_CSS = """
    ProducerPanel { height: 1fr; }
    ProducerPanel #producer-form {
        layout: grid; grid-size: 6; grid-columns: auto 1fr auto 1fr auto 1fr; grid-rows: 1;
        grid-gutter: 0 1; height: 2; padding: 0 1; margin-top: 1;
    }
    ProducerPanel #producer-form Label { color: $text-muted; }
    ProducerPanel #producer-actions { height: 1; padding: 0 1; margin-top: 1; }
    ProducerPanel #producer-actions Checkbox { margin-right: 2; }
    /* Off shows an empty box, on a bold tick mark: the theme's two shades of the glyph alone read alike. */
    ProducerPanel Checkbox > .toggle--button { color: $panel; background: $panel; }
    ProducerPanel Checkbox.-on > .toggle--button { color: $text-success; text-style: bold; }
    ProducerPanel #producer-actions Button { margin-left: 1; min-width: 9; }
    ProducerPanel #producer-actions .spacer { width: 1fr; }
    ProducerPanel #producer-status { height: auto; padding: 0 1; margin-top: 1; }
    ProducerPanel #producer-status.-error { color: $error; }
    ProducerPanel #producer-progress { width: 100%; padding: 0 1; }
    ProducerPanel #producer-progress Bar { width: 1fr; }
    ProducerPanel #producer-shards { height: 1fr; min-height: 4; max-height: 12; }
    ProducerPanel #producer-results { height: 1fr; }
    ProducerPanel #producer-report { height: auto; padding: 0 1; }
    ProducerPanel #producer-problems { height: auto; max-height: 8; }
    ProducerPanel #producer-records { height: auto; max-height: 8; }
    ProducerPanel DataTable.-empty { display: none; }
    """

    BINDINGS = [
        Binding("ctrl+s", "start", "Start run", id="producer.start"),
        Binding("ctrl+t", "stop", "Stop run", id="producer.stop"),
    ]

    # Followed from the app (data_bind): the stream the run writes to, and whether writing is allowed.
    stream: reactive[str | None] = reactive(None, init=False)
    read_only: reactive[bool] = reactive(False, init=False)

    class StartRequested(Message):
        """The operator asked for a run with these (validated) settings."""

        def __init__(
            self, panel: ProducerPanel, settings: ProducerSettings, verify: bool, aggregate: bool = False
        ) -> None:
            super().__init__()
            self.panel = panel
            self.settings = settings
            self.verify = verify
            self.aggregate = aggregate  # pack the records into KPL aggregates

        @property
        def control(self) -> ProducerPanel:
            return self.panel

    class StopRequested(Message):
        """The operator asked to stop the run in progress."""

        def __init__(self, panel: ProducerPanel) -> None:
            super().__init__()
            self.panel = panel

        @property
        def control(self) -> ProducerPanel:
            return self.panel

    class RunFinished(Message):
        """A run ended (verified or not, stopped early or not): `stream` holds new records."""

        def __init__(self, stream: str, result: ProduceResult, report: VerificationReport | None) -> None:
            super().__init__()
            self.stream = stream
            self.result = result
            self.report = report

    def __init__(self, backend: ProducerBackend | None = None, *, local: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self._local = local  # pacing defaults off for the embedded local Kinesis
        self.report: VerificationReport | None = None
        self.running = False
        self._pacing = False  # the run's setting, for the Pace column
        self._progress: ProducerProgress | None = None  # the run's latest progress report
        self._stopped = False  # the run was stopped with ctrl+t or Stop

    def compose(self) -> ComposeResult:
        with Grid(id="producer-form"):
            yield Label("Keys")
            yield Input("100", id="producer-keys", type="integer", compact=True, tooltip="distinct partition keys")
            yield Label("Records/key")
            yield Input("10", id="producer-per-key", type="integer", compact=True)
            yield Label("Payload B")
            yield Input("128", id="producer-payload", type="integer", compact=True, tooltip="bytes per record")
            yield Label("Rate/s")
            yield Input(
                "",
                placeholder="max",
                id="producer-rate",
                type="number",
                compact=True,
                tooltip="records per second for the whole run; empty: as fast as allowed",
            )
            yield Label("Mode")
            yield Select(
                [("batch", "batch"), ("sequential", "sequential"), ("Aggregate (KPL)", AGGREGATE)],
                value="batch",
                allow_blank=False,
                id="producer-mode",
                compact=True,
                tooltip="batch: PutRecords, one record per key per batch; sequential: PutRecord chained; "
                f"Aggregate: batch, records packed into KPL aggregates of up to "
                f"{DEFAULT_MAX_AGGREGATE_BYTES:,} bytes by predicted shard, one in flight per key",
            )
            yield Label("Hash keys")
            yield Select(
                [("MD5 of key", "none"), ("key tree", "keytree")],
                value="none",
                allow_blank=False,
                id="producer-ehk",
                compact=True,
                tooltip="explicit hash keys: none, or from the key tree",
            )
        with Horizontal(id="producer-actions"):
            yield Checkbox("Verify (read back)", value=True, id="producer-verify", compact=True)
            yield Checkbox("Pace to shard limits", value=not self._local, id="producer-pace", compact=True)
            yield Static(classes="spacer")
            yield Button("Start", variant="primary", id="producer-start", compact=True)
            yield Button("Stop", variant="error", id="producer-stop", disabled=True, compact=True)
        yield Static(FORM_HINT, id="producer-status")
        yield ProgressBar(total=100, show_eta=False, id="producer-progress")
        yield DataTable(id="producer-shards", cursor_type="none", zebra_stripes=True)
        with VerticalScroll(id="producer-results"):
            yield Static("", id="producer-report")
            # Shown only when there is something to list (empty tables would be two stray header lines).
            yield DataTable(id="producer-problems", cursor_type="row", zebra_stripes=True, classes="-empty")
            yield DataTable(id="producer-records", cursor_type="row", zebra_stripes=True, classes="-empty")

    def on_mount(self) -> None:
        self.query_one("#producer-shards", DataTable).add_columns("Shard", "Acked", "Rate", "Throttled", "Pace")
        self.query_one("#producer-problems", DataTable).add_columns("Failure", "Key", "Seq", "Shard", "Detail")
        self.query_one("#producer-records", DataTable).add_columns(
            "Pos", "Seq", "Read on", "Sequence number", "Acked on", "Acked sequence number"
        )

    # -- the form --------------------------------------------------------------------------------

    @property
    def aggregating(self) -> bool:
        """The Aggregate mode: batch mode with the records packed into KPL aggregates."""
        return self.query_one("#producer-mode", Select).value == AGGREGATE

    def read_settings(self) -> tuple[ProducerSettings, bool]:
        """The form as validated settings; raises ConsoleError (BadInput) naming the bad field."""

        def number(widget_id: str, name: str, kind: Callable[[str], Any] = int) -> Any:
            text = self.query_one(widget_id, Input).value.strip()
            try:
                return kind(text)
            except ValueError:
                raise ConsoleError(f"{name}: expected a number; got {text!r}") from None

        rate_text = self.query_one("#producer-rate", Input).value.strip()
        settings = ProducerSettings(
            keys=number("#producer-keys", "keys"),
            records_per_key=number("#producer-per-key", "records per key"),
            payload_bytes=number("#producer-payload", "payload bytes"),
            rate=number("#producer-rate", "rate", float) if rate_text else None,
            # What the selects hold is checked by validated(), as for the command line's flags.
            mode="batch" if self.aggregating else cast(ProducerMode, self.query_one("#producer-mode", Select).value),
            explicit_hash_keys=cast(HashKeySource, self.query_one("#producer-ehk", Select).value),
            pacing=self.query_one("#producer-pace", Checkbox).value,
        ).validated()
        return settings, self.query_one("#producer-verify", Checkbox).value

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "producer-stop":
            self.action_stop()
        elif event.button.id == "producer-start":
            self.action_start()

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Start writes records: greyed out (None) in read-only mode; each key only when it can act."""
        if action == "start":
            return None if self.read_only or self.running else True
        if action == "stop":
            return True if self.running else None
        return True

    def watch_read_only(self) -> None:
        self.refresh_bindings()

    def watch_stream(self) -> None:
        """A run writes to the stream it was started on: another stream opened stops it, and its
        progress, shards and report (the stream before's) leave the screen; the form stays."""
        stopped = self.running
        self.workers.cancel_group(self, "producer")
        self.running = False
        self.report = None
        if not self.is_mounted:
            return
        self._set_running(False)
        self.query_one("#producer-progress", ProgressBar).update(total=100, progress=0)
        self.query_one("#producer-shards", DataTable).clear()
        for table_id in ("#producer-problems", "#producer-records"):
            self.query_one(table_id, DataTable).clear()
            self.query_one(table_id).add_class("-empty")
        self.query_one("#producer-report", Static).update("")
        if stopped:
            self.show_error("stopped: another stream was opened")
        else:
            self._status(FORM_HINT)

    def action_start(self) -> None:
        if self.running:
            return
        try:
            settings, verify = self.read_settings()
        except ConsoleError as error:
            self.show_error(error.message)
            return
        self.post_message(self.StartRequested(self, settings, verify, self.aggregating))

    def action_stop(self) -> None:
        if self.running:
            self.post_message(self.StopRequested(self))

    def on_producer_panel_start_requested(self, message: StartRequested) -> None:
        if self.read_only:
            self.show_error(READ_ONLY_REFUSAL)
            return
        stream = self.stream
        if not stream or self.backend is None:
            self.show_error(NO_STREAM)
            return
        settings, verify, aggregate = message.settings, message.verify, message.aggregate

        def confirmed(yes: bool | None) -> None:
            # Writing to a stream is a change like a reshard: the operator types its name first.
            if yes and stream == self.stream and not self.read_only:
                self._run(settings, verify, stream, aggregate)
            else:
                self.query_one("#producer-progress", ProgressBar).update(total=settings.total, progress=0)
                self.show_error("cancelled: nothing was written")

        self.app.push_screen(
            ConfirmByNameScreen(
                stream,
                f"Write {counted(settings.total, 'test record')} ({counted(settings.keys, 'key')} x "
                f"{settings.records_per_key}) to {stream}",
            ),
            confirmed,
        )

    def on_producer_panel_stop_requested(self, _message: StopRequested) -> None:
        self.workers.cancel_group(self, "producer")
        self._stopped = True
        self.show_error(self._stopped_line())

    def _stopped_line(self) -> str:
        """ "stopped", and how far the run got (its last progress report): a stopped run keeps its counts."""
        return "stopped" if self._progress is None else f"stopped · {self._progress.line()}"

    @work(exclusive=True, group="producer", exit_on_error=False)
    async def _run(self, settings: ProducerSettings, verify: bool, stream: str, aggregate: bool = False) -> None:
        assert self.backend is not None
        self.show_started(settings)
        try:
            result, report = await run_and_verify(
                self.backend,
                stream,
                settings,
                verify=verify,
                on_progress=self.show_progress,
                on_verifying=lambda wait: self.show_verifying(settings.run_id, wait),
                max_aggregate_bytes=DEFAULT_MAX_AGGREGATE_BYTES if aggregate else None,
            )
        except ConsoleError as error:
            self.show_error(error.message)
            return
        if report is not None:
            self.show_report(report)
        else:
            self.show_finished()
        trouble = [
            text for text in (result.stopped and f"stopped early: {result.stopped}", result.verification_error) if text
        ]
        aggregated = aggregation_line(result.to_json().get("aggregation"))
        if aggregated and not trouble and (report is None or report.ok):
            self._status(f"done · {aggregated}")
        if trouble:  # the partial report stays on screen; the status line says what went wrong
            self.show_error(
                f"{result.sent} sent, {result.acknowledged} acknowledged, {len(result.failed)} failed, "
                f"{result.not_attempted} not attempted; " + "; ".join(trouble)
            )
        self.post_message(self.RunFinished(stream, result, report))

    # -- fed by the run ----------------------------------------------------------------------------

    def show_started(self, settings: ProducerSettings) -> None:
        self.running = True
        self._stopped = False
        self._progress = None
        self.report = None
        self._pacing = settings.pacing
        self._set_running(True)
        self._status(
            f"run {settings.run_id}: {counted(settings.total, 'record')} ({counted(settings.keys, 'key')} x "
            f"{settings.records_per_key}), {settings.mode} mode"
        )
        self.query_one("#producer-progress", ProgressBar).update(total=settings.total, progress=0)
        self.query_one("#producer-shards", DataTable).clear()
        for table_id in ("#producer-problems", "#producer-records"):
            self.query_one(table_id, DataTable).clear()
            self.query_one(table_id).add_class("-empty")
        self.query_one("#producer-report", Static).update("")

    def show_progress(self, progress: ProducerProgress) -> None:
        self._progress = progress
        self.query_one("#producer-progress", ProgressBar).update(total=progress.total, progress=progress.acknowledged)
        if self.running:
            self._status(f"{progress.line()} · {progress.elapsed:.1f} s", error=bool(progress.failing_now))
        elif self._stopped:  # a stopped run reports once more as it ends: still "stopped", with its final counts
            self._status(self._stopped_line(), error=True)
        table = self.query_one("#producer-shards", DataTable)
        table.clear()
        for shard_id, shard in progress.shards.items():
            table.add_row(
                short_shard_id(shard_id),
                str(shard.acknowledged),
                format_rate(shard.records_per_second, " rec/s"),
                str(shard.throttled),
                f"{shard.pace:.0%}" if self._pacing else "off",
                key=shard_id,
            )
        if progress.done and self.running:
            self._set_running(False)

    def show_verifying(self, run_id: str, wait: float = 0.0) -> None:
        self._status(f"{verifying_line(run_id, wait)} ...")

    def show_report(self, report: VerificationReport) -> None:
        self.report = report
        self.running = False
        self._set_running(False)
        lat = report.latency_ms
        verdict = Text("VERIFIED", style="bold green") if report.ok else Text("VERIFICATION FAILED", style="bold red")
        lines = [
            f"  run {report.run_id}",
            f"sent {report.sent} · acknowledged {report.acknowledged} · read back {report.read_back}",
            f"lost {report.lost} · duplicated {report.duplicated} (possible {report.possible_duplicates}, "
            f"late {report.late_duplicates}) · "
            f"out of order {report.out_of_order} ({counted(report.out_of_order_keys, 'key')}) · misplaced {report.misplaced}",
            f"latency p50 {lat['p50']} ms · p99 {lat['p99']} ms · max {lat['max']} ms · "
            f"{counted(len(report.shards), 'shard')} read in {report.read_seconds:.2f} s",
        ]
        if report.first_out_of_order_line:
            lines.append(report.first_out_of_order_line)
        self.query_one("#producer-report", Static).update(Text.assemble(verdict, "\n".join(lines)))
        self._status("done" if report.ok else "done: select a failure to see its key's records")
        problems = self.query_one("#producer-problems", DataTable)
        problems.clear()
        for index, problem in enumerate(report.problems):
            problems.add_row(
                problem.kind,
                Text(printable(problem.key)),
                str(problem.seq),
                short_shard_id(problem.shard_id or "-"),
                problem.detail,
                key=str(index),
            )
        problems.set_class(not report.problems, "-empty")

    def show_finished(self) -> None:
        """A run without verification ended."""
        self.running = False
        self._set_running(False)

    def show_error(self, message: str) -> None:
        self.running = False
        self._set_running(False)
        self._status(message, error=True)

    # -- failures to records ------------------------------------------------------------------------

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "producer-problems" or self.report is None:
            return
        event.stop()
        if event.row_key.value is not None:  # rows are keyed by their problem's position
            self.show_records_for(self.report.problems[int(event.row_key.value)].key)

    def show_records_for(self, key: str) -> None:
        table = self.query_one("#producer-records", DataTable)
        table.clear()
        assert self.report is not None
        for row in self.report.records_for(key):
            table.add_row(
                "-" if row["position"] is None else str(row["position"]),
                str(row["seq"]),
                short_shard_id(row["shard_id"] or "never read"),
                row["sequence_number"] or "-",
                short_shard_id(row["acked_shard_id"] or "not acked"),
                row["acked_sequence_number"] or "-",
            )
        table.remove_class("-empty")
        self._status(f"records of key {printable(key)}: {table.row_count}")

    # -- helpers ------------------------------------------------------------------------------------

    def _set_running(self, running: bool) -> None:
        self.query_one("#producer-start", Button).disabled = running
        self.query_one("#producer-stop", Button).disabled = not running
        self.refresh_bindings()  # the footer greys Start / Stop to match

    def _status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#producer-status", Static)
        status.set_class(error, "-error")
        status.update(Text(text))  # plain: messages may hold brackets that are not markup
