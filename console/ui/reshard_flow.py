"""Split / merge / scale from the console: hand the selected shard to the reshard screens
(console/ui/reshard_screens.py), then run console/reshard_exec.py in a worker and re-poll."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.ui.app import KConsoleApp


def start(app: "KConsoleApp", operation: str) -> None:
    if app.read_only:
        app.notify(f"{operation}: not available in read-only mode", severity="warning")
        return
    try:
        import console.ui.reshard_screens  # noqa: F401
    except ModuleNotFoundError:
        app.notify(f"{operation}: the reshard screens (console/ui/reshard_screens.py) are not in this build",
                   severity="warning")
        return
    app.notify(f"{operation}: not wired yet", severity="warning")
