"""The real console app driven with Pilot against the embedded local Kinesis (moto over HTTP)."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.backend import BackendConfig, open_backend
from console.localserver.supervision import LocalKinesisServer
from console.ui.app import KConsoleApp
from console.ui.stream_display import PollFailed, StreamRefreshed
from console.ui.widgets.header import ConsoleHeader

pytestmark = pytest.mark.timeout(90)


class RecordingApp(KConsoleApp):
    """The real app, also keeping the typed messages it posts, so tests can assert on them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.refreshed: list[StreamRefreshed] = []
        self.failures: list[PollFailed] = []
        self.notes: list[str] = []  # every notification, kept after its toast expires

    def notify(self, message, *args, **kwargs) -> None:
        self.notes.append(str(message))
        super().notify(message, *args, **kwargs)

    def on_stream_refreshed(self, message: StreamRefreshed) -> None:
        self.refreshed.append(message)

    def on_poll_failed(self, message: PollFailed) -> None:
        self.failures.append(message)


async def wait_until(pilot, predicate, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            notes = getattr(pilot.app, "notes", [n.message for n in pilot.app._notifications])
            raise AssertionError(
                f"timed out waiting for {what}; screen {pilot.app.screen!r}; notifications {notes}; "
                f"polls {pilot.app.shard_poll.count} running {pilot.app.shard_poll.running}; "
                f"header {pilot.app.query_one('#header').state if pilot.app.query('#header') else None}"
            )
        await pilot.pause(0.05)


def header_text(app: KConsoleApp) -> str:
    return str(app.query_one(ConsoleHeader).render())


async def test_table_shows_the_servers_shards(kinesis, make_stream):
    name = await make_stream(shards=3)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        server_ids = sorted(s.shard_id for s in await kinesis.all_shards(name))
        assert sorted(app.table.shard_ids) == server_ids
        assert app.ribbon.open_shard_ids == server_ids
        text = header_text(app)
        assert name in text and "ACTIVE" in text and "3 open shards" in text
        assert "local" in text and "us-east-1" in text
        # Keyboard moves the selection, and the ribbon follows it.
        await pilot.press("down")
        assert app.selected_shard_id == app.table.shard_ids[1] == app.ribbon.selected_id


async def test_split_shows_children_and_closed_parent(kinesis, make_stream):
    name = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        parent = (await kinesis.all_shards(name))[0]
        await pilot.press("2")  # lineage tab
        await pilot.pause()
        tree = app.lineage_tree
        tree.select_shard(parent.shard_id)
        assert "open" in tree.line_text(parent.shard_id) and tree.children_of(parent.shard_id) == []
        await kinesis.split_shard(name, parent.shard_id, parent.starting_hash_key + 2**100)
        await kinesis.wait_for_active(name)
        polls = len(app.refreshed)
        await pilot.press("r")
        await wait_until(pilot, lambda: len(app.refreshed) > polls, what="poll after the split")
        listed = await kinesis.all_shards(name)
        children = sorted(s.shard_id for s in listed if parent.shard_id in s.parents)
        assert len(children) == 2
        assert "closed" in tree.line_text(parent.shard_id)
        assert sorted(tree.children_of(parent.shard_id)) == children
        for child in children:
            assert "open" in tree.line_text(child)
        assert tree.selected_shard_id == parent.shard_id  # the cursor stayed on the same shard
        # Moving on the tree selects the shard in the table and on the ribbon.
        await pilot.press("down", "down")
        await wait_until(pilot, lambda: app.selected_shard_id == children[1], what="tree selection")
        assert app.table.selected_shard_id == children[1] == app.ribbon.selected_id
        # Rows were updated in place: the closed parent is still a row, with the new children.
        assert set(app.table.shard_ids) == {s.shard_id for s in listed}


async def test_typed_key_lands_where_put_record_puts_it(kinesis, make_stream):
    name = await make_stream(shards=5)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("3")  # placement tab
        await pilot.click("#placement-input")
        for key in ("order-42", "c-7"):
            await pilot.press(*key, "enter")
        await wait_until(pilot, lambda: len(app.placement.placements) == 2, what="placements")
        for placement in app.placement.placements:
            result = await kinesis.put_record(name, b"{}", placement.key)
            assert placement.shard_id == result["ShardId"]
        assert len(app.ribbon._markers) == 2


async def test_killed_backend_turns_header_red_and_recovers():
    server = LocalKinesisServer()
    endpoint = await asyncio.to_thread(server.start)
    port = int(endpoint.rsplit(":", 1)[1])
    config = BackendConfig(kind="local", region="us-east-1", endpoint_url=endpoint)
    try:
        async with open_backend(config) as kinesis:
            await kinesis.ensure_stream("doomed", 2)
            app = RecordingApp(kinesis, stream="doomed", interval=0.3, poll_timeout=5)
            async with app.run_test(size=(100, 32)) as pilot:
                await wait_until(pilot, lambda: app.refreshed, what="first poll")
                assert not app.header.failing
                await asyncio.to_thread(server.stop)
                await wait_until(pilot, lambda: app.failures, timeout=30, what="a failed poll")
                assert app.header.failing and app.header.has_class("-failing")
                assert "POLL FAILED" in header_text(app)
                assert "could not connect" in app.header.state.error  # what the retries met, not only the timeout
                # Still responsive: keys work while the backend is down.
                await pilot.press("down")
                await pilot.press("2")
                assert app.query_one("#tabs").active == "lineage"
                # Bring a server back on the same port; the console recovers without help.
                server.port = port
                await asyncio.to_thread(server.start)
                await kinesis.ensure_stream("doomed", 2)
                polls = len(app.refreshed)
                await wait_until(pilot, lambda: len(app.refreshed) > polls, timeout=30, what="recovery")
                assert not app.header.failing and "POLL FAILED" not in header_text(app)
    finally:
        await asyncio.to_thread(server.stop)


async def test_retried_reads_show_in_the_header_and_the_poll_succeeds(local_kinesis, make_stream):
    """A dropped connection under a poll is retried by the backend; the header says so meanwhile."""
    from urllib.parse import urlsplit

    from tests.faultproxy import FaultProxy, Faults

    stream = await make_stream(shards=2)
    faults = Faults(reset_before=1.0, skip=1, limit=3, operations=frozenset({"ListShards"}))
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, faults) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url)
        async with open_backend(config) as kinesis:
            app = RecordingApp(kinesis, stream=stream, interval=0.3, poll_timeout=10)
            async with app.run_test(size=(140, 32)) as pilot:
                await wait_until(
                    pilot,
                    lambda: "connection dropped on ListShards" in header_text(app),
                    what="the retry in the header",
                )
                polls = len(app.refreshed)
                await wait_until(pilot, lambda: len(app.refreshed) > polls, what="the retried poll")
                assert "connection dropped" not in header_text(app) and not app.failures
                assert proxy.stats["faults"] == 3 and kinesis.retries == 3


