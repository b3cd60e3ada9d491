"""The console's keys in one table: the command palette, the help screen and read-only gating all
read it, so a new action appears everywhere at once. Console-wide actions are catalogued here
(ACTIONS), the tab keys among them from the tabs' list (console.ui.tabs); each tab's own keys are read
from its widgets' BINDINGS (PANEL_KEYS).

This module imports nothing from the app, so the app, the help screen and the palette can all import
it; and no panel until their keys are read (the help screen, the palette): the console's start-up
loads only the tabs it shows."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from textual.binding import Binding
from textual.widget import Widget

from console.ui.tabs import TAB_KEYS, TABS


@dataclass(frozen=True)
class ConsoleAction:
    action: str  # as run by App.run_action, e.g. "show_tab('placement')"
    key: str  # the key that runs it, for display
    title: str
    help: str
    mutating: bool = False
    tab: str | None = None  # works only on this tab (its key is that panel's binding); None: everywhere


ACTIONS: tuple[ConsoleAction, ...] = (
    ConsoleAction("refresh", "r", "Refresh now", "Poll the stream now instead of waiting for the next interval."),
    ConsoleAction("filter", "/", "Filter shards", "Show only shards whose id, state or parents contain the text."),
    ConsoleAction(
        "sort", "o", "Sort shards", "Cycle the table's sort column (start key, id, state, share, rate).", tab="shards"
    ),
    ConsoleAction(
        "copy_keys",
        "c",
        "Copy selected shard's hash keys",
        "Copy the full starting and ending hash key of the selected shard to the clipboard.",
    ),
    ConsoleAction(
        "split", "s", "Split selected shard", "Preview, confirm and run a split of the selected shard.", mutating=True
    ),
    ConsoleAction(
        "merge",
        "m",
        "Merge selected shard with its neighbour",
        "Preview, confirm and run a merge of the selected shard with an adjacent open shard.",
        mutating=True,
    ),
    ConsoleAction(
        "scale",
        "x",
        "Rescale the stream",
        "Preview, confirm and run UpdateShardCount (uniform scaling).",
        mutating=True,
    ),
    ConsoleAction(
        "enable_monitoring",
        "e",
        "Enable enhanced monitoring",
        "Turn on CloudWatch shard-level metrics for the stream (billed per shard); asks for the name.",
        mutating=True,
        tab="heat",
    ),
    ConsoleAction(
        "stream_actions",
        "S",
        "Stream actions: retention, mode, encryption, distribution, record size, warm throughput, tags, "
        "policy, channels, On-demand Advantage, delete",
        "Change the open stream's settings, tags, resource policy or channels, or the account's On-demand "
        "Advantage, or delete the stream: a preview, then type the stream name.",
        mutating=True,
    ),
    ConsoleAction(
        "pick_stream",
        "p",
        "Open another stream",
        "The fleet: every stream with its rates and trouble, worst first; enter opens one.",
    ),
    *(ConsoleAction(tab.action, tab.key, tab.action_title, tab.help) for tab in TABS),
    ConsoleAction(
        "command_line",
        ":",
        "Command mode",
        "k9s-style commands: shards, lineage, heat, consumers, stream NAME, streams, ro, rw, q.",
    ),
    ConsoleAction(
        "toggle_read_only",
        "R",
        "Toggle read-only",
        "Into read-only at once; back to read-write only after typing the stream name.",
    ),
    ConsoleAction("help", "?", "Help", "Every key and what it does."),
    ConsoleAction("quit", "q", "Quit (ctrl+c too)", "Leave kconsole; ctrl+c as well, outside text boxes."),
)

MUTATING_ACTIONS = frozenset(a.action for a in ACTIONS if a.mutating)
# What read-only mode disables, in the words every notice uses.
READ_ONLY_DISABLES = (
    "split, merge, scale, the stream actions (S), the producer, enhanced monitoring and the readers' changes (w, d, e)"
)

# The console's own keys (KConsoleApp.BINDINGS); the tabs' keys are their widgets' BINDINGS.
APP_BINDINGS: list[Binding] = [
    Binding("q", "quit", "Quit", id="app.quit"),
    Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
    Binding("f1", "help", "Help", show=False, id="app.help_f1"),
    Binding("r", "refresh", "Refresh", id="app.refresh"),
    # One footer entry stands for the tab keys (console.ui.focus sends them on from a text
    # box that a tab switch focused, until the user enters it).
    *(
        Binding(
            tab.key,
            tab.action,
            "Tabs" if tab is TABS[0] else tab.action_title,
            show=tab is TABS[0],
            key_display=TAB_KEYS if tab is TABS[0] else None,
        )
        for tab in TABS
    ),
    Binding("slash", "filter", "Filter", key_display="/", id="app.filter"),
    Binding("s", "split", "Split", id="reshard.split"),
    Binding("m", "merge", "Merge", id="reshard.merge"),
    Binding("x", "scale", "Scale", id="reshard.scale"),
    Binding("c", "copy_keys", "Copy keys", id="app.copy"),
    Binding("p", "pick_stream", "Streams", id="app.streams"),
    Binding("S", "stream_actions", "Stream", id="stream.actions"),
    # k9s habits: command mode, vi keys in lists, ctrl+c quits (in a text box it asks once).
    Binding("colon", "command_line", "Command", key_display=":", show=False, id="app.command_line"),
    Binding("j", "vi_cursor('down')", "Down", show=False, id="app.vi_down"),
    Binding("k", "vi_cursor('up')", "Up", show=False, id="app.vi_up"),
    Binding("ctrl+c", "ctrl_c_quit", "Quit", show=False, id="app.ctrl_c_quit"),
    Binding("R", "toggle_read_only", "Read-only", key_display="R", show=False, id="app.read_only"),
]


def read_only_notice(read_only: bool) -> str:
    """What the console says when read-only mode starts or ends."""
    if read_only:
        return f"read-only: {READ_ONLY_DISABLES} are disabled"
    return "read-write: changes are possible again (each still asks first)"


def masking_notice(rules: tuple[str, ...], masking: bool) -> str:
    """What the console says about its masking at the start and when it is turned off or on again."""
    if masking:
        return f"masking on: {', '.join(rules)} (:unmask turns it off, after you type the stream name)"
    return "masking OFF: the Tail and Heat tabs show what they read as it is (:mask turns it on again)"


def disabled_key_notice(key: str) -> str | None:
    """What pressing `key` says in read-only mode when it runs a mutating console action (the footer
    greys it out and the key does nothing: say why rather than stay silent); None for other keys."""
    for binding in APP_BINDINGS:
        if binding.action in MUTATING_ACTIONS and key in binding.key.split(","):
            return f"{binding.description}: disabled in read-only mode (R or :rw leaves it, after you type the stream name)"
    return None


@dataclass(frozen=True)
class PanelKeys:
    """Where a tab's own keys live: ("module:WidgetClass", selector of its widget in the app) per widget."""

    title: str
    tab: str
    widgets: tuple[tuple[str, str], ...]

    def widget_classes(self) -> list[tuple[type[Widget], str]]:
        """The widget classes (their modules imported now) with their selectors."""
        found = []
        for path, selector in self.widgets:
            module, name = path.split(":")
            found.append((getattr(importlib.import_module(module), name), selector))
        return found


