"""`?`: every key that works where you are, what it does, and which are disabled (read-only)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.ui.commands import ACTIONS

PANELS_TEXT = (
    "Header: backend, region, profile, stream, status, capacity mode, open shards, retention, age of the data;"
    " red with the reason when polling fails (it keeps retrying).\n"
    "Ribbon: the key space [0, 2^128) left to right; each open shard a segment as wide as its share. Green is"
    " an even share, amber wider (hotter if traffic is uniform), blue narrower; ▀ marks the selected shard,"
    " ▼ the keys typed in Placement.\n"
    "Select a shard on the table, the ribbon (click) or the lineage tree: the others follow."
)


def bindings_table(active: dict[str, ActiveBinding], read_only: bool) -> Table:
    """The console's own actions first (the catalogue), then whatever else the focused widget adds."""
    table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
    table.add_column("Key", no_wrap=True)
    table.add_column("Action")
    table.add_column("")
    for action in ACTIONS:
        note = "disabled: read-only" if action.mutating and read_only else ""
        table.add_row(action.key, action.title, Text(note, style="dim"))
    table.add_row("ctrl+p", "Command palette (search every action)", "")
    table.add_row("esc", "Leave a text box (so the keys above work again)", "")
    catalogued = {action.action for action in ACTIONS}
    seen: set[str] = set()
    for key, (_node, binding, enabled, _tooltip) in active.items():
        if not binding.description or binding.action in catalogued or binding.action in seen:
            continue
        seen.add(binding.action)
        table.add_row(binding.key_display or key, binding.description,
                      Text("" if enabled else "not available here", style="dim"))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help", id="help.close")]

    def __init__(self, active: dict[str, ActiveBinding], read_only: bool) -> None:
        super().__init__()
        self._active = active
        self._read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static("kconsole — keys", id="help-title")
            yield Static(bindings_table(self._active, self._read_only))
            yield Static(PANELS_TEXT, id="help-panels")
            yield Static("escape closes", id="help-close")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
