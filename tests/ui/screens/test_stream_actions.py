"""The Stream actions menu (key S) against the embedded local Kinesis: retention, a mode switch and
its 24-hour rule, delete with the typed name, and every entry greyed out when read-only."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Button, OptionList

from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import ChoiceScreen, PromptScreen
from console.ui.screens.stream_actions import LifecyclePreviewScreen, StreamActionsScreen
from tests.commands.test_cli_today import channel_request
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(autouse=True)
def private_action_log(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))


async def open_menu(pilot, app) -> None:
    await wait_until(pilot, lambda: app.view is not None, what="first poll")
    await pilot.press("S")
    await wait_until(pilot, lambda: isinstance(app.screen, StreamActionsScreen), what="menu")


async def confirm(pilot, app, name: str) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
    assert not app.screen.query_one("#proceed", Button).disabled
    await pilot.click("#proceed")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="typed confirmation")
    await pilot.press(*name, "enter")


async def retention_prompt(pilot, app) -> None:
    await open_menu(pilot, app)
    await pilot.press("enter")  # Retention
    await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="hours prompt")


async def test_retention_from_the_menu_changes_the_stream(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await retention_prompt(pilot, app)
        await pilot.press(*["backspace"] * 4, "9", "9", "9", "9", "enter")
        problem = str(app.screen.query_one("#prompt-error").render())
        assert "retention must be" in problem and "from 24 to 8760" in problem and "--" not in problem  # says why
        await pilot.press(*["backspace"] * 4, "7", "2", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
        assert "increase retention from 24 h to 72 h" in app.screen.plan.render()
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("retention done" in note for note in app.notes), what="done")
    assert (await kinesis.describe_stream_summary(name)).retention_hours == 72


async def test_mode_switch_then_a_second_switch_is_refused_in_the_preview(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_menu(pilot, app)
        await pilot.press("down", "enter")  # Capacity mode
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="mode choice")
        await pilot.press("enter")  # switch to on-demand
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("mode done" in note for note in app.notes), what="done")
        assert (await kinesis.describe_stream_summary(name)).mode == "ON_DEMAND"

        await open_menu(pilot, app)
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="mode choice")
        await pilot.press("enter")  # back to provisioned: inside 24 h of the last switch
        await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
        assert "one switch per 24 hours" in (app.screen.plan.refusal or "")
        assert app.screen.query_one("#proceed", Button).disabled
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("cancelled, nothing was called" in n for n in app.notes), what="cancel")
    assert (await kinesis.describe_stream_summary(name)).mode == "ON_DEMAND"


async def test_delete_needs_the_exact_name_then_opens_the_stream_picker(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_menu(pilot, app)
        await pilot.press("end", "enter")  # Delete stream, the last entry
        await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
        assert "every record in it" in app.screen.plan.render()
        await pilot.click("#proceed")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="typed confirmation")
        await pilot.press(*"wrong", "enter")
        assert isinstance(app.screen, ConfirmByNameScreen)  # a wrong name deletes nothing
        assert name in await kinesis.stream_names()
        await pilot.press(*["backspace"] * 5, *name, "enter")
        await wait_until(pilot, lambda: any("delete done" in note for note in app.notes), what="done")
    assert name not in await kinesis.stream_names()


async def test_read_only_greys_out_the_key_the_palette_entry_and_every_menu_entry(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=3600, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("S")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, StreamActionsScreen)
        assert app.check_action("stream_actions", ()) is None  # shown greyed in the footer
        app.push_screen(StreamActionsScreen(app.view.summary, read_only=True))
        await pilot.pause(0.1)
        options = app.screen.query_one(OptionList)
        from console.ui.screens.stream_actions import ACTIONS

        assert options.option_count == len(ACTIONS) >= 10
        assert all(options.get_option_at_index(i).disabled for i in range(options.option_count))


async def test_the_palette_opens_the_menu(kinesis, make_stream):
    from textual.command import CommandPalette

    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
        await pilot.press(*"stream actions")
        await wait_until(pilot, lambda: app.screen.query("CommandList").first().option_count > 0, what="hits")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, StreamActionsScreen), what="menu from the palette")
        assert not any(app.screen.query_one(OptionList).get_option_at_index(i).disabled for i in range(7))


@pytest.mark.parametrize("size", [(140, 45), (80, 24)], ids=["140x45", "80x24"])
async def test_every_menu_entry_is_one_line_and_all_of_them_show_at_once_on_a_full_screen(kinesis, make_stream, size):
    """Today's entries (warm throughput, tags, policy, channels, the account) sit below the first
    five: the menu shows every entry at 140x45 without scrolling, and each entry is one line."""
    from console.ui.screens.stream_actions import ACTIONS

    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=size) as pilot:
        await open_menu(pilot, app)
        options = app.screen.query_one(OptionList)
        await pilot.pause()
        assert options.option_count == len(ACTIONS) and options.virtual_size.height == len(ACTIONS)
        if size == (140, 45):
            assert options.max_scroll_y == 0, options.scrollable_content_region


async def test_the_palette_finds_the_menu_by_todays_entries(kinesis, make_stream):
    from textual.command import CommandPalette

    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        for words in ("channels", "warm throughput"):
            await pilot.press("ctrl+p")
            await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
            await pilot.press(*words)
            await wait_until(pilot, lambda: app.screen.query("CommandList").first().option_count > 0, what="hits")
            first = str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            assert "Stream actions" in first, (words, first)
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, CommandPalette), what="palette closed")


async def test_auto_distribution_from_the_menu_shows_in_the_header_and_placement_and_switches_back(kinesis):
    from console.reshard.actionlog import ActionLog
    from console.ui.panels.keytree import KeyTreePanel
    from console.ui.panels.placement import PlacementPanel
    from tests.conftest import unique_stream_name

    name = unique_stream_name("auto")
    await kinesis.create_stream(name, None, on_demand=True)
    await kinesis.wait_for_active(name)
    try:
        app = RecordingApp(kinesis, stream=name, interval=3600)
        async with app.run_test(size=(140, 44)) as pilot:
            await open_menu(pilot, app)
            await pilot.press("down", "down", "down", "enter")  # Distribution
            await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="distribution choice")
            await pilot.press("enter")  # switch to AUTO
            await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
            assert "per-key order is gone" in app.screen.plan.render()
            await confirm(pilot, app, name)
            await wait_until(pilot, lambda: any("distribution done" in note for note in app.notes), what="done")
            await wait_until(pilot, lambda: app.view.summary.auto_distribution, what="the poll after the switch")
            assert "AUTO distribution" in str(app.header.render())
            intent = [e for e in ActionLog.default().entries() if e.get("kind") == "intent"][-1]
            assert intent["plan"]["target"] == "AUTO" and intent["plan"]["action"] == "stream distribution"
            # The key-space tabs, built after the switch, show what their polls told them while hidden.
            await pilot.press("4")
            await wait_until(pilot, lambda: app.query_one(KeyTreePanel).query_one("#keytree-auto").display)
            await pilot.press("3")
            placement = app.query_one(PlacementPanel)
            placement.set_keys("user-1\nuser-2")
            await pilot.pause(0.1)
            notice = str(app.query_one("#placement-summary").render())
            assert "uses AUTO record distribution since " in notice and "ignores partition" in notice
            table = app.query_one("#placement-results")
            assert [column.label.plain for column in table.columns.values()][:2] == ["Key", "Hash key"]
            assert app.query_one(KeyTreePanel).query_one("#keytree-auto").display
            # The keys typed are a sample as on any stream: on an AUTO stream the plan counts no moves of them
            # (console.reshard.plan; tests/reshard).
            assert placement.key_sample() is not None

            await kinesis.update_record_distribution(app.view.summary.arn, "USER_PARTITION_KEY")
            app.poll_now()
            await wait_until(pilot, lambda: not app.view.summary.auto_distribution, what="switched back")
            await pilot.pause(0.1)
            assert "AUTO distribution" not in str(app.header.render())
            assert [column.label.plain for column in table.columns.values()][:2] == ["Key", "Shard"]
            assert table.get_row_at(0)[1].startswith("shardId-")
            assert not app.query_one(KeyTreePanel).query_one("#keytree-auto").display
            assert len(placement.key_sample().keys) == 2
    finally:
        await kinesis.delete_stream(name)


async def choose(pilot, action: str) -> None:
    """Pick `action` in the open menu by its id (the list's order may grow)."""
    from console.ui.screens.stream_actions import ACTIONS

    index = [entry[0] for entry in ACTIONS].index(action)
    await pilot.press(*["down"] * index, "enter")


async def test_tags_and_a_policy_from_the_menu_as_launched(kinesis, make_stream, tmp_path):
    """The console as launched with --stream: its first poll's answer asked for before it started; the
    menu's changes and their read-backs go to the backend."""
    import json

    from console.ui.source import fetch_stream

    name = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(name)).arn
    app = RecordingApp(
        kinesis, stream=name, interval=3600, first_view=asyncio.ensure_future(fetch_stream(kinesis, name))
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await open_menu(pilot, app)
        await choose(pilot, "tag")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="tags prompt")
        await pilot.press(*"team=payments tier=1", "enter")
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("tag done" in note for note in app.notes), what="tagged")
        assert await kinesis.resource_tags(arn) == {"team": "payments", "tier": "1"}

        await open_menu(pilot, app)
        await choose(pilot, "tag")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="tags prompt")
        await pilot.press(*"-tier", "enter")
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("tag done: remove 1" in note for note in app.notes), what="untagged")
        assert await kinesis.resource_tags(arn) == {"team": "payments"}

        policy = tmp_path / "policy.json"
        policy.write_text(
            json.dumps(
                {
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                            "Action": "kinesis:GetRecords",
                            "Resource": "*",
                        }
                    ]
                }
            )
        )
        await open_menu(pilot, app)
        await choose(pilot, "policy")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="policy choice")
        await pilot.press("enter")  # put
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="file prompt")
        app.screen.query_one("Input").value = str(policy)
        await pilot.press("enter")
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("policy done" in note for note in app.notes), what="policy put")
    assert "kinesis:GetRecords" in (await kinesis.resource_policy(arn) or "")


