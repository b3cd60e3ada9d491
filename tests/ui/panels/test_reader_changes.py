"""Putting a reader right from the Readers tab, driven with Pilot against the embedded server over HTTP:
`w` on a KCL application opens the rewind dialog, whose plan is the command line's `--plan --json`
plan; with a KCL-like worker renewing the leases the dialog says the application is running and
refuses; stopped, the rewind is made, the checkpoints move and the action log has each write. `d` and
`e` on a Lambda mapping disable and enable it, each logged. Read-only greys the keys and refuses them
with a message."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from textual.widgets import Button, DataTable, Input

from console.reshard.actionlog import ActionLog
from console.ui.panels.readers import ReadersPanel
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.rewind import RewindScreen
from tests.commands.test_cli_reshard import kconsole
from tests.consumers.kcl_tables import aws_client, create_lease_table, dynamodb, kcl_lease, put_items
from tests.consumers.reader_resources import ReaderFactory
from tests.consumers.test_rewind import Worker, checkpoints
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
async def ddb(local_kinesis):
    async with dynamodb(local_kinesis.endpoint_url) as client:
        yield client


async def kcl_application(kinesis, ddb, make_stream, records: int = 12) -> tuple[str, str, Worker]:
    """A stream of two shards with `records` records, and a KCL application that read them all: its
    lease table checkpointed at each shard's last record, every lease held by one worker."""
    stream = await make_stream(shards=2)
    answer = await kinesis.put_records(
        stream, [{"Data": f"record {i}".encode(), "PartitionKey": f"key-{i}"} for i in range(records)]
    )
    assert not answer.get("FailedRecordCount")
    table = await create_lease_table(ddb)
    shards = [shard.shard_id for shard in await kinesis.all_shards(stream)]
    await put_items(ddb, table, [kcl_lease(shard, owner=None, counter=0) for shard in shards])
    worker = Worker(kinesis, ddb, stream, table)
    await worker.take_all()
    await worker.read_pass()  # each lease checkpointed at its shard's last record
    return stream, table, worker


async def select_reader(pilot, panel: ReadersPanel, kind: str, name: str) -> None:
    table = panel.query_one("#readers-table", DataTable)
    await wait_until(
        pilot,
        lambda: any(r.kind == kind and r.name == name for r in panel._readers.values()),
        what=f"the {kind} reader {name}",
    )
    key = next(key for key, r in panel._readers.items() if r.kind == kind and r.name == name)
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()
    assert panel.selected_reader is not None and panel.selected_reader.name == name


def intents(operation: str) -> list[dict]:
    return [e for e in ActionLog.default().entries() if e.get("kind") == "intent" and e["operation"] == operation]


def outcomes() -> dict[str, str]:
    return {e["intent"]: e["outcome"] for e in ActionLog.default().entries() if e.get("kind") == "outcome"}


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
async def test_the_rewind_dialog_plans_as_the_command_line_refuses_a_running_application_and_rewinds(
    capsys, local_kinesis, kinesis, ddb, make_stream, size
):
    stream, table, worker = await kcl_application(kinesis, ddb, make_stream)
    before = await checkpoints(ddb, table)
    assert all(item["checkpoint"]["S"].isdigit() for item in before.values())
    url = ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]
    code, out, err = await kconsole(
        capsys, "consumers", "rewind", stream, "--lease-table", table, "--to", "trim-horizon", "--plan", "--json", *url
    )
    assert code == 0, err
    cli_plan = json.loads(out)
    assert cli_plan.pop("planned_only") is True and cli_plan.pop("result") is None

    # The source the console is launched with (the backend, its first poll's calls asked for early).
    app = RecordingApp(kinesis, stream=stream, interval=3600)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("9")
        panel = app.query_one(ReadersPanel)
        panel.watch_seconds = 0.5  # the run's own watch (10 s by default, the KCL's failover time)
        await select_reader(pilot, panel, "kcl", table)
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the rewind dialog")
        screen = app.screen
        assert isinstance(screen, RewindScreen) and screen.table == table and screen.stream == stream
        screen.live_seconds = 0.5
        # The whole dialog is on screen at 80x24: where to, the watch, the plan, the name and the buttons.
        for selector in ("#rewind-target", "#rewind-running", "#rewind-plan-box", "#rewind-name", "#rewind-apply"):
            region = screen.query_one(selector).region
            assert region.height >= 1 and region.bottom <= size[1], selector

        target = screen.query_one("#rewind-target", Input)
        target.value = "trim-horizon"
        target.focus()
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: screen.plan is not None and screen.plan.target == "trim-horizon", what="the plan"
        )
        assert screen.plan is not None and screen.plan.to_json() == cli_plan
        assert str(screen.query_one("#rewind-plan").render()).startswith(f"rewind {stream} in {table} to trim-horizon")

        # A worker renews the leases: the dialog says the application is running, and refuses.
        renewing = asyncio.create_task(worker.renew_forever(0.1))
        try:
            await wait_until(pilot, lambda: screen.running is True, timeout=20, what="the running application")
            assert "the application is running: stop it first" in str(screen.query_one("#rewind-running").render())
            name = screen.query_one("#rewind-name", Input)
            name.value = table
            name.focus()
            await pilot.pause()
            assert screen.query_one("#rewind-apply", Button).disabled
            await pilot.press("enter")
            await pilot.pause()
            assert "the application is running: stop it first" in str(screen.query_one("#rewind-status").render())
            assert not screen.applying and not intents("UpdateItem")
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

        # Stopped: the rewind is made, through the action log, and its outcome shown.
        await wait_until(pilot, lambda: screen.running is False, timeout=20, what="the application stopped")
        assert not screen.query_one("#rewind-apply", Button).disabled
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.result is not None, timeout=30, what="the rewind's outcome")
        assert screen.result is not None and screen.result.complete
        assert f"2 of 2 checkpoint(s) changed; action {screen.result.action_id}" in str(
            screen.query_one("#rewind-status").render()
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="the dialog closed")

    after = await checkpoints(ddb, table)
    assert {key: item["checkpoint"]["S"] for key, item in after.items()} == dict.fromkeys(before, "TRIM_HORIZON")
    assert all("leaseOwner" not in item for item in after.values())  # left unowned for the restarted application
    written = intents("UpdateItem")
    assert sorted(e["plan"]["lease_key"] for e in written) == sorted(before)
    assert {e["plan"]["action"] for e in written} == {"consumers rewind"}
    assert {e["plan"]["old_checkpoint"] for e in written} == {item["checkpoint"]["S"] for item in before.values()}
    assert all(outcomes()[e["id"]] == "applied" for e in written)


