"""The fleet screen on the embedded server: rows from the stream list at once, CloudWatch's metric
data (put over HTTP) filling them, a stream in trouble red with its reason and first, `/` filtering,
enter opening the stream."""

from __future__ import annotations

import pytest

from console.heat.fleet import FLEET_READ_COST
from console.ui.screens.stream_picker import COLUMNS, StreamPickerScreen
from console.ui.widgets.fleet_table import FleetTable
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
        assert FLEET_READ_COST in str(screen.query_one("#picker-status").render()), "what its own reading costs"
        table = screen.query_one("#picker-list", FleetTable)
        assert "write throttled: 12" in table.line(throttled).cells[1] and table.line(throttled).trouble
        assert table.line(quiet).cells[1] == "" and not table.line(quiet).trouble
        trouble, calm = drawn(table, throttled), drawn(table, quiet)
        assert trouble.bold and trouble.color != calm.color and not calm.bold
        await pilot.press("slash")
        for key in quiet:
            await pilot.press(key if key != "-" else "minus")
        await wait_until(pilot, lambda: [f.name for f in screen.streams] == [quiet], what="filtered rows")
        await pilot.press("enter")  # keeps the filter, back to the table
        await pilot.press("enter")  # opens the one row left
        await wait_until(pilot, lambda: app.refreshed, what="first poll of the chosen stream")
        assert app.stream == quiet and app.table.row_count == 1


def drawn(table: FleetTable, key: str):
    """The style the table draws a stream's line in (its first segment, the cursor's line or not)."""
    row = table.keys.index(key)
    return next(iter(table.render_line(row - round(table.scroll_y) + 1))).style


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
        table = screen.query_one("#picker-list", FleetTable)
        assert table.cursor_row == 0 and table.cursor_key == screen.streams[0].name != calm
        await pilot.press("down")  # a row the user chose is followed through the next re-sort
        chosen = table.cursor_key
        await pilot.press("s", "s", "s", "s")  # name, incoming, age, back to trouble
        assert table.cursor_key == chosen
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
        assert app.screen.query_one("#picker-list", FleetTable).row_count >= 1000


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
        table = app.screen.query_one("#picker-list", FleetTable)
        assert f"reader lambda {function} 15 min behind" in table.line(behind).cells[1] and table.line(behind).trouble


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


async def test_j_and_k_move_in_the_fleet_and_are_letters_in_its_filter(kinesis, make_stream):
    for _ in range(3):
        await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=None, interval=60)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(
            pilot, lambda: isinstance(app.screen, StreamPickerScreen) and len(app.screen.streams) >= 3, what="rows"
        )
        # Every row in (metrics read, counts described): rows re-sorting under the cursor would move it.
        await wait_until(
            pilot,
            lambda: (
                "in trouble" in str(app.screen.query_one("#picker-status").render())
                and all(facts.open_shards is not None for facts in app.screen.streams)
            ),
            what="the fleet loaded",
        )
        table = app.screen.query_one("#picker-list", FleetTable)
        table.move_cursor(0)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("slash", "j", "k")  # letters in the filter box (no stream matches "jk")
        assert app.screen.query_one("#picker-filter").value == "jk" and table.row_count == 0
        await pilot.press("escape", "j")  # the filter cleared, back in the table
        assert table.row_count >= 3 and table.cursor_row == 1


def fleet_cells_filled(app) -> bool:
    """Every row with its rates (CloudWatch) and its shard and EFO counts (DescribeStreamSummary)."""
    table = app.screen.query_one("#picker-list", FleetTable)
    wanted = [2, COLUMNS.index("Shards"), COLUMNS.index("EFO")]
    return all(table.line(key).cells[column] != "-" for key in table.keys for column in wanted)


async def test_two_hundred_streams_fill_every_column_while_keys_answer_at_once(local_kinesis):
    """200 one-shard streams (a region of their own) with a minute of traffic each: every row's rates,
    shard and EFO counts are in within 10 s of the first rows, and ↓ moves the cursor at once (a
    loose bound for two shared cores) while the fleet fills and after."""
    import asyncio
    import statistics
    import time

    from textual import events

    from console.backend import BackendConfig, open_backend

    region = "ap-northeast-2"
    config = BackendConfig(kind="local", region=region, endpoint_url=local_kinesis.endpoint_url)
    async with open_backend(config) as backend:
        names = await create_streams(backend, "fleet-keys-", 200)
        await put_points(
            local_kinesis.endpoint_url,
            [(name, "IncomingRecords", float(i), minutes_ago(2)) for i, name in enumerate(names)],
            region=region,
        )
        app = RecordingApp(backend, stream=None, interval=60)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, StreamPickerScreen) and len(app.screen.streams) >= 200,
                what="200 rows",
            )
            first_rows = time.monotonic()
            await pilot.pause(0.2)  # the screen's first frame drawn: the console has started
            table = app.screen.query_one("#picker-list", FleetTable)
            latencies: list[float] = []

            async def down() -> None:
                """The key from the terminal's driver to the cursor moved (the app's own loop, timed)."""
                before = table.cursor_row
                key = "down" if before < table.row_count - 1 else "home"
                started = time.monotonic()
                app._driver.send_message(events.Key(key, None))
                while table.cursor_row == before and time.monotonic() - started < 30:
                    await asyncio.sleep(0.001)
                latencies.append(time.monotonic() - started)
                await pilot.pause(0.05)

            while not fleet_cells_filled(app) and time.monotonic() - first_rows < 30:
                await down()
            filled = time.monotonic() - first_rows
            for _ in range(10):
                await down()
    unfilled = [table.line(key).cells for key in table.keys if "-" in table.line(key).cells[2:10]][:3]
    assert filled < 10.0, f"every column filled {filled:.1f} s after the first rows; not yet: {unfilled}"
    # The median: what every key costs; the worst only bounded, a loaded machine's scheduler adds to it.
    assert statistics.median(latencies) < 0.1 and max(latencies) < 1.0, f"↓ took {latencies}"


