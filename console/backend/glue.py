"""The Glue Schema Registry calls kconsole makes: reading a schema version to decode records, and
registering schemas for `kconsole demo schemas`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from console.backend.calls import CallPath
from console.errors import ConsoleError


class GlueBackend:
    """Glue Schema Registry calls through the backend's Glue client (opened on first use) and its one call path."""

    def __init__(self, calls: CallPath, client: Callable[[str], Awaitable[Any]]) -> None:
        self._calls = calls
        self._client = client

    async def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        return await self._calls.call(await self._client("glue"), operation, service="glue", **params)

    async def schema_version(self, version_id: str) -> dict[str, Any]:
        """GetSchemaVersion by its id: the definition, data format, version number and the schema's ARN."""
        return await self._call("GetSchemaVersion", SchemaVersionId=version_id)

    async def schema_version_named(self, registry: str, name: str, version: int | None = None) -> dict[str, Any]:
        """GetSchemaVersion of REGISTRY/NAME: its version `version`, or the latest."""
        return await self._call(
            "GetSchemaVersion",
            SchemaId={"RegistryName": registry, "SchemaName": name},
            SchemaVersionNumber={"VersionNumber": version} if version is not None else {"LatestVersion": True},
        )

    async def ensure_registry(self, registry: str) -> None:
        """Create the registry unless it is there."""
        try:
            await self._call("GetRegistry", RegistryId={"RegistryName": registry})
        except ConsoleError:  # not found (or not readable): creating it says what is wrong
            await self._call("CreateRegistry", RegistryName=registry)

    async def register_schema(self, registry: str, name: str, data_format: str, definition: str) -> dict[str, Any]:
        """The version id of `definition` under REGISTRY/NAME: the schema is created, or the definition
        registered as its next version (or found as an existing one)."""
        try:
            answer = await self._call(
                "CreateSchema",
                RegistryId={"RegistryName": registry},
                SchemaName=name,
                DataFormat=data_format,
                Compatibility="NONE",
                SchemaDefinition=definition,
            )
            return {"SchemaVersionId": answer["SchemaVersionId"], "VersionNumber": 1}
        except ConsoleError:  # the schema is there already: register the definition as a version
            return await self._call(
                "RegisterSchemaVersion",
                SchemaId={"RegistryName": registry, "SchemaName": name},
                SchemaDefinition=definition,
            )
