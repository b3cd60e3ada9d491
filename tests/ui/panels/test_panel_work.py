"""Each panel runs its own work, against the embedded local Kinesis, and what the rest of the console
needs leaves it as typed messages. The panels are mounted alone in a small app that keeps every message
they post (no console app around them), and the tests assert on those messages: what a panel tells
the world is its contract, not the attributes of whoever hosts it."""

from __future__ import annotations

import json

import pytest
from textual.app import App
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from console.keyspace.hashkeys import md5_hash_key
from console.ui.panels.consumers import ConsumersPanel
from console.ui.panels.heat import HeatPanel
from console.ui.panels.lineage import LineageTree
from console.ui.panels.placement import PlacementPanel
from console.ui.panels.producer import ProducerPanel
from console.ui.panels.tail import TailView
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.source import fetch_stream, with_lineage
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.ui.test_ui_console import wait_until

pytestmark = pytest.mark.timeout(90)


class PanelHarness(App[None]):
    """One panel on a tab of its own (beside an empty one, so it can be hidden), and every message
    that reaches the app kept in order."""

    def __init__(self, panel: Widget) -> None:
        super().__init__()
        self.panel = panel
        self.posted: list[Message] = []

    def compose(self):
        with TabbedContent(id="tabs", initial="panel"):
            with TabPane("Panel", id="panel"):
                yield self.panel
            with TabPane("Other", id="other"):
                yield Static("elsewhere")

    async def _on_message(self, message: Message) -> None:
        self.posted.append(message)
        await super()._on_message(message)

    def of(self, kind: type[Message]) -> list:
        return [message for message in self.posted if isinstance(message, kind)]

    def running(self, group: str) -> list:
        return [worker for worker in self.workers if worker.group == group and not worker.is_finished]

    def show(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab


async def put_json(kinesis, stream: str, count: int) -> None:
    await kinesis.put_records(
        stream, [{"Data": json.dumps({"n": n}).encode(), "PartitionKey": f"user-{n}"} for n in range(count)]
    )


async def test_producer_runs_after_the_name_is_typed_and_says_when_it_finished(kinesis, make_stream):
    name = await make_stream(shards=2)
    panel = ProducerPanel(kinesis, local=True)
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        panel.stream = name
        panel.query_one("#producer-keys").value = "5"
        panel.query_one("#producer-per-key").value = "2"
        await pilot.pause()
        panel.action_start()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirm dialog")
        (request,) = app.of(ProducerPanel.StartRequested)
        assert (request.settings.keys, request.settings.records_per_key, request.verify) == (5, 2, True)
        assert not app.of(ProducerPanel.RunFinished) and not app.running("producer")  # nothing before the name
        app.screen.query_one("Input").value = name
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.of(ProducerPanel.RunFinished), timeout=40, what="the run's end")
        (finished,) = app.of(ProducerPanel.RunFinished)
        assert finished.stream == name and finished.result.sent == 10
        assert finished.report is not None and finished.report.ok and finished.report.read_back == 10
        assert panel.report is finished.report  # the panel showed what it announced


async def test_producer_refuses_read_only_and_a_missing_stream_without_finishing_anything(kinesis, make_stream):
    name = await make_stream(shards=1)
    panel = ProducerPanel(kinesis, local=True)
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        panel.action_start()  # no stream yet
        await pilot.pause(0.1)
        assert "no stream open" in str(panel.query_one("#producer-status").render())
        panel.stream, panel.read_only = name, True
        panel.action_start()
        await pilot.pause(0.1)
        assert "read-only" in str(panel.query_one("#producer-status").render())
        assert len(app.of(ProducerPanel.StartRequested)) == 2  # asked twice, refused twice
        assert app.screen is app.screen_stack[0] and not app.of(ProducerPanel.RunFinished)


