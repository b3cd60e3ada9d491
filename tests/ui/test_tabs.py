"""The tabs' list (console.ui.tabs) drives everything about a tab: the tab strip, its digit key and
the footer, its `:` command, its line in help and in the palette, its first focus and its building on
first visit. Each check below goes through the place a user meets (a key press, the command line,
the help screen, the palette), not through the list itself."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent, Tabs

from console.ui.bindings import APP_BINDINGS
from console.ui.lazy_tabs import LazyPane
from console.ui.palette import ConsoleCommands
from console.ui.screens.help import HelpScreen, bindings_table
from console.ui.tabs import TAB_KEYS, TABS
from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_habits import command
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(120)


def test_the_list_names_each_tab_once_with_its_own_key():
    assert len({tab.id for tab in TABS}) == len({tab.key for tab in TABS}) == len(TABS)
    assert [tab.key for tab in TABS] == [str(n) for n in range(1, len(TABS) + 1)]
    words = [word for tab in TABS for word in (tab.id, *tab.aliases)]
    assert len(words) == len(set(words)), "a `:` word names two tabs"
    footer = [binding for binding in APP_BINDINGS if binding.show and binding.key == TABS[0].key]
    assert [binding.key_display for binding in footer] == [TAB_KEYS] == [f"1-{len(TABS)}"]


async def test_every_tab_has_a_working_key_command_help_line_and_is_built_on_first_visit():
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        tabs = app.query_one(TabbedContent)
        strip = [str(tab.label) for tab in tabs.query_one(Tabs).query("Tab")]
        assert strip == [tab.title for tab in TABS]
        lazy = [tab for tab in TABS if not tab.with_the_app]
        assert lazy and all(isinstance(app.query_one(f"#{tab.id}"), LazyPane) for tab in lazy)
        assert all(app.query_one(f"#{tab.id}", LazyPane).panel is None for tab in lazy)

        # The help screen and the palette list each tab's key, from the same list.
        help_text = _plain(bindings_table(read_only=False))
        palette = {hit.text async for hit in ConsoleCommands(app.screen).discover()}
        for tab in TABS:
            assert f"{tab.key} {tab.action_title}" in help_text, tab.id
            assert f":{tab.id} show {tab.summary}" in help_text, tab.id
            assert f"{tab.action_title}  · key {tab.key}" in palette, tab.id

        # The digit key shows the tab, built on this first visit, with its first focus.
        for tab in TABS:
            await pilot.press("escape", tab.key)  # escape: out of the text box the tab before offered
            await wait_until(pilot, lambda: tabs.active == tab.id, what=f"key {tab.key}")
            pane = app.query_one(f"#{tab.id}")
            if isinstance(pane, LazyPane):
                assert pane.panel is not None and pane.panel.parent is pane, tab.id
            wanted = pane.query_one(tab.first_focus) if tab.first_focus else None
            await wait_until(
                pilot,
                lambda: app.focused is not None and (app.focused is wanted or wanted is None),
                what=f"first focus of {tab.id}",
            )
            assert app.focused in pane.query("*"), tab.id

        # Each `:` word shows its tab, from any other tab.
        for tab in reversed(TABS):
            for word in (tab.id, *tab.aliases):
                await pilot.press("escape", TABS[0].key if tab is not TABS[0] else TABS[1].key)
                await command(pilot, word)
                await wait_until(pilot, lambda: tabs.active == tab.id, what=f":{word}")

        await pilot.press("escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert f"until then {TAB_KEYS} still switch tabs" in _plain(bindings_table(read_only=False))


def _plain(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(renderable)
    return " ".join(console.export_text().split())
