"""The producer's per-key bookkeeping: each partition key's queue of built but unacknowledged
records and what is in flight, which is what lets the producer keep one record per key in flight."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

@dataclass(slots=True)
class PendingRecord:
    """One record on its way: built once, resent byte for byte until acknowledged."""

    key: "KeyState"
    seq: int
    data: bytes
    sent_at: float  # epoch
    first_try: float  # monotonic
    attempts: int = 0
    predicted: str | None = None  # at the latest attempt: what its ack is checked against
    # At the first attempt: a copy from any attempt lands there or on a descendant (reshards only
    # move a key's hash down the lineage), so this is what the verifier checks placement against.
    first_predicted: str | None = None
    in_request: bool = False
    size: int = 0  # what counts toward the request limits: data plus partition key


@dataclass(slots=True, eq=False)
class KeyState:
    name: str
    hash_key: int
    explicit_hash_key: int | None
    name_bytes: int = 0  # UTF-8 length of the name (counts toward request sizes)
    next_seq: int = 0
    pending: deque = field(default_factory=deque)  # built but unacknowledged, in key order
    in_flight: int = 0
    queued: bool = False  # in the ready queue
    learned_shard: str | None = None  # from the last ack, for pacing without a shard map
    last_sequence_number: str | None = None  # sequential mode's SequenceNumberForOrdering
    abandoned: bool = False

