"""Escape in a text box being typed in stops the typing but stays on the tab: the tab's own keys
(the Producer's ctrl+s and ctrl+t) still work, enter goes back into the box, and letters typed next go
into the box, never to the console's single-key actions (a typed "orders" must not open a split
preview through its `s`). Escape once more leaves for the tab strip, where the tab's keys work too."""

from __future__ import annotations

import pytest
from textual.widgets import Checkbox, Input, Tabs

from console.ui.screens.confirm import ConfirmByNameScreen
from tests.ui.test_ui_console import RecordingApp, wait_until
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(60)


async def test_after_escape_in_a_producer_field_ctrl_s_asks_and_letters_open_nothing():
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5", "enter", *"50", "escape")
        assert app.query_one("#producer-keys", Input).value == "50"
        await pilot.press(*"orders")
        await pilot.pause(0.2)
        assert len(app.screen_stack) == 1, app.screen  # no split preview, no prompt
        assert app.query_one("#tabs").active == "producer"
        await pilot.press("escape", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the start dialog")
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="the dialog to close")


async def test_ctrl_s_and_ctrl_t_work_after_escape_and_from_the_tab_strip(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("5")
        panel = app.query_one("#producer-panel")
        app.query_one("#producer-pace", Checkbox).value = True
        app.query_one("#producer-rate", Input).value = "20"  # slow enough to be running when stopped
        await pilot.press("enter", *"200", "escape", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the start dialog")
        app.screen.query_one(Input).value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: panel.running, what="the run")
        await pilot.press("escape", "escape")
        assert isinstance(app.focused, Tabs)
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: not panel.running, what="the run stopped")
        assert "stopped" in str(app.query_one("#producer-status").render())


@pytest.mark.parametrize(("tab", "box"), [("3", "#placement-input"), ("4", "#keytree-input")])
async def test_enter_goes_back_into_the_box_after_escape(tab, box):
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press(tab, "enter", *"user", "escape")
        await pilot.press("enter", *"s")
        assert app.focus_model.typing and app.focused is app.query_one(box)
        assert app.query_one(box).text.replace("\n", "") == "users"
        assert len(app.screen_stack) == 1