class CountingSource:
    """The real backend, counting the two calls a poll can make (what the server is asked)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.summaries = 0
        self.listings = 0

    def __getattr__(self, name):
        return getattr(self.backend, name)

    async def describe_stream_summary(self, stream):
        self.summaries += 1
        return await self.backend.describe_stream_summary(stream)

    async def all_shards(self, stream, shard_filter=None):
        self.listings += 1
        return await self.backend.all_shards(stream, shard_filter)


async def test_timed_polls_ask_for_the_summary_and_list_shards_only_on_change(kinesis, make_stream):
    name = await make_stream(shards=2)
    source = CountingSource(kinesis)
    app = RecordingApp(source, stream=name, interval=0.05)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: len(app.refreshed) >= 6, what="six polls")
        # Idle: the first poll listed the shards; the later ones only asked for the summary.
        assert source.listings == 1 and source.summaries >= 6
        parent = (await kinesis.all_shards(name))[0]
        await kinesis.split_shard(name, parent.shard_id, parent.starting_hash_key + 2**100)
        await kinesis.wait_for_active(name)
        # The open-shard count moved: the next poll lists the shards and the table shows the children.
        await wait_until(pilot, lambda: len(app.table.shard_ids) == 4, what="the split in the table")
        assert source.listings == 2
        listed = source.listings
        await pilot.press("r")  # asked for: a full listing whatever the summary says
        await wait_until(pilot, lambda: source.listings > listed, what="the listing asked for")


def test_listing_schedule_lists_everything_every_nth_timed_poll():
    from console.ui.source import ListingSchedule

    schedule = ListingSchedule(every=3)
    assert [schedule.next_poll_lists_all() for _ in range(3)] == [False, False, True]
    schedule.listed_all()
    assert [schedule.next_poll_lists_all() for _ in range(3)] == [False, False, True]


async def test_a_worker_failing_unexpectedly_is_shown_not_lost(kinesis, make_stream):
    name = await make_stream(shards=1)
    app = RecordingApp(kinesis, stream=name, interval=60)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")

        async def broken() -> None:
            raise RuntimeError("[b]not markup[/b]")

        app.run_worker(broken, description="a broken job", exit_on_error=False)
        await wait_until(pilot, lambda: any("a broken job stopped" in note for note in app.notes), what="error toast")
        note = next(note for note in app.notes if "a broken job stopped" in note)
        assert "internal error: RuntimeError: [b]not markup[/b]" in note
        assert app.is_running