async def test_tail_reads_its_stream_and_stops_when_another_is_opened(kinesis, make_stream):
    first, second = await make_stream(shards=1), await make_stream(shards=1)
    await put_json(kinesis, first, 12)
    view = TailView(kinesis)
    app = PanelHarness(view)
    async with app.run_test(size=(110, 30)) as pilot:
        view.stream = first
        view.ring.focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: view.received >= 12, what="tailed records")
        (start,) = app.of(TailView.StartRequested)
        assert start.options.start.iterator_type == "TRIM_HORIZON"
        assert view.running and app.running("tail")
        view.stream = second  # what the app's reactive does on open_stream
        await wait_until(pilot, lambda: not app.running("tail"), what="the reader cancelled")
        assert not view.running and "another stream" in str(view.query_one("#tail-lag").render())
        assert view.received == 0 and not view.ring.records  # nothing of the first stream stays
        await pilot.press("t")  # reading again reads the stream now followed
        await wait_until(pilot, lambda: len(app.of(TailView.StartRequested)) == 2 and view.running, what="restart")
        await put_json(kinesis, second, 3)
        await wait_until(pilot, lambda: view.received >= 3, what="the new stream's records")
        await pilot.press("t")
        await wait_until(pilot, lambda: app.of(TailView.StopRequested) and not app.running("tail"), what="stopped")


async def test_heat_samples_while_shown_and_says_so_when_it_stops(kinesis, make_stream):
    name = await make_stream(shards=2)
    shard_ids = {shard.shard_id for shard in await kinesis.all_shards(name)}
    panel = HeatPanel(kinesis, id="heat-panel")
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        app.show("other")
        await pilot.pause()
        panel.stream = name
        await pilot.pause(0.3)
        assert not app.running("heat") and not app.of(HeatPanel.HeatChanged)  # hidden: nothing sampled
        app.show("panel")
        await wait_until(pilot, lambda: app.of(HeatPanel.HeatChanged), what="a heat reading")
        await put_json(kinesis, name, 200)
        await wait_until(
            pilot,
            lambda: any(
                figures.records_per_s > 0
                for message in app.of(HeatPanel.HeatChanged)
                for figures in message.heat.values()
            ),
            what="traffic in a reading",
        )
        assert set(app.of(HeatPanel.HeatChanged)[-1].heat) == shard_ids
        assert {message.stream for message in app.of(HeatPanel.HeatChanged)} == {name}
        assert app.of(HeatPanel.Shown) and app.running("heat-cloudwatch")  # the selected shard's CloudWatch too
        stopped_before = len(app.of(HeatPanel.HeatStopped))
        app.show("other")
        await wait_until(
            pilot, lambda: not app.running("heat") and not app.running("heat-cloudwatch"), what="the sampler cancelled"
        )
        assert len(app.of(HeatPanel.HeatStopped)) == stopped_before + 1 and app.of(HeatPanel.Hidden)


async def test_lease_poll_posts_lag_and_clears_it_for_another_stream(kinesis, make_stream, local_kinesis):
    name = await make_stream(shards=2)
    other = await make_stream(shards=1)
    shards = await kinesis.all_shards(name)
    for n in range(3):
        await kinesis.put_record(name, b"x", f"k{n}", explicit_hash_key=shards[0].starting_hash_key)
    async with dynamodb(local_kinesis.endpoint_url) as client:
        table = await create_lease_table(client)
        await put_items(client, table, [kcl_lease(shard.shard_id) for shard in shards])
    panel = ConsumersPanel(kinesis, interval=0.2)
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        panel.stream = name
        box = panel.query_one("#consumers-table")
        box.value = table
        box.focus()
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any(message.lag for message in app.of(ConsumersPanel.LagChanged)),
            what="lag from the lease poll",
        )
        (request,) = app.of(ConsumersPanel.WatchRequested)
        assert request.table == table and panel.lease_table == table
        lag = next(message.lag for message in app.of(ConsumersPanel.LagChanged) if message.lag)
        assert set(lag) == {shard.shard_id for shard in shards}
        await wait_until(
            pilot,
            lambda: sum(1 for message in app.of(ConsumersPanel.LagChanged) if message.lag) >= 2,
            what="a second poll",
        )
        panel.stream = other
        await wait_until(pilot, lambda: not app.running("consumers"), what="the lease poll cancelled")
        last = app.of(ConsumersPanel.LagChanged)[-1]
        assert (last.stream, last.lag) == (other, {}) and panel.lease_table is None


