"""Copy a window of one stream into another through the ordered producer, resumably.

What is read: the source's wire records, shard by shard in sequence order (parents before children),
as `console.read.tail.TailReader` reads them with `TailOptions.wire`. What is written: each record's
own bytes under its own partition key — a KPL aggregate stays one aggregate, byte for byte, unless
`deaggregate`, which writes each user record with its partition key and explicit hash key. (GetRecords
does not return a plain record's ExplicitHashKey, so a plain record is placed by its partition key.)
A `where` filter keeps a wire record when any of its user records passes. With a `mask`
(console.read.masking.Masker), what is written is each record's masked content (Masker.copied), an
aggregate de-aggregated so each user record is masked.

How: the records are gathered in chunks (CHUNK_RECORDS, CHUNK_BYTES) and each chunk goes through one
run of the OrderedProducer — one record in flight per key, so a retry never reorders a key — and,
with `verify`, is read back from the destination and checked for loss, duplicates and per-key order.
A chunk starts only once the one before it was acknowledged whole, so order holds across chunks; a
chunk that does not finish (a record refused, the endpoint gone, Ctrl-C) ends the copy.

Resuming: the `CopyCheckpoint` says, per source shard, up to which sequence number everything was
acknowledged by the destination, which records beyond it were too, and which shards were copied to
their end. A resumed copy reads each shard after that point and skips what was acknowledged, so
nothing the destination acknowledged is sent again. An `Interruption` (the first Ctrl-C) lets the
requests in flight get their answers before the copy stops, so they are not among those.

The checkpoint follows the acknowledgements while a chunk is written: it is saved (by the caller's
`save`, atomically) once CHECKPOINT_RECORDS more records were acknowledged or CHECKPOINT_SECONDS passed
with any, so a copy killed outright (kill -9) sends again at most what was acknowledged in its last
second. Before a chunk is sent, the checkpoint also records, per shard, the last sequence number
handed to the producer (`sent_through`): a resumed copy counts each record at or before it that it
sends again as a possible duplicate (the killed run may have delivered it), and the count is carried
in the checkpoint from run to run, so the reported possible duplicates are never fewer than the
copies the destination really holds twice. (A put whose answer was lost is sent again too, and
counted the same way.)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from console.errors import BadInput
from console.produce.testrecords import ledger_key
from console.read.decoding import DecodedRecord, decode_api_record
from console.read.masking import Masker
from console.read.payloads import KIND_ERROR
from console.read.schemas import SchemaCatalog
from console.read.tail import TailReader
from console.words import counted

CHUNK_RECORDS = 50_000
CHECKPOINT_RECORDS = 1_000  # acknowledged records between two saves of the checkpoint, at most
CHECKPOINT_SECONDS = 1.0  # and at most this long between saves while anything new was acknowledged
CHECKPOINT_POLL_SECONDS = 0.05
CHUNK_BYTES = 64 * 1024 * 1024
CHECKPOINT_VERSION = 1
AGGREGATE_MAGIC = b"\xf3\x89\x9a\xc2"


@dataclass(slots=True)
class CopyRecord:
    """One record to write (what the OrderedProducer takes as a given record), and where it came from."""

    key: str | None  # None: a keyless record of an AUTO stream
    data: bytes
    explicit_hash_key: int | None
    shard_id: str
    unit: str  # "SEQ", or "SEQ/SUB" for a de-aggregated user record
    line: int = 0  # tells keyless records apart (the producer tracks each under its own name)


def records_to_copy(
    raw: dict[str, Any],
    shard_id: str,
    *,
    where: Callable[[DecodedRecord], bool] | None,
    deaggregate: bool,
    schemas: SchemaCatalog | None = None,
    mask: Masker | None = None,
) -> tuple[list[CopyRecord], bool]:
    """The records one wire record becomes, and whether the filter let it through (`schemas`: the Glue
    Schema Registry versions the filter and the mask decode with; the bytes copied are the record's own,
    or with `mask` its masked content: an aggregate is then de-aggregated, each user record masked)."""
    sequence = raw["SequenceNumber"]
    data = raw["Data"]
    aggregate = (deaggregate or mask is not None) and data[:4] == AGGREGATE_MAGIC
    wanted = where is not None or aggregate or mask is not None
    decoded = decode_api_record(raw, shard_id, schemas=schemas) if wanted else None
    if where is not None and not any(where(record) for record in decoded):  # type: ignore[union-attr]
        return [], False
    if aggregate and decoded and decoded[0].kind != KIND_ERROR:
        copies = []
        for record in decoded:
            if where is not None and not where(record):
                continue
            key, payload = mask.copied(record) if mask is not None else (record.partition_key, record.data)
            copies.append(
                CopyRecord(
                    key or "",  # an aggregate's records all have keys
                    bytes(payload or b""),
                    int(record.explicit_hash_key) if record.explicit_hash_key else None,
                    shard_id,
                    f"{sequence}/{record.sub_sequence_number}",
                )
            )
        return copies, True
    if mask is not None and decoded:
        key, payload = mask.copied(decoded[0])
        return [CopyRecord(key, payload, None, shard_id, sequence)], True
    return [CopyRecord(raw.get("PartitionKey"), bytes(data), None, shard_id, sequence)], True


@dataclass
class ShardCheckpoint:
    done_through: str | None = None  # every record up to this sequence number is acknowledged (or filtered out)
    acknowledged: set[str] = field(default_factory=set)  # units beyond done_through that were acknowledged
    finished: bool = False  # read to its end (or the window's) and all acknowledged
    # Read but not yet settled, in sequence order: (sequence number, units still unacknowledged).
    pending: list[tuple[str, set[str]]] = field(default_factory=list)
    read_to_end: bool = False
    sent_through: str | None = None  # the last sequence number handed to the producer (module docstring)


class CopyCheckpoint:
    """What a copy has done, per source shard (module docstring). `identity` names the copy it belongs to."""

    def __init__(self, identity: dict[str, Any]) -> None:
        self.identity = identity
        self.shards: dict[str, ShardCheckpoint] = {}
        self.copied = 0
        self.possible_duplicates = 0  # over every run of this copy, interrupted ones included
        self.complete = False

    @classmethod
    def from_json(cls, document: Any, identity: dict[str, Any], path: str) -> CopyCheckpoint:
        if (
            not isinstance(document, dict)
            or document.get("version") != CHECKPOINT_VERSION
            or not isinstance(document.get("copy"), dict)
            or not isinstance(document.get("shards"), dict)
        ):
            raise BadInput(f"--resume {path} is not a kconsole copy checkpoint")
        stored = document["copy"]
        for name, value in identity.items():
            if name in ("from", "to"):
                continue  # the window comes from the checkpoint
            if stored.get(name) != value:
                raise BadInput(
                    f"--resume {path} is the checkpoint of another copy: its {name} is "
                    f"{str(stored.get(name))[:80]!r}, this copy's is {str(value)[:80]!r}"
                )
        checkpoint = cls({**identity, "from": stored.get("from"), "to": stored.get("to")})
        try:
            for shard_id, state in document["shards"].items():
                checkpoint.shards[str(shard_id)] = ShardCheckpoint(
                    done_through=None if state.get("done_through") is None else str(state["done_through"]),
                    acknowledged={str(unit) for unit in state.get("acknowledged", [])},
                    finished=bool(state.get("finished", False)),
                    sent_through=None if state.get("sent_through") is None else str(int(state["sent_through"])),
                )
            checkpoint.copied = int(document.get("copied", 0))
            checkpoint.possible_duplicates = int(document.get("possible_duplicates", 0))
        except (AttributeError, TypeError, ValueError):
            raise BadInput(f"--resume {path} is not a kconsole copy checkpoint (a shard entry is malformed)") from None
        checkpoint.complete = bool(document.get("complete", False))
        return checkpoint

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CHECKPOINT_VERSION,
            "copy": self.identity,
            "complete": self.complete,
            "copied": self.copied,
            "possible_duplicates": self.possible_duplicates,
            "shards": {
                shard_id: {
                    "done_through": state.done_through,
                    "finished": state.finished,
                    "acknowledged": sorted(state.acknowledged),
                    "sent_through": state.sent_through,
                }
                for shard_id, state in sorted(self.shards.items())
            },
        }

    # -- what a resumed read skips --------------------------------------------------------------

    @property
    def finished_shards(self) -> frozenset[str]:
        return frozenset(shard_id for shard_id, state in self.shards.items() if state.finished)

    @property
    def resume_after(self) -> dict[str, str]:
        return {
            shard_id: state.done_through
            for shard_id, state in self.shards.items()
            if state.done_through is not None and not state.finished
        }

    def already_copied(self, record: CopyRecord) -> bool:
        state = self.shards.get(record.shard_id)
        return state is not None and record.unit in state.acknowledged

    def possibly_sent(self, record: CopyRecord) -> bool:
        """Whether an earlier run may have delivered this record (handed it to the producer, no answer kept)."""
        state = self.shards.get(record.shard_id)
        sequence = record.unit.partition("/")[0]
        return state is not None and state.sent_through is not None and int(sequence) <= int(state.sent_through)

    def sending(self, records: list[CopyRecord]) -> None:
        """The chunk about to be handed to the producer: each shard's `sent_through` moves past it."""
        for record in records:
            state = self.shards[record.shard_id]
            sequence = record.unit.partition("/")[0]
            if state.sent_through is None or int(sequence) > int(state.sent_through):
                state.sent_through = sequence

    # -- bookkeeping while copying --------------------------------------------------------------

    def read(self, shard_id: str, sequence: str, units: list[str]) -> None:
        state = self.shards.setdefault(shard_id, ShardCheckpoint())
        state.pending.append((sequence, set(units)))

    def shard_read_to_end(self, shard_id: str) -> None:
        self.shards.setdefault(shard_id, ShardCheckpoint()).read_to_end = True

    def acknowledged(self, records: list[CopyRecord]) -> None:
        for record in records:
            self.shards[record.shard_id].acknowledged.add(record.unit)
        self.copied += len(records)

    def settle(self) -> None:
        """Move each shard's done_through past every leading record whose units are all acknowledged."""
        for state in self.shards.values():
            settled = 0
            for sequence, units in state.pending:
                if not units <= state.acknowledged:
                    break
                state.done_through = sequence
                state.acknowledged -= units
                settled += 1
            del state.pending[:settled]
            if state.read_to_end and not state.pending:
                state.finished = True


