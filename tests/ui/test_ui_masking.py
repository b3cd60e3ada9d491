"""Masking in the console: the header's badge, `:unmask` only after the stream name is typed and once it
is in the action log, `:mask` dropping what was read unmasked, and the Heat tab's hot keys under mask_keys."""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import App
from textual.widgets import Static

from console.heat.stream_heat import StreamHeat
from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key
from console.read.masking import Masker, masker
from console.read.tail import TailBatch
from console.topology.model import Shard
from console.ui.panels.heat import HeatPanel
from console.ui.panels.tail import TailView
from console.ui.screens.confirm import ConfirmByNameScreen
from tests.ui.panels.test_tail import records_for, screen_lines
from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_habits import command, static_app

SHARD = "shardId-000000000000"


def header_text(app) -> str:
    rendered = app.header.render()
    return rendered.plain if isinstance(rendered, Text) else str(rendered)


def addresses(count: int) -> list:
    return records_for(SHARD, 0, count, payload=lambda i: json.dumps({"email": f"u{i}@example.com", "n": i}).encode())


async def test_unmask_asks_for_the_name_logs_it_and_mask_drops_what_was_read_unmasked(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path))
    app = static_app(mask_rules=("data.email", "@keys"))
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        assert " MASKED " in header_text(app)
        await command(pilot, "tail")
        await wait_until(pilot, lambda: bool(app.query(TailView)), what="the Tail tab")
        view = app.query_one(TailView)
        assert view.mask is not None and view.read_options().mask is view.mask
        view.add_batch(TailBatch(SHARD, [view.mask(record) for record in addresses(3)], 0))
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(view.ring))
        assert "<masked 14 #" in shown and "@example.com" not in shown and "k1" not in shown  # @keys too

        await command(pilot, "unmask")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirmation")
        await pilot.press(*"order", "enter")  # not the name: masking stays on
        await pilot.pause()
        assert app.masking and not (tmp_path / "actions.jsonl").exists()
        await pilot.press("escape")
        await command(pilot, "unmask")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirmation")
        await pilot.press(*"orders", "enter")
        await wait_until(pilot, lambda: not app.masking, what="masking off after the name")
        assert " UNMASKED " in header_text(app) and view.mask is None
        [entry] = [json.loads(line) for line in (tmp_path / "actions.jsonl").read_text().splitlines()]
        assert entry["kind"] == "masking_off" and entry["where"] == "console :unmask"
        assert entry["stream"] == "orders" and entry["rules"] == ["data.email", "@keys"]
        view.add_records(addresses(2))  # read unmasked while masking is off
        await pilot.pause(0.3)
        assert "@example.com" in "\n".join(screen_lines(view.ring))

        await command(pilot, "mask")
        await wait_until(pilot, lambda: app.masking, what="masking on again")
        await pilot.pause(0.2)
        assert " MASKED " in header_text(app) and view.mask is not None
        assert not view.ring.records and not view.held  # what was read unmasked is gone
        assert "@example.com" not in "\n".join(screen_lines(view.ring))


async def test_unmask_stays_masked_when_the_action_log_cannot_be_written(tmp_path, monkeypatch):
    (tmp_path / "actions.jsonl").mkdir()
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path))
    app = static_app(mask_rules=("@emails",))
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await command(pilot, "unmask")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmByNameScreen), what="confirmation")
        await pilot.press(*"orders", "enter")
        await wait_until(pilot, lambda: any("masking stays on" in note for note in app.notes), what="refusal")
        assert app.masking and " MASKED " in header_text(app)


async def test_a_console_without_rules_has_no_badge_and_nothing_to_unmask():
    app = static_app()
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        assert "MASKED" not in header_text(app)
        await command(pilot, "unmask")
        assert not isinstance(app.screen, ConfirmByNameScreen) and any("no mask rules" in n for n in app.notes)


class HeatApp(App):
    def __init__(self, **options) -> None:
        super().__init__()
        self.options = options

    def compose(self):
        yield HeatPanel(id="heat", **self.options)


def email_heat():
    index = HashRangeIndex.even(2)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    stream = StreamHeat("orders", shards, window_start=100.0)
    keys = ["vip@example.com"] * 300 + [f"c{i}@example.com" for i in range(100)]
    for n, key in enumerate(keys):
        stream.observe(index.predict(md5_hash_key(key)), [(100.0 + n / 200, key, 100)])
    return stream.snapshot(now=103.0)


async def test_the_heat_tab_masks_hot_keys_while_masking_is_on():
    app = HeatApp(key_mask=Masker.of_keys().token)
    async with app.run_test(size=(140, 36)) as pilot:
        panel = app.query_one(HeatPanel)
        panel.update_snapshot(email_heat())
        await pilot.pause()
        keys = str(panel.query_one("#heat-keys", Static).render())
        assert "<masked 15 #" in keys and "@example.com" not in keys

        panel.masking = False
        panel.update_snapshot(email_heat())
        await pilot.pause()
        assert "vip@example.com" in str(panel.query_one("#heat-keys", Static).render())
        panel.masking = True  # at once, not at the next second's snapshot
        await pilot.pause()
        assert "@example.com" not in str(panel.query_one("#heat-keys", Static).render())


def test_masked_keys_leave_every_figure_as_it_was():
    snapshot = email_heat()
    masked = snapshot.with_keys(masker(["@keys"]).token)
    assert [s.records for s in masked.shards] == [s.records for s in snapshot.shards]
    assert "@example.com" not in json.dumps(masked.to_json())
    assert "vip@example.com" in json.dumps(snapshot.to_json())
