"""Masking as a user meets it, over HTTP against the embedded server: with a mask on data.email no e-mail
address appears in what `tail` prints or exports (text, JSON lines, csv, raw), in what `copy --mask`
writes, nor (with mask_keys) in `heat`'s hot keys; turning the config's masking off is said and logged."""

from __future__ import annotations

import asyncio
import json
import os
import re
import struct

from tests.cli_zygote import stand_in_path

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@example\.com")


def order(number: int) -> dict:
    return {"id": number, "email": f"buyer{number}@example.com", "note": f"order {number}", "total": number * 3}


async def kconsole(*argv: str, config: str | None = None, timeout: float = 60) -> tuple[int, str, str]:
    env = dict(os.environ)
    if config is not None:
        env["KCONSOLE_CONFIG"] = config
    process = await asyncio.create_subprocess_exec(
        str(await asyncio.to_thread(stand_in_path)),
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


async def write_steadily(kinesis, stream: str, stop: asyncio.Event, hot_key: str) -> None:
    """30 records every 0.1 s, 60% of them under `hot_key`."""
    tick = 0
    while not stop.is_set():
        keys = [hot_key if i % 5 < 3 else f"cold-{tick}-{i}" for i in range(30)]
        await kinesis.put_records(stream, [{"Data": b"{}", "PartitionKey": key} for key in keys])
        tick += 1
        await asyncio.sleep(0.1)


async def orders_stream(kinesis, make_stream, count: int = 12) -> str:
    stream = await make_stream(shards=2, prefix="mask")
    await kinesis.put_records(
        stream, [{"Data": json.dumps(order(n)).encode(), "PartitionKey": f"tenant-{n % 3}"} for n in range(count)]
    )
    return stream


async def test_no_address_in_tail_text_json_csv_or_raw_with_a_mask_on_data_email(
    kinesis, make_stream, local_kinesis, tmp_path
):
    stream = await orders_stream(kinesis, make_stream)
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)
    window = ("--from", "trim-horizon", "--to", "now")

    code, unmasked, err = await kconsole("tail", stream, *window, "--json", *endpoint)
    assert code == 0, err
    assert len(EMAIL.findall(unmasked)) == 12  # the records do carry addresses

    outputs = {}
    for name, extra in {
        "text": (),
        "json": ("--json",),
        "csv": ("--output", "csv", "--fields", "key,data.email,data.note"),
    }.items():
        code, out, err = await kconsole("tail", stream, *window, "--mask", "data.email", *extra, *endpoint)
        assert code == 0, err
        outputs[name] = out
    for output in ("jsonl", "csv", "raw"):
        path = tmp_path / f"export.{output}"
        code, _, err = await kconsole(
            "tail", stream, *window, "--mask", "data.email", "--output", output, "--out", str(path), *endpoint
        )
        assert code == 0, err
        outputs[f"export {output}"] = path.read_bytes().decode("utf-8", "replace")

    for name, text in outputs.items():
        assert not EMAIL.search(text), (name, text[:500])
        assert "<masked 20 #" in text or "<masked 19 #" in text, name
    assert "order 7" in outputs["text"] and "tenant-1" in outputs["csv"]  # the rest is left as it is
    raw = (tmp_path / "export.raw").read_bytes()
    length = struct.unpack(">I", raw[:4])[0]  # length-prefixed: each payload is the masked record
    assert json.loads(raw[4 : 4 + length])["email"].startswith("<masked")


async def test_copy_writes_masked_only_with_mask_and_byte_for_byte_without(
    kinesis, make_stream, local_kinesis, tmp_path
):
    stream = await orders_stream(kinesis, make_stream)
    masked_copy, plain_copy = await make_stream(shards=1, prefix="dst"), await make_stream(shards=1, prefix="dst")
    config = tmp_path / "config.toml"
    config.write_text('mask = ["data.email"]\n')
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)
    common = ("--from", "trim-horizon", "--yes", *endpoint)

    code, out, err = await kconsole(
        "copy", stream, masked_copy, "--mask", "--checkpoint", str(tmp_path / "a.json"), *common, config=str(config)
    )
    assert code == 0, err
    assert "masked: data.email" in err
    code, out, err = await kconsole(
        "copy", stream, plain_copy, "--checkpoint", str(tmp_path / "b.json"), *common, config=str(config)
    )
    assert code == 0, err
    assert "copied as they are" in err

    read_back = {}
    for name in (masked_copy, plain_copy):  # read with --no-mask: what the stream holds, as it is
        code, out, err = await kconsole(
            "tail", name, "--from", "trim-horizon", "--to", "now", "--json", "--no-mask", *endpoint, config=str(config)
        )
        assert code == 0, err
        read_back[name] = [json.loads(line) for line in out.splitlines()]
    masked = sorted((r["content"] for r in read_back[masked_copy]), key=lambda c: c["id"])
    plain = sorted((r["content"] for r in read_back[plain_copy]), key=lambda c: c["id"])
    assert plain == [order(n) for n in range(12)]
    assert len(masked) == 12 and not EMAIL.search(json.dumps(masked))
    assert [{k: v for k, v in c.items() if k != "email"} for c in masked] == [
        {k: v for k, v in order(n).items() if k != "email"} for n in range(12)
    ]
    assert sorted(r["partition_key"] for r in read_back[masked_copy]) == sorted(f"tenant-{n % 3}" for n in range(12))


