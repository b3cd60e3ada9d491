"""What a shard poll shows: one `StreamView` written into every widget that shows the whole stream.

The app runs the poll (console.ui.app); a `StreamDisplay` takes each result and writes it, in steps
that yield to the UI loop on a big stream, into the header, the shard table, the ribbon, the lineage
tree, the detail line and the key-space tabs (the Placement index and the AUTO notice), and tells
the Heat and Consumers tabs what the poll learned (the summary, the listing). It keeps the little
state that writing needs: the last tiling problem said, and since when the stream is AUTO.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.message import Message

from console.topology.model import StreamSummary, auto_notice
from console.ui.source import BIG_STREAM, StreamView
from console.ui.startup import settle_heap


class StreamRefreshed(Message):
    """A poll succeeded and its result is on screen."""

    def __init__(self, view: StreamView) -> None:
        super().__init__()
        self.view = view


class PollFailed(Message):
    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class StreamDisplay:
    def __init__(self, app: Any) -> None:  # the KConsoleApp: its widgets, selection and poll state
        self.app = app
        self._last_tiling_problem: str | None = None
        self._auto_since: tuple[str, str | None] | None = None  # (stream, since when) of the last AUTO notice

    async def shards(self, view: StreamView) -> None:
        """A fresh listing: the header, then the table, then the selection and the ribbon. Each step
        is a few ms even at 10k shards, but together they would hold the UI loop for tens of ms, so
        the loop gets a turn between them."""
        self.header(view)
        await asyncio.sleep(0)
        await self.app.table.apply_async(view.shards)
        await asyncio.sleep(0)
        self.selection_and_ribbon(view)

    def header(self, view: StreamView) -> None:
        """The summary: the header, the Heat tab's limits, the AUTO notice, the Consumers tab's listing."""
        app = self.app
        app.view = view
        app.header.update_state(summary=view.summary, refreshed_at=app.clock(), error=None, notice=None)
        # The hidden tabs are told now, or when first shown (console.ui.lazy_tabs).
        summary = view.summary
        app.tell("heat", "summary", lambda heat: heat.show_summary(summary))
        notice = self.auto_notice(summary)
        app.tell("placement", "auto_notice", lambda placement: placement.set_auto_notice(notice))
        app.tell("keytree", "auto_notice", lambda keytree: keytree.set_auto_notice(notice))
        app.tell(
            "consumers",
            "listing",
            lambda consumers: consumers.follow_listing(summary.name, view.shards, summary.arn or None),
        )
        app.follow_capacity(view.summary.name)

    def auto_notice(self, summary: StreamSummary) -> str | None:
        """The AUTO notice for the key-space tabs; since when, from the action log, read once per switch."""
        if not summary.auto_distribution:
            self._auto_since = None
            return None
        if self._auto_since is None or self._auto_since[0] != summary.name:
            from console.lifecycle.settings import switched_to_auto_at
            from console.reshard.actionlog import ActionLog

            since = switched_to_auto_at(ActionLog.default().entries(), summary.name, self.app.source.label)
            self._auto_since = (summary.name, since)
        return auto_notice(summary.name, self._auto_since[1])

    def selection_and_ribbon(self, view: StreamView) -> None:
        app = self.app
        if view.index is not None:
            app.ribbon.set_index(view.index, view.share_summary)
        elif not app.ribbon.open_shard_ids:
            # First load: draw the ribbon now; later polls update it from the lineage's index,
            # which is already sorted, a moment later (sorting 10k shards here would stall the UI).
            app.ribbon.set_shards(view.shards)
        if app.selected_shard_id is None or app.table.shard(app.selected_shard_id) is None:
            first = app.table.selected_shard_id or (app.table.shard_ids[0] if app.table.row_count else None)
            if first:
                app.select_shard(first)
        else:
            self.detail()

    def lineage(self, view: StreamView) -> None:
        """The lineage, once the poll has built it: the ribbon's index, Placement, the lineage tree."""
        app = self.app
        app.view = view
        if view.lineage is None:
            return
        if view.index is not None:
            app.ribbon.set_index(view.index, view.share_summary)
        index = view.index
        app.tell("placement", "index", lambda placement: placement.set_index(index))
        app.lineage_tree.show_lineage(view.lineage)
        if view.tiling_problem and (self._last_tiling_problem != view.tiling_problem):
            app.notify(view.tiling_problem, title="shard map", severity="warning")
        self._last_tiling_problem = view.tiling_problem
        if len(view.shards) > BIG_STREAM:
            settle_heap()
        app.post_message(StreamRefreshed(view))

    def detail(self) -> None:
        app = self.app
        app.shards_panel.show_detail(app.table.shard(app.selected_shard_id) if app.selected_shard_id else None)
