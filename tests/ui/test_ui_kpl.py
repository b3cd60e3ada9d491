"""The console's KPL parts on the embedded local Kinesis: the Producer tab's Aggregate mode writes KPL
aggregates and verifies them; the Tail tab's key filter finds a key inside aggregates on any shard; the
Heat tab names the hot key inside aggregates."""

from __future__ import annotations

import pytest
from aws_kinesis_agg import deaggregator

from console.keyspace.hashkeys import md5_hash_key
from console.read.decoding import MAGIC
from console.ui.panels.heat import top_keys_text
from console.ui.screens.confirm import ConfirmByNameScreen
from tests.kpl import HOT_KEY, hot_aggregate
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


async def test_producer_aggregate_option_writes_kpl_aggregates_and_verifies(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("5")
        app.query_one("#producer-keys").value = "10"
        app.query_one("#producer-per-key").value = "30"
        app.query_one("#producer-mode").value = "aggregate"
        await pilot.click("#producer-start")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        panel = app.query_one("#producer-panel")
        await wait_until(pilot, lambda: panel.report is not None, timeout=40, what="verification report")
        assert panel.report.ok and panel.report.read_back == 300 and panel.report.out_of_order == 0
        await wait_until(
            pilot,
            lambda: "aggregated:" in str(app.query_one("#producer-status").render()),
            what="aggregation in the status line",
        )
    stored = []
    for shard in await kinesis.all_shards(name):
        iterator = await kinesis.get_shard_iterator(name, shard.shard_id, "TRIM_HORIZON")
        stored.extend((await kinesis.get_records(iterator))["Records"])
    assert stored and all(record["Data"][:4] == MAGIC for record in stored) and len(stored) < 300
    assert len(list(deaggregator.iter_deaggregate_records(stored, data_format="Boto3"))) == 300


async def test_tail_key_filter_finds_a_key_inside_aggregates_on_every_shard(kinesis, make_stream):
    name = await make_stream(shards=4)
    entries = [hot_aggregate(serial) for serial in range(12)]
    await kinesis.put_records(name, entries)
    shards = await kinesis.all_shards(name)
    landed = {s.shard_id for s in shards for e in entries if s.contains(md5_hash_key(e["PartitionKey"]))}
    assert len(landed) > 1
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("6")
        view = app.query_one("#tail-view")
        view.query_one("#tail-key").value = HOT_KEY
        await pilot.press("h")
        await wait_until(pilot, lambda: len(view.ring.records) >= 12 * 6, what="every record of the hot key")
        assert len(view.ring.records) == 12 * 6
        assert {r.partition_key for r in view.ring.records} == {HOT_KEY}
        assert {r.shard_id for r in view.ring.records} == landed


def test_heat_tab_text_marks_keys_inside_aggregates_and_the_split_basis():
    from console.heat.aggregates import split_page
    from console.heat.rates import ShardHeat, observations_from_records
    from console.topology.model import Shard

    shard = Shard.from_api(
        {
            "ShardId": "shardId-000000000000",
            "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": str(2**128 - 1)},
            "SequenceNumberRange": {"StartingSequenceNumber": "1"},
        }
    )
    heat = ShardHeat(shard)
    page = [
        {**hot_aggregate(serial), "SequenceNumber": str(serial), "ApproximateArrivalTimestamp": 1000.0}
        for serial in range(20)
    ]
    plain, aggregates = split_page(page)
    heat.observe(observations_from_records(plain), aggregates=aggregates)
    text = top_keys_text(heat.snapshot(1000.0, 1001.0), "orders").plain
    assert f"{HOT_KEY}  120 records  60%  (aggregated)" in text
    assert "200.0 user rec/s in 20.0 Kinesis rec/s" in text
    assert "split at where its aggregates land" in text and "a split moves whole aggregates" in text


async def test_heat_tab_on_80x24_scrolls_by_keyboard_to_the_aggregated_keys(kinesis, make_stream):
    """On a short terminal the selected shard's keys sit below the map and the metrics: PgDn reaches them."""
    import asyncio

    from textual.containers import VerticalScroll

    name = await make_stream(shards=8)
    app = RecordingApp(kinesis, stream=name, interval=60)

    async def traffic() -> None:
        serial = 0
        while True:
            await kinesis.put_records(name, [hot_aggregate(serial), hot_aggregate(serial + 1)])
            serial += 2
            await asyncio.sleep(0.3)

    writer = asyncio.create_task(traffic())
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.refreshed)
            await pilot.press("7")
            keys = app.query_one("#heat-keys")
            await wait_until(pilot, lambda: "(aggregated)" in str(keys.render()), timeout=40, what="aggregated keys")
            view = app.query_one("#heat-panel").query_one(VerticalScroll)
            assert view.max_scroll_y > 0 and view.scroll_y == 0
            assert keys.region.y >= view.region.bottom  # below what a 24-line terminal shows
            for _ in range(5):
                await pilot.press("pagedown")
                await pilot.pause()
            assert view.scroll_y > 0
            assert keys.region.y < view.region.bottom
    finally:
        writer.cancel()
