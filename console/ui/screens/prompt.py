"""Small modal questions the reshard flow asks: a value (split point, target count) or a choice."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


class PromptScreen(ModalScreen[str | None]):
    """Asks for one value; `check` returns an error text (shown, the dialog stays) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(
        self, title: str, label: str, default: str = "", check: Callable[[str], str | None] = lambda _value: None
    ) -> None:
        super().__init__()
        self._title, self._label, self._default, self._check = title, label, default, check

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt-dialog"):
            yield Static(self._title, classes="prompt-title")
            yield Static(self._label)
            yield Input(self._default, id="prompt-input")
            yield Static("", id="prompt-error")
            yield Static("enter continues · escape cancels", classes="prompt-help")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self._check(event.value.strip())
        if problem:
            self.query_one("#prompt-error", Static).update(Text(problem))  # plain: "[start, end]" is not markup
        else:
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self._title = title
        self._choices = choices  # (id, text)

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt-dialog"):
            yield Static(self._title, classes="prompt-title")
            yield OptionList(*(Option(text, id=choice_id) for choice_id, text in self._choices))
            yield Static("enter chooses · escape cancels", classes="prompt-help")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
