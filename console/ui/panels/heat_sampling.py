"""The Heat tab's sampler run: `console.heat.sampler.HeatSampler` on a worker thread with its own event
loop and its own backend (opened again the way the app's was, `opened_again`), or on the UI's loop with
EFO (whose subscriptions live on the app's backend); each second's `Reading`, worked out where the
sampler runs (`ReadingMaker`) so that the UI's loop only shows it; and the messages that bring a
thread's readings, failure and retries to the panel (console.ui.panels.heat), which owns the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from rich.text import Text
from textual.message import Message
from textual.worker import get_current_worker

from console.backend.protocol import ConsoleBackend
from console.errors import ConsoleError
from console.heat.sampler import HeatSampler
from console.heat.snapshot import ShardHeatSnapshot, StreamHeatSnapshot
from console.heat.stream_heat import StreamHeat
from console.read.efo import Subscribe
from console.read.share import EFO_READ_COST, ReadShare
from console.ui.panels.heat_text import shard_figures, total_text
from console.ui.widgets.heat_map import MAP_SECONDS
from console.ui.widgets.shard_columns import ShardHeat

LOCK_HANDOVER_SECONDS = 0.001  # the interpreter's switch interval while the sampler's thread runs
EFO_OFFER = "f samples with EFO, without sharing"  # a throttled sampler's offer


@dataclass(frozen=True, slots=True)
class Reading:
    """One second of the sampler, worked out on the sampler's loop (ReadingMaker) so that the UI's loop
    only shows it: the snapshot (keys masked when masking), the header, the shard table's figures and
    each shard's place in key-space order."""

    stream: str
    snapshot: StreamHeatSnapshot
    coverage: str  # what a second of sampling covers
    read_cost: str  # what kconsole's own reads take of each shard's budget
    rotating: bool  # read in turn (each row's figures are as of its last read)
    total: Text  # the header, for the order `hottest_first`
    hottest_first: bool
    figures: dict[str, ShardHeat]  # what the shard table and the ribbon show (see `shard_figures`)
    positions: dict[str, int]  # shard id -> its place in key-space order


class ReadingMaker:
    """Readings of one sampler, made where it runs. At 10,000 shards a second's reading touches every
    shard (masking, figures, positions, header sums): done here, off the UI's loop, and only for the
    shards read since the last one (the others' objects are handed on as they were, which is what lets
    the map and the shard table skip them)."""

    def __init__(self) -> None:
        self._masked: dict[str, tuple[ShardHeatSnapshot, ShardHeatSnapshot]] = {}
        self._figures: dict[str, tuple[ShardHeatSnapshot, ShardHeat]] = {}
        self._ids: list[str] = []
        self._positions: dict[str, int] = {}

    def make(
        self,
        snapshot: StreamHeatSnapshot,
        *,
        key_mask: Callable[[str], str] | None,
        coverage: str,
        read_cost: str,
        rotating: bool,
        hottest_first: bool,
    ) -> Reading:
        if key_mask is not None:
            snapshot = replace(snapshot, shards=tuple(self._mask(shard, key_mask) for shard in snapshot.shards))
        ids = [shard.shard_id for shard in snapshot.shards]
        if ids != self._ids:  # shards born or closed: the places change (a new dict: the old one stays as shown)
            self._ids, self._positions = ids, {shard_id: index for index, shard_id in enumerate(ids)}
            self._masked = {shard_id: known for shard_id, known in self._masked.items() if shard_id in self._positions}
        return Reading(
            snapshot.stream,
            snapshot,
            coverage,
            read_cost,
            rotating,
            total_text(
                snapshot, rotating=rotating, hottest_first=hottest_first, coverage=coverage, read_cost=read_cost
            ),
            hottest_first,
            self._live_figures(snapshot),
            self._positions,
        )

    def _mask(self, shard: ShardHeatSnapshot, key_mask: Callable[[str], str]) -> ShardHeatSnapshot:
        known = self._masked.get(shard.shard_id)
        if known is not None and known[0] is shard:
            return known[1]
        masked = shard.with_keys(key_mask)
        self._masked[shard.shard_id] = (shard, masked)
        return masked

    def _live_figures(self, snapshot: StreamHeatSnapshot) -> dict[str, ShardHeat]:
        made = self._figures
        for shard in snapshot.shards:
            known = made.get(shard.shard_id)
            if known is None or known[0] is not shard:
                made[shard.shard_id] = (shard, shard_figures(shard))
        if len(made) > len(snapshot.shards):  # shards gone: forget them
            for shard_id in [shard_id for shard_id in made if shard_id not in self._positions]:
                del made[shard_id]
        return {shard_id: known[1] for shard_id, known in made.items()}


