"""Records written by the AWS Glue Schema Registry serializers: their header, the registered schema
each names, and the payload decoded with the format's own library.

The serializer's layout (aws-glue-schema-registry, `AWSSchemaRegistryConstants` and
`SerializationDataEncoder`): one header version byte (3), one compression byte (0: none, 5: zlib),
the schema version id as a 16-byte UUID (most significant half first), then the payload — Avro
binary, JSON text, or a Protobuf message after its message index (console.read.protobuf_schemas).

The domain does no I/O: `SchemaCatalog` is handed the lookup (the backend's GetSchemaVersion) and
fetches the versions a batch names before the batch is decoded; decoding itself only reads the
catalog. A version that cannot be fetched is remembered with its reason, so each is asked for once.
"""

from __future__ import annotations

import io
import json
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from console.errors import EndpointUnreachable, Throttled

HEADER_VERSION = 3
COMPRESSION_NONE = 0
COMPRESSION_ZLIB = 5
HEADER_SIZE = 18  # version byte, compression byte, 16-byte UUID
CATALOG_SIZE = 256  # schema versions remembered per session
MAX_DEFINITION_CHARS = 1024 * 1024  # a schema larger than this is not parsed
MAX_INFLATED_BYTES = 64 * 1024 * 1024  # as console.read.decoding's gzip limit

FORMAT_AVRO = "AVRO"
FORMAT_JSON = "JSON"
FORMAT_PROTOBUF = "PROTOBUF"


def schema_version_id(data: bytes) -> str | None:
    """The schema version id a payload's serializer header names, or None when it has no such header."""
    if len(data) < HEADER_SIZE or data[0] != HEADER_VERSION or data[1] not in (COMPRESSION_NONE, COMPRESSION_ZLIB):
        return None
    return str(uuid.UUID(bytes=bytes(data[2:HEADER_SIZE])))


def encode_header(version_id: str, *, compressed: bool = False) -> bytes:
    """The serializer's header for a schema version id."""
    return bytes((HEADER_VERSION, COMPRESSION_ZLIB if compressed else COMPRESSION_NONE)) + uuid.UUID(version_id).bytes


@dataclass(slots=True)
class RegisteredSchema:
    """One schema version as GetSchemaVersion answers it, with its definition parsed once."""

    version_id: str
    name: str  # REGISTRY/SCHEMA
    version: int | None
    data_format: str
    definition: str
    parsed: Any = field(default=None, repr=False)
    problem: str | None = None  # why records of this version are not decoded

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}" if self.version is not None else self.name

    @classmethod
    def from_answer(cls, version_id: str, answer: dict[str, Any]) -> RegisteredSchema:
        arn = str(answer.get("SchemaArn") or "")
        # arn:aws:glue:REGION:ACCOUNT:schema/REGISTRY/NAME
        name = arn.split(":schema/", 1)[1] if ":schema/" in arn else arn or version_id
        schema = cls(
            version_id,
            name,
            answer.get("VersionNumber"),
            str(answer.get("DataFormat") or ""),
            str(answer.get("SchemaDefinition") or ""),
        )
        schema.parsed, schema.problem = _parse(schema.data_format, schema.definition)
        return schema


def _parse(data_format: str, definition: str) -> tuple[Any, str | None]:
    if len(definition) > MAX_DEFINITION_CHARS:
        return None, f"schema definition of {len(definition):,} characters is too large to parse"
    if data_format == FORMAT_AVRO:
        import fastavro

        try:
            return fastavro.parse_schema(json.loads(definition)), None
        except Exception as problem:  # fastavro raises several types for a bad schema
            return None, f"Avro schema does not parse: {problem}"
    if data_format == FORMAT_JSON:
        return None, None
    if data_format == FORMAT_PROTOBUF:
        from console.read.protobuf_schemas import ProtoSchemaError, build

        try:
            return build(definition), None
        except ProtoSchemaError as problem:
            return None, str(problem)
    return None, f"data format {data_format or '(none)'} is not one kconsole decodes"


