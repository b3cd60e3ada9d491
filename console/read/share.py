"""kconsole's own share of a shard's read budget: what its GetRecords calls cost, and how fast to make them.

Every shard allows 5 GetRecords calls a second and 2 MiB a second, shared by every reader of the
stream: kconsole polling a shard takes from the production consumers' budget. `ReadShare` counts
kconsole's own calls and bytes per shard over a sliding window (`rates`), and paces the next call on a
shard (`wait`) so kconsole stays within `share` of each limit: with the default 0.2, one call a
second and 0.4 MiB a second per shard, which leaves the production readers 80% (four calls a second).

When a call of kconsole's is throttled, or the stream's ReadProvisionedThroughputExceeded rises while
it polls, the readers are short of budget: the pace halves (down to MIN_FACTOR of the share), and
recovers by RECOVERY_STEP every RECOVERY_SECONDS without a throttle. `backing_off` says so, for the
CLI and the console to offer enhanced fan-out (which has its own 2 MiB/s per consumer): the summary's
`offer` names the way to it there (--efo, or a tab's key).

`share=None` is unbounded (the embedded server and loopback endpoints have no production readers to
leave budget to): nothing is paced, and calls and bytes are still counted. No I/O: the clock is injected.
"""

from __future__ import annotations

import ipaddress
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from console.errors import BadInput
from console.words import plain_number

SHARD_CALLS_PER_SECOND = 5.0  # GetRecords per shard, every reader together (AWS limit)
SHARD_BYTES_PER_SECOND = 2 * 1024 * 1024  # read throughput per shard, every polling reader together
MIB = 1024 * 1024
DEFAULT_READ_SHARE = 0.2
WINDOW_SECONDS = 10.0  # the sliding window kconsole's own rates are measured over
MIN_FACTOR = 1 / 16  # backing off never below a sixteenth of the share
RECOVERY_SECONDS = 10.0
RECOVERY_STEP = 1.25
BACKING_OFF_NOTE = "throttled: kconsole reads less"
EFO_OFFER = "--efo reads without sharing"  # what the CLI offers; a tab names its own key
EFO_READ_COST = "kconsole reads with enhanced fan-out: nothing of the shards' shared 5 GetRecords/s and 2 MiB/s"


def parse_read_share(text: str) -> float:
    """A --read-share value: a fraction above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"--read-share takes a fraction such as 0.2; got {text!r}", code="usage") from None
    if not 0 < value <= 1:
        raise BadInput(f"--read-share must be above 0 and at most 1; got {text}", code="usage")
    return value


def share_for_endpoint(given: float | None, *, local: bool, endpoint_url: str | None) -> float | None:
    """The share given, else the default; unbounded (None) on the embedded server or a loopback endpoint,
    where no production reader shares the budget."""
    if given is not None:
        return given
    return None if local or is_loopback(endpoint_url) else DEFAULT_READ_SHARE


def is_loopback(endpoint_url: str | None) -> bool:
    host = (urlsplit(endpoint_url).hostname or "") if endpoint_url else ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ShareRates:
    """kconsole's own GetRecords rate on one shard, over the window, against the shard's budget."""

    calls_per_second: float
    bytes_per_second: float

    @property
    def mib_per_second(self) -> float:
        return self.bytes_per_second / MIB

    @property
    def fraction(self) -> float:
        """The larger of the two fractions of the shard's shared budget that kconsole takes."""
        return max(self.calls_per_second / SHARD_CALLS_PER_SECOND, self.bytes_per_second / SHARD_BYTES_PER_SECOND)


class _ShardLedger:
    __slots__ = ("calls", "last_call", "last_bytes")

    def __init__(self) -> None:
        self.calls: deque[tuple[float, int]] = deque()  # (when, bytes) within the window
        self.last_call = float("-inf")
        self.last_bytes = 0


