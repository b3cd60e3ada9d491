"""An independent reader: what is really on the server after a producer run, counted per key with
plain botocore (synchronous, its own client, straight to the server) and none of kconsole's code.

    truth = read_run(endpoint_url, stream, run_id, keys=K, records_per_key=R)
    truth.lost, truth.duplicated, truth.reordered, truth.late_duplicates

Every shard is read from TRIM_HORIZON to its end (closed) or its tip (open), parents before
children. Per key, the records in read order are judged by first occurrence: `reordered` counts
first occurrences that come after a higher sequence number's first occurrence; `late_duplicates`
counts extra copies that arrive after a higher sequence number was already read; `duplicated`
counts every extra copy (late ones included); `lost` counts the expected records never read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

import botocore.session


@dataclass
class RunTruth:
    records: int = 0  # copies of the run's records read
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    late_duplicates: int = 0
    keys_reordered: list[str] = field(default_factory=list)

    def as_row(self) -> dict:
        return {
            "read": self.records,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "reordered": self.reordered,
            "late_duplicates": self.late_duplicates,
        }


def _client(endpoint_url: str):
    session = botocore.session.get_session()
    return session.create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        aws_access_key_id="truth",
        aws_secret_access_key="truth",
    )


def _shards_parents_first(client, stream: str) -> list[dict]:
    shards, token = [], None
    while True:
        page = client.list_shards(NextToken=token) if token else client.list_shards(StreamName=stream)
        shards.extend(page["Shards"])
        token = page.get("NextToken")
        if not token:
            break
    by_id = {shard["ShardId"]: shard for shard in shards}

    def depth(shard: dict) -> int:
        parents = [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p in by_id]
        return 1 + max((depth(by_id[p]) for p in parents), default=-1)

    return sorted(shards, key=lambda shard: (depth(shard), shard["ShardId"]))


def read_run(endpoint_url: str, stream: str, run_id: str, *, keys: list[str], records_per_key: int) -> RunTruth:
    client = _client(endpoint_url)
    per_key: dict[str, list[int]] = defaultdict(list)
    for shard in _shards_parents_first(client, stream):
        iterator = client.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=10000)
            for record in page["Records"]:
                try:
                    doc = json.loads(record["Data"])
                except ValueError:
                    continue
                if isinstance(doc, dict) and doc.get("run") == run_id:
                    per_key[doc["key"]].append(int(doc["seq"]))
            iterator = page.get("NextShardIterator")
            if not page["Records"] and not page.get("MillisBehindLatest"):
                break
    truth = RunTruth()
    for key in keys:
        sequence = per_key.get(key, [])
        truth.records += len(sequence)
        seen: set[int] = set()
        highest = -1
        for seq in sequence:
            if seq in seen:
                truth.duplicated += 1
                if seq < highest:
                    truth.late_duplicates += 1
            else:
                seen.add(seq)
                if seq < highest:
                    truth.reordered += 1
                    if key not in truth.keys_reordered:
                        truth.keys_reordered.append(key)
            highest = max(highest, seq)
        truth.lost += sum(1 for seq in range(records_per_key) if seq not in seen)
    return truth
