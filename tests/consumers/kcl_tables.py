"""Real KCL lease tables on the embedded server's DynamoDB, written over HTTP the way the KCL writes
them: the table as `DynamoDBLeaseRefresher.createLeaseTableIfNotExists` creates it (one HASH key
"leaseKey" of type S) and items as `DynamoDBLeaseSerializer.toDynamoRecord` (KCL 2.x/3.x) and
`KinesisClientLeaseSerializer` (KCL 1.x) put them, attribute for attribute."""

from __future__ import annotations

import contextlib
import uuid

from aiobotocore.session import AioSession

from console.backend.config import DUMMY_CREDENTIALS


@contextlib.asynccontextmanager
async def aws_client(service: str, endpoint_url: str):
    """A client of one of the embedded server's services (DynamoDB, CloudWatch, ...)."""
    async with AioSession().create_client(
        service,
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        aws_access_key_id=DUMMY_CREDENTIALS[0],
        aws_secret_access_key=DUMMY_CREDENTIALS[1],
    ) as client:
        yield client


def dynamodb(endpoint_url: str):
    return aws_client("dynamodb", endpoint_url)


async def create_lease_table(client, name: str | None = None) -> str:
    name = name or f"kcl-app-{uuid.uuid4().hex[:8]}"
    await client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def kcl_lease(
    shard_id: str,
    *,
    owner: str | None = "worker-1",
    counter: int = 7,
    checkpoint: str = "TRIM_HORIZON",
    subsequence: int = 0,
    parents: tuple[str, ...] = (),
    children: tuple[str, ...] = (),
    pending: str | None = None,
    version: int = 2,
    lease_key: str | None = None,
    hash_range: tuple[int, int] | None = None,
    throughput_kbps: float = 0.0,
    checkpoint_owner: str | None = None,
    stream_identifier: str | None = None,
) -> dict:
    """A lease item exactly as the KCL serializer writes it (version 1, 2 or 3)."""
    item = {
        "leaseKey": {"S": lease_key or shard_id},
        "leaseCounter": {"N": str(counter)},
        "ownerSwitchesSinceCheckpoint": {"N": "0"},
        "checkpoint": {"S": checkpoint},
        "checkpointSubSequenceNumber": {"N": str(subsequence)},
    }
    if owner is not None:
        item["leaseOwner"] = {"S": owner}
    if parents:
        item["parentShardId"] = {"SS": list(parents)}
    if children:
        item["childShardIds"] = {"SS": list(children)}
    if pending is not None:
        item["pendingCheckpoint"] = {"S": pending}
        item["pendingCheckpointSubSequenceNumber"] = {"N": "0"}
    if version >= 2 and hash_range is not None:
        item["startingHashKey"] = {"S": str(hash_range[0])}
        item["endingHashKey"] = {"S": str(hash_range[1])}
    if version >= 3:
        item["entityType"] = {"S": "LEASE"}
        item["throughputKBps"] = {"N": repr(float(throughput_kbps))}
        if checkpoint_owner is not None:
            item["checkpointOwner"] = {"S": checkpoint_owner}
    if stream_identifier is not None:  # DynamoDBMultiStreamLeaseSerializer
        item["leaseKey"] = {"S": f"{stream_identifier}:{shard_id}"}
        item["streamName"] = {"S": stream_identifier}
        item["shardId"] = {"S": shard_id}
    return item


async def put_items(client, table: str, items: list[dict]) -> None:
    for offset in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": item}} for item in items[offset : offset + 25]]
        while batch:
            answer = await client.batch_write_item(RequestItems={table: batch})
            batch = answer.get("UnprocessedItems", {}).get(table, [])


# ---- KCL 3.x: WorkerMetricStats and CoordinatorState ----------------------------------------------
# As the KCL writes them: `WorkerMetricStats` through the DynamoDB Enhanced Client ("wid" S or, in the
# lease table, "leaseKey" S; "lut" N epoch seconds; "sts" and "opr" M of L of N keyed by
# `WorkerMetricType` short names; "entityType" S), the leader lock through the DynamoDB lock client
# ("ownerName", "leaseDuration", "recordVersionNumber" S, plus `LeaderLock.serialize()`'s entityType)
# and `MigrationState.serialize()` ("cv", "mb" S, "mts" N millis). The dedicated tables' keys are
# "wid" (`LegacyWorkerMetricStats`) and "key" (`LegacyTableCoordinatorStateDAODelegate`).


async def _create_keyed_table(client, name: str, key: str) -> str:
    await client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


async def create_worker_metrics_table(client, lease_table: str) -> str:
    return await _create_keyed_table(client, f"{lease_table}-WorkerMetricStats", "wid")


async def create_coordinator_table(client, lease_table: str) -> str:
    return await _create_keyed_table(client, f"{lease_table}-CoordinatorState", "key")


def _numbers(values) -> dict:
    return {"L": [{"N": repr(float(v))} for v in values]}


def worker_metrics(
    worker: str,
    *,
    last_update: int,
    cpu: tuple[float, ...] = (20.0, 25.0),
    cpu_max: int = 100,
    in_lease_table: bool = False,
) -> dict:
    item = {
        ("leaseKey" if in_lease_table else "wid"): {"S": worker},
        "lut": {"N": str(last_update)},
        "sts": {"M": {"C": _numbers(cpu)}},
        "opr": {"M": {"C": {"L": [{"N": str(cpu_max)}]}}},
        "entityType": {"S": "WORKER_METRIC_STATS"},
        "sup": {"N": "1"},
        "slu": {"N": str(last_update)},
    }
    return item


def leader_lock(owner: str, *, in_lease_table: bool = False) -> dict:
    return {
        ("leaseKey" if in_lease_table else "key"): {"S": "Leader"},
        "ownerName": {"S": owner},
        "leaseDuration": {"S": "20000"},
        "recordVersionNumber": {"S": str(uuid.uuid4())},
        "entityType": {"S": "LEADER"},
    }


def migration_state(client_version: str, *, in_lease_table: bool = False, modified_by: str = "worker-1") -> dict:
    return {
        ("leaseKey" if in_lease_table else "key"): {"S": "Migration3.0"},
        "cv": {"S": client_version},
        "mb": {"S": modified_by},
        "mts": {"N": "1764000000000"},
        "entityType": {"S": "CLIENT_VERSION_MIGRATION"},
    }
