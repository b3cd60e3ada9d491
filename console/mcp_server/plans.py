"""Plans an agent made and may apply: each under a random id, for PLAN_LIFETIME_SECONDS, taken once."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

PLAN_LIFETIME_SECONDS = 600.0
MAX_PLANS = 1000  # the oldest go first: an agent looping on plan_* cannot grow the server without bound


@dataclass(frozen=True)
class Plan:
    action: str
    stream: str
    options: list[str]
    document: dict[str, Any]
    made: float = field(default_factory=time.monotonic)


class PlanBook:
    def __init__(self, lifetime: float = PLAN_LIFETIME_SECONDS) -> None:
        self.lifetime = lifetime
        self._plans: dict[str, Plan] = {}
        self._lock = threading.Lock()

    def add(self, action: str, stream: str, options: list[str], document: dict[str, Any]) -> str:
        plan_id = secrets.token_hex(8)
        with self._lock:
            self._plans[plan_id] = Plan(action, stream, list(options), document)
            while len(self._plans) > MAX_PLANS:
                del self._plans[next(iter(self._plans))]
        return plan_id

    def take(self, plan_id: str, stream: str) -> Plan:
        """The plan, removed so it applies at most once; refused (ToolError, the plan kept) when the
        id is unknown or expired or the stream named is not the plan's."""
        with self._lock:
            plan = self._plans.get(plan_id)
            if plan is None:
                raise ToolError(
                    f"unknown_plan: no plan {plan_id!r}; make one with plan_split, plan_merge or plan_scale"
                )
            if time.monotonic() - plan.made > self.lifetime:
                del self._plans[plan_id]
                raise ToolError(f"expired_plan: plan {plan_id} expired after {self.lifetime:.0f} s; make a new one")
            if stream != plan.stream:
                raise ToolError(
                    f"wrong_stream: plan {plan_id} changes {plan.stream!r}; type that name to apply it (got {stream!r})"
                )
            return self._plans.pop(plan_id)