@pytest.mark.timeout(240)
async def test_refreshing_the_fleet_over_and_over_holds_its_memory_flat(local_kinesis):
    """200 streams refreshed every 0.2 s: ten refreshes after the first few leave the memory the app
    holds where it was, give or take one refresh's rows in flight (the DataTable the fleet had kept
    each refresh's rendered cells: ~1 MiB more a refresh)."""
    import gc
    import tracemalloc

    from textual.app import App

    from console.backend import BackendConfig, open_backend
    from tests.faultproxy import FaultProxy

    region = "ap-northeast-2"
    async with open_backend(
        BackendConfig(kind="local", region=region, endpoint_url=local_kinesis.endpoint_url)
    ) as backend:
        names = await create_streams(backend, "fleet-keys-", 200)
    await put_points(
        local_kinesis.endpoint_url,
        [(name, "IncomingBytes", 1000.0 * i, minutes_ago(2)) for i, name in enumerate(names)],
        region=region,
    )
    async with FaultProxy(int(local_kinesis.endpoint_url.rsplit(":", 1)[1])) as proxy:
        config = BackendConfig(kind="endpoint", region=region, endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as source:

            class FleetApp(App):
                def on_mount(self) -> None:
                    self.push_screen(StreamPickerScreen(source, refresh_every=0.2))

            def refreshes() -> int:  # 200 streams x 5 metrics: two GetMetricData calls a refresh
                return proxy.stats["pass:GetMetricData"] // 2

            app = FleetApp()
            async with app.run_test(size=(160, 40)) as pilot:
                await wait_until(pilot, lambda: refreshes() >= 3, timeout=60, what="three refreshes")
                tracemalloc.start()
                try:
                    # Measured from a few refreshes after tracing starts: what a refresh allocates the
                    # first time it runs (caches filled once) is not growth.
                    start = refreshes()
                    await wait_until(pilot, lambda: refreshes() >= start + 3, timeout=60, what="3 refreshes")
                    gc.collect()
                    held = tracemalloc.get_traced_memory()[0]
                    start = refreshes()
                    await wait_until(pilot, lambda: refreshes() >= start + 10, timeout=90, what="10 refreshes")
                    gc.collect()
                    grown = tracemalloc.get_traced_memory()[0] - held
                finally:
                    tracemalloc.stop()
    assert grown < 2 * 1024 * 1024, f"10 refreshes left {grown / 1024:.0f} KiB more held"


async def test_a_metrics_pass_ends_with_the_shard_counts_described_while_it_ran(local_kinesis):
    """A refresh of the metrics is held at the transport (GetMetricData stalled); meanwhile the stream
    goes from one shard to two and `r` describes it again. When the held refresh ends, the row shows
    two shards: its rows take the newest facts, not the ones the refresh began with."""
    from console.backend import BackendConfig, open_backend
    from tests.faultproxy import FaultProxy, Faults

    region = "eu-north-1"
    async with open_backend(
        BackendConfig(kind="local", region=region, endpoint_url=local_kinesis.endpoint_url)
    ) as backend:
        (name,) = await create_streams(backend, "fleet-race-", 1)
        await put_points(local_kinesis.endpoint_url, [(name, "IncomingRecords", 60.0, minutes_ago(2))], region=region)
        async with FaultProxy(int(local_kinesis.endpoint_url.rsplit(":", 1)[1])) as proxy:
            config = BackendConfig(kind="endpoint", region=region, endpoint_url=proxy.endpoint_url)
            async with open_backend(config) as source:
                app = RecordingApp(source, stream=None, interval=60)
                async with app.run_test(size=(160, 40)) as pilot:
                    await wait_until(pilot, lambda: isinstance(app.screen, StreamPickerScreen), what="the fleet")
                    screen = app.screen
                    table = screen.query_one("#picker-list", FleetTable)
                    shards = COLUMNS.index("Shards")

                    def shown() -> str:
                        return table.line(name).cells[shards] if name in table.keys else ""

                    def refreshed() -> bool:
                        return "in trouble" in str(screen.query_one("#picker-status").render())

                    await wait_until(pilot, lambda: refreshed() and shown() == "1", what="the fleet loaded")
                    proxy.faults = Faults(stall=1.0, stall_seconds=4.0, operations=frozenset({"GetMetricData"}))
                    screen._refresh_metrics()  # the minute's refresh, now
                    await wait_until(pilot, lambda: proxy.stats["stall:GetMetricData"] >= 1, what="the refresh held")
                    await backend.update_shard_count(name, 2)
                    await pilot.press("r")  # the list again, each stream described while the refresh is held
                    await wait_until(pilot, lambda: shown() == "2", what="two shards described")
                    assert not refreshed(), "the refresh was not held until the stream was described again"
                    await wait_until(pilot, refreshed, timeout=30, what="the held refresh ended")
                    await pilot.pause(0.1)
                    assert shown() == "2", f"the held refresh left the row at {shown()!r} shards"
