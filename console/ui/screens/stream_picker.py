"""Shown when the console starts without --stream (or on `p`): the backend's streams, pick one."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from console.topology.model import StreamSummary
from console.ui.source import describe_failure


def option_text(summary: StreamSummary) -> str:
    return (f"{summary.name}  ·  {summary.status}  ·  {summary.mode}  ·  "
            f"{summary.open_shard_count} open shard{'s' if summary.open_shard_count != 1 else ''}")


class StreamPickerScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel"),
        Binding("r", "reload", "Reload", id="picker.reload"),
    ]

    def __init__(self, source, *, current: str | None = None, timeout: float = 15.0) -> None:
        super().__init__()
        self._source = source
        self._current = current
        self._timeout = timeout
        self.streams: list[StreamSummary] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Static("Open a stream", id="picker-title")
            yield Static("loading streams…", id="picker-status")
            yield OptionList(id="picker-list")
            yield Static("enter opens · r reloads · escape cancels", id="picker-help")

    def on_mount(self) -> None:
        self.action_reload()

    @work(exclusive=True, group="picker", exit_on_error=False)
    async def action_reload(self) -> None:
        import asyncio

        status = self.query_one("#picker-status", Static)
        status.update("loading streams…")
        try:
            streams = await asyncio.wait_for(self._source.list_streams(), self._timeout)
        except Exception as error:  # shown, never raised: the user can retry with r
            status.update(f"cannot list streams: {describe_failure(error, self._timeout)}")
            return
        self.streams = sorted(streams, key=lambda s: s.name)
        options = self.query_one("#picker-list", OptionList)
        options.clear_options()
        options.add_options([Option(option_text(s), id=s.name) for s in self.streams])
        if not self.streams:
            status.update("this backend has no streams; create one: kconsole stream create NAME (plus this "
                          "console's --endpoint-url), or kconsole --local for a demo stream")
            return
        status.update(f"{len(self.streams)} stream{'s' if len(self.streams) != 1 else ''}")
        names = [s.name for s in self.streams]
        options.highlighted = names.index(self._current) if self._current in names else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
