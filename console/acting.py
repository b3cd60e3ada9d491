"""On whose behalf a change is made, when it is not the person at the terminal.

A face that acts for someone else (the MCP server acts for an AI client) sets `acting_for` around the
call; the action log then records that name as `who` instead of the caller's AWS identity, so a
reader of the log sees which agent asked for the change."""

from __future__ import annotations

import contextvars

acting_for: contextvars.ContextVar[str | None] = contextvars.ContextVar("acting_for", default=None)
