"""A record read without a PartitionKey (an AUTO stream takes them) decodes, matches and prints:
null in JSON, — in text, never a KeyError."""

from __future__ import annotations

import json

from console.commands.tail import format_line
from console.read.decoding import decode_api_record
from console.read.tail_options import record_matches


def test_a_keyless_record_is_null_in_json_and_a_dash_in_text():
    (record,) = decode_api_record({"Data": b'{"n": 1}', "SequenceNumber": "7"}, "shardId-000000000000")
    assert record.partition_key is None and record.to_json()["partition_key"] is None
    assert json.loads(record.json_line())["partition_key"] is None  # the fast JSON-lines path too
    assert record.key_text == "\u2014" and " \u2014 json " in format_line(record)
    assert record_matches(record, None, '"n"') and not record_matches(record, "k", None)
    (keyed,) = decode_api_record({"Data": b"x", "SequenceNumber": "8", "PartitionKey": "k"}, "shardId-000000000000")
    assert keyed.key_text == "k" and record_matches(keyed, "k", None)
