"""Heat of a whole stream: every sampled shard's ShardHeat (console.heat.rates) over one window of
arrival time, with the shards born or closed inside it, how far each was read, and each shard's last
snapshot reused while nothing of it changed (a 10,000-shard view works out only the shards read since).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from console.heat.aggregates import Aggregate
from console.heat.rates import HISTORY_SECONDS, Observation, ShardHeat
from console.heat.snapshot import ShardHeatSnapshot, StreamHeatSnapshot
from console.topology.model import Shard

# What a shard's snapshot was made of: (start, end, version, open, keys place, top, series seconds, sampled at).
SnapshotInputs = tuple[float, float, int, bool, bool, int, int, float | None]
# What a whole snapshot was asked for: (top, series seconds, keys place, window start, window end).
SnapshotShape = tuple[int, int, bool, float, float | None]


class StreamHeat:
    """Heat of every sampled shard of one stream over a window of arrival time [start, end)."""

    def __init__(
        self,
        stream: str,
        shards: Iterable[Shard],
        *,
        window_start: float,
        top_capacity: int = 256,
        history_seconds: int = HISTORY_SECONDS,
        auto_distribution: bool = False,
    ) -> None:
        self.stream = stream
        self.auto_distribution = auto_distribution  # may change between polls: set by the sampler
        self.window_start = window_start
        self.window_end: float | None = None
        # Shards whose life began or ended inside the window: their rates cover only their part of it.
        self.closed: dict[str, float] = {}
        self.born: dict[str, float] = {}
        # Up to when each shard was read: every arrival before it has been counted (its figures' age).
        self.sampled_at: dict[str, float] = {}
        # The last snapshot of each shard and what it was made of: reused while nothing changed, so a
        # view of 10,000 shards recomputes only the few read since its last snapshot.
        self._snapshots: dict[str, tuple[SnapshotInputs, ShardHeatSnapshot]] = {}
        # Reading in turn (`as_sampled`), a shard's snapshot changes only when it is read: the last
        # snapshot's shards, and which shards were read, observed or closed since (None: all).
        self._last: tuple[SnapshotShape, list[ShardHeatSnapshot], dict[str, int]] | None = None
        self._changed: set[str] | None = None
        self._top_capacity, self._history_seconds = top_capacity, history_seconds
        ordered = sorted(shards, key=lambda shard: shard.starting_hash_key)
        self.shards: dict[str, ShardHeat] = {
            shard.shard_id: ShardHeat(shard, top_capacity=top_capacity, history_seconds=history_seconds)
            for shard in ordered
        }

    def add_shard(self, shard: Shard, since: float) -> None:
        """A shard born during the window (a reshard's child), sampled from `since`; key-space order kept."""
        if shard.shard_id in self.shards:
            return
        self._changed = None
        self.born[shard.shard_id] = since
        self.shards[shard.shard_id] = ShardHeat(
            shard, top_capacity=self._top_capacity, history_seconds=self._history_seconds
        )
        self.shards = dict(
            sorted(
                self.shards.items(), key=lambda item: (item[1].shard.starting_hash_key, item[1].shard.ending_hash_key)
            )
        )

    def mark_closed(self, shard_id: str, at: float) -> None:
        """The shard closed under a reshard; its rates cover the window up to `at`."""
        self.closed[shard_id] = at
        self._touch(shard_id)

    def _touch(self, shard_id: str) -> None:
        if self._changed is not None:
            self._changed.add(shard_id)

    def mark_sampled(self, shard_id: str, through: float) -> None:
        """Every record of the shard that arrived before `through` has been read."""
        if through > self.sampled_at.get(shard_id, float("-inf")):
            self.sampled_at[shard_id] = through
            self._touch(shard_id)

    def age(self, shard_id: str, now: float) -> float | None:
        """Seconds since the shard was last read up to (None: not read yet)."""
        sampled = self.sampled_at.get(shard_id)
        return None if sampled is None else max(0.0, now - sampled)

    def observe(self, shard_id: str, observations: Iterable[Observation], aggregates: Iterable[Aggregate] = ()) -> int:
        end = self.window_end if self.window_end is not None else float("inf")
        self._touch(shard_id)
        return self.shards[shard_id].observe(observations, self.window_start, end, aggregates)

    def observe_page(self, shard_id: str, records: Sequence[Mapping[str, Any]]) -> int:
        """Count a GetRecords page of the shard (its `Records`), KPL aggregates opened to their user records."""
        if not records:
            return 0
        end = self.window_end if self.window_end is not None else float("inf")
        self._touch(shard_id)
        return self.shards[shard_id].observe_page(records, self.window_start, end)

    def close(self, window_end: float) -> None:
        """Stop counting arrivals at `window_end` (later reads are drained but not counted)."""
        self.window_end = window_end

    def reopen(self, shards: Iterable[Shard]) -> None:
        """Count arrivals again (a sampler resumes where this window closed), with shards opened meanwhile."""
        self.window_end = None
        self._changed = None
        for shard in shards:
            if shard.shard_id not in self.shards:
                self.add_shard(shard, since=self.window_start)

    def snapshot(
        self, now: float, *, top: int = 5, series_seconds: int = 60, as_sampled: bool = False
    ) -> StreamHeatSnapshot:
        """Every shard's figures up to `now`; with `as_sampled` (a view that reads shards in turn), each
        shard's up to when it was last read, so that a shard not read for a while shows what was
        known, not an idle stretch it may not have had. Shards unchanged since the last snapshot
        keep their snapshot (only the ones read meanwhile are worked out again)."""
        end = self.window_end if self.window_end is not None else now
        keys_place = not self.auto_distribution
        shape: SnapshotShape = (top, series_seconds, keys_place, self.window_start, self.window_end)
        last, changed = self._last, self._changed
        if as_sampled and last is not None and last[0] == shape and changed is not None:
            # Each shard ends at its last read, not at `now`: only the shards touched since can differ.
            shards, positions = list(last[1]), last[2]
            for shard_id in changed:
                shards[positions[shard_id]] = self._shard_snapshot(shard_id, end, top, series_seconds, as_sampled)
        else:
            shards = [self._shard_snapshot(shard_id, end, top, series_seconds, as_sampled) for shard_id in self.shards]
            positions = {shard_id: index for index, shard_id in enumerate(self.shards)}
        if as_sampled:
            self._last, self._changed = (shape, shards, positions), set()
        return StreamHeatSnapshot(
            self.stream, self.window_start, end, tuple(shards), auto_distribution=self.auto_distribution
        )

    def _shard_snapshot(
        self, shard_id: str, end: float, top: int, series_seconds: int, as_sampled: bool
    ) -> ShardHeatSnapshot:
        heat = self.shards[shard_id]
        keys_place = not self.auto_distribution
        start = max(self.window_start, self.born.get(shard_id, self.window_start))
        shard_end = min(end, self.closed.get(shard_id, end))
        sampled = self.sampled_at.get(shard_id)
        if as_sampled:
            shard_end = min(shard_end, sampled if sampled is not None else start)
        is_open = shard_id not in self.closed
        key: SnapshotInputs = (start, shard_end, heat.version, is_open, keys_place, top, series_seconds, sampled)
        cached = self._snapshots.get(shard_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        made = heat.snapshot(
            start,
            shard_end,
            top=top,
            series_seconds=series_seconds,
            is_open=is_open,
            keys_place=keys_place,
            sampled_at=sampled,
        )
        self._snapshots[shard_id] = (key, made)
        return made