@dataclass
class CopyProgress:
    read: int = 0  # wire records read in the window
    filtered_out: int = 0
    skipped: int = 0  # acknowledged by the destination in an earlier, interrupted run
    chunks: int = 0
    acknowledged: int = 0
    retries: int = 0
    possible_duplicates: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (key, error)
    stopped: str | None = None
    verification: dict[str, int] = field(default_factory=dict)  # summed over chunks
    verified_ok: bool | None = None
    verification_error: str | None = None


@dataclass
class ChunkRun:
    """One chunk on its way: the writer sets `result` (the producer's ProduceResult) as soon as the run
    starts, so what was acknowledged before an interruption is known and kept, and `on_stop` (the
    producer's stop) so that a clean interruption reaches the requests being sent."""

    records: list[CopyRecord]
    result: Any = None
    stop_reason: str | None = None
    on_stop: Callable[[str], None] | None = None
    checkpointed: set[int] = field(default_factory=set)  # indexes of records already in the checkpoint

    def stop(self, reason: str) -> None:
        self.stop_reason = reason
        if self.on_stop is not None:
            self.on_stop(reason)


class Interruption:
    """A clean stop asked for (the first Ctrl-C): no further read or chunk, and the chunk being written sends
    nothing more and waits for the answers of its requests in flight, so that everything the destination
    acknowledged is in the checkpoint and a resumed copy sends none of it again."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.writing: ChunkRun | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self.writing is not None:
                self.writing.stop(reason)


# Writes one chunk and returns the verification report (or None), as console.produce.verify.run_and_verify.
WriteChunk = Callable[[ChunkRun], Awaitable[Any]]


async def copy_window(
    reader: TailReader,
    write: WriteChunk,
    checkpoint: CopyCheckpoint,
    *,
    where: Callable[[DecodedRecord], bool] | None = None,
    deaggregate: bool = False,
    mask: Masker | None = None,
    save: Callable[[CopyCheckpoint], None] = lambda _checkpoint: None,
    on_chunk: Callable[[CopyProgress], None] = lambda _progress: None,
    chunk_records: int = CHUNK_RECORDS,
    chunk_bytes: int = CHUNK_BYTES,
    keyless_refused: str | None = None,
    interruption: Interruption | None = None,
) -> CopyProgress:
    """`keyless_refused`: why the destination cannot take a record without a key (it places records by
    key), or None when it can. The copy then stops at the first such record, before it is sent or
    marked read, so a resume after the destination is switched to AUTO starts there."""
    progress = CopyProgress(possible_duplicates=checkpoint.possible_duplicates)
    stopping = interruption or Interruption()

    def saved(run: ChunkRun | None = None) -> None:
        """The checkpoint as it stands (with what `run` has had acknowledged so far), saved."""
        in_flight = 0
        if run is not None and run.result is not None:
            _checkpoint_acknowledged(checkpoint, run)
            in_flight = run.result.possible_duplicates
        checkpoint.possible_duplicates = progress.possible_duplicates + in_flight
        checkpoint.settle()
        save(checkpoint)

    def stop_cleanly() -> CopyProgress:
        progress.stopped = stopping.reason
        saved()
        return progress

    async def follow_acknowledgements(run: ChunkRun) -> None:
        """Save the checkpoint while `run` is written, as its acknowledgements come (module docstring)."""
        last_count, last_saved = 0, time.monotonic()
        while True:
            await asyncio.sleep(CHECKPOINT_POLL_SECONDS)
            count = len(run.result.acks) if run.result is not None else 0
            now = time.monotonic()
            if count - last_count >= CHECKPOINT_RECORDS or (
                count > last_count and now - last_saved >= CHECKPOINT_SECONDS
            ):
                saved(run)
                last_count, last_saved = count, now

    chunk: list[CopyRecord] = []
    size = 0

    async def flush() -> bool:
        nonlocal chunk, size
        if not chunk:
            saved()
            return True
        if stopping.reason is not None:
            stop_cleanly()
            return False
        run, chunk, size = ChunkRun(chunk), [], 0
        progress.chunks += 1
        checkpoint.sending(run.records)
        saved()  # before anything of the chunk is sent: a resumed copy knows what may have landed
        stopping.writing = run
        follower = asyncio.ensure_future(follow_acknowledgements(run))
        try:
            report = await write(run)
        except BaseException:  # interrupted or failed: keep what the destination acknowledged meanwhile
            if run.result is not None:
                _account(progress, checkpoint, run.records, run.result, None, run.checkpointed)
                saved()
            raise
        finally:
            stopping.writing = None
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        _account(progress, checkpoint, run.records, run.result, report, run.checkpointed)
        saved()
        on_chunk(progress)
        return progress.stopped is None and not progress.failed

    async with contextlib.aclosing(reader.batches()) as batches:
        async for batch in batches:
            if stopping.reason is not None:
                return stop_cleanly()
            for raw in batch.wire or ():
                progress.read += 1
                records, passed = records_to_copy(
                    raw, batch.shard_id, where=where, deaggregate=deaggregate, schemas=reader.schemas, mask=mask
                )
                if not passed:
                    progress.filtered_out += 1
                fresh = [record for record in records if not checkpoint.already_copied(record)]
                progress.possible_duplicates += sum(1 for record in fresh if checkpoint.possibly_sent(record))
                if keyless_refused and any(record.key is None for record in fresh):
                    if await flush():  # what came before it is sent and checkpointed
                        progress.stopped = (
                            f"record {progress.read:,} of the source has no partition key: {keyless_refused}"
                        )
                    return progress
                for record in fresh:
                    record.line = progress.read
                progress.skipped += len(records) - len(fresh)
                checkpoint.read(batch.shard_id, raw["SequenceNumber"], [record.unit for record in fresh])
                chunk.extend(fresh)
                size += sum(len(record.data) + len(record.key or "") for record in fresh)
            if batch.ended or batch.caught_up:
                checkpoint.shard_read_to_end(batch.shard_id)
            if (len(chunk) >= chunk_records or size >= chunk_bytes) and not await flush():
                return progress
    if stopping.reason is not None:
        return stop_cleanly()
    if await flush():
        checkpoint.complete = True
        saved()
    return progress


def _acknowledged_indexes(records: list[CopyRecord], result: Any) -> list[int]:
    """Which of a chunk's records the destination acknowledged (the producer keys acks by key and the
    record's place among its key's records)."""
    position: dict[str, int] = {}
    acked = []
    for index, record in enumerate(records):
        name = ledger_key(record)
        place = position.get(name, 0)
        position[name] = place + 1
        if (name, place) in result.acks:
            acked.append(index)
    return acked


def _checkpoint_acknowledged(checkpoint: CopyCheckpoint, run: ChunkRun) -> None:
    """What the destination acknowledged of `run` so far, into the checkpoint (each record once)."""
    new = [index for index in _acknowledged_indexes(run.records, run.result) if index not in run.checkpointed]
    checkpoint.acknowledged([run.records[index] for index in new])
    run.checkpointed.update(new)


def _account(
    progress: CopyProgress,
    checkpoint: CopyCheckpoint,
    records: list[CopyRecord],
    result: Any,
    report: Any,
    checkpointed: set[int] | None = None,
) -> None:
    """The chunk's acknowledged records into the checkpoint (those not in it already), and its figures."""
    acked = _acknowledged_indexes(records, result)
    done = checkpointed if checkpointed is not None else set()
    checkpoint.acknowledged([records[index] for index in acked if index not in done])
    done.update(acked)
    progress.acknowledged += len(acked)
    progress.retries += result.retries
    progress.possible_duplicates += result.possible_duplicates
    progress.failed.extend((key, error) for key, _seq, error in result.failed)
    if result.stopped:
        progress.stopped = result.stopped
    elif len(acked) < len(records) and not result.failed:
        unacknowledged = len(records) - len(acked)
        progress.stopped = (
            f"{counted(unacknowledged, 'record')} {'was' if unacknowledged == 1 else 'were'} not acknowledged"
        )
    if report is not None:
        for name, value in report.to_json().items():
            if isinstance(value, int) and not isinstance(value, bool):
                progress.verification[name] = progress.verification.get(name, 0) + value
        progress.verified_ok = (progress.verified_ok is not False) and report.ok
    elif getattr(result, "verification_error", None):
        progress.verification_error = result.verification_error
        progress.verified_ok = False
