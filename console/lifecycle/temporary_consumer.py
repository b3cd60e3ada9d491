"""The temporary enhanced fan-out consumer a reading registers when --efo names no consumer (`kconsole
tail/copy/heat/put/produce --efo`): prepared once, for every command that reads with one, and run through
console.lifecycle.actions like `consumers register/deregister` (intent logged before each call, a lost
reply settled by reading back).

Prepared: its name (this host, this process, this moment), its price for the stream's open shards, the
register plan, and the temporary consumers an earlier kconsole of this host left registered when it was
killed before its exit could deregister them (whether their process still runs is asked of the caller,
`is_running`: the domain does no I/O of its own), each with its deregister plan, run first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.lifecycle import actions
from console.lifecycle.plans import LifecyclePlan
from console.read.efo import left_over_consumers, temporary_consumer_name, temporary_consumer_preview, until_active
from console.words import counted


@dataclass(frozen=True)
class TemporaryConsumer:
    stream: str
    name: str
    price: str  # what registering it does and what AWS charges for it
    register: LifecyclePlan
    left_over: tuple[str, ...] = ()  # this host's earlier temporary consumers whose kconsole is gone
    removals: tuple[LifecyclePlan, ...] = ()  # one deregister plan each, run before the register plan

    def preview(self) -> str:
        """Everything the operator confirms: the left-overs deregistered first, the price, the plan."""
        return f"{self.what_it_costs()}\n{self.register.render()}"

    def what_it_costs(self) -> str:
        """The left-overs deregistered first (their plans), then the temporary consumer's price."""
        left = ""
        if self.left_over:
            left = (
                f"Left over from a kconsole of this host that is no longer running (killed before its exit "
                f"could deregister them), {counted(len(self.left_over), 'temporary consumer')} still registered "
                f"and billed: {', '.join(self.left_over)}; they are deregistered first.\n"
                + "".join(f"{removal.render()}\n" for removal in self.removals)
            )
        return f"{left}{self.price}"

    def consequence(self) -> str:
        """The change in one line, as a confirmation names it."""
        removals = f"deregister {counted(len(self.left_over), 'left-over consumer')} and " if self.left_over else ""
        return f"{removals}register the temporary consumer {self.name}"


async def prepare(
    backend: Any,
    stream: str,
    *,
    host: str,
    pid: int,
    now: datetime,
    is_running: Callable[[int], bool],
    reading: str,
) -> TemporaryConsumer:
    """The temporary consumer `reading` (e.g. "tail": what it lasts for) would register on `stream`."""
    summary = await backend.describe_stream_summary(stream)
    consumers = await backend.list_stream_consumers(summary.arn)
    left_over = left_over_consumers((c.name for c in consumers if not c.deleting), host, is_running)
    removals = [await actions.prepare_deregister_consumer(backend, stream, old) for old in left_over]
    name = temporary_consumer_name(host, pid, now)
    shards = sum(1 for shard in await backend.all_shards(stream) if shard.is_open)
    return TemporaryConsumer(
        stream=stream,
        name=name,
        price=temporary_consumer_preview(name, stream, shards, reading),
        register=await actions.prepare_register_consumer(backend, stream, name),
        left_over=tuple(left_over),
        removals=tuple(removals),
    )


async def run(
    backend: Any,
    consumer: TemporaryConsumer,
    *,
    action_log: Any,
    progress: Callable[[str], None],
    removed: Callable[[str], None] = lambda _name: None,
    registered: Callable[[], None] = lambda: None,
) -> str:
    """The left-overs deregistered (`removed` told each name), the consumer registered (`registered` told
    at once, so its release is arranged before anything else can fail) and waited for until ACTIVE; its ARN."""
    for old, removal in zip(consumer.left_over, consumer.removals, strict=True):
        await actions.run(backend, removal, action_log=action_log, progress=progress)
        removed(old)
    made = await actions.run(backend, consumer.register, action_log=action_log, progress=progress)
    registered()
    summary = await backend.describe_stream_summary(consumer.stream)
    arn = (made[0].answer or await backend.describe_stream_consumer(summary.arn, consumer.name)).arn
    await until_active(backend, summary.arn, consumer.name)
    return str(arn)


async def release(backend: Any, stream: str, name: str, *, action_log: Any, progress: Callable[[str], None]) -> None:
    """The temporary consumer deregistered, prepared and run as `consumers deregister` does it."""
    plan = await actions.prepare_deregister_consumer(backend, stream, name)
    await actions.run(backend, plan, action_log=action_log, progress=progress)
