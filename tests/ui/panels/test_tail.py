"""The tail view: bounded ring, batched appends at high rates, records/s and lag, expand, save."""

from __future__ import annotations

import gzip
import json
import time
from datetime import UTC, datetime

from textual.app import App

from console.read.decoding import decode_record
from console.read.tail import TailBatch
from console.ui.panels.tail import RecordRing, TailView


def records_for(shard: str, start: int, count: int, *, payload=lambda i: json.dumps({"n": i}).encode()):
    arrival = datetime(2026, 11, 22, 21, 0, tzinfo=UTC)
    out = []
    for index in range(start, start + count):
        out.extend(
            decode_record(
                payload(index),
                shard_id=shard,
                sequence_number=f"4960{index:08d}",
                partition_key=f"k{index}",
                arrival=arrival,
            )
        )
    return out


class TailApp(App[None]):
    def __init__(self, **view_options) -> None:
        super().__init__()
        self.view_options = view_options
        self.requests: list = []

    def compose(self):
        yield TailView(stream="orders", id="tail", **self.view_options)

    def on_mount(self) -> None:
        self.query_one(RecordRing).focus()

    def on_tail_view_start_requested(self, message: TailView.StartRequested) -> None:
        self.requests.append(message.options)

    def on_tail_view_stop_requested(self, _message: TailView.StopRequested) -> None:
        self.requests.append("stop")


def screen_lines(ring: RecordRing) -> list[str]:
    return [ring.render_line(y).text.rstrip() for y in range(ring.size.height)]


async def test_ring_keeps_only_the_last_n_and_shows_rate_and_lag():
    app = TailApp(capacity=50)
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(TailView)
        view.set_running(True)
        for start in range(0, 400, 40):
            view.add_batch(TailBatch("shardId-000000000001", records_for("shardId-000000000001", start, 40), 1500))
        view.add_batch(TailBatch("shardId-000000000002", [], 0))
        await pilot.pause(0.3)
        ring = view.ring
        assert len(ring.records) == 50
        assert [r.value["n"] for r in ring.records] == list(range(350, 400))
        status = str(view.query_one("#tail-status").render())
        assert "rec/s" in status and "50/50 shown" in status and "400 received" in status
        assert view.rate > 0
        assert view.query_one("#tail-lag").render().plain.startswith("lag  #1 1.5 s  #2 0 ms")
        # following: the newest record is on the last visible line
        assert any("k399" in line for line in screen_lines(ring))


async def test_high_rate_is_batched_and_never_blocks():
    app = TailApp(capacity=2000)
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(TailView)
        batch = records_for("shardId-000000000000", 0, 1000)
        started = time.perf_counter()
        for _ in range(100):  # 100k records handed over as fast as a reader could
            view.add_batch(TailBatch("shardId-000000000000", batch, 0))
        handover = time.perf_counter() - started
        started = time.perf_counter()
        view.flush()
        flush = time.perf_counter() - started
        await pilot.pause(0.05)
        assert len(view.ring.records) == 2000 and view.received == 100_000
        assert handover < 0.5, f"queueing 100k records took {handover:.3f} s"
        assert flush < 0.1, f"one flush took {flush:.3f} s"
        await pilot.press("down")  # the UI still answers keys
        assert view.ring.cursor is not None


async def test_enter_expands_pretty_json_and_collapses_it():
    app = TailApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(TailView)
        view.add_records(
            records_for(
                "shardId-000000000000",
                0,
                3,
                payload=lambda i: gzip.compress(json.dumps({"n": i, "tags": ["a", "b"]}).encode(), mtime=0),
            )
        )
        await pilot.pause(0.2)
        await pilot.press("up", "enter")
        lines = screen_lines(view.ring)
        assert any(line.startswith("▾") and "k2" in line for line in lines)
        assert '        "a",' in lines and any("gzip+json" in line and "seq 4960" in line for line in lines)
        await pilot.press("enter")
        lines = screen_lines(view.ring)
        assert '        "a",' not in lines and not any(line.startswith("▾") for line in lines)


