"""Toasts never cover a dialog.

Textual shows toasts in the bottom-right corner, over whatever screen is on top: a "split done"
toast (shown for 10 s) sat on the next dialog's Cancel and Proceed buttons. So opening a dialog
clears the toasts (what they said stays in the header, the action log and the tables), and a toast
raised while a dialog is open waits until the console is back on top.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.screen import ModalScreen


class ToastsBehindDialogs:
    """Held by the app: its `notify`, `push_screen` and `pop_screen` ask this first."""

    def __init__(self, app: App[None]) -> None:
        self.app = app
        self._held: list[tuple[str, dict[str, Any]]] = []

    def _dialog_open(self) -> bool:
        app = self.app
        return len(app.screen_stack) > 1 and isinstance(app.screen, ModalScreen)

    def held(self, message: str, options: dict[str, Any]) -> bool:
        """True when the toast waits for the dialog to close (and must not be shown now)."""
        if self.app.is_running and self._dialog_open():
            self._held.append((message, options))
            return True
        return False

    def opening(self, screen: object) -> None:
        if isinstance(screen, ModalScreen):
            self.app.clear_notifications()

    def closed(self) -> None:
        self.app.call_later(self._show_held)

    def _show_held(self) -> None:
        if self._dialog_open() or not self._held:
            return
        held, self._held = self._held, []
        for message, options in held:
            self.app.notify(message, **options)
