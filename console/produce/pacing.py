"""Token buckets that keep a producer under each shard's write limits, and back off on throttling.

A shard accepts 1,000 records/s and 1 MiB/s. Sending faster only buys ProvisionedThroughputExceeded
errors and retries, so the producer asks the pacer before putting a record in a request. When a
shard throttles anyway (other producers share it), its pace is halved and then recovers by a
tenth of the limit per second of calm; a throttled shard also gets a short cool-down, doubling while
throttles keep coming, so even an unpaced (local) producer slows down where it has to.
All times are passed in (monotonic seconds) so the logic is testable without sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHARD_RECORDS_PER_SECOND = 1000.0
SHARD_BYTES_PER_SECOND = 1024.0 * 1024.0


class TokenBucket:
    """`rate` tokens per second, holding at most `burst` (at least one request's worth)."""

    __slots__ = ("rate", "burst", "tokens", "updated")

    def __init__(self, rate: float, burst: float | None = None, now: float = 0.0) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = burst if burst is not None else rate
        self.tokens = self.burst
        self.updated = now

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
            self.updated = now

    def try_take(self, amount: float, now: float) -> bool:
        self._refill(now)
        # A single take larger than the burst would never fit; let it through when the bucket is full.
        if self.tokens >= amount or (amount > self.burst and self.tokens >= self.burst):
            self.tokens -= amount
            return True
        return False

    def wait_time(self, amount: float, now: float) -> float:
        """Seconds until `amount` tokens (capped at the burst) are available."""
        self._refill(now)
        missing = min(amount, self.burst) - self.tokens
        return max(0.0, missing / self.rate)


@dataclass
class PacingLimits:
    records_per_second: float = SHARD_RECORDS_PER_SECOND
    bytes_per_second: float = SHARD_BYTES_PER_SECOND
    enabled: bool = True  # False: no steady pace, only the cool-down after a throttle


@dataclass
class _ShardPace:
    records: TokenBucket | None
    nbytes: TokenBucket | None
    scale: float = 1.0  # fraction of the limit currently allowed (throttling lowers it)
    cool_until: float = 0.0
    cool_down: float = 0.0  # the current cool-down length; doubles on consecutive throttles
    calm_since: float = 0.0
    throttles: int = 0


@dataclass
class ShardPacer:
    """Per-shard pace. Unknown shards (None) are never paced: nothing is known about their limit."""

    limits: PacingLimits = field(default_factory=PacingLimits)
    min_scale: float = 0.1
    first_cool_down: float = 0.05
    max_cool_down: float = 2.0
    _shards: dict[str, _ShardPace] = field(default_factory=dict)

    def _pace(self, shard: str, now: float) -> _ShardPace:
        pace = self._shards.get(shard)
        if pace is None:
            records: TokenBucket | None
            nbytes: TokenBucket | None
            if self.limits.enabled:
                records = TokenBucket(self.limits.records_per_second, now=now)
                nbytes = TokenBucket(self.limits.bytes_per_second, now=now)
            else:
                records = nbytes = None
            pace = self._shards[shard] = _ShardPace(records, nbytes, calm_since=now)
        return pace

    @property
    def idle(self) -> bool:
        """Unpaced and never throttled: every try_take says yes, and succeeded has nothing to do."""
        return not self.limits.enabled and not self._shards

    def try_take(self, shard: str | None, size: int, now: float) -> bool:
        """Reserve one record of `size` bytes on `shard`; False means not now (ask `wait_time`)."""
        if shard is None:
            return True
        pace = self._shards.get(shard)
        if pace is None:
            if not self.limits.enabled:
                return True  # unpaced and never throttled: nothing to keep track of
            pace = self._pace(shard, now)
        if now < pace.cool_until:
            return False
        self._recover(pace, now)
        if pace.records is None or pace.nbytes is None:
            return True
        if not pace.records.try_take(1, now):
            return False
        if not pace.nbytes.try_take(size, now):
            pace.records.tokens += 1  # give the record token back: nothing was sent
            return False
        return True

    def take_bytes(self, shard: str | None, size: int, now: float) -> bool:
        """Reserve `size` more bytes for a record already counted (a KPL aggregate filling up)."""
        pace = self._shards.get(shard) if shard is not None else None
        if pace is None or pace.nbytes is None:
            return True
        return pace.nbytes.try_take(size, now)

    def return_bytes(self, shard: str | None, size: int) -> None:
        """Give back bytes reserved for something that was not sent after all."""
        pace = self._shards.get(shard) if shard is not None else None
        if pace is not None and pace.nbytes is not None:
            pace.nbytes.tokens += size

    def wait_time(self, shard: str | None, size: int, now: float, records: int = 1) -> float:
        """Seconds until the shard takes `records` records of `size` bytes (as many as its burst holds)."""
        if shard is None:
            return 0.0
        pace = self._pace(shard, now)
        wait = max(0.0, pace.cool_until - now)
        if pace.records is not None and pace.nbytes is not None:
            wait = max(wait, pace.records.wait_time(records, now), pace.nbytes.wait_time(size * records, now))
        return wait

    def records_per_second(self, shard: str | None) -> float | None:
        """The shard's current pace (its limit, lowered after throttles); None when it is not paced."""
        pace = self._shards.get(shard) if shard is not None else None
        return pace.records.rate if pace is not None and pace.records is not None else None

    def throttled(self, shard: str | None, now: float) -> None:
        """The shard said ProvisionedThroughputExceeded: halve its pace and cool it down briefly."""
        if shard is None:
            return
        pace = self._pace(shard, now)
        pace.throttles += 1
        if now >= pace.cool_until:  # one throttle event per cool-down, not one per failed record
            pace.cool_down = min(self.max_cool_down, pace.cool_down * 2 or self.first_cool_down)
            pace.cool_until = now + pace.cool_down
            pace.scale = max(self.min_scale, pace.scale / 2)
            self._apply_scale(pace)
        pace.calm_since = now

    def succeeded(self, shard: str | None, now: float) -> None:
        if shard is None:
            return
        pace = self._shards.get(shard)
        if pace is not None and now >= pace.cool_until:
            pace.cool_down = 0.0

    def _recover(self, pace: _ShardPace, now: float) -> None:
        """Additive recovery: a tenth of the limit back per calm second."""
        if pace.scale < 1.0 and now > pace.calm_since:
            pace.scale = min(1.0, pace.scale + 0.1 * (now - pace.calm_since))
            pace.calm_since = now
            self._apply_scale(pace)

    def _apply_scale(self, pace: _ShardPace) -> None:
        if pace.records is not None and pace.nbytes is not None:
            pace.records.rate = self.limits.records_per_second * pace.scale
            pace.nbytes.rate = self.limits.bytes_per_second * pace.scale

    def scale_of(self, shard: str) -> float:
        pace = self._shards.get(shard)
        return pace.scale if pace else 1.0

    def throttle_count(self, shard: str) -> int:
        pace = self._shards.get(shard)
        return pace.throttles if pace else 0
