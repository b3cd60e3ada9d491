"""Hostile records, decoded and read: JSON nested 100,000 deep, a gzip bomb (1 GiB inflated), a page of
records that inflate to 63 MiB each, malformed KPL aggregates, 1 MiB records. Each is a decode error
or is read, never an exception; memory stays bounded (measured with tracemalloc, moto runs in its own
process)."""

from __future__ import annotations

import gzip
import hashlib
import json
import struct
import tracemalloc
import zlib

import pytest
from aws_kinesis_agg import MAGIC
from aws_kinesis_agg.aggregator import AggRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from console.read.decoding import KIND_ERROR, MIB, InflateBudget, decode_record
from console.read.payloads import MAX_BATCH_INFLATED_BYTES, MAX_INFLATED_BYTES, MAX_JSON_DEPTH
from console.read.tail import TailOptions, TailReader, parse_start
from tests.read.test_tail import read_all

DEEP = 100_000


def decode(data: bytes, budget: InflateBudget | None = None):
    return decode_record(data, shard_id="shardId-000000000000", sequence_number="1", partition_key="pk", budget=budget)


def gzip_bomb(inflated: int = 1 << 30, chunk_size: int = 16 * MIB) -> bytes:
    """One gzip member that inflates to `inflated` zero bytes, in under 1 MiB. Built from one chunk's
    compressed form repeated (a full flush makes every chunk's output the same) rather than by deflating
    a gigabyte; the trailer carries the true CRC and size."""
    chunk = bytes(chunk_size)
    count = inflated // chunk_size
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    middle = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(chunk) + packer.flush()
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    return head + middle * (count - 2) + last[:-8] + struct.pack("<II", crc, inflated & 0xFFFFFFFF)


def peak_mib(work) -> tuple[object, float]:
    """(work's result, the peak of Python allocations while it ran, in MiB)."""
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


async def apeak_mib(work) -> tuple[object, float]:
    tracemalloc.start()
    try:
        result = await work()
        return result, tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


# ---- JSON nesting --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"[" * DEEP + b"]" * DEEP,
        b"[" * DEEP,  # and unterminated
        b'{"a":' * DEEP + b"1" + b"}" * DEEP,
        b"  \n" + b"[" * DEEP + b"]" * DEEP,  # after whitespace
        gzip.compress(b"[" * DEEP + b"]" * DEEP, mtime=0),
    ],
)
def test_json_nested_100000_deep_is_a_decode_error(data):
    (record,) = decode(data)
    assert record.kind == KIND_ERROR and record.error == f"JSON nested deeper than {MAX_JSON_DEPTH} levels; not parsed"
    assert record.content_text(max_hex_bytes=8).endswith(f"… ({len(record.value)} bytes)")


def test_json_at_the_depth_limit_parses_and_prints_pretty_and_compact():
    data = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    (record,) = decode(data)
    assert record.kind == "json"
    assert record.content_text() == data.decode()
    assert len(record.content_text(pretty=True).splitlines()) == 2 * MAX_JSON_DEPTH - 1


def test_brackets_inside_strings_do_not_count_as_nesting():
    data = json.dumps({"text": "[" * DEEP, "escaped": '\\"[[[' * 100}).encode()
    (record,) = decode(data)
    assert record.kind == "json" and record.value["text"] == "[" * DEEP


def test_deep_json_inside_a_kpl_aggregate_is_that_user_records_error():
    packer = AggRecord()
    packer.add_user_record("good", b'{"ok": 1}', None)
    packer.add_user_record("deep", b"[" * 5000 + b"]" * 5000, None)
    _key, _, blob = packer.get_contents()
    good, deep = decode(blob)
    assert (good.kind, good.value) == ("json", {"ok": 1})
    assert deep.kind == KIND_ERROR and deep.kind_label == "kpl+decode-error" and "nested deeper" in deep.error


async def test_a_deep_record_does_not_stop_the_tail_and_the_batch_keeps_its_good_records(kinesis, make_stream):
    stream = await make_stream(shards=1)
    await kinesis.put_record(stream, b'{"n": 1}', "before")
    await kinesis.put_record(stream, b"[" * DEEP + b"]" * DEEP, "deep")
    await kinesis.put_record(stream, b'{"n": 2}', "after")

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    assert [(r.partition_key, r.kind) for r in records] == [("before", "json"), ("deep", KIND_ERROR), ("after", "json")]


# ---- gzip ----------------------------------------------------------------------------------------------


def test_a_one_gib_gzip_bomb_is_refused_within_one_records_cap():
    bomb = gzip_bomb()
    assert len(bomb) < MIB  # it fits in one Kinesis record

    (record,), peak = peak_mib(lambda: decode(bomb))

    assert record.kind == KIND_ERROR and record.error == "corrupt gzip: inflates past 64 MiB; not shown"
    # the cap, the buffer's growth margin (an eighth), a few steps of output and the input
    assert peak < MAX_INFLATED_BYTES / MIB * 1.125 + 16, f"peak {peak:.1f} MiB"
    print(f"\ngzip bomb (1 GiB inflated, {len(bomb):,} bytes): peak {peak:.1f} MiB")


