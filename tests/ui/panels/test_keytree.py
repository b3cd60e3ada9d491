"""The Key tree tab reads hash keys as the split prompt does: decimal, or hex with 0x."""

from console.ui.panels.keytree import parse_keys


def test_hex_and_decimal_keys_are_both_taken():
    keys, problems = parse_keys("0x10\n16\n# a comment\n0x80000000000000000000000000000000\n")
    assert keys == [16, 16, 2**127] and problems == []


def test_a_bad_line_is_named_by_its_number():
    keys, problems = parse_keys("1\n0xZZ\n")
    assert keys == [1] and problems == [problems[0]] and problems[0].startswith("line 2:")


async def test_one_key_typed_is_counted_as_one_key():
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("4", "enter", *"0x10")
        summary = app.query_one("#keytree-summary")
        await wait_until(pilot, lambda: "distinct" in str(summary.render()), what="the key tree's summary")
        assert str(summary.render()).startswith("1 distinct key ·"), str(summary.render())
