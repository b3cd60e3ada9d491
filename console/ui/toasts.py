"""Toasts never cover a dialog.

Textual shows toasts in the bottom-right corner, over whatever screen is on top: a "split done"
toast (shown for 10 s) sat on the next dialog's Cancel and Proceed buttons. So opening a dialog
clears the toasts (what they said stays in the header, the action log and the tables), and a toast
raised while a dialog is open waits until the console is back on top.
"""

from __future__ import annotations

from typing import Any

from textual.screen import ModalScreen


class ToastsBehindDialogs:
    """Mixed into KConsoleApp (before App)."""

    _held_toasts: list[tuple[tuple, dict]] | None = None

    def _dialog_open(self) -> bool:
        return len(self.screen_stack) > 1 and isinstance(self.screen, ModalScreen)

    def notify(self, message: str, **options: Any) -> None:
        if self.is_running and self._dialog_open():
            if self._held_toasts is None:
                self._held_toasts = []
            self._held_toasts.append(((message,), options))
            return
        super().notify(message, **options)  # type: ignore[misc]

    def push_screen(self, screen, *args: Any, **kwargs: Any):
        if isinstance(screen, ModalScreen):
            self.clear_notifications()
        return super().push_screen(screen, *args, **kwargs)  # type: ignore[misc]

    def pop_screen(self):
        result = super().pop_screen()  # type: ignore[misc]
        self.call_later(self._show_held_toasts)
        return result

    def _show_held_toasts(self) -> None:
        if self._dialog_open() or not self._held_toasts:
            return
        held, self._held_toasts = self._held_toasts, None
        for args, options in held:
            self.notify(*args, **options)
