"""Given records (`kconsole put`): JSON lines checked line by line, then sent through the ordered
producer and matched again on read-back — under injected partial failures and dropped answers,
nothing is lost or reordered, and identical lines are told apart by their acknowledged sequence."""

from __future__ import annotations

import io
import json

import pytest

from console.produce.given import GivenRecordMatcher, OverlongLine, bounded_lines, parse_json_lines
from console.produce.producer import OrderedProducer
from console.produce.settings import ProducerSettings
from console.produce.verify import Verifier
from console.topology.shardmap import ShardMap
from tests.produce.test_produce_faults import FaultyTransport


def test_lines_become_records_or_numbered_problems():
    lines = [
        b'{"key": "a", "data": {"x": 1}}\n',
        b"\n",
        b'{"key": "b", "data": "text"}\r\n',
        b'{"key": 7, "data": [1, 2]}',
        b'{"key": true, "data": 1}',
        b'{"key": "", "data": 1}',
    ]
    parsed = parse_json_lines(lines)
    assert [(r.line, r.key, r.data) for r in parsed.records] == [
        (1, "a", b'{"x":1}'),
        (3, "b", b"text"),
        (4, "7", b"[1,2]"),
    ]
    assert parsed.blank == 1
    assert [p.line for p in parsed.problems] == [5, 6]
    assert parsed.problems[0].message.startswith("key must be a string (or a whole number)")
    assert parsed.problems[1].message.startswith("partition key must be 1 to 256 characters")


def test_a_key_field_sends_the_line_itself_and_reads_dotted_paths():
    line = '{"user": {"id": "u-1"}, "ehk": "42", "n": 3}'
    parsed = parse_json_lines([line], key_field="user.id", explicit_hash_key_field="ehk")
    (record,) = parsed.records
    assert (record.key, record.data, record.explicit_hash_key) == ("u-1", line.encode(), 42)
    missing = parse_json_lines([line], key_field="user.name")  # no key field: a keyless record
    assert [(r.key, r.data) for r in missing.records] == [(None, line.encode())] and not missing.problems
    out_of_range = parse_json_lines(
        [line.replace('"42"', str(2**128))], key_field="user.id", explicit_hash_key_field="ehk"
    )
    assert "explicit hash key must be from 0 to" in out_of_range.problems[0].message


def test_an_overlong_line_is_reported_by_length_without_being_held_whole():
    data = b'{"key": "a", "data": 1}\n' + b"x" * 5000 + b"\n" + b'{"key": "b", "data": 2}'
    lines = list(bounded_lines(io.BytesIO(data), limit=1000))
    assert lines[0] == b'{"key": "a", "data": 1}\n' and lines[1] == OverlongLine(5001)
    assert lines[2] == b'{"key": "b", "data": 2}'
    parsed = parse_json_lines(lines)
    assert [r.key for r in parsed.records] == ["a", "b"]
    assert str(parsed.problems[0]).startswith("line 2: line is 5,001 bytes: too long to hold a record")


