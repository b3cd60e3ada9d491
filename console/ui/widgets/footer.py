"""The console's footer: Textual's, rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup


class CoalescingFooter(Footer):
    """A Footer that rebuilds once for a burst of binding changes, and not at all when the keys it
    would show are the ones it shows.

    Textual's Footer queues a full recompose (tens of ms with our key list) for every bindings
    signal, and start-up sends three in a row (focus, screen resume, first idle) with the same keys:
    those rebuilds ran while the first 10k-shard poll was being shown (bench_console's load stall).
    """

    _rebuild_pending = False
    _shown_keys: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    def _keys_to_show(self) -> tuple[Any, ...]:
        """What `Footer.compose` reads: every active binding, whether it is enabled, its tooltip
        and how its key is displayed."""
        return tuple(
            (binding, enabled, tooltip, self.app.get_key_display(binding))
            for _node, binding, enabled, tooltip in self.screen.active_bindings.values()
        )

    def build_then(self, callback: Callable[[], object]) -> None:
        """Build the keys now (in this widget's own context: its compose binds to it), then call back."""

        async def build() -> None:
            self._bindings_ready = True
            try:
                await self._rebuild()
            finally:  # the first poll must start even if the footer could not be built
                callback()

        self.call_later(build)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False  # first: a change during the rebuild queues another
        keys = self._keys_to_show()
        if keys == self._shown_keys:
            return
        self._shown_keys = keys
        await self.recompose()

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._show_whole_keys)

    def on_resize(self, _event: events.Resize) -> None:
        for item in self._items():  # measured afresh at the new width
            item.display = True
        self.call_after_refresh(self._show_whole_keys)

    def _items(self) -> list[Widget]:
        return [child for child in self.children if not child.has_class("-command-palette")]

    def _show_whole_keys(self) -> None:
        """Hide the keys that would run under the command-palette key or off the edge: a narrow
        terminal shows fewer keys, each whole ("x Sc" said nothing); ? lists them all."""
        palette = [child for child in self.children if child.has_class("-command-palette")]
        room = self.size.width - sum(key.outer_size.width for key in palette)
        items = self._items()
        cut = next(
            (
                index
                for index, item in enumerate(items)
                if item.display and item.virtual_region.right + item.styles.margin.right > room
            ),
            None,
        )
        if cut is None:
            return
        if cut > 0 and isinstance(items[cut], FooterLabel) and isinstance(items[cut - 1], KeyGroup):
            cut -= 1  # a group's keys say nothing without its label
        for item in items[cut:]:
            item.display = False

    def compose(self) -> ComposeResult:
        """Textual's keys, born compact when the footer is: each key's compact watcher then finds its
        class already set, where adding it restyled each key on its own (~50 ms at start-up)."""
        for widget in super().compose():
            if self.compact and isinstance(widget, FooterKey):
                widget.set_class(True, "-compact", update=False)
            yield widget
