"""What the Producer tab shows of a run: the verdict as styled text (never its markup), Pace as "off"
when the run is not paced, a cancelled start beside an empty progress bar, and checkboxes whose on
and off read differently."""

from __future__ import annotations

import re

from textual.widgets import Checkbox, DataTable, ProgressBar

from console.ui.screens.confirm import ConfirmByNameScreen
from tests.ui.test_ui_console import RecordingApp, wait_until


async def test_a_run_then_a_cancelled_start(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        panel = app.query_one("#producer-panel")
        app.query_one("#producer-keys").value = "10"
        app.query_one("#producer-per-key").value = "2"
        app.query_one("#producer-pace", Checkbox).value = False
        await pilot.click("#producer-start")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: panel.report is not None, timeout=40, what="verification report")
        report = app.query_one("#producer-report").render()
        assert str(report).startswith("VERIFIED") and "[" not in str(report)
        assert any("green" in str(span.style) for span in report.spans)
        shards = app.query_one("#producer-shards", DataTable)
        assert shards.row_count and {
            str(row[-1]) for row in (shards.get_row_at(i) for i in range(shards.row_count))
        } == {"off"}
        assert app.query_one("#producer-progress", ProgressBar).percentage == 1.0

        await pilot.click("#producer-start")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        await pilot.press("escape")
        await wait_until(pilot, lambda: "nothing was written" in str(app.query_one("#producer-status").render()))
        assert app.query_one("#producer-progress", ProgressBar).percentage == 0.0


async def test_checked_and_unchecked_boxes_look_different(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        box = app.query_one("#producer-pace", Checkbox)
        looks = {}
        for value in (True, False):
            box.value = value
            await pilot.pause()
            style = box.get_component_rich_style("toggle--button")
            looks[value] = (style.color, style.bgcolor, style.bold)
        assert looks[True] != looks[False]
        assert looks[False][0] == looks[False][1]  # off: the mark is not drawn at all
        assert looks[True][0] != looks[True][1]


async def test_a_stopped_run_says_stopped_after_its_last_progress(kinesis, make_stream):
    # The run reports its progress one last time as it ends: that line must not replace "stopped".
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        app.query_one("#producer-keys").value = "20000"
        app.query_one("#producer-pace", Checkbox).value = False
        app.query_one("#producer-verify", Checkbox).value = False
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        progress = app.query_one("#producer-progress", ProgressBar)
        await wait_until(pilot, lambda: (progress.progress or 0) > 0, timeout=30, what="the first acknowledgements")
        await pilot.press("ctrl+t")
        await wait_until(
            pilot, lambda: not [w for w in app.workers if w.group == "producer" and w.is_running], what="the run to end"
        )
        await pilot.pause(0.2)
        status = str(app.query_one("#producer-status").render())
        assert status.startswith("stopped"), status
        assert 0 < (progress.progress or 0) < progress.total
        # ... with the counts it reached: a stopped run says how far it got
        assert re.search(r"\d[\d,]*/200,000 acknowledged", status), status
