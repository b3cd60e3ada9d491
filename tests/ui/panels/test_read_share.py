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
        assert "backing off" not in line


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
    assert "backing off: readers are throttled (try --efo)" in said
