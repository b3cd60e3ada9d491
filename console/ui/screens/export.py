"""Export the Tail tab's records: a format (JSON lines, CSV, raw length-prefixed bytes), what to export (the
records held and shown, or the whole From/To window read again) and the file.

    app.push_screen(ExportScreen(Path("~/tails/orders-20261122T200000Z"), shown=1200), callback)
    # callback((output, scope, path)) with scope "held" or "window"; None when cancelled
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

from console.read.export import EXPORT_EXTENSIONS, EXPORT_FORMAT_NAMES
from console.words import counted

FORMATS = [(name, output) for output, name in EXPORT_FORMAT_NAMES.items()]


class ExportScreen(ModalScreen["tuple[str, str, str] | None"]):
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen #export-dialog { width: 80; max-width: 100%; height: auto; border: thick $primary;
                                  background: $surface; padding: 1 2; }
    ExportScreen Select { margin-bottom: 1; }
    ExportScreen #export-buttons { height: auto; align: right middle; margin-top: 1; }
    ExportScreen Button { margin-left: 2; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, stem: Path, shown: int) -> None:
        super().__init__()
        self.stem = stem
        self.shown = shown

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Static(Text("Export records"), id="export-title")
            yield Select(FORMATS, value="jsonl", allow_blank=False, id="export-format")
            yield Select(
                [
                    (f"the {counted(self.shown, 'record')} shown", "held"),
                    ("the whole From/To window, read again (To empty: until now)", "window"),
                ],
                value="held",
                allow_blank=False,
                id="export-scope",
            )
            yield Input(str(self.stem) + EXPORT_EXTENSIONS["jsonl"], id="export-path")
            with Horizontal(id="export-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Export", id="export", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#export-format", Select).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "export-format":
            path = self.query_one("#export-path", Input)
            current = Path(path.value)
            if current.suffix in EXPORT_EXTENSIONS.values():
                path.value = str(current.with_suffix(EXPORT_EXTENSIONS[str(event.value)]))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._export()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "export":
            self._export()
        else:
            self.action_cancel()

    def _export(self) -> None:
        path = self.query_one("#export-path", Input).value.strip()
        if path:
            self.dismiss(
                (
                    str(self.query_one("#export-format", Select).value),
                    str(self.query_one("#export-scope", Select).value),
                    str(Path(path).expanduser()),
                )
            )

    def action_cancel(self) -> None:
        self.dismiss(None)
