"""The Heat and Tail tabs say what kconsole's own reads take of each shard's shared GetRecords budget, and,
when its calls are throttled, that it backs off and that enhanced fan-out would not."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from textual.widgets import Static

from console.backend import BackendConfig, open_backend
from console.ui.panels.tail import TailView
from tests.faultproxy import FaultProxy, Faults
from tests.ui.panels.test_tail_windows import ViewApp
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(90)


async def test_the_heat_header_shows_kconsoles_own_share(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=600, read_share=0.4)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, timeout=30)
        await pilot.press("7")
        panel = await app.lazy_pane("heat").built()
        header = lambda: str(panel.query_one("#heat-total", Static).render())
        await wait_until(pilot, lambda: "kconsole reads" in header(), timeout=20, what="the share line")
        line = next(line for line in header().splitlines() if "kconsole reads" in line)
        assert "calls/s" in line and "MiB/s a shard" in line and "of the shared budget" in line
        assert "(read share 0.4)" in line
        assert "throttled" not in line


async def test_the_tail_tab_backs_off_when_throttled_and_offers_efo(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    for number in range(3):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), "k")
    faults = Faults(throttle=1.0, operations=frozenset({"GetRecords"}), limit=1)
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults) as proxy:
        config = BackendConfig(
            kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url, max_attempts=1
        )  # no retry: the reader hears it
        async with open_backend(config) as through_proxy:
            app = ViewApp(through_proxy, stream)
            app.read_share = 0.2
            async with app.run_test(size=(160, 24)) as pilot:
                view = app.query_one(TailView)
                view.query_one("#tail-from").value = "trim-horizon"
                view.start_reading()
                await wait_until(pilot, lambda: len(view.ring.records) == 3, timeout=30, what="the records")
                await pilot.pause(0.3)
                said = str(view.query_one("#tail-lag").render())
    assert proxy.stats["throttle:GetRecords"] == 1
    assert "kconsole reads" in said and "(read share 0.2)" in said
    assert "throttled: kconsole reads less; e reads with EFO, without sharing" in said


async def test_the_heat_tab_switches_to_efo_after_the_price_and_counts_pushed_events(kinesis, make_stream):
    from console.read.efo import is_temporary_consumer
    from console.ui.screens.confirm import ConfirmByNameScreen

    name = await make_stream(shards=64)
    arn = (await kinesis.describe_stream_summary(name)).arn
    app = RecordingApp(kinesis, stream=name, interval=600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, timeout=30)
        await pilot.press("7")
        panel = await app.lazy_pane("heat").built()
        header = lambda: str(panel.query_one("#heat-total", Static).render())
        await wait_until(pilot, lambda: "kconsole reads 1" in header() or "calls/s" in header(), timeout=30)
        panel.focus()
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the price, to confirm")
        assert "$0.015 per consumer-shard hour (64 shards: $0.960" in str(
            app.screen.query_one("#confirm-action").render()
        )
        app.screen.query_one("#confirm-input").value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: "with enhanced fan-out" in header(), timeout=60, what="the EFO line")
        [consumer] = [c.name for c in await kinesis.list_stream_consumers(arn)]
        assert is_temporary_consumer(consumer)
        await pilot.pause(2.0)  # every shard subscribed from LATEST
        entries = [{"Data": b"{}", "PartitionKey": f"key-{n}"} for n in range(200)]
        assert not (await kinesis.put_records(name, entries)).get("FailedRecordCount")
        counted = lambda: panel.snapshot is not None and sum(s.records for s in panel.snapshot.shards)
        await wait_until(pilot, lambda: counted() == 200, timeout=30, what="the pushed records counted")
        assert "nothing of the shards' shared 5 GetRecords/s" in header()

        await pilot.press("f")  # back to GetRecords: the temporary consumer goes

        async def consumers_left() -> list:
            return [c for c in await kinesis.list_stream_consumers(arn) if not c.deleting]

        for _ in range(100):
            if not await consumers_left():
                break
            await pilot.pause(0.1)
        assert await consumers_left() == [], "deregistered when the tab went back to GetRecords"
        await wait_until(pilot, lambda: "calls/s" in header(), timeout=20, what="the GetRecords share line")


async def test_the_tail_tab_reads_less_when_the_streams_readers_are_throttled(kinesis, make_stream, local_kinesis):
    from console.heat.capacity import stream_metrics
    from console.ui.source import CloudWatchReading
    from tests.commands.test_cli_read_share import put_read_throttles

    stream = await make_stream(shards=1)
    await put_read_throttles(local_kinesis.endpoint_url, stream, 30)
    app = ViewApp(kinesis, stream)
    app.read_share = 0.2
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.start_reading()
        await wait_until(pilot, lambda: view.read_share is not None, what="the reading")
        said = lambda: str(view.query_one("#tail-lag").render())
        assert "throttled" not in said()
        view.cloudwatch = CloudWatchReading(await stream_metrics(kinesis, stream))  # the app's minute reading
        await wait_until(pilot, lambda: "throttled: kconsole reads less" in said(), what="the back-off line")
        assert "e reads with EFO, without sharing" in said()
        assert view.read_share.calls_per_second == pytest.approx(0.5), "half the share's one call a second"