PANEL_KEYS: tuple[PanelKeys, ...] = tuple(PanelKeys(tab.title, tab.id, tab.key_widgets) for tab in TABS)
# Panel actions that change the stream (their panels grey them out when read-only): (widget class name, action).
PANEL_MUTATING = {
    ("ProducerPanel", "start"),
    ("ConsumersPanel", "rewind"),
    ("ReadersPanel", "rewind"),
    ("ReadersPanel", "disable_mapping"),
    ("ReadersPanel", "enable_mapping"),
}
_MOVES = {"cursor", "page", "jump", "first", "follow", "select"}  # arrows & co: listed once, not per widget
_KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc"}


@dataclass(frozen=True)
class PanelBinding:
    panel: PanelKeys
    widget_class: type[Widget]
    selector: str
    binding: Binding

    @property
    def action(self) -> str:
        return self.binding.action.removeprefix("app.")

    @property
    def key(self) -> str:
        if self.binding.key_display:
            return self.binding.key_display
        return "/".join(_KEY_NAMES.get(key.strip(), key.strip()) for key in self.binding.key.split(","))

    @property
    def mutating(self) -> bool:
        return self.action in MUTATING_ACTIONS or (self.widget_class.__name__, self.action) in PANEL_MUTATING


def panel_bindings(panel: PanelKeys) -> list[PanelBinding]:
    """A tab's own keys, read from its widgets' BINDINGS (so help and palette cannot drift from them)."""
    found = []
    for widget_class, selector in panel.widget_classes():
        for binding in widget_class.BINDINGS:
            if isinstance(binding, Binding) and binding.action.split("(")[0] not in _MOVES:
                found.append(PanelBinding(panel, widget_class, selector, binding))
    return found
