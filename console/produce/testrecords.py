"""The test records the embedded producer writes and the verifier reads back.

A record is one JSON object: run id, partition key, per-key sequence number (0, 1, 2, ... in the
order the producer means the key's records to be read) and the wall-clock time the producer first
handed it to a request, padded with a filler field up to the requested payload size. Anything
else found in a stream (other runs, other producers) decodes to None and is ignored.
"""

from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass
from typing import Any

from console.bounds import MAX_RECORD_SIZE_KIB, MIN_RECORD_SIZE_KIB

# AWS's limit on one record's data blob plus its partition key: 1 MiB unless the stream says otherwise
# (MaxRecordSizeInKiB, up to 10 MiB: LARGEST_RECORD_BYTES).
MAX_RECORD_BYTES = MIN_RECORD_SIZE_KIB * 1024
LARGEST_RECORD_BYTES = MAX_RECORD_SIZE_KIB * 1024
_FORMAT_TAG = "kconsole-test/1"


# Keyless records are tracked under a name of their own that no partition key can have (a control
# character starts it) and is never sent.
KEYLESS_PREFIX = "\x00line-"


def ledger_key(record: Any) -> str:
    """The name a given record is tracked under: its partition key, or for a keyless one its line."""
    key: str | None = record.key
    return key if key is not None else f"{KEYLESS_PREFIX}{record.line}"


def is_keyless(name: str) -> bool:
    return name.startswith(KEYLESS_PREFIX)


def new_run_id() -> str:
    """Short, unique enough to tell runs apart in one stream's retention window."""
    return secrets.token_hex(6)


def partition_key_for(run_id: str, index: int) -> str:
    """The run's index-th partition key. The run id is part of it, so two runs never share keys."""
    return f"{run_id}-{index:06d}"


@dataclass(frozen=True, slots=True)
class TestRecord:
    __test__ = False  # not a pytest test class, whatever its name says

    run_id: str
    key: str
    seq: int
    sent_at: float  # epoch seconds when the producer first sent it

    def encode(self, payload_bytes: int = 0) -> bytes:
        """The JSON body, padded with a filler field to `payload_bytes` when that is larger."""
        return encode_record(self.run_id, self.key, self.seq, self.sent_at, payload_bytes)


def encode_record(run_id: str, key: str, seq: int, sent_at: float, payload_bytes: int = 0) -> bytes:
    """TestRecord(...).encode(payload_bytes) without building the object (the producer's hot path)."""
    # Numbers formatted into a cached per-key prefix: 3x faster than json.dumps of the whole object.
    body = b'%s%d,"ts":%.6f}' % (_prefix(run_id, key), seq, sent_at)
    room = payload_bytes - len(body)
    if room <= 0:
        return body
    if room < 9:  # too little for `,"pad":""`: JSON whitespace fills it exactly
        return body[:-1] + b" " * room + b"}"
    return body[:-1] + b',"pad":"' + b"x" * (room - 9) + b'"}'


@functools.lru_cache(maxsize=65536)
def _prefix(run_id: str, key: str) -> bytes:
    return f'{{"t":"{_FORMAT_TAG}","run":{json.dumps(run_id)},"key":{json.dumps(key)},"seq":'.encode()


def decode(data: bytes, run_id: str | None = None) -> TestRecord | None:
    """The test record in `data`, or None when it is not one (of this run, when `run_id` is given)."""
    if not data.startswith(b'{"t":"' + _FORMAT_TAG.encode()):
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    return from_document(doc, run_id)


def from_document(doc: Any, run_id: str | None = None) -> TestRecord | None:
    """The test record a decoded document holds (its run, key, seq and ts fields), or None."""
    try:
        record = TestRecord(str(doc["run"]), str(doc["key"]), int(doc["seq"]), float(doc["ts"]))
    except (ValueError, KeyError, TypeError):
        return None
    if run_id is not None and record.run_id != run_id:
        return None
    return record
