"""k9s habits in the console: `:` command mode, j/k, ctrl+c, the read-only toggle, the theme remembered
(`?` listing all of it is checked with the rest of the help in test_ui_interaction)."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from console.config import Config, load_config, save_config
from console.keyspace.hashkeys import HASH_SPACE
from console.ui.screens.command_line import CommandLineScreen, parse
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.stream_picker import StreamPickerScreen
from tests.ui.static_source import StaticSource, even_shards, split_shard
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(60)


def static_app(**options) -> RecordingApp:
    shards = split_shard(even_shards(4), "shardId-000000000001", 3 * HASH_SPACE // 8)
    options.setdefault("interval", 3600)
    return RecordingApp(StaticSource("orders", shards), stream="orders", **options)


async def command(pilot, text: str) -> None:
    await pilot.press("colon")
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.focused, Input) and pilot.app.focused.id == "command-line-input",
        what="command line",
    )
    await pilot.press(*text, "enter")
    await pilot.pause()


async def test_command_mode_switches_views_and_explains_mistakes():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        tabs = app.query_one("#tabs")
        for text, tab in (("lineage", "lineage"), ("heat", "heat"), ("sh", "shards"), ("keytree", "keytree")):
            await command(pilot, text)
            await wait_until(pilot, lambda: tabs.active == tab, what=f":{text}")
            assert not isinstance(app.screen, CommandLineScreen)
        await pilot.press("escape")  # the key-tree tab focuses its text box, where ':' is typed; leave it
        await command(pilot, "consumers")
        assert any("no consumers view" in note for note in app.notes) or tabs.active == "consumers"
        await pilot.press("escape")  # the consumers tab, too, opens on its text box (the lease table)
        await command(pilot, "bogus")
        assert isinstance(app.screen, CommandLineScreen)  # stays open, with the reason
        assert "unknown command 'bogus'" in str(app.screen.query_one("#command-line-error").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, CommandLineScreen)
        await command(pilot, "streams")
        await wait_until(pilot, lambda: isinstance(app.screen, StreamPickerScreen), what=":streams")
        await pilot.press("escape")


async def test_command_mode_opens_a_stream_and_quits():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await command(pilot, "stream other-stream")
        await wait_until(pilot, lambda: app.stream == "other-stream", what=":stream NAME")
        await command(pilot, "q")
        await wait_until(pilot, lambda: not app.is_running, what=":q")


def test_command_parsing_takes_the_forms_users_type():
    assert parse(":stream orders").argument == "orders"
    assert parse("LINEAGE").command.action == "show_tab('lineage')"
    assert parse("stream") == "stream takes one name: stream NAME (streams lists them)"
    assert parse("stream bad/name").startswith("not a valid stream name")
    assert parse("shards now") == "shards takes no argument"
    assert parse("lin").command.action == "show_tab('lineage')"  # a prefix of one command only
    assert parse("stre") == "unknown command 'stre'; did you mean stream NAME, streams?"
    assert parse("zzz") == "unknown command 'zzz'; ? lists them all"


async def test_j_and_k_move_in_lists():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        first = app.selected_shard_id
        await pilot.press("j", "j")
        await wait_until(pilot, lambda: app.selected_shard_id == app.table.shard_ids[2] != first, what="j j")
        await pilot.press("k")
        await wait_until(pilot, lambda: app.selected_shard_id == app.table.shard_ids[1], what="k")


async def test_ctrl_c_quits_at_once_and_asks_once_in_a_text_box():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.is_running, what="ctrl+c quit")
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("slash", "a")
        assert isinstance(app.focused, Input)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and "press ctrl+c again to quit" in app.notes
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.is_running, what="second ctrl+c quit")


async def test_read_only_toggle_in_freely_out_only_by_typing_the_name():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        assert app.check_action("split", ()) is True
        await pilot.press("R")
        assert app.read_only and app.check_action("split", ()) is None
        assert "read-only" in str(app.header.render()).lower()
        await pilot.press("s")
        assert not isinstance(app.screen, ConfirmByNameScreen)  # split is off
        await pilot.press("R")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirmation")
        await pilot.press(*"order", "enter")  # not the name: stays read-only
        await pilot.pause()
        assert app.read_only
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmByNameScreen))
        assert app.read_only
        await command(pilot, "rw")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirmation")
        await pilot.press(*"orders", "enter")
        await wait_until(pilot, lambda: not app.read_only, what="read-write after typing the name")
        assert app.check_action("split", ()) is True
        await command(pilot, "ro")
        assert app.read_only


async def test_a_theme_picked_in_the_console_is_saved_to_the_config(tmp_path):
    path = tmp_path / "config.toml"
    save_config(Config(interval=7.0, theme="textual-dark"), path)
    app = static_app(theme="textual-dark")

    def save(theme: str) -> None:  # what the launcher does: the rest of the file is kept
        config, _ = load_config(path)
        save_config(Config(**{**config.__dict__, "theme": theme}), path)

    app.on_theme_changed = save
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        app.theme = "nord"
        await pilot.pause()
    config, warning = load_config(path)
    assert warning is None and (config.theme, config.interval) == ("nord", 7.0)
