"""`DecodedRecord.json_line()`, the one-pass JSON line `tail --json` and exports write: the same value as
the dict it stands for, and never a character a terminal acts on, whatever the payload holds."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

from aws_kinesis_agg.aggregator import AggRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from console.read.decoding import decode_record
from console.read.printable import printable_json

ARRIVAL = datetime(2026, 11, 22, 20, 0, 0, 123000, tzinfo=UTC)


def reference(record) -> str:
    return printable_json(json.dumps(record.to_json(), ensure_ascii=False, default=str))


def check(data: bytes, key: str | None = "pk") -> None:
    for record in decode_record(
        data, shard_id="shardId-000000000001", sequence_number="4960", partition_key=key, arrival=ARRIVAL
    ):
        line = record.json_line()
        assert json.loads(line) == json.loads(reference(record)), data
        assert line.isprintable(), line  # no control, format or line-breaking character at all
        assert "\n" not in line and "\r" not in line


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([None, 2]), st.text(max_size=20))
def test_any_json_payload_gives_the_same_value_as_the_dict(value, indent, key):
    check(json.dumps(value, ensure_ascii=False, indent=indent).encode("utf-8", "surrogatepass"), key or "k")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_give_the_same_value_as_the_dict(data):
    check(data)


def test_hostile_payloads_stay_inert():
    for data in [
        '{"a": "\u202eevil\u0085", "b": "\x1b]0;title\x07"}'.encode(),  # raw C1/bidi inside strings
        b'{"a":\t1,\r\n"b": [1,\x0b2]}',  # whitespace controls between tokens (and one that is not JSON)
        b'{"esc": "\\u001b[2J", "lone": "\\ud800"}',
        b'  {"padded": true}  ',
        gzip.compress('{"z": "\u009b31m"}'.encode(), mtime=0),
        b"\x1b[31mred text\x1b[0m",
    ]:
        check(data, key="\x1b]52;c;aGk=\x07")
    aggregate = AggRecord()
    aggregate.add_user_record("inner\u202e", '{"x": "\u009d"}'.encode(), "42")
    aggregate.add_user_record("inner", b"plain")
    check(aggregate.get_contents()[2])


def test_a_printable_json_payload_is_written_as_it_came():
    [record] = decode_record(b'{"b":1, "a":[1.50,2]}', shard_id="s", sequence_number="1", partition_key="k")
    assert record.json_line().endswith('"content": {"b":1, "a":[1.50,2]}}')


def test_a_record_sent_without_a_partition_key():
    """An AUTO stream's records may come without a key: its JSON line says null, as to_json() does."""
    check(b'{"n": 1}', key=None)
