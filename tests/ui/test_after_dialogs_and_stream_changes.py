"""After any dialog over the console closes, confirmed or cancelled, the next digit switches tabs:
it never lands in a form field behind the dialog (a Keys field turned from 100 into 7 would be the
next run's setting)."""

from __future__ import annotations

import pytest
from textual.widgets import Input, TabbedContent

from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(60)

# (tab key, keys that open a dialog from that tab's first focus, keys that close it)
DIALOGS = [
    ("5", ["ctrl+s"], ["escape"]),  # the producer's Start asks for the stream name
    ("5", ["ctrl+s"], ["tab", "enter"]),  # ... and its Cancel button
    ("5", ["escape", "question_mark"], ["escape"]),  # help
    ("3", ["escape", "colon"], ["escape"]),  # the command line
    ("4", ["escape", "S"], ["escape"]),  # stream actions
    ("1", ["s"], ["escape"]),  # a split preview
    ("1", ["x"], ["escape"]),  # the rescale prompt
    ("1", ["p"], ["escape"]),  # the stream picker
]


def dialog_has_the_keys(app) -> bool:
    """The dialog is up and focused (a person types into it once they see it; a test could be faster)."""
    return len(app.screen_stack) > 1 and app.focused is not None and app.focused.screen is app.screen


def form_values(app) -> dict[str, str]:
    return {field.id: field.value for field in app.query(Input) if field.id}


@pytest.mark.parametrize("tab_key, open_keys, close_keys", DIALOGS)
async def test_the_next_digit_after_a_dialog_switches_tabs(tab_key, open_keys, close_keys):
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press(tab_key)
        await pilot.pause()
        before = form_values(app)
        await pilot.press(*open_keys)
        await wait_until(pilot, lambda: len(app.screen_stack) > 1, what="the dialog")
        await wait_until(pilot, lambda: dialog_has_the_keys(app), what="the dialog's focus")
        await pilot.press(*close_keys)
        await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="the dialog to close")
        await pilot.press("7")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "heat"
        assert form_values(app) == before


@pytest.mark.parametrize(
    "close_keys",
    [["escape"], ["tab", "enter"], [*"orders", "enter"]],
    ids=["escape", "cancel-button", "confirmed"],
)
async def test_a_field_being_typed_in_when_a_dialog_opened_is_only_offered_after_it(close_keys):
    # Keys typed into, then ctrl+s: whatever the dialog's answer, the 7 after it is the Heat tab, not a
    # digit appended to Keys (the next run's setting).
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5", "enter", *"1000", "ctrl+s")
        await wait_until(pilot, lambda: len(app.screen_stack) > 1, what="the start dialog")
        await wait_until(pilot, lambda: dialog_has_the_keys(app), what="the dialog's focus")
        await pilot.press(*close_keys)
        await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="the dialog to close")
        await pilot.press("7")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "heat"
        assert app.query_one("#producer-keys", Input).value == "1000"


async def test_a_stream_that_does_not_exist_leaves_nothing_of_the_previous_one_on_screen():
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("down")
        await pilot.press("3")  # the Placement tab is built, with the stream's index
        await wait_until(pilot, lambda: app.placement.index is not None, what="the placement index")
        await pilot.press("2")
        await wait_until(pilot, lambda: app.lineage_tree.lines, what="the lineage")
        app.open_stream("does-not-exist")
        await wait_until(pilot, lambda: app.header.state.error, what="the header to say the stream is missing")
        assert not app.lineage_tree.lines
        assert app.table.row_count == 0
        assert str(app.query_one("#shard-detail").render()).strip() == ""
        assert app.placement.index is None


async def test_a_lineage_waiting_for_its_hidden_tab_is_dropped_when_another_stream_opens():
    # The tree draws a poll's lineage only when its tab is shown; until then it keeps it aside. Another
    # stream opened meanwhile must not leave the old stream's lineage to be drawn later.
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await wait_until(pilot, lambda: app.view is not None and app.view.lineage is not None, what="the lineage")
        assert not app.lineage_tree.lines  # on the Shards tab: not drawn yet
        app.open_stream("does-not-exist")
        await wait_until(pilot, lambda: app.header.state.error, what="the header to say the stream is missing")
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "lineage"
        assert not app.lineage_tree.lines


async def test_a_greyed_out_key_says_why_under_read_only():
    app = static_app(read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        app.notes.clear()
        for key in ("s", "S", "x"):
            await pilot.press(key)
            await pilot.pause()
        assert len(app.screen_stack) == 1  # nothing opened
        said = [note for note in app.notes if "read-only" in note]
        assert len(said) == 3 and all("R or :rw" in note for note in said)
        assert any(note.startswith("Stream") for note in said), said


async def test_ctrl_a_selects_every_key_in_placement():
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("3", "enter", *"alpha", "enter", *"beta")
        await pilot.press("ctrl+a")
        box = app.query_one("#placement-input")
        assert box.selected_text == "alpha\nbeta"


async def test_heat_open_on_a_stream_that_does_not_exist_says_so_and_shows_no_old_rows(kinesis, make_stream):
    from console.ui.widgets.heat_map import HeatMap
    from tests.ui.test_ui_console import RecordingApp

    app = RecordingApp(kinesis, stream=await make_stream(shards=2), interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("7")
        heat_map = app.query_one(HeatMap)
        await wait_until(pilot, lambda: heat_map.rows, what="the heat rows")
        app.open_stream("does-not-exist")
        total = app.query_one("#heat-total")
        await wait_until(pilot, lambda: "not found" in str(total.render()), what="heat to say the stream is missing")
        assert not heat_map.rows


# Dialogs that need a real backend behind them (the plans read the account's limits, the stream's
# details): (tab key, then each step's keys and the screen that step opens). Every dialog on the way is
# closed with escape.
DIALOGS_ON_A_BACKEND = {
    "split preview": ("1", [(["s"], "PromptScreen"), (["enter"], "ReshardPreviewScreen")]),
    "confirm by name": (
        "1",
        [(["s"], "PromptScreen"), (["enter"], "ReshardPreviewScreen"), (["enter"], "ConfirmByNameScreen")],
    ),
    "merge choice": ("1", [(["m"], "ChoiceScreen")]),
    "stream action preview": (
        "5",
        [
            (["escape", "S"], "StreamActionsScreen"),
            (["down", "enter"], "ChoiceScreen"),
            (["enter"], "LifecyclePreviewScreen"),
        ],
    ),
    "export": ("6", [(["escape", "w"], "ExportScreen")]),
}


@pytest.mark.parametrize("dialog", list(DIALOGS_ON_A_BACKEND))
async def test_the_next_digit_after_a_dialog_on_a_real_backend_switches_tabs(
    dialog, kinesis, make_stream, tmp_path, monkeypatch
):
    from tests.ui.test_ui_console import RecordingApp

    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    name = await make_stream(shards=2)
    tab_key, steps = DIALOGS_ON_A_BACKEND[dialog]
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press(tab_key)
        await pilot.pause()
        before = form_values(app)
        for keys, screen in steps:
            await pilot.press(*keys)
            await wait_until(pilot, lambda: type(app.screen).__name__ == screen, what=screen)
        while len(app.screen_stack) > 1:
            depth = len(app.screen_stack)
            await pilot.press("escape")
            await wait_until(pilot, lambda: len(app.screen_stack) < depth, what="the dialog to close")
        await pilot.press("7")
        await wait_until(pilot, lambda: app.query_one(TabbedContent).active == "heat", what="the Heat tab")
        assert form_values(app) == before
