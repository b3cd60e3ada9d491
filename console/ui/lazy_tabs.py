"""Tabs built the first time they are shown.

A hidden tab costs nothing until it is opened: its panel's module is not imported, and its widgets
are neither composed nor styled. At start-up those were most of the console's time to its first
shard row (tests/benchmarks/bench_console.py). A panel follows the app's reactives (data_bind), so
it is built showing what the polls said while it was hidden; what the app asks of it (`panel`) is
None until then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from textual.widget import AwaitMount, Widget
from textual.widgets import TabPane

PanelT = TypeVar("PanelT", bound=Widget)


class ConsolePane(TabPane):
    """A tab of the console. Textual's TabbedContent makes a pane active when a widget in it takes the
    focus (TabPane.Focused); focus arrives a moment after it is given, and when a tab is hidden Textual
    moves the focus off it a moment later too. On a busy loop both land after the user has pressed the
    next tab's key: that late message switched the tab back, the focus the console gives a tab it
    opens switched it back again, and two tabs took turns for good. The console switches tabs itself
    (the tab keys, a click on the tab strip), so the message ends here."""

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        event.stop()


class LazyPane(ConsolePane, Generic[PanelT]):
    """A tab whose panel `build()` makes is mounted by `built()`, the first time the tab is shown.

    `built()` is called from the app (its actions and handlers): a panel bound to the app's reactives
    (data_bind) binds to the message pump that builds it."""

    def __init__(self, title: str, build: Callable[[], PanelT], *, id: str) -> None:
        super().__init__(title, id=id)
        self._build = build
        self.panel: PanelT | None = None  # once mounted
        self._mounting: tuple[PanelT, AwaitMount] | None = None

    async def built(self) -> PanelT:
        """The panel: built and mounted, now if it was not yet."""
        if self.panel is not None:
            return self.panel
        if self._mounting is None:
            panel = self._build()
            self._mounting = (panel, self.mount(panel))
        panel, mounting = self._mounting
        await mounting
        self.panel = panel
        return panel
