"""Changes to the open stream that the console's keys start: split, merge and rescale
(console.ui.reshard_flow) and the stream actions: retention, capacity mode, encryption, delete
(console.ui.screens.stream_actions).

Each asks what it needs in dialogs, previews the plan, takes the typed stream name, then calls the
backend, in a worker (one split, merge or rescale at a time; one stream action at a time). What
happens comes back to the app as messages: `ReshardActivity` (the header's activity line),
`ReshardProgressed` (the stream changed shape: poll it now) and `StreamDeleted`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.app import App

from console.backend.protocol import ConsoleBackend
from console.ui import reshard_flow
from console.ui.reshard_flow import ReshardDialogs, ReshardRequest
from console.ui.screens import stream_actions
from console.ui.screens.stream_actions import StreamActionRequest, StreamActionsScreen
from console.ui.source import StreamView


class StreamChanges:
    """Held by the app: starts each change in a worker of the app, its dialogs pushed there."""

    def __init__(self, app: App[None], source: ConsoleBackend) -> None:
        self.app = app
        self.source = source

    def _dialogs(self) -> ReshardDialogs:
        return ReshardDialogs(self.app.push_screen_wait, self.app.notify, self.app.post_message)

    def reshard(self, request: ReshardRequest) -> None:
        problem = reshard_flow.refusal(request)
        if problem:
            self.app.notify(problem, severity="warning")
            return
        self.app.run_worker(
            partial(reshard_flow.run_reshard, request, self._dialogs()),
            group="reshard",
            exclusive=True,
            exit_on_error=False,
            description="reshard",
        )

    def choose_stream_action(self, view: StreamView, read_only: Callable[[], bool]) -> None:
        """The stream actions menu (its entries greyed when read-only), then the chosen action."""

        def chosen(action: str | None) -> None:
            if action:
                request = StreamActionRequest(action, view.summary, len(view.shards), self.source)
                self.app.run_worker(
                    partial(self._stream_action, request, read_only),
                    group="stream-actions",
                    exclusive=True,
                    exit_on_error=False,
                    description=f"stream action {action}",
                )

        self.app.push_screen(StreamActionsScreen(view.summary, read_only=read_only()), chosen)

    async def _stream_action(self, request: StreamActionRequest, read_only: Callable[[], bool]) -> None:
        if read_only():  # the menu greys its entries; this guards any other way in
            self.app.notify(f"{request.action}: not available in read-only mode", severity="warning")
            return
        await stream_actions.run_action(request, self._dialogs())
