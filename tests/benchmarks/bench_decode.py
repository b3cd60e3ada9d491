"""Decoding alone (console.read.decoding.decode_record, what `kconsole tail` runs on every record)
against plain base64 + json.loads of the same wire records, wire record for wire record; and KPL
de-aggregation against aws-kinesis-agg + json.

- The corpus is built once as the API's JSON carries it: each record's Data base64-encoded.
- baseline: for every wire record `base64.b64decode`, `.decode("utf-8")`, `json.loads` (a ValueError
  counts as "not JSON" and is skipped): a hand-rolled `get-records | base64 -d | jq` loop, in its
  fastest form (json.loads on str skips the encoding sniffing it does on bytes).
- decoder: for every wire record the same `base64.b64decode` (botocore does it before our code
  sees the bytes, so it is part of the real cost), then `decode_record`, which detects the kind,
  inflates gzip, de-aggregates KPL and parses JSON.
- `ratio` is wire records/s over wire records/s: the same units on both sides. The decoder does
  work the baseline never does (it inflates the gzip records and parses the 10 JSON user records
  inside each KPL aggregate, where the baseline gives up at the first byte), so `per_kind` shows
  where the time goes.
- KPL: 2,000 aggregates of 10 JSON events each, decoded by `decode_record` against the library's
  own `iter_deaggregate_records(data_format="Boto3")` + base64 + json.loads of every user record.
CPU time (time.process_time), best of ROUNDS interleaved rounds. Target: ratio >= 0.8, kpl_ratio >= 1.5.

The mix (per 100 wire records): 55 JSON, 15 gzip'd JSON, 15 UTF-8 text, 10 binary, 5 KPL aggregates
of 10 JSON user records each. Payload JSON is a ~300-byte event document.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit
from aws_kinesis_agg.aggregator import AggRecord
from aws_kinesis_agg.deaggregator import iter_deaggregate_records

from console.read.decoding import decode_record

WIRE_RECORDS = 10_000
KPL_AGGREGATES = 2_000
ROUNDS = 7


def event(rng: random.Random, index: int) -> bytes:
    doc = {
        "event_id": f"evt-{index:08d}",
        "user": f"user-{rng.randrange(10_000)}",
        "type": rng.choice(["click", "view", "purchase", "signup"]),
        "ts": 1_763_800_000_000 + index,
        "amount": round(rng.random() * 500, 2),
        "tags": [rng.choice("abcdefgh") for _ in range(4)],
        "context": {
            "ua": "Mozilla/5.0 (X11; Linux x86_64)",
            "ip": f"10.0.{rng.randrange(256)}.{rng.randrange(256)}",
            "session": f"{rng.getrandbits(64):016x}",
        },
    }
    return json.dumps(doc).encode()


def kind_of_slot(index: int) -> str:
    slot = index % 100
    return "json" if slot < 55 else "gzip" if slot < 70 else "text" if slot < 85 else "binary" if slot < 95 else "kpl"


def aggregate_of(rng: random.Random, index: int) -> bytes:
    aggregate = AggRecord()
    for inner in range(10):
        aggregate.add_user_record(f"pk-{index}-{inner}", event(rng, index * 10 + inner))
    return aggregate.get_contents()[2]


def build_corpus(count: int) -> list[str]:
    rng = random.Random(8)
    corpus: list[str] = []
    for index in range(count):
        slot = index % 100
        if slot < 55:
            data = event(rng, index)
        elif slot < 70:
            data = gzip.compress(event(rng, index), mtime=0)
        elif slot < 85:
            data = f"{index} INFO request served in {rng.randrange(900)} ms path=/api/v1/items".encode()
        elif slot < 95:
            data = rng.randbytes(200)
        else:
            data = aggregate_of(rng, index)
        corpus.append(base64.b64encode(data).decode("ascii"))
    return corpus


def run_baseline(corpus: list[str]) -> int:
    parsed = 0
    for encoded in corpus:
        try:
            json.loads(base64.b64decode(encoded).decode("utf-8"))
            parsed += 1
        except ValueError:
            pass
    return parsed


def run_decoder(corpus: list[str]) -> int:
    user_records = 0
    for sequence, encoded in enumerate(corpus):
        user_records += len(
            decode_record(
                base64.b64decode(encoded),
                shard_id="shardId-000000000000",
                sequence_number=str(sequence),
                partition_key="pk",
            )
        )
    return user_records


def run_kpl_decoder(aggregates: list[dict]) -> int:
    user_records = 0
    for record in aggregates:
        user_records += len(
            decode_record(
                record["Data"],
                shard_id="shardId-000000000000",
                sequence_number=record["SequenceNumber"],
                partition_key=record["PartitionKey"],
            )
        )
    return user_records


def run_kpl_library(aggregates: list[dict]) -> int:
    user_records = 0
    for user in iter_deaggregate_records(aggregates, data_format="Boto3"):
        json.loads(base64.b64decode(user["kinesis"]["data"]).decode("utf-8"))
        user_records += 1
    return user_records


def timed(fn, *args) -> tuple[float, int]:
    started = time.process_time()
    result = fn(*args)
    return time.process_time() - started, result


def best_pair(baseline, ours, data) -> tuple[float, float, int, int]:
    """Best CPU time of each side over ROUNDS rounds that alternate the sides."""
    base_s = ours_s = float("inf")
    for _ in range(ROUNDS):
        seconds, base_count = timed(baseline, data)
        base_s = min(base_s, seconds)
        seconds, ours_count = timed(ours, data)
        ours_s = min(ours_s, seconds)
    return base_s, ours_s, base_count, ours_count


def main() -> None:
    corpus = build_corpus(WIRE_RECORDS)
    baseline_s, decoder_s, json_parsed, user_records = best_pair(run_baseline, run_decoder, corpus)
    per_kind = {}
    for kind in ("json", "gzip", "text", "binary", "kpl"):
        subset = [encoded for index, encoded in enumerate(corpus) if kind_of_slot(index) == kind]
        base, ours, _, _ = best_pair(run_baseline, run_decoder, subset)
        per_kind[kind] = round(base / ours, 3)

    rng = random.Random(9)
    aggregates = [
        {
            "Data": aggregate_of(rng, index),
            "PartitionKey": f"pk-{index}",
            "SequenceNumber": str(index),
            "ApproximateArrivalTimestamp": None,
        }
        for index in range(KPL_AGGREGATES)
    ]
    library_s, kpl_s, library_records, kpl_records = best_pair(run_kpl_library, run_kpl_decoder, aggregates)
    assert library_records == kpl_records == KPL_AGGREGATES * 10

    baseline_rps = WIRE_RECORDS / baseline_s
    decoder_rps = WIRE_RECORDS / decoder_s
    print(
        f"corpus: {WIRE_RECORDS} wire records, {user_records} user records after de-aggregation; "
        f"baseline parsed {json_parsed} as JSON"
    )
    print(f"baseline base64+json.loads : {baseline_rps:12,.0f} wire records/s")
    print(f"decoder  base64+decode     : {decoder_rps:12,.0f} wire records/s")
    print("speed vs baseline per kind: " + ", ".join(f"{kind} {value:.2f}x" for kind, value in per_kind.items()))
    print(
        f"KPL: decoder {kpl_records / kpl_s:,.0f} user records/s, aws-kinesis-agg + json "
        f"{library_records / library_s:,.0f} user records/s"
    )
    emit(
        {
            "benchmark": "tail_decode",
            "path": "base64 (botocore) + decode_record per wire record, as kconsole tail runs it",
            "baseline": "base64.b64decode + json.loads per wire record",
            "wire_records": WIRE_RECORDS,
            "user_records": user_records,
            "baseline_rps": round(baseline_rps),
            "decoder_rps": round(decoder_rps),
            "ratio": round(decoder_rps / baseline_rps, 3),
            "per_kind": per_kind,
            "kpl_baseline": "aws-kinesis-agg iter_deaggregate_records + base64 + json.loads per user record",
            "kpl_user_rps": round(kpl_records / kpl_s),
            "kpl_library_user_rps": round(library_records / library_s),
            "kpl_ratio": round(library_s / kpl_s, 3),
            "targets": {"ratio": 0.8, "kpl_ratio": 1.5},
        }
    )


if __name__ == "__main__":
    main()
