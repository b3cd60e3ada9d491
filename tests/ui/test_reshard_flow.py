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
    return [
        Shard(shard_id_for_index(n), start, end, None, None, "0", None) for n, (start, end) in enumerate(even_split(4))
    ]


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
            self.push_screen(
                PromptScreen("Split", "Split point", "midpoint", lambda text: split_point_problem(shard, text)),
                answers.append,
            )

    app = PromptApp()
    async with app.run_test(size=(100, 20)) as pilot:
        app.screen.query_one("Input").value = str(shard.ending_hash_key)
        await pilot.press("enter")
        text = str(app.screen.query_one("#prompt-error").render())
        assert "at the end of" in text and "less than EndingHashKey" in text and answers == []
        app.screen.query_one("Input").value = str(shard.ending_hash_key - 1)
        await pilot.press("enter")
        assert answers == [str(shard.ending_hash_key - 1)]


def test_the_legend_names_a_shard_still_to_be_created_once():
    from console.reshard.plan import plan_scale
    from console.ui.screens.reshard import legend
    from tests.ui.static_source import even_shards

    plan = plan_scale(even_shards(2), 4)
    text = str(legend([chr(ord("A") + i) for i in range(len(plan.after))], plan.after, new=True))
    assert "(new)" not in text and "new new" not in text
    assert text.count("new") == sum(1 for shard in plan.after if not shard.unchanged)


async def test_a_preview_older_than_the_last_poll_is_rechecked_before_it_proceeds(
    kinesis, make_stream, tmp_path, monkeypatch
):
    """The operator confirms a preview while another operator splits a shard and the console polls:
    nothing is called; the new plan is shown instead, and cancelling it leaves only the other change."""
    from console.reshard.actionlog import ActionLog
    from console.ui.reshard_flow import ReshardDialogs, ReshardRequest, run_reshard
    from console.ui.screens.confirm import ConfirmByNameScreen
    from console.ui.screens.reshard import ReshardPreviewScreen

    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path))
    stream = await make_stream(shards=2)
    shards = tuple(await kinesis.all_shards(stream))
    now = [0.0]
    polled = [None]
    previews, notes = [], []

    async def ask(screen):
        if isinstance(screen, ReshardPreviewScreen):
            previews.append(screen)
            return len(previews) == 1  # proceed with the first preview, cancel the second
        assert isinstance(screen, ConfirmByNameScreen)
        # Meanwhile: another operator splits shard 1, and the console polls.
        await kinesis.split_shard(stream, "shardId-000000000001", shards[1].starting_hash_key + 2**100)
        now[0] += 5
        polled[0] = now[0]
        return True

    request = ReshardRequest(
        "scale", stream, shards, 2, None, kinesis, last_poll=lambda: polled[0], clock=lambda: now[0]
    )
    monkeypatch.setattr("console.ui.reshard_flow.PromptScreen", lambda *_args: "prompt")

    async def answer(screen):
        return "4" if screen == "prompt" else await ask(screen)

    await run_reshard(request, ReshardDialogs(answer, lambda text, **_: notes.append(text), lambda _message: None))
    assert len(previews) == 2 and any("changed since this preview" in note for note in notes), notes
    open_after = [s for s in await kinesis.all_shards(stream) if s.is_open]
    assert len(open_after) == 3  # only the other operator's split; our rescale was never called
    assert not [e for e in ActionLog.default().entries() if e.get("kind") == "intent"]


async def test_the_preview_names_the_readers_the_plan_affects(
    kinesis, make_stream, local_kinesis, tmp_path, monkeypatch
):
    """A Lambda mapping on the stream: the console's preview shows the lines `kconsole plan` prints."""
    from console.ui.reshard_flow import ReshardDialogs, ReshardRequest, run_reshard
    from console.ui.screens.reshard import ReshardPreviewScreen
    from tests.consumers.reader_resources import ReaderFactory

    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path))
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    async with ReaderFactory(local_kinesis.endpoint_url) as made:
        function = await made.function()
        await made.mapping(arn, function, ParallelizationFactor=5)
    shards = tuple(await kinesis.all_shards(stream))
    previews = []

    async def answer(screen):
        if screen == "prompt":
            return "4"
        previews.append(screen)
        return False  # cancel: nothing is called

    monkeypatch.setattr("console.ui.reshard_flow.PromptScreen", lambda *_args: "prompt")
    request = ReshardRequest("scale", stream, shards, 2, None, kinesis)
    await run_reshard(request, ReshardDialogs(answer, lambda _text, **_: None, lambda _message: None))
    [preview] = previews
    assert isinstance(preview, ReshardPreviewScreen)
    assert f"reader lambda {function}: concurrency 10 → 20 (parallelization factor 5 × shards)" in preview.consumers
    assert len([s for s in await kinesis.all_shards(stream) if s.is_open]) == 2