class SamplingPanel(Protocol):
    """What the sampler's run reads and sets on the Heat panel (console.ui.panels.heat.HeatPanel)."""

    key_mask: Callable[[str], str] | None
    selected_shard: str | None
    shards_per_second: int
    hottest_first: bool
    _sampler: HeatSampler | None
    _sampler_loop: asyncio.AbstractEventLoop | None
    _history: StreamHeat | None  # the last sampler's window, carried on when shown again
    _auto_distribution: bool

    @property
    def stream(self) -> str | None: ...

    @property
    def masking(self) -> bool: ...

    @property
    def app(self) -> object: ...

    def _cloudwatch_ranks(self) -> bool: ...

    def post_message(self, message: Message) -> bool: ...


class ReadingPosted(Message, bubble=False):
    """A reading of the sampler's thread, for the panel on the UI's loop."""

    def __init__(self, run: int, reading: Reading) -> None:
        super().__init__()
        self.run, self.reading = run, reading


class SamplingFailed(Message, bubble=False):
    def __init__(self, run: int, stream: str, message: str) -> None:
        super().__init__()
        self.run, self.stream, self.message = run, stream, message


class SamplerRetried(Message, bubble=False):
    """A call of the sampler's backend retried: shown where the app's own retries are."""

    def __init__(self, run: int, event: object) -> None:
        super().__init__()
        self.run, self.event = run, event


async def sample_in_this_thread(
    panel: SamplingPanel,
    backend: ConsoleBackend,
    stream: str,
    run: int,
    previous: threading.Event,
    done: threading.Event,
) -> None:
    """The sampler on this thread's own loop, with a backend of its own; each reading is posted to
    the panel. Ends when the worker is cancelled (the tab hidden, another stream, unmounted)."""
    worker = get_current_worker()
    # Two threads of Python now share one interpreter lock: the UI's loop, woken by a key, waits for
    # this one to hand it over, by default after up to 5 ms each time. Handed over within 1 ms.
    handover = sys.getswitchinterval()
    sys.setswitchinterval(min(handover, LOCK_HANDOVER_SECONDS))
    try:
        # The last sampler hands its window over (`_history`) when it has stopped.
        while not previous.wait(0.05):
            if worker.is_cancelled:
                return
        async with backend.opened_again() as own:
            own.on_retry = lambda event: panel.post_message(SamplerRetried(run, event))
            sampling = asyncio.create_task(
                sample(panel, own, stream, None, lambda reading: panel.post_message(ReadingPosted(run, reading)))
            )
            while not sampling.done():
                if worker.cancelled_event.is_set():
                    sampling.cancel()
                await asyncio.wait({sampling}, timeout=0.1)
            with contextlib.suppress(asyncio.CancelledError):
                await sampling
    except ConsoleError as error:
        panel.post_message(SamplingFailed(run, stream, error.message))
    finally:
        sys.setswitchinterval(handover)  # the thread is gone: the default handover is cheaper
        done.set()


async def sample(
    panel: SamplingPanel,
    backend: ConsoleBackend,
    stream: str,
    subscribe: Subscribe | None,
    deliver: Callable[[Reading], object],
) -> None:
    """Run a sampler of `stream` for the panel, delivering each second's reading, until cancelled."""
    # Back on the tab, the last window carries on: its minutes of history stay, and what arrived
    # while the tab was hidden is read and counted (HeatSampler's resume).
    sampler = HeatSampler(
        backend,
        stream,
        resume=panel._history,
        shards_per_second=panel.shards_per_second,
        read_share=ReadShare(getattr(panel.app, "read_share", None)),
        subscribe=subscribe,
    )
    sampler.selected = panel.selected_shard
    sampler.rank_by_cloudwatch = panel._cloudwatch_ranks()
    panel._sampler, panel._sampler_loop = sampler, asyncio.get_running_loop()
    maker = ReadingMaker()
    try:
        async with sampler:
            async for snapshot in sampler.snapshots(every=1.0, series_seconds=MAP_SECONDS):
                if sampler.heat is not None and sampler.heat.auto_distribution != panel._auto_distribution:
                    sampler.heat.auto_distribution = panel._auto_distribution  # the next snapshot follows
                reading = maker.make(
                    snapshot,
                    key_mask=panel.key_mask if panel.masking else None,
                    coverage=sampler.coverage_text(),
                    read_cost=EFO_READ_COST if subscribe else sampler.read_share.summary(EFO_OFFER),
                    rotating=sampler.rotation is not None,
                    hottest_first=panel.hottest_first,
                )
                deliver(reading)
    finally:
        if panel._sampler is sampler:
            panel._sampler = panel._sampler_loop = None
        if stream == panel.stream and sampler.heat is not None:
            panel._history = sampler.heat
