"""What a producer run reports: where each record landed (Ack), shard mismatches, progress snapshots
for progress bars (ProducerProgress, kept by ProgressMeter) and the finished run (ProduceResult)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.produce.pacing import ShardPacer
from console.produce.settings import ProducerSettings
from console.words import counted


@dataclass(slots=True)
class Ack:
    """Where one record landed, as the put's response said."""

    shard_id: str
    sequence_number: str
    predicted: str | None  # the shard map's prediction when it was first sent
    sent_at: float  # epoch seconds, first send
    acked_at: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class ShardMismatch:
    key: str
    seq: int
    predicted: str
    actual: str


@dataclass(frozen=True)
class ShardProgress:
    acknowledged: int
    records_per_second: float
    throttled: int
    pace: float  # fraction of the shard limit the pacer allows right now


@dataclass(frozen=True)
class ProducerProgress:
    """A snapshot for progress bars: totals, and per shard what was acknowledged and how fast."""

    run_id: str
    total: int
    sent: int
    acknowledged: int
    retries: int
    throttled: int
    possible_duplicates: int
    failed: int
    shard_mismatches: int
    elapsed: float
    records_per_second: float
    shards: dict[str, ShardProgress]
    done: bool = False
    failing: str | None = None  # what keeps failing right now, and for how long; None when calls succeed

    @property
    def fraction(self) -> float:
        return self.acknowledged / self.total if self.total else 1.0

    def troubles(self) -> list[str]:
        """What was retried or went wrong so far, in words ("retries 3", "throttled 2"), as the
        command line's progress lines and the console's Producer tab both say it; empty when nothing."""
        counts = (
            ("retries", self.retries),
            ("throttled", self.throttled),
            ("possible duplicates", self.possible_duplicates),
            ("shard mismatches", self.shard_mismatches),
            ("failed", self.failed),
        )
        return [f"{label} {value}" for label, value in counts if value]

    @property
    def failing_now(self) -> str | None:
        """What keeps failing while the run goes on (None once it is done, or when calls succeed)."""
        return self.failing if self.failing and not self.done else None

    def line(self) -> str:
        """`1200/5000 acknowledged (24%), 840 records/s, 4 shards, throttled 2`: the command line's
        progress line and the console's Producer tab status both say this."""
        extra = "".join(f", {trouble}" for trouble in self.troubles())
        failing = f"; failing: {self.failing_now}" if self.failing_now else ""
        return (
            f"{self.acknowledged:,}/{self.total:,} acknowledged ({self.fraction:.0%}), "
            f"{self.records_per_second:.0f} records/s, {counted(len(self.shards), 'shard')}{extra}{failing}"
        )


def verifying_line(run_id: str, wait: float) -> str:
    """What a run does before it is read back: wait for puts whose answer was lost, then read."""
    if wait <= 0:
        return f"reading run {run_id} back"
    return f"waiting {wait:.0f} s for puts whose answer was lost (they may still land), then reading run {run_id} back"


@dataclass
class ProduceResult:
    """Everything the verifier and the reports need to know about a finished run."""

    settings: ProducerSettings
    stream: str
    started_at: float  # epoch seconds
    finished_at: float
    sent: int = 0
    acks: dict[tuple[str, int], Ack] = field(default_factory=dict)
    retries: int = 0
    throttled: int = 0
    possible_duplicates: int = 0
    failed: list[tuple[str, int, str]] = field(default_factory=list)  # (key, seq, last error)
    abandoned: int = 0  # records never sent because an earlier one of their key failed for good
    stopped: str | None = None  # why the run ended before every record was tried; None when it did not
    endpoint_lost: bool = False  # it stopped because the endpoint answered nothing for too long
    # The stream spread the records itself (AUTO): no key decided a shard, and no order was promised.
    auto_distribution: bool = False
    # Epoch send time of the latest request whose outcome stayed unknown: it may still land on the
    # server until the in-flight window has passed, so the verifier waits that long before reading.
    last_unknown_sent: float | None = None
    verification_error: str | None = None  # the read-back failed; the run's own figures still stand
    mismatches: list[ShardMismatch] = field(default_factory=list)
    mismatch_count: int = 0
    max_in_flight_per_key: int = 0
    # For the verifier: where an unknown-outcome attempt could have landed (predicted shard, or None
    # when there was no prediction) -> epoch time of the earliest such attempt.
    unknown_outcomes: dict[str | None, float] = field(default_factory=dict)
    # Per shard: the smallest acknowledged sequence number, and when that ack was received.
    first_acks: dict[str, tuple[int, float]] = field(default_factory=dict)
    explicit_hash_keys: dict[str, int] = field(default_factory=dict)
    # KPL aggregation (console.produce.aggregate.AggregationStats) when the run aggregated; None otherwise.
    aggregation: Any = None

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    @property
    def acknowledged(self) -> int:
        return len(self.acks)

    @property
    def not_attempted(self) -> int:
        """Records of the run never put in a request (their key failed first, or the run stopped)."""
        return self.settings.total - self.sent

    @property
    def complete(self) -> bool:
        """Every record acknowledged: nothing failed, nothing left untried."""
        return not self.failed and self.stopped is None and self.acknowledged == self.settings.total

    @property
    def elapsed(self) -> float:
        return max(1e-9, self.finished_at - self.started_at)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "stream": self.stream,
            "mode": self.settings.mode,
            "keys": self.settings.keys,
            "records_per_key": self.settings.records_per_key,
            "payload_bytes": self.settings.payload_bytes,
            "sent": self.sent,
            "acknowledged": self.acknowledged,
            "retries": self.retries,
            "throttled": self.throttled,
            "possible_duplicates": self.possible_duplicates,
            "failed": len(self.failed),
            "abandoned": self.abandoned,
            "not_attempted": self.not_attempted,
            "stopped": self.stopped,
            "shard_mismatches": self.mismatch_count,
            "seconds": round(self.elapsed, 3),
            "records_per_second": round(self.acknowledged / self.elapsed, 1),
            **({"aggregation": self.aggregation.to_json(self.elapsed)} if self.aggregation is not None else {}),
        }


