"""CloudWatch capacity in the console, against the embedded server's CloudWatch over HTTP: the Heat tab
draws the stream-level metrics as sparklines (or says there are none yet), the header sums up the last
minutes where it fits, and with enhanced monitoring on the selected shard's own metrics appear."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from textual.app import App
from textual.widgets import Static

from console.heat.capacity import CapacitySummary
from console.topology.model import StreamSummary
from console.ui.panels.heat_shard_metrics import MONITORING_OFF
from console.ui.widgets.header import ConsoleHeader
from console.ui.widgets.metric_lines import LABEL_WIDTH
from tests.heat.test_capacity import put_metric
from tests.ui.test_ui_console import RecordingApp, header_text, wait_until

pytestmark = pytest.mark.timeout(90)

STREAM_LABELS = ("in records", "in bytes", "iterator age", "write throttled", "read throttled", "read latency")


def rendered(app, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def label_of(line: str) -> str:
    return line[:LABEL_WIDTH].strip()


def minutes_ago(minutes: int) -> datetime:
    return datetime.now(UTC).replace(second=30, microsecond=0) - timedelta(minutes=minutes)


async def test_heat_tab_draws_the_streams_cloudwatch_metrics(kinesis, make_stream, local_kinesis):
    name = await make_stream(shards=2)
    url = local_kinesis.endpoint_url
    await put_metric(url, name, "IncomingRecords", 600, minutes_ago(3))
    await put_metric(url, name, "IncomingRecords", 1200, minutes_ago(2))
    await put_metric(url, name, "GetRecords.IteratorAgeMilliseconds", 2500, minutes_ago(2))
    await put_metric(url, name, "WriteProvisionedThroughputExceeded", 3, minutes_ago(2))
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("7")
        await wait_until(pilot, lambda: "in records" in rendered(app, "#heat-capacity"), what="stream metrics")
        lines = rendered(app, "#heat-capacity").splitlines()
        assert "iterator age 2.5 s · 3 throttled in 5 min" in lines[0]
        assert [label_of(line) for line in lines[1:]] == list(STREAM_LABELS)
        records = next(line for line in lines if line.startswith("in records"))
        assert records.endswith("peak 20r/s") and "▄█" in records  # 10 then 20 records a second, a minute each
        assert "lag 2.5 s  throttled 3" in header_text(app)
        await pilot.press("8")  # built now, with what the poll told it while hidden
        await wait_until(pilot, lambda: "in records" in rendered(app, "#consumers-metrics"), what="the same poll")
        await pilot.press("7")
        # Without enhanced monitoring, the selected shard's detail says how to get its metrics.
        await wait_until(
            pilot, lambda: MONITORING_OFF in rendered(app, "#heat-shard-capacity"), what="the enhanced-monitoring hint"
        )


async def test_heat_tab_says_when_cloudwatch_has_no_data_yet(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("7")
        await wait_until(
            pilot,
            lambda: "no CloudWatch data for this stream yet" in rendered(app, "#heat-capacity"),
            what="the empty state",
        )
        assert "in records" not in rendered(app, "#heat-capacity")
        assert "throttled" not in header_text(app)


async def test_shard_metrics_appear_once_enhanced_monitoring_is_on(kinesis, make_stream, local_kinesis):
    name = await make_stream(shards=2)
    first, second = (shard.shard_id for shard in await kinesis.all_shards(name))
    url = local_kinesis.endpoint_url
    await put_metric(url, name, "IncomingRecords", 60, minutes_ago(2))
    await put_metric(url, name, "IncomingBytes", 6000, minutes_ago(2), shard_id=first)
    await put_metric(url, name, "IncomingBytes", 12000, minutes_ago(2), shard_id=second)
    await put_metric(url, name, "IteratorAgeMilliseconds", 4000, minutes_ago(2), shard_id=second)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("7")
        panel = app.query_one("#heat-panel")
        await wait_until(pilot, lambda: panel.selected_shard is not None, what="a selected shard")
        await wait_until(pilot, lambda: MONITORING_OFF in rendered(app, "#heat-shard-capacity"), what="the hint")
        assert "in bytes" not in rendered(app, "#heat-shard-capacity")  # data exists, but monitoring is off

        await kinesis.enable_enhanced_monitoring(name, ["IncomingBytes", "IteratorAgeMilliseconds"])
        await pilot.press("r")  # the next poll's summary lists the shard-level metrics
        expected = {first: "peak 100B/s", second: "peak 200B/s"}  # 6,000 and 12,000 bytes in a minute

        def shows(shard_id: str) -> bool:
            text = rendered(app, "#heat-shard-capacity")
            return shard_id in text and expected[shard_id] in text

        selected = panel.selected_shard
        await wait_until(pilot, lambda: shows(selected), what="the selected shard's metrics")
        lines = rendered(app, "#heat-shard-capacity").splitlines()
        assert [label_of(line) for line in lines[1:]] == ["in bytes", "iterator age"]  # only the enabled ones
        other = second if selected == first else first
        panel.focus()
        await pilot.press("down")
        assert panel.selected_shard == other
        await wait_until(pilot, lambda: shows(other), what="the other shard's metrics")
        if other == second:
            assert "iterator age 4.0 s" in rendered(app, "#heat-shard-capacity")


async def test_header_summary_only_where_it_fits():
    class HeaderApp(App[None]):
        def compose(self):
            yield ConsoleHeader(clock=lambda: 1000.0)

    app = HeaderApp()
    async with app.run_test(size=(80, 4)) as pilot:
        header = app.query_one(ConsoleHeader)
        header.update_state(
            connected_to="local 127.0.0.1:38719",
            region="us-east-1",
            stream="orders",
            summary=StreamSummary("orders", "ACTIVE", "PROVISIONED", 4, 24, "NONE"),
            refreshed_at=990.0,
            capacity=CapacitySummary(3200.0, 12),
        )
        await pilot.pause()
        assert "lag 3.2 s  throttled 12  refreshed 10s ago" in str(header.render())
        header.update_state(connected_to="aws", region="eu-west-1", profile="ops-admin", read_only=True)
        await pilot.pause()
        text = str(header.render())
        assert "throttled" not in text and "profile ops-admin" in text and "READ-ONLY" in text  # nothing cut for it
        assert "…" not in text
        assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
