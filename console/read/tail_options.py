"""What a tail is asked for and what it hands back (console.read.tail reads): the options, a batch of
one shard's records, each shard's progress, the record filter, and which shards can hold what was
asked for. The backend protocol a read goes through is here too."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from console.errors import BadInput
from console.read.decoding import DecodedRecord
from console.read.keyscope import shards_for_key
from console.read.positions import LATEST, EndPosition, StartPosition
from console.topology.model import Shard


class ReadBackend(Protocol):
    async def all_shards(self, stream: str, shard_filter: dict[str, Any] | None = None) -> list[Shard]: ...
    async def get_shard_iterator(
        self,
        stream: str,
        shard_id: str,
        iterator_type: str,
        *,
        sequence_number: str | None = None,
        timestamp: datetime | None = None,
    ) -> str: ...
    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TailOptions:
    start: StartPosition = field(default_factory=lambda: StartPosition(LATEST))
    shard_ids: tuple[str, ...] = ()
    partition_key: str | None = None
    grep: str | None = None
    follow: bool = False
    limit: int | None = None  # stop after this many user records are shown
    end: EndPosition = field(default_factory=EndPosition)
    where: Callable[[DecodedRecord], bool] | None = None  # a field filter (console.read.where.RecordFilter)
    # Hand over the wire records as they came (TailBatch.wire), undecoded and unfiltered: a copy's reading.
    wire: bool = False
    # Picking up an interrupted read: shards already read to their end, and where to go on in others.
    finished_shards: frozenset[str] = frozenset()
    resume_after: Mapping[str, str] = field(default_factory=dict)
    # With partition_key: read only the shard the key hashes to (the stream holds no KPL aggregates;
    # the first aggregate seen widens the read to every shard anyway).
    placement_only: bool = False
    # Applied to every record shown, after --key/--grep/--where saw the real values (console.read.masking.Masker).
    mask: Callable[[DecodedRecord], DecodedRecord] | None = None


@dataclass(slots=True)
class TailBatch:
    """Records from one GetRecords answer of one shard (possibly none: a lag or state update)."""

    shard_id: str
    records: list[DecodedRecord]
    millis_behind: int | None
    ended: bool = False  # the shard is closed and fully read
    caught_up: bool = False  # without --follow: this shard is done
    weight: int = 0  # bytes the records hold (DecodedRecord.weight)
    wire: list[dict[str, Any]] | None = None  # with TailOptions.wire: GetRecords' records, in sequence order


@dataclass(slots=True)
class ShardProgress:
    shard_id: str
    millis_behind: int | None = None
    records: int = 0
    state: str = "waiting"  # waiting | reading | caught-up | ended | throttled | retrying
    last_sequence: str | None = None  # of the last wire record read (the window's end cuts before it)


def record_matches(
    record: DecodedRecord,
    partition_key: str | None,
    grep: str | None,
    where: Callable[[DecodedRecord], bool] | None = None,
) -> bool:
    if partition_key is not None and record.partition_key != partition_key:
        return False
    if grep is not None:
        haystack = record.content_text() if record.error is None else f"{record.error} {record.content_text()}"
        if grep not in haystack and grep not in (record.partition_key or ""):
            return False
    return where is None or where(record)


def records_until(raw_records: list[dict[str, Any]], moment: datetime) -> int:
    """How many of a page's records (in sequence order) arrived at or before `moment`."""
    for index, raw in enumerate(raw_records):
        arrival = raw.get("ApproximateArrivalTimestamp")
        if arrival is not None and _aware(arrival) > moment:
            return index
    return len(raw_records)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def select_shards(shards: Sequence[Shard], options: TailOptions) -> list[Shard]:
    """The shards that can hold what was asked for, checked against the stream; BadInput otherwise."""
    known = {shard.shard_id: shard for shard in shards}
    chosen = list(shards)
    if options.shard_ids:
        unknown = [shard_id for shard_id in options.shard_ids if shard_id not in known]
        if unknown:
            ordered = sorted(known)
            names = ", ".join(ordered[:12]) + (f" (+{len(ordered) - 12} more)" if len(ordered) > 12 else "")
            raise BadInput(f"unknown shard {unknown[0]} (this stream's shards: {names})")
        chosen = [known[shard_id] for shard_id in dict.fromkeys(options.shard_ids)]
    if not options.shard_ids:
        # Shards named with --shard are read whole and filtered instead.
        chosen = shards_for_key(chosen, options.partition_key, options.placement_only)
    if not options.start.reads_history and not options.shard_ids:
        # From LATEST only open shards will get records; their children are picked up as they appear.
        chosen = [shard for shard in chosen if shard.is_open]
    return chosen
