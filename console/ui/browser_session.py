"""A console served to a browser tab (`kconsole web`) ends when the server that feeds it goes away, or
when it is told to stop, even if its loop cannot take the request.

textual-serve runs each tab's console with its stdin a pipe from the server. When the server is gone
without telling the tab's console to quit (it was killed), Textual's web driver sees the end of its
input and simply stops reading: the console would run on for ever with nobody to show it to, owned by
init, and keep its embedded server alive. Here the console watches its stdin for a hang-up and quits.

Every way Textual stops a web console (the server's "quit", SIGINT, SIGTERM) is a message to the app's
loop. A loop that cannot take it — blocked writing a frame into a pipe nobody reads any more, or busy —
never does, and the console then ignores even SIGTERM. So each of them also starts a deadline that does
not need the loop: GRACE_SECONDS later the process exits whatever the app is doing (the embedded
server, which watches its parent, follows).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from typing import Any

from textual import messages
from textual.app import App
from textual.drivers.web_driver import WebDriver

GRACE_SECONDS = 3.0
_HANG_UP = select.POLLHUP | select.POLLERR | select.POLLNVAL
_deadline_lock = threading.Lock()
_deadline: list[threading.Thread] = []


def leave_within(seconds: float = GRACE_SECONDS) -> None:
    """End this process `seconds` from now, whatever its loop is doing; the first call sets the time."""
    with _deadline_lock:
        if _deadline:
            return

        def leave() -> None:
            threading.Event().wait(seconds)
            os._exit(0)  # the app could not finish quitting in time: leave no orphan

        thread = threading.Thread(target=leave, name="kconsole-leave", daemon=True)
        _deadline.append(thread)
        thread.start()


def _ask_to_exit(app: App[Any]) -> None:
    """Ask the app to quit without waiting for its loop to answer (post_message is safe from any thread)."""
    with contextlib.suppress(Exception):  # the app may already be gone; the deadline still applies
        app.post_message(messages.ExitApp())


class BrowserDriver(WebDriver):
    """Textual's web driver, whose stop requests (the server's "quit", SIGINT, SIGTERM) come with a deadline."""

    def start_application_mode(self) -> None:
        super().start_application_mode()  # the loop's own SIGINT/SIGTERM handlers: a clean stop, when it can

        def stop(_signum: int, _frame: object) -> None:
            # Runs in the main thread even while the loop is stuck in a write; asyncio's handlers still
            # hear of the signal through its wakeup fd.
            leave_within()

        for stop_signal in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop_signal, stop)

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "quit":
            leave_within()
        super().on_meta(packet_type, payload)


def serve_to_browser(app: App[Any], stdin_fd: int = 0) -> threading.Thread:
    """Run `app` with BrowserDriver and start a daemon thread that quits it once `stdin_fd` hangs up.
    Polls with no read events, so the web driver's own reader keeps every byte it is sent."""
    app.driver_class = BrowserDriver
    poller = select.poll()
    poller.register(stdin_fd, 0)  # hang-ups and errors are always reported, data is left to the driver

    def watch() -> None:
        while True:
            events = poller.poll(1000)
            if any(mask & _HANG_UP for _fd, mask in events):
                break
        leave_within()
        _ask_to_exit(app)

    thread = threading.Thread(target=watch, name="kconsole-browser-session", daemon=True)
    thread.start()
    return thread
