"""Every change is prepared and run once (console.lifecycle.actions), so the command line and the
console cannot drift: each action here is made through `kconsole` (in-process) on one stream and
through the console's own dialogs (Pilot) on a twin stream of the same shape, on the same embedded
server, and the two plans, refusals and action-log entries must be the same once the streams' names
are set aside."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from textual.widgets import Button

from console.cli import main
from console.reshard.actionlog import ActionLog
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import ChoiceScreen, PromptScreen
from console.ui.screens.stream_actions import ACTIONS, LifecyclePreviewScreen, StreamActionsScreen
from tests.commands.test_cli_today import channel_request
from tests.conftest import unique_stream_name
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(240)

STREAM = "<stream>"
# The keys that pick a choice: the mode and distribution dialogs offer the other setting first, the
# policy dialog offers put, then delete.
FIRST_CHOICE, SECOND_CHOICE = ("enter",), ("down", "enter")
# What each log entry says of itself rather than of the change: when, which process, its own id.
# `backend` is the connection's label: the command line names the endpoint URL, the console's test
# backend the embedded server.
OWN_FIELDS = ("epoch", "time", "id", "intent", "pid", "backend")


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


class Twins:
    """Two streams of the same shape: one changed by the command line, one by the console."""

    def __init__(self, kinesis: Any, make_stream: Any) -> None:
        self.kinesis = kinesis
        self.make_stream = make_stream
        self.cli = self.ui = ""
        self.arns: dict[str, str] = {}

    async def make(self, *, on_demand: bool = False) -> None:
        for face in ("cli", "ui"):
            if on_demand:
                name = unique_stream_name(face)
                self.make_stream.created.append(name)
                await self.kinesis.create_stream(name, None, on_demand=True)
                await self.kinesis.wait_for_active(name)
            else:
                name = await self.make_stream(shards=2)
            setattr(self, face, name)
            self.arns[name] = (await self.kinesis.describe_stream_summary(name)).arn

    def plain(self, value: Any) -> Any:
        """`value` with either stream's name and ARN replaced by one placeholder."""
        text = json.dumps(value, sort_keys=True)
        for name in (self.cli, self.ui):
            text = text.replace(self.arns[name], f"arn:{STREAM}").replace(name, STREAM)
        return json.loads(text)

    def log(self, stream: str) -> list[dict]:
        entries = [e for e in ActionLog.default().entries() if e.get("stream") in (stream, f"to-s3-{stream}")]
        return self.plain([{k: v for k, v in e.items() if k not in OWN_FIELDS} for e in entries])


async def kconsole(capsys, endpoint: str, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*argv, "--endpoint-url", endpoint])
    out, err = capsys.readouterr()
    return code, out, err


async def console_plan(app, pilot, action: str, answer: str | tuple[str, ...] | None = None, *, proceed: bool = True):
    """Choose `action` in the Stream actions menu, give `answer` to its prompt (a tuple: the keys that
    pick a choice), and return the plan the preview shows; with `proceed`, confirm with the stream's
    name and wait until it is done and the stream is ACTIVE again (as the command's --wait)."""
    await pilot.press("S")
    await wait_until(pilot, lambda: isinstance(app.screen, StreamActionsScreen), what="menu")
    index = [entry[0] for entry in ACTIONS].index(action)
    await pilot.press(*["down"] * index, "enter")
    if isinstance(answer, tuple):
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="choice")
        await pilot.press(*answer)
    elif answer is not None:
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), what="prompt")
        app.screen.query_one("Input").value = answer
        await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, LifecyclePreviewScreen), what="preview")
    plan = app.screen.plan
    if not proceed:
        assert app.screen.query_one("#proceed", Button).disabled
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("cancelled, nothing was called" in n for n in app.notes), what="cancel")
        return plan
    done = len([n for n in app.notes if f"{action} done" in n])
    await pilot.click("#proceed")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="typed confirmation")
    await pilot.press(*app.stream, "enter")
    await wait_until(pilot, lambda: len([n for n in app.notes if f"{action} done" in n]) > done, what="done")
    await app.backend.wait_for_active(app.stream)
    return plan


