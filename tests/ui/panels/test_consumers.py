"""The Consumers tab, driven with Pilot on the embedded local Kinesis: a real KCL lease table is read,
its leases shown with their lag, the shard table gains a Lag column, a bad table is one red line,
lease polls never run alongside shard polls, and the split preview shows the barrier and holds a split
back, until the force key, while consumers still read the parents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from textual.widgets import DataTable, Static

from console.reshard.plan import midpoint
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import PromptScreen
from console.ui.screens.reshard import ReshardPreviewScreen
from console.ui.widgets.shard_columns import LAG_COLUMN
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.heat.test_capacity import put_metric
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


async def leased_stream(
    kinesis, make_stream, endpoint_url: str, *, shards: int, records: int, leases=None
) -> tuple[str, list, str]:
    """A stream with `records` records on its first shard and a lease table (one lease per shard
    unless `leases`, a function of the shards, says otherwise)."""
    name = await make_stream(shards=shards)
    listed = await kinesis.all_shards(name)
    for i in range(records):
        await kinesis.put_record(name, b"\x1b[2Jrecord", f"k{i}", explicit_hash_key=listed[0].starting_hash_key)
    async with dynamodb(endpoint_url) as client:
        table = await create_lease_table(client)
        await put_items(client, table, leases(listed) if leases else [kcl_lease(s.shard_id) for s in listed])
    return name, listed, table


async def watch_lease_table(pilot, app, table: str, *, rows: int) -> DataTable:
    """Open the Consumers tab, enter the lease table, wait for its rows."""
    await wait_until(pilot, lambda: app.refreshed, what="first poll")
    await pilot.press("8")
    box = app.query_one("#consumers-table")
    assert app.focused is box
    box.value = table
    await pilot.press("enter", "enter")  # the first enter takes the offered field (the focus model), the second submits
    leases = app.query_one("#consumers-leases", DataTable)
    await wait_until(pilot, lambda: leases.row_count == rows, what="lease rows")
    return leases


async def test_lease_table_in_the_consumers_tab(kinesis, make_stream, local_kinesis):
    name, shards, table = await leased_stream(
        kinesis,
        make_stream,
        local_kinesis.endpoint_url,
        shards=2,
        records=4,
        leases=lambda listed: [
            kcl_lease(listed[0].shard_id, owner="worker-\x1b[31mred"),
            kcl_lease("shardId-000000000099"),
        ],
    )
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 36)) as pilot:
        leases = await watch_lease_table(pilot, app, table, rows=2)
        box = app.query_one("#consumers-table")
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
        await wait_until(
            pilot, lambda: "not found" in str(app.query_one("#consumers-status", Static).render()), what="error line"
        )


class OverlapProbe:
    """The real backend, noting when a shard poll (ListShards) and a lease poll (Scan, GetRecords)
    are in flight at the same time."""

    SHARD_POLL = frozenset({"all_shards"})
    LEASE_POLL = frozenset({"scan_table", "get_records", "get_shard_iterator", "describe_table"})

    def __init__(self, backend) -> None:
        self._backend = backend
        self.in_flight = {"shard": 0, "lease": 0}
        self.calls = {"shard": 0, "lease": 0}
        self.overlaps = 0

    def __getattr__(self, name):
        value = getattr(self._backend, name)
        kind = "shard" if name in self.SHARD_POLL else "lease" if name in self.LEASE_POLL else None
        if kind is None:
            return value
        other = "lease" if kind == "shard" else "shard"

        async def call(*args, **kwargs):
            self.calls[kind] += 1
            self.in_flight[kind] += 1
            if self.in_flight[other]:
                self.overlaps += 1
            try:
                return await value(*args, **kwargs)
            finally:
                self.in_flight[kind] -= 1

        return call


async def test_lease_polls_never_overlap_shard_polls_and_metrics_show(kinesis, make_stream, local_kinesis):
    name, _shards, table = await leased_stream(kinesis, make_stream, local_kinesis.endpoint_url, shards=3, records=1)
    await put_metric(local_kinesis.endpoint_url, name, "IncomingRecords", 600, datetime.now(UTC) - timedelta(minutes=2))
    probe = OverlapProbe(kinesis)
    app = RecordingApp(probe, stream=name, interval=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        await watch_lease_table(pilot, app, table, rows=3)
        await wait_until(
            pilot,
            lambda: probe.calls["lease"] >= 40 and len(app.refreshed) >= 8,
            timeout=30,
            what="several polls of each kind",
        )
        metrics = str(app.query_one("#consumers-metrics", Static).render())
        assert "in records" in metrics and "peak 10r/s" in metrics  # 600 in the minute: 10 records/s
    assert probe.overlaps == 0


async def test_split_preview_shows_the_barrier_when_a_lease_table_is_open(
    kinesis, make_stream, local_kinesis, tmp_path, monkeypatch
):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    name, shards, table = await leased_stream(kinesis, make_stream, local_kinesis.endpoint_url, shards=2, records=3)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await watch_lease_table(pilot, app, table, rows=2)
        await pilot.press("1")
        app.select_shard(shards[0].shard_id)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="split point prompt")
        await pilot.press("enter")  # midpoint
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="preview")
        text = str(app.screen.query_one("#preview-consumers", Static).render())
        assert "Lag this change puts behind the barrier" in text and f"{shards[0].shard_id}: 3 records" in text
        assert app.screen.query_one("#preview-consumers").has_class("-behind")
        await pilot.press("escape")
    assert len(await kinesis.all_shards(name)) == 2  # cancelled: nothing called


async def test_a_split_behind_an_unfinished_parent_applies_only_after_the_force_key(
    kinesis, make_stream, local_kinesis, tmp_path, monkeypatch
):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    name = await make_stream(shards=2)
    parent, other = await kinesis.all_shards(name)
    for i in range(3):  # records the parent's consumer has not read yet
        await kinesis.put_record(name, b"record", f"k{i}", explicit_hash_key=parent.starting_hash_key)
    await kinesis.split_shard(name, parent.shard_id, midpoint(parent))
    await kinesis.wait_for_active(name)
    child = next(s for s in await kinesis.all_shards(name) if s.parent_shard_id == parent.shard_id)
    async with dynamodb(local_kinesis.endpoint_url) as client:
        table = await create_lease_table(client)
        # The KCL still reads the closed parent (its checkpoint is not SHARD_END): its children wait.
        await put_items(client, table, [kcl_lease(parent.shard_id), kcl_lease(other.shard_id)])
    app = RecordingApp(kinesis, stream=name, interval=60)

    async def preview_of_child_split() -> ReshardPreviewScreen:
        await pilot.press("1")
        app.select_shard(child.shard_id)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="split point prompt")
        await pilot.press("enter")  # midpoint
        await wait_until(pilot, lambda: isinstance(app.screen, ReshardPreviewScreen), what="preview")
        return app.screen

    async with app.run_test(size=(120, 40)) as pilot:
        await watch_lease_table(pilot, app, table, rows=2)
        preview = await preview_of_child_split()
        consumers = str(preview.query_one("#preview-consumers", Static).render())
        assert "Parents not yet finished" in consumers and parent.shard_id in consumers
        held_back = str(preview.query_one("#preview-held-back", Static).render())
        assert "still wait for unfinished parents" in held_back and "Press f to apply anyway" in held_back
        assert not preview.query("#proceed")
        # The preview focuses its button once mounted, a moment after it shows.
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "cancel", what="Cancel focused")
        preview.action_proceed()  # what Enter would have done with no consumers behind: nothing now
        assert app.screen is preview
        await pilot.press("enter")  # on Cancel
        await wait_until(pilot, lambda: not isinstance(app.screen, ReshardPreviewScreen), what="preview closed")
        assert not isinstance(app.screen, ConfirmByNameScreen)
        assert next(s for s in await kinesis.all_shards(name) if s.shard_id == child.shard_id).is_open

        await preview_of_child_split()
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        assert "APPLY ANYWAY" in str(app.screen.query_one("#confirm-action", Static).render())
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: not app.table.shard(child.shard_id).is_open, timeout=30, what="the split in the table"
        )
    grandchildren = [s for s in await kinesis.all_shards(name) if s.parent_shard_id == child.shard_id]
    assert len(grandchildren) == 2


async def test_workers_section_shows_each_worker_the_leader_and_flags(kinesis, make_stream, local_kinesis):
    import time

    from tests.consumers.kcl_tables import (
        create_coordinator_table,
        create_worker_metrics_table,
        leader_lock,
        migration_state,
        worker_metrics,
    )

    name, _shards, table = await leased_stream(
        kinesis,
        make_stream,
        local_kinesis.endpoint_url,
        shards=2,
        records=0,
        leases=lambda listed: [
            kcl_lease(listed[0].shard_id, owner="w-a", version=3, throughput_kbps=3.0),
            kcl_lease(listed[1].shard_id, owner="w-\x1b[31mb", version=3, throughput_kbps=4.0),
        ],
    )
    async with dynamodb(local_kinesis.endpoint_url) as client:
        metrics_table = await create_worker_metrics_table(client, table)
        coordinator = await create_coordinator_table(client, table)
        await put_items(
            client,
            metrics_table,
            [
                worker_metrics("w-a", last_update=int(time.time()), cpu=(41.0,)),
                worker_metrics("w-\x1b[31mb", last_update=int(time.time()) - 900),
            ],
        )
        await put_items(client, coordinator, [leader_lock("w-a"), migration_state("CLIENT_VERSION_3X")])
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(140, 44)) as pilot:
        await watch_lease_table(pilot, app, table, rows=2)
        workers = app.query_one("#consumers-workers", DataTable)
        await wait_until(pilot, lambda: workers.row_count == 2, what="worker rows")
        a = [str(cell) for cell in workers.get_row("w-a")]
        b = [str(cell) for cell in workers.get_row("w-\x1b[31mb")]
        assert a == ["w-a", "1", "1", "3.0", "41%", a[5], "leader", ""]
        assert b[0] == "w-\\x1b[31mb" and "! metrics-stale" in b[7] and b[6] == ""
        line = str(app.query_one("#consumers-workers-status", Static).render())
        assert "layout three-tables" in line and "leader w-a" in line and "migration state CLIENT_VERSION_3X" in line


async def test_workers_section_measures_kcl_2x_throughput_and_names_its_source(kinesis, make_stream, local_kinesis):
    name, _shards, table = await leased_stream(
        kinesis,
        make_stream,
        local_kinesis.endpoint_url,
        shards=2,
        records=30,
        leases=lambda listed: [kcl_lease(listed[0].shard_id, owner="w-a"), kcl_lease(listed[1].shard_id, owner="w-b")],
    )
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(140, 44)) as pilot:
        await watch_lease_table(pilot, app, table, rows=2)
        workers = app.query_one("#consumers-workers", DataTable)
        await wait_until(pilot, lambda: workers.row_count == 2, what="worker rows")
        # 30 records of 10 bytes and a 2- or 3-byte key in the last minute: about 0.006 KB/s.
        assert [str(cell) for cell in workers.get_row("w-a")][3] == "0.0"
        line = str(app.query_one("#consumers-workers-status", Static).render())
        assert (
            "layout kcl-2.x" in line and "KB/s measured from sampled records (last 60 s read back) for 2 shards" in line
        )


async def test_workers_section_keeps_its_rows_on_an_80x24_terminal(kinesis, make_stream, local_kinesis):
    """On a short terminal the stream's metric lines (the Heat tab has them too) give way, so the
    lease table and the Workers section each show rows, not just their headings."""
    name, _shards, table = await leased_stream(
        kinesis,
        make_stream,
        local_kinesis.endpoint_url,
        shards=2,
        records=0,
        leases=lambda listed: [kcl_lease(listed[0].shard_id, owner="w-a"), kcl_lease(listed[1].shard_id, owner="w-b")],
    )
    await put_metric(local_kinesis.endpoint_url, name, "IncomingRecords", 600, datetime.now(UTC) - timedelta(minutes=2))
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(80, 24)) as pilot:
        leases = await watch_lease_table(pilot, app, table, rows=2)
        workers = app.query_one("#consumers-workers", DataTable)
        await wait_until(pilot, lambda: workers.row_count == 2, what="worker rows")
        metrics = app.query_one("#consumers-metrics", Static)
        await wait_until(pilot, lambda: "in records" in str(metrics.render()), what="the metric lines")
        await pilot.pause()
        assert workers.region.height >= 3, f"workers shown in {workers.region.height} line(s)"
        assert leases.region.height >= 2, f"leases shown in {leases.region.height} line(s)"
