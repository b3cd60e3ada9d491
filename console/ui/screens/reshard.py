"""Reshard dialogs for the live console: a plan preview and a confirm-by-typing-the-name dialog.

    ok = await app.push_screen_wait(ReshardPreviewScreen(plan, stream_name))     # True: proceed
    ok = await app.push_screen_wait(ConfirmByNameScreen(stream_name, "split shardId-...")) # True: confirmed

Both are modal and dismiss with a bool. The preview shows the key space as plain text ribbons
before and after (console.reshard.plan.ribbons: unchanged shards keep their character, new shards get
capitals), the plan text, and any breached limits; a plan with breaches cannot proceed.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from console.reshard.plan import ReshardPlan, render_plan, ribbons

RIBBON_WIDTH = 64


class ReshardPreviewScreen(ModalScreen[bool]):
    """Shows what a reshard will do; dismisses True to proceed, False to cancel."""

    DEFAULT_CSS = """
    ReshardPreviewScreen {
        align: center middle;
    }
    ReshardPreviewScreen #preview-dialog {
        width: 90%;
        max-width: 120;
        height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    ReshardPreviewScreen #preview-title {
        text-style: bold;
        margin-bottom: 1;
    }
    ReshardPreviewScreen #preview-ribbons {
        margin-bottom: 1;
    }
    ReshardPreviewScreen #preview-breaches {
        color: $error;
        text-style: bold;
    }
    ReshardPreviewScreen #preview-consumers.-behind {
        color: $warning;
    }
    ReshardPreviewScreen #preview-body {
        height: 1fr;
        border: round $panel;
    }
    ReshardPreviewScreen #preview-buttons {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    ReshardPreviewScreen Button {
        margin-left: 2;
    }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "proceed", "Proceed", show=False),
    ]

    def __init__(self, plan: ReshardPlan, stream_name: str, *, consumers: list[str] | None = None,
                 consumers_behind: bool = False) -> None:
        super().__init__()
        self.plan = plan
        self.stream_name = stream_name
        self.consumers = consumers or []  # the lease table's barrier lines (Consumers tab), if one is open
        self.consumers_behind = consumers_behind

    @property
    def can_proceed(self) -> bool:
        return self.plan.ok and not self.plan.is_noop

    def compose(self) -> ComposeResult:
        before, after = ribbons(self.plan, RIBBON_WIDTH)
        with Vertical(id="preview-dialog"):
            yield Static(Text(f"{self.stream_name}: {self.plan.summary}"), id="preview-title")
            yield Static(Text(f"before |{before}|\nafter  |{after}|\n"
                              f"{self.plan.moved_fraction:.2%} of the key space moves to another shard"),
                         id="preview-ribbons")
            if self.plan.breaches:
                yield Static(Text("Cannot proceed, limits breached:\n" + "\n".join(
                    f"- {breach.detail} (rule: {breach.rule})" for breach in self.plan.breaches)), id="preview-breaches")
            elif self.plan.is_noop:
                yield Static(Text("Nothing to do: the stream already looks like this."), id="preview-breaches")
            if self.consumers:
                yield Static(Text("\n".join(self.consumers), style="bold" if self.consumers_behind else ""),
                             id="preview-consumers", classes="-behind" if self.consumers_behind else "")
            with VerticalScroll(id="preview-body"):
                yield Static(Text(render_plan(self.plan, with_ribbons=False)), id="preview-text")
            with Horizontal(id="preview-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Proceed", id="proceed", variant="warning", disabled=not self.can_proceed)

    def on_mount(self) -> None:
        self.query_one("#cancel" if not self.can_proceed else "#proceed", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "proceed":
            self.action_proceed()
        else:
            self.action_cancel()

    def action_proceed(self) -> None:
        if self.can_proceed:
            self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class ConfirmByNameScreen(ModalScreen[bool]):
    """Asks the operator to type the stream name; dismisses True only when it matches exactly."""

    DEFAULT_CSS = """
    ConfirmByNameScreen {
        align: center middle;
    }
    ConfirmByNameScreen #confirm-dialog {
        width: 70;
        max-width: 100%;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ConfirmByNameScreen #confirm-action {
        text-style: bold;
        margin-bottom: 1;
    }
    ConfirmByNameScreen #confirm-error {
        color: $error;
        height: auto;
    }
    ConfirmByNameScreen #confirm-buttons {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    ConfirmByNameScreen Button {
        margin-left: 2;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, stream_name: str, action_text: str) -> None:
        super().__init__()
        self.stream_name = stream_name
        self.action_text = action_text

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            # Static, not Label: a long action (a plan summary, the metrics to enable) wraps instead of being cut.
            yield Static(Text(self.action_text), id="confirm-action")
            yield Static(Text(f"Type the stream name ({self.stream_name}) to confirm:"))
            yield Input(placeholder=self.stream_name, id="confirm-input")
            yield Static("", id="confirm-error")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Confirm", id="confirm", variant="error", disabled=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-input", Input).focus()

    def _matches(self) -> bool:
        return self.query_one("#confirm-input", Input).value == self.stream_name

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#confirm", Button).disabled = not self._matches()
        self.query_one("#confirm-error", Static).update("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._try_confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm":
            self._try_confirm()
        else:
            self.action_cancel()

    def _try_confirm(self) -> None:
        if self._matches():
            self.dismiss(True)
        else:
            self.query_one("#confirm-error", Static).update(
                Text(f"That is not {self.stream_name!r}; type it exactly, or press Escape to cancel."))

    def action_cancel(self) -> None:
        self.dismiss(False)
