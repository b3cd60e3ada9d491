"""KPL aggregates on the heat sampler's path: a GetRecords page split into plain records and
aggregates, each aggregate opened to its user records (partition key and size), so heat counts
what producers wrote rather than the envelopes they packed it in.

Only the keys and sizes are read: no payload is classified (that is the tail's work), so opening
an aggregate costs its MD5 check, one protobuf parse and a pass over its records. A malformed
aggregate (bad magic, MD5 mismatch, truncated protobuf, a key index past its table, more records
than an aggregate may hold) is counted as a decode error; the rest of the page is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aws_kinesis_agg import MAGIC

from console.read.decoding import MalformedAggregate, parse_aggregate

# (arrival epoch seconds, outer partition key (None when keyless), Kinesis record size as the limit counts it,
#  [(inner partition key, inner size)] or None for a malformed aggregate)
Aggregate = tuple[float, "str | None", int, "list[tuple[str, int]] | None"]


def user_records(data: bytes) -> list[tuple[str, int]]:
    """The (partition key, size) of each user record in one aggregate: data plus UTF-8 key, as a
    plain record of that key would count against the shard limit. MalformedAggregate if broken."""
    records, keys, _ = parse_aggregate(data)
    key_sizes = [len(key.encode("utf-8")) for key in keys]
    try:
        return [
            (keys[index], len(record.data) + key_sizes[index])
            for record in records
            for index in (record.partition_key_index,)
        ]
    except IndexError:
        raise MalformedAggregate(f"a user record names a partition key past the {len(keys)}-entry table") from None


def split_page(records: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Aggregate]]:
    """GetRecords' `Records` as (plain records, aggregates opened to their user records)."""
    plain: list[Mapping[str, Any]] = []
    aggregates: list[Aggregate] = []
    for record in records:
        data = record["Data"]
        if data[:4] != MAGIC:
            plain.append(record)
            continue
        arrival = record["ApproximateArrivalTimestamp"]
        arrival = arrival.timestamp() if hasattr(arrival, "timestamp") else float(arrival)
        key = record.get("PartitionKey")  # absent for a keyless record (AUTO distribution)
        try:
            inner: list[tuple[str, int]] | None = user_records(data)
        except MalformedAggregate:
            inner = None
        aggregates.append((arrival, key, len(data) + (len(key.encode("utf-8")) if key else 0), inner))
    return plain, aggregates
