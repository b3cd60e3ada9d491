"""The console's actions in one catalogue: the command palette, the help screen and read-only gating
all read it, so a new action appears everywhere at once. Each tab's own keys are read from its
widgets' BINDINGS (PANEL_KEYS), for the help screen and the palette alike."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from console.ui.app import KConsoleApp


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
    ConsoleAction("sort", "o", "Sort shards", "Cycle the table's sort column (start key, id, state, share, rate).",
                  tab="shards"),
    ConsoleAction("copy_keys", "c", "Copy selected shard's hash keys",
                  "Copy the full starting and ending hash key of the selected shard to the clipboard."),
    ConsoleAction("split", "s", "Split selected shard", "Preview, confirm and run a split of the selected shard.",
                  mutating=True),
    ConsoleAction("merge", "m", "Merge selected shard with its neighbour",
                  "Preview, confirm and run a merge of the selected shard with an adjacent open shard.",
                  mutating=True),
    ConsoleAction("scale", "x", "Rescale the stream", "Preview, confirm and run UpdateShardCount (uniform scaling).",
                  mutating=True),
    ConsoleAction("enable_monitoring", "e", "Enable enhanced monitoring",
                  "Turn on CloudWatch shard-level metrics for the stream (billed per shard); asks for the name.",
                  mutating=True, tab="heat"),
    ConsoleAction("pick_stream", "p", "Open another stream", "List the streams on this backend and open one."),
    ConsoleAction("show_tab('shards')", "1", "Show shards", "The shard table."),
    ConsoleAction("show_tab('lineage')", "2", "Show lineage", "Closed parents and their children."),
    ConsoleAction("show_tab('placement')", "3", "Show placement", "Which shard each partition key lands on."),
    ConsoleAction("show_tab('keytree')", "4", "Show key-tree balance", "Balance of explicit hash keys (seed 000)."),
    ConsoleAction("show_tab('producer')", "5", "Show producer", "Publish ordered test records and verify them."),
    ConsoleAction("show_tab('tail')", "6", "Show tail", "Read the records in the stream."),
    ConsoleAction("show_tab('heat')", "7", "Show heat", "Throughput per shard and hot keys."),
    ConsoleAction("command_line", ":", "Command mode",
                  "k9s-style commands: shards, lineage, heat, consumers, stream NAME, streams, ro, rw, q."),
    ConsoleAction("toggle_read_only", "R", "Toggle read-only",
                  "Into read-only at once; back to read-write only after typing the stream name."),
    ConsoleAction("help", "?", "Help", "Every key and what it does."),
    ConsoleAction("quit", "q", "Quit (ctrl+c too)", "Leave kconsole; ctrl+c as well, outside text boxes."),
)

MUTATING_ACTIONS = frozenset(a.action for a in ACTIONS if a.mutating)


@dataclass(frozen=True)
class PanelKeys:
    """Where a tab's own keys live: (class name, selector of its widget in the app) per widget class."""

    title: str
    tab: str
    module: str
    widgets: tuple[tuple[str, str], ...]


PANEL_KEYS: tuple[PanelKeys, ...] = (
    PanelKeys("Shards", "shards", "console.ui.widgets.shard_table", (("ShardTable", "#shard-table"),)),
    PanelKeys("Lineage", "lineage", "console.ui.widgets.lineage_tree", (("LineageTree", "#lineage-tree"),)),
    PanelKeys("Placement", "placement", "console.ui.widgets.placement", (("PlacementPanel", "#placement-panel"),)),
    PanelKeys("Key tree", "keytree", "console.ui.widgets.keytree_panel", (("KeyTreePanel", "#keytree-panel"),)),
    PanelKeys("Producer", "producer", "console.ui.producer_panel", (("ProducerPanel", "#producer-panel"),)),
    PanelKeys("Tail", "tail", "console.ui.tail_view", (("TailView", "#tail-view"), ("RecordRing", "#tail-ring"))),
    PanelKeys("Heat", "heat", "console.ui.heat_panel", (("HeatPanel", "#heat-panel"),)),
)
# Panel actions that change the stream (their panels grey them out when read-only).
PANEL_MUTATING = {("ProducerPanel", "start")}
_MOVES = {"cursor", "page", "jump", "first", "follow", "select"}  # arrows & co: listed once, not per widget
_KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc"}


@dataclass(frozen=True)
class PanelBinding:
    panel: PanelKeys
    class_name: str
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
        return self.action in MUTATING_ACTIONS or (self.class_name, self.action) in PANEL_MUTATING


def panel_bindings(panel: PanelKeys) -> list[PanelBinding]:
    """A tab's own keys, read from its widgets' BINDINGS (so help and palette cannot drift from them).
    A panel module missing from this build has none."""
    try:
        module = importlib.import_module(panel.module)
    except ModuleNotFoundError:
        return []
    found = []
    for class_name, selector in panel.widgets:
        for binding in getattr(module, class_name).BINDINGS:
            if isinstance(binding, Binding) and binding.action.split("(")[0] not in _MOVES:
                found.append(PanelBinding(panel, class_name, selector, binding))
    return found


class ConsoleCommands(Provider):
    """Command-palette entries for every console action; mutating ones say when read-only blocks them."""

    def _entries(self) -> list[tuple[str, str, Callable[[], Awaitable[None]]]]:
        app: KConsoleApp = self.app  # type: ignore[assignment]
        entries = []
        read_only_help = "Disabled: the console runs read-only (--read-only or read_only in the config)."
        for action in ACTIONS:
            where = f" on the {action.tab} tab" if action.tab else ""
            title = f"{action.title}  · key {action.key}{where}"
            help_text = action.help
            if action.mutating and app.read_only:
                title += "  (read-only: disabled)"
                help_text = read_only_help
            entries.append((title, help_text, partial(self._run, action)))
        catalogued = {action.action for action in ACTIONS}
        for panel in PANEL_KEYS:
            for entry in panel_bindings(panel):
                if entry.action in catalogued:
                    continue
                title = f"{panel.title}: {entry.binding.description}  · key {entry.key}"
                help_text = f"On the {panel.title} tab."
                if entry.mutating and app.read_only:
                    title += "  (read-only: disabled)"
                    help_text = read_only_help
                entries.append((title, help_text, partial(self._run_panel, entry)))
        return entries

    async def discover(self) -> Hits:
        for title, help_text, run in self._entries():
            yield DiscoveryHit(Text(title), run, text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, run in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), run, help=help_text)

    async def _run(self, action: ConsoleAction) -> None:
        app: KConsoleApp = self.app  # type: ignore[assignment]
        if action.mutating and app.read_only:
            app.notify(f"{action.title}: not available in read-only mode", severity="warning")
            return
        await app.run_action(action.action)

    async def _run_panel(self, entry: PanelBinding) -> None:
        """Show the tab, then run the key's action on its widget, as if the key were pressed there."""
        app: KConsoleApp = self.app  # type: ignore[assignment]
        if entry.mutating and app.read_only:
            app.notify(f"{entry.binding.description}: not available in read-only mode", severity="warning")
            return
        app.action_show_tab(entry.panel.tab)
        widgets = app.query(entry.selector)
        if not widgets:
            app.notify(f"{entry.panel.title} is not available in this build", severity="warning")
            return
        await app.run_action(entry.binding.action, default_namespace=widgets.first())
