"""The command palette (ctrl+p): every console action and every tab's own keys, from the one
bindings table (console.ui.bindings); mutating entries say when read-only blocks them.

The provider needs only what any Textual app has (`run_action`, `query_one`, `notify`) and the
console's `read_only` flag; it does not import the app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.ui.bindings import ACTIONS, PANEL_KEYS, ConsoleAction, PanelBinding, panel_bindings


class ConsoleCommands(Provider):
    """Command-palette entries for every console action; mutating ones say when read-only blocks them."""

    def _entries(self) -> list[tuple[str, str, Callable[[], Awaitable[None]]]]:
        read_only = self._read_only
        entries: list[tuple[str, str, Callable[[], Awaitable[None]]]] = []
        read_only_help = "Disabled: the console runs read-only (--read-only or read_only in the config)."
        for action in ACTIONS:
            where = f" on the {action.tab} tab" if action.tab else ""
            title = f"{action.title}  · key {action.key}{where}"
            help_text = action.help
            if action.mutating and read_only:
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
                if entry.mutating and read_only:
                    title += "  (read-only: disabled)"
                    help_text = read_only_help
                entries.append((title, help_text, partial(self._run_panel, entry)))
        return entries

    @property
    def _read_only(self) -> bool:
        return bool(getattr(self.app, "read_only", False))

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
        if action.mutating and self._read_only:
            self.app.notify(f"{action.title}: not available in read-only mode", severity="warning")
            return
        await self.app.run_action(action.action)

    async def _run_panel(self, entry: PanelBinding) -> None:
        """Show the tab, then run the key's action on its widget, as if the key were pressed there."""
        if entry.mutating and self._read_only:
            self.app.notify(f"{entry.binding.description}: not available in read-only mode", severity="warning")
            return
        await self.app.run_action(f"show_tab({entry.panel.tab!r})")
        await self.app.run_action(entry.binding.action, default_namespace=self.app.query_one(entry.selector))
