"""The console's split prompt applies the plan's own split-point rule, with the plan's message."""

from __future__ import annotations

import pytest
from textual.app import App

from console.keyspace.hashkeys import HASH_SPACE, even_split, shard_id_for_index
from console.reshard.plan import midpoint, plan_split
from console.topology.model import Shard
from console.ui.reshard_flow import split_point_problem
from console.ui.screens.prompt import PromptScreen

pytestmark = pytest.mark.timeout(60)


def four_shards() -> list[Shard]:
    return [Shard(shard_id_for_index(n), start, end, None, None, "0", None)
            for n, (start, end) in enumerate(even_split(4))]


def second_of_four() -> Shard:
    return four_shards()[1]


def test_split_points_the_plan_refuses_are_refused_with_the_plans_message():
    shard = second_of_four()
    start, end = shard.starting_hash_key, shard.ending_hash_key
    for key in (end, start, start + 1, end + 1, start - 1):
        problem = split_point_problem(shard, str(key))
        plan = plan_split(four_shards(), shard.shard_id, key)
        assert problem is not None and not plan.ok, key
        assert problem == str(plan.breaches[0]), key
    for key in (start + 2, end - 1, midpoint(shard)):
        assert split_point_problem(shard, str(key)) is None and plan_split(four_shards(), shard.shard_id, key).ok, key
    assert split_point_problem(shard, "midpoint") is None
    assert split_point_problem(shard, hex(midpoint(shard))) is None
    assert "decimal integer" in split_point_problem(shard, "12e30")
    assert "hexadecimal" in split_point_problem(shard, "0xZZ")
    assert split_point_problem(shard, str(HASH_SPACE)) is not None


async def test_the_prompt_shows_the_rule_and_stays_open_for_the_end_key():
    shard = second_of_four()
    answers = []

    class PromptApp(App[None]):
        def on_mount(self) -> None:
            self.push_screen(PromptScreen("Split", "Split point", "midpoint",
                                          lambda text: split_point_problem(shard, text)), answers.append)

    app = PromptApp()
    async with app.run_test(size=(100, 20)) as pilot:
        app.screen.query_one("Input").value = str(shard.ending_hash_key)
        await pilot.press("enter")
        text = str(app.screen.query_one("#prompt-error").render())
        assert "at the end of" in text and "less than EndingHashKey" in text and answers == []
        app.screen.query_one("Input").value = str(shard.ending_hash_key - 1)
        await pilot.press("enter")
        assert answers == [str(shard.ending_hash_key - 1)]
