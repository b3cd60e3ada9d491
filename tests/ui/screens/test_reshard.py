"""The reshard dialogs in a tiny host app, driven with App.run_test()."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Button, Static

from console.reshard.plan import midpoint, plan_scale, plan_split
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.reshard import ReshardPreviewScreen
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
    async with app.run_test(size=(100, 30)) as pilot:  # wide enough for the full 64-column bars
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


async def test_preview_has_a_legend_aligned_ranges_and_the_sample_keys_that_move():
    from console.reshard.model import KeySample

    shards = even_shards(4)
    sample = KeySample.from_partition_keys([f"user-{n}" for n in range(40)])
    plan = plan_split(shards, shards[1].shard_id, midpoint(shards[1]), sample=sample)
    app = Host(lambda: ReshardPreviewScreen(plan, "orders", key_format="hex", sample_label="keys typed in Placement"))
    async with app.run_test(size=(120, 40)):
        ribbons = str(app.screen.query_one("#preview-ribbons", Static).render())
        before_id, upper_id = shards[1].shard_id, shards[2].shard_id
        assert f"0 #0  1 #{int(before_id[-12:])}  2 #{int(upper_id[-12:])}" in ribbons
        new_ids = [s.shard_id for s in plan.after if not s.unchanged]
        assert all(f"#{int(sid[-12:])} new" in ribbons for sid in new_ids)
        movement = plan.key_movement
        assert 0 < movement.moved < 40
        assert f"{movement.moved} of the 40 keys typed in Placement move" in ribbons
        body = str(app.screen.query_one("#preview-text", Static).render())
        rows = [line for line in body.splitlines() if "0x" in line]
        assert len(rows) == len(plan.before) + len(plan.after)
        assert len({line.index("0x") for line in rows}) == 1  # start keys in one column
        assert len({line.rindex("0x") for line in rows}) == 1  # end keys in one column
        assert "0x" + "f" * 32 in body and "e+" not in body


async def test_the_preview_says_what_enter_does_as_the_focus_moves():
    app = Host(lambda: ReshardPreviewScreen(split_plan(), "orders"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        keys = app.screen.query_one("#preview-keys", Static)
        assert str(keys.render()).startswith("enter proceeds")
        while app.screen.focused is not app.screen.query_one("#cancel"):
            await pilot.press("tab")
        assert str(keys.render()).startswith("enter cancels")
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [False]


async def test_the_ordering_sentence_wraps_inside_an_80_column_dialog():
    app = Host(lambda: ReshardPreviewScreen(split_plan(), "orders"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = str(app.screen.query_one("#preview-text", Static).render())
        ordering = body[body.index("Ordering:") :].split("\n")
        width = app.screen.text_width()
        assert len(ordering) > 1 and all(len(line) <= width for line in ordering[:3])


async def test_the_split_key_wraps_whole_at_80_by_24_and_c_copies_the_call_in_full():
    plan = split_plan()
    key = str(plan.operations[0].new_starting_hash_key)
    assert len(key) == 39
    app = Host(lambda: ReshardPreviewScreen(plan, "orders"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = str(app.screen.query_one("#preview-text", Static).render())
        calls = body[body.index("Calls (1):") : body.index("Before:")].rstrip("\n").split("\n")[1:]
        visible = app.screen.query_one("#preview-body").scrollable_content_region.width
        # The call wraps inside the box, the key whole on a line of its own, nothing past the edge.
        assert len(calls) == 2 and calls[1].strip() == key
        assert all(len(line) <= visible for line in calls), (visible, calls)
        assert calls[0].strip() == f"1. SplitShard {plan.operations[0].shard_id} at"
        assert app.screen.query_one("#preview-body").border_subtitle == "c copies the calls"
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == (
            f"aws kinesis split-shard --stream-name orders --shard-to-split {plan.operations[0].shard_id} "
            f"--new-starting-hash-key {key}"
        )
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]
