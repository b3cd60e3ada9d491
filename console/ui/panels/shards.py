"""The Shards tab: the filter box (`/`), the shard table and the selected shard's detail.

The app feeds it (`show_detail`, the table's rows, heat and lag) and listens to the table's
`ShardTable.Highlighted`; the panel follows the app's `stream` and clears itself when another one
opens. `c` (on any tab) copies the selected shard's hash keys from here. The filter works inside the
panel: typing filters the table, enter keeps the filter and returns to the table, escape clears it.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Input, Static

from console.topology.model import Shard
from console.ui.format import format_hash_key, format_share, short_shard_id
from console.ui.widgets.shard_table import ShardTable


class ShardsPanel(Vertical):
    stream: reactive[str | None] = reactive(None, init=False)  # the app's (data_bind)

    def __init__(self, *, key_format: str = "decimal", id: str | None = None) -> None:
        super().__init__(id=id)
        self.key_format = key_format

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: id, #n, open/closed, parent (enter keeps, escape clears)", id="table-filter")
        yield ShardTable(key_format=self.key_format, id="shard-table")
        yield Static("", id="shard-detail")

    @property
    def table(self) -> ShardTable:
        return self.query_one(ShardTable)

    @property
    def filter_box(self) -> Input:
        return self.query_one("#table-filter", Input)

    def watch_stream(self, old: str | None, new: str | None) -> None:
        """Another stream: nothing of the previous one stays on screen as if it were this one."""
        if new != old:
            self.table.apply([])
            self.table.set_heat({})
            self.table.set_lag({})
            self.show_detail(None)

    def open_filter(self) -> None:
        self.filter_box.add_class("-visible")
        self.call_after_refresh(self.filter_box.focus)  # after a tab switch has focused the table

    def copy_keys(self, shard_id: str | None) -> None:
        """The selected shard's hash keys to the clipboard (`c`, on any tab)."""
        shard = self.table.shard(shard_id) if shard_id else None
        if shard is None:
            self.notify("select a shard first", severity="warning")
            return
        self.app.copy_to_clipboard(f"{shard.starting_hash_key} {shard.ending_hash_key}")
        self.notify(f"copied the hash keys of {short_shard_id(shard.shard_id)} (start end)", timeout=3)

    def show_detail(self, shard: Shard | None) -> None:
        detail = self.query_one("#shard-detail", Static)
        if shard is None:
            detail.update("", layout=False)
            return
        parents = " ".join(short_shard_id(p) for p in shard.parents) or "none"
        detail.update(
            f"[b]{shard.shard_id}[/b] {'open' if shard.is_open else 'closed'} · {format_share(shard.share)}"
            f" · parents {parents} · [dim]c copies keys[/dim]\n"
            f"start {format_hash_key(shard.starting_hash_key, self.key_format)}\n"
            f"end   {format_hash_key(shard.ending_hash_key, self.key_format)}",
            layout=False,  # fixed height: a layout pass would repaint the whole screen
        )

    @on(Input.Changed, "#table-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.table.set_filter(event.value)

    @on(Input.Submitted, "#table-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.remove_class("-visible")
        self.table.focus()

    def on_key(self, event: events.Key) -> None:
        box = self.filter_box
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.remove_class("-visible")
            self.table.focus()
            event.stop()
