"""Payload decoding: every kind, KPL aggregates built with aws-kinesis-agg, and broken input as data."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from datetime import UTC, datetime

import pytest
from aws_kinesis_agg import MAGIC, deaggregator, messages_pb2
from aws_kinesis_agg.aggregator import AggRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from console.read import payloads
from console.read.decoding import decode_record


def decode(data: bytes, key: str = "pk"):
    return decode_record(
        data,
        shard_id="shardId-000000000003",
        sequence_number="4960001",
        partition_key=key,
        arrival=datetime(2026, 11, 22, 20, 0, 0, 123000, tzinfo=UTC),
    )


def one(data: bytes):
    records = decode(data)
    assert len(records) == 1
    return records[0]


def framed(message: bytes) -> bytes:
    """An aggregate with a correct MD5 trailer around any protobuf bytes."""
    return MAGIC + message + hashlib.md5(message).digest()


PLAIN_KINDS = [
    (b'{"a": [1, 2, {"b": null}]}', "json", {"a": [1, 2, {"b": None}]}),
    (b"  \n[1, 2]", "json", [1, 2]),
    (b'"just a string"', "json", "just a string"),
    ("grüße, 東京".encode(), "text", "grüße, 東京"),
    (b"42", "text", "42"),  # a bare number is more likely a counter than a JSON document
    (b"{not json", "text", "{not json"),
    (b'{"a": 1}\r\n', "json", {"a": 1}),
    (b'{"a": 1} trailing', "text", '{"a": 1} trailing'),
    (b"[1] [2]", "text", "[1] [2]"),
    ('{"a": 1}\u00a0'.encode(), "text", '{"a": 1}\u00a0'),
    (b"tab\tand\r\nnewlines", "text", "tab\tand\r\nnewlines"),
    (b"", "text", ""),
    (b"[INFO] started", "text", "[INFO] started"),
    (b'{"a": "\xff"}', "hex", b'{"a": "\xff"}'),
]


@pytest.mark.parametrize(("data", "kind", "value"), PLAIN_KINDS)
def test_plain_kinds(data, kind, value):
    record = one(data)
    assert (record.kind, record.value, record.encoding, record.error) == (kind, value, (), None)
    assert record.size == len(data)


@pytest.mark.parametrize(("data", "kind", "value"), PLAIN_KINDS)
def test_gzip_and_kpl_wrapped_payloads_are_detected_like_plain_ones(data, kind, value):
    # Detection has a fast path at each level (plain, inside gzip, inside an aggregate); all agree.
    inflated = one(gzip.compress(data, mtime=0))
    assert (inflated.kind, inflated.value, inflated.encoding) == (kind, value, ("gzip",))
    aggregate = AggRecord()
    aggregate.add_user_record("pk", data)
    aggregate.add_user_record("pk", gzip.compress(data, mtime=0))
    inner = decode(aggregate.get_contents()[2])
    assert [(r.kind, r.value, r.encoding) for r in inner] == [(kind, value, ("kpl",)), (kind, value, ("kpl", "gzip"))]


@pytest.mark.parametrize("data", [b"\x00\x01\x02", b"\xff\xfe\xfd", b"ok\x07bell", "é".encode("latin-1")])
def test_binary_is_hex(data):
    record = one(data)
    assert record.kind == "hex"
    assert record.to_json()["content"] == data.hex()


def test_gzip_is_inflated_and_looked_into():
    record = one(gzip.compress(b'{"deep": true}', mtime=0))
    assert (record.kind_label, record.value) == ("gzip+json", {"deep": True})
    text = one(gzip.compress("ünïcode".encode(), mtime=0))
    assert (text.kind_label, text.value) == ("gzip+text", "ünïcode")
    two_members = one(gzip.compress(b'{"x": ', mtime=0) + gzip.compress(b"1}", mtime=0))
    assert two_members.value == {"x": 1}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (gzip.compress(b"hello world" * 20, mtime=0)[:-6], "truncated stream"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"not deflate at all", "corrupt gzip: "),
        (
            gzip.compress(b"abc", mtime=0)[:-8] + b"\x00\x00\x00\x00" + gzip.compress(b"abc", mtime=0)[-4:],
            "incorrect data check",
        ),
    ],
)
def test_corrupt_gzip_is_a_decode_error_with_the_reason(data, reason):
    record = one(data)
    assert record.kind == "decode-error" and record.encoding == ("gzip",)
    assert record.error.startswith("corrupt gzip: ") and reason in record.error
    assert record.to_json()["content"] == data.hex() and record.to_json()["error"] == record.error


def test_gzip_bomb_is_refused_not_inflated(monkeypatch):
    monkeypatch.setattr(payloads, "MAX_INFLATED_BYTES", 1024 * 1024)
    record = one(gzip.compress(b"\x00" * (3 * 1024 * 1024), mtime=0))
    assert record.kind == "decode-error" and "inflates past 1 MiB" in record.error


def test_kpl_aggregate_yields_each_user_record_with_its_keys():
    packer = AggRecord()
    packer.add_user_record("alpha", b'{"n": 0}', "1234567890")
    packer.add_user_record("beta", gzip.compress(b'{"n": 1}', mtime=0))
    packer.add_user_record("alpha", b"two")
    outer_key, _, blob = packer.get_contents()
    records = decode(blob, outer_key)
    assert [(r.partition_key, r.explicit_hash_key, r.sub_sequence_number, r.kind_label, r.value) for r in records] == [
        ("alpha", "1234567890", 0, "kpl+json", {"n": 0}),
        ("beta", None, 1, "kpl+gzip+json", {"n": 1}),
        ("alpha", None, 2, "kpl+text", "two"),
    ]
    assert {r.sequence_number for r in records} == {"4960001"}
    assert [r.position for r in records] == ["4960001/0", "4960001/1", "4960001/2"]
    assert records[0].to_json()["arrival"] == "2026-11-22T20:00:00.123Z"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=20),
            st.binary(max_size=200),
            st.one_of(st.none(), st.integers(0, 2**128 - 1).map(str)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_kpl_round_trip_matches_the_librarys_deaggregator(entries):
    packer = AggRecord()
    for partition_key, data, explicit_hash_key in entries:
        packer.add_user_record(partition_key, data, explicit_hash_key)
    outer_key, _, blob = packer.get_contents()
    ours = decode(blob, outer_key)
    assert [(r.partition_key, r.explicit_hash_key) for r in ours] == [(k, e) for k, _, e in entries]
    theirs = deaggregator.deaggregate_records(
        [
            {
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "sequenceNumber": "1",
                    "approximateArrivalTimestamp": 0,
                    "partitionKey": outer_key,
                    "data": base64.b64encode(blob),
                }
            }
        ]
    )
    assert [t["kinesis"]["partitionKey"] for t in theirs] == [r.partition_key for r in ours]
    for record, their, (_, data, _) in zip(ours, theirs, entries):
        assert base64.b64decode(their["kinesis"]["data"]) == data
        assert record.size == len(data)
        if record.kind == "hex" or record.kind == "decode-error":
            assert record.value == data


def aggregate_message(*, keys=("k",), hash_keys=(), records=((0, None, b"x"),)) -> bytes:
    message = messages_pb2.AggregatedRecord()
    message.partition_key_table.extend(keys)
    message.explicit_hash_key_table.extend(hash_keys)
    for key_index, hash_index, data in records:
        inner = message.records.add()
        inner.partition_key_index = key_index
        if hash_index is not None:
            inner.explicit_hash_key_index = hash_index
        inner.data = data
    return message.SerializePartialToString()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (MAGIC + b"\x01\x02", "too short"),
        (framed(aggregate_message())[:-1] + b"\x00", "MD5 digest does not match"),
        (framed(aggregate_message())[:-5], "MD5 digest does not match"),
        (framed(b"\xff\xff\xff\xff\xff"), "does not parse"),
        (framed(aggregate_message(records=((3, None, b"x"),))), "names partition key #3 of a 1-entry table"),
        (framed(aggregate_message(hash_keys=("9",), records=((0, 2, b"x"),))), "explicit hash key #2 of a 1-entry"),
        (framed(aggregate_message(records=())), "holds no user records"),
    ],
)
def test_malformed_aggregate_is_a_decode_error_with_the_reason(data, reason):
    record = one(data)
    assert record.kind == "decode-error" and record.encoding == ("kpl",)
    assert record.error.startswith("malformed KPL aggregate: ") and reason in record.error
    assert record.value == data and record.partition_key == "pk"


def test_missing_required_fields_in_an_aggregate_are_reported():
    message = messages_pb2.AggregatedRecord()
    message.partition_key_table.append("k")
    message.records.add().data = b"x"  # no partition_key_index, which the schema requires
    record = one(framed(message.SerializePartialToString()))
    assert record.kind == "decode-error" and "partition_key_index" in record.error


def test_an_inner_record_without_a_hash_key_does_not_borrow_one():
    # The library's deaggregator reads explicit_hash_key_index without checking presence, so the
    # second record would get "777"; the aggregate says it has none.
    blob = framed(aggregate_message(keys=("a", "b"), hash_keys=("777",), records=((0, 0, b"1"), (1, None, b"2"))))
    assert [r.explicit_hash_key for r in decode(blob)] == ["777", None]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.binary(max_size=300).map(lambda b: MAGIC + b),
        st.binary(max_size=300).map(lambda b: b"\x1f\x8b" + b),
        st.binary(max_size=200).map(framed),
    )
)
def test_arbitrary_bytes_never_raise(data):
    for record in decode(data):
        json.dumps(record.to_json())
        assert record.kind in ("json", "text", "hex", "decode-error")
        assert (record.error is not None) == (record.kind == "decode-error")


def test_pretty_and_compact_content():
    record = one(b'{"b": [1, 2], "a": "\xc3\xa9"}')
    assert record.content_text() == '{"b":[1,2],"a":"é"}'
    assert record.content_text(pretty=True) == '{\n  "b": [\n    1,\n    2\n  ],\n  "a": "é"\n}'
    blob = one(bytes(range(200)))
    assert blob.content_text(max_hex_bytes=4) == "00010203… (200 bytes)"
