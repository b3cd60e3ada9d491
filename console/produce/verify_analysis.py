"""What a read-back found, worked out without I/O: the records read (ReadCopy) compared with what
the producer was told (`analyse`), and the VerificationReport that comes of it.

What: per record (key, per-key seq) the copies read and where. Lost = acknowledged, never read;
duplicated = copies beyond the first (late duplicates: those read after a later record of the key);
out of order = a record's first copy read after the first copy of a later record of the same key; misplaced = read from a shard that is neither the predicted one (or, without a shard
map, the acknowledged one) nor a descendant of it; latency = arrival time minus the record's send
time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from console.keyspace.hashkeys import hash_key_for
from console.produce.report import ProduceResult
from console.read.printable import printable
from console.topology.lineage import Lineage
from console.topology.model import Shard

MAX_PROBLEMS_PER_KIND = 50  # detailed entries kept per kind of failure; the counts are always complete


@dataclass(frozen=True, slots=True)
class ReadCopy:
    """One copy of a test record as read from the stream."""

    key: str
    seq: int
    shard_id: str
    sequence_number: str
    order: int  # position of the shard in lineage order (parents first)
    sent_at: float
    arrival: float | None  # epoch seconds (ApproximateArrivalTimestamp)
    aggregated: bool = False  # read from inside a KPL aggregate (placed by the aggregate, not its own key)


@dataclass(frozen=True)
class Problem:
    """One failure, with what the UI needs to show the records involved."""

    kind: str  # lost | duplicated | out_of_order | misplaced | unacknowledged_read
    key: str
    seq: int
    detail: str
    shard_id: str | None = None
    position: int | None = None  # index in the key's read order

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "seq": self.seq,
            "shard_id": self.shard_id,
            "position": self.position,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ShardRead:
    shard_id: str
    start: str  # AT_SEQUENCE_NUMBER | TRIM_HORIZON
    records: int  # every record read on the shard
    run_records: int  # the run's records among them
    closed: bool


@dataclass
class VerificationReport:
    run_id: str
    stream: str
    sent: int
    acknowledged: int
    read_back: int  # distinct records of the run read
    lost: int
    duplicated: int
    possible_duplicates: int
    out_of_order: int
    out_of_order_keys: int
    misplaced: int
    unacknowledged_read: int  # read, though the producer never got an ack (gave up or unknown)
    failed: int  # records the producer gave up on
    shard_mismatches: int
    latency_ms: dict[str, float | None]
    shards: list[ShardRead]
    read_seconds: float
    copies_read: int
    first_out_of_order: dict[str, Any] | None
    problems: list[Problem]
    # Extra copies read after a later record of their key (a put of unknown outcome that landed late).
    # Order is judged by each record's first copy; these are counted here and in `duplicated`.
    late_duplicates: int = 0
    waited_seconds: float = 0.0  # waited for the in-flight window before reading
    # "order": every record read, in order per key, on its key's shard. "delivery" (an AUTO stream,
    # which ignores keys and promises no order): nothing lost, no more duplicates than possible.
    checks: str = "order"
    copies_by_key: dict[str, list[ReadCopy]] = field(default_factory=dict, repr=False)
    acks_by_key: dict[str, dict[int, Any]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        if self.checks == "delivery":
            return self.lost == 0 and self.failed == 0 and self.duplicated <= self.possible_duplicates
        return self.lost == 0 and self.out_of_order == 0 and self.misplaced == 0 and self.failed == 0

    @property
    def checks_note(self) -> str | None:
        if self.checks != "delivery":
            return None
        return (
            "AUTO record distribution: delivery checked (nothing lost, duplicates within what retries "
            "allow); order is not a property of an AUTO stream, and keys place nothing"
        )

    @property
    def first_out_of_order_line(self) -> str | None:
        """The first record read out of its key's order, in words (both faces show this line); its key
        made printable, as `kconsole put` keys come from the user's file."""
        first = self.first_out_of_order
        if first is None:
            return None
        return (
            f"first out of order: key {printable(str(first['key']))}, seq {first['seq']} at position "
            f"{first['position']} after seq {first['after_seq']}"
        )

    @property
    def read_records_per_second(self) -> float:
        return self.copies_read / self.read_seconds if self.read_seconds > 0 else 0.0

    def records_for(self, key: str) -> list[dict[str, Any]]:
        """The key's copies in read order, with what the producer was told for each (for the UI)."""
        acks = self.acks_by_key.get(key, {})
        rows = []
        for position, copy in enumerate(self.copies_by_key.get(key, [])):
            ack = acks.get(copy.seq)
            rows.append(
                {
                    "position": position,
                    "seq": copy.seq,
                    "shard_id": copy.shard_id,
                    "sequence_number": copy.sequence_number,
                    "acked_shard_id": ack.shard_id if ack else None,
                    "acked_sequence_number": ack.sequence_number if ack else None,
                }
            )
        read = {copy.seq for copy in self.copies_by_key.get(key, [])}
        for seq, ack in sorted(acks.items()):
            if seq not in read:
                rows.append(
                    {
                        "position": None,
                        "seq": seq,
                        "shard_id": None,
                        "sequence_number": None,
                        "acked_shard_id": ack.shard_id,
                        "acked_sequence_number": ack.sequence_number,
                    }
                )
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks": self.checks,
            "checks_note": self.checks_note,
            "run_id": self.run_id,
            "stream": self.stream,
            "sent": self.sent,
            "acknowledged": self.acknowledged,
            "read_back": self.read_back,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "late_duplicates": self.late_duplicates,
            "possible_duplicates": self.possible_duplicates,
            "out_of_order": self.out_of_order,
            "out_of_order_keys": self.out_of_order_keys,
            "first_out_of_order": self.first_out_of_order,
            "misplaced": self.misplaced,
            "unacknowledged_read": self.unacknowledged_read,
            "failed": self.failed,
            "shard_mismatches": self.shard_mismatches,
            "latency_ms": self.latency_ms,
            "read_seconds": round(self.read_seconds, 3),
            "waited_seconds": round(self.waited_seconds, 3),
            "read_records_per_second": round(self.read_records_per_second, 1),
            "shards_read": [vars(read) for read in self.shards],
            "problems": [problem.to_json() for problem in self.problems],
        }


