"""Which shards a live heat view reads in each second when it cannot read them all.

Reading every shard of a 10,000-shard stream every second would cost 10,000 GetRecords a second
(and a console that does nothing else). A `SamplingRotation` hands out a bounded set of shards per
second instead, in this order:

1. the shard the operator has selected (its figures are the ones being looked at),
2. the hottest shards known, by the utilisation of their last reading (or CloudWatch's, when the
   caller ranks them with it): the shards worth watching are watched every second,
3. the rest in turn, from where the last second stopped: a full pass reaches every shard.

A reader that comes back to a shard after a pass reads everything that arrived meanwhile, counted by
arrival time, so the history fills in; what is not known yet is how the shard did since it was last
read: its age (`age_text`). Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping

DEFAULT_SHARDS_PER_SECOND = 64  # shards a live view reads each second (one GetRecords each, mostly)
HOT_SHARE = 0.125  # of each second's budget kept for the hottest shards known


def duration_text(seconds: float) -> str:
    """'45 s', '2 m 36 s', '1 h 5 m'."""
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        minutes, rest = divmod(seconds, 60)
        return f"{minutes} m {rest} s" if rest else f"{minutes} m"
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} m" if rest // 60 else f"{hours} h"


def age_text(age: float | None) -> str:
    """How old a shard's figures are, in at most four characters: 'now', '12s', '3m', '2h', '-' (never read)."""
    if age is None:
        return "-"
    if age < 2:
        return "now"
    if age < 60:
        return f"{age:.0f}s"
    if age < 3600:
        return f"{age // 60:.0f}m"
    return f"{age // 3600:.0f}h"


class SamplingRotation:
    """`rotation.next_round(selected)` each second: the shard ids to read in it."""

    def __init__(self, shard_ids: Iterable[str], per_second: int, *, hot_share: float = HOT_SHARE) -> None:
        if per_second < 1:
            raise ValueError(f"shards per second must be at least 1, got {per_second}")
        self.per_second = per_second
        self.hot_share = hot_share
        self._order: list[str] = []  # the order of the pass (key-space order as given)
        self._members: set[str] = set()
        self._next = 0  # where the pass goes on in the next second
        self._heat: dict[str, float] = {}  # utilisation per shard: its last reading, or CloudWatch's
        self.ranked_by = "the last pass"
        for shard_id in shard_ids:
            if shard_id not in self._members:
                self._members.add(shard_id)
                self._order.append(shard_id)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, shard_id: object) -> bool:
        return shard_id in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    @property
    def rotates(self) -> bool:
        """False while every shard fits in one second's budget (then each is read every second)."""
        return len(self._order) > self.per_second

    @property
    def hot_slots(self) -> int:
        """How many of each second's reads go to the hottest shards known (the rest rotate)."""
        if not self.rotates:
            return 0
        return max(1, int(self.per_second * self.hot_share)) if self.per_second > 2 else 0

    @property
    def pass_seconds(self) -> int:
        """Seconds for the rotation to reach every shard once (at worst, with a selected shard)."""
        if not self.rotates:
            return 1
        rotating = max(1, self.per_second - self.hot_slots - 1)
        return math.ceil(len(self._order) / rotating)

    def add(self, shard_id: str) -> None:
        """A shard joins the rotation (a reshard's child); it is read in the next second."""
        if shard_id in self._members:
            return
        self._members.add(shard_id)
        # Just ahead of the pass: a new shard is not left for a whole pass.
        self._order.insert(self._next, shard_id)

    def remove(self, shard_id: str) -> None:
        """A shard leaves the rotation (read to its end after a reshard)."""
        if shard_id not in self._members:
            return
        self._members.discard(shard_id)
        index = self._order.index(shard_id)
        del self._order[index]
        if index < self._next:
            self._next -= 1
        self._heat.pop(shard_id, None)
        if self._next >= len(self._order):
            self._next = 0

    def note(self, shard_id: str, utilisation: float) -> None:
        """A shard's utilisation as its latest reading found it (what ranks the hottest)."""
        if shard_id in self._members:
            if utilisation > 0:
                self._heat[shard_id] = utilisation
            else:
                self._heat.pop(shard_id, None)

    def rank(self, utilisation: Mapping[str, float], by: str) -> None:
        """Rank the shards by another source (e.g. CloudWatch's per-shard metrics of the last minutes)."""
        for shard_id, value in utilisation.items():
            self.note(shard_id, value)
        self.ranked_by = by

    def hottest(self, count: int, *, skip: Iterable[str] = ()) -> list[str]:
        skipped = set(skip)
        ranked = sorted(self._heat.items(), key=lambda item: (-item[1], item[0]))
        return [shard_id for shard_id, _ in ranked if shard_id not in skipped][:count]

    def next_round(self, selected: str | None = None) -> list[str]:
        """The shards to read in the next second: the selected one, the hottest, then the pass goes on."""
        if not self.rotates:
            return list(self._order)
        chosen: list[str] = []
        if selected is not None and selected in self._members:
            chosen.append(selected)
        chosen += self.hottest(self.hot_slots, skip=chosen)
        taken = set(chosen)
        order, count = self._order, len(self._order)
        position, looked = self._next, 0
        while len(chosen) < self.per_second and looked < count:
            shard_id = order[position]
            position = (position + 1) % count
            looked += 1
            if shard_id not in taken:
                chosen.append(shard_id)
                taken.add(shard_id)
        self._next = position
        return chosen

    def coverage_text(self, reads_per_second: float | None = None) -> str:
        """What a pass covers, for the view's header."""
        total = len(self._order)
        noun = "shard" if total == 1 else "shards"
        if not self.rotates:
            each = f", {reads_per_second:g} reads/s each" if reads_per_second else ""
            return f"sampling all {total:,} {noun} every second{each}"
        return (
            f"sampling {self.per_second:,} of {total:,} {noun} per second; "
            f"full pass every {duration_text(self.pass_seconds)}; "
            f"the selected and the {self.hot_slots} hottest (by {self.ranked_by}) every second"
        )