def given_lines(count: int) -> list[bytes]:
    """Keys with different record counts, and some lines repeated word for word."""
    lines = []
    for n in range(count):
        key = f"k{n % 7}" if n % 3 else "hot"
        body = {"n": n // 5 * 5} if key == "hot" else {"n": n}  # "hot" repeats each body five times
        lines.append(json.dumps({"key": key, "data": body}).encode())
    return lines


@pytest.mark.parametrize("fault", ["partial", "drop"])
async def test_given_records_survive_faults_in_line_order_per_key(kinesis, make_stream, fault):
    stream = await make_stream(shards=2)
    parsed = parse_json_lines(given_lines(120))
    assert not parsed.problems
    keys = {r.key for r in parsed.records}
    settings = ProducerSettings(
        keys=len(keys),
        records_per_key=120,
        payload_bytes=0,
        record_total=120,
        pacing=False,
        concurrency=4,
        max_batch_records=10,
        retry_base=0.01,
        retry_cap=0.2,
    ).validated()
    transport = FaultyTransport(kinesis, fault)
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        producer = OrderedProducer(
            stream,
            settings,
            put_records=transport.put_records,
            put_record=transport.put_record,
            shard_map=shard_map,
            records=parsed.records,
        )
        result = await producer.run()
    report = await Verifier.for_backend(kinesis, identify=GivenRecordMatcher(parsed.records)).verify(result)
    assert transport.injected > 0 and result.retries > 0
    assert (result.acknowledged, report.read_back, report.lost, report.out_of_order) == (120, 120, 0, 0), (
        report.to_json()["problems"][:5]
    )
    assert result.max_in_flight_per_key == 1 and report.ok
    assert report.duplicated <= result.possible_duplicates
    # The stream holds each key's lines in input order (sequence numbers ascend with the line).
    line_of = parsed.line_of()
    for key in keys:
        acked = sorted(
            (int(ack.sequence_number), line_of[(k, seq)]) for (k, seq), ack in result.acks.items() if k == key
        )
        assert [line for _, line in acked] == sorted(line for _, line in acked)


def test_the_stream_judges_size_and_keyless_lines_by_line_number():
    from console.produce.given import check_against_stream

    lines = [
        json.dumps({"key": "a", "data": "x" * (2 * 1024 * 1024)}),
        json.dumps({"data": "keyless"}),
        json.dumps({"key": "b", "data": "small"}),
    ]
    on_one_mib = parse_json_lines(lines)
    assert not on_one_mib.problems  # within AWS's 10 MiB: only the stream can refuse them
    check_against_stream(on_one_mib, stream="orders", max_record_bytes=1024 * 1024, auto_distribution=False)
    assert [r.line for r in on_one_mib.records] == [3]
    big, keyless = on_one_mib.problems
    assert str(big).startswith("line 1: record is 2,097,153 bytes") and "orders takes at most 1,048,576 (1 MiB)" in str(
        big
    )
    assert "`kconsole stream max-record-size orders --kib 2049`" in str(big)
    assert str(keyless).startswith("line 2: no partition key") and "kconsole stream distribution orders auto" in str(
        keyless
    )

    on_auto_ten = parse_json_lines(lines)
    check_against_stream(on_auto_ten, stream="orders", max_record_bytes=10 * 1024 * 1024, auto_distribution=True)
    assert not on_auto_ten.problems and [r.key for r in on_auto_ten.records] == ["a", None, "b"]
    assert on_auto_ten.keyless == 1
    too_big = parse_json_lines([json.dumps({"data": "x" * (10 * 1024 * 1024 + 1)})])
    assert "AWS allows at most 10,485,760 (10 MiB) on any stream" in str(too_big.problems[0])


def test_keyless_records_go_out_without_a_key_and_are_matched_by_their_bytes():
    from console.produce.testrecords import is_keyless

    parsed = parse_json_lines(
        [json.dumps({"data": {"n": n}}) for n in range(3)] + [json.dumps({"data": {"n": 0}})], no_key=False
    )
    sent: list[dict] = []

    async def put_records(_stream, entries):
        sent.extend(entries)
        return {
            "Records": [
                {"ShardId": "shardId-000000000000", "SequenceNumber": str(100 + len(sent) - len(entries) + i)}
                for i, _ in enumerate(entries)
            ]
        }

    import asyncio

    settings = ProducerSettings(keys=4, records_per_key=1, payload_bytes=0, record_total=4, pacing=False)
    result = asyncio.run(OrderedProducer("s", settings, put_records=put_records, records=parsed.records).run())
    assert len(sent) == 4 and all("PartitionKey" not in entry for entry in sent)
    assert all(is_keyless(key) for key, _seq in result.acks)
    matcher = GivenRecordMatcher(parsed.records)
    ack_of_line_4 = result.acks[("\x00line-4", 0)]
    same_bytes = {"Data": b'{"n":0}', "SequenceNumber": ack_of_line_4.sequence_number}
    assert matcher(result, same_bytes).key == "\x00line-4"  # twice the same bytes: the ack tells them apart
    assert matcher(result, {"Data": b'{"n":2}', "SequenceNumber": "1"}).key == "\x00line-3"
