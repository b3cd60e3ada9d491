"""The Stream actions menu (key S, or "Stream actions" in the palette): retention, capacity mode,
encryption, record distribution, record size, warm throughput, tags, the resource policy, channels,
the account's On-demand Advantage and delete for the open stream, each
prepared by console.lifecycle.actions (facts read, AWS's rules checked: the command line's rules, by
construction), previewed, confirmed by typing the stream name, then run by it in a worker
(console.ui.changes), through the action log with who made the change.
Every entry is greyed out when the console is read-only. Like the reshard flow, `run_action` gets
only what it needs (a `StreamActionRequest` and the dialog callables) and reports back in messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from console.backend.protocol import ConsoleBackend, StreamSettingsBackend
from console.bounds import record_size_kib, warm_throughput_mibps
from console.errors import BadInput, ConsoleError
from console.lifecycle import actions
from console.lifecycle.channels import read_channel_config
from console.lifecycle.plans import MODE_NAMES, LifecyclePlan
from console.lifecycle.rules import AWS_MANAGED_KMS_KEY, check_kms_key, check_retention_hours
from console.lifecycle.settings import check_tag_key, parse_tag, policy_or_none, read_policy
from console.reshard.actionlog import ActionLog
from console.topology.model import AUTO_DISTRIBUTION, KEY_DISTRIBUTION, StreamSummary
from console.ui.reshard_flow import ReshardActivity, ReshardDialogs, ReshardProgressed
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.screens.prompt import ChoiceScreen, PromptScreen
from console.words import counted

ACTIONS = (  # each detail short enough that an entry is one line in the dialog's 76 columns
    ("retention", "Retention", "how long records stay readable"),
    ("mode", "Capacity mode", "on-demand or provisioned (once per 24 h)"),
    ("encryption", "Encryption", "server-side encryption (KMS), or off"),
    ("distribution", "Distribution", "AUTO (keys ignored) or by partition key"),
    ("max-record-size", "Record size", "the largest record, 1 to 10 MiB"),
    ("warm-throughput", "Warm throughput", "MiB/s an on-demand stream takes at once"),
    ("tag", "Tags", "set KEY=VALUE or remove -KEY"),
    ("policy", "Resource policy", "put one from a JSON file, or delete it"),
    ("channels", "Channels", "delivery to S3: create or delete one"),
    ("account", "On-demand Advantage", "the account's throughput commitment"),
    ("delete", "Delete stream", "the stream and every record in it"),
)


TITLE_WIDTH = max(len(title) for _action, title, _detail in ACTIONS) + 2  # the details line up after the longest


class StreamActionsScreen(ModalScreen[str | None]):
    """The menu; dismisses with the chosen action's id, or None."""

    DEFAULT_CSS = """
    StreamActionsScreen {
        align: center middle;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="stream-actions.cancel")]

    def __init__(self, summary: StreamSummary, *, read_only: bool) -> None:
        super().__init__()
        self.summary = summary
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        s = self.summary
        with Vertical(classes="prompt-dialog", id="stream-actions"):
            yield Static(Text(f"Stream actions: {s.name}"), classes="prompt-title")
            yield Static(
                Text(
                    f"{s.status} · {MODE_NAMES.get(s.mode, s.mode)} · {counted(s.open_shard_count, 'open shard')} · "
                    f"retention {s.retention_hours} h · encryption {s.encryption}"
                )
            )
            yield OptionList(
                *(
                    Option(Text(f"{title:<{TITLE_WIDTH}}{detail}"), id=action, disabled=self.read_only)
                    for action, title, detail in ACTIONS
                ),
                id="stream-actions-list",
            )
            help_text = "enter chooses · escape cancels · each shows its plan, then asks for the stream name"
            if self.read_only:
                help_text = "read-only (--read-only or read_only in the config): every action is disabled"
            yield Static(help_text, classes="prompt-help")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class LifecyclePreviewScreen(ModalScreen[bool]):
    """The plan before anything is called; Proceed only when AWS's rules allow it and it changes something."""

    DEFAULT_CSS = """
    LifecyclePreviewScreen {
        align: center middle;
    }
    LifecyclePreviewScreen #lifecycle-preview {
        width: 96;
        max-width: 100%;
    }
    LifecyclePreviewScreen #lifecycle-preview-body {
        height: auto;
        max-height: 20;
    }
    LifecyclePreviewScreen .dialog-buttons {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    LifecyclePreviewScreen Button {
        margin-left: 2;
    }
    LifecyclePreviewScreen #lifecycle-preview-keys {
        width: 1fr;
        height: 3;
        content-align: left middle;
        color: $text-muted;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="lifecycle-preview.cancel")]

    def __init__(self, plan: LifecyclePlan) -> None:
        super().__init__()
        self.plan = plan

    @property
    def can_proceed(self) -> bool:
        return self.plan.ok and not self.plan.is_noop

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt-dialog", id="lifecycle-preview"):
            yield Static(Text(f"{self.plan.stream}: {self.plan.summary}"), classes="prompt-title")
            with VerticalScroll(id="lifecycle-preview-body"):
                # The title already says what; the body is the rest of the plan's text.
                yield Static(Text(self.plan.render().partition("\n")[2]), id="lifecycle-preview-text")
            if self.plan.refusal:
                yield Static(Text(f"Cannot proceed: {self.plan.refusal}"), id="prompt-error")
            with Horizontal(classes="dialog-buttons"):
                # What enter does right now: it presses the focused button (tab moves between them).
                yield Static(id="lifecycle-preview-keys")
                yield Button("Cancel", id="cancel")
                yield Button("Proceed", id="proceed", variant="warning", disabled=not self.can_proceed)

    def on_mount(self) -> None:
        self.query_one("#proceed" if self.can_proceed else "#cancel", Button).focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        what = {"proceed": "proceeds", "cancel": "cancels"}.get(event.widget.id or "")
        if what is not None:
            self.query_one("#lifecycle-preview-keys", Static).update(f"enter {what} · esc cancels")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "proceed" and self.can_proceed)

    def action_cancel(self) -> None:
        self.dismiss(False)


@dataclass(frozen=True)
class StreamActionRequest:
    action: str  # an id of ACTIONS
    summary: StreamSummary  # as last polled, for the dialogs' "now ..."; the plan is prepared afresh
    backend: ConsoleBackend  # the backend the console polls


class StreamDeleted(Message):
    """The open stream was deleted: the app offers another."""


def _problem(check: Callable[[str], object], text: str) -> str | None:
    try:
        check(text)
    except BadInput as error:
        return error.message
    return None


# What a dialog's message calls its field: the CLI's messages name the flag (--hours), a dialog has none.
RETENTION = "retention"
KMS_KEY = "the KMS key"
RECORD_SIZE = "the record size in KiB"
WARM_THROUGHPUT = "warm throughput in MiB/s"


def retention_problem(text: str) -> str | None:
    return _problem(lambda typed: check_retention_hours(typed, option=RETENTION), text)


def kms_key_problem(text: str) -> str | None:
    return None if text.lower() == "off" else _problem(lambda typed: check_kms_key(typed, what=KMS_KEY), text)


def record_size_problem(text: str) -> str | None:
    return _problem(lambda typed: record_size_kib(typed, RECORD_SIZE), text)


def warm_throughput_problem(text: str) -> str | None:
    return _problem(lambda typed: warm_throughput_mibps(typed, WARM_THROUGHPUT), text)


async def run_action(request: StreamActionRequest, dialogs: ReshardDialogs) -> None:
    """Ask what the action needs, have console.lifecycle.actions prepare the plan, preview it, take the
    typed name, then have it run; progress goes back to the app as messages (the header's activity
    line, a poll, or the stream being gone)."""
    action, backend = request.action, request.backend
    stream = request.summary.name
    try:
        plan = await _prepare(request, dialogs)
    except ConsoleError as error:
        dialogs.notify(f"{action}: {error.message}", severity="error", timeout=10)
        return
    if plan is None:
        return
    if not await dialogs.ask(LifecyclePreviewScreen(plan)):
        dialogs.notify(f"{action}: cancelled, nothing was called", timeout=4)
        return
    if not await dialogs.ask(ConfirmByNameScreen(stream, plan.summary)):
        dialogs.notify(f"{action}: cancelled, nothing was called", timeout=4)
        return
    dialogs.post(ReshardActivity(f"{action}: {plan.summary}"))
    try:
        await actions.run(
            backend,
            plan,
            action_log=ActionLog.default(),
            progress=lambda text: None if text.startswith("calling") else dialogs.notify(text, title=action, timeout=5),
        )
    except ConsoleError as error:
        dialogs.notify(f"{action} failed: {error.message}", severity="error", timeout=15)
    else:
        dialogs.notify(f"{action} done: {plan.summary}", title=action, timeout=8)
        if action == "delete":
            dialogs.post(ReshardActivity(None))
            dialogs.post(StreamDeleted())
            return
    finally:
        dialogs.post(ReshardActivity(None))
    dialogs.post(ReshardProgressed())


async def _prepare(request: StreamActionRequest, dialogs: ReshardDialogs) -> LifecyclePlan | None:
    """Ask what the action needs, then prepare it; None when the operator cancels."""
    action, backend = request.action, request.backend
    summary = await backend.describe_stream_summary(request.summary.name)
    stream = summary.name
    if action == "retention":
        answer = await dialogs.ask(
            PromptScreen(
                f"Retention of {stream} (now {summary.retention_hours} h)",
                "Hours, from 24 to 8760; a decrease makes older records unreadable at once",
                str(summary.retention_hours),
                retention_problem,
            )
        )
        return (
            None
            if answer is None
            else await actions.prepare_retention(backend, stream, check_retention_hours(answer, option=RETENTION))
        )
    if action == "mode":
        other = "ON_DEMAND" if summary.mode == "PROVISIONED" else "PROVISIONED"
        choice = await dialogs.ask(
            ChoiceScreen(
                f"Capacity mode of {stream} (now {MODE_NAMES.get(summary.mode, summary.mode)})",
                [(other, f"switch to {MODE_NAMES[other]}"), (summary.mode, f"stay {MODE_NAMES.get(summary.mode)}")],
            )
        )
        if choice is None:
            return None
        return await actions.prepare_mode(
            backend, stream, choice, shards=None, action_log=ActionLog.default(), now=time.time()
        )
    if action == "encryption":
        key_now = summary.key_id
        answer = await dialogs.ask(
            PromptScreen(
                f"Encryption of {stream} (now {summary.encryption}" + (f", key {key_now})" if key_now else ")"),
                f"A KMS key alias, id or ARN ({AWS_MANAGED_KMS_KEY} is AWS's own), or 'off'",
                "off" if summary.encryption == "KMS" else AWS_MANAGED_KMS_KEY,
                kms_key_problem,
            )
        )
        if answer is None:
            return None
        key = None if answer.lower() == "off" else check_kms_key(answer, what=KMS_KEY)
        return await actions.prepare_encryption(backend, stream, key)
    if action in ("distribution", "max-record-size", "warm-throughput"):
        return await _prepare_setting(action, backend, summary, dialogs)
    if action in ("tag", "policy", "channels", "account"):
        return await _prepare_resource(action, backend, summary, dialogs)
    # delete: the rules are the command line's (consumers need consent, active channels refuse it)
    plan = await actions.prepare_delete(backend, stream, enforce_consumer_deletion=False)
    consumers = plan.facts.get("consumers") or []
    if consumers:
        choice = await dialogs.ask(
            ChoiceScreen(
                f"{stream} has {len(consumers)} registered consumer(s): deregister them with it?",
                [("yes", "yes: delete the stream and its consumers"), ("no", "no: keep the stream")],
            )
        )
        if choice != "yes":
            return None
        plan = await actions.prepare_delete(backend, stream, enforce_consumer_deletion=True)
    return plan


async def _prepare_setting(
    action: str, backend: StreamSettingsBackend, summary: StreamSummary, dialogs: ReshardDialogs
) -> LifecyclePlan | None:
    """Today's settings: record distribution, record size, warm throughput."""
    stream = summary.name
    if action == "distribution":
        other = KEY_DISTRIBUTION if summary.auto_distribution else AUTO_DISTRIBUTION
        choice = await dialogs.ask(
            ChoiceScreen(
                f"Record distribution of {stream} (now {summary.record_distribution})",
                [
                    (
                        other,
                        "switch to AUTO: Kinesis spreads records, keys no longer place them"
                        if other == AUTO_DISTRIBUTION
                        else "switch back to partition keys placing records",
                    ),
                    (summary.record_distribution, "keep it"),
                ],
            )
        )
        return None if choice is None else await actions.prepare_distribution(backend, stream, choice)
    if action == "max-record-size":
        answer = await dialogs.ask(
            PromptScreen(
                f"Largest record of {stream} (now {summary.max_record_size_kib} KiB)",
                "KiB, from 1024 (1 MiB) to 10240 (10 MiB)",
                str(summary.max_record_size_kib),
                record_size_problem,
            )
        )
        return (
            None
            if answer is None
            else await actions.prepare_max_record_size(backend, stream, record_size_kib(answer, RECORD_SIZE))
        )
    answer = await dialogs.ask(
        PromptScreen(
            f"Warm throughput of {stream} (now {summary.warm_throughput_target_mibps or 0} MiB/s)",
            "MiB/s, from 0 to 10240; on-demand streams, with the account's On-demand Advantage",
            str(summary.warm_throughput_target_mibps or 0),
            warm_throughput_problem,
        )
    )
    return (
        None
        if answer is None
        else await actions.prepare_warm_throughput(backend, stream, warm_throughput_mibps(answer, WARM_THROUGHPUT))
    )