def test_a_batch_inflates_at_most_its_budget():
    record_63 = gzip.compress(b"a" * (63 * MIB), mtime=0)
    budget = InflateBudget()
    decoded = [record for _ in range(12) for record in decode(record_63, budget)]
    assert decoded[0].kind == "text" and decoded[0].inflated_size == 63 * MIB and decoded[0].weight == 63 * MIB
    assert all(
        r.kind == KIND_ERROR and r.error.startswith("not inflated: this batch's other records inflated 63 MiB")
        for r in decoded[1:]
    )
    assert budget.left == MAX_BATCH_INFLATED_BYTES - 63 * MIB
    # small records still fit in what is left
    (small,) = decode(gzip.compress(b'{"small": true}', mtime=0), budget)
    assert small.value == {"small": True}


async def test_twelve_records_of_63_mib_inflated_are_read_within_a_bounded_peak(kinesis, make_stream):
    stream = await make_stream(shards=1)
    record_63 = gzip.compress(json.dumps({"pad": "a" * (63 * MIB - 20)}).encode(), mtime=0)
    for index in range(12):
        await kinesis.put_record(stream, record_63, f"big-{index}")
    bomb = gzip_bomb()
    await kinesis.put_record(stream, bomb, "bomb")
    del record_63, bomb

    seen: list[tuple[str, str]] = []

    async def tail_without_keeping():
        reader = TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon")))
        async for batch in reader.batches():
            seen.extend((r.partition_key, r.kind) for r in batch.records)

    _, peak = await apeak_mib(tail_without_keeping)

    assert len(seen) == 13 and seen[0] == ("big-0", "json")
    assert all(kind == KIND_ERROR for _, kind in seen[1:])
    # one record inflated (63 MiB), its text decoded (63 MiB) and parsed (63 MiB string): three copies at most
    assert peak < 3 * 64 + 16, f"peak {peak:.1f} MiB"
    print(f"\n12 x 63 MiB inflated + a 1 GiB bomb through the tail reader: peak {peak:.1f} MiB")


# ---- KPL -------------------------------------------------------------------------------------------------


def _aggregate() -> bytes:
    packer = AggRecord()
    packer.add_user_record("a", b'{"x": 1}', None)
    packer.add_user_record("b", gzip.compress(b"zipped", mtime=0), "12")
    packer.add_user_record("c", b"text", None)
    return packer.get_contents()[2]


AGGREGATE_MESSAGE = _aggregate()[len(MAGIC) : -16]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(AGGREGATE_MESSAGE)), st.integers(0, 255), st.sampled_from("rid")),
        min_size=1,
        max_size=6,
    )
)
def test_malformed_aggregates_with_a_valid_digest_are_decode_errors_not_crashes(edits):
    """Byte edits to the protobuf message (the MD5 trailer recomputed, so the parser sees them)."""
    message = bytearray(AGGREGATE_MESSAGE)
    for position, value, edit in edits:
        position = min(position, len(message) - 1) if message else 0
        if edit == "r" and message:
            message[position] = value
        elif edit == "i":
            message.insert(position, value)
        elif message:
            del message[position]
    data = MAGIC + bytes(message) + hashlib.md5(bytes(message)).digest()
    for record in decode(data):
        assert isinstance(record.partition_key, str)
        assert record.explicit_hash_key is None or isinstance(record.explicit_hash_key, str)
        record.content_text()
        json.dumps(record.to_json())


def test_an_aggregate_whose_key_table_is_not_utf8_is_a_decode_error():
    packer = AggRecord()
    packer.add_user_record("k\u00e9", b"x", None)
    message = packer.get_contents()[2][len(MAGIC) : -16].replace("k\u00e9".encode(), b"k\xff\xfe")
    (record,) = decode(MAGIC + message + hashlib.md5(message).digest())
    assert record.kind == KIND_ERROR and record.error == "malformed KPL aggregate: partition key #0 is not UTF-8"


# ---- 1 MiB records ---------------------------------------------------------------------------------------


async def test_one_mib_records_are_read_whole(kinesis, make_stream):
    stream = await make_stream(shards=1)
    big_json = json.dumps({"pad": "x" * (MIB - 64)}).encode()
    big_text = ("y" * (MIB - 8)).encode()
    await kinesis.put_record(stream, big_json, "json")
    await kinesis.put_record(stream, big_text, "text")

    records = await read_all(TailReader(kinesis, stream, TailOptions(start=parse_start("trim-horizon"))))

    assert [(r.partition_key, r.kind, r.size) for r in records] == [
        ("json", "json", len(big_json)),
        ("text", "text", len(big_text)),
    ]
    assert records[0].value["pad"] == "x" * (MIB - 64) and records[1].value == big_text.decode()
