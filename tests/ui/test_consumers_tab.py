"""The Consumers tab, driven with Pilot on the embedded local Kinesis: a real KCL lease table is read,
its leases shown with their lag, the shard table gains a Lag column, and a bad table is one red line."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from console.ui.widgets.shard_table import LAG_COLUMN
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


async def test_lease_table_in_the_consumers_tab(kinesis, make_stream, local_kinesis):
    name = await make_stream(shards=2)
    shards = await kinesis.all_shards(name)
    for i in range(4):
        await kinesis.put_record(name, b"\x1b[2Jrecord", f"k{i}", explicit_hash_key=shards[0].starting_hash_key)
    async with dynamodb(local_kinesis.endpoint_url) as client:
        table = await create_lease_table(client)
        await put_items(client, table, [kcl_lease(shards[0].shard_id, owner="worker-\x1b[31mred"),
                                        kcl_lease("shardId-000000000099")])
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("8")
        box = app.query_one("#consumers-table")
        assert app.focused is box
        box.value = table
        await pilot.press("enter")
        leases = app.query_one("#consumers-leases", DataTable)
        await wait_until(pilot, lambda: leases.row_count == 2, what="lease rows")
        row = [str(cell) for cell in leases.get_row(shards[0].shard_id)]
        assert row[:3] == [shards[0].shard_id, "owned", "worker-\\x1b[31mred"]  # escaped, not a colour
        assert row[4] == "4"
        assert "no such shard" in str(leases.get_row("shardId-000000000099")[6])
        status = str(app.query_one("#consumers-status", Static).render())
        assert f"no lease: {shards[1].shard_id}" in status and "1 marked !" in status
        assert LAG_COLUMN in app.table._visible_columns()
        box.value = "not-a-table"
        app.query_one("#consumers-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: "not found" in str(app.query_one("#consumers-status", Static).render()),
                         what="error line")
