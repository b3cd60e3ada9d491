"""The console's actions in one catalogue: the command palette, the help screen and read-only gating
all read it, so a new action appears everywhere at once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
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


ACTIONS: tuple[ConsoleAction, ...] = (
    ConsoleAction("refresh", "r", "Refresh now", "Poll the stream now instead of waiting for the next interval."),
    ConsoleAction("filter", "/", "Filter shards", "Show only shards whose id, state or parents contain the text."),
    ConsoleAction("sort", "o", "Sort shards", "Cycle the table's sort column (start key, id, state, share, rate)."),
    ConsoleAction("copy_keys", "c", "Copy selected shard's hash keys",
                  "Copy the full starting and ending hash key of the selected shard to the clipboard."),
    ConsoleAction("split", "s", "Split selected shard", "Preview, confirm and run a split of the selected shard.",
                  mutating=True),
    ConsoleAction("merge", "m", "Merge selected shard with its neighbour",
                  "Preview, confirm and run a merge of the selected shard with an adjacent open shard.",
                  mutating=True),
    ConsoleAction("scale", "x", "Rescale the stream", "Preview, confirm and run UpdateShardCount (uniform scaling).",
                  mutating=True),
    ConsoleAction("pick_stream", "p", "Open another stream", "List the streams on this backend and open one."),
    ConsoleAction("show_tab('shards')", "1", "Show shards", "The shard table."),
    ConsoleAction("show_tab('lineage')", "2", "Show lineage", "Closed parents and their children."),
    ConsoleAction("show_tab('placement')", "3", "Show placement", "Which shard each partition key lands on."),
    ConsoleAction("show_tab('keytree')", "4", "Show key-tree balance", "Balance of explicit hash keys (seed 000)."),
    ConsoleAction("show_tab('producer')", "5", "Show producer", "Publish ordered test records and verify them."),
    ConsoleAction("show_tab('tail')", "6", "Show tail", "Read the records in the stream."),
    ConsoleAction("show_tab('heat')", "7", "Show heat", "Throughput per shard and hot keys."),
    ConsoleAction("help", "?", "Help", "Every key and what it does."),
    ConsoleAction("quit", "q", "Quit", "Leave kconsole."),
)

MUTATING_ACTIONS = frozenset(a.action for a in ACTIONS if a.mutating)


class ConsoleCommands(Provider):
    """Command-palette entries for every console action; mutating ones say when read-only blocks them."""

    def _entries(self) -> list[tuple[str, str, ConsoleAction]]:
        app: KConsoleApp = self.app  # type: ignore[assignment]
        entries = []
        for action in ACTIONS:
            title = f"{action.title}  · key {action.key}"
            help_text = action.help
            if action.mutating and app.read_only:
                title += "  (read-only: disabled)"
                help_text = "Disabled: the console runs read-only (--read-only or read_only in the config)."
            entries.append((title, help_text, action))
        return entries

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(Text(title), partial(self._run, action), text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), help=help_text)

    async def _run(self, action: ConsoleAction) -> None:
        app: KConsoleApp = self.app  # type: ignore[assignment]
        if action.mutating and app.read_only:
            app.notify(f"{action.title}: not available in read-only mode", severity="warning")
            return
        await app.run_action(action.action)
