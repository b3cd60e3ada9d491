"""`put --schema REGISTRY/NAME[:VERSION]`: JSON documents encoded as the AWS Glue Schema Registry
serializers encode them (console.read.schemas has the header's layout), checked line by line.

A document is validated against the registered schema (fastavro's validation for Avro, jsonschema for
JSON Schema, the descriptors for Protobuf: the first message the .proto declares), encoded, and then
decoded again exactly as `tail` decodes it: a value the encoding would change (a field Protobuf drops,
a number Avro cannot hold) is a bad line naming its field, before anything is sent.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from console.errors import BadInput
from console.read.schemas import (
    FORMAT_AVRO,
    FORMAT_JSON,
    FORMAT_PROTOBUF,
    RegisteredSchema,
    SchemaCatalog,
    SchemaDecodeError,
    decode_payload,
    encode_header,
)

_NAME = re.compile(r"^([A-Za-z0-9_$#-]{1,255})/([A-Za-z0-9_$#.-]{1,255})(?::([0-9]{1,9}))?$")


class DocumentProblem(ValueError):
    """A document that does not fit the schema: the message names the field."""


def parse_schema_name(text: str) -> tuple[str, str, int | None]:
    """(registry, schema, version or None for the latest) of REGISTRY/NAME[:VERSION]; BadInput otherwise."""
    match = _NAME.match(text.strip())
    if match is None or (match.group(3) is not None and int(match.group(3)) < 1):
        raise BadInput(f"--schema takes REGISTRY/NAME or REGISTRY/NAME:VERSION (a version from 1); got {text!r}")
    registry, name, version = match.groups()
    return registry, name, int(version) if version is not None else None


@dataclass
class SchemaEncoder:
    """One registered schema version, ready to encode documents with."""

    schema: RegisteredSchema

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> SchemaEncoder:
        """From GetSchemaVersion's answer; BadInput when kconsole cannot encode with that version."""
        schema = RegisteredSchema.from_answer(str(answer.get("SchemaVersionId") or ""), answer)
        if schema.problem is not None:
            raise BadInput(f"schema {schema.label} cannot be encoded with: {schema.problem}", code="bad_schema")
        if schema.data_format == FORMAT_JSON:
            try:
                schema.parsed = _json_validator(schema.definition)
            except ValueError as problem:
                raise BadInput(f"schema {schema.label} is not a JSON Schema: {problem}", code="bad_schema") from None
        return cls(schema)

    @property
    def label(self) -> str:
        return self.schema.label

    def encode(self, document: Any, *, whole: bool = True) -> bytes:
        """The serializer's bytes for one document; DocumentProblem naming the field otherwise. With
        `whole` False, fields the schema lacks are left out (Avro and Protobuf) rather than refused, and the
        round trip is not checked: the producer's test records carry fields a schema need not keep."""
        schema = self.schema
        if schema.data_format == FORMAT_AVRO:
            body = _avro(document, schema.parsed)
        elif schema.data_format == FORMAT_PROTOBUF:
            from console.read.protobuf_schemas import ProtoPayloadError

            try:
                body = schema.parsed.encode(document, ignore_unknown_fields=not whole)
            except ProtoPayloadError as problem:
                raise DocumentProblem(str(problem)) from None
        else:
            errors = sorted(schema.parsed.iter_errors(document), key=lambda error: list(error.absolute_path))
            if errors:
                first = errors[0]
                where = ".".join(str(part) for part in first.absolute_path) or "(the document)"
                raise DocumentProblem(f"field {where}: {first.message[:200]}")
            body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        data = encode_header(schema.version_id) + body
        if whole:
            self._check_round_trip(document, data)
        return data

    def decode(self, data: bytes) -> Any:
        """A payload decoded as `tail` decodes it; SchemaDecodeError when it does not decode."""
        catalog = SchemaCatalog(None)
        catalog.add(self.schema)
        return decode_payload(data, catalog)[0]

    def _check_round_trip(self, document: Any, data: bytes) -> None:
        try:
            decoded = self.decode(data)
        except SchemaDecodeError as problem:
            raise DocumentProblem(f"encoded, it does not decode: {problem}") from None
        path = _first_difference(document, decoded, "")
        if path is not None:
            raise DocumentProblem(
                f"field {path or '(the document)'}: {self.schema.data_format} would not keep its value"
            )


