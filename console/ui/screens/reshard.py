"""The reshard plan preview of the live console (the name is then typed in console.ui.screens.confirm).

    ok = await app.push_screen_wait(ReshardPreviewScreen(plan, stream_name))     # True: proceed

It is modal and dismisses with a bool. The preview shows the key space as plain text ribbons
before and after (console.reshard.plan.ribbons: unchanged shards keep their character, new shards get
capitals) with a legend of short shard ids, how much of the key space (and of a key sample, when
there is one) moves, the shards before and after with their ranges in aligned columns (hash keys in
the console's key format), and any breached limits; a plan with breaches cannot proceed. With a
lease table open in the Consumers tab it also shows the reshard barrier (console.consumers.barrier);
when consumers are still reading the shards the plan changes, Proceed is held back and only `f`
(Apply anyway) goes on, so forcing is a step of its own. On a narrow terminal the calls wrap with
their hash keys whole (a split's 39-digit key gets a line of its own); `c` copies the calls as
`aws kinesis` commands, every value in full.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Iterable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.read.printable import printable
from console.reshard.model import PlannedShard
from console.reshard.plan import ReshardPlan, ribbon_labels, ribbons
from console.reshard.render import plan_details
from console.topology.model import Shard
from console.ui.format import format_hash_key, short_shard_id

SHORT_SCREEN_ROWS = 30  # fewer terminal lines than this: the preview drops its blank lines
RIBBON_WIDTH = 64  # at most; a narrow terminal gets a shorter bar (ribbon_width)
LEGEND_ENTRIES = 24  # per bar; a bigger stream's legend ends in "…"
MAX_ROWS = 20


def legend(labels: list[str], shards: Iterable[Shard | PlannedShard], *, new: bool = False) -> Text:
    """'0 #4  1 #5  …': which shard each character of a bar stands for (new ones marked)."""
    text = Text()
    seen: set[str] = set()
    for label, shard in zip(labels, shards):
        if label in seen:
            continue
        seen.add(label)
        if len(seen) > LEGEND_ENTRIES:
            text.append("…")
            break
        is_new = new and not getattr(shard, "unchanged", True)
        text.append(label, style="bold")
        if shard.shard_id:  # a shard still to be created has no id yet: "new" alone says it
            text.append(f" {short_shard_id(shard.shard_id)}")
        text.append(" new  " if is_new or not shard.shard_id else "  ", style="green" if is_new else "")
    return text


def moved_summary(plan: ReshardPlan, sample_label: str) -> str:
    text = f"{plan.moved_fraction:.2%} of the key space moves to another shard"
    movement = plan.key_movement
    if movement is not None and movement.sample_size:
        text += f" · {movement.moved} of the {movement.sample_size} {sample_label} move ({movement.moved_fraction:.1%})"
    return text


PROSE_PREFIXES = ("Ordering:", "Note:", "Split key:")  # sentences, not columns: wrapped to the dialog
CALL_LINE = re.compile(r"  \d+\. ")  # "  1. SplitShard shardId-... at <key>": wrapped, the key kept whole


def _wrap(line: str, width: int, indent: str) -> list[str]:
    """Words kept whole (a hash key or shard id is never cut; one longer than the box scrolls sideways)."""
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def plan_body(plan: ReshardPlan, key_format: str, width: int | None = None) -> str:
    """Everything below the bars (console.reshard.render.plan_details), with hash keys in the
    console's key format and short shard ids. With `width`, the prose and call lines wrap to it (the
    rows keep their columns and scroll sideways)."""
    lines = plan_details(
        plan, MAX_ROWS, key_text=lambda key: format_hash_key(key, key_format), shard_name=short_shard_id
    )
    if width is not None:
        wrapped_lines = []
        for line in lines:
            if line.startswith(PROSE_PREFIXES):
                wrapped_lines += _wrap(line, width, "  ")
            elif CALL_LINE.match(line) and len(line) > width:
                wrapped_lines += _wrap(line, width, " " * (line.index(".") + 2))
            else:
                wrapped_lines.append(line)
        lines = wrapped_lines
    return "\n".join(lines)


def aws_cli_commands(plan: ReshardPlan, stream_name: str) -> str:
    """The plan's calls as `aws kinesis` commands, one a line, every id and hash key in full."""
    commands = []
    for op in plan.operations:
        arguments: list[str]
        if op.kind == "split":
            arguments = [
                "split-shard",
                "--shard-to-split",
                str(op.shard_id),
                "--new-starting-hash-key",
                str(op.new_starting_hash_key),
            ]
        elif op.kind == "merge":
            arguments = [
                "merge-shards",
                "--shard-to-merge",
                str(op.shard_id),
                "--adjacent-shard-to-merge",
                str(op.adjacent_shard_id),
            ]
        else:
            arguments = [
                "update-shard-count",
                "--target-shard-count",
                str(op.target_shard_count),
                "--scaling-type",
                "UNIFORM_SCALING",
            ]
        commands.append(shlex.join(["aws", "kinesis", arguments[0], "--stream-name", stream_name, *arguments[1:]]))
    return "\n".join(commands)


