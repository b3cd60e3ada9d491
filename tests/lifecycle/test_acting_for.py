"""Who a change is logged as: the caller's identity, or the agent a face acts for (console.acting)."""

from __future__ import annotations

from console.acting import acting_for
from console.lifecycle.actions import actor


async def test_a_change_made_for_an_agent_names_the_agent(kinesis):
    own = await actor(kinesis)
    token = acting_for.set("mcp:assistant")
    try:
        assert await actor(kinesis) == "mcp:assistant"
    finally:
        acting_for.reset(token)
    assert await actor(kinesis) == own and own != "mcp:assistant"
