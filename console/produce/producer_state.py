"""What the ordered producer (console.produce.producer) keeps through a run, in either mode: its set-up
(the keys, the pacing, the ledger and the progress meter), where each key's records go, and the
endpoint's health over the whole run, which stops the run when nothing can succeed any more."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from console.errors import BadInput
from console.keyspace.hashkeys import hash_key_for
from console.produce.ledger import KeyState, RecordLedger
from console.produce.pacing import PacingLimits, ShardPacer, TokenBucket
from console.produce.report import ProduceResult, ProgressCallback, ProgressMeter
from console.produce.settings import ProducerSettings
from console.produce.testrecords import ledger_key, partition_key_for
from console.words import counted

PutRecords = Callable[[str, list[dict[str, Any]]], Awaitable[dict[str, Any]]]
PutRecord = Callable[..., Awaitable[dict[str, Any]]]


class ShardPredictor(Protocol):
    """What the producer needs of console.topology.shardmap.ShardMap."""

    def predict(self, hash_key: int) -> str | None: ...

    def invalidate(self, seen_at: float, predicted_shard: str | None) -> Any: ...


class ProducerState:
    """A run's state and set-up; OrderedProducer adds the two ways of sending."""

    def __init__(
        self,
        stream: str,
        settings: ProducerSettings,
        *,
        put_records: PutRecords | None = None,
        put_record: PutRecord | None = None,
        shard_map: ShardPredictor | None = None,
        explicit_hash_key_source: Callable[[int], Sequence[int]] | None = None,
        records: Sequence[Any] | None = None,
        on_progress: ProgressCallback | None = None,
        progress_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        map_clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings = settings.validated()
        if settings.mode == "batch" and put_records is None:
            raise BadInput("batch mode needs a put_records transport")
        if settings.mode == "sequential" and put_record is None:
            raise BadInput("sequential mode needs a put_record transport")
        self.stream = stream
        self._put_records = put_records
        self._put_record = put_record
        self._map = shard_map
        # invalidate(seen_at) compares with the map's own clock (ShardMap.now()) when it has one.
        self._map_clock = map_clock or getattr(shard_map, "now", None) or clock
        self._invalidating: set[asyncio.Future[object]] = set()  # see _invalidate
        self._progress_interval = progress_interval
        self._clock = clock
        self._wall = wall_clock
        self._pacer = ShardPacer(
            PacingLimits(settings.shard_records_per_second, settings.shard_bytes_per_second, enabled=settings.pacing)
        )
        self._rate = (
            TokenBucket(settings.rate, burst=max(1.0, settings.rate / 10), now=clock()) if settings.rate else None
        )
        self._keys = self._keys_of(records) if records is not None else self._make_keys(explicit_hash_key_source)
        # Keys whose shard's pace is spent wait here, off the ready queue, until `_unpark` says the
        # shard has tokens again; only then are they looked at.
        self._parked: dict[str, list[KeyState]] = {}
        self._unpark: list[tuple[float, str]] = []
        self._rate_resumes = 0.0  # when the run's own rate, once spent, is asked again
        self.result = ProduceResult(settings, stream, started_at=wall_clock(), finished_at=wall_clock())
        self.result.explicit_hash_keys = {
            k.name: k.explicit_hash_key for k in self._keys if k.explicit_hash_key is not None
        }
        self._meter = ProgressMeter(
            settings, self.result, self._pacer, clock=clock, on_progress=on_progress, interval=progress_interval
        )
        self._ledger = RecordLedger(
            settings, self.result, self._meter, clock=clock, wall_clock=wall_clock, on_mismatch=self._invalidate
        )
        self._meter.give_up_after = settings.unanswered_give_up
        self._last_answer = clock()
        self._ran = False

    # -- set-up ---------------------------------------------------------------------------------

    def _make_keys(self, source: Callable[[int], Sequence[int]] | None) -> list[KeyState]:
        settings = self.settings
        explicit: Sequence[int | None] = [None] * settings.keys
        if settings.explicit_hash_keys == "keytree":
            if source is None:
                source = keytree_hash_keys
            explicit = list(source(settings.keys))
            if len(explicit) != settings.keys:
                raise BadInput(
                    f"the key tree handed out {counted(len(explicit), 'hash key')} for {counted(settings.keys, 'key')}"
                )
        keys = []
        for index in range(settings.keys):
            name = partition_key_for(settings.run_id, index)
            keys.append(
                KeyState(
                    name,
                    hash_key_for(name, explicit[index]),
                    explicit[index],
                    len(name.encode()) if settings.send_keys else 0,
                    record_count=settings.records_per_key,
                    send_key=settings.send_keys,
                )
            )
        return keys

    @staticmethod
    def _keys_of(records: Sequence[Any]) -> list[KeyState]:
        """Given records (objects with `key`, `data`, `explicit_hash_key`), grouped by partition key in
        the order keys first appear; each key's records keep their order."""
        keys: dict[str, KeyState] = {}
        for record in records:
            # A keyless record (AUTO stream) is a key of its own: no order to keep, nothing to wait for.
            name = ledger_key(record)
            key = keys.get(name)
            if key is None:
                sent = record.key is not None
                key = keys[name] = KeyState(
                    name,
                    hash_key_for(name, record.explicit_hash_key),
                    record.explicit_hash_key,
                    len(name.encode()) if sent else 0,
                    payloads=[],
                    send_key=sent,
                )
            key.payloads.append(record.data)  # type: ignore[union-attr]  # given keys are built with a list above
            key.record_count += 1
        return list(keys.values())

    # -- where a key's records go ----------------------------------------------------------------

    def _prediction(self, key: KeyState) -> tuple[str | None, str | None]:
        """(the shard map's prediction, the shard to pace against: the prediction or the last ack's)."""
        predicted = self._map.predict(key.hash_key) if self._map is not None else None
        return predicted, predicted or key.learned_shard

    def _predict(self, key: KeyState) -> str | None:
        return self._prediction(key)[1]

    # -- the endpoint's health, for the whole run --------------------------------------------------

    def _answered(self) -> None:
        self._last_answer = self._clock()
        self._meter.failing(None)

    def _unanswered(self, error: BaseException) -> None:
        """A request got no answer. Once none has come for `unanswered_give_up` seconds, stop the run."""
        silent = self._clock() - self._last_answer
        self._meter.failing(str(error), self._last_answer)
        self._meter.report()
        if silent > self.settings.unanswered_give_up:
            self._stop(f"no answer from the endpoint for {silent:.0f} s; last: {error}", unanswered=True)

    def stop(self, reason: str) -> None:
        """Send nothing more: run() returns once the requests in flight have their answers, so what the
        stream acknowledged is known (an interrupted copy keeps it in its checkpoint)."""
        self._stop(reason)

    def _stop(self, reason: str, *, unanswered: bool = False) -> None:
        if self.result.stopped is None:
            self.result.stopped = reason
            self.result.endpoint_lost = unanswered

    def _invalidate(self, predicted: str) -> None:
        if self._map is None:
            return
        outcome = self._map.invalidate(self._map_clock(), predicted)
        if inspect.isawaitable(outcome):
            # The loop keeps only a weak reference to a task: an invalidation in flight is held here.
            invalidation = asyncio.ensure_future(outcome)
            self._invalidating.add(invalidation)
            invalidation.add_done_callback(self._invalidating.discard)


def keytree_hash_keys(count: int) -> list[int]:
    """The first `count` keys an empty key tree hands out: 2**127, 2**126, 3*2**126, ..."""
    try:
        from console.keyspace.keytree.tree import KeyTree
    except ImportError as error:  # pragma: no cover - the key tree ships with the package
        raise BadInput(f"the key tree is not available: {error}") from None
    return [int(key) for key in KeyTree.rehydrate([]).next_keys(count)]
