"""The Tail tab's Where box: what it shows is what filters the records, Enter or not. Emptying it shows
every record again; Start reads with the expression typed; a bad expression says so in the status
lines and drops no record."""

from __future__ import annotations

import json

import pytest

from console.ui.panels.tail import TailView
from tests.ui.panels.test_tail import records_for
from tests.ui.panels.test_tail_windows import ViewApp, numbers
from tests.ui.test_ui_console import wait_until

pytestmark = pytest.mark.timeout(60)


def lines(view: TailView) -> str:
    return str(view.query_one("#tail-lag").render())


async def test_the_where_box_filters_as_typed_and_emptied_without_enter():
    app = ViewApp()
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.add_records(records_for("shardId-000000000000", 0, 10))
        await pilot.pause(0.2)
        expression = "data.n >= `7`"
        app.query_one("#tail-where").focus()
        await pilot.press(*expression)
        await wait_until(pilot, lambda: numbers(view) == [7, 8, 9], what="the filter typed, without enter")
        await pilot.press(*["backspace"] * len(expression))
        await wait_until(pilot, lambda: numbers(view) == list(range(10)), what="every record, the box emptied")
        assert "filter cleared" in lines(view)

        await pilot.press(*"data.n ==")  # not an expression: said, and no record dropped
        await wait_until(pilot, lambda: "filter not applied" in lines(view), what="the error line")
        assert numbers(view) == list(range(10)) and len(view.held) == 10


async def test_start_reads_with_the_where_typed_but_not_entered(kinesis, make_stream):
    stream = await make_stream(shards=1)
    for number in range(6):
        await kinesis.put_record(stream, json.dumps({"n": number}).encode(), f"key-{number}")
    app = ViewApp(kinesis, stream)
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.query_one("#tail-from").value = "trim-horizon"
        view.query_one("#tail-where").focus()
        await pilot.press(*"data.n < `2`")
        await pilot.click("#tail-start")  # at once: no pause for the box to settle
        await wait_until(pilot, lambda: view.received >= 6, what="the records read")
        await pilot.pause(0.3)
        assert numbers(view) == [0, 1]


async def test_a_bad_where_keeps_the_filter_before_says_which_and_start_refuses_it():
    app = ViewApp()
    async with app.run_test(size=(160, 24)) as pilot:
        view = app.query_one(TailView)
        view.add_records(records_for("shardId-000000000000", 0, 10))
        await pilot.pause(0.2)
        app.query_one("#tail-where").focus()
        await pilot.press(*"data.n < `3`", "enter")
        assert numbers(view) == [0, 1, 2]
        app.query_one("#tail-where").focus()
        await pilot.press(*" &&")
        await wait_until(pilot, lambda: "filter not applied" in lines(view), what="the error line")
        assert "still 'data.n < `3`'" in lines(view) and numbers(view) == [0, 1, 2]
        await pilot.click("#tail-start")
        await wait_until(pilot, lambda: "cannot start: Where" in lines(view), what="the refusal")
        assert not view.running and numbers(view) == [0, 1, 2]
