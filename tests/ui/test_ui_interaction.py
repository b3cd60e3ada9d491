"""Keyboard behaviour of the console: filter, sort, selection across polls, palette, picker, help,
config warnings and the launcher's one-line errors."""

from __future__ import annotations

import pytest

from console.cli import main
from console.config import load_config
from console.keyspace.hashkeys import HASH_SPACE
from console.ui.screens.help import HelpScreen
from console.ui.screens.stream_picker import StreamPickerScreen
from tests.ui.static_source import StaticSource, even_shards, split_shard
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(60)


def static_app(**options) -> RecordingApp:
    shards = split_shard(even_shards(4), "shardId-000000000001", 3 * HASH_SPACE // 8)
    options.setdefault("interval", 3600)
    return RecordingApp(StaticSource("orders", shards), stream="orders", **options)


async def test_filter_sort_and_selection_kept_across_polls():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        assert app.table.shard_ids[:3] == ["shardId-000000000000", "shardId-000000000004", "shardId-000000000001"]
        await pilot.press("down", "down", "down")
        chosen = app.selected_shard_id
        # Sort by shard id, then refresh twice: the cursor stays on the same shard.
        await pilot.press("o")
        assert app.table.sort_column == "shard" and app.table.selected_shard_id == chosen
        for _ in range(2):
            polls = len(app.refreshed)
            await pilot.press("r")
            await wait_until(pilot, lambda: len(app.refreshed) > polls)
        assert app.table.selected_shard_id == chosen == app.ribbon.selected_id
        # '/' filters; escape clears and gives the keys back to the table.
        await pilot.press("slash", *"closed")
        assert app.table.shard_ids == ["shardId-000000000001"]
        await pilot.press("escape")
        assert app.table.row_count == 6 and app.focused is app.table


async def test_mouse_selects_rows_and_ribbon_segments_and_sorts_by_header():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.click("#shard-table", offset=(5, 3))  # header is line 0: the third row
        assert app.selected_shard_id == app.table.shard_ids[2]
        ribbon = app.query_one("#ribbon")
        x = ribbon.content_region.width - 2  # the last open shard owns the right end of the bar
        await pilot.click("#ribbon", offset=(x + ribbon.styles.padding.left, 1))
        assert app.selected_shard_id == "shardId-000000000003" == app.table.selected_shard_id
        await pilot.click("#shard-table", offset=(2, 0))  # the "Shard" column header
        assert app.table.sort_column == "shard"


async def test_new_rows_arrive_in_place_without_losing_the_selection():
    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        app.table.select("shardId-000000000003")
        await pilot.pause()
        app.backend.shards = split_shard(app.backend.shards, "shardId-000000000000", HASH_SPACE // 16)
        polls = len(app.refreshed)
        await pilot.press("r")
        await wait_until(pilot, lambda: len(app.refreshed) > polls)
        assert app.table.row_count == 8
        assert app.table.selected_shard_id == "shardId-000000000003"
        assert not app.table.shard("shardId-000000000000").is_open


async def test_command_palette_lists_and_runs_console_actions():
    app = static_app(read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        from textual.command import CommandPalette

        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
        await pilot.press(*"lineage")
        await wait_until(pilot, lambda: app.screen.query("CommandList").first().option_count > 0, what="hits")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.query_one("#tabs").active == "lineage", what="palette ran the action")
        from console.ui.palette import ConsoleCommands

        provider = ConsoleCommands(app.screen)
        titles = [hit.text for hit in [h async for h in provider.discover()]]
        assert any("Split" in t and "read-only: disabled" in t for t in titles)


async def test_help_screen_lists_keys_and_closes():
    app = static_app(read_only=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        import io

        from rich.console import Console

        console = Console(width=100, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#help-keys").content)
        text = console.export_text()
        for wanted in (
            "Rescale the stream",
            "Tail tab",
            "From/key/grep",
            "Enhanced monitoring",
            "Start run",
            "disabled: read-only",
            # the k9s habits: command mode and its commands, j/k, the read-only toggle, ctrl+c
            "Command mode",
            ":stream NAME",
            ":consumers",
            ":q",
            "Toggle read-only",
            "j k",
            "ctrl+c",
        ):
            assert wanted in text, wanted
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_catalogued_keys_are_real_bindings():
    """What help and palette say a key does is what the key does: console-wide entries are app
    bindings to the same action; tab entries are bindings of that tab's widgets."""
    from console.ui.app import KConsoleApp
    from console.ui.bindings import ACTIONS, PANEL_KEYS, panel_bindings

    app_bindings = {key.strip(): binding.action for binding in KConsoleApp.BINDINGS for key in binding.key.split(",")}
    app_bindings.update({"?": app_bindings["question_mark"], "/": app_bindings["slash"], ":": app_bindings["colon"]})
    for action in ACTIONS:
        if action.tab is None:
            assert app_bindings.get(action.key) == action.action, action
        else:
            panel = next(p for p in PANEL_KEYS if p.tab == action.tab)
            assert action.key in {entry.key for entry in panel_bindings(panel)}, action
    for panel in PANEL_KEYS:  # every tab with keys of its own has them found
        if panel.tab in ("tail", "heat", "producer", "shards"):
            assert panel_bindings(panel), panel


async def test_palette_runs_a_tab_key_on_its_widget():
    from console.ui.palette import ConsoleCommands

    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("2")
        hits = {hit.text: hit for hit in [h async for h in ConsoleCommands(app.screen).discover()]}
        assert any(title.startswith("Tail: From oldest") for title in hits)
        reverse = next(hit for title, hit in hits.items() if title.startswith("Shards: Reverse sort"))
        await reverse.command()
        await pilot.pause()
        assert app.query_one("#tabs").active == "shards" and app.table.sort_reverse


async def test_bad_config_is_a_notification_not_a_crash(tmp_path):
    bad = tmp_path / "config.toml"
    bad.write_text("interval = 'soon'\n", encoding="utf-8")
    config, warning = load_config(bad)
    assert warning and "interval" in warning
    app = static_app(config_warning=warning, interval=config.interval)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        assert any("interval" in n.message for n in app._notifications)


async def test_stream_picker_opens_the_chosen_stream(kinesis, make_stream):
    first = await make_stream(shards=1)
    second = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(
            pilot, lambda: isinstance(app.screen, StreamPickerScreen) and app.screen.streams, what="stream list"
        )
        names = [s.name for s in app.screen.streams]
        assert first in names and second in names
        # By its name: the rows re-sort as CloudWatch's figures and the shard counts arrive.
        await pilot.press("slash", *second, "enter")
        await wait_until(pilot, lambda: [s.name for s in app.screen.streams] == [second], what="the filtered list")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.refreshed, what="first poll of the chosen stream")
        assert app.stream == second and app.table.row_count == 2


@pytest.mark.parametrize(
    "argv, text",
    [
        (["--json"], "no --json output"),
        (["--interval", "0", "--local"], "--interval must be from 0.2 to 3600"),
        (["--stream", "x", "--endpoint-url", "http://127.0.0.1:9"], "needs a terminal"),
    ],
)
def test_launcher_errors_are_one_line(argv, text, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert text in err and len(err.splitlines()) == 1


async def test_escape_leaves_a_text_box_for_the_tab_strip():
    """Escape hands the keys back to the tab strip, which Textual builds as a private subclass of
    its public Tabs: if that changes, the tab keys stop working after escape and this fails."""
    from textual.widgets import Tabs

    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("3")
        app.query_one("#placement-input").focus()
        await pilot.press("escape")
        assert isinstance(app.focused, Tabs) and app.focused is app.tab_strip
        await pilot.press("5")
        assert app.query_one("#tabs").active == "producer"


async def test_header_shows_every_field_at_80_columns_and_the_reason_when_failing():
    from textual.app import App

    from console.topology.model import StreamSummary
    from console.ui.widgets.header import ConsoleHeader

    now = [1000.0]

    class HeaderApp(App[None]):
        def compose(self):
            yield ConsoleHeader(clock=lambda: now[0])

    app = HeaderApp()
    async with app.run_test(size=(80, 4)) as pilot:
        header = app.query_one(ConsoleHeader)
        header.update_state(
            connected_to="aws",
            region="eu-west-1",
            profile="ops-admin",
            stream="orders-eu-production",
            summary=StreamSummary("orders-eu-production", "UPDATING", "PROVISIONED", 12, 168, "KMS"),
            refreshed_at=990.0,
            read_only=True,
        )
        await pilot.pause()
        lines = str(header.render()).splitlines()  # laid out for the widget's 80 columns
        text = "\n".join(lines)
        for field in (
            "aws",
            "eu-west-1",
            "profile ops-admin",
            "orders-eu-production",
            "UPDATING",
            "PROVISIONED",
            "12 open shards",
            "retention 168h",
            "READ-ONLY",
            "refreshed 10s ago",
        ):
            assert field in text, (field, text)
        assert all(len(line.rstrip()) <= 80 for line in lines)
        header.update_state(error="cannot reach https://kinesis.eu-west-1.amazonaws.com (connection refused)")
        await pilot.pause()
        text = str(header.render())
        assert header.has_class("-failing") and "POLL FAILED: cannot reach" in text and "last good data 10s ago" in text
        header.update_state(error=None, refreshed_at=1000.0)
        assert not header.has_class("-failing") and "refreshed just now" in str(header.render())


async def test_header_at_80_columns_keeps_every_badge_of_an_auto_stream_with_large_records_and_warm_throughput():
    from textual.app import App

    from console.topology.model import StreamSummary
    from console.ui.widgets.header import ConsoleHeader

    class HeaderApp(App[None]):
        def compose(self):
            yield ConsoleHeader(clock=lambda: 1000.0)

    summary = StreamSummary(
        "orders",
        "ACTIVE",
        "ON_DEMAND",
        4,
        24,
        "NONE",
        record_distribution="AUTO",
        max_record_size_kib=4096,
        warm_throughput_target_mibps=5,
        warm_throughput_current_mibps=5,
    )
    for width, badges in ((140, summary.badges()), (80, ["AUTO", "4 MiB records", "warm 5 MiB/s"])):
        app = HeaderApp()
        async with app.run_test(size=(width, 4)) as pilot:
            header = app.query_one(ConsoleHeader)
            header.update_state(connected_to="local", stream="orders", summary=summary, refreshed_at=990.0)
            await pilot.pause()
            first = str(header.render()).splitlines()[0]
            assert len(first.rstrip()) <= width and "…" not in first, first
            assert all(badge in first for badge in badges), (width, first)
            assert "ON_DEMAND" in first and "4" in first
