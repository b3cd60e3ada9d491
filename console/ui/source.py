"""What the console polls, and what one good poll yields.

The app never builds its own backend: it is handed a console.backend.protocol.ConsoleBackend (the
poll itself needs only its StreamReads: `describe_stream_summary`, `all_shards`, `list_streams`), so tests
and the 10k-shard benchmark inject a transport of their own and the real app runs on `open_backend(...)`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from console.backend.protocol import ConsoleBackend, StreamReads
from console.errors import ConsoleError
from console.keyspace.hashkeys import HashRangeIndex
from console.topology.lineage import Lineage
from console.topology.model import Shard, StreamSummary
from console.ui.format import summarise_shares

if TYPE_CHECKING:
    from console.heat.capacity import MetricSeries


@dataclass(frozen=True)
class ConnectionInfo:
    """Header text for where we are connected."""

    connected_to: str  # the backend's label
    region: str | None
    profile: str | None

    @classmethod
    def of(cls, backend: ConsoleBackend) -> ConnectionInfo:
        return cls(connected_to=_safe_label(backend), region=backend.region, profile=backend.profile)


def _safe_label(backend: Any) -> str:
    try:
        return str(backend.label)
    except Exception:  # a stub or fake without a label must not stop the console
        return type(backend).__name__


class ShardListing(tuple[Shard, ...]):
    """The shards of one poll (a plain tuple to every reader), plus what the shard table's diff needs
    of them: ids, ending sequence numbers and an id map. Built once, in a thread for big streams,
    so the UI loop does not walk 10k shards three more times per poll."""

    ids: list[str]
    endings: list[str | None]
    by_id: dict[str, Shard]
    ending_by_id: dict[str, str | None]

    def __new__(cls, shards: Any = ()) -> ShardListing:
        listing = super().__new__(cls, shards)
        listing.ids = [shard.shard_id for shard in listing]
        listing.endings = [shard.ending_sequence_number for shard in listing]
        listing.by_id = dict(zip(listing.ids, listing))
        listing.ending_by_id = dict(zip(listing.ids, listing.endings))
        return listing


@dataclass(frozen=True)
class StreamView:
    """One good poll: the stream's summary, every shard ListShards returned, and the open-shard index."""

    summary: StreamSummary
    shards: tuple[Shard, ...]
    lineage: Lineage | None = None  # built after the table is shown (off the UI loop for big streams)
    share_summary: str | None = None  # the ribbon's summary line of the open index, built with the lineage

    @property
    def index(self) -> HashRangeIndex | None:
        """Open-shard index for prediction; None while the open shards do not tile the key space."""
        return self.lineage.open_index if self.lineage is not None else None

    @property
    def tiling_problem(self) -> str | None:
        return self.lineage.problem if self.lineage is not None else None


@dataclass(frozen=True)
class CloudWatchReading:
    """The open stream's stream-level CloudWatch metrics from the app's once-a-minute fetch, or why
    there are none (`problem`)."""

    metrics: MetricSeries | None
    problem: str | None = None


BIG_STREAM = 500  # shards; above this, pure-Python work on the whole listing runs in a thread


# Polls between two full listings when nothing says the shards changed: with the default 5 s
# interval, the whole ListShards once a minute (it catches a split and a merge that cancel out in
# the open-shard count between two polls).
FULL_LISTING_EVERY = 12


class ListingSchedule:
    """When a poll lists every shard. Each poll asks DescribeStreamSummary (one small call); the full
    ListShards (ten pages for 10k shards, and the table diff and lineage after it) only runs on the
    first poll, when the user asks (`r`), when the summary's status or open-shard count moved, and
    every FULL_LISTING_EVERY-th poll."""

    def __init__(self, every: int = FULL_LISTING_EVERY) -> None:
        self.every = every
        self._since_full = 0

    def next_poll_lists_all(self) -> bool:
        """Count a timed poll; True when it is due to list every shard regardless of the summary."""
        self._since_full += 1
        return self._since_full >= self.every

    def listed_all(self) -> None:
        self._since_full = 0


def listing_is_current(previous: StreamView, summary: StreamSummary) -> bool:
    """Whether the shards of `previous` still stand, as far as the stream's summary tells."""
    before = previous.summary
    return (
        summary.name == before.name
        and summary.status == before.status == "ACTIVE"
        and summary.open_shard_count == before.open_shard_count
    )


async def fetch_stream(backend: StreamReads, stream: str, previous: StreamView | None = None) -> StreamView:
    """Summary and every shard; the lineage is left to `with_lineage`. Given the `previous` view of
    the same stream, only the summary is asked for, and the previous shards (with their lineage) are
    kept unless the summary says they changed."""
    if previous is not None:
        summary = await backend.describe_stream_summary(stream)
        if listing_is_current(previous, summary):
            return replace(previous, summary=summary)
        shards = await backend.all_shards(stream)
    else:
        summary, shards = await asyncio.gather(backend.describe_stream_summary(stream), backend.all_shards(stream))
    if len(shards) > BIG_STREAM:
        listing = await asyncio.to_thread(ShardListing, shards)
    else:
        listing = ShardListing(shards)
    return StreamView(summary=summary, shards=listing)


async def with_lineage(view: StreamView) -> StreamView:
    if view.lineage is not None:  # the shards of an earlier poll, kept: so is their lineage
        return view
    # Building the lineage of 10k shards takes 60-200 ms of pure Python: off the UI loop it goes
    # (a thread holding the GIL still lets the loop run every switch interval, 5 ms).
    if len(view.shards) > BIG_STREAM:
        lineage, summary = await asyncio.to_thread(_lineage_and_summary, view.shards)
    else:
        lineage, summary = _lineage_and_summary(view.shards)
    return replace(view, lineage=lineage, share_summary=summary)


def _lineage_and_summary(shards: tuple[Shard, ...]) -> tuple[Lineage, str | None]:
    lineage = Lineage.build(shards)
    index = lineage.open_index
    summary = summarise_shares(index.starts, index.endings, index.shard_ids) if index is not None else None
    return lineage, summary


def describe_failure(error: BaseException, timeout: float) -> str:
    """One line for the red header."""
    if isinstance(error, ConsoleError):
        return error.message
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        return f"no answer within {timeout:g}s"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:200] if text else type(error).__name__
