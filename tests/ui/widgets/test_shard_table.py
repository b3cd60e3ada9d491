"""Hash keys in the shard table: in full where they fit, in the one format the settings choose,
never in scientific notation."""

from __future__ import annotations

import re

import pytest

from console.config import load_config
from console.keyspace.hashkeys import MAX_HASH_KEY
from console.ui.format import format_hash_key
from console.ui.widgets.shard_columns import COLUMNS, columns_for, fit_columns
from tests.ui.test_ui_console import wait_until
from tests.ui.test_ui_interaction import static_app

pytestmark = pytest.mark.timeout(60)


def test_formats_write_every_key_in_full():
    assert format_hash_key(MAX_HASH_KEY) == "340282366920938463463374607431768211455"
    assert format_hash_key(MAX_HASH_KEY, "hex") == "0x" + "f" * 32
    assert format_hash_key(1, "hex") == "0x" + "0" * 31 + "1"
    assert format_hash_key(2**127) == str(2**127) and "e" not in format_hash_key(2**127)


@pytest.mark.parametrize("key_format", ["decimal", "hex"])
def test_columns_narrow_in_order_and_keys_stay_full_while_they_fit(key_format):
    columns = columns_for(key_format)
    key_width = len(format_hash_key(MAX_HASH_KEY, key_format))
    wide = fit_columns(columns[:-1], 138)
    assert [c.key for c in wide] == ["shard", "state", "start", "end", "share", "parents"]
    assert {c.width for c in wide if c.key in ("start", "end")} == {key_width}
    at_80 = fit_columns(columns[:-1], 78)  # every column: shard ids shorten, the keys keep their leading digits
    assert [c.key for c in at_80] == ["shard", "state", "start", "end", "share", "parents"]
    assert next(c for c in at_80 if c.key == "shard").width < COLUMNS[0].width
    assert {c.width for c in at_80 if c.key in ("start", "end")} <= {20, 21}
    with_rate = fit_columns(columns, 78)
    assert [c.key for c in with_rate] == ["shard", "state", "start", "end", "share", "parents", "throughput"]
    narrow = fit_columns(columns, 60)  # narrower: the end key goes, then the parents
    assert [c.key for c in narrow] == ["shard", "state", "start", "share", "throughput"]
    assert sum(c.width + 1 for c in narrow) + 1 <= 60
    assert sum(c.width + 1 for c in with_rate) + 1 <= 78


@pytest.mark.parametrize("key_format, size", [("decimal", (140, 45)), ("hex", (140, 45)), ("decimal", (80, 24))])
async def test_the_table_shows_full_keys_in_the_chosen_format(key_format, size):
    """Full where they fit; at 80 columns the table keeps each key's leading digits and the detail
    line has the selected shard's keys in full."""
    app = static_app(key_format=key_format)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.pause()
        lines = [app.table.render_line(y).text for y in range(app.table.row_count + 1)]
        text = "\n".join(lines)
        assert not re.search(r"\d\.\d+e\+\d", text)
        last = format_hash_key(app.view.shards[-1].starting_hash_key, key_format)
        assert (last if size[0] > 80 else last[:12]) in text
        detail = str(app.query_one("#shard-detail").render())
        selected = app.table.shard(app.selected_shard_id)
        assert format_hash_key(selected.ending_hash_key, key_format) in detail


def test_key_format_setting_is_checked(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('key_format = "hex"\n', encoding="utf-8")
    assert load_config(path)[0].key_format == "hex"
    path.write_text('key_format = "sci"\n', encoding="utf-8")
    config, warning = load_config(path)
    assert config.key_format == "decimal" and "key_format" in warning


@pytest.mark.parametrize("width, stale_rate_shown", [(140, False), (180, True)])
async def test_stale_rates_never_take_the_end_keys_place(width, stale_rate_shown):
    app = static_app()
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        table = app.table
        table.set_heat({sid: None for sid in table.shard_ids})  # any figures: the column appears
        await pilot.pause()
        live = table.render_line(0).text
        assert "Rate" in live
        table.set_heat_stale()
        await pilot.pause()
        header = table.render_line(0).text
        assert "End key" in header
        assert ("Rate (stale)" in header) is stale_rate_shown


@pytest.mark.parametrize("width", [80, 140])
async def test_stale_rates_leave_every_other_column_as_it_was(width):
    # At 80 columns the live rates shorten shard ids to '#n'; stale ones are not worth that.
    app = static_app()
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        table = app.table
        before = [table.render_line(y).text for y in range(3)]
        table.set_heat({sid: None for sid in table.shard_ids})
        await pilot.pause()
        table.set_heat_stale()
        await pilot.pause()
        assert [table.render_line(y).text for y in range(3)] == before
