"""Which processes run on this host: what tells a temporary consumer a killed kconsole left registered
(console.lifecycle.temporary_consumer) from one a running kconsole still reads with."""

from __future__ import annotations

import os


def is_running(pid: int) -> bool:
    """Whether a process `pid` runs on this host (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True
