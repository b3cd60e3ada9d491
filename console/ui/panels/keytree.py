"""Key-tree balance: from the explicit hash keys already handed out, how balanced the tree of
positions is per level, and the next keys to hand out that keep every future split even."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Input, Static, TextArea

from console.bounds import read_text_lines, whole_number
from console.errors import BadInput
from console.keyspace.hashkeys import parse_typed_hash_key
from console.keyspace.keytree.balance import LevelFill
from console.keyspace.keytree.tree import BalanceReport, KeyTree
from console.words import counted

NEXT_KEYS_DEFAULT = 8
MAX_NEXT_KEYS = 256


def parse_keys(text: str) -> tuple[list[int], list[str]]:
    """Hash keys, one per line, decimal or 0x hex as the split prompt takes them (blank lines and #
    comments skipped); returns keys and problems."""
    keys, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            keys.append(parse_typed_hash_key(line))
        except BadInput as error:
            problems.append(f"line {number}: {error.message}")
    return keys, problems


def levels_in_use(report: BalanceReport) -> tuple[list[LevelFill], int]:
    """The depths that hold keys, plus the next depth to fill (the shallowest that is not full: where
    the next balanced keys go), as `kconsole keytree` leaves empty depths out; and that next depth."""
    levels = list(report.levels)
    next_depth = next((level.depth for level in levels if level.fill < 1), len(levels))
    shown = [level for level in levels if level.keys or level.depth == next_depth]
    if next_depth == len(levels) and next_depth <= 128:
        shown.append(LevelFill(next_depth, 0, 1 << next_depth if next_depth < 128 else 1))
    return shown, next_depth


def balance_table(report: BalanceReport) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, expand=False)
    table.add_column("Depth", justify="right")
    table.add_column("Keys", justify="right")
    table.add_column("Slots", justify="right")  # positions the depth can hold
    table.add_column("Filled", justify="right")
    table.add_column("", no_wrap=True)
    levels, next_depth = levels_in_use(report)
    for level in levels:
        bar_cells = 10  # the table fits beside the next keys on an 80-column terminal
        filled = round(min(1.0, level.fill) * bar_cells)
        bar = Text("█" * filled + "░" * (bar_cells - filled), style="green" if level.fill >= 1 else "yellow")
        if level.depth == next_depth:
            bar.append(" ←", style="bold")
        # A deep level holds 2^depth positions: written as such, exactly, rather than 39 digits.
        slots = str(level.capacity) if level.capacity < 10**5 else f"2^{level.capacity.bit_length() - 1}"
        table.add_row(str(level.depth), str(level.keys), slots, f"{level.fill * 100:.1f}%", bar)
    return table


class KeyTreePanel(Vertical):
    BINDINGS = [Binding("ctrl+l", "load_file", "Load keys file", id="keytree.load")]
    auto_notice: reactive[str | None] = reactive(None, init=False)  # the app's (data_bind), from each poll

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: BalanceReport | None = None
        self.next_keys: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static("Explicit hash keys in use, one per line · enter to type, esc leaves", id="keytree-help")
        notice = Static("", id="keytree-auto")
        notice.display = False
        yield notice
        yield TextArea(id="keytree-input", soft_wrap=False)
        with Horizontal(id="keytree-controls"):
            yield Input(placeholder="file of keys (ctrl+l loads)", id="keytree-file")
            yield Input(
                str(NEXT_KEYS_DEFAULT),
                placeholder="how many next keys",
                id="keytree-count",
                type="integer",
                max_length=4,
            )
        # The next keys sit in a column of their own, beside the balance: always in view.
        with Horizontal(id="keytree-output"):
            with VerticalScroll(id="keytree-balance"):
                yield Static(id="keytree-summary")
                yield Static(id="keytree-levels")
            with VerticalScroll(id="keytree-next-box"):
                yield Static(id="keytree-next")

    def on_mount(self) -> None:
        self.watch_auto_notice(self.auto_notice)
        self.recompute()

    def watch_auto_notice(self, notice: str | None) -> None:
        """An AUTO stream ignores explicit hash keys: the notice says so above the tree (None hides it)."""
        if not self.is_mounted:
            return
        box = self.query_one("#keytree-auto", Static)
        box.update(Text(notice or "", style="bold yellow"))
        box.display = notice is not None

    def set_keys(self, text: str) -> None:
        self.query_one("#keytree-input", TextArea).load_text(text)
        self.recompute()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self.recompute()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "keytree-count":
            event.stop()
            self.recompute()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "keytree-file":
            event.stop()
            self.action_load_file()

    def action_load_file(self) -> None:
        raw = self.query_one("#keytree-file", Input).value.strip()
        if not raw:
            self.notify("type the path of a file of hash keys first", severity="warning")
            return
        path = Path(raw).expanduser()
        try:  # within the command line's bounds: /dev/zero, a FIFO or a directory is one line at once
            lines = read_text_lines(str(path), what="keys file")
        except BadInput as error:
            self.notify(error.message, severity="error")
            return
        self.set_keys("\n".join(lines) + "\n")
        self.notify(f"loaded {path}")

    def _wanted_count(self) -> tuple[int, str | None]:
        """How many next keys the box asks for (empty: the default), or none and why not."""
        raw = self.query_one("#keytree-count", Input).value.strip()
        if not raw:
            return NEXT_KEYS_DEFAULT, None
        try:
            return whole_number(raw, what="the count of next keys", low=0, high=MAX_NEXT_KEYS), None
        except BadInput as error:
            return 0, error.message

    def recompute(self) -> None:
        keys, problems = parse_keys(self.query_one("#keytree-input", TextArea).text)
        tree = KeyTree.rehydrate(keys)
        self.report = tree.balance()
        wanted, count_problem = self._wanted_count()
        if count_problem is not None:
            problems.insert(0, count_problem)
        try:
            self.next_keys = tree.next_keys(wanted)
        except BadInput as error:
            self.next_keys = []
            problems.append(error.message)
        summary = Text()
        summary.append(counted(self.report.total_keys, "distinct key"), style="bold")
        if not self.report.total_keys and not problems:
            summary.append(
                " · none typed yet: paste the explicit hash keys already handed out (or load a file"
                " with ctrl+l); with none, the next keys below start the balanced tree",
                style="italic",
            )
        worst = self.report.worst
        if worst is not None:
            summary.append(f" · worst imbalance at depth {worst.depth}: {worst.left} left vs {worst.right} right")
        summary.append("\nDepths in use; ← the next to fill", style="dim")
        for problem in problems[:5]:
            summary.append(f"\n{problem}", style="red")
        if len(problems) > 5:
            summary.append(f"\n… and {len(problems) - 5} more problems", style="red")
        self.query_one("#keytree-summary", Static).update(summary)
        self.query_one("#keytree-levels", Static).update(balance_table(self.report))
        next_text = Text("Next balanced keys:\n", style="bold")
        if count_problem is not None:
            next_text.append(f"(give a count from 0 to {MAX_NEXT_KEYS} above)", style="red")
        else:
            next_text.append("\n".join(str(key) for key in self.next_keys) or "(none)")
        self.query_one("#keytree-next", Static).update(next_text)
