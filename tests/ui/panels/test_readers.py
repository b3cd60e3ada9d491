"""The Readers tab, driven with Pilot against the embedded local Kinesis: a Lambda event source mapping,
a Firehose delivery stream and a KCL application (its lease table) read a stream; the tab shows one row
each, the selected reader's detail (per-shard positions for the KCL, the lag as a whole for Lambda), the
readers' positions on the shard selected in the console, and polls only while it is shown. Names from
the services are shown escaped, at 80x24 as at 140x45."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import DataTable, Static

from console.backend.protocol import READERS
from console.consumers.reader_model import Reader, ReadersReport, ShardPosition
from console.ui.panels.readers import NO_READER_SERVICES, WHOLE_ONLY, ReadersPanel, detail_text
from tests.consumers.kcl_tables import create_lease_table, dynamodb, kcl_lease, put_items
from tests.consumers.reader_resources import ReaderFactory
from tests.ui.panels.test_panel_work import PanelHarness
from tests.ui.static_source import StaticSource, even_shards
from tests.ui.test_ui_console import RecordingApp, wait_until

pytestmark = pytest.mark.timeout(120)


async def read_by_lambda_firehose_and_kcl(endpoint_url: str, kinesis, stream: str) -> dict[str, str]:
    """A Lambda mapping, a Firehose delivery stream and a KCL lease table on `stream`: their names."""
    arn = (await kinesis.describe_stream_summary(stream)).arn
    shards = await kinesis.all_shards(stream)
    async with ReaderFactory(endpoint_url) as readers:
        function = await readers.function()
        await readers.mapping(arn, function, BatchSize=250)
        delivery_stream = await readers.delivery_stream(arn)
    async with dynamodb(endpoint_url) as client:
        table = await create_lease_table(client)
        await put_items(client, table, [kcl_lease(shard.shard_id) for shard in shards])
    return {"lambda": function, "firehose": delivery_stream, "kcl": table}


def rows_of(table: DataTable) -> dict[str, list[str]]:
    return {str(key.value): [str(cell) for cell in table.get_row(key)] for key in table.rows}


def text_of(panel: ReadersPanel, selector: str) -> str:
    return str(panel.query_one(selector, Static).render())


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
async def test_the_readers_tab_shows_each_reader_its_detail_and_the_selected_shard(
    kinesis, make_stream, local_kinesis, size
):
    stream = await make_stream(shards=2)
    names = await read_by_lambda_firehose_and_kcl(local_kinesis.endpoint_url, kinesis, stream)
    listed = await kinesis.all_shards(stream)
    for n in range(3):  # the KCL application, at TRIM_HORIZON everywhere, is 3 records behind on the second shard
        await kinesis.put_record(stream, b"record", f"k{n}", explicit_hash_key=listed[1].starting_hash_key)
    app = RecordingApp(kinesis, stream=stream, interval=0.5)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.refreshed, what="first poll")
        await pilot.press("9")
        panel = app.query_one(ReadersPanel)
        table = panel.query_one("#readers-table", DataTable)
        assert app.focused is table
        await wait_until(
            pilot,
            lambda: (
                {names["lambda"], names["firehose"], names["kcl"]}
                <= {reader.name for reader in panel._readers.values()}
            ),
            what="the three readers",
        )
        rows = rows_of(table)
        kinds = {cells[0] for cells in rows.values() if cells[1] in names.values()}
        assert kinds == {"lambda", "firehose", "kcl"}
        assert f"reader(s) of {stream}, worst first" in text_of(panel, "#readers-status")
        # The region drawn on screen holds the rows (not pushed off by the detail at 80x24).
        assert table.region.height >= 3 and table.region.bottom <= size[1]

        # The cursor's reader in the detail: a KCL application's position per shard, a Lambda's as a whole.
        async def select(name: str) -> str:
            key = next(key for key, reader in panel._readers.items() if reader.name == name)
            table.move_cursor(row=table.get_row_index(key))
            await pilot.pause()
            return text_of(panel, "#readers-detail")

        kcl_detail = await select(names["kcl"])
        shards = [shard.shard_id for shard in listed]
        assert all(shard_id in kcl_detail for shard_id in shards) and "TRIM_HORIZON" in kcl_detail
        lambda_detail = await select(names["lambda"])
        assert WHOLE_ONLY in lambda_detail and "250" in lambda_detail  # its batch size among the settings

        # The shard selected in the console: every reader's position on it, in one line.
        app.select_shard(shards[1])
        await pilot.pause()
        line = text_of(panel, "#readers-shard")
        assert line.startswith(f"readers on {shards[1]}:")
        assert f"kcl {names['kcl']} " in line and f"lambda {names['lambda']} lag unknown" in line
        kcl_on_shard = line.split(f"kcl {names['kcl']} ")[1].split(" · ")[0].split(";")[0]
        assert "3 records" in kcl_on_shard and "as a whole: " in line

        # It polls while shown, and stops when another tab is.
        assert [w for w in panel.workers if w.group == "readers" and not w.is_finished]
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: not [w for w in panel.workers if w.group == "readers" and not w.is_finished],
            what="the poll to stop",
        )
        assert not [note for note in app.notes if "internal error" in note]


HOSTILE = "fn-\x1b]52;c;ZXZpbA==\x07[bold]x[/]"


def hostile_report() -> ReadersReport:
    kcl = Reader(
        "kcl",
        "app\x1b[2J",
        None,
        "stalled",
        "1 of 2 unfinished leases have no owner",
        90_000,
        1200,
        None,
        {"lease_table": "app\x1b[2J", "leases": 2},
        None,
        False,
        (
            ShardPosition("shardId-000000000000", 90_000, 1200, "4960\x1b[31m"),
            ShardPosition("shardId-000000000001", None, None, None),
        ),
    )
    function = Reader(
        "lambda",
        HOSTILE,
        None,
        "Enabled",
        "PROBLEM: Function call failed\x1b[2J",
        None,
        None,
        "Errors 3, Throttles 0 (5 min)",
        {"batch_size": 100},
        None,
        False,
        None,
    )
    return ReadersReport("orders", (kcl, function), ("Lambda: AccessDenied (no lambda:GetFunction)",))


async def test_names_and_reasons_from_the_services_are_shown_escaped():
    panel = ReadersPanel(id="readers-panel")  # no source: it polls nothing, shows what it is given
    app = PanelHarness(panel)
    async with app.run_test(size=(80, 24)) as pilot:
        panel.show_report(hostile_report())
        panel.shard = "shardId-000000000000"
        await pilot.pause()
        shown = "\n".join(
            text_of(panel, selector)
            for selector in ("#readers-status", "#readers-unavailable", "#readers-shard", "#readers-detail")
        )
        rows = rows_of(panel.query_one("#readers-table", DataTable))
        everything = shown + "\n".join(" ".join(cells) for cells in rows.values())
        assert "\x1b" not in everything and "\x07" not in everything
        assert "\\x1b[2J" in everything and "[bold]x[/]" in everything  # drawn as themselves, not obeyed
        assert "Lambda: AccessDenied (no lambda:GetFunction)" in text_of(panel, "#readers-unavailable")
        line = text_of(panel, "#readers-shard")
        assert "kcl app\\x1b[2J 90.0 s, 1,200 records; as a whole: lambda fn-" in line and line.endswith("lag unknown")


async def test_rows_follow_worst_first_from_poll_to_poll_and_the_cursor_its_reader():
    panel = ReadersPanel(id="readers-panel")
    app = PanelHarness(panel)
    async with app.run_test(size=(140, 45)) as pilot:
        report = hostile_report()
        panel.show_report(report)
        table = panel.query_one("#readers-table", DataTable)
        table.move_cursor(row=1)  # the Lambda reader, second of two
        await pilot.pause()
        assert panel.selected_reader is report.readers[1]
        kcl, function = report.readers
        caught_up = replace(kcl, millis_behind=0, records_behind=0)
        newcomer = replace(function, kind="firehose", name="ds-1", errors=None)
        panel.show_report(replace(report, readers=(function, newcomer, caught_up)))  # now the Lambda is worst
        await pilot.pause()
        assert [row.key.value for row in table.ordered_rows] == [
            "lambda:" + function.name,
            "firehose:ds-1",
            "kcl:" + kcl.name,
        ]
        assert table.cursor_row == 0 and panel.selected_reader is function  # the cursor followed its reader
        assert detail_text(function).plain in text_of(panel, "#readers-detail")


class ServesNoReaders(StaticSource):
    """The stream's shards, and a claim to the readers' services it does not keep."""

    capabilities = frozenset({READERS})


async def test_a_source_without_the_readers_services_is_one_line_and_a_failing_poll_is_said():
    # An in-memory source serves no reader service, and says so: the tab says it, polls nothing.
    panel = ReadersPanel(StaticSource("orders", even_shards(2)), id="readers-panel")
    app = PanelHarness(panel)
    async with app.run_test(size=(80, 24)) as pilot:
        panel.stream = "orders"
        await pilot.pause()
        assert text_of(panel, "#readers-status") == NO_READER_SERVICES
        assert not [w for w in panel.workers if w.group == "readers"]
    # One that claims them and fails unexpectedly: a defect, shown in place of a stuck "reading…".
    panel = ReadersPanel(ServesNoReaders("orders", even_shards(2)), id="readers-panel")
    app = PanelHarness(panel)
    async with app.run_test(size=(80, 24)) as pilot:
        panel.stream = "orders"
        await wait_until(
            pilot, lambda: "readers stopped: internal error" in text_of(panel, "#readers-status"), what="the error"
        )
        assert "AttributeError" in text_of(panel, "#readers-status")
