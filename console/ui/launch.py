"""Start the live console from parsed CLI arguments (placeholder until the console lands)."""

from __future__ import annotations

from console.errors import BadInput


def launch_console(args) -> int:
    raise BadInput("the live console is not built yet; try `kconsole --help` for the commands")
