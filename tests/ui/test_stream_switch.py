"""Opening another stream (`:stream NAME`, or the fleet's `p`) leaves nothing of the stream before on
any tab: the Consumers tab's leases and status, the Tail tab's records and figures, the Producer tab's
run and its shards. Each panel resets itself and stops its work on the old stream."""

from __future__ import annotations

import pytest
from textual.widgets import Checkbox, DataTable, Input, Static

from console.ui.screens.confirm import ConfirmByNameScreen
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


def text_of(app, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def running_workers(app, selector: str) -> list:
    panel = app.query_one(selector)
    return [worker for worker in app.workers if worker.node is panel and not worker.is_finished]


async def test_each_tab_shows_nothing_of_the_stream_before_after_a_switch(kinesis, make_stream, local_kinesis):
    first = await make_stream(shards=3, prefix="first")
    second = await make_stream(shards=1, prefix="second")
    first_shards = await kinesis.all_shards(first)
    for i in range(6):
        await kinesis.put_record(first, b"from-the-first-stream", f"k{i}")
    async with dynamodb(local_kinesis.endpoint_url) as client:
        lease_table = await create_lease_table(client)
        await put_items(client, lease_table, [kcl_lease(shard.shard_id) for shard in first_shards])

    app = RecordingApp(kinesis, stream=first, interval=60)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        # Consumers: the first stream's lease table, polled.
        await pilot.press("8")
        app.query_one("#consumers-table", Input).value = lease_table
        await pilot.press("enter", "enter")
        leases = app.query_one("#consumers-leases", DataTable)
        await wait_until(pilot, lambda: leases.row_count == 3, what="the first stream's leases")
        # Tail: the first stream's records.
        await pilot.press("6", "h")
        tail = app.query_one("#tail-view")
        await wait_until(pilot, lambda: len(tail.ring.records) == 6, what="the first stream's records")
        # Producer: a verified run over the first stream's three shards.
        await pilot.press("5")
        producer = app.query_one("#producer-panel")
        app.query_one("#producer-keys", Input).value = "6"
        app.query_one("#producer-per-key", Input).value = "1"
        app.query_one("#producer-pace", Checkbox).value = False
        await pilot.click("#producer-start")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the confirm dialog")
        app.screen.query_one(Input).value = first
        await pilot.press("enter")
        await wait_until(pilot, lambda: producer.report is not None, timeout=40, what="the verification report")
        assert app.query_one("#producer-shards", DataTable).row_count

        # Another stream, through the command line.
        await pilot.press("escape", "escape", "colon", *f"stream {second}", "enter")
        await wait_until(
            pilot,
            lambda: any(refreshed.view.summary.name == second for refreshed in app.refreshed),
            what="the second stream's first poll",
        )
        await pilot.pause(0.2)

        assert leases.row_count == 0
        assert app.query_one("#consumers-efo", DataTable).row_count == 0
        assert app.query_one("#consumers-table", Input).value == ""
        assert lease_table not in text_of(app, "#consumers-status")
        assert not running_workers(app, "#consumers-panel")

        assert not running_workers(app, "#tail-view") and not running_workers(app, "#producer-panel")
        assert not tail.ring.records and not tail.held and not tail.running
        assert tail.received == 0
        assert "from-the-first-stream" not in text_of(app, "#tail-lag")
        assert text_of(app, "#tail-status").split(" · ")[2].startswith("0/")

        assert producer.report is None
        assert app.query_one("#producer-shards", DataTable).row_count == 0
        assert app.query_one("#producer-problems", DataTable).row_count == 0
        assert text_of(app, "#producer-report") == ""
        status = text_of(app, "#producer-status")
        assert "run " not in status and "done" not in status
        for shard in first_shards[1:]:  # the second stream has shardId-000000000000 only
            assert shard.shard_id[-4:] not in status
