"""The console hosts the tail, heat and producer panels: it runs their I/O on the same backend and
feeds them (embedded local Kinesis)."""

from __future__ import annotations

import asyncio
import json

import pytest

from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import PromptScreen
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


async def put_json(kinesis, stream: str, count: int, key=lambda n: f"user-{n}") -> None:
    await kinesis.put_records(
        stream, [{"Data": json.dumps({"n": n}).encode(), "PartitionKey": key(n)} for n in range(count)]
    )


async def test_tail_reads_the_stream_from_the_oldest_record(kinesis, make_stream):
    name = await make_stream(shards=2)
    await put_json(kinesis, name, 30)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("6", "h")
        view = app.query_one("#tail-view")
        await wait_until(pilot, lambda: view.received >= 30, what="tailed records")
        assert view.received == 30
        # Start options: from the oldest again, only one key; the ring shows just its record.
        view.query_one("#tail-key").value = "user-7"
        await pilot.press("h")
        await wait_until(pilot, lambda: view.received >= 31 and len(view.ring.records) == 1, what="filtered tail")
        assert [r.partition_key for r in view.ring.records] == ["user-7"]


async def test_heat_feeds_table_hands_a_split_point_and_enables_monitoring(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("7")
        panel = app.query_one("#heat-panel")
        await wait_until(pilot, lambda: panel.snapshot is not None, what="first heat snapshot")
        await put_json(kinesis, name, 400)
        await wait_until(
            pilot,
            lambda: app.table.show_throughput and panel.selected is not None and panel.selected.split is not None,
            timeout=20,
            what="heat with a split suggestion",
        )
        suggestion = panel.selected.split
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="split prompt")
        assert app.screen.query_one("Input").value == str(suggestion.at)
        assert app.selected_shard_id == suggestion.shard_id
        await pilot.press("escape")
        # e turns on enhanced monitoring, after the stream name is typed.
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("enhanced monitoring on" in note for note in app.notes), what="enabled")
        assert "IncomingBytes" in (await kinesis.describe_stream_summary(name)).enhanced_metrics
        # Leaving the heat tab stops the sampler (no worker left in its group).
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: not [w for w in app.workers if w.group == "heat" and not w.is_finished],
            what="sampler stopped",
        )
        # Its last rates stay, marked stale (not passed off as live); the ribbon goes back to shares.
        # (shown as stale where the column fits beside the others whole, left out where it does not).
        header = app.table.render_line(0).text
        assert app.table.heat_stale and ("Rate (stale)" in header or "Rate" not in header)
        assert app.ribbon._heat == {}


@pytest.mark.parametrize("prefetching", [False, True], ids=["backend", "as-launched"])
async def test_producer_run_is_verified_through_the_console(kinesis, make_stream, prefetching):
    from console.ui.source import fetch_stream

    name = await make_stream(shards=3)
    # As launched, the first poll's answer is asked for before the app starts, and handed to it.
    first_view = asyncio.ensure_future(fetch_stream(kinesis, name)) if prefetching else None
    app = RecordingApp(kinesis, stream=name, interval=60, first_view=first_view)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        app.query_one("#producer-keys").value = "20"
        app.query_one("#producer-per-key").value = "3"
        await pilot.click("#producer-start")
        panel = app.query_one("#producer-panel")
        # Writing is a change: the stream name is asked for first; escape writes nothing.
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        assert "Write 60 test records" in str(app.screen.query_one("#confirm-action").render())
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: "nothing was written" in str(app.query_one("#producer-status").render()), what="cancelled"
        )
        assert not [w for w in app.workers if w.group == "producer"]
        await pilot.click("#producer-start")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: panel.report is not None, timeout=40, what="verification report")
        report = panel.report.to_json() if hasattr(panel.report, "to_json") else vars(panel.report)
        assert report["sent"] == 60 and report["lost"] == 0 and report["read_back"] >= 60


