"""Top keys by weight in bounded memory: a heavy-hitters summary (Space-Saving, kept in its
mergeable offset form). Used by console.heat.rates for each shard's hottest partition keys.

Space-Saving with k counters answers "which keys are hot" in O(k) memory: every reported count is an
upper bound on the key's true count, over-counting by at most N/k (N = total weight seen), so every
key heavier than N/k is reported. Records arrive in GetRecords batches, so instead of updating one
counter per record in Python we count each batch with `Counter.update` (C speed) straight into the
summary's table and only compact when the table outgrows `capacity * slack` entries. Compaction is
the Misra-Gries/Space-Saving merge of Agarwal et al., "Mergeable Summaries" (2012): subtract the
(k+1)-th largest count from every counter, drop those that reach zero, and add the subtracted
amount to a shared `floor`. Then for every key

    lower(key) = table.get(key, 0) <= true(key) <= lower(key) + floor = count(key)

and `floor <= N / (k + 1)`, which gives the three Space-Saving guarantees (upper bounds, error
bounded by N/k, every key with frequency > N/k present) at every moment, not only after compaction.

`sample_every=m` counts one record in m and scales reported counts by m. The phase is drawn at
random per chunk, which keeps the estimate unbiased even for keys written round-robin with period m
(such patterns only raise its variance). The guarantees then hold for the sampled sub-stream only;
exact mode (m = 1) is the default and what the heat sampler uses.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

# Keys counted per Counter.update call; bounds how far the table may overshoot its limit.
CHUNK = 1024


@dataclass(frozen=True, slots=True)
class KeyCount:
    key: str
    count: int  # upper bound on the true count (scaled by sample_every)
    guaranteed: int  # lower bound on the true count (scaled by sample_every)


class SpaceSaving:
    """Top keys by weight in bounded memory: at most `capacity * slack + CHUNK` table entries."""

    __slots__ = ("capacity", "sample_every", "_limit", "_table", "_floor", "_total", "_random")

    def __init__(self, capacity: int = 256, *, slack: int = 8, sample_every: int = 1, seed: int | None = None) -> None:
        if capacity < 1 or slack < 1 or sample_every < 1:
            raise ValueError("capacity, slack and sample_every must be at least 1")
        self.capacity = capacity
        self.sample_every = sample_every
        self._limit = max(capacity + 1, capacity * slack)
        self._table: Counter[str] = Counter()
        self._floor = 0  # weight subtracted from every counter so far (in sampled units)
        self._total = 0  # weight counted (in sampled units)
        # Only a sampling summary draws (seeding one costs ~30 µs: a 10,000-shard heat view makes 30,000).
        self._random = random.Random(seed) if sample_every > 1 else None

    # ingestion -----------------------------------------------------------------------------

    def add(self, key: str, weight: int = 1) -> None:
        """Count one key (a record, or `weight` bytes of it)."""
        if weight <= 0:
            return
        self._table[key] += weight
        self._total += weight
        if len(self._table) > self._limit:
            self._compact()

    def add_many(self, keys: Sequence[str]) -> None:
        """Count each key once (one record each). The fast path: C-speed counting per chunk."""
        table, step, limit = self._table, self.sample_every, self._limit
        for begin in range(0, len(keys), CHUNK):
            if step == 1:
                chunk = keys[begin : begin + CHUNK]
            else:
                assert self._random is not None  # made with sample_every > 1
                chunk = keys[begin + self._random.randrange(step) : begin + CHUNK : step]
            table.update(chunk)
            self._total += len(chunk)
            if len(table) > limit:
                self._compact()
                table = self._table

    def add_weights(self, weights: Mapping[str, int] | Iterable[tuple[str, int]]) -> None:
        """Count weighted keys, e.g. bytes per key of one batch (a pre-aggregated batch merges in one go)."""
        items = weights.items() if isinstance(weights, Mapping) else weights
        table = self._table
        added = 0
        for key, weight in items:
            if weight > 0:
                table[key] += weight
                added += weight
                if len(table) > self._limit:
                    self._compact()
                    table = self._table
        self._total += added

    def _compact(self) -> None:
        values = sorted(self._table.values(), reverse=True)
        if len(values) <= self.capacity:
            return
        cut = values[self.capacity]  # the (k+1)-th largest count
        self._table = Counter({key: value - cut for key, value in self._table.items() if value > cut})
        self._floor += cut

    def copy(self) -> SpaceSaving:
        """An independent summary with the same counts (and the same guarantees)."""
        twin = SpaceSaving.__new__(SpaceSaving)
        twin.capacity, twin.sample_every, twin._limit = self.capacity, self.sample_every, self._limit
        twin._table, twin._floor, twin._total = Counter(self._table), self._floor, self._total
        twin._random = None if self._random is None else random.Random(self._random.random())
        return twin

    # queries --------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Total weight seen (estimated when sampling)."""
        return self._total * self.sample_every

    @property
    def error_bound(self) -> int:
        """How much any reported count may exceed the true one (<= total / (capacity + 1))."""
        return self._floor * self.sample_every

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: str) -> bool:
        return key in self._table

    def count(self, key: str) -> int:
        """Upper bound on `key`'s weight (for an unmonitored key: the floor)."""
        return (self._table.get(key, 0) + self._floor) * self.sample_every

    def guaranteed(self, key: str) -> int:
        """Lower bound on `key`'s weight."""
        return self._table.get(key, 0) * self.sample_every

    def top(self, n: int = 10) -> list[KeyCount]:
        """The n heaviest monitored keys, heaviest first (ties by key for a stable order)."""
        best = heapq.nlargest(n, sorted(self._table.items()), key=itemgetter(1))
        floor, m = self._floor, self.sample_every
        return [KeyCount(key, (value + floor) * m, value * m) for key, value in best]
