"""An 80×24 terminal: what the console draws there, read off the rendered screen. The header's
fields keep a space between them, the Shards table keeps every column, the footer shows whole keys,
the Stream actions menu reaches Delete stream, and the split preview leaves the plan room."""

from __future__ import annotations

import contextlib

import pytest

from console.ui.screens.reshard import ReshardPreviewScreen
from console.ui.screens.stream_actions import StreamActionsScreen
from console.ui.widgets.header import ConsoleHeader
from tests.ui.test_ui_console import RecordingApp, wait_until
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(60)

SIZE = (80, 24)


def screen_lines(app) -> list[str]:
    """The screen as the terminal shows it, one string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_the_headers_second_line_never_runs_fields_together():
    app = static_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        header = app.query_one(ConsoleHeader)
        for length in range(30, 80):  # some length fills the line up to "refreshed" exactly
            header.update_state(connected_to="x" * (length - 14) + " 127.0.0.1:1", region="us-east-1")
            await pilot.pause()
            second = screen_lines(app)[1]
            assert "refreshed" in second, second
            assert second[second.index("refreshed") - 1] == " ", second


async def test_the_shards_table_keeps_every_column():
    app = static_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.pause()
        heading = next(line for line in screen_lines(app) if "Shard" in line and "State" in line)
        for label in ("Start key", "End key", "Share", "Parents"):
            assert label in heading, heading


async def test_the_footer_shows_whole_keys():
    app = static_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.pause(0.3)
        footer = screen_lines(app)[-1]
        words = footer.replace("▏", " ").split()
        described = {"Sort", "Quit", "Help", "Refresh", "Tabs", "Filter", "Split", "Merge", "Scale"}
        described |= {"Copy", "keys", "Streams", "Stream", "palette"}
        cut = [word for word in words if word.isalpha() and len(word) > 1 and word not in described]
        assert cut == [], footer
        assert "palette" in footer


async def test_the_stream_actions_menu_reaches_delete_stream():
    app = static_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("S")
        await wait_until(pilot, lambda: isinstance(app.screen, StreamActionsScreen), what="menu")
        await pilot.pause()
        assert any("Delete stream" in line for line in screen_lines(app)), "\n".join(screen_lines(app))


async def test_the_split_preview_leaves_the_plan_room(kinesis, make_stream):
    app = RecordingApp(kinesis, stream=await make_stream(shards=4), interval=3600)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="split preview")
        body = app.screen.query_one("#preview-body")
        with contextlib.suppress(AssertionError):  # laid out over a few frames on a busy machine
            await wait_until(pilot, lambda: body.content_region.height >= 10, timeout=5, what="the plan's room")
        assert body.content_region.height >= 10, "\n".join(screen_lines(app))
        assert any("Proceed" in line for line in screen_lines(app))


async def test_placement_shows_keys_that_differ_only_at_the_end_apart():
    """2**128 (out of range) and 2**128 - 1 (the last key) share their first 38 digits: each row shows
    the key whole where it fits, and a longer key keeps its start and its end."""
    long_a, long_b = "k" * 60 + "-first", "k" * 60 + "-other"
    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("3")
        await pilot.pause()
        app.placement.action_toggle_mode()  # explicit hash keys
        app.placement.query_one("#placement-input").load_text(f"{2**128}\n{2**128 - 1}\n")
        await pilot.pause()
        table = app.placement.query_one("#placement-results")
        shown = [str(table.get_row_at(row)[0]) for row in range(table.row_count)]
        assert shown == [str(2**128), str(2**128 - 1)]
        app.placement.action_toggle_mode()  # partition keys
        app.placement.query_one("#placement-input").load_text(f"{long_a}\n{long_b}\n")
        await pilot.pause()
        shown = [str(table.get_row_at(row)[0]) for row in range(table.row_count)]
        assert shown[0] != shown[1] and shown[0].endswith("-first") and shown[0].startswith("kkk"), shown
