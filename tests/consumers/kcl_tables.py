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
async def dynamodb(endpoint_url: str):
    session = AioSession()
    async with session.create_client("dynamodb", region_name="us-east-1", endpoint_url=endpoint_url,
                                     aws_access_key_id=DUMMY_CREDENTIALS[0],
                                     aws_secret_access_key=DUMMY_CREDENTIALS[1]) as client:
        yield client


async def create_lease_table(client, name: str | None = None) -> str:
    name = name or f"kcl-app-{uuid.uuid4().hex[:8]}"
    await client.create_table(TableName=name, KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
                              BillingMode="PAY_PER_REQUEST")
    return name


def kcl_lease(shard_id: str, *, owner: str | None = "worker-1", counter: int = 7, checkpoint: str = "TRIM_HORIZON",
              subsequence: int = 0, parents: tuple[str, ...] = (), children: tuple[str, ...] = (),
              pending: str | None = None, version: int = 2, lease_key: str | None = None,
              hash_range: tuple[int, int] | None = None) -> dict:
    """A lease item exactly as the KCL serializer writes it (version 1, 2 or 3)."""
    item = {"leaseKey": {"S": lease_key or shard_id}, "leaseCounter": {"N": str(counter)},
            "ownerSwitchesSinceCheckpoint": {"N": "0"},
            "checkpoint": {"S": checkpoint}, "checkpointSubSequenceNumber": {"N": str(subsequence)}}
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
        item["throughputKBps"] = {"N": "0.0"}
    return item


async def put_items(client, table: str, items: list[dict]) -> None:
    for offset in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": item}} for item in items[offset:offset + 25]]
        while batch:
            answer = await client.batch_write_item(RequestItems={table: batch})
            batch = answer.get("UnprocessedItems", {}).get(table, [])
