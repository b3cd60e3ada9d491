"""`kconsole tail` windows (--from/--to/--last), field filters (--where) and export (--output jsonl|csv|raw
--out), as a user runs them: a real process against the embedded local Kinesis over HTTP."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from datetime import UTC, datetime, timedelta

from tests.commands.test_cli_tail import kconsole

# Nothing listens here: a command that fails on this endpoint within a second never tried to read.
NOWHERE = "http://127.0.0.1:9"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def put_events(kinesis, stream: str, first: int, count: int, tenant: str = "7") -> None:
    for number in range(first, first + count):
        await kinesis.put_record(
            stream, json.dumps({"n": number, "tenant": tenant, "total": number * 10}).encode(), f"key-{number % 3}"
        )


async def two_batches(kinesis, stream: str) -> datetime:
    """Records 0-2, then a moment, then records 3-5: the moment between them."""
    await put_events(kinesis, stream, 0, 3)
    await asyncio.sleep(0.3)
    middle = datetime.now(UTC)
    await asyncio.sleep(0.3)
    await put_events(kinesis, stream, 3, 3, tenant="42")
    return middle


def numbers(out: str) -> list[int]:
    return sorted(json.loads(line)["content"]["n"] for line in out.splitlines())


async def test_to_stops_each_shard_at_its_first_record_past_the_end(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    middle = await two_batches(kinesis, stream)

    code, out, err = await kconsole("tail", stream, "--json", "--to", iso(middle), endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert numbers(out) == [0, 1, 2]

    code, out, err = await kconsole(
        "tail", stream, "--json", "--from", iso(middle), "--to", "now", endpoint=local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert numbers(out) == [3, 4, 5]

    code, out, err = await kconsole("tail", stream, "--json", "--last", "10m", endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert numbers(out) == [0, 1, 2, 3, 4, 5]


async def test_a_window_follows_a_split_into_the_children(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    await put_events(kinesis, stream, 0, 3)
    [shard] = await kinesis.all_shards(stream)
    await kinesis.split_shard(stream, shard.shard_id, 2**127)
    await kinesis.wait_for_active(stream)
    await put_events(kinesis, stream, 3, 3)
    await asyncio.sleep(0.3)
    end = datetime.now(UTC)
    await asyncio.sleep(0.3)
    await put_events(kinesis, stream, 6, 3)

    code, out, err = await kconsole("tail", stream, "--json", "--to", iso(end), endpoint=local_kinesis.endpoint_url)

    assert code == 0, err
    assert numbers(out) == [0, 1, 2, 3, 4, 5]
    assert {json.loads(line)["shard_id"] for line in out.splitlines()} - {shard.shard_id}, "children were read"


async def test_where_filters_on_fields_of_the_decoded_record(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=2)
    await two_batches(kinesis, stream)

    code, out, err = await kconsole(
        "tail",
        stream,
        "--json",
        "--where",
        "data.tenant == '42' && data.total > `30`",
        endpoint=local_kinesis.endpoint_url,
    )
    assert code == 0, err
    assert numbers(out) == [4, 5]

    code, out, err = await kconsole(
        "tail", stream, "--json", "--where", "key == 'key-0'", endpoint=local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert numbers(out) == [0, 3]


async def test_bad_windows_and_filters_are_one_line_before_any_read():
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    cases = [
        (["--from", iso(an_hour_ago), "--to", iso(an_hour_ago - timedelta(minutes=1))], "before --from"),
        (["--to", iso(datetime.now(UTC) + timedelta(hours=1))], "in the future"),
        (["--from", iso(datetime.now(UTC) + timedelta(hours=1))], "in the future"),
        (["--from", iso(datetime.now(UTC) - timedelta(days=400))], "365 days"),
        (["--last", "15m", "--from", "trim-horizon"], "--last"),
        (["--last", "forever"], "duration"),
        (["--last", "400d"], "365d"),
        (["--to", "yesterday-ish"], "--to must be"),
        (["--follow", "--to", "now"], "--follow"),
        (["--where", "data.tenant == "], "not a valid JMESPath"),
        (["--where", "data.n == `" + "9" * 500 + "`"], "digits"),
        (["--output", "csv", "--fields", "arrival,nonsense", "--out", "x.csv"], "unknown column"),
        (["--output", "jsonl", "--out", "/proc/definitely/not/here.jsonl"], "cannot write"),
        (["--output", "jsonl", "--out", "x.jsonl", "--follow"], "--follow"),
    ]
    for extra, expected in cases:
        started = time.monotonic()
        code, out, err = await kconsole("tail", "some-stream", *extra, endpoint=NOWHERE)
        assert code == 2, (extra, err)
        assert expected in err, (extra, err)
        assert len(err.strip().splitlines()) == 1, err
        assert out == ""
        assert time.monotonic() - started < 10


async def test_a_window_beyond_the_streams_retention_is_refused(make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    code, _, err = await kconsole(
        "tail", stream, "--from", iso(datetime.now(UTC) - timedelta(hours=30)), endpoint=local_kinesis.endpoint_url
    )
    assert code == 2
    assert "retention of 24 h" in err


async def test_export_writes_jsonl_csv_and_raw_files(kinesis, make_stream, local_kinesis, tmp_path):
    stream = await make_stream(shards=2)
    await two_batches(kinesis, stream)
    await kinesis.put_record(stream, b"\x00\x01binary\xff", "bin")
    endpoint = local_kinesis.endpoint_url

    jsonl = tmp_path / "window.jsonl"
    code, out, err = await kconsole("tail", stream, "--out", str(jsonl), "--where", "kind == 'json'", endpoint=endpoint)
    assert code == 0, err
    assert out == ""
    assert "export: 6 records" in err and "wrote 6 records" in err
    assert numbers(jsonl.read_text()) == [0, 1, 2, 3, 4, 5]

    table = tmp_path / "window.csv"
    code, _, err = await kconsole(
        "tail",
        stream,
        "--output",
        "csv",
        "--out",
        str(table),
        "--fields",
        "key,data.tenant,data.total,kind",
        endpoint=endpoint,
    )
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(table.read_text())))
    assert rows[0] == ["key", "data.tenant", "data.total", "kind"]
    assert sorted(rows[1:]) == sorted(
        [[f"key-{n % 3}", "7" if n < 3 else "42", str(n * 10), "json"] for n in range(6)] + [["bin", "", "", "hex"]]
    )

    raw = tmp_path / "window.bin"
    code, _, err = await kconsole("tail", stream, "--output", "raw", "--out", str(raw), endpoint=endpoint)
    assert code == 0, err
    blob, payloads = raw.read_bytes(), []
    while blob:
        length = int.from_bytes(blob[:4], "big")
        payloads.append(blob[4 : 4 + length])
        blob = blob[4 + length :]
    assert b"\x00\x01binary\xff" in payloads and len(payloads) == 7
    assert json.loads(next(p for p in payloads if p.startswith(b"{"))).keys() == {"n", "tenant", "total"}

    folder = tmp_path / "records"
    code, _, err = await kconsole("tail", stream, "--output", "raw", "--out", f"{folder}/", endpoint=endpoint)
    assert code == 0, err
    files = sorted(folder.iterdir())
    assert len(files) == 7 and b"\x00\x01binary\xff" in {f.read_bytes() for f in files}
    assert not list(tmp_path.glob(".*.part")), "no temporary file is left behind"


async def test_an_export_that_fails_leaves_nothing_under_the_final_name(kinesis, make_stream, local_kinesis, tmp_path):
    stream = await make_stream(shards=1)
    await put_events(kinesis, stream, 0, 3)
    target = tmp_path / "out.jsonl"
    # A stream that does not exist fails after --out was opened: the temporary file goes, no final file appears.
    code, _, err = await kconsole(
        "tail", stream + "-missing", "--out", str(target), endpoint=local_kinesis.endpoint_url
    )
    assert code == 1, err
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


async def test_csv_and_jsonl_exports_are_safe_to_open(kinesis, make_stream, local_kinesis, tmp_path):
    """A spreadsheet runs a cell starting with = + - @ (or a tab, a CR) as a formula, and a terminal obeys
    the escapes a producer wrote: the text formats neutralise both; raw keeps the bytes."""
    stream = await make_stream(shards=1)
    clipboard = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: writes the terminal's clipboard
    records = [
        ('=HYPERLINK("http://x")', b"plain"),
        ("+1", b"=1+1"),
        ("-2", b"@SUM(A1)"),
        ("@key", b"\tcell"),
        ("tab-key", b"\rcell"),
        ("escapes\x1b[2J", json.dumps({"note": clipboard + "\x1b[2J"}).encode()),
    ]
    for key, data in records:
        await kinesis.put_record(stream, data, key)

    table = tmp_path / "out.csv"
    code, _, err = await kconsole(
        "tail",
        stream,
        "--output",
        "csv",
        "--fields",
        "key,data,data.note",
        "--out",
        str(table),
        endpoint=local_kinesis.endpoint_url,
    )
    assert code == 0, err
    written = table.read_bytes()
    assert b"\x1b" not in written and b"\x07" not in written and b"\r" not in written
    rows = list(csv.reader(io.StringIO(written.decode())))[1:]
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
    assert ['\'=HYPERLINK("http://x")', "plain", ""] in rows and ["'+1", "'=1+1", ""] in rows
    assert ["'-2", "'@SUM(A1)", ""] in rows and ["'@key", "'\\tcell", ""] in rows
    assert ["tab-key", "'\\rcell", ""] in rows
    escapes = '{"note":"\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u001b[2J"}'
    assert ["escapes\\x1b[2J", escapes, "\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J"] in rows

    lines = tmp_path / "out.jsonl"
    code, _, err = await kconsole("tail", stream, "--out", str(lines), endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert b"\x1b" not in lines.read_bytes() and b"\x07" not in lines.read_bytes()
    texts = {json.loads(line)["partition_key"]: json.loads(line)["content"] for line in lines.read_text().splitlines()}
    assert texts["escapes\x1b[2J"] == {"note": clipboard + "\x1b[2J"}, "the same value, escaped"

    raw = tmp_path / "out.bin"
    code, _, err = await kconsole(
        "tail", stream, "--output", "raw", "--out", str(raw), endpoint=local_kinesis.endpoint_url
    )
    assert code == 0, err
    assert json.dumps({"note": clipboard + "\x1b[2J"}).encode() in raw.read_bytes(), "raw keeps the bytes"