async def test_lease_poll_waits_for_the_lock_a_shard_poll_holds(kinesis, make_stream):
    name = await make_stream(shards=1)
    panel = ConsumersPanel(kinesis, interval=0.1)
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        panel.stream = name
        async with panel.poll_lock:  # as the app's shard poll holds it while it calls the backend
            panel.query_one("#consumers-table").focus()
            await pilot.press("enter")  # EFO consumers only
            await pilot.pause(0.5)
            assert app.of(ConsumersPanel.WatchRequested) and app.running("consumers")
            waiting = len(app.of(ConsumersPanel.LagChanged))
            assert "0 EFO consumer(s)" not in str(panel.query_one("#consumers-status").render())
        await wait_until(
            pilot,
            lambda: "0 EFO consumer(s)" in str(panel.query_one("#consumers-status").render()),
            what="the lease poll once the lock is free",
        )
        # The status is drawn before the lag's message reaches the app.
        await wait_until(pilot, lambda: len(app.of(ConsumersPanel.LagChanged)) > waiting, what="the lag's message")


async def test_placement_tells_where_typed_keys_land_and_forgets_them_for_another_stream(kinesis, make_stream):
    """The ribbon's markers leave Placement as MarkersChanged: every key that parses, by its hash key."""
    stream = await make_stream(shards=3)
    view = await with_lineage(await fetch_stream(kinesis, stream))
    panel = PlacementPanel(id="placement-panel")
    app = PanelHarness(panel)
    async with app.run_test(size=(120, 40)) as pilot:
        panel.view = view  # as the app's data_bind sets it after a poll
        panel.set_keys("user-1\nuser-2\n\n")
        await wait_until(pilot, lambda: app.of(PlacementPanel.MarkersChanged), what="markers")
        assert app.of(PlacementPanel.MarkersChanged)[-1].hash_keys == [md5_hash_key("user-1"), md5_hash_key("user-2")]
        shard_of = {s.shard_id: s for s in view.shards if s.is_open}
        for placement in panel.placements:  # each key answered with the shard whose range holds it
            shard = shard_of[placement.shard_id]
            assert int(shard.starting_hash_key) <= placement.hash_key <= int(shard.ending_hash_key)
        panel.set_keys("")
        await pilot.pause()
        assert app.of(PlacementPanel.MarkersChanged)[-1].hash_keys == []


async def test_lineage_tree_announces_the_shard_its_cursor_moves_to_not_the_one_it_is_told(kinesis, make_stream):
    """A shard chosen elsewhere (select_shard) moves the cursor quietly; a key press that moves it says
    so in ShardHighlighted, which the app routes to the table and the ribbon."""
    stream = await make_stream(shards=3)
    view = await with_lineage(await fetch_stream(kinesis, stream))
    tree = LineageTree(id="lineage-tree")
    app = PanelHarness(tree)
    async with app.run_test(size=(120, 40)) as pilot:
        tree.view = view
        await wait_until(pilot, lambda: tree.lines, what="the tree drawn")
        second, third = tree.lines[1].shard_id, tree.lines[2].shard_id
        assert tree.select_shard(second)  # not where the cursor starts: it moves, and says nothing
        await pilot.pause()
        assert app.of(LineageTree.ShardHighlighted) == []
        tree.focus()
        await pilot.press("down")
        await wait_until(pilot, lambda: app.of(LineageTree.ShardHighlighted), what="a highlighted shard")
        assert [m.shard_id for m in app.of(LineageTree.ShardHighlighted)] == [third]
