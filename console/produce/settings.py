"""What one producer run is asked to do (ProducerSettings), checked before anything is sent, and the
PutRecords request limits it is held to."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from console.bounds import PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_RECORDS
from console.errors import BadInput
from console.keyspace.hashkeys import validate_partition_key
from console.produce.testrecords import LARGEST_RECORD_BYTES, MAX_RECORD_BYTES, new_run_id, partition_key_for

# PutRecords: at most 500 records and 10 MiB a request.
MAX_BATCH_RECORDS = PUT_RECORDS_MAX_RECORDS
MAX_BATCH_BYTES = PUT_RECORDS_MAX_BYTES
MAX_GIVE_UP = 3600.0  # seconds: past an hour of failures, nobody is waiting for the run any more


@dataclass(frozen=True)
class ProducerSettings:
    keys: int
    records_per_key: int
    payload_bytes: int = 128
    mode: Literal["batch", "sequential"] = "batch"
    rate: float | None = None  # records/s for the whole run; None: as fast as the shards allow
    concurrency: int = 8  # requests in flight (batch) or keys in progress (sequential)
    explicit_hash_keys: Literal["none", "keytree"] = "none"
    pacing: bool = True  # per-shard pace at the shard limits below
    shard_records_per_second: float = 1000.0
    shard_bytes_per_second: float = 1024.0 * 1024.0
    max_batch_records: int = MAX_BATCH_RECORDS
    max_batch_bytes: int = MAX_BATCH_BYTES
    retry_base: float = 0.05  # seconds; doubles per attempt of the same record
    retry_cap: float = 2.0
    give_up_after: float = 120.0  # seconds of retrying one record before the key is abandoned
    # Seconds without a single answer from the endpoint (refused, dropped, timed out: the server is
    # gone) before the whole run stops with its partial report. One bound for the run, not per key.
    unanswered_give_up: float = 60.0
    one_record_per_key: bool = True  # False only to prove, in tests, that the rule is what keeps order
    run_id: str = ""
    record_total: int | None = None  # given records (OrderedProducer's `records`): their number
    # The stream's MaxRecordSizeInKiB in bytes (1 MiB unless raised, at most 10 MiB).
    max_record_bytes: int = MAX_RECORD_BYTES
    send_keys: bool = True  # False: records go without PartitionKey (an AUTO stream spreads them)
    # Each test record's JSON body re-encoded before it is sent (`produce --schema`: a registered schema).
    encode: Callable[[bytes], bytes] | None = None

    def validated(self) -> ProducerSettings:
        """Check the numbers (BadInput, one line, for the CLI and the panel) and fill in a run id."""

        def whole(name: str, value: Any, low: int, high: int) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise BadInput(f"{name} must be a whole number from {low} to {high}; got {value!r}")

        whole("keys", self.keys, 1, 1_000_000)
        whole("records per key", self.records_per_key, 1, 1_000_000)
        whole("concurrency", self.concurrency, 1, 256)
        whole("batch size", self.max_batch_records, 1, MAX_BATCH_RECORDS)
        whole("batch bytes", self.max_batch_bytes, 1024, MAX_BATCH_BYTES)
        whole("record size limit", self.max_record_bytes, MAX_RECORD_BYTES, LARGEST_RECORD_BYTES)
        run_id = self.run_id or new_run_id()
        key = partition_key_for(run_id, self.keys - 1)
        validate_partition_key(key)
        largest = self.max_record_bytes - (len(key.encode()) if self.send_keys else 0)
        whole("payload bytes", self.payload_bytes, 0, largest)
        if self.mode not in ("batch", "sequential"):
            raise BadInput(f"mode must be batch or sequential; got {self.mode!r}")
        if self.explicit_hash_keys not in ("none", "keytree"):
            raise BadInput(f"explicit hash keys must come from 'none' or 'keytree'; got {self.explicit_hash_keys!r}")
        for name, seconds in (
            ("give-up time per record", self.give_up_after),
            ("give-up time without answers (--give-up-after)", self.unanswered_give_up),
        ):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_GIVE_UP:
                raise BadInput(f"{name} must be more than 0 and at most {MAX_GIVE_UP:g} seconds; got {seconds!r}")
        if self.rate is not None and not (isinstance(self.rate, (int, float)) and self.rate > 0):
            raise BadInput(f"rate must be a positive number of records per second; got {self.rate!r}")
        return replace(self, run_id=run_id)

    @property
    def key_bytes(self) -> int:
        """What a partition key adds to each record (its longest, the last key's)."""
        return len(partition_key_for(self.run_id or "0" * 12, self.keys - 1).encode()) if self.send_keys else 0

    @property
    def total(self) -> int:
        return self.record_total if self.record_total is not None else self.keys * self.records_per_key

    def retry_delay(self, attempts: int) -> float:
        """Seconds to wait before the next attempt of a record tried `attempts` times: exponential
        backoff with jitter, so retries of many keys do not all land in the same instant."""
        backoff: float = min(self.retry_cap, self.retry_base * 2 ** (attempts - 1))
        return backoff * random.uniform(0.5, 1.0)