class ReadShare:
    """`await sleep(share.wait(shard))`, call, then `share.record(shard, nbytes)` or `share.throttled(shard)`."""

    def __init__(self, share: float | None = DEFAULT_READ_SHARE, *, clock: Callable[[], float] = time.monotonic):
        if share is not None and not 0 < share <= 1:
            raise BadInput(f"read share must be above 0 and at most 1; got {plain_number(share)}")
        self.share = share
        self._clock = clock
        self._shards: dict[str, _ShardLedger] = {}
        self.factor = 1.0  # 1 = the whole share; halved on each throttle
        self.throttles = 0  # kconsole's own calls throttled
        self._calm_since = clock()

    # ---- the budget ----------------------------------------------------------------------------------

    @property
    def calls_per_second(self) -> float | None:
        """The calls a second per shard kconsole allows itself now (None: unbounded)."""
        self._recover()
        return None if self.share is None else SHARD_CALLS_PER_SECOND * self.share * self.factor

    @property
    def bytes_per_second(self) -> float | None:
        self._recover()
        return None if self.share is None else SHARD_BYTES_PER_SECOND * self.share * self.factor

    @property
    def backing_off(self) -> bool:
        self._recover()
        return self.factor < 1.0

    def wait(self, shard_id: str) -> float:
        """Seconds to wait before the next GetRecords on the shard (0: call now)."""
        calls, nbytes = self.calls_per_second, self.bytes_per_second
        ledger = self._shards.get(shard_id)
        if calls is None or nbytes is None or ledger is None:
            return 0.0
        ready = ledger.last_call + max(1.0 / calls, ledger.last_bytes / nbytes)
        return max(0.0, ready - self._clock())

    # ---- what happened -------------------------------------------------------------------------------

    def record(self, shard_id: str, nbytes: int) -> None:
        """A GetRecords call on the shard answered with `nbytes` of record data."""
        now = self._clock()
        ledger = self._shards.setdefault(shard_id, _ShardLedger())
        ledger.calls.append((now, nbytes))
        ledger.last_call, ledger.last_bytes = now, nbytes
        self._trim(ledger, now)

    def throttled(self, shard_id: str) -> None:
        """A GetRecords call of kconsole's on the shard was refused: it still took a call of the budget."""
        self.record(shard_id, 0)
        self.throttles += 1
        self._back_off()

    def stream_throttled(self, count: float) -> None:
        """A new reading of the stream's ReadProvisionedThroughputExceeded (its latest minute): any read
        refused while kconsole polls backs off, the production readers' as much as kconsole's own."""
        if count > 0:
            self._back_off()

    def rates(self, shard_id: str) -> ShareRates:
        """kconsole's own calls and bytes a second on the shard over the window."""
        now = self._clock()
        ledger = self._shards.get(shard_id)
        if ledger is None:
            return ShareRates(0.0, 0.0)
        self._trim(ledger, now)
        return ShareRates(len(ledger.calls) / WINDOW_SECONDS, sum(n for _, n in ledger.calls) / WINDOW_SECONDS)

    def busiest(self) -> ShareRates:
        """The rates of the shard kconsole reads most (the one that costs its readers most)."""
        found = [self.rates(shard_id) for shard_id in list(self._shards)]
        return max(found, key=lambda rates: rates.fraction, default=ShareRates(0.0, 0.0))

    def summary(self, offer: str = EFO_OFFER) -> str:
        """One line: kconsole's own read rate a shard against the shared budget, and any back-off with
        `offer` (how to read without sharing)."""
        rates = self.busiest()
        line = (
            f"kconsole reads {rates.calls_per_second:.1f} calls/s, {rates.mib_per_second:.1f} MiB/s a shard: "
            f"{rates.fraction:.0%} of the shared budget"
        )
        if self.share is None:
            line += " (read share unbounded)"
        else:
            line += f" (read share {self.share:g})"
        if self.backing_off:
            line += f"; {BACKING_OFF_NOTE}; {offer}"
        return line

    def as_dict(self) -> dict[str, Any]:
        rates = self.busiest()
        return {
            "read_share": self.share,
            "calls_per_second": round(rates.calls_per_second, 2),
            "mib_per_second": round(rates.mib_per_second, 3),
            "fraction_of_budget": round(rates.fraction, 3),
            "throttled_calls": self.throttles,
            "backing_off": self.backing_off,
        }

    # ---- pacing --------------------------------------------------------------------------------------

    def _back_off(self) -> None:
        self.factor = max(MIN_FACTOR, self.factor / 2)
        self._calm_since = self._clock()

    def _recover(self) -> None:
        now = self._clock()
        while self.factor < 1.0 and now - self._calm_since >= RECOVERY_SECONDS:
            self.factor = min(1.0, self.factor * RECOVERY_STEP)
            self._calm_since += RECOVERY_SECONDS

    @staticmethod
    def _trim(ledger: _ShardLedger, now: float) -> None:
        while ledger.calls and ledger.calls[0][0] <= now - WINDOW_SECONDS:
            ledger.calls.popleft()
