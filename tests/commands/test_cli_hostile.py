"""Hostile keys and payloads through every command that prints them: `tail` (text and --json),
`heat`, `predict` and `spread`. Nothing a producer wrote reaches the terminal as a control sequence."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys

from console.cli import main
from tests.commands.test_cli_heat import kconsole
from tests.hostile import (
    BIDI,
    C1,
    CLEAR_SCREEN,
    HOSTILE_KEYS,
    OSC_CLIPBOARD,
    OSC_TITLE,
    raw_controls,
    write_hostile_keys,
)

HOSTILE_PAYLOADS = {
    "text-osc": f"title {OSC_TITLE} clip {OSC_CLIPBOARD}".encode(),
    "json-c1": json.dumps({"c1": C1, "bidi": BIDI, "csi": CLEAR_SCREEN}, ensure_ascii=False).encode(),
    "gzip-bidi": gzip.compress(f"zipped {BIDI} {C1}".encode(), mtime=0),
    "not-utf8": b"\xff\xfe" + CLEAR_SCREEN.encode() + b"\xc3",
}


async def seed_hostile(kinesis, stream: str) -> int:
    for name, key in HOSTILE_KEYS.items():
        await kinesis.put_record(stream, f"payload of {name}".encode(), key)
    for name, data in HOSTILE_PAYLOADS.items():
        await kinesis.put_record(stream, data, name)
    return len(HOSTILE_KEYS) + len(HOSTILE_PAYLOADS)


async def test_tail_text_escapes_hostile_keys_and_payloads(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    count = await seed_hostile(kinesis, stream)

    code, out, err = await kconsole("tail", stream, "--endpoint-url", local_kinesis.endpoint_url)

    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    lines = out.splitlines()
    assert len(lines) == count
    assert any(" k\\x1b]0;pwned\\x07 text " in line for line in lines)
    assert any(" [bold red]x[/] text " in line for line in lines)
    assert any(
        line.endswith('{"c1":"\\x9b2J\\x9d0;c1\\x9c","bidi":"\\u202eevil\\u2066x\\u2069","csi":"\\u001b[2J"}')
        for line in lines
    )
    assert any(" gzip+text " in line and "\\u202eevil" in line for line in lines)


async def test_tail_json_escapes_hostile_strings_and_keeps_their_values(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    count = await seed_hostile(kinesis, stream)

    code, out, err = await kconsole("tail", stream, "--json", "--endpoint-url", local_kinesis.endpoint_url)

    assert code == 0, err
    assert raw_controls(out) == []
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == count
    keys = {doc["partition_key"] for doc in docs}
    assert set(HOSTILE_KEYS.values()) <= keys  # JSON escapes lose nothing
    by_key = {doc["partition_key"]: doc for doc in docs}
    assert by_key["json-c1"]["content"] == {"c1": C1, "bidi": BIDI, "csi": CLEAR_SCREEN}
    assert by_key["gzip-bidi"]["content"] == f"zipped {BIDI} {C1}"


def test_predict_and_spread_escape_the_keys_they_print(capsys):
    keys = list(HOSTILE_KEYS.values())
    assert main(["predict", *keys, "--shards", "4"]) == 0
    out, err = capsys.readouterr()
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert "k\\x1b[2J" in out and "[bold red]x[/]" in out
    assert main(["predict", *keys, "--shards", "4", "--json"]) == 0
    out, _ = capsys.readouterr()
    assert raw_controls(out) == [] and [row["key"] for row in json.loads(out)["keys"]] == keys

    for key in keys:
        assert main(["spread", key, "--suffixes", "4", "--sort-key", f"sk{OSC_TITLE}", "--sort-key", C1]) == 0
        out, err = capsys.readouterr()
        assert raw_controls(out) == [] and raw_controls(err) == [], key


async def test_heat_text_escapes_hot_keys(kinesis, make_stream, local_kinesis):
    stream = await make_stream(shards=1)
    stop = asyncio.Event()
    writer = asyncio.create_task(write_hostile_keys(kinesis, stream, stop))
    try:
        code, out, err = await kconsole(
            "heat", stream, "--seconds", "2", "--top", "10", "--endpoint-url", local_kinesis.endpoint_url
        )
    finally:
        stop.set()
        await writer
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert "k\\x1b]52;c;cHduZWQ=\\x07" in out and "k\\u202eevil" in out  # the keys are shown, spelled out


PEAK_RSS_OF_TAIL = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "console.cli", *sys.argv[1:]], stdout=subprocess.DEVNULL,
                      stderr=subprocess.PIPE)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stderr.decode().strip()[-300:] or "-")
"""


async def test_tail_of_a_page_of_records_inflating_to_63_mib_each_stays_within_a_memory_bound(
    kinesis, make_stream, local_kinesis
):
    """Twelve gzip records of 63 MiB inflated and a 1 GiB gzip bomb in one page: `tail` (text and --json)
    inflates one record's worth per page; its peak resident memory is measured by a wrapper process."""
    stream = await make_stream(shards=1)
    record_63 = gzip.compress(json.dumps({"pad": "a" * (63 * 1024 * 1024 - 20)}).encode(), mtime=0)
    for index in range(12):
        await kinesis.put_record(stream, record_63, f"big-{index}")
    from tests.read.test_hostile_records import gzip_bomb

    await kinesis.put_record(stream, gzip_bomb(), "bomb")

    for mode in ([], ["--json"]):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            PEAK_RSS_OF_TAIL,
            "tail",
            stream,
            *mode,
            "--endpoint-url",
            local_kinesis.endpoint_url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = (part.decode() for part in await asyncio.wait_for(process.communicate(), 120))
        returncode, peak_kib, last_line = ([*out.split(maxsplit=2), "", "", ""])[:3] if out else ("", "", err)
        assert returncode == "0", (err, last_line)
        assert "13 records" in last_line or mode
        peak_mib = int(peak_kib) / 1024
        print(f"\ntail {' '.join(mode) or 'text'}: peak RSS {peak_mib:.0f} MiB")
        assert peak_mib < 400, f"peak RSS {peak_mib:.0f} MiB"