async def test_d_and_e_disable_and_enable_a_lambda_mapping_each_logged(local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=1)
    arn = (await kinesis.describe_stream_summary(stream)).arn
    async with ReaderFactory(local_kinesis.endpoint_url) as readers:
        function = await readers.function()
        uuid = (await readers.mapping(arn, function))["UUID"]

    async def state() -> str:
        async with aws_client("lambda", local_kinesis.endpoint_url) as lam:
            return str((await lam.get_event_source_mapping(UUID=uuid))["State"])

    assert await state() == "Enabled"
    app = RecordingApp(kinesis, stream=stream, interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("9")
        panel = app.query_one(ReadersPanel)
        await select_reader(pilot, panel, "lambda", function)
        assert panel.check_action("disable_mapping", ()) and panel.check_action("rewind", ()) is None
        for key, verb, wanted in (("d", "disable", "Disabled"), ("e", "enable", "Enabled")):
            await pilot.press(key)
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the confirmation")
            assert f"Lambda mapping {uuid} ({function}) on {stream}" in str(
                app.screen.query_one("#confirm-action").render()
            )
            await pilot.press(*stream, "enter")
            await wait_until(
                pilot,
                lambda verb=verb: any(f"{verb} mapping {uuid}: applied" in n for n in app.notes),
                what=f"{verb} done",
            )
            assert await state() == wanted
        # Escape at the confirmation calls nothing.
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="the confirmation")
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("cancelled, nothing was called" in n for n in app.notes), what="cancel")
        assert await state() == "Enabled"

    made = intents("UpdateEventSourceMapping")
    assert [e["plan"]["action"] for e in made] == ["readers disable", "readers enable"]
    assert all(e["plan"]["mapping"] == uuid for e in made)
    assert all(outcomes()[e["id"]] == "applied" for e in made)


async def test_read_only_greys_the_reader_changes_and_refuses_them_with_a_message(kinesis, ddb, make_stream):
    stream, table, _worker = await kcl_application(kinesis, ddb, make_stream, records=4)
    app = RecordingApp(kinesis, stream=stream, interval=3600, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("9")
        panel = app.query_one(ReadersPanel)
        await select_reader(pilot, panel, "kcl", table)
        assert panel.read_only
        assert all(panel.check_action(a, ()) is None for a in ("rewind", "disable_mapping", "enable_mapping"))
        await pilot.press("w")
        await wait_until(pilot, lambda: any("disabled in read-only mode" in n for n in app.notes), what="refusal")
        assert any(n.startswith("rewind: disabled in read-only mode") for n in app.notes)
        assert not isinstance(app.screen, RewindScreen)
        # Leaving read-only gives the key back on this row.
        app.read_only = False
        await pilot.pause()
        assert panel.check_action("rewind", ()) is True
    assert not ActionLog.default().entries()


async def test_w_on_the_consumers_tab_opens_the_rewind_of_the_lease_table_read_there_and_esc_cancels_its_work(
    kinesis, ddb, make_stream
):
    from console.ui.panels.consumers import ConsumersPanel

    stream, table, _worker = await kcl_application(kinesis, ddb, make_stream, records=4)
    before = await checkpoints(ddb, table)
    app = RecordingApp(kinesis, stream=stream, interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("8")
        panel = app.query_one(ConsumersPanel)
        assert panel.check_action("rewind", ()) is None  # no lease table read yet: greyed out
        box = panel.query_one("#consumers-table", Input)
        box.focus()
        await pilot.press(*"w")  # typed into the lease table box, a letter like any other
        assert box.value == "w" and not isinstance(app.screen, RewindScreen)
        box.value = table
        await pilot.press("enter")
        await wait_until(pilot, lambda: panel.lease_table == table, what="the lease table read")
        assert panel.check_action("rewind", ()) is True
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the rewind dialog")
        screen = app.screen
        assert isinstance(screen, RewindScreen) and screen.table == table
        # Esc while the plan is read and the counters watched: the dialog closes, its work stops.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="the dialog closed")
        await wait_until(
            pilot,
            lambda: all(w.is_finished for w in app.workers if w.node is screen),
            what="the dialog's workers to stop",
        )
        # Esc while the run watches the counters before writing: cancelled, nothing written.
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the rewind dialog again")
        screen = app.screen
        assert isinstance(screen, RewindScreen)
        await wait_until(pilot, lambda: screen.plan is not None and screen.running is False, what="plan and watch")
        name = screen.query_one("#rewind-name", Input)
        name.value = table
        name.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.applying, what="the run")
        assert screen.query_one("#rewind-progress").has_class("-shown")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="the dialog closed")
        assert any(f"rewind {table}: cancelled before any write; nothing was written" in n for n in app.notes)
    assert await checkpoints(ddb, table) == before
    assert not ActionLog.default().entries()
