"""The reshard dialogs in a tiny host app, driven with App.run_test()."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Button, Static

from console.reshard.plan import midpoint, plan_scale, plan_split
from console.ui.screens.reshard import ConfirmByNameScreen, ReshardPreviewScreen

from tests.reshard.helpers_reshard import even_shards


class Host(App):
    def __init__(self, screen_factory):
        super().__init__()
        self.screen_factory = screen_factory
        self.results = []

    def on_mount(self) -> None:
        self.push_screen(self.screen_factory(), self.results.append)


def split_plan():
    shards = even_shards(4)
    return plan_split(shards, shards[1].shard_id, midpoint(shards[1]))


async def test_preview_shows_ribbons_and_proceeds():
    app = Host(lambda: ReshardPreviewScreen(split_plan(), "orders"))
    async with app.run_test() as pilot:
        ribbons = str(app.screen.query_one("#preview-ribbons", Static).render())
        assert "before |" + "0" * 16 + "1" * 16 in ribbons
        assert "after  |" + "0" * 16 + "A" * 8 + "B" * 8 in ribbons
        assert "25.00% of the key space" in ribbons
        await pilot.click("#proceed")
        await pilot.pause()
    assert app.results == [True]


async def test_preview_cancel_with_escape():
    app = Host(lambda: ReshardPreviewScreen(split_plan(), "orders"))
    async with app.run_test() as pilot:
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]


async def test_preview_with_breaches_cannot_proceed():
    app = Host(lambda: ReshardPreviewScreen(plan_scale(even_shards(4), 9), "orders"))
    async with app.run_test() as pilot:
        assert app.screen.query_one("#proceed", Button).disabled
        assert "more than double" in str(app.screen.query_one("#preview-breaches", Static).render())
        await pilot.press("enter")  # the focused Cancel button, or the ignored proceed binding
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]


async def test_confirm_requires_the_exact_name():
    app = Host(lambda: ConfirmByNameScreen("orders", "split shardId-000000000001 of orders"))
    async with app.run_test() as pilot:
        await pilot.press(*"order", "enter")
        await pilot.pause()
        assert app.results == []
        assert "not 'orders'" in str(app.screen.query_one("#confirm-error", Static).render())
        assert app.screen.query_one("#confirm", Button).disabled
        await pilot.press("s")
        await pilot.pause()
        assert not app.screen.query_one("#confirm", Button).disabled
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [True]


async def test_confirm_cancel():
    app = Host(lambda: ConfirmByNameScreen("orders", "rescale orders"))
    async with app.run_test() as pilot:
        await pilot.press(*"orders")
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]