async def test_heat_masks_hot_keys_with_mask_keys_and_shows_them_without(kinesis, make_stream, local_kinesis, tmp_path):
    stream = await make_stream(shards=2, prefix="heatmask")
    config = tmp_path / "config.toml"
    config.write_text("mask_keys = true\n")
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)
    results = {}
    for name, extra, settings in (
        ("config", ("--json",), str(config)),
        ("flag text", ("--mask-keys",), None),
        ("plain", ("--json",), None),
    ):
        stop = asyncio.Event()
        writer = asyncio.create_task(write_steadily(kinesis, stream, stop, hot_key="vip@example.com"))
        try:
            code, out, err = await kconsole("heat", stream, "--seconds", "2", *extra, *endpoint, config=settings)
        finally:
            stop.set()
            await writer
        assert code == 0, err
        results[name] = out
    assert "vip@example.com" in results["plain"]  # a hot key, shown as it is without masking
    for name in ("config", "flag text"):
        assert not EMAIL.search(results[name]), (name, results[name][:800])
        assert "<masked 15 #" in results[name], name
    top = json.loads(results["config"])["shards"]
    assert any(row["key"].startswith("<masked 15 #") for shard in top for row in shard["top_keys"])


async def test_no_mask_is_said_and_written_to_the_action_log_before_anything_is_shown(
    kinesis, make_stream, local_kinesis, tmp_path, monkeypatch
):
    stream = await orders_stream(kinesis, make_stream, count=2)
    config = tmp_path / "config.toml"
    config.write_text('mask = ["data.email"]\nmask_keys = true\n')
    data = tmp_path / "data"
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(data))
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)

    code, out, err = await kconsole(
        "tail", stream, "--from", "trim-horizon", "--to", "now", "--no-mask", *endpoint, config=str(config)
    )

    assert code == 0, err
    assert "masking is off (--no-mask)" in err and EMAIL.search(out)
    [entry] = [json.loads(line) for line in (data / "actions.jsonl").read_text().splitlines()]
    assert entry["kind"] == "masking_off" and entry["rules"] == ["data.email", "@keys"]
    assert entry["stream"] == stream and entry["where"] == "tail --no-mask"

    (data / "actions.jsonl").unlink()
    (data / "actions.jsonl").mkdir()  # a log that cannot be written: masking stays on, nothing is shown
    code, out, err = await kconsole(
        "tail", stream, "--from", "trim-horizon", "--to", "now", "--no-mask", *endpoint, config=str(config)
    )
    assert code == 1 and out == "" and "masking stays on" in err

    code, _, err = await kconsole("tail", stream, "--no-mask", "--mask", "x", *endpoint)
    assert code == 2 and "contradict" in err


async def test_the_web_page_shows_the_tail_tab_masked(kinesis, make_stream, local_kinesis):
    import aiohttp

    from console.cli import build_parser
    from console.commands.web import console_command
    from tests.commands.test_cli_web import _wait_for_page
    from tests.conftest import free_port, interrupt, kconsole_child

    args = build_parser().parse_args(["web", "--mask", "data.email", "--mask-keys", "--stream", "orders"])
    assert console_command(args).endswith("--stream orders --mask-keys --mask data.email")

    stream = await orders_stream(kinesis, make_stream)
    port = free_port()
    argv = ("web", "--port", str(port), "--stream", stream, "--mask", "data.email")
    seen = b""
    async with kconsole_child(*argv, "--endpoint-url", local_kinesis.endpoint_url) as process:
        await _wait_for_page(f"http://127.0.0.1:{port}/", process)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(f"http://127.0.0.1:{port}/ws?width=160&height=40") as websocket,
        ):
            tab_asked_at, horizon_asked = None, False
            while b"order 11" not in seen and loop.time() < deadline:
                try:
                    message = await asyncio.wait_for(websocket.receive(), 0.5)
                except TimeoutError:
                    message = None
                if message is not None and message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
                elif message is not None and message.type != aiohttp.WSMsgType.TEXT:
                    break
                if stream.encode() not in seen or horizon_asked:
                    continue
                if b"Grep" in seen:  # the Tail tab is up: read it from the oldest record
                    await websocket.send_json(["stdin", "h"])
                    horizon_asked = True
                elif tab_asked_at is None or loop.time() - tab_asked_at > 3:
                    await websocket.send_json(["stdin", "6"])  # the Tail tab
                    tab_asked_at = loop.time()
        await interrupt(process)
    text = seen.decode("utf-8", "replace")
    assert " MASKED " in text and "order 11" in text, text[-3000:]
    assert re.search(r"<masked 1[89] #", text) and not EMAIL.search(text)
