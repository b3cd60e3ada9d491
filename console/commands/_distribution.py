"""What the key-space commands need to know about a stream's record distribution: whether Kinesis
follows the keys at all (AUTO ignores them) and, from the action log, since when it has not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.lifecycle.settings import switched_to_auto_at

if TYPE_CHECKING:
    from console.backend.protocol import BackendConnection


async def distribution_since(kinesis: BackendConnection, stream: str) -> str | None:
    from console.reshard.actionlog import ActionLog

    return switched_to_auto_at(ActionLog.default().entries(), stream, kinesis.label)
