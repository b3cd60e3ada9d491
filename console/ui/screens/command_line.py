"""k9s habits: `:` command mode, a read-only toggle, and the chosen theme remembered.

`:` opens a one-line prompt at the bottom; each tab's id and aliases (console.ui.tabs: `:shards`,
`:heat`, `:consumers` ...) switch to it, `:stream NAME` opens a stream, `:streams` picks one, `:ro` /
`:rw` toggle read-only, `:unmask` turns masking off (after the stream name is typed; logged) and `:mask`
on again, `:q` quits. The app holds one `K9sHabits`, which runs what these keys (and ctrl+c, j / k, R) do.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import DOMQuery
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Input, Static, TextArea

from console.ui.bindings import READ_ONLY_DISABLES
from console.ui.screens.confirm import ConfirmByNameScreen
from console.ui.tabs import TABS

CTRL_C_AGAIN_SECONDS = 3.0

# What AWS accepts as a stream name; a typo is answered on the command line, not by the server.
_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class ConsoleCommand:
    """One command of command mode: its words, what it does, and the app action it runs (None for
    the ones that take an argument or need the app's state, handled in K9sHabits.run)."""

    words: tuple[str, ...]
    usage: str
    help: str
    action: str | None = None


COMMANDS: tuple[ConsoleCommand, ...] = (
    *(ConsoleCommand((tab.id, *tab.aliases), tab.id, f"show {tab.summary}", tab.action) for tab in TABS),
    ConsoleCommand(("stream",), "stream NAME", "open stream NAME"),
    ConsoleCommand(
        ("streams", "st"), "streams", "the fleet: every stream, worst first; enter opens one", "pick_stream"
    ),
    ConsoleCommand(("ro", "readonly", "read-only"), "ro", "enter read-only mode"),
    ConsoleCommand(("rw", "readwrite", "read-write"), "rw", "leave read-only mode (asks you to type a name)"),
    ConsoleCommand(("unmask", "nomask"), "unmask", "show records and keys unmasked (asks you to type a name; logged)"),
    ConsoleCommand(("mask",), "mask", "apply the mask rules again"),
    ConsoleCommand(("refresh", "r"), "refresh", "poll the stream now", "refresh"),
    ConsoleCommand(("help", "h", "?"), "help", "every key and command", "help"),
    ConsoleCommand(("q", "quit", "q!", "qa"), "q", "quit", "quit"),
)
_BY_WORD = {word: command for command in COMMANDS for word in command.words}


@dataclass(frozen=True)
class ParsedCommand:
    command: ConsoleCommand
    argument: str | None = None


def parse(text: str) -> ParsedCommand | str:
    """The command `text` names, or an error line to show under the prompt."""
    words = text.strip().removeprefix(":").split()
    if not words:
        return "type a command, e.g. shards, stream NAME, q (escape closes)"
    typed = words[0].lower()
    command = _BY_WORD.get(typed)
    if command is None:  # a prefix of one command only is that command (`lin` is lineage)
        matches = {c for word, c in _BY_WORD.items() if word.startswith(typed)}
        if len(matches) == 1:
            command = matches.pop()
        else:
            near = sorted(c.usage for c in matches) or [c.usage for c in COMMANDS if c.usage.startswith(typed[:2])]
            return f"unknown command {words[0]!r}" + (
                f"; did you mean {', '.join(near)}?" if near else "; ? lists them all"
            )
    if command.words[0] == "stream":
        if len(words) != 2:
            return "stream takes one name: stream NAME (streams lists them)"
        if not _STREAM_NAME.match(words[1]):
            return f"not a valid stream name: {words[1]!r} (1 to 128 of a-z A-Z 0-9 _ . -)"
        return ParsedCommand(command, words[1])
    if len(words) > 1:
        return f"{words[0]} takes no argument"
    return ParsedCommand(command)


class CommandLineScreen(ModalScreen[None]):
    """The `:` prompt. A valid command closes it and is posted to the app as `Entered`; a bad one
    is explained under the prompt, which stays open."""

    DEFAULT_CSS = """
    CommandLineScreen {
        align: left bottom;
        background: $background 30%;
    }
    CommandLineScreen #command-line-box {
        height: auto;
        width: 100%;
        background: $surface;
        border-top: solid $accent;
        padding: 0 1;
    }
    CommandLineScreen #command-line-input {
        border: none;
        height: 1;
        padding: 0;
    }
    CommandLineScreen #command-line-error {
        color: $error;
        height: auto;
    }
    CommandLineScreen #command-line-help {
        color: $text-muted;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="command_line.cancel")]

    class Entered(Message):
        def __init__(self, parsed: ParsedCommand) -> None:
            super().__init__()
            self.parsed = parsed

    def compose(self) -> ComposeResult:
        suggestions = [word for command in COMMANDS for word in command.words if len(word) > 2]
        with Vertical(id="command-line-box"):
            yield Input(
                placeholder="shards · lineage · heat · consumers · stream NAME · streams · ro · rw · q",
                id="command-line-input",
                suggester=SuggestFromList(suggestions, case_sensitive=False),
            )
            yield Static("", id="command-line-error")
            yield Static("enter runs · → accepts the suggestion · escape closes", id="command-line-help")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        parsed = parse(event.value)
        if isinstance(parsed, str):
            self.query_one("#command-line-error", Static).update(parsed)
            return
        self.dismiss(None)
        self.app.post_message(self.Entered(parsed))

    def action_cancel(self) -> None:
        self.dismiss(None)


class CommandedConsole(Protocol):
    """What the k9s keys drive: the console app (console.ui.app.KConsoleApp) is one."""

    @property
    def stream(self) -> str | None: ...

    read_only: bool  # the app's reactive: setting it greys the mutating keys and says so
    masking: bool  # the app's reactive: the mask rules are applied
    mask_rules: tuple[str, ...]
    theme: str

    @property
    def available_themes(self) -> dict[str, Any]: ...

    @property
    def focused(self) -> Widget | None: ...

    def open_stream(self, name: str) -> None: ...

    def query(self, selector: str) -> DOMQuery[Widget]: ...

    def notify(self, message: str, **options: Any) -> None: ...

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any: ...

    async def run_action(self, action: str) -> bool: ...

    async def action_quit(self) -> None: ...


class K9sHabits:
    """What `:`, ctrl+c, j / k and R do in the console, and the theme the config names: held by the
    app, which runs its key actions through it. The one state of its own: when ctrl+c last asked
    for a second press."""

    def __init__(self, console: CommandedConsole) -> None:
        self.console = console
        self.ctrl_c_asked_at: float | None = None

    def use_theme(self, name: str | None) -> None:
        """The theme the config names (and the palette last picked), if this Textual has it."""
        if name and name in self.console.available_themes:
            self.console.theme = name
        elif name:
            self.console.notify(
                f"unknown theme {name!r} in the config; using {self.console.theme}",
                title="config",
                severity="warning",
                timeout=8,
            )

    def open_command_line(self) -> None:
        self.console.push_screen(CommandLineScreen())

    async def run(self, parsed: ParsedCommand) -> None:
        console, command = self.console, parsed.command
        if command.words[0] == "stream":
            if parsed.argument is not None and parsed.argument != console.stream:
                console.open_stream(parsed.argument)
        elif command.words[0] == "ro":
            console.read_only = True
        elif command.words[0] == "rw":
            self.toggle_read_only() if console.read_only else console.notify("already read-write", timeout=3)
        elif command.words[0] == "unmask":
            self.turn_masking_off()
        elif command.words[0] == "mask":
            self.turn_masking_on()
        elif command.action and command.action.startswith("show_tab") and not console.query(f"TabPane#{command.usage}"):
            console.notify(f"no {command.usage} view in this build", severity="warning")
        elif command.action:
            await console.run_action(command.action)

    async def ctrl_c_quit(self) -> None:
        """ctrl+c quits, as in k9s; in a text box (where it also copies a selection) it asks once:
        a second ctrl+c within a few seconds quits."""
        now = time.monotonic()
        if isinstance(self.console.focused, (Input, TextArea)) and (
            self.ctrl_c_asked_at is None or now - self.ctrl_c_asked_at > CTRL_C_AGAIN_SECONDS
        ):
            self.ctrl_c_asked_at = now
            self.console.notify("press ctrl+c again to quit", timeout=CTRL_C_AGAIN_SECONDS)
            return
        await self.console.action_quit()

    def vi_cursor(self, direction: str) -> None:
        """j / k: down / up in whatever list has the focus: Textual's own lists (cursor_down) and
        kconsole's virtualised ones (cursor(+1): the shard table, lineage tree, tail ring)."""
        named = getattr(self.console.focused, f"action_cursor_{direction}", None)
        stepped = getattr(self.console.focused, "action_cursor", None)
        if named is not None:
            named()
        elif stepped is not None:
            stepped(1 if direction == "down" else -1)

    def toggle_read_only(self) -> None:
        """Into read-only at once; out of it only after the operator types the stream name (or
        `read-write` with no stream open): a stray key must never re-arm split, merge and scale."""
        console = self.console
        if not console.read_only:
            console.read_only = True
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                console.read_only = False

        console.push_screen(
            ConfirmByNameScreen(
                console.stream or "read-write", f"leave read-only mode: {READ_ONLY_DISABLES} become available again"
            ),
            confirmed,
        )

    def turn_masking_off(self) -> None:
        """Masking off only after the operator types the stream name, and once it is written to the action
        log (a log that cannot be written keeps masking on): what is shown may be personal data."""
        console = self.console
        if not console.mask_rules:
            console.notify("no mask rules to turn off (mask = [...] in the config, or --mask)", timeout=4)
            return
        if not console.masking:
            console.notify("masking is already off (:mask turns it on)", timeout=3)
            return

        def confirmed(yes: bool | None) -> None:
            if not yes:
                return
            from console.errors import ConsoleError
            from console.reshard.actionlog import ActionLog

            try:
                ActionLog.default().masking_off(
                    stream=console.stream, rules=console.mask_rules, where="console :unmask"
                )
            except ConsoleError as error:
                console.notify(error.message, title="masking stays on", severity="error", timeout=10)
                return
            console.masking = False

        console.push_screen(
            ConfirmByNameScreen(
                console.stream or "unmask",
                f"turn masking off: {', '.join(console.mask_rules)} no longer applied to what the Tail and Heat "
                "tabs show (written to the action log)",
            ),
            confirmed,
        )

    def turn_masking_on(self) -> None:
        console = self.console
        if not console.mask_rules:
            console.notify("no mask rules (mask = [...] in the config, or --mask)", timeout=4)
        elif console.masking:
            console.notify("masking is already on", timeout=3)
        else:
            console.masking = True
