"""STS, for who the caller is (the action log names the identity that changed a stream)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from console.backend.calls import CallPath
from console.errors import ConsoleError


class STSBackend:
    """GetCallerIdentity through the backend's STS client (opened on first use)."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def caller_identity(self) -> str | None:
        """The caller's ARN, or None when STS cannot tell (no STS on a custom endpoint, say)."""
        try:
            sts = await self._client("sts")
            return (await self._calls.call(sts, "GetCallerIdentity", service="sts")).get("Arn")
        except ConsoleError:
            return None
