"""The console's tabs, in one list (TABS): everything else about a tab is derived from its entry.

The digit key and the footer's tab entry (console.ui.bindings), the help screen and the command
palette (through bindings' ACTIONS and PANEL_KEYS), the `:` commands (console.ui.screens.command_line),
the first focus when a tab opens (console.ui.focus) and the panes the app composes, built with the app
or on the tab's first visit (console.ui.lazy_tabs), all read this list. A new tab is its panel and one
entry here.

A panel's module is imported inside its builder, so a tab built on first visit loads only then. Each
panel is bound (data_bind) to the app's reactives it follows: the open stream, read-only mode, the last
poll's view, the selected shard, the AUTO notice, the stream's CloudWatch reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.widgets import TabPane

from console.backend.protocol import ConsoleBackend
from console.ui.lazy_tabs import ConsolePane, LazyPane

if TYPE_CHECKING:
    from textual.widget import Widget

    from console.ui.source import ConnectionInfo


class TabHost(Protocol):
    """What the tabs' panels are made with (console.ui.app.KConsoleApp is one). Its class holds the
    reactives the panels bind to."""

    backend: ConsoleBackend
    connection: ConnectionInfo
    key_format: str
    interval: float
    poll_lock: asyncio.Lock
    mask_rules: tuple[str, ...]  # with @keys when partition keys are masked too (mask_keys)

    @property
    def stream(self) -> str | None: ...

    @property
    def masking(self) -> bool: ...


@dataclass(frozen=True)
class Tab:
    id: str  # the pane's id, the `:` command, and the app's show_tab('…') action
    title: str  # on the tab strip and over its section of the help screen
    key: str  # the digit that shows it
    summary: str  # what `:id` shows, for the command line's help ("the shard table")
    help: str  # one line for the help screen and the palette
    build: Callable[[TabHost], Widget]
    aliases: tuple[str, ...] = ()  # more `:` words for it
    first_focus: str | None = None  # focused when the tab opens (None: its first focusable widget)
    # Its widgets with keys of their own, ("module:WidgetClass", selector): the help screen and the
    # palette read their BINDINGS (console.ui.bindings.PANEL_KEYS).
    key_widgets: tuple[tuple[str, str], ...] = ()
    with_the_app: bool = False  # composed with the app; otherwise on its first visit

    @property
    def action(self) -> str:
        return f"show_tab({self.id!r})"

    @property
    def action_title(self) -> str:
        return f"Show {self.title[0].lower()}{self.title[1:]}"

    def pane(self, host: TabHost) -> TabPane:
        if self.with_the_app:
            return ConsolePane(self.title, self.build(host), id=self.id)
        return LazyPane(self.title, partial(self.build, host), id=self.id)


def _reactives(host: TabHost) -> Any:
    return type(host)  # the app's class: its reactives (stream, read_only, view, ...) to bind to


def _shards(host: TabHost) -> Widget:
    from console.ui.panels.shards import ShardsPanel

    return ShardsPanel(key_format=host.key_format, id="shards-body").data_bind(_reactives(host).stream)


def _lineage(host: TabHost) -> Widget:
    from console.ui.panels.lineage import LineageTree

    bound = _reactives(host)
    return LineageTree(id="lineage-tree").data_bind(bound.stream, bound.view)


def _placement(host: TabHost) -> Widget:
    from console.ui.panels.placement import PlacementPanel

    bound = _reactives(host)
    panel = PlacementPanel(key_format=host.key_format, id="placement-panel")
    return panel.data_bind(bound.stream, bound.view, bound.auto_notice)


def _keytree(host: TabHost) -> Widget:
    from console.ui.panels.keytree import KeyTreePanel

    return KeyTreePanel(id="keytree-panel").data_bind(_reactives(host).auto_notice)


def _producer(host: TabHost) -> Widget:
    from console.ui.panels.producer import ProducerPanel

    bound = _reactives(host)
    # Pacing starts off on the embedded local Kinesis (it has no shard limits to respect).
    local = host.connection.connected_to.startswith("local")
    return ProducerPanel(host.backend, local=local, id="producer-panel").data_bind(bound.stream, bound.read_only)


def _tail(host: TabHost) -> Widget:
    from console.config import MASK_EVERYTHING
    from console.read.masking import KEYS_PRESET, MaskRuleError, masker
    from console.ui.panels.tail import TailView

    rules = host.mask_rules
    try:
        mask = masker(rules)
    except MaskRuleError:  # masking never fails open: a rule that does not parse masks every string
        mask = masker(MASK_EVERYTHING + ((KEYS_PRESET,) if KEYS_PRESET in rules else ()))
    bound = _reactives(host)
    view = TailView(host.backend, stream=host.stream, mask=mask, masking=host.masking, id="tail-view")
    return view.data_bind(bound.stream, bound.cloudwatch, bound.masking)


def _heat(host: TabHost) -> Widget:
    from console.read.masking import KEYS_PRESET, Masker
    from console.ui.panels.heat import HeatPanel

    bound = _reactives(host)
    key_mask = Masker.of_keys().token if KEYS_PRESET in host.mask_rules else None  # mask_keys, or @keys
    panel = HeatPanel(host.backend, id="heat-panel", key_mask=key_mask, masking=host.masking)
    return panel.data_bind(bound.stream, bound.view, bound.cloudwatch, bound.masking)


def _consumers(host: TabHost) -> Widget:
    from console.ui.panels.consumers import ConsumersPanel

    bound = _reactives(host)
    panel = ConsumersPanel(host.backend, poll_lock=host.poll_lock, interval=host.interval, id="consumers-panel")
    return panel.data_bind(bound.stream, bound.view, bound.cloudwatch, bound.read_only)


def _readers(host: TabHost) -> Widget:
    from console.ui.panels.readers import ReadersPanel

    bound = _reactives(host)
    panel = ReadersPanel(host.backend, poll_lock=host.poll_lock, interval=host.interval, id="readers-panel")
    return panel.data_bind(bound.stream, bound.read_only, shard=bound.selected_shard_id)


TABS: tuple[Tab, ...] = (
    Tab(
        "shards",
        "Shards",
        "1",
        "the shard table",
        "The shard table.",
        _shards,
        aliases=("sh",),
        first_focus="#shard-table",
        key_widgets=(("console.ui.widgets.shard_table:ShardTable", "#shard-table"),),
        with_the_app=True,
    ),
    Tab(
        "lineage",
        "Lineage",
        "2",
        "the lineage tree",
        "Closed parents and their children.",
        _lineage,
        aliases=("li",),
        first_focus="#lineage-tree",
        key_widgets=(("console.ui.panels.lineage:LineageTree", "#lineage-tree"),),
        with_the_app=True,
    ),
    Tab(
        "placement",
        "Placement",
        "3",
        "where partition keys land",
        "Which shard each partition key lands on.",
        _placement,
        aliases=("pl",),
        first_focus="#placement-input",
        key_widgets=(("console.ui.panels.placement:PlacementPanel", "#placement-panel"),),
    ),
    Tab(
        "keytree",
        "Key tree",
        "4",
        "key-tree balance",
        "Balance of the explicit hash keys in use (the balanced key tree).",
        _keytree,
        aliases=("kt",),
        first_focus="#keytree-input",
        key_widgets=(("console.ui.panels.keytree:KeyTreePanel", "#keytree-panel"),),
    ),
    Tab(
        "producer",
        "Producer",
        "5",
        "the ordered producer",
        "Publish ordered test records and verify them.",
        _producer,
        aliases=("pr",),
        first_focus="#producer-keys",
        key_widgets=(("console.ui.panels.producer:ProducerPanel", "#producer-panel"),),
    ),
    Tab(
        "tail",
        "Tail",
        "6",
        "the records in the stream",
        "Read the records in the stream.",
        _tail,
        first_focus="#tail-ring",
        key_widgets=(
            ("console.ui.panels.tail:TailView", "#tail-view"),
            ("console.ui.panels.tail_ring:RecordRing", "#tail-ring"),
        ),
    ),
    Tab(
        "heat",
        "Heat",
        "7",
        "throughput per shard and hot keys",
        "Throughput per shard and hot keys.",
        _heat,
        aliases=("he",),
        first_focus="#heat-panel",
        key_widgets=(("console.ui.panels.heat:HeatPanel", "#heat-panel"),),
    ),
    Tab(
        "consumers",
        "Consumers",
        "8",
        "the stream's registered consumers",
        "EFO consumers and KCL leases: owner, lag and state per shard.",
        _consumers,
        aliases=("co",),
        first_focus="#consumers-table",
        key_widgets=(("console.ui.panels.consumers:ConsumersPanel", "#consumers-panel"),),
    ),
    Tab(
        "readers",
        "Readers",
        "9",
        "every reader of the stream, worst first",
        "Every reader of the stream (Lambda, Firehose, Pipes, Flink, EFO, KCL), worst first; positions per shard.",
        _readers,
        aliases=("re",),
        first_focus="#readers-table",
        key_widgets=(("console.ui.panels.readers:ReadersPanel", "#readers-panel"),),
    ),
)

TAB_KEYS = f"{TABS[0].key}-{TABS[-1].key}"  # how help and the footer name the digit keys


def tab_panes(host: TabHost) -> list[TabPane]:
    """Every tab's pane, in the order the digit keys name them."""
    return [tab.pane(host) for tab in TABS]
