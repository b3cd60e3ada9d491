"""The verifier: lineage order, and that it really finds lost, duplicated, misplaced and reordered
records (made at the transport boundary, or given as read copies to the pure analysis)."""

from __future__ import annotations

import pytest

from console.keyspace.hashkeys import MAX_HASH_KEY, md5_hash_key
from console.produce.producer import OrderedProducer
from console.produce.report import Ack, ProduceResult
from console.produce.settings import ProducerSettings
from console.produce.verify import ReadSettings, Verifier
from console.produce.verify_analysis import ReadCopy, ShardLineage, analyse
from console.topology.model import Shard
from console.topology.shardmap import ShardMap

HALF = 2**127


def shard(shard_id, start, end, parent=None, adjacent=None, closed=False) -> Shard:
    return Shard(shard_id, start, end, parent, adjacent, "1", "9" if closed else None)


def reshard_history() -> list[Shard]:
    """0 and 1; 0 split into 2 and 3; 3 merged with 1 into 4."""
    return [
        shard("shardId-4", HALF // 2, MAX_HASH_KEY, "shardId-3", "shardId-1"),
        shard("shardId-2", 0, HALF // 2 - 1, "shardId-0"),
        shard("shardId-3", HALF // 2, HALF - 1, "shardId-0", closed=True),
        shard("shardId-1", HALF, MAX_HASH_KEY, closed=True),
        shard("shardId-0", 0, HALF - 1, closed=True),
    ]


def test_lineage_reads_parents_first_and_knows_descendants():
    lineage = ShardLineage(reshard_history())
    order = lineage.order
    assert order["shardId-0"] < order["shardId-2"] and order["shardId-0"] < order["shardId-3"]
    assert order["shardId-3"] < order["shardId-4"] and order["shardId-1"] < order["shardId-4"]
    assert lineage.descendants("shardId-0") == {"shardId-2", "shardId-3", "shardId-4"}
    assert lineage.descendants("shardId-1") == {"shardId-4"}
    assert lineage.at_or_below("shardId-2") == {"shardId-2"}


def fake_run(acks: dict[tuple[str, int], Ack]) -> ProduceResult:
    settings = ProducerSettings(keys=2, records_per_key=4, run_id="r1").validated()
    # Key a lives in the middle of shard 0 (later 3, then 4); key b in shard 1.
    return ProduceResult(
        settings, "s", 0.0, 1.0, sent=len(acks), acks=acks, explicit_hash_keys={"a": 3 * HALF // 4, "b": HALF + 5}
    )


def copy(key, seq, shard_id, number, order) -> ReadCopy:
    return ReadCopy(key, seq, shard_id, str(number), order, 100.0, 100.010 + seq / 1000)


def test_analysis_finds_each_kind_of_failure():
    lineage = ShardLineage(reshard_history())
    o = lineage.order
    acks = {("a", s): Ack("shardId-0", str(10 + s), "shardId-0", 100.0, 100.02) for s in range(4)}
    acks.update({("b", s): Ack("shardId-1", str(20 + s), "shardId-1", 100.0, 100.02) for s in range(4)})
    copies = [
        # key a: 0 and 1 on the parent, 3 then 2 on the child (2 arrived late), 3 again
        copy("a", 0, "shardId-0", 10, o["shardId-0"]),
        copy("a", 1, "shardId-0", 11, o["shardId-0"]),
        copy("a", 3, "shardId-3", 40, o["shardId-3"]),
        copy("a", 2, "shardId-3", 41, o["shardId-3"]),
        copy("a", 3, "shardId-4", 50, o["shardId-4"]),
        # key b: seq 1 never read; seq 3 read from shardId-2, which does not descend from shardId-1
        copy("b", 0, "shardId-1", 20, o["shardId-1"]),
        copy("b", 2, "shardId-1", 22, o["shardId-1"]),
        copy("b", 3, "shardId-2", 60, o["shardId-2"]),
    ]
    report = analyse(fake_run(acks), lineage, copies, [], read_seconds=0.5)
    assert (report.lost, report.duplicated, report.out_of_order, report.out_of_order_keys, report.misplaced) == (
        1,
        1,
        1,
        1,
        1,
    )
    assert report.read_back == 7 and not report.ok
    assert report.first_out_of_order == {"key": "a", "position": 3, "seq": 2, "after_seq": 3}
    assert [p.kind for p in report.problems] == ["lost", "out_of_order", "misplaced", "duplicated"]
    lost = report.problems[0]
    assert (lost.key, lost.seq) == ("b", 1)
    rows = report.records_for("b")
    assert [row["seq"] for row in rows] == [0, 2, 3, 1] and rows[-1]["position"] is None
    assert report.latency_ms["max"] == pytest.approx(13.0, abs=0.1)


def test_the_first_record_out_of_order_reads_the_same_in_both_faces_and_its_key_stays_text():
    """`kconsole produce`/`put` print the report's line, the Producer tab shows it: a key from a
    user's file with a control sequence in it reaches neither terminal as one."""
    from dataclasses import replace

    from console.commands.produce import summary_text

    lineage = ShardLineage(reshard_history())
    o = lineage.order
    acks = {("a", s): Ack("shardId-0", str(10 + s), "shardId-0", 100.0, 100.02) for s in range(2)}
    copies = [copy("a", 1, "shardId-0", 11, o["shardId-0"]), copy("a", 0, "shardId-0", 12, o["shardId-0"])]
    report = analyse(fake_run(acks), lineage, copies, [], read_seconds=0.5)
    assert report.first_out_of_order_line == "first out of order: key a, seq 0 at position 1 after seq 1"
    hostile = replace(report, first_out_of_order={**report.first_out_of_order, "key": "\x1b[2Jgone"})
    assert "\x1b" not in hostile.first_out_of_order_line and "gone" in hostile.first_out_of_order_line
    assert hostile.first_out_of_order_line in summary_text(fake_run(acks), hostile).splitlines()


def test_order_is_judged_by_first_copies_and_late_duplicates_are_counted_apart():
    """A put of unknown outcome resent, then the first attempt landing late, after later records:
    key a reads 0 1 2 3 1 2. Not out of order (every first copy is in order); two late duplicates."""
    lineage = ShardLineage(reshard_history())
    o = lineage.order["shardId-0"]
    acks = {("a", s): Ack("shardId-0", str(10 + s), "shardId-0", 100.0, 100.02) for s in range(4)}
    copies = [copy("a", seq, "shardId-0", 10 + position, o) for position, seq in enumerate([0, 1, 2, 3, 1, 2])]
    report = analyse(fake_run(acks), lineage, copies, [], read_seconds=0.1)
    assert (report.out_of_order, report.duplicated, report.late_duplicates, report.lost) == (0, 2, 2, 0)
    assert report.ok and report.to_json()["late_duplicates"] == 2
    assert [p.detail for p in report.problems] == ["copy read again on shardId-0, late: after seq 3"] * 2
    # A first copy after a later one is still out of order: 0 2 1 3 (+ a timely duplicate of 3).
    copies = [copy("a", seq, "shardId-0", 10 + position, o) for position, seq in enumerate([0, 2, 1, 3, 3])]
    report = analyse(fake_run(acks), lineage, copies, [], read_seconds=0.1)
    assert (report.out_of_order, report.duplicated, report.late_duplicates) == (1, 1, 0) and not report.ok


async def test_the_verifier_waits_out_the_in_flight_window(kinesis, make_stream):
    """After a put of unknown outcome it reads only once that put can no longer land."""
    stream = await make_stream(shards=1)
    slept = []

    async def sleep(seconds):
        slept.append(seconds)

    settings = ProducerSettings(keys=1, records_per_key=1, run_id="r2").validated()
    run = ProduceResult(settings, stream, 0.0, 1.0, last_unknown_sent=1_000.0)
    verifier = Verifier(
        all_shards=kinesis.all_shards,
        get_shard_iterator=kinesis.get_shard_iterator,
        get_records=kinesis.get_records,
        settings=ReadSettings(in_flight_window=50.0),
        wall_clock=lambda: 1_020.0,
        sleep=sleep,
    )
    report = await verifier.verify(run)
    assert slept[0] == pytest.approx(30.0) and report.waited_seconds == pytest.approx(30.0)
    run.last_unknown_sent = None
    assert verifier.in_flight_wait(run) == 0.0


async def produce(kinesis, stream, put_records, **overrides):
    settings = ProducerSettings(
        **{"keys": 20, "records_per_key": 5, "pacing": False, "concurrency": 1, "max_batch_records": 10, **overrides}
    )
    async with ShardMap.for_backend(kinesis, stream) as shard_map:
        await shard_map.wait_ready(10)
        result = await OrderedProducer(stream, settings, put_records=put_records, shard_map=shard_map).run()
        map_version = shard_map.version
    return result, await Verifier.for_backend(kinesis).verify(result), map_version


async def test_a_record_acknowledged_but_never_written_is_lost(kinesis, make_stream):
    stream = await make_stream(shards=2)
    calls = []

    async def swallowing_put_records(name, records):
        calls.append(records)
        if len(calls) != 3:
            return await kinesis.put_records(name, records)
        # The server says yes to the first record but it is never stored (moto's old concurrency bug).
        answer = await kinesis.put_records(name, records[1:])
        return {"FailedRecordCount": 0, "Records": [dict(answer["Records"][0])] + answer["Records"]}

    result, report, _ = await produce(kinesis, stream, swallowing_put_records)
    assert result.acknowledged == 100 and report.read_back == 99
    assert report.lost == 1 and not report.ok
    swallowed = calls[2][0]["PartitionKey"]
    assert report.problems[0].kind == "lost" and report.problems[0].key == swallowed


async def test_duplicates_the_producer_never_heard_of_are_counted(kinesis, make_stream):
    stream = await make_stream(shards=2)
    calls = []

    async def doubling_put_records(name, records):
        calls.append(records)
        if len(calls) == 4:  # a proxy that replays a request
            await kinesis.put_records(name, records)
        return await kinesis.put_records(name, records)

    result, report, _ = await produce(kinesis, stream, doubling_put_records)
    assert result.possible_duplicates == 0
    assert report.duplicated == len(calls[3]) and report.lost == report.out_of_order == 0
    assert report.ok  # duplicates are reported, not a failure: the stream is at-least-once


async def test_records_routed_elsewhere_are_misplaced_and_mismatches_reported(kinesis, make_stream):
    stream = await make_stream(shards=2)
    moved_key = None

    async def rerouting_put_records(name, records):
        nonlocal moved_key
        entries = []
        for record in records:
            entry = dict(record)
            moved_key = moved_key or record["PartitionKey"]
            if record["PartitionKey"] == moved_key:
                # Route the key to the other half of the key space than its MD5 says.
                entry["ExplicitHashKey"] = str((md5_hash_key(moved_key) + HALF) % (MAX_HASH_KEY + 1))
            entries.append(entry)
        return await kinesis.put_records(name, entries)

    result, report, map_version = await produce(kinesis, stream, rerouting_put_records)
    assert report.misplaced == 5 and report.lost == 0 and not report.ok
    assert result.mismatch_count >= 1 and {m.key for m in result.mismatches} == {moved_key}
    assert map_version >= 2  # the mismatch made the shard map list the shards again
    assert {p.key for p in report.problems if p.kind == "misplaced"} == {moved_key}


# ---- the panel (no I/O: fed progress and a report, posts StartRequested) ----------------------------


async def test_producer_panel_start_progress_report_and_records():
    from textual.app import App
    from textual.widgets import DataTable, Input

    from console.produce.report import ProducerProgress, ShardProgress
    from console.ui.panels.producer import ProducerPanel

    requests = []

    class Harness(App):
        def compose(self):
            yield ProducerPanel(local=True)

        def on_producer_panel_start_requested(self, message):
            requests.append(message)

    app = Harness()
    async with app.run_test(size=(160, 60)) as pilot:
        panel = app.query_one(ProducerPanel)
        panel.query_one("#producer-keys", Input).value = "0"
        await pilot.click("#producer-start")
        await pilot.pause()
        assert not requests and "keys must be" in str(panel.query_one("#producer-status").render())
        panel.query_one("#producer-keys", Input).value = "25"
        panel.query_one("#producer-rate", Input).value = "500"
        await pilot.pause(0.3)  # the button ignores presses during its press animation
        await pilot.click("#producer-start")
        await pilot.pause()
        (request,) = requests
        assert (request.settings.keys, request.settings.rate, request.settings.pacing, request.verify) == (
            25,
            500.0,
            False,
            True,
        )
        panel.show_started(request.settings)
        panel.show_progress(
            ProducerProgress(
                run_id="r",
                total=250,
                sent=120,
                acknowledged=100,
                retries=3,
                throttled=1,
                possible_duplicates=0,
                failed=0,
                shard_mismatches=0,
                elapsed=1.0,
                records_per_second=100.0,
                shards={
                    "shardId-000000000001": ShardProgress(60, 60.0, 1, 0.5),
                    "shardId-000000000000": ShardProgress(40, 40.0, 0, 1.0),
                },
            )
        )
        await pilot.pause()
        shards = panel.query_one("#producer-shards", DataTable)
        assert shards.row_count == 2 and shards.get_row_at(0)[:2] == ["#1", "60"]
        assert panel.query_one("#producer-progress").progress == 100
        lineage = ShardLineage(reshard_history())
        acks = {("a", s): Ack("shardId-0", str(10 + s), "shardId-0", 100.0, 100.02) for s in range(3)}
        run = fake_run(acks)
        copies = [copy("a", 0, "shardId-0", 10, 0), copy("a", 2, "shardId-0", 12, 0), copy("a", 1, "shardId-0", 13, 0)]
        report = analyse(run, lineage, copies, [], read_seconds=0.1)
        panel.show_report(report)
        await pilot.pause()
        problems = panel.query_one("#producer-problems", DataTable)
        assert problems.row_count == 1 and problems.get_row_at(0)[0] == "out_of_order"
        problems.focus()
        await pilot.press("enter")
        await pilot.pause()
        records = panel.query_one("#producer-records", DataTable)
        assert [records.get_row_at(i)[1] for i in range(records.row_count)] == ["0", "2", "1"]