def tag_edits(text: str) -> tuple[dict[str, str], list[str]]:
    """ "team=payments tier=1" sets tags, "-tier" removes one; one kind at a time (two calls, two plans)."""
    words = text.split()
    if not words:
        raise BadInput("type KEY=VALUE to set a tag, or -KEY to remove one", code="usage")
    removes = [check_tag_key(word[1:]) for word in words if word.startswith("-")]
    sets = dict(parse_tag(word) for word in words if not word.startswith("-"))
    if sets and removes:
        raise BadInput("set tags or remove them, one at a time", code="usage")
    return sets, removes


async def _prepare_resource(
    action: str, backend: StreamSettingsBackend, summary: StreamSummary, dialogs: ReshardDialogs
) -> LifecyclePlan | None:
    """Tags, the resource policy, channels and the account's On-demand Advantage."""
    stream = summary.name
    if action == "tag":
        existing = await backend.resource_tags(summary.arn)
        shown = " ".join(f"{key}={value}" for key, value in sorted(existing.items())) or "none"
        answer = await dialogs.ask(
            PromptScreen(
                f"Tags of {stream} (now {shown})",
                "KEY=VALUE to set, -KEY to remove, separated by spaces",
                "",
                lambda text: _problem(tag_edits, text),
            )
        )
        if answer is None:
            return None
        sets, removes = tag_edits(answer)
        if sets:
            return await actions.prepare_tag(backend, stream, sets)
        return await actions.prepare_untag(backend, stream, removes)
    if action == "policy":
        current = policy_or_none(await backend.resource_policy(summary.arn))
        choice = await dialogs.ask(
            ChoiceScreen(
                f"Resource policy of {stream} ({'set' if current else 'none'})",
                [("put", "put a policy from a JSON file"), ("delete", "delete the policy")],
            )
        )
        if choice == "delete":
            return await actions.prepare_policy(backend, stream, None)
        if choice != "put":
            return None
        path = await dialogs.ask(
            PromptScreen(
                "Policy file",
                "The path of a JSON resource policy",
                "policy.json",
                lambda text: _problem(read_policy, text),
            )
        )
        return None if path is None else await actions.prepare_policy(backend, stream, read_policy(path))
    if action == "channels":
        channels = await backend.stream_channels(summary.arn)
        choice = await dialogs.ask(
            ChoiceScreen(
                f"Channels of {stream} ({len(channels)})",
                [("create", "create one from a CreateChannel request (JSON file)")]
                + [(c.arn, f"delete {c.name} ({c.status})") for c in channels],
            )
        )
        if choice is None:
            return None
        if choice != "create":
            name = next(c.name for c in channels if c.arn == choice)
            return await actions.prepare_channel_delete(backend, name)
        path = await dialogs.ask(
            PromptScreen(
                "Channel request file",
                "The path of CreateChannel's request as JSON (checked against the Kinesis API model)",
                "channel.json",
                lambda text: _problem(read_channel_config, text),
            )
        )
        return None if path is None else await actions.prepare_channel_create(backend, read_channel_config(path))
    commitment = await actions.read_commitment(backend)
    choice = await dialogs.ask(
        ChoiceScreen(
            f"On-demand Advantage of the account (now {commitment['status']})",
            [("on", "turn it on: a minimum throughput commitment"), ("off", "turn it off at its earliest end")],
        )
    )
    return None if choice is None else await actions.prepare_account(backend, choice == "on")
