"""The Tail tab's profile (P): each field path's presence and types as an independent count of the
records shown, the Where box's pick and the mask respected, and P again back to the records."""

from __future__ import annotations

import json
import random

from textual.widgets import DataTable

from console.read.masking import masker
from console.read.tail import TailBatch
from console.ui.panels.tail import TailView
from console.ui.panels.tail_profile import COLUMNS
from tests.ui.panels.test_tail import TailApp, records_for

SHARD = "shardId-000000000000"


def documents(count: int, seed: int = 7) -> list[dict]:
    chooser = random.Random(seed)
    made = []
    for number in range(count):
        document: dict = {"id": number if chooser.random() < 0.8 else str(number)}
        if chooser.random() < 0.6:
            document["user"] = {"email": f"u{number}@example.com"}
            if chooser.random() < 0.5:
                document["user"]["age"] = chooser.choice([None, 30, 41.5])
        if chooser.random() < 0.3:
            document["tags"] = ["a", 1][: chooser.randint(0, 2)]
        made.append(document)
    return made


def independent_counts(docs: list[dict]) -> dict[str, tuple[int, dict[str, int]]]:
    """Per path: records it is present in, and each JSON type's count (list elements each counted)."""
    present: dict[str, set[int]] = {}
    types: dict[str, dict[str, int]] = {}

    def kind(value) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "boolean"
        return {int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(value)]

    def walk(index: int, value, path: str) -> None:
        if path:
            present.setdefault(path, set()).add(index)
            types.setdefault(path, {}).setdefault(kind(value), 0)
            types[path][kind(value)] += 1
        if isinstance(value, dict):
            for key, item in value.items():
                walk(index, item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for item in value:
                walk(index, item, f"{path}[]")

    for index, document in enumerate(docs):
        walk(index, document, "")
    return {path: (len(present[path]), types[path]) for path in present}


def table_rows(view: TailView) -> dict[str, dict[str, str]]:
    table = view.query_one("#tail-profile-table", DataTable)
    return {
        str(table.get_row_at(row)[0]): dict(zip(COLUMNS, (str(cell) for cell in table.get_row_at(row))))
        for row in range(table.row_count)
    }


def parsed_types(cell: str) -> dict[str, int]:
    return {kind: int(count) for kind, count in (part.split(" ") for part in cell.split("/"))}


async def test_the_profile_counts_every_path_as_an_independent_count_and_p_goes_back():
    docs = documents(120)
    app = TailApp(capacity=500)
    async with app.run_test(size=(140, 40)) as pilot:
        view = app.query_one(TailView)
        read = records_for(SHARD, 0, len(docs), payload=lambda i: json.dumps(docs[i]).encode())
        view.add_batch(TailBatch(SHARD, read, 0))
        await pilot.pause(0.3)
        await pilot.press("P")
        await pilot.pause(0.1)
        assert view.profiling and not view.ring.display

        rows = table_rows(view)
        expected = independent_counts(docs)
        assert set(rows) == set(expected)
        for path, (present, types) in expected.items():
            assert rows[path]["PRESENT"].startswith(f"{present} ("), path
            assert parsed_types(rows[path]["TYPES"]) == types, path
        numbers = [d["id"] for d in docs if isinstance(d["id"], int)]
        assert rows["id"]["MIN"] == f"{min(numbers):g}" and rows["id"]["MAX"] == f"{max(numbers):g}"
        summary = str(view.query_one("#tail-profile-summary").render())
        assert summary.startswith(f"{len(docs)} records")

        await pilot.press("P")
        await pilot.pause(0.1)
        assert not view.profiling and view.ring.display and view.ring.has_focus


async def test_the_profile_follows_the_where_box_and_new_records():
    docs = documents(60)
    app = TailApp(capacity=500)
    async with app.run_test(size=(140, 40)) as pilot:
        view = app.query_one(TailView)
        view.add_batch(TailBatch(SHARD, records_for(SHARD, 0, 60, payload=lambda i: json.dumps(docs[i]).encode()), 0))
        await pilot.pause(0.3)
        await pilot.press("P")
        view.apply_where("data.user != null")
        await pilot.pause(0.1)
        with_user = [d for d in docs if "user" in d]
        assert table_rows(view)["user"]["PRESENT"] == f"{len(with_user)} (100%)"

        view.apply_where("")
        more = [{"id": 1000 + n, "user": {"email": "x@example.com"}} for n in range(5)]
        view.add_batch(
            TailBatch(SHARD, records_for(SHARD, 60, 5, payload=lambda i: json.dumps(more[i - 60]).encode()), 0)
        )
        await pilot.pause(1.3)  # the profile is made again at most once a second while records come
        assert table_rows(view)["user"]["PRESENT"].startswith(f"{len(with_user) + 5} (")


async def test_a_masked_tab_profiles_what_it_shows_and_no_address_appears():
    mask = masker(["data.user.email"])
    docs = documents(40)
    app = TailApp(mask=mask)
    async with app.run_test(size=(140, 40)) as pilot:
        view = app.query_one(TailView)
        read = records_for(SHARD, 0, 40, payload=lambda i: json.dumps(docs[i]).encode())
        view.add_batch(TailBatch(SHARD, [mask(record) for record in read], 0))
        await pilot.pause(0.3)
        await pilot.press("P")
        await pilot.pause(0.1)
        shown = json.dumps(table_rows(view)) + str(view.query_one("#tail-profile-summary").render())
        assert "@example.com" not in shown and "<masked" in shown
