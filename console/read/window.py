"""The newest decoded records, bounded by count and by bytes: what a live view keeps of a stream.

A count alone does not bound memory: 2,000 records of 1 MiB (or of what gzip inflated them to) are
gigabytes. `RecordWindow` is a deque that also keeps the sum of its records' `weight` (payload bytes,
or the inflated size) under `max_bytes`, dropping the oldest first; the newest record always stays.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from console.read.decoding import MIB, DecodedRecord

DEFAULT_MAX_BYTES = 64 * MIB


class RecordWindow(deque[DecodedRecord]):
    def __init__(self, maxlen: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(maxlen=maxlen)
        self.max_bytes = max_bytes
        self.weight = 0

    def extend(self, records: Iterable[DecodedRecord]) -> int:  # type: ignore[override]  # says how many it dropped
        """Append records, dropping the oldest past either bound; returns how many were dropped (of those
        held before, and of `records` themselves when they alone pass a bound)."""
        incoming = list(records)
        dropped = 0
        if (
            self.maxlen is not None and len(incoming) > self.maxlen
        ):  # only the newest can stay: skip the rest without appending them
            dropped = len(incoming) - self.maxlen
            incoming = incoming[dropped:]
        for record in incoming:
            if len(self) == self.maxlen:
                self.weight -= self.popleft().weight
                dropped += 1
            super().append(record)
            self.weight += record.weight
        while self.weight > self.max_bytes and len(self) > 1:
            self.weight -= self.popleft().weight
            dropped += 1
        return dropped

    def append(self, record: DecodedRecord) -> None:
        self.extend((record,))

    def clear(self) -> None:
        super().clear()
        self.weight = 0
