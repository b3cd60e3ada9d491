"""`--schema REGISTRY/NAME[:VERSION]` of `put` and `produce`: the registered schema read through the backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.commands._output import note
from console.errors import BadInput

if TYPE_CHECKING:
    from console.backend.protocol import SchemaRegistryBackend
    from console.produce.schema_encoding import SchemaEncoder


async def schema_encoder(kinesis: SchemaRegistryBackend, schema_name: str) -> SchemaEncoder:
    """The registered schema REGISTRY/NAME[:VERSION] read through the backend, ready to encode with;
    BadInput (one line) when it cannot be read or is not one kconsole encodes with."""
    from console.errors import ConsoleError
    from console.produce.schema_encoding import SchemaEncoder, parse_schema_name

    registry, name, version = parse_schema_name(schema_name)
    try:
        answer = await kinesis.glue.schema_version_named(registry, name, version)
    except ConsoleError as error:
        if isinstance(error, BadInput):
            raise
        raise BadInput(f"schema {schema_name} not read: {error.message}", code="bad_schema") from None
    encoder = SchemaEncoder.from_answer(answer)
    note(f"encoding with {encoder.label} ({encoder.schema.data_format})")
    return encoder
