"""k9s habits: `:` command mode, a read-only toggle, and the chosen theme remembered.

`:` opens a one-line prompt at the bottom; `:shards`, `:lineage`, `:heat`, `:consumers` ... switch
views, `:stream NAME` opens a stream, `:streams` picks one, `:ro` / `:rw` toggle read-only, `:q`
quits. `CommandLineHost` is mixed into the console app for the actions these keys run.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from console.ui.bindings import READ_ONLY_DISABLES

CTRL_C_AGAIN_SECONDS = 3.0

# What AWS accepts as a stream name; a typo is answered on the command line, not by the server.
_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class ConsoleCommand:
    """One command of command mode: its words, what it does, and the app action it runs (None for
    the ones that take an argument or need the app's state, handled in CommandLineHost.run_command)."""

    words: tuple[str, ...]
    usage: str
    help: str
    action: str | None = None


def _tab(tab: str, title: str, *aliases: str) -> ConsoleCommand:
    return ConsoleCommand((tab, *aliases), tab, f"show {title}", f"show_tab('{tab}')")


COMMANDS: tuple[ConsoleCommand, ...] = (
    _tab("shards", "the shard table", "sh"),
    _tab("lineage", "the lineage tree", "li"),
    _tab("placement", "where partition keys land", "pl"),
    _tab("keytree", "key-tree balance", "kt"),
    _tab("producer", "the ordered producer", "pr"),
    _tab("tail", "the records in the stream"),
    _tab("heat", "throughput per shard and hot keys", "he"),
    _tab("consumers", "the stream's registered consumers", "co"),
    ConsoleCommand(("stream",), "stream NAME", "open stream NAME"),
    ConsoleCommand(
        ("streams", "st"), "streams", "the fleet: every stream, worst first; enter opens one", "pick_stream"
    ),
    ConsoleCommand(("ro", "readonly", "read-only"), "ro", "enter read-only mode"),
    ConsoleCommand(("rw", "readwrite", "read-write"), "rw", "leave read-only mode (asks you to type a name)"),
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


class CommandLineHost:
    """The actions behind `:`, ctrl+c, j / k, the read-only toggle and theme memory, for KConsoleApp
    (they hold no state of their own: what they change is the app's, declared there)."""

    stream: str | None
    read_only: bool
    ctrl_c_asked_at: float | None
    on_theme_changed: Callable[[str], None] | None

    def action_command_line(self) -> None:
        self.push_screen(CommandLineScreen())

    async def run_command(self, parsed: ParsedCommand) -> None:
        command = parsed.command
        if command.words[0] == "stream":
            if parsed.argument != self.stream:
                self.open_stream(parsed.argument)
        elif command.words[0] == "ro":
            self.set_read_only(True)
        elif command.words[0] == "rw":
            self.action_toggle_read_only() if self.read_only else self.notify("already read-write", timeout=3)
        elif command.action and command.action.startswith("show_tab") and not self.query(f"TabPane#{command.usage}"):
            self.notify(f"no {command.usage} view in this build", severity="warning")
        else:
            await self.run_action(command.action)

    async def action_ctrl_c_quit(self) -> None:
        """ctrl+c quits, as in k9s; in a text box (where it also copies a selection) it asks once:
        a second ctrl+c within a few seconds quits."""
        from textual.widgets import TextArea

        now = time.monotonic()
        if isinstance(self.focused, (Input, TextArea)) and (
            self.ctrl_c_asked_at is None or now - self.ctrl_c_asked_at > CTRL_C_AGAIN_SECONDS
        ):
            self.ctrl_c_asked_at = now
            self.notify("press ctrl+c again to quit", timeout=CTRL_C_AGAIN_SECONDS)
            return
        await self.action_quit()

    def action_vi_cursor(self, direction: str) -> None:
        """j / k: down / up in whatever list has the focus: Textual's own lists (cursor_down) and
        kconsole's virtualised ones (cursor(+1): the shard table, lineage tree, tail ring)."""
        named = getattr(self.focused, f"action_cursor_{direction}", None)
        stepped = getattr(self.focused, "action_cursor", None)
        if named is not None:
            named()
        elif stepped is not None:
            stepped(1 if direction == "down" else -1)

    def action_toggle_read_only(self) -> None:
        """Into read-only at once; out of it only after the operator types the stream name (or
        `read-write` with no stream open): a stray key must never re-arm split, merge and scale."""
        if not self.read_only:
            self.set_read_only(True)
            return
        from console.ui.screens.confirm import ConfirmByNameScreen

        name = self.stream or "read-write"
        self.push_screen(
            ConfirmByNameScreen(name, f"leave read-only mode: {READ_ONLY_DISABLES} become available again"),
            lambda confirmed: self.set_read_only(False) if confirmed else None,
        )

    def set_read_only(self, read_only: bool) -> None:
        if read_only == self.read_only:
            return
        self.read_only = read_only
        self.header.update_state(read_only=read_only)
        self.refresh_bindings()
        self.notify(
            f"read-only: {READ_ONLY_DISABLES} are disabled"
            if read_only
            else "read-write: changes are possible again (each still asks first)",
            timeout=4,
        )

    def watch_theme(self, old: str, new: str) -> None:
        if old != new and self.on_theme_changed is not None and self.is_running:
            self.on_theme_changed(new)
