"""What the console's hidden tabs hold, each built the first time its tab is shown
(console.ui.lazy_tabs). A panel's module is imported inside its builder, so it loads only then.

Each panel is bound (data_bind) to the app's reactives it follows: the open stream, read-only mode,
the last poll's view.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from textual.widget import Widget

from console.backend.protocol import ConsoleBackend
from console.ui.lazy_tabs import LazyPane
from console.ui.source import ConnectionInfo


class TabHost(Protocol):
    """What the tabs' panels are made with (console.ui.app.KConsoleApp is one)."""

    source: ConsoleBackend
    connection: ConnectionInfo
    key_format: str
    interval: float
    poll_lock: asyncio.Lock

    @property
    def stream(self) -> str | None: ...


def hidden_tabs(app: TabHost) -> list[LazyPane]:
    """The tabs after Shards and Lineage, in the order the digit keys name them."""
    bound: Any = type(app)  # its reactives (stream, read_only, view), which the panels bind to

    def placement() -> Widget:
        from console.ui.panels.placement import PlacementPanel

        return PlacementPanel(key_format=app.key_format, id="placement-panel").data_bind(bound.stream, bound.view)

    def keytree() -> Widget:
        from console.ui.panels.keytree import KeyTreePanel

        return KeyTreePanel(id="keytree-panel")

    def producer() -> Widget:
        from console.ui.panels.producer import ProducerPanel

        # Pacing starts off on the embedded local Kinesis (it has no shard limits to respect).
        local = app.connection.backend.startswith("local")
        return ProducerPanel(app.source, local=local, id="producer-panel").data_bind(bound.stream, bound.read_only)

    def tail() -> Widget:
        from console.ui.panels.tail import TailView

        return TailView(app.source, stream=app.stream, id="tail-view").data_bind(bound.stream)

    def heat() -> Widget:
        from console.ui.panels.heat import HeatPanel

        return HeatPanel(app.source, id="heat-panel").data_bind(bound.stream)

    def consumers() -> Widget:
        from console.ui.panels.consumers import ConsumersPanel

        panel = ConsumersPanel(app.source, poll_lock=app.poll_lock, interval=app.interval, id="consumers-panel")
        return panel.data_bind(bound.stream, bound.view)

    return [
        LazyPane("Placement", placement, id="placement"),
        LazyPane("Key tree", keytree, id="keytree"),
        LazyPane("Producer", producer, id="producer"),
        LazyPane("Tail", tail, id="tail"),
        LazyPane("Heat", heat, id="heat"),
        LazyPane("Consumers", consumers, id="consumers"),
    ]