async def test_each_change_through_the_command_line_and_the_console_plans_and_logs_the_same(
    kinesis, make_stream, local_kinesis, capsys
):
    endpoint = local_kinesis.endpoint_url
    twins = Twins(kinesis, make_stream)
    await twins.make()
    cli_plans = []
    for argv in (
        ("stream", "retention", twins.cli, "--hours", "48"),
        ("stream", "tag", twins.cli, "team=payments", "tier=1"),
        ("stream", "untag", twins.cli, "tier"),
        ("stream", "encryption", twins.cli, "--kms-key", "alias/aws/kinesis"),
        ("stream", "max-record-size", twins.cli, "--kib", "2048"),
        ("stream", "policy", twins.cli, "--delete"),  # there is none: nothing to do in either face
        ("stream", "mode", twins.cli, "on-demand"),
        ("stream", "distribution", twins.cli, "auto"),
    ):
        code, out, err = await kconsole(capsys, endpoint, *argv, "--yes", "--wait", "--json")
        assert code == 0, err
        cli_plans.append(json.loads(out)["plan"])

    app = RecordingApp(kinesis, stream=twins.ui, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        ui_plans = [
            await console_plan(app, pilot, "retention", "48"),
            await console_plan(app, pilot, "tag", "team=payments tier=1"),
            await console_plan(app, pilot, "tag", "-tier"),
            await console_plan(app, pilot, "encryption", "alias/aws/kinesis"),
            await console_plan(app, pilot, "max-record-size", "2048"),
            await console_plan(app, pilot, "policy", SECOND_CHOICE, proceed=False),
            await console_plan(app, pilot, "mode", FIRST_CHOICE),
            await console_plan(app, pilot, "distribution", FIRST_CHOICE),
        ]

    assert [twins.plain(plan) for plan in cli_plans] == [twins.plain(plan.to_json()) for plan in ui_plans]
    assert [plan["summary"] for plan in twins.plain(cli_plans)] == [
        "increase retention from 24 h to 48 h (2 days)",
        "set 2 tag(s)",
        "remove 1 tag(s)",
        "turn server-side encryption on: KMS key alias/aws/kinesis",
        "raise the record size limit from 1 MiB to 2 MiB",
        "the stream has no resource policy",
        f"switch {STREAM} from provisioned to on-demand",
        "switch to AUTO record distribution (Kinesis spreads records; keys no longer place them)",
    ]
    cli_log, ui_log = twins.log(twins.cli), twins.log(twins.ui)
    assert [e["operation"] for e in cli_log if e["kind"] == "intent"] == [
        "IncreaseStreamRetentionPeriod",
        "TagResource",
        "UntagResource",
        "StartStreamEncryption",
        "UpdateMaxRecordSize",
        "UpdateStreamMode",
        "UpdateStreamRecordDistributionStrategy",
    ]
    assert cli_log == ui_log
    assert all(e["outcome"] == "applied" for e in ui_log if e["kind"] == "outcome")
    assert ui_log[0]["who"] and ui_log[0]["user"]  # the console's changes say who made them, as the CLI's do


async def test_a_stream_with_a_channel_is_refused_deletion_in_both_faces_in_the_same_words(
    kinesis, make_stream, local_kinesis, capsys
):
    endpoint = local_kinesis.endpoint_url
    twins = Twins(kinesis, make_stream)
    await twins.make(on_demand=True)
    for name in (twins.cli, twins.ui):
        await kinesis.create_channel(channel_request(f"to-s3-{name}", twins.arns[name]))
    try:
        code, _out, err = await kconsole(capsys, endpoint, "stream", "delete", twins.cli, "--yes")
        assert code == 1 and "Traceback" not in err
        app = RecordingApp(kinesis, stream=twins.ui, interval=3600)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.view is not None, what="first poll")
            plan = await console_plan(app, pilot, "delete", proceed=False)
        refusal = twins.plain(plan.refusal)
        assert refusal.startswith(f"the stream has 1 active channel(s) (to-s3-{STREAM}); AWS refuses to delete it")
        assert twins.plain(err).strip() == f"kconsole: error: delete {STREAM} refused, nothing was called: {refusal}"
        assert set(await kinesis.stream_names()) >= {twins.cli, twins.ui}  # neither face called DeleteStream
        assert twins.log(twins.cli) == twins.log(twins.ui) == []
    finally:
        for name in (twins.cli, twins.ui):
            for channel in await kinesis.list_channels(stream_arn=twins.arns[name]):
                await kinesis.delete_channel(channel["ChannelARN"])


