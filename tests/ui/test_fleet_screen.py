"""The fleet screen on the embedded server: rows from the stream list at once, CloudWatch's metric
data (put over HTTP) filling them, a stream in trouble red with its reason and first, `/` filtering,
enter opening the stream."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.ui.screens.stream_picker import StreamPickerScreen
from tests.heat.test_fleet import create_streams, minutes_ago, put_points
from tests.ui.test_ui_interaction import RecordingApp, wait_until


async def test_fleet_screen_puts_trouble_first_filters_and_opens(kinesis, make_stream, local_kinesis):
    quiet = await make_stream(shards=1)
    throttled = await make_stream(shards=2)
    await put_points(
        local_kinesis.endpoint_url,
        [
            (throttled, "WriteProvisionedThroughputExceeded", 12.0, minutes_ago(2)),
            (throttled, "IncomingRecords", 600.0, minutes_ago(2)),
            (quiet, "IncomingRecords", 60.0, minutes_ago(2)),
        ],
    )
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:

        def loaded() -> bool:
            screen = app.screen
            return (
                isinstance(screen, StreamPickerScreen)
                and screen.streams
                and "in trouble" in str(screen.query_one("#picker-status").render())
            )

        await wait_until(pilot, loaded, what="fleet rows with metrics")
        screen = app.screen
        assert screen.streams[0].name == throttled
        table = screen.query_one("#picker-list", DataTable)
        trouble_cell = table.get_cell(throttled, table.ordered_columns[1].key)
        assert "write throttled: 12" in trouble_cell.plain and "red" in str(trouble_cell.style)
        assert table.get_cell(quiet, table.ordered_columns[1].key).plain == ""
        await pilot.press("slash")
        for key in quiet:
            await pilot.press(key if key != "-" else "minus")
        await wait_until(pilot, lambda: [f.name for f in screen.streams] == [quiet], what="filtered rows")
        await pilot.press("enter")  # keeps the filter, back to the table
        await pilot.press("enter")  # opens the one row left
        await wait_until(pilot, lambda: app.refreshed, what="first poll of the chosen stream")
        assert app.stream == quiet and app.table.row_count == 1


async def test_the_cursor_starts_on_the_worst_stream_once_the_rows_re_sort(kinesis, make_stream, local_kinesis):
    """The rows first come in name order (no metrics yet), then re-sort by trouble: the cursor is on
    the top row, the worst stream, so enter opens it, not the stream that was first by name."""
    calm = await make_stream(shards=1, prefix="a0-calm")
    hot = await make_stream(shards=1, prefix="z9-hot")
    await put_points(local_kinesis.endpoint_url, [(hot, "WriteProvisionedThroughputExceeded", 5.0, minutes_ago(2))])
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: (
                isinstance(app.screen, StreamPickerScreen)
                and "in trouble" in str(app.screen.query_one("#picker-status").render())
            ),
            what="fleet rows with metrics",
        )
        screen = app.screen
        table = screen.query_one("#picker-list", DataTable)
        under_cursor = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        assert table.cursor_row == 0 and under_cursor == screen.streams[0].name != calm
        await pilot.press("down")  # a row the user chose is followed through the next re-sort
        chosen = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        await pilot.press("s", "s", "s", "s")  # name, incoming, age, back to trouble
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == chosen
        assert hot in [facts.name for facts in screen.streams]


@pytest.mark.slow
async def test_a_thousand_streams_show_their_first_rows_in_under_two_seconds(kinesis):
    import time

    await create_streams(kinesis, "fleet-ui-", 1000)
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:
        started = time.monotonic()
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, StreamPickerScreen) and len(app.screen.streams) >= 1000,
            what="1,000 rows",
        )
        first_rows = time.monotonic() - started
        assert first_rows < 2.0, f"first rows took {first_rows:.2f} s"
        assert app.screen.query_one("#picker-list", DataTable).row_count >= 1000


async def test_a_stream_whose_reader_is_behind_is_in_trouble_with_the_readers_name(kinesis, make_stream, local_kinesis):
    from tests.consumers.reader_resources import ReaderFactory

    behind = await make_stream(shards=1)
    async with ReaderFactory(local_kinesis.endpoint_url) as made:
        function = await made.function()
        await made.mapping((await kinesis.describe_stream_summary(behind)).arn, function)
        await made.metric("AWS/Lambda", "IteratorAge", {"FunctionName": function}, 900_000, minutes_ago(2))
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: (
                isinstance(app.screen, StreamPickerScreen)
                and "in trouble" in str(app.screen.query_one("#picker-status").render())
            ),
            what="fleet rows with metrics",
        )
        table = app.screen.query_one("#picker-list", DataTable)
        trouble_cell = table.get_cell(behind, table.ordered_columns[1].key)
        assert f"reader lambda {function} 15 min behind" in trouble_cell.plain and "red" in str(trouble_cell.style)


async def test_q_in_the_fleet_picker_quits_as_everywhere_else(kinesis, make_stream):
    await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(
            pilot, lambda: isinstance(app.screen, StreamPickerScreen) and app.screen.streams, what="fleet rows"
        )
        await pilot.press("slash", "q")  # in the filter box q is a letter
        await pilot.pause()
        assert app.is_running and app.screen.query_one("#picker-filter").value == "q"
        await pilot.press("escape", "q")
        await pilot.pause()
        assert app.return_code is not None or not app.is_running, "q left the console running"
