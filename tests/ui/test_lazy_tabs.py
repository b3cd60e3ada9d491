"""Hidden tabs are built the first time they are shown (console.ui.lazy_tabs): nothing of them is
imported or composed before the first shard row, and a tab built late shows what the polls told it."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from textual.app import App, ComposeResult
from textual.widgets import Static, TabbedContent, TabPane

from console.ui.lazy_tabs import LazyPane
from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_interaction import static_app

HIDDEN_PANELS = (
    "#placement-panel",
    "#keytree-panel",
    "#producer-panel",
    "#tail-view",
    "#heat-panel",
    "#consumers-panel",
)


def test_the_console_module_loads_no_hidden_tab_nor_the_reshard_flow():
    """What the console imports before its first row: the tabs it shows, not the ones it hides."""
    code = (
        "import sys, console.ui.app; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('console.ui.panels.', 'console.ui.reshard_flow', "
        "'console.reshard.execute', 'aws_kinesis_agg')))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["console.ui.panels.lineage", "console.ui.panels.shards"]


async def test_hidden_tabs_are_built_on_first_visit_with_what_the_polls_told_them():
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed and app.view.index is not None, what="the lineage")
        assert not any(app.query(selector) for selector in HIDDEN_PANELS)
        await pilot.press("3")
        # Built before the tab shows: the index the last poll sent while it was hidden, and the focus.
        assert app.placement.index is app.view.index
        assert app.focused is app.query_one("#placement-input")
        app.placement.set_keys("user-1\n")
        await pilot.pause()
        assert app.query_one("#placement-results").get_row_at(0)[1].startswith("shardId-")
        await pilot.press("8")
        assert app.query_one("#consumers-panel").stream == "orders"  # bound to the app's stream on build
        assert not app.query("#heat-panel")  # still never shown


class TwoTabs(App):
    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane("First", id="first"):
                yield Static("first")
            yield LazyPane("Second", lambda: Static("", id="second-body"), id="second")


async def test_a_lazy_pane_builds_its_panel_once():
    app = TwoTabs()
    async with app.run_test() as pilot:
        pane = app.query_one(LazyPane)
        assert pane.panel is None and not app.query("#second-body")
        first, second = await asyncio.gather(pane.built(), pane.built())  # two callers at once: one panel
        assert first is second is app.query_one("#second-body") is pane.panel
        assert await pane.built() is first and len(app.query("#second-body")) == 1
        await pilot.pause()