class ShardLineage:
    """The stream's lineage (console.topology.lineage) as the verifier needs it: a reading order with every
    parent before its children, and the shards at or below a shard."""

    def __init__(self, shards: list[Shard]) -> None:
        self._lineage = Lineage.build(shards)
        nodes = self._lineage.nodes
        self.shards = {shard_id: node.shard for shard_id, node in nodes.items()}
        ordered = sorted(nodes.values(), key=lambda n: (n.depth, n.shard.starting_hash_key, n.shard_id))
        self.order = {node.shard_id: index for index, node in enumerate(ordered)}

    def descendants(self, shard_id: str) -> set[str]:
        nodes = self._lineage.nodes
        found: set[str] = set()
        stack = list(nodes[shard_id].children) if shard_id in nodes else []
        while stack:
            child = stack.pop()
            if child not in found:
                found.add(child)
                stack.extend(nodes[child].children)
        return found

    def at_or_below(self, shard_id: str) -> set[str]:
        return {shard_id} | self.descendants(shard_id)


def _misplacement(
    shard_id: str, hash_key: int, ack: Any, lineage: ShardLineage, allowed_cache: dict[str, set[str]]
) -> str | None:
    """Why a copy read from `shard_id` is in the wrong place, or None. A shard whose hash range does
    not hold the key's hash key can never rightly hold the record; nor can one outside the lineage
    of the shard predicted (or, without a prediction, acknowledged) for it."""
    shard = lineage.shards.get(shard_id)
    if shard is not None and not shard.contains(hash_key):
        return f"its hash range does not hold the key's hash key {hash_key}"
    expected = (ack.predicted or ack.shard_id) if ack is not None else None
    if expected is None:
        return None
    allowed = allowed_cache.get(expected)
    if allowed is None:
        allowed = lineage.at_or_below(expected) if expected in lineage.shards else {expected}
        allowed_cache[expected] = allowed
    return None if shard_id in allowed else f"expected {expected} or a descendant"