def _json_validator(definition: str) -> Any:
    import jsonschema

    schema = json.loads(definition)
    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as problem:
        raise ValueError(problem.message) from None
    return validator(schema)


def _avro(document: Any, parsed: Any) -> bytes:
    import fastavro
    from fastavro.validation import ValidationError, validate

    try:
        validate(document, parsed, raise_errors=True)
    except ValidationError as problem:
        raise DocumentProblem(_avro_reason(problem)) from None
    buffer = io.BytesIO()
    try:
        fastavro.schemaless_writer(buffer, parsed, document)
    except (ValueError, TypeError, OverflowError) as problem:
        raise DocumentProblem(f"does not encode as Avro: {problem}") from None
    return buffer.getvalue()


def _avro_reason(problem: Any) -> str:
    """fastavro's first validation error: the field path (`Payment.user.email`) and what it expected."""
    errors = getattr(problem, "errors", None) or []
    if errors:
        first = errors[0]
        field = str(getattr(first, "field", "") or "")
        schema = getattr(first, "schema", "")
        value = getattr(first, "datum", "")
        expected = schema if isinstance(schema, str) else json.dumps(schema)[:80]
        return f"field {field or '(the document)'}: expected {expected}; got {json.dumps(value, default=str)[:60]}"
    return str(problem)[:200]


def _first_difference(given: Any, decoded: Any, path: str) -> str | None:
    """The first field path whose decoded value differs from the given one (fields the encoding filled
    in with defaults are not differences; numbers equal to float precision are the same)."""
    if isinstance(given, dict):
        if not isinstance(decoded, dict):
            return path
        for key, value in given.items():
            inner = f"{path}.{key}" if path else str(key)
            if key not in decoded:
                return inner
            found = _first_difference(value, decoded[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(given, list):
        if not isinstance(decoded, list) or len(given) != len(decoded):
            return path
        for index, (value, back) in enumerate(zip(given, decoded, strict=True)):
            found = _first_difference(value, back, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if isinstance(given, float) or isinstance(decoded, float):
        same = isinstance(given, (int, float)) and isinstance(decoded, (int, float))
        return None if same and math.isclose(given, decoded, rel_tol=1e-6) else path
    return None if given == decoded else path


@dataclass
class TestRecordCodec:
    """`produce --schema`: the producer's test records (JSON: run, key, seq, ts) encoded with a schema, and
    the records read back decoded with it before the verifier looks for them."""

    __test__ = False  # not a pytest test class, whatever its name says

    encoder: SchemaEncoder

    @classmethod
    def checked(cls, encoder: SchemaEncoder) -> TestRecordCodec:
        """BadInput unless a test record survives the schema: it encodes, and decodes to the same record."""
        from console.produce.testrecords import TestRecord, from_document

        codec = cls(encoder)
        sample = TestRecord("0" * 12, "key-000000", 1, 1.5)
        fields = "run (string), key (string), seq (integer) and ts (number)"
        try:
            back = from_document(encoder.decode(codec.encode(sample.encode())))
        except (DocumentProblem, SchemaDecodeError) as problem:
            raise BadInput(
                f"schema {encoder.label} cannot carry kconsole's test records ({fields}): {problem}", code="bad_schema"
            ) from None
        if back != sample:
            raise BadInput(
                f"schema {encoder.label} does not keep the test records' {fields}: the verification could not "
                "find them",
                code="bad_schema",
            )
        return codec

    def encode(self, body: bytes) -> bytes:
        return self.encoder.encode(json.loads(body), whole=False)

    def identify(self, run: Any, raw: dict[str, Any]) -> Any:
        from console.produce.testrecords import from_document

        try:
            return from_document(self.encoder.decode(bytes(raw["Data"])), run.run_id)
        except SchemaDecodeError:
            return None  # another producer's record, or another schema's: not this run's
