"""The rewind dialog (key `w` on a KCL application in the Readers tab, or on the lease table the
Consumers tab reads): where to (trim-horizon, latest, a time such as -1h or ISO 8601, optionally some
shards), the plan console.consumers.rewind prepares — the command line's plan, line for line —, a live
watch of the lease counters (a running application renews them: the change is refused while they
move), and the lease table's name typed to confirm. The change is then run by the domain (intent
logged before each conditional write, a lost reply settled by reading the lease back) and its outcome
per lease shown here; the action log has it (`kconsole log`).

    result = await app.push_screen_wait(RewindScreen(backend, "orders", "orders-app"))  # RunResult | None

The screen owns its workers: the plan, the watch and the run. Esc closes it and cancels them, except
while checkpoints are being written: the outcome of a write in flight is waited for.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, ProgressBar, Static
from textual.worker import Worker, WorkerState

from console.consumers.rewind import DEFAULT_WATCH_SECONDS
from console.errors import ConsoleError, PlanRejected
from console.read.printable import printable

if TYPE_CHECKING:
    from console.backend.protocol import ConsoleBackend
    from console.consumers.rewind_plan import CheckpointPlan
    from console.consumers.rewind_run import RunResult

DEFAULT_TARGET = "-1h"
LIVE_WATCH_SECONDS = 3.0  # one look at the counters: long enough for a worker's renewal (every second or two)
READ_ONLY_REFUSAL = "rewind: not available in read-only mode (R or :rw leaves it, after you type the stream name)"


def shown_lines(lines: list[str]) -> Text:
    """Plan or outcome lines as plain text: lease owners and checkpoints come from the lease table."""
    return Text("\n".join(printable(line) for block in lines for line in block.split("\n")))


def shard_words(text: str) -> list[str]:
    return [word for word in text.replace(",", " ").split() if word]


class RewindScreen(ModalScreen["RunResult | None"]):
    """Plan, watch, confirm and run a rewind of one KCL application's checkpoints."""

    DEFAULT_CSS = """
    RewindScreen {
        align: center middle;
    }
    RewindScreen #rewind-dialog {
        width: 96%;
        max-width: 140;
        height: 96%;
        border: thick $warning;
        background: $surface;
        padding: 0 1;
    }
    RewindScreen #rewind-title {
        text-style: bold;
    }
    RewindScreen .rewind-row {
        height: auto;
    }
    RewindScreen #rewind-target {
        width: 2fr;
    }
    RewindScreen #rewind-shards {
        width: 3fr;
    }
    RewindScreen #rewind-running {
        height: auto;
        color: $text-muted;
    }
    RewindScreen #rewind-running.-running {
        color: $error;
        text-style: bold;
    }
    RewindScreen #rewind-plan-box {
        height: 1fr;
        min-height: 3;
        border: round $panel;
    }
    RewindScreen #rewind-plan {
        width: auto;  /* the plan's columns kept; the box scrolls sideways on a narrow terminal */
    }
    RewindScreen #rewind-status {
        height: auto;
    }
    RewindScreen #rewind-status.-error {
        color: $error;
    }
    RewindScreen #rewind-progress {
        display: none;
    }
    RewindScreen #rewind-progress.-shown {
        display: block;
    }
    RewindScreen #rewind-progress Bar {
        width: 1fr;
    }
    RewindScreen #rewind-name {
        width: 1fr;
    }
    RewindScreen Button {
        margin-left: 1;
        min-width: 10;
    }
    RewindScreen #rewind-keys {
        color: $text-muted;
        height: 1;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="rewind.cancel")]

    def __init__(
        self,
        backend: ConsoleBackend,
        stream: str,
        table: str,
        *,
        target: str = DEFAULT_TARGET,
        watch_seconds: float | None = None,
        live_seconds: float = LIVE_WATCH_SECONDS,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.stream = stream
        self.table = table
        self.initial_target = target
        # The run's own watch before it writes (the CLI's --watch; the KCL's failover time by default).
        self.watch_seconds = DEFAULT_WATCH_SECONDS if watch_seconds is None else watch_seconds
        self.live_seconds = live_seconds
        self.plan: CheckpointPlan | None = None  # the plan shown, for the target and shards typed
        self.running: bool | None = None  # the live watch's last answer (None: not known yet)
        self.result: RunResult | None = None
        self.applying = False
        self.writing = False  # the run's watch is over: checkpoints are being written

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog"):
            yield Static(
                Text(f"Rewind KCL application {self.table} on {self.stream}"),
                id="rewind-title",
            )
            with Horizontal(classes="rewind-row"):
                yield Input(
                    self.initial_target,
                    placeholder="trim-horizon, latest, -1h, an ISO-8601 time or shardId-…=SEQ",
                    id="rewind-target",
                )
                yield Input(placeholder="shards (blank: every shard)", id="rewind-shards")
            yield Static(Text(f"watching {self.table} for lease counters moving…"), id="rewind-running")
            with ScrollableContainer(id="rewind-plan-box"):
                yield Static("", id="rewind-plan")
            yield Static("", id="rewind-status")
            yield ProgressBar(total=100, show_eta=False, id="rewind-progress")
            with Horizontal(classes="rewind-row"):
                yield Input(placeholder=f"type {self.table} to confirm", id="rewind-name")
                yield Button("Cancel", id="rewind-cancel")
                yield Button("Rewind", id="rewind-apply", variant="error", disabled=True)
            yield Static(
                Text("enter: preview · type the table name, enter: rewind · esc: close"),
                id="rewind-keys",
            )

    def on_mount(self) -> None:
        self.query_one("#rewind-target", Input).focus()
        self._preview()
        self._watch()

    # ---- the plan -------------------------------------------------------------------------------

    def _preview(self) -> None:
        if self.applying or self.result is not None:
            return
        self.plan = None
        self._refresh_apply()
        target = self.query_one("#rewind-target", Input).value.strip()
        shards = shard_words(self.query_one("#rewind-shards", Input).value)
        self.show_status(f"planning the rewind to {target or '?'}: reading the shards…")
        self._prepare(target, shards)

    @work(exclusive=True, group="rewind-plan", exit_on_error=False, description="plan the rewind")
    async def _prepare(self, target_text: str, shards: list[str]) -> None:
        from console.consumers import rewind

        now = datetime.now(UTC)
        try:
            target = rewind.parse_target(target_text.split(), now, option="the point to rewind to")  # --to's words
            plan = await rewind.prepare_rewind(self.backend, self.stream, self.table, target, now=now, shards=shards)
        except ConsoleError as error:
            self.query_one("#rewind-plan", Static).update("")
            self.show_status(error.message, error=True)
            return
        self.plan = plan
        self.query_one("#rewind-plan", Static).update(shown_lines(plan.lines()))
        if plan.refusal:
            self.show_status(f"refused: {plan.refusal}", error=True)
        elif not plan.changed:
            self.show_status("nothing to change: every checkpoint is already there")
        else:
            self.show_status(f"{plan.summary}; type {self.table} below to confirm")
        self._refresh_apply()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in ("rewind-target", "rewind-shards") and self.plan is not None and not self.applying:
            self.plan = None  # what is shown no longer answers what is typed: enter plans again
            self.show_status("enter previews the rewind for what is typed")
        self._refresh_apply()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "rewind-name":
            self.apply()
        else:
            self._preview()

    # ---- the live watch -------------------------------------------------------------------------

    @work(exclusive=True, group="rewind-watch", exit_on_error=False, description="watch the lease counters")
    async def _watch(self) -> None:
        from console.consumers.rewind_run import watch_counters

        line = self.query_one("#rewind-running", Static)
        while True:
            try:
                await watch_counters(self.backend, self.table, self.stream, self.live_seconds)
            except PlanRejected as error:
                self.running = True
                line.update(Text(printable(error.message.removesuffix("; nothing was written"))))
            except ConsoleError as error:
                self.running = None
                line.update(Text(printable(f"cannot watch {self.table}: {error.message}")))
                await asyncio.sleep(self.live_seconds)
            else:
                self.running = False
                line.update(Text(f"no lease counter moved in {self.live_seconds:g} s: the application looks stopped"))
            line.set_class(bool(self.running), "-running")
            self._refresh_apply()

    # ---- confirm and run ------------------------------------------------------------------------

    def refusal(self) -> str | None:
        """Why Rewind cannot go ahead now (None: it can)."""
        if self.result is not None:
            return "done"
        if self.applying:
            return "running"
        if self.plan is None:
            return "no plan for what is typed: press enter on where to preview it"
        if self.plan.refusal:
            return f"refused: {self.plan.refusal}"
        if not self.plan.changed:
            return "nothing to change: every checkpoint is already there"
        if self.running:
            return "the application is running: stop it first"
        if self.query_one("#rewind-name", Input).value != self.table:
            return f"type {self.table} to confirm"
        return None

    def _refresh_apply(self) -> None:
        if self.is_mounted:
            self.query_one("#rewind-apply", Button).disabled = self.refusal() is not None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "rewind-apply":
            self.apply()
        else:
            self.action_cancel()

    def apply(self) -> None:
        if getattr(self.app, "read_only", False):
            self.show_status(READ_ONLY_REFUSAL, error=True)
            return
        problem = self.refusal()
        if problem is not None:
            self.show_status(problem, error=True)
            return
        assert self.plan is not None
        self.applying = True
        self._refresh_apply()
        self.workers.cancel_group(self, "rewind-watch")  # the run bumps the counters it writes
        self._run(self.plan)

    @work(exclusive=True, group="rewind-run", exit_on_error=False, description="rewind the checkpoints")
    async def _run(self, plan: CheckpointPlan) -> None:
        from console.consumers import rewind
        from console.lifecycle.actions import actor
        from console.reshard.actionlog import ActionLog

        progress = self.query_one("#rewind-progress", ProgressBar)
        progress.update(total=max(self.watch_seconds, 0.1), progress=0)
        progress.add_class("-shown")

        async def watched(seconds: float) -> None:
            """The run's own watch, drawn as it passes; the writes follow it."""
            start = time.monotonic()
            while (waited := time.monotonic() - start) < seconds:
                progress.update(progress=waited)
                await asyncio.sleep(min(0.2, seconds - waited))
            progress.update(progress=seconds)
            self.writing = True
            self.show_status(f"writing {len(plan.changed)} checkpoint(s)…")

        try:
            result = await rewind.run(
                self.backend,
                plan,
                action_log=ActionLog.default(),
                watch_seconds=self.watch_seconds,
                progress=self.show_status,
                sleep=watched,
                who=await actor(self.backend),
            )
        except ConsoleError as error:
            self.show_status(error.message, error=True)
            self.applying = self.writing = False
            progress.remove_class("-shown")
            self._refresh_apply()
            self._watch()
            return
        finally:
            self.writing = False
        self.result = result
        progress.remove_class("-shown")
        self.query_one("#rewind-plan", Static).update(shown_lines(plan.lines() + result.lines()))
        self.query_one("#rewind-plan-box", ScrollableContainer).scroll_end(animate=False)
        last = result.lines()[-1] if result.outcomes else "nothing to change"
        self.show_status(last, error=not result.complete)
        self.query_one("#rewind-cancel", Button).label = "Close"
        self.query_one("#rewind-cancel", Button).focus()
        self._refresh_apply()
        self.app.notify(f"rewind {self.table}: {last}", severity="information" if result.complete else "error")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failure the workers do not expect (they expect ConsoleError) is a defect: said, not lost."""
        if event.state == WorkerState.ERROR and event.worker.group.startswith("rewind-"):
            error = event.worker.error
            self.show_status(f"{event.worker.description}: internal error: {type(error).__name__}: {error}", error=True)
            if event.worker.group == "rewind-run":  # the action log says what the write in flight did
                self.applying = self.writing = False
                self.query_one("#rewind-progress", ProgressBar).remove_class("-shown")
                self._refresh_apply()

    # ---- what it shows --------------------------------------------------------------------------

    def show_status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#rewind-status", Static)
        status.update(Text(printable(text)))
        status.set_class(error, "-error")

    def action_cancel(self) -> None:
        if self.writing:
            self.app.notify(
                "rewind: checkpoints are being written; the outcome follows in a moment", severity="warning"
            )
            return
        if self.applying and self.result is None:  # still watching the counters: nothing written yet
            self.app.notify(f"rewind {self.table}: cancelled before any write; nothing was written", timeout=5)
        for group in ("rewind-plan", "rewind-watch", "rewind-run"):
            self.workers.cancel_group(self, group)
        self.dismiss(self.result)