class SchemaCatalog:
    """The schema versions met this session (bounded, least recently used dropped), fetched through `lookup`."""

    def __init__(self, lookup: Callable[[str], Awaitable[dict[str, Any]]] | None, size: int = CATALOG_SIZE) -> None:
        self._lookup = lookup
        self._size = size
        self._known: OrderedDict[str, RegisteredSchema | str] = OrderedDict()

    def get(self, version_id: str) -> RegisteredSchema | str | None:
        """The version, the reason it could not be fetched, or None when not asked for yet."""
        found = self._known.get(version_id)
        if found is not None:
            self._known.move_to_end(version_id)
        return found

    def add(self, schema: RegisteredSchema) -> None:
        """Hold a version fetched by other means (the one `put --schema` encodes with)."""
        self._remember(schema.version_id, schema)

    def _remember(self, version_id: str, found: RegisteredSchema | str) -> None:
        self._known[version_id] = found
        while len(self._known) > self._size:
            self._known.popitem(last=False)

    async def prefetch(self, payloads: Iterable[bytes]) -> None:
        """Fetch the versions these payloads name that the catalog does not hold yet."""
        wanted = {version_id for data in payloads if (version_id := schema_version_id(data)) is not None}
        for version_id in wanted:
            if version_id in self._known:
                continue
            if self._lookup is None:
                self._remember(version_id, "no schema registry on this backend")
                continue
            try:
                answer = await self._lookup(version_id)
            except (Throttled, EndpointUnreachable, OSError, TimeoutError):
                continue  # for now: this batch's records are shown raw, the next batch asks again
            except Exception as problem:  # permission, deleted, not served: the record is shown raw
                self._remember(version_id, f"schema version {version_id} not fetched: {problem}")
                continue
            self._remember(version_id, RegisteredSchema.from_answer(version_id, answer))


class SchemaDecodeError(ValueError):
    """A schema-encoded payload that cannot be decoded; the message says why."""


def decode_payload(data: bytes, catalog: SchemaCatalog) -> tuple[Any, RegisteredSchema, bool]:
    """(the decoded value as JSON-able data, its schema, whether it was zlib-compressed);
    SchemaDecodeError with one line otherwise."""
    version_id = schema_version_id(data)
    if version_id is None:
        raise SchemaDecodeError("no Glue Schema Registry header")
    found = catalog.get(version_id)
    if found is None:
        raise SchemaDecodeError(f"schema version {version_id} not fetched yet (the registry did not answer)")
    if isinstance(found, str):
        raise SchemaDecodeError(found)
    if found.problem is not None:
        raise SchemaDecodeError(f"{found.label}: {found.problem}")
    compressed = data[1] == COMPRESSION_ZLIB
    body = bytes(data[HEADER_SIZE:])
    if compressed:
        inflater = zlib.decompressobj()
        try:
            body = inflater.decompress(body, MAX_INFLATED_BYTES)
        except zlib.error as problem:
            raise SchemaDecodeError(f"{found.label}: corrupt zlib body ({problem})") from None
        if not inflater.eof:
            raise SchemaDecodeError(f"{found.label}: zlib body truncated or inflating past 64 MiB")
    if found.data_format == FORMAT_AVRO:
        return _avro(body, found), found, compressed
    if found.data_format == FORMAT_PROTOBUF:
        return _protobuf(body, found), found, compressed
    try:
        return json.loads(body.decode("utf-8")), found, compressed
    except (ValueError, RecursionError) as problem:
        raise SchemaDecodeError(f"{found.label}: payload is not JSON ({problem})") from None


def _avro(body: bytes, schema: RegisteredSchema) -> Any:
    import fastavro

    stream = io.BytesIO(body)
    try:
        value = fastavro.schemaless_reader(stream, schema.parsed, None)
    except Exception as problem:  # a payload that does not match its schema fails in many ways
        raise SchemaDecodeError(f"{schema.label}: payload does not match the Avro schema ({problem!r})") from None
    left = len(body) - stream.tell()
    if left:
        raise SchemaDecodeError(f"{schema.label}: payload does not match the Avro schema ({left} bytes left over)")
    return json_able(value)


def _protobuf(body: bytes, schema: RegisteredSchema) -> Any:
    from console.read.protobuf_schemas import ProtoPayloadError

    try:
        value, _ = schema.parsed.decode(body)
    except ProtoPayloadError as problem:
        raise SchemaDecodeError(f"{schema.label}: payload does not match the Protobuf schema ({problem})") from None
    return value


def json_able(value: Any) -> Any:
    """An Avro value as JSON data: bytes in hex, dates and times in ISO-8601, decimals and UUIDs as text."""
    if isinstance(value, dict):
        return {str(key): json_able(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_able(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, float) and value != value:
        return None  # NaN has no JSON spelling
    return value