ProgressCallback = Callable[[ProducerProgress], None]


RATE_WINDOW = 2.0  # seconds: the Producer's rates are averaged over this long (a paced shard's bursts even out)


class ProgressMeter:
    """Counts acknowledgements per shard and turns the run's counters into ProducerProgress
    snapshots, handed to the callback at most once per `interval` seconds."""

    def __init__(
        self,
        settings: ProducerSettings,
        result: ProduceResult,
        pacer: ShardPacer,
        *,
        clock: Callable[[], float],
        on_progress: ProgressCallback | None,
        interval: float,
    ) -> None:
        self._settings = settings
        self._result = result
        self._pacer = pacer
        self._clock = clock
        self._on_progress = on_progress
        self._interval = interval
        self._shard_acks: dict[str, int] = {}
        # (time, acked, per-shard acked) at the reports of the last RATE_WINDOW seconds, and the
        # last one before them: rates are measured from there, never over the milliseconds between
        # two reports (one acknowledged batch then read as 25,000 records/s on a shard paced at 1,000).
        self._samples: deque[tuple[float, int, dict[str, int]]] = deque([(0.0, 0, {})])
        self._next_report = 0.0
        self._started = 0.0
        self._failing: tuple[str, float] | None = None  # (latest failure, since when) while calls fail
        self.give_up_after: float | None = None  # said next to a failure, so the user knows the bound

    def failing(self, reason: str | None, since: float | None = None) -> None:
        """Calls are failing with `reason` since `since` (monotonic); None: they succeed again."""
        self._failing = None if reason is None else (reason, since if since is not None else self._clock())

    def start(self, now: float) -> None:
        self._started = now
        self._samples = deque([(now, 0, {})])

    def count_ack(self, shard_id: str, count: int = 1) -> None:
        self._shard_acks[shard_id] = self._shard_acks.get(shard_id, 0) + count

    def report(self, *, force: bool = False, done: bool = False) -> None:
        if self._on_progress is None:
            return
        now = self._clock()
        if not force and now < self._next_report:
            return
        self._next_report = now + self._interval
        self._on_progress(self.snapshot(now, done=done))

    def snapshot(self, now: float | None = None, *, done: bool = False) -> ProducerProgress:
        now = self._clock() if now is None else now
        samples = self._samples
        while len(samples) > 1 and samples[1][0] <= now - RATE_WINDOW:
            samples.popleft()  # the first sample is the latest at least a window old (or the run's start)
        last_time, last_acked, last_shards = samples[0]
        span = max(now - last_time, 1e-6)
        result = self._result
        shards = {
            shard: ShardProgress(
                count,
                (count - last_shards.get(shard, 0)) / span,
                self._pacer.throttle_count(shard),
                self._pacer.scale_of(shard),
            )
            for shard, count in sorted(self._shard_acks.items())
        }
        progress = ProducerProgress(
            run_id=self._settings.run_id,
            total=self._settings.total,
            sent=result.sent,
            acknowledged=result.acknowledged,
            retries=result.retries,
            throttled=result.throttled,
            possible_duplicates=result.possible_duplicates,
            failed=len(result.failed),
            shard_mismatches=result.mismatch_count,
            elapsed=now - self._started,
            records_per_second=(result.acknowledged - last_acked) / span,
            shards=shards,
            done=done,
            failing=self._failing_text(now),
        )
        samples.append((now, result.acknowledged, dict(self._shard_acks)))
        return progress

    def _failing_text(self, now: float) -> str | None:
        if self._failing is None:
            return None
        reason, since = self._failing
        bound = f" of {self.give_up_after:g}" if self.give_up_after else ""
        return f"no answer for {now - since:.0f} s{bound}: {reason}"
