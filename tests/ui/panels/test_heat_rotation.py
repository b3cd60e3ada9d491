"""The Heat tab on a stream with more shards than it reads in a second: the header says what a pass
covers, the selected shard is read every second, the rest in turn, each row shows how old its
figures are, and a hot shard found on its turn is read every second from then on."""

from __future__ import annotations

import time

import pytest
from textual.widgets import Static

from console.ui.widgets.heat_map import HeatMap
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(120)

SHARDS = 300
PER_SECOND = 30


def age_column(line: str) -> str:
    """The age field of a heat-map row: after '▶ #12 ' + rate + utilisation (the label's 25 columns)."""
    return line[25:30].strip()


async def test_heat_reads_a_bounded_set_per_second_in_turn_with_ages(kinesis, make_stream):
    name = await make_stream(shards=SHARDS)
    shards = await kinesis.all_shards(name)
    hot = shards[250]
    app = RecordingApp(kinesis, stream=name, interval=600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed, timeout=30)
        panel = app.query_one("#heat-panel")
        panel.shards_per_second = PER_SECOND
        await pilot.press("7")
        await wait_until(pilot, lambda: panel.snapshot is not None, what="first heat snapshot")
        header = str(panel.query_one("#heat-total", Static).render())
        assert f"sampling {PER_SECOND} of {SHARDS} shards per second" in header
        assert "full pass every 12 s" in header  # 300 shards, 30 a second less 3 hottest and the selected
        heat_map = panel.query_one(HeatMap)
        assert heat_map.ages and "age" in heat_map.render_line(0).text
        assert [age_column(heat_map.render_line(y).text) for y in (1, 10)] == ["-", "-"]  # none read yet

        # Write to a shard far down the key space: nothing is known of it until its turn.
        await kinesis.put_records(
            name, [{"Data": b"x" * 400, "ExplicitHashKey": str(hot.starting_hash_key), "PartitionKey": "k"}] * 200
        )
        # Move the selection a few rows down and keep watching its age: read in every second.
        panel.focus()
        await pilot.press("j", "j", "j")
        selected = panel.selected_shard
        assert selected == shards[3].shard_id
        sampler = panel._sampler
        read_in_first_seconds: list[int] = []
        ages = []
        for _ in range(4):
            await pilot.pause(1.0)
            now = time.time()
            read_in_first_seconds.append(sum(1 for shard in shards if shard.shard_id in sampler.heat.sampled_at))
            ages.append(sampler.heat.age(selected, now))
        assert all(age is not None and age < 2.5 for age in ages), ages
        # In turn: each second reads at most PER_SECOND shards, so the first seconds leave most unread.
        assert read_in_first_seconds[0] <= 2 * PER_SECOND and read_in_first_seconds[-1] < SHARDS
        assert read_in_first_seconds[-1] > read_in_first_seconds[0]  # the pass goes on

        header = str(panel.query_one("#heat-total", Static).render())
        assert f"of {SHARDS} shards read in" in header  # idle as far as it knows, and how far that is
        lines = [heat_map.render_line(y).text for y in range(1, heat_map.size.height)]
        selected_line = next(line for line in lines if line.startswith("▶"))
        assert age_column(selected_line) in ("now", "1s")

        # The pass reaches every shard, the hot one among them; from then on it is among the hottest.
        await wait_until(
            pilot,
            lambda: len(sampler.heat.sampled_at) >= SHARDS and panel.snapshot.shards[250].records >= 200,
            timeout=40,
            what="a full pass",
        )
        assert sampler.rotation.hottest(1) == [hot.shard_id]
        panel.action_toggle_order()  # hottest first: the hot shard leads, read within the last seconds
        await pilot.pause(1.2)
        first_row = heat_map.render_line(1).text
        assert f"#{SHARDS - 50}" in first_row and "█" in first_row
        assert age_column(first_row) in ("now", "1s", "2s")


async def test_heat_list_shows_every_shard_of_a_small_stream_at_80x24(kinesis, make_stream):
    name = await make_stream(shards=5)
    app = RecordingApp(kinesis, stream=name, interval=600)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("7")
        panel = app.query_one("#heat-panel")
        await wait_until(pilot, lambda: panel.snapshot is not None, what="first heat snapshot")
        await pilot.pause(0.3)
        heat_map = panel.query_one(HeatMap)
        region = heat_map.region  # on screen: the axis and a line per shard, above the footer
        assert region.height >= 1 + 5 and region.bottom <= app.screen.size.height - 1, region
        shown = [heat_map.render_line(y).text for y in range(1, region.height)]
        assert [line.split()[0].lstrip("▶") or line.split()[1] for line in shown[:5]] == [f"#{n}" for n in range(5)]
