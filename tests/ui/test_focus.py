"""The focus model: tab keys always switch tabs, a tab's first field takes digits only once the user
enters it, escape stops the typing (the field only offered), escape again leaves it."""

from __future__ import annotations

import pytest
from textual.widgets import Tabs

from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(60)


async def test_each_tab_first_focuses_its_list_or_first_field_and_digits_still_switch():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        firsts = {
            "1": "shard-table",
            "2": "lineage-tree",
            "3": "placement-input",
            "4": "keytree-input",
            "5": "producer-keys",
            "6": "tail-ring",
            "7": "heat-panel",
        }
        for key, widget_id in [*firsts.items(), ("3", "placement-input"), ("1", "shard-table")]:
            await pilot.press(key)
            # A tab's panel is built on its first visit: on a loaded machine that takes more than a frame.
            await wait_until(
                pilot, lambda: app.focused is not None and app.focused.id == widget_id, what=f"{widget_id} after {key}"
            )
        assert app.query_one("#placement-input").text == "" and app.query_one("#keytree-input").text == ""
        assert app.query_one("#producer-keys").value == "100"


async def test_enter_or_a_letter_or_a_click_enters_the_field_then_digits_go_in():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5", "enter", *"2000")
        assert app.query_one("#tabs").active == "producer"
        assert app.query_one("#producer-keys").value == "2000"  # the field's text was selected on entry
        await pilot.press("escape")  # the typing stops: the field is only offered, the digits switch again
        assert app.focused.id == "producer-keys" and not app.focus_model.typing
        await pilot.press("escape")  # and out to the tab strip
        assert isinstance(app.focused, Tabs)
        await pilot.press("3", *"user-17")
        assert app.query_one("#tabs").active == "placement"
        assert app.query_one("#placement-input").text == "user-17"
        await pilot.press("escape", "4")
        await pilot.click("#keytree-input")
        await pilot.press("4", "2")
        assert app.query_one("#tabs").active == "keytree" and app.query_one("#keytree-input").text == "42"
        await pilot.press("escape", "1")
        assert app.query_one("#tabs").active == "shards" and app.focused is app.table


async def test_tab_keys_do_nothing_over_a_dialog():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("question_mark", "3")
        assert app.query_one("#tabs").active == "shards"


async def test_toasts_never_cover_a_dialog():
    from console.ui.screens.help import HelpScreen

    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        app.notify("split done", timeout=10)
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["split done"]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and not list(app._notifications)  # cleared for the dialog
        app.notify("merge running", timeout=10)
        await pilot.pause()
        assert not list(app._notifications)  # held while the dialog is open
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert [n.message for n in app._notifications] == ["merge running"]


async def test_a_late_focus_on_a_tab_already_left_neither_switches_back_nor_takes_the_keys():
    """On a busy loop Textual's focus messages land after the user has moved on: the pane a widget took
    the focus in asks to be the active tab, and Textual moves the focus off a hidden tab onto its next
    widget. Neither is the user's doing: the tab stays, and the new tab's field is still only offered."""
    from textual.widgets import TabbedContent, TabPane

    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        for key, widget_id in (("3", "placement-input"), ("4", "keytree-input")):
            await pilot.press(key)
            await wait_until(pilot, lambda: app.focused is not None and app.focused.id == widget_id, what=widget_id)
        placement = app.query_one("TabPane#placement", TabPane)
        placement.post_message(TabPane.Focused(placement))  # as a widget there taking the focus late posts it
        app.screen.set_focus(app.query_one("#placement-results"))  # Textual's focus off the hidden tab
        app.screen.set_focus(app.query_one("#keytree-input"))
        await pilot.pause(0.2)
        assert app.query_one(TabbedContent).active == "keytree"
        await pilot.press("5")
        await wait_until(pilot, lambda: app.query_one(TabbedContent).active == "producer", what="the producer tab")
        assert app.query_one("#keytree-input").text == ""
