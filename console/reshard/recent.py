"""What a shard received lately, as a sample of hash keys: the one read a plan needs, so a split can
divide the traffic the shard really carries (`--at-median-of-recent`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from console.errors import BadInput, ConsoleError
from console.keyspace.hashkeys import MAX_HASH_KEY, md5_hash_key
from console.read.decoding import DecodedRecord
from console.read.positions import AT_TIMESTAMP, StartPosition
from console.read.tail import GET_RECORDS_LIMIT, TailOptions, TailReader
from console.reshard.plan import KeySample, MedianSplit, median_split
from console.reshard.sample import DEFAULT_SAMPLE_LIMIT, DEFAULT_SAMPLE_SECONDS
from console.topology.model import Shard
from console.words import plain_number


@dataclass(frozen=True)
class RecentSample:
    """Hash keys of the user records a shard received lately, one entry per user record."""

    shard_id: str
    seconds: float
    limit: int
    sample: KeySample
    records: int  # Kinesis records read; a KPL aggregate is one record holding many user records

    @property
    def limit_reached(self) -> bool:
        return len(self.sample) >= self.limit

    def describe(self) -> str:
        first = f", the first {self.limit} user records of it (--sample-limit)" if self.limit_reached else ""
        return f"{self.shard_id}'s records of the last {self.seconds:g} s{first}"


def record_hash_key(record: DecodedRecord) -> int:
    """The hash key a user record routes by: its KPL explicit hash key if it has one, else the MD5
    of its partition key."""
    if record.explicit_hash_key is not None:
        try:
            key = int(record.explicit_hash_key)
        except ValueError:
            key = -1
        if 0 <= key <= MAX_HASH_KEY:
            return key
    return md5_hash_key(record.partition_key or "")  # a keyless (AUTO) record: as the empty key


async def sample_recent_keys(
    kinesis: Any,
    stream: str,
    shard_id: str,
    *,
    seconds: float = DEFAULT_SAMPLE_SECONDS,
    limit: int = DEFAULT_SAMPLE_LIMIT,
    now: datetime | None = None,
) -> RecentSample:
    """Read `shard_id` from AT_TIMESTAMP now - `seconds` to its current end, at most `limit` user
    records, and take each record's hash key. TailReader does the reading, so GetRecords stays
    within its limits (5 calls/s per shard, at most 10,000 records a call, throttling backed off).

    GetRecords does not return a plain record's ExplicitHashKey, so such a record is hashed by its
    partition key and may fall outside the shard; median_split leaves those out and says how many.
    """
    if not seconds > 0:
        raise BadInput(f"--sample-seconds must be above 0; got {plain_number(seconds)}", code="bad_sample")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BadInput(f"--sample-limit must be a whole number of at least 1; got {limit!r}", code="bad_sample")
    start = (now or datetime.now(UTC)) - timedelta(seconds=seconds)
    options = TailOptions(start=StartPosition(AT_TIMESTAMP, timestamp=start), shard_ids=(shard_id,), limit=limit)
    reader = TailReader(kinesis, stream, options, batch_limit=min(limit, GET_RECORDS_LIMIT))
    keys: list[str] = []
    hash_keys: list[int] = []
    sequence_numbers: set[str] = set()
    async for batch in reader.batches():
        for record in batch.records:
            if record.partition_key is None:  # written under AUTO distribution: no key to place it by
                continue
            keys.append(record.partition_key)
            hash_keys.append(record_hash_key(record))
            sequence_numbers.add(record.sequence_number)
    return RecentSample(shard_id, seconds, limit, KeySample(keys, hash_keys), len(sequence_numbers))


async def median_split_of_recent(
    kinesis: Any,
    stream: str,
    shard: Shard,
    *,
    seconds: float = DEFAULT_SAMPLE_SECONDS,
    limit: int = DEFAULT_SAMPLE_LIMIT,
    now: datetime | None = None,
) -> MedianSplit:
    """The split key that divides `shard`'s recent traffic evenly (see sample_recent_keys). Too little
    traffic to take a median from is a failure (exit 1) that points to --at midpoint."""
    recent = await sample_recent_keys(kinesis, stream, shard.shard_id, seconds=seconds, limit=limit, now=now)
    if not len(recent.sample):
        raise ConsoleError(
            f"{shard.shard_id} of {stream} has no records from the last {seconds:g} s to take a "
            "median from; split with --at midpoint, or sample longer with --sample-seconds",
            code="no_recent_records",
        )
    try:
        return median_split(shard, recent.sample, recent.describe(), unit="records")
    except BadInput as error:  # a sample too small or all one key: the traffic, not the input, is at fault
        raise ConsoleError(
            f"cannot split {shard.shard_id} at the median of its recent records: {error.message}; "
            "split with --at midpoint or --at HASH_KEY instead",
            code=error.code,
        ) from None
