"""The Heat tab keeps its history across tab switches: what it counted stays, and what arrived while
it was hidden is read and counted when it is shown again."""

from __future__ import annotations

from tests.ui.test_ui_console import RecordingApp, wait_until
from tests.ui.test_ui_panels import put_json


def counted(panel) -> int:
    return sum(shard.records for shard in panel.snapshot.shards) if panel.snapshot is not None else 0


async def test_history_survives_leaving_the_tab_and_counts_what_came_meanwhile(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("7")
        panel = app.query_one("#heat-panel")
        await wait_until(pilot, lambda: panel.snapshot is not None, what="first heat snapshot")
        await put_json(kinesis, name, 300)
        await wait_until(pilot, lambda: counted(panel) >= 300, timeout=20, what="the first records counted")
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: not [w for w in app.workers if w.group == "heat" and not w.is_finished],
            what="sampler stopped",
        )
        await put_json(kinesis, name, 200)  # while the tab is hidden
        await pilot.press("7")
        await wait_until(
            pilot, lambda: counted(panel) >= 500, timeout=20, what="the history kept and the hidden records counted"
        )
        assert sum(sum(shard.series) for shard in panel.snapshot.shards) >= 500
