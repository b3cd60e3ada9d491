"""`?`: every key, where it works, what it does, and which are disabled (read-only).

Built from the bindings themselves (the action catalogue for the console-wide keys, each panel's
BINDINGS for its own), so the list cannot drift from what the keys do.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.ui.bindings import ACTIONS, PANEL_KEYS, panel_bindings
from console.ui.screens.command_line import COMMANDS
from console.ui.tabs import TAB_KEYS

PANELS_TEXT = (
    "Header: stream, status, capacity mode, open shards, retention; backend, region, profile and the age of"
    " the data; where it fits, CloudWatch's last 5 minutes: the consumers' lag (iterator age) and how many"
    " requests were throttled. Red with the reason when polling fails (it keeps retrying).\n"
    "Ribbon: the key space [0, 2^128) left to right; each open shard a segment as wide as its share. Green is"
    " an even share, amber wider (hotter if traffic is uniform), blue narrower; while the Heat tab samples,"
    " colours show heat instead (green calm, yellow ≥ 50%, red ≥ 80% of the shard limit). ▀ marks the"
    " selected shard, ▼ the keys typed in Placement.\n"
    "Select a shard on the table, the ribbon (click) or the lineage tree: the others follow."
)

KEY_WIDTH = 12


def bindings_table(read_only: bool) -> Group:
    """One titled two-column list per place: everywhere, then each tab."""
    disabled = Text("disabled: read-only", style="dim")
    parts: list[Any] = []

    def section(title: str, rows: list[tuple[str, str, Text | str]]) -> None:
        table = Table(box=None, padding=(0, 1), show_header=False, expand=True)
        table.add_column("Key", no_wrap=True, style="bold", width=KEY_WIDTH)
        table.add_column("Action", ratio=1)
        table.add_column("", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        parts.extend([Text(title, style="bold underline"), table, Text("")])

    section(
        "Everywhere (outside text boxes)",
        [
            (action.key, action.title, disabled if action.mutating and read_only else "")
            for action in ACTIONS
            if action.tab is None
        ]
        + [
            ("ctrl+p", "Command palette (search every action)", ""),
            ("enter", f"Type into the text box a tab opened on (until then {TAB_KEYS} still switch tabs)", ""),
            (
                "esc",
                f"Stop typing in a text box (the tab's keys and {TAB_KEYS} work, enter goes back in); "
                "esc again leaves it, so the keys above work again",
                "",
            ),
            (
                "↑↓ j k",
                "Move in the table, tree, tail or heat list (pgup / pgdn: a page; home / end: first / last)",
                "",
            ),
        ],
    )
    section("Command mode (: then enter)", [(f":{command.usage}", command.help, "") for command in COMMANDS])
    for panel in PANEL_KEYS:
        rows = [
            (entry.key, entry.binding.description, disabled if entry.mutating and read_only else "")
            for entry in panel_bindings(panel)
        ]
        if rows:
            section(f"{panel.title} tab", rows)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help", id="help.close")]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self._read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static("kconsole — keys", id="help-title")
            yield Static(bindings_table(self._read_only), id="help-keys")
            yield Static(PANELS_TEXT, id="help-panels")
            yield Static("esc, ? or q closes · ↑ ↓ scroll", id="help-close")