async def test_enhanced_monitoring_from_heat_and_from_the_heat_tab_logs_the_same(
    kinesis, make_stream, local_kinesis, capsys
):
    endpoint = local_kinesis.endpoint_url
    twins = Twins(kinesis, make_stream)
    await twins.make()
    code, _out, err = await kconsole(capsys, endpoint, "heat", twins.cli, "--enable-enhanced-monitoring", "--yes")
    assert code == 0, err
    app = RecordingApp(kinesis, stream=twins.ui, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        app.run_worker(app.action_enable_monitoring())
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="typed confirmation")
        await pilot.press(*twins.ui, "enter")
        await wait_until(pilot, lambda: any("enhanced monitoring on" in n for n in app.notes), what="enabled")
    cli_log, ui_log = twins.log(twins.cli), twins.log(twins.ui)
    assert [e["operation"] for e in cli_log] == ["EnableEnhancedMonitoring"] * 2  # the intent and its outcome
    assert cli_log == ui_log
    for name in (twins.cli, twins.ui):
        assert (await kinesis.describe_stream_summary(name)).enhanced_metrics


async def test_a_lambda_mapping_disabled_and_enabled_from_readers_and_from_the_readers_tab_logs_the_same(
    kinesis, make_stream, local_kinesis, capsys
):
    from console.ui.panels.readers import ReadersPanel
    from tests.consumers.reader_resources import ReaderFactory
    from tests.ui.panels.test_reader_changes import select_reader

    endpoint = local_kinesis.endpoint_url
    twins = Twins(kinesis, make_stream)
    await twins.make()
    mappings = {}
    async with ReaderFactory(endpoint) as readers:
        function = await readers.function()
        for name in (twins.cli, twins.ui):
            mappings[name] = (await readers.mapping(twins.arns[name], function))["UUID"]
    for action in ("disable", "enable"):
        code, _out, err = await kconsole(
            capsys, endpoint, "readers", action, twins.cli, "--mapping", mappings[twins.cli], "--yes"
        )
        assert code == 0, err
    app = RecordingApp(kinesis, stream=twins.ui, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.view is not None, what="first poll")
        await pilot.press("9")
        await select_reader(pilot, app.query_one(ReadersPanel), "lambda", function)
        for key, action in (("d", "disable"), ("e", "enable")):
            await pilot.press(key)
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="typed confirmation")
            await pilot.press(*twins.ui, "enter")
            await wait_until(
                pilot,
                lambda action=action: any(f"{action} mapping {mappings[twins.ui]}: applied" in n for n in app.notes),
                what=f"{action} done",
            )

    def logged(stream: str) -> list[dict]:
        return json.loads(json.dumps(twins.log(stream)).replace(mappings[stream], "<mapping>"))

    cli_log, ui_log = logged(twins.cli), logged(twins.ui)
    assert [(e["kind"], e["operation"]) for e in cli_log] == [
        ("intent", "UpdateEventSourceMapping"),
        ("outcome", "UpdateEventSourceMapping"),
    ] * 2
    assert cli_log == ui_log
