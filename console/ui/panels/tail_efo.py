"""The Tail tab reading with enhanced fan-out: SubscribeToShard as the consumer named in the box, or as a
temporary consumer registered once the operator confirmed its price (as `kconsole tail --efo` does) and
deregistered when the reading ends or the app exits, whichever comes first; both wait for it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from datetime import UTC, datetime
from typing import Any

from textual.widget import Widget

from console.backend.protocol import ConsoleBackend
from console.errors import BadInput, ConsoleError
from console.read.efo import (
    Subscribe,
    named_consumer_arn,
    temporary_consumer_name,
    temporary_consumer_preview,
    until_active,
)


class EfoSubscriptions:
    """Held by the view (`view` says what happens through its notifications and confirms on its app)."""

    def __init__(self, view: Widget) -> None:
        self.view = view
        # The temporary consumer registered (source, stream, name) and its deregistration once begun.
        self._temporary: tuple[ConsoleBackend, str, str] | None = None
        self._releasing: asyncio.Task | None = None

    async def subscriptions(self, source: ConsoleBackend, stream: str, consumer: str) -> Subscribe:
        """SubscribeToShard as `consumer` (checked first: one line on the tab), or, with it empty, as a
        temporary consumer registered once the operator confirmed its price."""
        transport = getattr(source, "subscriptions", lambda: None)()
        if transport is None:
            raise BadInput("this source cannot read with enhanced fan-out: read with GetRecords")
        await transport.check()  # an endpoint without HTTP/2 is one line before anything is read
        if consumer:
            consumer_arn = await named_consumer_arn(source, stream, consumer)
        else:
            consumer_arn = await self._register_temporary(source, stream)
        return lambda shard_id, position: transport.subscribe(consumer_arn, shard_id, position)

    async def _register_temporary(self, source: ConsoleBackend, stream: str) -> str:
        """Prepared and run by console.lifecycle.actions as `kconsole tail --efo` does, after the price."""
        from console.lifecycle import actions
        from console.reshard.actionlog import ActionLog
        from console.ui.screens.confirm import ConfirmByNameScreen

        name = temporary_consumer_name(socket.gethostname(), os.getpid(), datetime.now(UTC))
        shards = sum(1 for shard in await source.all_shards(stream) if shard.is_open)
        plan = await actions.prepare_register_consumer(source, stream, name)
        preview = f"{temporary_consumer_preview(name, stream, shards)}\n{plan.render()}"
        if not await self.view.app.push_screen_wait(ConfirmByNameScreen(stream, preview)):
            raise BadInput("EFO: cancelled, no consumer was registered (or type a registered consumer's name)")
        self._temporary = (source, stream, name)  # from here on it is deregistered, whatever happens
        await actions.run(source, plan, action_log=ActionLog.default(), progress=self._change_progress)
        kinesis: Any = source  # the consumer calls are the full backend's, not the views' protocol
        stream_arn = (await kinesis.describe_stream_summary(stream)).arn
        await until_active(kinesis, stream_arn, name)
        self.view.notify(
            f"registered the temporary consumer {name}; deregistered when the tab stops reading", title="tail"
        )
        return (await kinesis.describe_stream_consumer(stream_arn, name))["ConsumerARN"]

    async def release(self) -> None:
        """Deregister the temporary consumer, once: shielded, so the cancel that stops a reading (or the
        app's exit) does not cut the call short."""
        if self._temporary is not None:
            source, stream, name = self._temporary
            self._temporary = None
            self._releasing = asyncio.create_task(self._deregister_temporary(source, stream, name))
        if self._releasing is not None and not self._releasing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._releasing)

    async def released(self) -> None:
        """Release, and wait for the deregistration to end (the view's unmount)."""
        await self.release()
        if self._releasing is not None:
            await self._releasing

    async def _deregister_temporary(self, source: ConsoleBackend, stream: str, name: str) -> None:
        from console.lifecycle import actions
        from console.reshard.actionlog import ActionLog

        try:
            plan = await actions.prepare_deregister_consumer(source, stream, name)
            await actions.run(source, plan, action_log=ActionLog.default(), progress=self._change_progress)
        except ConsoleError as error:
            self.view.notify(f"could not deregister the temporary consumer {name}: {error.message}", severity="error")
            return
        self.view.notify(f"deregistered the temporary consumer {name}", title="tail")

    def _change_progress(self, text: str) -> None:
        if not text.startswith("calling"):
            self.view.notify(text, title="tail", timeout=5)
