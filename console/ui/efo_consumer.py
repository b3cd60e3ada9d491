"""A tab's enhanced fan-out reading: the consumer it reads as, the one the operator named or a temporary
one registered once they confirmed its price, and that temporary consumer's deregistration.

What the Tail and Heat tabs share (`kconsole tail/heat --efo` do the same for the CLI): the named
consumer is checked first (one line on the tab), a temporary one is prepared and run by
console.lifecycle.temporary_consumer after a ConfirmByNameScreen states its price, and it is deregistered once,
when the reading ends or the app exits, whichever comes first (shielded, so the cancel that stops a
reading does not cut the call short; the tab's unmount waits for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from datetime import UTC, datetime

from textual.widget import Widget

from console.backend.protocol import ConsoleBackend
from console.errors import BadInput, ConsoleError
from console.processes import is_running
from console.read.efo import Subscribe, named_consumer_arn


class EfoConsumer:
    """`subscribe = await efo.subscriptions(backend, stream, name)`, then `await efo.release()` when the
    reading ends and `await efo.closed()` on the tab's unmount."""

    def __init__(self, tab: Widget, title: str) -> None:
        self.tab = tab
        self.title = title  # the tab's name in notifications, and what a temporary consumer lasts for
        # The temporary consumer registered (backend, stream, name) and its deregistration once begun.
        self._temporary: tuple[ConsoleBackend, str, str] | None = None
        self._releasing: asyncio.Task[None] | None = None

    async def subscriptions(self, backend: ConsoleBackend, stream: str, name: str) -> Subscribe:
        """SubscribeToShard as the consumer `name` (checked first), or, with no name, as a temporary consumer
        registered once the operator confirmed its price."""
        transport = getattr(backend, "subscriptions", lambda: None)()
        if transport is None:
            raise BadInput("this source cannot read with enhanced fan-out: read with GetRecords")
        await transport.check()  # an endpoint without HTTP/2 is one line before anything is read
        if name:
            consumer_arn = await named_consumer_arn(backend, stream, name)
        else:
            consumer_arn = await self._register_temporary(backend, stream)
        return lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position)

    async def _register_temporary(self, backend: ConsoleBackend, stream: str) -> str:
        """Prepared and run by console.lifecycle.temporary_consumer as `kconsole tail --efo` does it, once
        the operator confirmed its price (and the deregistration of this host's left-overs, if any)."""
        from console.lifecycle import temporary_consumer
        from console.reshard.actionlog import ActionLog
        from console.ui.screens.confirm import ConfirmByNameScreen

        consumer = await temporary_consumer.prepare(
            backend,
            stream,
            host=socket.gethostname(),
            pid=os.getpid(),
            now=datetime.now(UTC),
            is_running=is_running,
            reading="the tab's reading",
        )
        if not await self.tab.app.push_screen_wait(ConfirmByNameScreen(stream, consumer.preview())):
            raise BadInput("EFO: cancelled, no consumer was registered (or type a registered consumer's name)")

        def registered() -> None:  # from here on it is deregistered, whatever happens
            self._temporary = (backend, stream, consumer.name)

        consumer_arn = await temporary_consumer.run(
            backend,
            consumer,
            action_log=ActionLog.default(),
            progress=self._change_progress,
            removed=lambda old: self.tab.notify(
                f"deregistered the left-over temporary consumer {old}", title=self.title
            ),
            registered=registered,
        )
        self.tab.notify(
            f"registered the temporary consumer {consumer.name}; deregistered when the tab stops reading",
            title=self.title,
        )
        return consumer_arn

    async def release(self) -> None:
        """Deregister the temporary consumer, once: shielded, so the cancel that stops a reading (or the
        app's exit) does not cut the call short."""
        if self._temporary is not None:
            backend, stream, name = self._temporary
            self._temporary = None
            self._releasing = asyncio.create_task(self._deregister(backend, stream, name))
        if self._releasing is not None and not self._releasing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._releasing)

    async def closed(self) -> None:
        """The tab is going: the temporary consumer deregistered, and that call waited for."""
        await self.release()
        if self._releasing is not None:
            await self._releasing

    async def _deregister(self, backend: ConsoleBackend, stream: str, name: str) -> None:
        from console.lifecycle import temporary_consumer
        from console.reshard.actionlog import ActionLog

        try:
            await temporary_consumer.release(
                backend, stream, name, action_log=ActionLog.default(), progress=self._change_progress
            )
        except ConsoleError as error:
            self.tab.notify(f"could not deregister the temporary consumer {name}: {error.message}", severity="error")
            return
        self.tab.notify(f"deregistered the temporary consumer {name}", title=self.title)

    def _change_progress(self, text: str) -> None:
        if not text.startswith("calling"):
            self.tab.notify(text, title=self.title, timeout=5)
