"""`kconsole copy SRC DST` as a user runs it, against the embedded local Kinesis over HTTP; what landed in DST
is read with plain GetRecords (the backend's calls), not with kconsole's own reader."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from aws_kinesis_agg.aggregator import AggRecord

from console.produce.copy import CopyCheckpoint, CopyRecord, _account
from tests.commands.test_cli_tail import kconsole
from tests.commands.test_cli_tail_window import NOWHERE, iso


async def everything_in(kinesis, stream: str) -> list[dict]:
    """Every record of the stream, parents before children, each shard in sequence order."""
    records = []
    for shard in sorted(await kinesis.all_shards(stream), key=lambda s: s.shard_id):
        iterator = await kinesis.get_shard_iterator(stream, shard.shard_id, "TRIM_HORIZON")
        while iterator:
            page = await kinesis.get_records(iterator)
            records.extend(page["Records"])
            iterator = page.get("NextShardIterator")
            if not page["Records"] and not page.get("MillisBehindLatest"):
                break
    return records


def per_key(records: list[dict]) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = {}
    for record in records:
        found.setdefault(record["PartitionKey"], []).append(bytes(record["Data"]))
    return found


async def test_copy_keeps_every_key_in_order_and_aggregates_byte_identical(kinesis, make_stream, local_kinesis):
    source, destination = await make_stream(shards=3), await make_stream(shards=2)
    for number in range(60):
        await kinesis.put_record(source, json.dumps({"n": number}).encode(), f"key-{number % 7}")
    packer = AggRecord()
    packer.add_user_record("inner-a", b'{"inner": "a"}')
    packer.add_user_record("inner-b", b'{"inner": "b"}', "42")
    aggregate_key, _, aggregate = packer.get_contents()
    await kinesis.put_record(source, aggregate, aggregate_key)

    code, out, err = await kconsole(
        "copy",
        source,
        destination,
        "--from",
        "trim-horizon",
        "--yes",
        "--verify",
        "--json",
        endpoint=local_kinesis.endpoint_url,
        timeout=120,
    )

    assert code == 0, err + out
    document = json.loads(out)
    assert document["copied"] == 61 and document["ok"] and document["verification"]["ok"]
    assert document["verification"]["lost"] == 0 and document["verification"]["out_of_order"] == 0
    copied = per_key(await everything_in(kinesis, destination))
    assert copied == per_key(await everything_in(kinesis, source))
    assert copied[aggregate_key] == [aggregate]


async def test_copy_deaggregates_and_filters_when_asked(kinesis, make_stream, local_kinesis):
    source, destination = await make_stream(shards=1), await make_stream(shards=1)
    packer = AggRecord()
    packer.add_user_record("inner-a", b'{"tenant": "42"}')
    packer.add_user_record("inner-b", b'{"tenant": "7"}')
    aggregate_key, _, aggregate = packer.get_contents()
    await kinesis.put_record(source, aggregate, aggregate_key)
    await kinesis.put_record(source, b'{"tenant": "42", "plain": true}', "plain")

    code, _out, err = await kconsole(
        "copy",
        source,
        destination,
        "--from",
        "trim-horizon",
        "--deaggregate",
        "--where",
        "data.tenant == '42'",
        "--yes",
        "--json",
        endpoint=local_kinesis.endpoint_url,
        timeout=120,
    )

    assert code == 0, err
    assert per_key(await everything_in(kinesis, destination)) == {
        "inner-a": [b'{"tenant": "42"}'],
        "plain": [b'{"tenant": "42", "plain": true}'],
    }


async def test_copy_refuses_what_it_must_in_one_line(tmp_path):
    an_hour_ago = iso(datetime.now(UTC) - timedelta(hours=1))
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"version": 1, "copy": {"source": "other", "destination": "b"}, "shards": {}}))
    fifo = tmp_path / "checkpoint.fifo"
    os.mkfifo(fifo)
    cases = [
        (["a", "b", "--from", an_hour_ago, "--to", iso(datetime.now(UTC) - timedelta(hours=2))], 2, "before --from"),
        (["a", "b", "--to", "now"], 2, "needs a window"),
        (["a", "a", "--from", "trim-horizon", "--to", "latest", "--yes"], 2, "loop"),
        (["a", "a", "--from", "trim-horizon", "--yes"], 2, "loop"),  # --to now: the copies land just after it
        (["a", "a", "--last", "15m", "--yes"], 2, "loop"),
        (["a", "a", "--from", an_hour_ago, "--to", iso(datetime.now(UTC) - timedelta(minutes=2)), "--yes"], 2, "loop"),
        (["a", "b", "--resume", str(foreign), "--yes"], 2, "another copy"),
        (["a", "b", "--resume", "/dev/zero", "--yes"], 2, "not a regular file"),
        (["a", "b", "--resume", str(fifo), "--yes"], 2, "not a regular file"),  # not a wait for a writer
        (["a", "b", "--resume", str(tmp_path), "--yes"], 2, "Is a directory"),
        (["a", "b", "--from", "trim-horizon", "--where", "data.x =="], 2, "JMESPath"),
        (["a", "b", "--from", "trim-horizon", "--checkpoint", "/proc/nope/cp.json", "--yes"], 2, "checkpoint"),
        (["a", "b", "--from", "trim-horizon", "--read-only", "--yes"], 1, "read-only"),
        (["a", "b", "--from", "trim-horizon"], 1, "--yes"),  # no TTY to ask on
    ]
    for extra, exit_code, expected in cases:
        started = time.monotonic()
        code, _out, err = await kconsole("copy", *extra, endpoint=NOWHERE)
        assert code == exit_code, (extra, err)
        assert expected in err, (extra, err)
        assert len(err.strip().splitlines()) == 1, err
        assert time.monotonic() - started < 10


async def test_a_resumed_copy_sends_nothing_the_destination_acknowledged(kinesis, make_stream, local_kinesis, tmp_path):
    source, destination = await make_stream(shards=2), await make_stream(shards=1)
    for number in range(40):
        await kinesis.put_record(source, json.dumps({"n": number}).encode(), f"key-{number % 5}")
    await asyncio.sleep(0.2)
    window_end = iso(datetime.now(UTC))
    raw = await everything_in(kinesis, source)
    shards = sorted({shard.shard_id for shard in await kinesis.all_shards(source)})
    # An interrupted copy: the first shard wholly acknowledged, three records of the second beyond nothing.
    checkpoint = CopyCheckpoint(
        {
            "source": source,
            "source_at": "endpoint " + local_kinesis.endpoint_url + " us-east-1",
            "destination": destination,
            "destination_at": "endpoint " + local_kinesis.endpoint_url + " us-east-1",
            "where": None,
            "deaggregate": False,
            "from": "trim-horizon",
            "to": window_end,
        }
    )
    by_shard = {shard_id: [] for shard_id in shards}
    for shard_id in shards:
        iterator = await kinesis.get_shard_iterator(source, shard_id, "TRIM_HORIZON")
        by_shard[shard_id] = (await kinesis.get_records(iterator))["Records"]
    already = by_shard[shards[0]] + by_shard[shards[1]][:3]
    for record in already:  # what the interrupted run had written
        await kinesis.put_record(destination, bytes(record["Data"]), record["PartitionKey"])

    class Result:
        acks: ClassVar[dict] = {}
        retries = possible_duplicates = 0
        failed: ClassVar[list] = []
        stopped = None

    chosen = [
        CopyRecord(r["PartitionKey"], bytes(r["Data"]), None, shard_id, r["SequenceNumber"])
        for shard_id in shards
        for r in by_shard[shard_id]
    ]
    for shard_id in shards:
        for record in by_shard[shard_id]:
            checkpoint.read(shard_id, record["SequenceNumber"], [record["SequenceNumber"]])
    checkpoint.shard_read_to_end(shards[0])
    acked_units = {r["SequenceNumber"] for r in already}
    counts: dict[str, int] = {}
    for record in chosen:
        index = counts.get(record.key, 0)
        counts[record.key] = index + 1
        if record.unit in acked_units:
            Result.acks[(record.key, index)] = object()
    _account(
        __import__("console.produce.copy", fromlist=["CopyProgress"]).CopyProgress(), checkpoint, chosen, Result, None
    )
    checkpoint.settle()
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(checkpoint.to_json()))
    assert checkpoint.to_json()["shards"][shards[0]]["finished"]

    code, out, err = await kconsole(
        "copy",
        source,
        destination,
        "--resume",
        str(path),
        "--yes",
        "--json",
        endpoint=local_kinesis.endpoint_url,
        timeout=120,
    )

    assert code == 0, err
    document = json.loads(out)
    assert document["copied"] == 40 - len(already) and document["complete"]
    assert per_key(await everything_in(kinesis, destination)) == per_key(raw), "each record once, in key order"
    assert json.loads(path.read_text())["complete"]


async def test_an_interrupted_copy_resumes_from_its_checkpoint(kinesis, make_stream, local_kinesis, tmp_path):
    """Ctrl-C mid-copy, then --resume: every record lands once, each key in order. The requests in flight at
    the Ctrl-C get their answers before the copy stops, so nothing DST acknowledged is sent again."""
    from urllib.parse import urlsplit

    from tests.conftest import interrupt, kconsole_child
    from tests.faultproxy import FaultProxy, Faults

    source, destination = await make_stream(shards=1), await make_stream(shards=1)
    records = [{"Data": json.dumps({"n": n}).encode(), "PartitionKey": f"key-{n % 3}"} for n in range(150)]
    for start in range(0, 150, 50):
        await kinesis.put_records(source, records[start : start + 50])
    await asyncio.sleep(0.2)
    end = iso(datetime.now(UTC))
    checkpoint = tmp_path / "copy.json"
    slow_puts = Faults(latency=0.2, operations=frozenset({"PutRecords"}))
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, slow_puts) as proxy:
        async with kconsole_child(
            "copy",
            source,
            destination,
            "--from",
            "trim-horizon",
            "--to",
            end,
            "--yes",
            "--checkpoint",
            str(checkpoint),
            "--endpoint-url",
            proxy.endpoint_url,
        ) as process:
            for _ in range(150):  # until DST has acknowledged some (a busy machine starts the copy late)
                if await everything_in(kinesis, destination):
                    break
                await asyncio.sleep(0.2)
            assert process.returncode is None, "the copy was to be cut short"
            _, err = await interrupt(process)
        assert process.returncode == 130 and b"--resume" in err
        landed_before = len(await everything_in(kinesis, destination))
        assert 0 < landed_before < 150
        assert json.loads(checkpoint.read_text())["copied"] == landed_before, err.decode()
        proxy.faults = Faults()  # the same endpoint as before (a checkpoint belongs to its endpoints), now fast

        code, out, err = await kconsole(
            "copy",
            source,
            destination,
            "--resume",
            str(checkpoint),
            "--yes",
            "--json",
            endpoint=proxy.endpoint_url,
            timeout=120,
        )

    assert code == 0, err
    landed = await everything_in(kinesis, destination)
    assert len(landed) == 150, "a record DST acknowledged before the Ctrl-C was sent again"
    first_copies = {key: list(dict.fromkeys(values)) for key, values in per_key(landed).items()}
    assert first_copies == per_key(await everything_in(kinesis, source))
    assert json.loads(out)["copied"] <= 150 - landed_before + 6


async def test_copy_verify_matches_what_it_wrote_whole_beside_the_same_records_plain(
    kinesis, make_stream, local_kinesis
):
    """A source as a README session leaves it: a record given twice (the same key and bytes), an aggregate
    whose user records repeat plain records, and a split (a closed parent, two children). The aggregate is
    copied whole, so the read-back must find it whole: opened, it would be lost, and its user record would
    look like a second copy of the plain one."""
    source, destination, opened = await make_stream(shards=1), await make_stream(shards=2), await make_stream(shards=1)
    line = b'{"user": {"id": "u1"}, "n": 1}'
    await kinesis.put_record(source, b'{"total":12}', "order-17")
    await kinesis.put_record(source, line, "u1")
    packer = AggRecord()
    packer.add_user_record("order-17", b'{"total":12}')
    packer.add_user_record("order-17", b'{"total":13}')
    aggregate_key, _, aggregate = packer.get_contents()
    await kinesis.put_record(source, aggregate, aggregate_key)
    parent = (await kinesis.all_shards(source))[0]
    await kinesis.split_shard(source, parent.shard_id, (parent.starting_hash_key + parent.ending_hash_key) // 2)
    await kinesis.wait_for_active(source)
    await kinesis.put_record(source, line, "u1")  # the same key and bytes again, now on a child
    await kinesis.put_record(source, b'{"total":14}', "order-17")

    code, out, err = await kconsole(
        "copy",
        source,
        destination,
        "--from",
        "trim-horizon",
        "--yes",
        "--verify",
        "--json",
        endpoint=local_kinesis.endpoint_url,
        timeout=120,
    )

    assert code == 0, err
    verification = json.loads(out)["verification"]
    assert (verification["read_back"], verification["lost"], verification["duplicated"]) == (5, 0, 0), verification
    assert verification["ok"] and verification["out_of_order"] == 0
    assert per_key(await everything_in(kinesis, destination)) == per_key(await everything_in(kinesis, source))

    code, out, err = await kconsole(
        "copy",
        source,
        opened,
        "--from",
        "trim-horizon",
        "--deaggregate",
        "--yes",
        "--verify",
        "--json",
        endpoint=local_kinesis.endpoint_url,
        timeout=120,
    )

    assert code == 0, err
    verification = json.loads(out)["verification"]
    assert (verification["read_back"], verification["lost"], verification["duplicated"]) == (6, 0, 0), verification
    assert per_key(await everything_in(kinesis, opened))["order-17"] == [
        b'{"total":12}',
        b'{"total":12}',
        b'{"total":13}',
        b'{"total":14}',
    ]


async def test_keyless_records_stop_a_copy_into_a_stream_that_places_by_key_and_resume_once_it_is_auto(
    kinesis, make_stream, local_kinesis, tmp_path
):
    """An AUTO source may hold records without a key; a destination that places by key cannot take
    them. The copy stops at the first one, before sending it, saying why and how to go on; nothing
    internal (the producer's name for a keyless record) reaches the output."""
    from tests.conftest import unique_stream_name

    source, destination = unique_stream_name("auto-src"), await make_stream(shards=1)
    await kinesis.create_stream(source, None, on_demand=True)
    summary = await kinesis.wait_for_active(source)
    try:
        await kinesis.update_record_distribution(summary.arn, "AUTO")
        await kinesis.wait_for_active(source)
        await kinesis.put_record(source, b'{"n": 1}', "keyed")
        for number in range(2, 5):
            await kinesis.put_record(source, json.dumps({"n": number}).encode(), None)
        checkpoint = tmp_path / "copy.json"
        argv = ("copy", source, destination, "--from", "trim-horizon", "--yes", "--checkpoint", str(checkpoint))
        code, out, err = await kconsole(*argv, "--json", endpoint=local_kinesis.endpoint_url, timeout=120)
        document = json.loads(out)
        assert code == 1 and document["failed"] == [] and not document["complete"], (out, err)
        assert "has no partition key" in document["stopped"]
        assert f"kconsole stream distribution {destination} auto" in document["stopped"]
        assert "\\u0000" not in out and "\x00" not in out + err and "Traceback" not in err
        assert len(await everything_in(kinesis, destination)) <= 1  # at most the keyed record before them

        dst = await kinesis.describe_stream_summary(destination)
        await kinesis.update_stream_mode(dst.arn, "ON_DEMAND")
        await kinesis.wait_for_active(destination)
        await kinesis.update_record_distribution(dst.arn, "AUTO")
        await kinesis.wait_for_active(destination)
        code, out, err = await kconsole(
            "copy", source, destination, "--resume", str(checkpoint), "--yes", "--json",
            endpoint=local_kinesis.endpoint_url, timeout=120,
        )  # fmt: skip
        assert code == 0 and json.loads(out)["complete"], (out, err)
        landed = await everything_in(kinesis, destination)
        assert sorted(json.loads(r["Data"])["n"] for r in landed) == [1, 2, 3, 4]
    finally:
        await kinesis.delete_stream(source)


async def test_a_copy_killed_at_random_moments_resumes_to_every_record_and_counts_its_duplicates(
    kinesis, make_stream, local_kinesis, tmp_path
):
    """kill -9 at random moments, each time resumed from the checkpoint: the destination ends with every
    source record, each key's first copies in order, and the reported possible duplicates are at least the
    copies the destination really holds twice (counted here by reading it, not by kconsole)."""
    import random
    import signal
    import sys
    from urllib.parse import urlsplit

    from tests.faultproxy import FaultProxy, Faults

    seed = random.randrange(1 << 30)
    moments = random.Random(seed)
    source, destination = await make_stream(shards=2), await make_stream(shards=2)
    records = [{"Data": json.dumps({"n": n}).encode(), "PartitionKey": f"key-{n % 100}"} for n in range(4000)]
    for start in range(0, len(records), 500):
        await kinesis.put_records(source, records[start : start + 500])
    await asyncio.sleep(0.2)
    end = iso(datetime.now(UTC))
    checkpoint = tmp_path / "copy.json"
    slow_puts = Faults(latency=0.04, operations=frozenset({"PutRecords"}))
    kills = 0
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, slow_puts) as proxy:
        window = ["--from", "trim-horizon", "--to", end, "--checkpoint", str(checkpoint)]
        for _ in range(5):
            where = ["--resume", str(checkpoint)] if checkpoint.exists() else window
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "console.cli",
                "copy",
                source,
                destination,
                *where,
                "--yes",
                "--endpoint-url",
                proxy.endpoint_url,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            await asyncio.sleep(moments.uniform(0.8, 3.5))
            if process.returncode is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            await process.wait()
        where = ["--resume", str(checkpoint)] if checkpoint.exists() else window
        code, out, err = await kconsole(
            "copy", source, destination, *where, "--yes", "--json", endpoint=proxy.endpoint_url, timeout=120
        )

    assert code == 0, f"seed {seed}: {err}"
    assert kills, "no run was cut short: the copy is too quick for this test"
    document = json.loads(out)
    landed = await everything_in(kinesis, destination)
    sent = per_key(await everything_in(kinesis, source))
    first_copies = {key: list(dict.fromkeys(values)) for key, values in per_key(landed).items()}
    assert first_copies == sent, f"seed {seed}: a record is missing or a key out of order"
    duplicates = len(landed) - len(records)
    assert document["complete"] and document["possible_duplicates"] >= duplicates, (
        f"seed {seed}: {duplicates} copies are there twice, {document['possible_duplicates']} reported possible"
    )
