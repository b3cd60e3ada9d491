"""Keyboard navigation of the virtualised shard table and lineage tree (one shared cursor mixin)."""

from __future__ import annotations

from console.ui.app import KConsoleApp
from console.ui.panels.lineage import LineageTree
from tests.ui.static_source import StaticSource, even_shards


def make_app(count: int) -> KConsoleApp:
    return KConsoleApp(StaticSource("orders", even_shards(count)), stream="orders", interval=3600, clock=lambda: 1000.0)


async def loaded(pilot) -> None:
    app = pilot.app
    for _ in range(500):
        if app.view is not None and app.view.lineage is not None:
            break
        await pilot.pause(0.02)
    await pilot.pause()


async def test_table_keys_move_the_selection_and_keep_it_in_sight():
    app = make_app(200)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        table = app.table
        table.focus()
        ids = list(table.shard_ids)
        await pilot.press("home")
        assert app.selected_shard_id == ids[0]
        await pilot.press("down", "down")
        assert app.selected_shard_id == ids[2]
        visible = table.scrollable_content_region.height - 1  # minus the header row
        await pilot.press("pagedown")
        assert app.selected_shard_id == ids[2 + visible - 1]
        await pilot.press("end")
        await pilot.pause()
        assert app.selected_shard_id == ids[-1]
        assert round(table.scroll_y) >= len(ids) - visible  # the last row is on screen
        await pilot.press("pageup", "up")
        assert app.selected_shard_id == ids[len(ids) - 1 - (visible - 1) - 1]
        await pilot.press("home")
        await pilot.pause()
        assert app.selected_shard_id == ids[0] and round(table.scroll_y) == 0


async def test_lineage_keys_walk_the_tree_and_select_the_shard():
    app = make_app(60)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        tree = app.query_one(LineageTree)
        tree.focus()
        await pilot.press("home")
        await pilot.pause()
        first = app.selected_shard_id
        await pilot.press("end")
        await pilot.pause()
        last = app.selected_shard_id
        assert first != last
        await pilot.press("pagedown")  # already at the end: stays there
        await pilot.pause()
        assert app.selected_shard_id == last
        await pilot.press("home", "down")
        await pilot.pause()
        assert app.selected_shard_id not in (first, None)
