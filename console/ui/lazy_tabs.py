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


class LazyPane(TabPane, Generic[PanelT]):
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
