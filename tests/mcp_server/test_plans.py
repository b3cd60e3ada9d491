"""The plan book: a plan applies once, only under its own stream's name, and not after it expired."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver.exceptions import ToolError

from console.mcp_server.plans import MAX_PLANS, PlanBook


def test_a_plan_is_taken_once_under_its_streams_name():
    book = PlanBook()
    plan_id = book.add("split", "orders", ["--shard", "shardId-000000000000"], {"ok": True})
    with pytest.raises(ToolError, match="wrong_stream"):
        book.take(plan_id, "order")
    assert book.take(plan_id, "orders").options == ["--shard", "shardId-000000000000"]
    with pytest.raises(ToolError, match="unknown_plan"):
        book.take(plan_id, "orders")


def test_an_expired_plan_is_refused():
    book = PlanBook(lifetime=0.0)
    plan_id = book.add("scale", "orders", ["--to", "8"], {})
    with pytest.raises(ToolError, match="expired_plan"):
        book.take(plan_id, "orders")


def test_the_book_keeps_at_most_its_bound_the_oldest_go_first():
    book = PlanBook()
    first = book.add("scale", "orders", ["--to", "2"], {})
    for _ in range(MAX_PLANS):
        book.add("scale", "orders", ["--to", "2"], {})
    with pytest.raises(ToolError, match="unknown_plan"):
        book.take(first, "orders")
