"""The embedded server killed under the console: its death is said in the header at once, it is
restarted on the same port with the stream recreated (the console says its records are gone), the
dead child is reaped, and the polls carry on against the new server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import botocore.session
import pytest

from console.backend import BackendConfig, open_backend
from console.localserver.supervision import LocalKinesisServer
from console.ui.launch import _supervise_local_server
from console.ui.panels.tail import TailView
from tests.ui.test_ui_console import RecordingApp, header_text, wait_until

pytestmark = pytest.mark.timeout(90)


def reaped(pid: int) -> bool:
    """Gone for good: no process, not even a defunct one waiting to be reaped."""
    return not os.path.exists(f"/proc/{pid}")


@contextlib.asynccontextmanager
async def supervised_console(shards: int, data: bytes):
    """The console on an embedded server of its own, supervised as `kconsole --local` runs it, on a
    stream `watched` holding one record: yields the server, the backend, the app and its pilot."""
    server = LocalKinesisServer()
    endpoint = await asyncio.to_thread(server.start)
    config = BackendConfig(kind="local", region="us-east-1", endpoint_url=endpoint)
    try:
        async with open_backend(config) as kinesis:
            kinesis.local_server = server
            await kinesis.ensure_stream("watched", shards)
            await kinesis.put_records("watched", [{"Data": data, "PartitionKey": "k"}])
            app = RecordingApp(kinesis, stream="watched", interval=0.3, poll_timeout=5)
            shown: dict = {}
            supervisor = _supervise_local_server(
                kinesis, "watched", shards, demo=False, split=False, read_only=False, shown=shown
            )
            try:
                async with app.run_test(size=(120, 32)) as pilot:
                    shown["app"] = app
                    await wait_until(pilot, lambda: app.refreshed, what="first poll")
                    yield server, kinesis, app, pilot
            finally:
                supervisor.cancel()
    finally:
        await asyncio.to_thread(server.stop)


async def test_a_killed_embedded_server_is_said_restarted_and_reaped():
    async with supervised_console(2, b"x") as (server, _kinesis, app, pilot):
        endpoint, old = server.endpoint_url, server.pid
        os.kill(old, signal.SIGKILL)
        await wait_until(
            pilot,
            lambda: "embedded server exited (signal 9); restarting" in app.notes,
            timeout=5,
            what="the death said",
        )
        await wait_until(
            pilot, lambda: "recreated" in (app.header.state.server or ""), timeout=30, what="the restart said"
        )
        assert "watched recreated, records gone" in header_text(app)
        assert any("its records are gone" in note for note in app.notes)
        assert server.endpoint_url == endpoint and server.pid != old and reaped(old)
        polls = len(app.refreshed)
        await wait_until(pilot, lambda: len(app.refreshed) > polls, timeout=30, what="polls again")
        reader = botocore.session.get_session().create_client(
            "kinesis",
            region_name="us-east-1",
            endpoint_url=endpoint,
            aws_access_key_id="truth",
            aws_secret_access_key="truth",
        )
        shard = reader.list_shards(StreamName="watched")["Shards"][0]["ShardId"]
        iterator = reader.get_shard_iterator(StreamName="watched", ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"
        ]
        assert reader.get_records(ShardIterator=iterator)["Records"] == []  # a new, empty stream


async def test_the_tail_tab_reads_the_recreated_stream_after_a_restart():
    async with supervised_console(1, b'{"n": 1}') as (server, kinesis, app, pilot):
        await pilot.press("6")
        await wait_until(pilot, lambda: app.query("#tail-view"), what="the Tail tab")
        view = app.query_one("#tail-view", TailView)
        view.action_from_horizon()
        await wait_until(pilot, lambda: len(view.ring.records) == 1, what="the record before")
        os.kill(server.pid, signal.SIGKILL)
        await wait_until(
            pilot, lambda: "recreated" in (app.header.state.server or ""), timeout=30, what="the restart said"
        )
        await kinesis.put_records("watched", [{"Data": b'{"n": 2}', "PartitionKey": "k"}])
        await wait_until(
            pilot,
            lambda: [record.value for record in view.ring.records] == [{"n": 2}],
            timeout=20,
            what="the recreated stream's record, and only it",
        )
        assert view.running
