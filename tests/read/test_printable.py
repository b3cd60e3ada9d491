"""The one function that makes stream text safe for a terminal, and its JSON twin."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from console.read.printable import printable, printable_json
from tests.hostile import BIDI, C1, CLEAR_SCREEN, HOSTILE_KEYS, OSC_CLIPBOARD, OSC_TITLE, raw_controls


def test_hostile_sequences_are_spelled_out():
    assert printable(f"a{OSC_TITLE}b") == "a\\x1b]0;pwned\\x07b"
    assert printable(OSC_CLIPBOARD) == "\\x1b]52;c;cHduZWQ=\\x07"
    assert printable(CLEAR_SCREEN) == "\\x1b[2J"
    assert printable(C1) == "\\x9b2J\\x9d0;c1\\x9c"
    assert printable(BIDI) == "\\u202eevil\\u2066x\\u2069"
    assert printable("two\nlines\r\tand\x7f") == "two\\nlines\\r\\tand\\x7f"
    assert printable("\udc80 lone surrogate") == "\\udc80 lone surrogate"
    assert printable("\U000e0001 tag") == "\\U000e0001 tag"


def test_printable_text_is_returned_unchanged():
    for text in ("plain", "[bold red]x[/]", "ünïcødé 漢字 🙂", "back\\slash", ""):
        assert printable(text) == text


def test_bytes_that_are_not_utf8_are_spelled_as_bytes():
    assert printable(b"ok \xff\xfe \x1b[2J \xe2\x80\xae") == "ok \\xff\\xfe \\x1b[2J \\u202e"


@given(st.text() | st.binary())
def test_nothing_unprintable_survives(text):
    assert raw_controls(printable(text)) == []


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=12,
    )
)
def test_json_keeps_its_value_and_loses_its_controls(value):
    for indent in (None, 2):
        serialized = printable_json(json.dumps(value, ensure_ascii=False, indent=indent))
        assert json.loads(serialized) == value
        assert raw_controls(serialized) == []


def test_every_hostile_key_is_neutralised_in_text_and_json():
    for key in HOSTILE_KEYS.values():
        assert raw_controls(printable(key)) == []
        assert raw_controls(printable_json(json.dumps({"k": key}, ensure_ascii=False))) == []


def test_tail_lines_escape_every_field_a_stream_supplies():
    from aws_kinesis_agg.aggregator import AggRecord

    from console.commands.tail import format_line
    from console.read.decoding import decode_record

    packer = AggRecord()
    packer.add_user_record(f"inner{OSC_TITLE}", f"text {C1}".encode(), "12\x1b[2J")
    _, _, blob = packer.get_contents()
    (record,) = decode_record(blob, shard_id="shardId-000000000000", sequence_number="1", partition_key="outer")
    line = format_line(record)
    assert raw_controls(line) == [] and "\n" not in line
    assert " inner\\x1b]0;pwned\\x07 ehk=12\\x1b[2J kpl+text " in line