async def test_w_saves_what_is_shown_as_json_lines(tmp_path):
    app = TailApp(capacity=10, save_dir=tmp_path)
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(TailView)
        view.add_records(records_for("shardId-000000000000", 0, 25))
        view.add_records(records_for("shardId-000000000000", 25, 1, payload=lambda _i: b"\x00\xff"))
        await pilot.pause(0.2)
        await pilot.press("w")
        await pilot.pause(0.1)
        await pilot.click("#export")  # JSON lines of what is shown: the dialog's defaults
        await pilot.pause(0.1)
        files = list(tmp_path.glob("orders-*.jsonl"))
        assert len(files) == 1
        docs = [json.loads(line) for line in files[0].read_text().splitlines()]
        assert [d["partition_key"] for d in docs] == [f"k{i}" for i in range(16, 26)]
        assert docs[0]["content"] == {"n": 16} and docs[-1] == {**docs[-1], "kind": "hex", "content": "00ff"}


async def test_keys_ask_the_app_to_start_and_stop_and_pause_holds_the_display():
    app = TailApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(TailView)
        await pilot.press("t")
        await pilot.pause(0.05)
        assert app.requests[-1].follow and app.requests[-1].start.iterator_type == "LATEST"
        view.set_running(True)
        await pilot.press("t")
        await pilot.pause(0.05)
        assert app.requests[-1] == "stop"
        await pilot.press("space")
        view.add_records(records_for("shardId-000000000000", 0, 5))
        await pilot.pause(0.25)
        assert len(view.ring.records) == 0 and "5 waiting" in str(view.query_one("#tail-status").render())
        await pilot.press("space")
        await pilot.pause(0.25)
        assert len(view.ring.records) == 5


async def test_option_row_sets_start_key_and_grep_and_rejects_a_bad_timestamp():
    app = TailApp()
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(TailView)
        assert not view.query_one("#tail-at").display  # the time box shows only for 'at'
        await pilot.press("f")  # to the options
        assert view.query_one("#tail-from").has_focus
        view.query_one("#tail-from").value = "at"
        await pilot.pause()
        assert view.query_one("#tail-at").display
        view.query_one("#tail-at").value = "yesterday"
        view.query_one("#tail-key").value = "user-7"
        view.query_one("#tail-grep").focus()
        await pilot.press(*"paid", "enter")
        await pilot.pause(0.05)
        assert app.requests == []  # a bad start is refused with the reason, nothing is read
        assert "cannot start" in str(view.query_one("#tail-lag").render())
        view.query_one("#tail-at").value = "2026-11-22T20:00:00"
        await pilot.press("enter")
        await pilot.pause(0.05)
        options = app.requests[-1]
        assert (
            options.start.iterator_type == "AT_TIMESTAMP" and options.start.timestamp.utcoffset().total_seconds() == 0
        )
        assert (options.partition_key, options.grep, options.follow) == ("user-7", "paid", True)
        assert view.ring.has_focus  # back on the records, where t / h / w work
        view.set_running(True)
        assert "from 2026-11-22T20:00:00.000Z, key user-7, grep 'paid'" in str(view.query_one("#tail-status").render())
        await pilot.press("h")  # from the oldest, keeping the filters
        await pilot.pause(0.05)
        assert app.requests[-2] == "stop" and app.requests[-1].start.iterator_type == "TRIM_HORIZON"
        assert app.requests[-1].partition_key == "user-7"


async def test_a_masked_tail_tab_reads_with_its_mask_and_shows_no_address():
    from console.read.masking import masker

    app = TailApp(mask=masker(["@emails"]))
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(TailView)
        view.start_reading()
        await pilot.pause(0.1)
        [options] = [request for request in app.requests if request != "stop"]
        assert options.mask is not None
        read = records_for(
            "shardId-000000000000", 0, 3, payload=lambda i: json.dumps({"to": f"u{i}@example.com"}).encode()
        )
        view.add_batch(TailBatch("shardId-000000000000", [options.mask(record) for record in read], 0))
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(view.ring))
        assert "k2" in shown and "<masked 14 #" in shown and "@example.com" not in shown
