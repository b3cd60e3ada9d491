"""Snapshots of the main views (pytest-textual-snapshot): fixed data, a frozen clock, no network.

Update after an intended change of look with `pytest tests/test_ui_snapshots.py --snapshot-update`
and review the SVGs in tests/__snapshots__/test_ui_snapshots/.
"""

from __future__ import annotations

import pytest

from console.errors import EndpointUnreachable
from console.keyspace.hashkeys import HASH_SPACE
from console.ui.app import KConsoleApp
from console.ui.widgets.shard_columns import ShardHeat
from tests.ui.static_source import StaticSource, even_shards, split_shard

pytestmark = pytest.mark.timeout(60)


def demo_shards():
    """Four even shards, the first split at its midpoint and the upper child split again: uneven."""
    shards = split_shard(even_shards(4), "shardId-000000000000", HASH_SPACE // 8)
    return split_shard(shards, "shardId-000000000005", 3 * HASH_SPACE // 16)


def make_app(shards=None, **options) -> KConsoleApp:
    source = StaticSource("orders", demo_shards() if shards is None else shards)
    return KConsoleApp(source, stream="orders", interval=3600, clock=lambda: 1000.0, **options)


async def loaded(pilot) -> None:
    app = pilot.app
    while app.view is None or app.view.lineage is None:
        await pilot.pause(0.02)
    await pilot.pause()


def test_shards_view(snap_compare):
    assert snap_compare(make_app(), terminal_size=(120, 36), run_before=loaded)


def test_shards_view_80_columns(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 30), run_before=loaded)


def test_lineage_view(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        pilot.app.select_shard("shardId-000000000006")
        await pilot.pause(0.1)

    assert snap_compare(make_app(), terminal_size=(100, 30), run_before=run_before)


def test_placement_view(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("3")
        pilot.app.placement.set_keys("\n".join(f"user-{n}" for n in range(1, 13)))
        await pilot.press("escape")  # leave the text box: a blinking cursor would make the picture flaky
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(100, 40), run_before=run_before)


@pytest.mark.parametrize("size", [(100, 36), (80, 24), (140, 45)])
def test_keytree_view(snap_compare, size):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("4")
        pilot.app.query_one("#keytree-panel").set_keys(f"{HASH_SPACE // 2}\n{HASH_SPACE // 4}\n{HASH_SPACE // 8}\n1")
        await pilot.press("escape")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


def test_help_screen(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(read_only=True), terminal_size=(100, 40), run_before=run_before)


def test_header_red_when_backend_down(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        pilot.app.backend.failure = EndpointUnreachable("cannot reach http://127.0.0.1:4567 (connection refused)")
        pilot.app.action_refresh()
        while not pilot.app.header.failing:
            await pilot.pause(0.02)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(100, 24), run_before=run_before)


def test_many_uneven_shards_with_heat_at_80_columns(snap_compare):
    shards = even_shards(64)
    for shard_id, at in (
        ("shardId-000000000003", 3 * HASH_SPACE // 64 + HASH_SPACE // 256),
        ("shardId-000000000040", 40 * HASH_SPACE // 64 + HASH_SPACE // 128),
    ):
        shards = split_shard(shards, shard_id, at)

    async def run_before(pilot):
        await loaded(pilot)
        heat = {
            f"shardId-{n:012d}": ShardHeat(100.0 * n, 1000.0 * n, min(1.0, n / 50), (n, n + 1, n + 2, n // 2))
            for n in range(0, 70, 3)
        }
        pilot.app._show_heat_figures(heat)
        await pilot.pause()

    assert snap_compare(make_app(shards), terminal_size=(80, 30), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_producer_form_opens_on_its_first_field(snap_compare, size):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("5")
        while getattr(pilot.app.focused, "id", None) != "producer-keys":
            await pilot.pause(0.02)
        pilot.app.focused.cursor_blink = False  # a steady caret: a blinking one makes the picture flaky
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


def test_tail_options_at_80x24(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("6")
        pilot.app.query_one("#tail-key").value = "user-7"
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_full_keys_at_140x45(snap_compare):
    assert snap_compare(make_app(), terminal_size=(140, 45), run_before=loaded)


def test_hex_keys_at_80x24(snap_compare):
    assert snap_compare(make_app(key_format="hex"), terminal_size=(80, 24), run_before=loaded)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_filter_without_a_match_says_what_to_do(snap_compare, size):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("slash", *"zzz", "enter")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_empty_placement_in_hash_key_mode(snap_compare, size):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("3", "ctrl+t", "escape")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_placement_problem_column(snap_compare, size):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("3", "ctrl+t")
        pilot.app.placement.set_keys(f"{HASH_SPACE // 2}\n12e30\n{HASH_SPACE // 8}\n")
        await pilot.press("escape")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_split_preview_legend_and_aligned_ranges(snap_compare, size):
    from console.reshard.model import KeySample
    from console.reshard.plan import midpoint, plan_split
    from console.ui.screens.reshard import ReshardPreviewScreen

    async def run_before(pilot):
        await loaded(pilot)
        shards = pilot.app.view.shards
        target = next(s for s in shards if s.shard_id == "shardId-000000000001")
        sample = KeySample.from_partition_keys([f"user-{n}" for n in range(1, 13)])
        plan = plan_split(shards, target.shard_id, midpoint(target), basis="midpoint", sample=sample)
        pilot.app.push_screen(ReshardPreviewScreen(plan, "orders", sample_label="keys typed in Placement"))
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


def heat_snapshot():
    """Six shards over 200 s: one ramps up to its limit, one is idle, the rest calm; fixed data."""
    from console.heat.stream_heat import StreamHeat
    from console.keyspace.hashkeys import HashRangeIndex, md5_hash_key
    from console.topology.model import Shard
    from console.ui.widgets.heat_map import MAP_SECONDS

    index = HashRangeIndex.even(6)
    shards = [Shard(sid, s, e) for sid, s, e in zip(index.shard_ids, index.starts, index.endings)]
    heat = StreamHeat("orders", shards, window_start=1000.0)
    keys = {index.predict(md5_hash_key(f"k{n}")): f"k{n}" for n in range(200)}
    for second in range(200):
        for position, shard_id in enumerate(index.shard_ids):
            rate = {0: 5 * second, 1: 0, 2: 100, 3: 300 if second > 120 else 20}.get(position, 50)
            if rate:
                heat.observe(
                    shard_id,
                    [(1000.0 + second + i / max(rate, 1), keys[shard_id], 100) for i in range(min(rate, 1000))],
                )
    return heat.snapshot(now=1200.0, series_seconds=MAP_SECONDS)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_heat_map(snap_compare, size):
    from textual.app import App

    from console.ui.panels.heat import HeatPanel

    snapshot = heat_snapshot()

    class HeatApp(App):
        CSS_PATH = KConsoleApp.CSS_PATH

        def compose(self):
            yield HeatPanel(id="heat-panel")

        def on_mount(self):
            panel = self.query_one(HeatPanel)
            panel.update_snapshot(snapshot)

    async def run_before(pilot):
        await pilot.pause()
        pilot.app.query_one(HeatPanel).update_snapshot(snapshot)  # again, now that the map has its size
        await pilot.pause()

    assert snap_compare(HeatApp(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_split_prompt_refuses_the_end_key_with_the_plans_rule(snap_compare, size):
    from console.ui.screens.prompt import PromptScreen

    async def run_before(pilot):
        await loaded(pilot)
        pilot.app.select_shard("shardId-000000000001")
        await pilot.press("s")
        while not isinstance(pilot.app.screen, PromptScreen):
            await pilot.pause(0.02)
        pilot.app.screen.query_one("Input").value = str(2 * HASH_SPACE // 4 - 1)  # the shard's end key
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)