async def test_read_only_refuses_the_producer_and_enhanced_monitoring():
    # Refused before any I/O: an in-memory source is enough.
    from tests.ui.static_source import StaticSource, even_shards

    app = RecordingApp(StaticSource("orders", even_shards(2)), stream="orders", interval=3600, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        await pilot.click("#producer-start")
        await pilot.pause(0.3)
        assert "read-only" in str(app.query_one("#producer-status").render())
        assert not [w for w in app.workers if w.group == "producer"]
        assert app.screen.active_bindings["ctrl+s"].enabled is False  # greyed in the footer
        await pilot.press("7")  # enhanced monitoring is a change too: greyed, and the key does nothing
        # The Heat tab is built on its first visit, which on a loaded machine takes more than a frame.
        await wait_until(pilot, lambda: "e" in app.screen.active_bindings, what="the Heat tab's keys")
        assert app.screen.active_bindings["e"].enabled is False
        await pilot.press("e")
        await pilot.pause(0.1)
        assert app.screen is app.screen_stack[0]


async def test_empty_states_say_what_to_do():
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("slash", *"zzz")
        assert app.table.row_count == 0
        assert "No shard matches 'zzz'" in app.table.render_line(2).text and "escape" in app.table.render_line(2).text
        await pilot.press("escape")
        assert app.table.render_line(2).text.strip() and app.table.empty_message is None
        await pilot.press("3")
        summary = app.query_one("#placement-summary")
        assert "partition keys" in str(summary.render())
        await pilot.press("ctrl+t")
        assert "explicit hash keys" in str(summary.render()) and "partition" not in str(summary.render())
        await pilot.press("4")
        assert "none typed yet" in str(app.query_one("#keytree-summary").render())


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
async def test_footer_palette_key_reaches_the_right_edge(size):
    """With more keys than fit, the footer's labels run under the docked ctrl+p key: it must cover
    the last column, or a stray letter shows there (as it did under tmux)."""
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("6")
        await pilot.pause(0.2)
        palette_key = app.query_one("FooterKey.-command-palette")
        assert palette_key.region.right == size[0]


def test_key_tree_lists_the_depths_in_use_and_the_next_one():
    from console.keyspace.hashkeys import HASH_SPACE
    from console.keyspace.keytree.tree import KeyTree
    from console.ui.panels.keytree import levels_in_use

    def shown(keys):
        levels, next_depth = levels_in_use(KeyTree.rehydrate(keys).balance())
        return [(level.depth, level.keys) for level in levels], next_depth

    assert shown([]) == ([(0, 0)], 0)
    assert shown([HASH_SPACE // 2]) == ([(0, 1), (1, 0)], 1)
    # A key at depth 127 used to list all 128 depths; now only the three that matter.
    assert shown([HASH_SPACE // 2, HASH_SPACE // 4, 1]) == ([(0, 1), (1, 1), (127, 1)], 1)
    assert shown([HASH_SPACE // 2, HASH_SPACE // 4, 3 * HASH_SPACE // 4]) == ([(0, 1), (1, 2), (2, 0)], 2)


async def test_next_keys_stay_in_view_at_80x24():
    from console.keyspace.hashkeys import HASH_SPACE
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("4")
        app.query_one("#keytree-panel").set_keys(f"{HASH_SPACE // 2}\n{HASH_SPACE // 4}\n1\n")
        await pilot.pause()
        box = app.query_one("#keytree-next-box")
        assert box.region.height >= 4 and box.region.bottom <= 23  # above the footer
        assert "Next balanced keys" in str(app.query_one("#keytree-next").render())


async def test_placement_problems_have_their_own_column_and_the_table_recovers():
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("3", "ctrl+t")
        await wait_until(pilot, lambda: app.placement.index is not None)
        table = app.query_one("#placement-results")
        good = "170141183460469231731687303715884105728"
        app.placement.set_keys(f"{good}\nnot-a-number-but-a-rather-long-line-of-text\n")
        await pilot.pause()
        assert [c.label.plain for c in table.columns.values()] == ["Key", "Shard", "Hash key", "Problem"]
        assert table.get_row_at(1)[1:3] == ["-", "-"] and "decimal integer" in table.get_row_at(1)[3].plain
        widths = {c.label.plain: c.get_render_width(table) for c in table.columns.values()}
        assert widths["Key"] + widths["Shard"] <= 80  # Shard stays on screen
        assert table.get_row_at(0)[1] == "shardId-000000000002"
        app.placement.set_keys(f"{good}\n")
        await pilot.pause()
        problem = next(c for c in table.columns.values() if c.label.plain == "Problem")
        assert problem.get_render_width(table) <= len("Problem") + 2  # the error's width is gone
