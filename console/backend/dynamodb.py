"""DynamoDB, for the KCL's lease tables: list them, recognise them, read them a page at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from console.backend.calls import CallPath
from console.errors import BadInput, ConsoleError, StreamNotFound


class DynamoDBBackend:
    """Tables read through the backend's DynamoDB client (opened on first use)."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        client = await self._client("dynamodb")
        try:
            return await self._calls.call(client, operation, service="dynamodb", **params)
        except StreamNotFound:  # errors.py says "not found" in Kinesis's words; here it is a table
            raise BadInput(
                f"DynamoDB table {params.get('TableName')!r} not found on {self._calls.label}", code="table_not_found"
            ) from None

    async def table_names(self) -> list[str]:
        names: list[str] = []
        params: dict[str, Any] = {}
        while True:
            page = await self._call("ListTables", **params)
            names.extend(page.get("TableNames", []))
            if not page.get("LastEvaluatedTableName"):
                return names
            params = {"ExclusiveStartTableName": page["LastEvaluatedTableName"]}

    async def describe_table(self, table: str) -> dict[str, Any]:
        description: dict[str, Any] = (await self._call("DescribeTable", TableName=table))["Table"]
        return description

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The table's items as DynamoDB returns them ({"S": ...}, {"N": ...}, {"SS": [...]}); with
        `limit`, at most that many (a sample to recognise the table by)."""
        items: list[dict[str, Any]] = []
        async for page in self.scan_pages(table, page_size=limit):
            items.extend(page)
            if limit is not None and len(items) >= limit:
                return items[:limit]
        return items

    async def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict[str, Any]]]:
        """The table's items a page at a time (DynamoDB's 1 MB pages, or `page_size` items), so a
        caller can work on one page while the next is read."""
        params: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        if page_size is not None:
            params["Limit"] = page_size
        while True:
            page = await self._call("Scan", **params)
            yield page.get("Items", [])
            if not page.get("LastEvaluatedKey"):
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    async def create_lease_table(self, table: str, *, timeout: float = 60.0) -> None:
        """A table keyed as the KCL creates its lease table (one HASH key "leaseKey", a string), on
        demand billing; returns once it is ACTIVE."""
        await self._call(
            "CreateTable",
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (await self.describe_table(table)).get("TableStatus") != "ACTIVE":
            if loop.time() > deadline:
                raise ConsoleError(f"DynamoDB table {table!r} was not ACTIVE after {timeout:g} s")
            await asyncio.sleep(0.5)

    async def put_items(self, table: str, items: list[dict[str, Any]]) -> None:
        """Write items 25 at a time (BatchWriteItem's limit), resending what DynamoDB left unprocessed
        (a put of the same whole item is idempotent)."""
        for offset in range(0, len(items), 25):
            batch = [{"PutRequest": {"Item": item}} for item in items[offset : offset + 25]]
            while batch:
                answer = await self._call("BatchWriteItem", RequestItems={table: batch})
                batch = answer.get("UnprocessedItems", {}).get(table, [])

    async def get_item(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        """One item by its key, read consistently (None: no such item)."""
        answer = await self._call("GetItem", TableName=table, Key=key, ConsistentRead=True)
        return answer.get("Item")

    async def update_item_if(
        self,
        table: str,
        key: dict[str, Any],
        *,
        set_values: dict[str, dict[str, Any]],
        remove: list[str],
        add_numbers: dict[str, int],
        expected: dict[str, dict[str, Any] | None],
    ) -> None:
        """One conditional UpdateItem: set `set_values`, remove `remove`, add `add_numbers`, only while
        every attribute in `expected` still holds its value (None: while it is absent). A condition
        that no longer holds raises BackendError code "condition_failed"; nothing is written then."""
        names: dict[str, str] = {}
        values: dict[str, dict[str, Any]] = {}

        def name(attribute: str) -> str:
            placeholder = f"#a{len(names)}"
            names[placeholder] = attribute
            return placeholder

        def value(given: dict[str, Any]) -> str:
            placeholder = f":v{len(values)}"
            values[placeholder] = given
            return placeholder

        parts = []
        if set_values:
            parts.append("SET " + ", ".join(f"{name(a)} = {value(v)}" for a, v in set_values.items()))
        if remove:
            parts.append("REMOVE " + ", ".join(name(a) for a in remove))
        if add_numbers:
            parts.append("ADD " + ", ".join(f"{name(a)} {value({'N': str(n)})}" for a, n in add_numbers.items()))
        conditions = [
            f"attribute_not_exists({name(a)})" if v is None else f"{name(a)} = {value(v)}" for a, v in expected.items()
        ]
        params: dict[str, Any] = {
            "TableName": table,
            "Key": key,
            "UpdateExpression": " ".join(parts),
            "ExpressionAttributeNames": names,
        }
        if conditions:
            params["ConditionExpression"] = " AND ".join(conditions)
        if values:
            params["ExpressionAttributeValues"] = values
        await self._call("UpdateItem", **params)

    async def put_item_if_absent(self, table: str, item: dict[str, Any], key_attribute: str) -> None:
        """PutItem only when no item has this key yet (BackendError "condition_failed" otherwise)."""
        await self._call(
            "PutItem",
            TableName=table,
            Item=item,
            ConditionExpression="attribute_not_exists(#k)",
            ExpressionAttributeNames={"#k": key_attribute},
        )