def _percentile(ordered: list[float], fraction: float) -> float:
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def analyse(
    run: ProduceResult, lineage: ShardLineage, copies: list[ReadCopy], shards: list[ShardRead], read_seconds: float
) -> VerificationReport:
    """Compare what was read with what the producer was told. Pure: no I/O."""
    problems_by_kind: dict[str, list[Problem]] = defaultdict(list)

    def problem(kind: str, *args: Any) -> None:
        if len(problems_by_kind[kind]) < MAX_PROBLEMS_PER_KIND:
            problems_by_kind[kind].append(Problem(kind, *args))

    by_key: dict[str, list[ReadCopy]] = defaultdict(list)
    for copy in copies:
        by_key[copy.key].append(copy)
    acks_by_key: dict[str, dict[int, Any]] = defaultdict(dict)
    for (key, seq), acked in run.acks.items():
        acks_by_key[key][seq] = acked

    auto = run.auto_distribution  # Kinesis placed the records, not their keys: no placement to check
    duplicated = late_duplicates = out_of_order = out_of_order_keys = misplaced = unacked_read = 0
    first_out_of_order: dict[str, Any] | None = None
    latencies: list[float] = []
    read_pairs: set[tuple[str, int]] = set()
    allowed_cache: dict[str, set[str]] = {}
    for key in sorted(by_key):
        key_copies = by_key[key]
        key_copies.sort(key=lambda c: (c.order, int(c.sequence_number)))
        highest = -1
        seen: set[int] = set()
        key_disordered = False
        acks = acks_by_key.get(key, {})
        hash_key = hash_key_for(key, run.explicit_hash_keys.get(key))
        for position, copy in enumerate(key_copies):
            if copy.seq in seen:
                duplicated += 1
                detail = f"copy read again on {copy.shard_id}"
                if copy.seq < highest:
                    late_duplicates += 1
                    detail += f", late: after seq {highest}"
                problem("duplicated", key, copy.seq, detail, copy.shard_id, position)
            else:
                seen.add(copy.seq)
                if copy.seq not in acks:
                    unacked_read += 1
                    problem(
                        "unacknowledged_read",
                        key,
                        copy.seq,
                        f"read on {copy.shard_id} though never acknowledged (a put of unknown outcome)",
                        copy.shard_id,
                        position,
                    )
                if copy.arrival is not None:
                    latencies.append((copy.arrival - copy.sent_at) * 1000)
                if copy.seq < highest:  # order is judged by first copies
                    out_of_order += 1
                    key_disordered = True
                    detail = f"seq {copy.seq} read at position {position}, after seq {highest}"
                    if first_out_of_order is None:
                        first_out_of_order = {"key": key, "position": position, "seq": copy.seq, "after_seq": highest}
                    problem("out_of_order", key, copy.seq, detail, copy.shard_id, position)
            highest = max(highest, copy.seq)
            ack = acks.get(copy.seq)
            # A copy in an aggregate other than the acknowledged one landed where that aggregate did (an
            # aggregate placed off its prediction, then re-aggregated): a duplicate, not a misplacement.
            stray = copy.aggregated and ack is not None and copy.sequence_number != ack.sequence_number
            where = None if auto or stray else _misplacement(copy.shard_id, hash_key, ack, lineage, allowed_cache)
            if where:
                misplaced += 1
                problem("misplaced", key, copy.seq, f"read from {copy.shard_id}; {where}", copy.shard_id, position)
            read_pairs.add((key, copy.seq))
        out_of_order_keys += key_disordered

    lost = 0
    for (key, seq), ack in run.acks.items():
        if (key, seq) not in read_pairs:
            lost += 1
            problem(
                "lost", key, seq, f"acknowledged on {ack.shard_id} at {ack.sequence_number}, never read", ack.shard_id
            )
    if not latencies:  # no arrival times from the server: fall back to the ack round trip
        latencies = [(ack.acked_at - ack.sent_at) * 1000 for ack in run.acks.values()]
    latencies.sort()
    latency: dict[str, float | None] = (
        {
            "p50": round(_percentile(latencies, 0.5), 1),
            "p99": round(_percentile(latencies, 0.99), 1),
            "max": round(latencies[-1], 1),
        }
        if latencies
        else {"p50": None, "p99": None, "max": None}
    )
    kinds = ("lost", "out_of_order", "misplaced", "unacknowledged_read", "duplicated")
    problems = [p for kind in kinds for p in problems_by_kind.get(kind, ())]
    return VerificationReport(
        run_id=run.run_id,
        stream=run.stream,
        sent=run.sent,
        acknowledged=run.acknowledged,
        read_back=len(read_pairs),
        lost=lost,
        duplicated=duplicated,
        possible_duplicates=run.possible_duplicates,
        out_of_order=out_of_order,
        out_of_order_keys=out_of_order_keys,
        misplaced=misplaced,
        unacknowledged_read=unacked_read,
        failed=len(run.failed),
        shard_mismatches=run.mismatch_count,
        latency_ms=latency,
        shards=shards,
        read_seconds=read_seconds,
        copies_read=len(copies),
        first_out_of_order=first_out_of_order,
        problems=problems,
        late_duplicates=late_duplicates,
        checks="delivery" if auto else "order",
        copies_by_key=dict(by_key),
        acks_by_key=dict(acks_by_key),
    )
