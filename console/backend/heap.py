"""The garbage collector while the backend loads botocore, aiohttp and a service model.

Loading them makes some 40,000 objects that live as long as the process and almost no garbage, yet
the collector's defaults run a collection every 700 new containers, each young one re-walking what
the last one kept and one full collection walking everything (~30 ms of a `kconsole streams` that
takes ~350 ms). `loading()` pauses the collector for such a stretch; once the clients exist, what
is alive is frozen (gc.freeze): later collections, and the interpreter's own at exit, skip it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_frozen = False  # once per process: a later freeze would also set aside garbage not yet collected


@contextlib.contextmanager
def loading(*, freeze: bool = False) -> Iterator[None]:
    """The collector paused for the enclosed loading (as it was, afterwards); with `freeze`, what is
    alive frozen when it ends without an error, the first time in this process."""
    global _frozen
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze and not _frozen:
            _frozen = True
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
