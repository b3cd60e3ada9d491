"""The heat panel and its heat map: shards by seconds, coloured by utilisation, the selected shard
highlighted, idle shown as idle, and the sampler started and stopped with the tab."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Static, TabbedContent, TabPane

from console.heat.stream_heat import StreamHeat
from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key
from console.topology.model import Shard
from console.ui.panels.heat import HeatPanel
from console.ui.widgets.heat_map import IDLE, MAP_SECONDS, HeatMap, cell_values, level_style, seconds_per_cell
from tests.heat.test_heat import four_shard_snapshot

pytestmark = pytest.mark.timeout(60)


class PanelApp(App):
    def compose(self):
        yield HeatPanel(id="heat")


def map_lines(heat_map: HeatMap) -> list[str]:
    return [heat_map.render_line(y).text for y in range(len(heat_map.rows) + 1)]


def test_cells_cover_five_minutes_newest_last_and_blank_before_sampling():
    assert seconds_per_cell(300) == 1 and seconds_per_cell(100) == 3 and seconds_per_cell(7) == 43
    series = [0.0] * 10 + [0.5, 0.9]  # twelve seconds sampled so far
    values = cell_values(series, cells=100, per_cell=3)
    assert len(values) == 100 and values[-1] == 0.9 and values[-2] == 0.0 and values[-4] == 0.0
    assert values[-5] is None and values[0] is None  # not sampled yet: blank, not idle
    assert level_style(0.05) != level_style(0.6) != level_style(1.2)


async def test_heat_map_rows_order_selection_and_top_keys():
    index, snapshot = four_shard_snapshot()
    hot_shard = index.predict(md5_hash_key("hot"))
    app = PanelApp()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.query_one(HeatPanel)
        panel.update_snapshot(snapshot)
        await pilot.pause()
        heat_map = panel.query_one(HeatMap)
        assert [row.shard_id for row in heat_map.rows] == list(index.shard_ids)  # key-space order first
        assert panel.selected_shard == hot_shard  # the hottest is selected on first sight
        keys_text = str(panel.query_one("#heat-keys", Static).render())
        assert "hot" in keys_text and "kconsole plan split orders" in keys_text
        lines = map_lines(heat_map)
        hot_line = next(line for line in lines if line.startswith("▶"))
        assert f"#{int(hot_shard[-12:])}" in hot_line and "█" in hot_line  # highlighted, and hot
        assert "now" in lines[0]
        assert "rec/s" in str(panel.query_one("#heat-total", Static).render())

        panel.focus()
        await pilot.press("h")
        await pilot.pause()
        assert heat_map.rows[0].shard_id == hot_shard
        await pilot.press("down")
        assert panel.selected_shard != hot_shard
        await pilot.press("up")
        assert panel.selected_shard == hot_shard
        await pilot.click("#heat-map", offset=(3, 3))  # the third shard's row
        assert panel.selected_shard == heat_map.rows[2].shard_id


async def test_idle_shows_idle_not_full_bars():
    index = HashRangeIndex.even(3)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    snapshot = StreamHeat("orders", shards, window_start=100.0).snapshot(now=103.0, series_seconds=MAP_SECONDS)
    app = PanelApp()
    async with app.run_test(size=(100, 24)) as pilot:
        panel = app.query_one(HeatPanel)
        panel.update_snapshot(snapshot)
        await pilot.pause()
        heat_map = panel.query_one(HeatMap)
        assert "idle" in str(panel.query_one("#heat-total", Static).render())
        for y in range(1, 4):
            strip = heat_map.render_line(y)
            assert "█" not in strip.text and "·" in strip.text
            assert any(segment.style == IDLE for segment in strip if segment.text == "·")


async def test_heat_panel_tells_the_app_when_its_tab_is_left_and_revisited():
    seen = []

    class TabsApp(App):
        def compose(self):
            with TabbedContent(initial="shards"):
                with TabPane("Shards", id="shards"):
                    yield Static("table")
                with TabPane("Heat", id="heat"):
                    yield HeatPanel(id="heat-panel")

        def on_heat_panel_shown(self, _message):
            seen.append("shown")

        def on_heat_panel_hidden(self, _message):
            seen.append("hidden")

    app = TabsApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "shown" not in seen  # mounted on a hidden tab: nothing to sample yet
        app.query_one(TabbedContent).active = "heat"
        await pilot.pause()
        await pilot.pause()
        assert seen[-1:] == ["shown"]
        app.query_one(TabbedContent).active = "shards"
        await pilot.pause()
        await pilot.pause()
        assert seen[-1:] == ["hidden"]


def test_the_total_says_how_many_shards_it_covers_until_a_pass_has_read_them_all():
    """Reading in turn, a shard not read yet counts nothing: the stream's rate says what it covers."""
    from console.ui.panels.heat_text import total_text

    index = HashRangeIndex.even(6)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    heat = StreamHeat("orders", shards, window_start=100.0)
    for shard in shards[:2]:
        heat.observe(shard.shard_id, [(100.0 + n / 10, "k", 100) for n in range(50)])
        heat.mark_sampled(shard.shard_id, 105.0)

    def header() -> str:
        snapshot = heat.snapshot(now=105.0, series_seconds=MAP_SECONDS, as_sampled=True)
        return str(total_text(snapshot, rotating=True, hottest_first=False, coverage="", read_cost=""))

    assert "covers 2 of 6 shards" in header()
    for shard in shards[2:]:
        heat.mark_sampled(shard.shard_id, 105.0)
    assert "rec/s" in header() and "covers" not in header()  # every shard read: the figure is the stream's
