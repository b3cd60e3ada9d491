"""The embedded server's heap, kept as a store's (see StoreHeap)."""

from __future__ import annotations

import gc

# The embedded server freezes what it stores once this many more records are stored since the last time.
FREEZE_EVERY_RECORDS = 20_000


class StoreHeap:
    """The embedded server's heap, kept as a store's: records live until their stream is deleted, and
    each full collection would walk every one of them (a server taking 100,000-record runs spent
    0.1-0.2 s a full collection, a sixth of its time while records poured in). Every FREEZE_EVERY_RECORDS
    stored, what is young is collected and everything alive frozen, so collections walk only what
    came since; a deleted stream unfreezes it all, so whatever it leaves in a cycle is collected.
    Called under the server's one lock."""

    def __init__(self, every: int = FREEZE_EVERY_RECORDS) -> None:
        self.every = every
        self.since_freeze = 0

    def stored(self, records: int) -> None:
        self.since_freeze += records
        if self.since_freeze >= self.every:
            self.since_freeze = 0
            gc.collect()  # only what is not frozen: what came since the last time
            gc.freeze()

    def released(self) -> None:
        gc.unfreeze()
