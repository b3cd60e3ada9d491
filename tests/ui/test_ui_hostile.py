"""Hostile keys and payloads in the console's Tail, Heat, Placement and Producer views, with the real app
against the embedded local Kinesis: what reaches the terminal (the compositor's full frame, rendered as
a terminal would be sent it) holds no control sequence, no bidi override and no interpreted markup;
a key `[/]` does not end the app; a record nested 100,000 deep does not stop the Tail tab."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from rich.console import Console

from tests.hostile import BIDI, C1, HOSTILE_KEYS, MARKUP, OSC_TITLE, raw_controls, write_hostile_keys
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(120)

ACTING = ("\x07", "\x1b]", "\x1b[2J", "\x9b", "\x9d", "\x9c", "\u202e", "\u2066", "\u2069")


def terminal_output(app) -> tuple[str, str]:
    """(what a terminal would be sent for the whole screen, the plain text it shows)."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.file.getvalue(), console.export_text(styles=False)


def assert_nothing_acts(app) -> str:
    sent, shown = terminal_output(app)
    assert [seq for seq in ACTING if seq in sent] == []
    assert raw_controls(shown) == []
    return shown


async def tail_tab(pilot):
    """The Tail tab of a console that has polled its stream once."""
    await wait_until(pilot, lambda: pilot.app.refreshed, what="first poll")
    await pilot.press("6")
    await pilot.pause(0.2)
    return pilot.app.query_one("#tail-view")


async def seed(kinesis, stream: str) -> None:
    for name, key in HOSTILE_KEYS.items():
        await kinesis.put_record(stream, f"payload of {name} {OSC_TITLE}".encode(), key)
    await kinesis.put_record(
        stream, json.dumps({"c1": C1, "bidi": BIDI, "markup": MARKUP}, ensure_ascii=False).encode(), "json-payload"
    )
    await kinesis.put_record(stream, b"[" * 100_000 + b"]" * 100_000, "deep")
    # C1 and bidi controls are valid UTF-8 without C0 bytes: this payload is text, not hex
    await kinesis.put_record(stream, f"after the deep one {C1} {BIDI}".encode(), "last")


async def test_tail_view_shows_hostile_records_escaped_and_keeps_reading(kinesis, make_stream):
    stream = await make_stream(shards=1)
    await seed(kinesis, stream)
    count = len(HOSTILE_KEYS) + 3
    app = RecordingApp(kinesis, stream=stream, interval=60)
    async with app.run_test(size=(140, 45)) as pilot:
        view = await tail_tab(pilot)
        view.action_from_horizon()
        await wait_until(pilot, lambda: len(view.ring.records) == count, what="every record in the ring")
        await pilot.pause(0.3)
        shown = assert_nothing_acts(app)
        assert "k\\x1b]0;pwned\\x07" in shown and "[bold red]x[/]" in shown and "[/]" in shown
        assert "after the deep one \\x9b2J\\x9d0;c1\\x9c \\u202eevil" in shown and "JSON nested deeper" in shown
        assert "internal error" not in shown
        # every record expanded: the pretty JSON and the error lines are escaped too
        view.ring.focus()
        for serial in range(view.ring.first_serial, view.ring.first_serial + count):
            view.ring.cursor = serial
            view.ring.action_toggle_expand()
        await pilot.pause(0.3)
        for top in range(0, view.ring.virtual_size.height, 20):
            view.ring.scroll_to(y=top, animate=False, immediate=True)
            await pilot.pause(0.05)
            assert_nothing_acts(app)
        assert app.is_running


async def test_heat_view_shows_hostile_hot_keys_escaped(kinesis, make_stream):
    stream = await make_stream(shards=1)
    stop = asyncio.Event()
    app = RecordingApp(kinesis, stream=stream, interval=60)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        writer = asyncio.create_task(write_hostile_keys(kinesis, stream, stop))
        try:
            await pilot.press("7")
            panel = app.query_one("#heat-panel")

            def keys_shown() -> bool:
                snapshot = panel.snapshot
                return bool(snapshot and snapshot.shards and len(snapshot.shards[0].top_keys) >= 5)

            await wait_until(pilot, keys_shown, timeout=30, what="top keys in the heat panel")
            await pilot.pause(0.3)
        finally:
            stop.set()
            await writer
        shown = assert_nothing_acts(app)
        assert "k\\x1b]52;c;cHduZWQ=\\x07" in shown or "k\\u202eevil" in shown or "[bold red]x[/]" in shown
        assert app.is_running


async def test_placement_takes_markup_and_control_keys_as_plain_keys(kinesis, make_stream):
    stream = await make_stream(shards=2)
    app = RecordingApp(kinesis, stream=stream, interval=60)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("3")
        app.placement.set_keys("\n".join(HOSTILE_KEYS.values()))
        await pilot.pause(0.3)
        assert app.is_running  # a key `[/]` used to raise MarkupError and end the app
        table = app.query_one("#placement-results")
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == [
            "k\\x1b]0;pwned\\x07",
            "k\\x1b]52;c;cHduZWQ=\\x07",
            "k\\x1b[2J",
            "k\\x9b2J\\x9d0;c1\\x9c",
            "k\\u202eevil\\u2066x\\u2069",
            "[bold red]x[/]",
            "[/]",
        ]
        shown = assert_nothing_acts(app)
        assert "[bold red]x[/]" in shown and "[/]" in shown


async def test_tail_view_memory_stays_bounded_for_records_inflating_to_63_mib(kinesis, make_stream):
    """Twelve gzip records of 63 MiB inflated, then twenty 1 MiB records: the console's Tail tab holds one
    inflated record per page and at most 64 MiB of records in its ring (tracemalloc, moto out of process)."""
    import gzip
    import tracemalloc

    from console.read.decoding import MIB
    from console.read.window import DEFAULT_MAX_BYTES

    stream = await make_stream(shards=1)
    record_63 = gzip.compress(b"a" * (63 * MIB), mtime=0)
    for index in range(12):
        await kinesis.put_record(stream, record_63, f"big-{index}")
    for index in range(20):
        await kinesis.put_record(stream, b"m" * (MIB - 16), f"mib-{index}")
    del record_63
    app = RecordingApp(kinesis, stream=stream, interval=60)
    async with app.run_test(size=(140, 45)) as pilot:
        view = await tail_tab(pilot)
        tracemalloc.start()
        try:
            view.action_from_horizon()
            await wait_until(pilot, lambda: view.received == 32, timeout=60, what="every record received")
            await pilot.pause(0.5)
            peak = tracemalloc.get_traced_memory()[1] / MIB
        finally:
            tracemalloc.stop()
        ring = view.ring.records
        assert ring.weight <= DEFAULT_MAX_BYTES and ring[-1].partition_key == "mib-19"
        print(
            f"\nconsole Tail tab, 12 x 63 MiB inflated + 20 x 1 MiB: peak {peak:.0f} MiB, ring {ring.weight / MIB:.0f} MiB "
            f"in {len(ring)} records"
        )
        assert peak < 3 * 64 + 64, f"peak {peak:.0f} MiB"
