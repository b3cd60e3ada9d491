"""Split and merge from the console (preview, confirm by name, execute) and read-only gating,
against the embedded local Kinesis."""

from __future__ import annotations

import asyncio

import pytest

from console.reshard.plan import midpoint
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import ChoiceScreen, PromptScreen
from console.ui.screens.reshard import ReshardPreviewScreen
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))  # the action log goes here
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.mark.parametrize("prefetching", [False, True], ids=["backend", "as-launched"])
async def test_split_from_the_console_runs_after_preview_and_typed_name(kinesis, make_stream, tmp_path, prefetching):
    from console.ui.source import fetch_stream

    name = await make_stream(shards=2)
    # As launched, the first poll's answer is asked for before the app starts, and handed to it.
    first_view = asyncio.ensure_future(fetch_stream(kinesis, name)) if prefetching else None
    app = RecordingApp(kinesis, stream=name, interval=60, first_view=first_view)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        target = app.table.shard(app.selected_shard_id)
        assert target is not None and target.is_open
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="split point prompt")
        await pilot.press("enter")  # midpoint
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="preview")
        assert app.screen.plan.ok and app.screen.plan.action == "split"
        await pilot.press("enter")  # proceed
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        await pilot.press(*"wrong", "enter")
        assert isinstance(app.screen, ConfirmByNameScreen)  # a wrong name never confirms
        app.screen.query_one("Input").value = name  # (stream names hold '-', which press() reads as a key name)
        polls = len(app.refreshed)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: len(app.refreshed) > polls and not app.table.shard(target.shard_id).is_open,
            timeout=30,
            what="poll after the split",
        )
        children = [s for s in await kinesis.all_shards(name) if target.shard_id in s.parents]
        assert sorted(c.starting_hash_key for c in children) == [target.starting_hash_key, midpoint(target)]
        assert {c.shard_id for c in children} <= set(app.table.shard_ids)
        assert (tmp_path / "data").exists()  # the action log was written


async def test_merge_choice_and_cancel_calls_nothing(kinesis, make_stream):
    name = await make_stream(shards=3)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        before = await kinesis.all_shards(name)
        await pilot.press("down")  # the middle shard has two open neighbours
        await pilot.press("m")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="neighbour choice")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="preview")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ReshardPreviewScreen), what="preview closed")
        assert await kinesis.all_shards(name) == before


async def test_read_only_greys_out_mutating_actions(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60, read_only=True)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        active = app.screen.active_bindings
        assert active["s"].enabled is False and active["m"].enabled is False and active["x"].enabled is False
        assert active["r"].enabled is True
        await pilot.press("s")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, PromptScreen)
        assert "READ-ONLY" in str(app.header.render())
        assert len(await kinesis.all_shards(name)) == 2


async def test_rescale_from_the_console_previews_confirms_and_shows_progress(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        header_lines: list[str] = []
        update_state = app.header.update_state

        def recording_update_state(**changes):  # what the header showed at every change
            update_state(**changes)
            header_lines.append(str(app.header.render()))

        app.header.update_state = recording_update_state
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="target count prompt")
        assert app.screen.query_one("Input").value == "4"  # doubling is offered first
        app.screen.query_one("Input").value = "0"
        await pilot.press("enter")
        assert isinstance(app.screen, PromptScreen)  # a bad count is refused in the dialog
        app.screen.query_one("Input").value = "4"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="preview")
        plan = app.screen.plan
        assert plan.ok and plan.action == "scale"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: app.view.summary.open_shard_count == 4 and app.header.state.activity is None,
            timeout=30,
            what="poll after the rescale",
        )
        assert any("scale: running" in line for line in header_lines)  # progress shown while it ran
        server = sorted((s.starting_hash_key, s.ending_hash_key) for s in await kinesis.all_shards(name) if s.is_open)
        assert server == sorted((s.starting_hash_key, s.ending_hash_key) for s in plan.after)
        assert "4 open shards" in str(app.header.render())


async def test_rescale_prompt_refuses_a_huge_target_at_once_and_stays_responsive(kinesis, make_stream):
    import time

    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="target count prompt")
        for target, expected in (("99999999999", "from 1 to 10,000"), ("5", "more than double; go to 4 first")):
            app.screen.query_one("Input").value = target
            started = time.monotonic()
            await pilot.press("enter")
            assert time.monotonic() - started < 1.0
            assert isinstance(app.screen, PromptScreen)
            assert expected in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, PromptScreen)
