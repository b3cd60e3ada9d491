"""A console served to a browser tab (`kconsole web`) ends when the server that feeds it goes away.

textual-serve runs each tab's console behind `sh -c`, with the console's stdin a pipe from the server.
When the server is gone without telling the tab's console to quit (it was killed, or it stopped while a
browser was still connecting), Textual's web driver sees the end of its input and simply stops reading:
the console would run on for ever with nobody to show it to, owned by init, and keep its embedded
server alive. Here the console watches its stdin for a hang-up and quits; if the app cannot finish
quitting (its output pipe is gone too), the process exits anyway after a grace period, and the embedded
server, which watches its parent, follows.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

from textual.app import App

GRACE_SECONDS = 3.0
_HANG_UP = select.POLLHUP | select.POLLERR | select.POLLNVAL


def exit_when_server_leaves(app: App[object], stdin_fd: int = 0) -> threading.Thread:
    """Start a daemon thread that quits `app` once `stdin_fd` hangs up. Polls with no read events, so
    the web driver's own reader keeps every byte it is sent."""
    poller = select.poll()
    poller.register(stdin_fd, 0)  # hang-ups and errors are always reported, data is left to the driver

    def watch() -> None:
        while True:
            events = poller.poll(1000)
            if any(mask & _HANG_UP for _fd, mask in events):
                break
        with contextlib.suppress(Exception):  # the app may already be closing; the grace period below still applies
            app.call_from_thread(app.exit)
        threading.Event().wait(GRACE_SECONDS)
        os._exit(0)  # the app could not finish (its output pipe is gone as well): leave no orphan

    thread = threading.Thread(target=watch, name="kconsole-browser-session", daemon=True)
    thread.start()
    return thread
