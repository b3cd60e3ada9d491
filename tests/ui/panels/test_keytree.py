"""The Key tree tab reads hash keys as the split prompt does: decimal, or hex with 0x."""

import os
import time

import pytest
from textual.app import App
from textual.widgets import Input, TextArea

from console.ui.panels.keytree import KeyTreePanel, parse_keys


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


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", ["/dev/zero", "/dev/urandom", "fifo", "directory"])
async def test_a_keys_file_that_is_no_text_file_is_one_line_at_once(kind, tmp_path):
    """The file box reads within the same bounds as the command line: /dev/zero is one line, not an OOM."""
    path = kind
    if kind == "fifo":
        path = str(tmp_path / "keys.fifo")
        os.mkfifo(path)
    elif kind == "directory":
        path = str(tmp_path)
    app = PanelApp()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.query_one(KeyTreePanel)
        panel.query_one("#keytree-file", Input).value = path
        started = time.monotonic()
        panel.action_load_file()
        await pilot.pause()
        assert time.monotonic() - started < 2
        assert len(app.said) == 1 and "\n" not in app.said[0] and repr(path) in app.said[0], app.said
        assert panel.query_one("#keytree-input", TextArea).text == ""


class PanelApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.said: list[str] = []

    def compose(self):
        yield KeyTreePanel(id="keytree-panel")

    def notify(self, message, **_options) -> None:
        self.said.append(message)


async def test_a_keys_file_is_loaded_into_the_box(tmp_path):
    path = tmp_path / "keys.txt"
    path.write_text("0x10\n# a comment\n170141183460469231731687303715884105728\n")
    app = PanelApp()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.query_one(KeyTreePanel)
        panel.query_one("#keytree-file", Input).value = str(path)
        panel.action_load_file()
        await pilot.pause()
        assert app.said == [f"loaded {path}"]
        assert panel.query_one("#keytree-input", TextArea).text.splitlines() == [
            "0x10",
            "# a comment",
            "170141183460469231731687303715884105728",
        ]


@pytest.mark.parametrize("typed", ["-5", "9999"])
async def test_a_count_out_of_range_says_so(typed):
    """A negative or too large count of next keys is named in red, never a silent "(none)"."""
    from tests.ui.test_ui_console import wait_until
    from tests.ui.test_ui_interaction import static_app

    app = static_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.refreshed)
        await pilot.press("4")
        await pilot.pause()
        app.query_one("#keytree-count", Input).value = typed
        await pilot.pause()
        summary = str(app.query_one("#keytree-summary").render())
        shown = str(app.query_one("#keytree-next").render())
        assert "next keys must be a whole number from 0 to 256" in summary and repr(typed) in summary, summary
        assert "(none)" not in shown, shown
