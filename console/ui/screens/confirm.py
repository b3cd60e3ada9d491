"""Confirm a change by typing the stream's name: every change the console makes (split, merge,
scale, the stream actions, the producer's writes, enhanced monitoring, leaving read-only) asks it.

    ok = await app.push_screen_wait(ConfirmByNameScreen(stream_name, "split shardId-...")) # True: confirmed
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static


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

    def on_input_changed(self, _event: Input.Changed) -> None:
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
                Text(f"That is not {self.stream_name!r}; type it exactly, or press Escape to cancel.")
            )

    def action_cancel(self) -> None:
        self.dismiss(False)
