"""The Tail tab's window (From/To), Where filter, export dialog, and its reader's resilience: the view on a
real backend (the embedded server, through tests/faultproxy.py where the network fails)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from urllib.parse import urlsplit

from textual.app import App

from console.backend import BackendConfig, open_backend
from console.read.efo import is_temporary_consumer
from console.ui.panels.tail import RecordRing, TailView
from console.ui.screens.confirm import ConfirmByNameScreen
from tests.faultproxy import FaultProxy
from tests.ui.panels.test_tail import records_for
from tests.ui.test_ui_console import wait_until


class ViewApp(App[None]):
    def __init__(self, source=None, stream: str = "orders", **options) -> None:
        super().__init__()
        self.source, self.stream, self.options = source, stream, options

    def compose(self):
        yield TailView(self.source, stream=self.stream, id="tail", **self.options)

    def on_mount(self) -> None:
        self.query_one(RecordRing).focus()


def numbers(view: TailView) -> list[int]:
    return [record.value["n"] for record in view.ring.records]


async def test_where_refilters_what_is_held_and_a_bad_expression_changes_nothing():
    app = ViewApp()
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.add_records(records_for("shardId-000000000000", 0, 10))
        await pilot.pause(0.2)
        view.apply_where("data.n >= `7` || key == 'k1'")
        assert numbers(view) == [1, 7, 8, 9]
        view.add_records(records_for("shardId-000000000000", 10, 2))  # new records pass the same filter
        await pilot.pause(0.2)
        assert numbers(view) == [1, 7, 8, 9, 10, 11]
        view.apply_where("data.n ==")  # refused in the status lines, the filter stays
        assert "filter not applied" in str(view.query_one("#tail-lag").render())
        assert numbers(view) == [1, 7, 8, 9, 10, 11]
        view.apply_where("")
        assert numbers(view) == list(range(12))


async def test_to_makes_a_window_and_the_export_dialog_writes_csv(tmp_path):
    app = ViewApp(save_dir=tmp_path)
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.query_one("#tail-from").value = "trim-horizon"
        view.query_one("#tail-to").value = "now"
        options = view.read_options()
        assert not options.follow and options.end.moment is not None
        view.query_one("#tail-to").value = ""
        assert view.read_options().follow
        view.add_records(records_for("shardId-000000000000", 0, 4))
        await pilot.pause(0.2)
        view.apply_where("data.n > `1`")
        await pilot.press("w")
        await pilot.pause(0.1)
        app.screen.query_one("#export-format").value = "csv"
        await pilot.pause(0.1)
        await pilot.click("#export")
        await pilot.pause(0.2)
        [written] = tmp_path.glob("orders-*.csv")
        rows = list(csv.reader(io.StringIO(written.read_text())))
        assert rows[0][:3] == ["arrival", "shard_id", "seq"] and [row[-1] for row in rows[1:]] == ['{"n":2}', '{"n":3}']
        assert not list(tmp_path.glob(".*.part"))


async def test_the_whole_window_is_read_again_into_the_export(kinesis, make_stream, tmp_path):
    stream = await make_stream(shards=2)
    for number in range(6):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    app = ViewApp(kinesis, stream, save_dir=tmp_path)
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.query_one("#tail-from").value = "trim-horizon"
        view.apply_where("data.n < `4`")
        await pilot.press("w")
        await pilot.pause(0.1)
        app.screen.query_one("#export-scope").value = "window"
        await pilot.pause(0.1)
        await pilot.click("#export")
        await wait_until(
            pilot,
            lambda: list(tmp_path.glob("orders*.jsonl")) or list(tmp_path.glob(f"{stream}*.jsonl")),
            what="the export file",
        )
        [written] = list(tmp_path.glob(f"{stream}-*.jsonl"))
        assert sorted(json.loads(line)["content"]["n"] for line in written.read_text().splitlines()) == [0, 1, 2, 3]


async def test_the_tab_goes_on_by_itself_after_the_network_heals(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    for number in range(4):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as through_proxy:
            app = ViewApp(through_proxy, stream)
            async with app.run_test(size=(160, 24)) as pilot:
                view = app.query_one(TailView)
                view.query_one("#tail-from").value = "trim-horizon"
                view.start_reading()
                await wait_until(pilot, lambda: len(view.ring.records) == 4, what="the first records")
                proxy.down()
                for number in range(4, 8):
                    await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
                await wait_until(
                    pilot,
                    lambda: "cannot be read" in str(view.query_one("#tail-lag").render()),
                    timeout=40,
                    what="the retry line",
                )
                await wait_until(
                    pilot,
                    lambda: "?" in str(view.query_one("#tail-lag").render()).splitlines()[0],
                    what="lag unknown for the shard that cannot be read, not its last 0 ms",
                )
                assert view.running
                await proxy.up()
                await wait_until(pilot, lambda: len(view.ring.records) >= 8, timeout=60, what="the records after")
                await asyncio.sleep(1.5)
                await pilot.pause(0.2)
                assert sorted(numbers(view)) == list(range(8)), "no gap, no repeat"
                assert "reading again" in str(view.query_one("#tail-lag").render())


async def test_export_makes_its_default_folder_and_says_why_a_window_export_cannot_start(
    kinesis, make_stream, tmp_path
):
    stream = await make_stream(shards=1)
    for number in range(3):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    folder = tmp_path / "not-made-yet"  # as kconsole's data folder is before the first export
    app = ViewApp(kinesis, stream, save_dir=folder)
    notes: list[str] = []
    async with app.run_test(size=(160, 24)) as pilot:
        app.notify = lambda message, **_: notes.append(message)  # type: ignore[method-assign]
        view = app.query_one(TailView)
        view.query_one("#tail-from").value = "trim-horizon"
        view.add_records(records_for("shardId-000000000000", 0, 2))
        await pilot.press("w")
        await pilot.pause(0.1)
        await pilot.click("#export")
        await pilot.pause(0.2)
        assert len(list(folder.glob(f"{stream}-*.jsonl"))) == 1, notes

        await pilot.press("w")
        await pilot.pause(0.1)
        app.screen.query_one("#export-scope").value = "window"
        app.screen.query_one("#export-path").value = str(tmp_path / "no" / "such" / "dir.jsonl")
        await pilot.pause(0.1)
        await pilot.click("#export")
        await wait_until(pilot, lambda: any("could not export" in note for note in notes), what="the reason")
        assert not (tmp_path / "no").exists()


async def test_the_source_switch_reads_as_a_registered_efo_consumer(kinesis, make_stream):
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    await kinesis.register_stream_consumer(arn, "tab-reader")
    for number in range(8):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    app = ViewApp(kinesis, stream)
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        consumer = view.query_one("#tail-consumer")
        assert not consumer.display, "the consumer box shows only for EFO"
        await pilot.press("e")
        await pilot.pause(0.1)
        assert view.reads_with_efo and consumer.display
        view.query_one("#tail-from").value = "trim-horizon"
        view.start_reading()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the price, to confirm")
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in str(view.query_one("#tail-lag").render()), what="cancelled")
        assert "no consumer was registered" in str(view.query_one("#tail-lag").render())
        assert [c.name for c in await kinesis.list_stream_consumers(arn)] == ["tab-reader"]

        consumer.value = "not-registered"
        view.start_reading()
        await wait_until(pilot, lambda: "not-registered" in str(view.query_one("#tail-lag").render()), what="one line")
        assert "registered: tab-reader" in str(view.query_one("#tail-lag").render())

        consumer.value = "tab-reader"
        view.start_reading()
        await wait_until(pilot, lambda: len(view.ring.records) == 8, timeout=30, what="every record, pushed")
        assert sorted(numbers(view)) == list(range(8))
        view.post_message(TailView.StopRequested())
        await pilot.press("e")
        await pilot.pause(0.1)
        assert not view.reads_with_efo and not consumer.display


async def test_the_tab_reads_with_a_temporary_consumer_after_its_price_and_deregisters_it_on_stop(kinesis, make_stream):
    stream = await make_stream(shards=2)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    for number in range(5):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    app = ViewApp(kinesis, stream)
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(TailView)
        await pilot.press("e")
        view.query_one("#tail-from").value = "trim-horizon"
        view.start_reading()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the price, to confirm")
        assert "$0.015 per consumer-shard hour (2 shards" in str(app.screen.query_one("#confirm-action").render())
        app.screen.query_one("#confirm-input").value = stream
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(view.ring.records) == 5, timeout=30, what="every record, pushed")
        [registered] = [c.name for c in await kinesis.list_stream_consumers(arn)]
        assert is_temporary_consumer(registered)

        await pilot.press("t")

        async def consumers_left() -> list:
            return [c for c in await kinesis.list_stream_consumers(arn) if not c.deleting]

        for _ in range(100):
            if not await consumers_left():
                break
            await pilot.pause(0.1)
        assert await consumers_left() == [], "deregistered when the tab stopped reading"


async def test_the_temporary_consumer_is_deregistered_when_the_app_exits_mid_reading(kinesis, make_stream):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    app = ViewApp(kinesis, stream)
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(TailView)
        await pilot.press("e")
        view.start_reading()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the price, to confirm")
        app.screen.query_one("#confirm-input").value = stream
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any("registered the temporary" in n.message for n in app._notifications),
            what="registered",
        )
        assert len(await kinesis.list_stream_consumers(arn)) == 1
    left = [c for c in await kinesis.list_stream_consumers(arn) if not c.deleting]
    assert left == [], "deregistered as the app exited"