class ReshardPreviewScreen(ModalScreen[bool]):
    """Shows what a reshard will do; dismisses True to proceed, False to cancel."""

    DEFAULT_CSS = """
    ReshardPreviewScreen {
        align: center middle;
    }
    ReshardPreviewScreen #preview-dialog {
        width: 90%;
        max-width: 120;
        height: 90%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    ReshardPreviewScreen #preview-title {
        text-style: bold;
        margin-bottom: 1;
    }
    ReshardPreviewScreen #preview-ribbons {
        margin-bottom: 1;
    }
    ReshardPreviewScreen #preview-breaches {
        color: $error;
        text-style: bold;
    }
    ReshardPreviewScreen #preview-consumers.-behind {
        color: $warning;
    }
    ReshardPreviewScreen #preview-held-back {
        color: $error;
        text-style: bold;
    }
    ReshardPreviewScreen #preview-body {
        height: 1fr;
        border: round $panel;
    }
    ReshardPreviewScreen #preview-text {
        width: auto;  /* lines keep their columns; the box scrolls sideways on a narrow terminal */
    }
    ReshardPreviewScreen #preview-buttons {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    ReshardPreviewScreen Button {
        margin-left: 2;
    }
    ReshardPreviewScreen #preview-keys {
        width: 1fr;
        color: $text-muted;
    }
    /* A short terminal: the whole height and no blank lines between the parts, so the plan keeps room */
    ReshardPreviewScreen.-short #preview-dialog {
        height: 100%;
    }
    ReshardPreviewScreen.-short #preview-title, ReshardPreviewScreen.-short #preview-ribbons {
        margin-bottom: 0;
    }
    ReshardPreviewScreen.-short #preview-buttons {
        margin-top: 0;
    }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "proceed", "Proceed", show=False),
        Binding("f", "force", "Apply anyway"),
        Binding("c", "copy_calls", "Copy calls"),
    ]

    def __init__(
        self,
        plan: ReshardPlan,
        stream_name: str,
        *,
        key_format: str = "decimal",
        sample_label: str = "sample keys",
        consumers: list[str] | None = None,
        held_back: str | None = None,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.stream_name = stream_name
        self.key_format = key_format
        self.sample_label = sample_label  # what the plan's key sample is, e.g. "keys typed in Placement"
        self.consumers = consumers or []  # the lease table's barrier lines (Consumers tab), if one is open
        self.held_back = held_back  # why consumers hold the change back (only `f` goes on), or None

    def text_width(self) -> int:
        """The plan box's inner width: 90% of the terminal (at most 120), less two borders, the padding and a scrollbar."""
        return max(20, min(120, self.app.size.width * 9 // 10) - 10)

    def ribbon_width(self) -> int:
        """The bars fit the dialog: 90% of the terminal (at most 120), less border, padding and the
        'before |' label."""
        dialog = min(120, self.app.size.width * 9 // 10)
        return max(16, min(RIBBON_WIDTH, dialog - 4 - 9))

    @property
    def can_proceed(self) -> bool:
        return self.plan.ok and not self.plan.is_noop and self.held_back is None

    @property
    def can_force(self) -> bool:
        return self.plan.ok and not self.plan.is_noop and self.held_back is not None

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        if action == "force" and not self.can_force:
            return False  # not in the footer: there is nothing to force
        return not (action == "copy_calls" and not self.plan.operations)

    def compose(self) -> ComposeResult:
        before, after = ribbons(self.plan, self.ribbon_width())
        before_labels, after_labels = ribbon_labels(self.plan)
        bars = Text(f"before |{before}|\n        ")
        bars.append_text(legend(before_labels, self.plan.before))
        bars.append(f"\nafter  |{after}|\n        ")
        bars.append_text(legend(after_labels, self.plan.after, new=True))
        bars.append(f"\n{moved_summary(self.plan, self.sample_label)}")
        with Vertical(id="preview-dialog"):
            yield Static(Text(f"{self.stream_name}: {self.plan.summary}"), id="preview-title")
            yield Static(bars, id="preview-ribbons")
            if self.plan.breaches:
                yield Static(
                    Text(
                        "Cannot proceed, limits breached:\n"
                        + "\n".join(f"- {breach.detail} (rule: {breach.rule})" for breach in self.plan.breaches)
                    ),
                    id="preview-breaches",
                )
            elif self.plan.is_noop:
                yield Static(Text("Nothing to do: the stream already looks like this."), id="preview-breaches")
            if self.consumers:
                # Lease owners and keys come from the lease table: escaped, never control sequences.
                yield Static(
                    Text("\n".join(map(printable, self.consumers)), style="bold" if self.held_back else ""),
                    id="preview-consumers",
                    classes="-behind" if self.held_back else "",
                )
            if self.can_force:
                yield Static(
                    Text(
                        f"Held back: {printable(self.held_back or '')}.\nPress f to apply anyway (those consumers "
                        "fall further behind until they finish the parents), or Escape to cancel."
                    ),
                    id="preview-held-back",
                )
            with ScrollableContainer(id="preview-body"):
                yield Static(
                    Text(plan_body(self.plan, self.key_format, self.text_width()), no_wrap=True), id="preview-text"
                )
            with Horizontal(id="preview-buttons"):
                # What enter does right now: it presses the focused button (tab moves between them).
                yield Static(id="preview-keys")
                # Compact: one line each, so the plan keeps room on a 24-line terminal.
                yield Button("Cancel", id="cancel", compact=True)
                if self.can_force:
                    yield Button("Apply anyway (f)", id="force", variant="error", compact=True)
                else:
                    yield Button(
                        "Proceed", id="proceed", variant="warning", disabled=not self.can_proceed, compact=True
                    )

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_SCREEN_ROWS, "-short")

    def on_mount(self) -> None:
        self.set_class(self.app.size.height < SHORT_SCREEN_ROWS, "-short")
        if self.plan.operations:  # on the box's border: no line taken from the plan on a 24-line terminal
            self.query_one("#preview-body").border_subtitle = "c copies the calls"
        # Focus never starts on a button that changes the stream when consumers hold the change back.
        self.query_one("#proceed" if self.can_proceed else "#cancel", Button).focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        what = {"proceed": "proceeds", "force": "applies anyway", "cancel": "cancels"}.get(event.widget.id or "")
        if what is not None:
            self.query_one("#preview-keys", Static).update(f"enter {what} · esc cancels")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "proceed":
            self.action_proceed()
        elif event.button.id == "force":
            self.action_force()
        else:
            self.action_cancel()

    def action_proceed(self) -> None:
        if self.can_proceed:
            self.dismiss(True)

    def action_force(self) -> None:
        if self.can_force:
            self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_copy_calls(self) -> None:
        commands = aws_cli_commands(self.plan, self.stream_name)
        self.app.copy_to_clipboard(commands)
        count = len(self.plan.operations)
        self.notify(f"copied {count} call{'' if count == 1 else 's'} as aws kinesis commands", timeout=3)