async def test_a_channel_created_and_deleted_from_the_menu(kinesis, make_stream, tmp_path):
    import json

    from tests.conftest import unique_stream_name

    name = unique_stream_name("chan")
    make_stream.created.append(name)
    await kinesis.create_stream(name, None, on_demand=True)
    arn = (await kinesis.wait_for_active(name)).arn
    request = tmp_path / "channel.json"
    request.write_text(json.dumps(channel_request(f"to-s3-{name}", arn)))
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_menu(pilot, app)
        await choose(pilot, "channels")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="channel choice")
        await pilot.press("enter")  # create
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="request prompt")
        app.screen.query_one("Input").value = str(request)
        await pilot.press("enter")
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: any("channels done" in note for note in app.notes), what="created")
        assert [c["ChannelName"] for c in await kinesis.list_channels(stream_arn=arn)] == [f"to-s3-{name}"]

        await open_menu(pilot, app)
        await choose(pilot, "channels")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="channel choice")
        await pilot.press("down", "enter")  # delete the one channel
        await confirm(pilot, app, name)
        await wait_until(pilot, lambda: sum("channels done" in note for note in app.notes) == 2, what="deleted")
    left = [c for c in await kinesis.list_channels(stream_arn=arn) if c.get("ChannelStatus") != "DELETING"]
    assert left == []


async def test_the_preview_says_what_enter_does_as_the_focus_moves(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await retention_prompt(pilot, app)
        await pilot.press(*["backspace"] * 4, "4", "8", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
        keys = app.screen.query_one("#lifecycle-preview-keys")
        await wait_until(pilot, lambda: str(keys.render()) == "enter proceeds · esc cancels", what="proceed hint")
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: str(keys.render()) == "enter cancels · esc cancels", what="cancel hint")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("cancelled" in note for note in app.notes), what="cancelled")
    assert (await kinesis.describe_stream_summary(name)).retention_hours == 24


@pytest.mark.parametrize(
    "problem, typed, field",
    [
        ("retention_problem", "9999", "retention"),
        ("kms_key_problem", "has spaces", "the KMS key"),
        ("record_size_problem", "99", "the record size in KiB"),
        ("warm_throughput_problem", "-1", "warm throughput in MiB/s"),
    ],
)
def test_a_dialogs_problem_names_its_field_not_a_flag(problem, typed, field):
    from console.ui.screens import stream_actions

    message = getattr(stream_actions, problem)(typed)
    assert message.startswith(f"{field} must be") and "--" not in message, message
