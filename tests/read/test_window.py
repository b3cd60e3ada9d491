"""RecordWindow: the newest records, bounded by count and by bytes (payload, or what gzip inflated to)."""

from __future__ import annotations

import gzip

from console.read.decoding import MIB, decode_record
from console.read.window import RecordWindow


def record(data: bytes, index: int):
    (decoded,) = decode_record(data, shard_id="shardId-000000000000", sequence_number=str(index), partition_key="k")
    return decoded


def test_count_bound_drops_the_oldest():
    window = RecordWindow(3)
    assert window.extend(record(b"x", i) for i in range(5)) == 2
    assert [r.sequence_number for r in window] == ["2", "3", "4"] and window.weight == 3


def test_byte_bound_drops_the_oldest_and_keeps_the_newest():
    big = b"y" * MIB
    window = RecordWindow(2000, max_bytes=8 * MIB)
    dropped = window.extend(record(big, i) for i in range(20))
    assert len(window) == 8 and dropped == 12 and window.weight == 8 * MIB
    assert [r.sequence_number for r in window] == [str(i) for i in range(12, 20)]
    window.append(record(b"z" * (9 * MIB), 20))  # alone past the bound: it stays, everything else goes
    assert [r.sequence_number for r in window] == ["20"] and window.weight == 9 * MIB
    window.clear()
    assert window.weight == 0 and not window


def test_inflated_records_weigh_what_they_inflated_to():
    inflated = record(gzip.compress(b"a" * (10 * MIB), mtime=0), 0)
    assert inflated.size < 64 * 1024 and inflated.weight == 10 * MIB
    window = RecordWindow(2000, max_bytes=25 * MIB)
    window.extend(record(gzip.compress(b"a" * (10 * MIB), mtime=0), i) for i in range(5))
    assert len(window) == 2 and window.weight == 20 * MIB
