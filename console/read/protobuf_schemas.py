"""Protobuf schemas as the Glue Schema Registry stores them (the .proto text), built into descriptors the
`protobuf` runtime decodes and encodes with.

The runtime cannot read .proto source, so proto-schema-parser (pure Python, a grammar generated from
Buf's) parses the text into an AST, and this module turns that AST into a FileDescriptorProto: one
entry per message, field, enum, oneof and map. Type names stay as written: the descriptor pool
resolves them with protoc's scoping rules and says which names do not resolve.

The serializer's payload (aws-glue-schema-registry, `ProtobufWireFormatEncoder` and
`MessageIndexFinder`): after the 18-byte header, the message index as an unsigned varint
(`CodedOutputStream.writeUInt32NoTag`), then the message's own bytes. The index numbers every
message type of the file, nested ones (map entries too) included, in the lexicographic order of
their full names: for `message B { message C {} message A { message D {} } }` B = 0, B.A = 1,
B.A.D = 2, B.C = 3. The serializer does not support imports; the well-known types
(google/protobuf/timestamp.proto and the like) are the imports this module allows, from the
runtime's own copies.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, EncodeError, Message

# Parsing is pure Python (about 3.5 s for 130,000 characters on this machine's cores) and happens
# on the reader's event loop: a schema larger than this is refused rather than parsed. Event schemas
# are a few kilobytes.
MAX_PROTO_CHARS = 32 * 1024
MAX_MESSAGE_DEPTH = 64  # nesting of decoded messages shown (protobuf itself stops at 100)

# The imports the runtime ships: their modules register the files in the default pool.
WELL_KNOWN_IMPORTS = {
    f"google/protobuf/{name}.proto": f"google.protobuf.{name}_pb2"
    for name in ("any", "duration", "empty", "field_mask", "struct", "timestamp", "wrappers")
}
_SCALARS = {
    "double": FieldDescriptor.TYPE_DOUBLE,
    "float": FieldDescriptor.TYPE_FLOAT,
    "int64": FieldDescriptor.TYPE_INT64,
    "uint64": FieldDescriptor.TYPE_UINT64,
    "int32": FieldDescriptor.TYPE_INT32,
    "fixed64": FieldDescriptor.TYPE_FIXED64,
    "fixed32": FieldDescriptor.TYPE_FIXED32,
    "bool": FieldDescriptor.TYPE_BOOL,
    "string": FieldDescriptor.TYPE_STRING,
    "bytes": FieldDescriptor.TYPE_BYTES,
    "uint32": FieldDescriptor.TYPE_UINT32,
    "sfixed32": FieldDescriptor.TYPE_SFIXED32,
    "sfixed64": FieldDescriptor.TYPE_SFIXED64,
    "sint32": FieldDescriptor.TYPE_SINT32,
    "sint64": FieldDescriptor.TYPE_SINT64,
}
FILE_NAME = "registered.proto"


class ProtoSchemaError(ValueError):
    """A .proto text that is not built into descriptors; the message says why, in one line."""


class ProtoPayloadError(ValueError):
    """A payload (or a document to encode) that does not match its Protobuf schema."""


@dataclass(frozen=True, slots=True)
class ProtoSchema:
    """A registered .proto file built: its message types in the serializer's index order."""

    by_index: tuple[Descriptor, ...]
    first: Descriptor  # the first message declared: what a document given to encode is

    def message_class(self, descriptor: Descriptor) -> type[Message]:
        made: type[Message] = message_factory.GetMessageClass(descriptor)
        return made

    def decode(self, body: bytes) -> tuple[dict[str, Any], str]:
        """The message a serializer's payload (index varint, message bytes) holds, as JSON-able data,
        and its full type name; ProtoPayloadError when it does not match."""
        index, start = _read_varint(body)
        if index >= len(self.by_index):
            raise ProtoPayloadError(
                f"message index {index} names no message type (the schema has {len(self.by_index)})"
            )
        descriptor = self.by_index[index]
        message = self.message_class(descriptor)()
        try:
            message.ParseFromString(body[start:])
        except (DecodeError, RuntimeError):
            raise ProtoPayloadError(
                f"{descriptor.full_name}: its bytes do not parse (wire format corrupt or truncated)"
            ) from None
        if not message.IsInitialized():
            missing = ", ".join(message.FindInitializationErrors()[:5])
            raise ProtoPayloadError(f"{descriptor.full_name} lacks required fields ({missing})")
        return _document(message, 0), descriptor.full_name

    def encode(self, document: Any, *, ignore_unknown_fields: bool = False) -> bytes:
        """A JSON document as the serializer writes the first message type: index varint, then the
        message; ProtoPayloadError naming the field when the document does not fit."""
        descriptor = self.first
        if not isinstance(document, dict):
            raise ProtoPayloadError(f"expected a JSON object for {descriptor.full_name}; got {type(document).__name__}")
        message = self.message_class(descriptor)()
        try:
            json_format.ParseDict(
                _bytes_as_base64(document, descriptor), message, ignore_unknown_fields=ignore_unknown_fields
            )
            body: bytes = message.SerializeToString()
        except (json_format.ParseError, EncodeError, ValueError, TypeError) as problem:
            reason = str(problem).split("  Available Fields", 1)[0]  # the list of every field name
            raise ProtoPayloadError(reason.replace("\n", " ").rstrip(".")) from None
        return _varint(self.by_index.index(descriptor)) + body


def build(definition: str) -> ProtoSchema:
    """Build a .proto text into its message types; ProtoSchemaError with one line otherwise."""
    if len(definition) > MAX_PROTO_CHARS:
        raise ProtoSchemaError(
            f"Protobuf schema of {len(definition):,} characters is larger than the {MAX_PROTO_CHARS:,} kconsole parses"
        )
    tree = _parse(definition)
    file = _file_proto(tree)
    pool = descriptor_pool.DescriptorPool()
    for dependency in file.dependency:
        _add_well_known(pool, dependency)
    try:
        built = pool.Add(file)
    except (TypeError, ValueError) as problem:  # a name that does not resolve, a number used twice...
        reason = str(problem).removeprefix("Couldn't build proto file into descriptor pool: ")
        raise ProtoSchemaError(f"Protobuf schema does not build: {reason}") from None
    if not built.message_types_by_name:
        raise ProtoSchemaError("Protobuf schema declares no message")
    every: list[Descriptor] = []
    level = list(built.message_types_by_name.values())
    while level:  # level order, as the serializer walks it; the order that counts is the sort below
        every.extend(level)
        level = [nested for descriptor in level for nested in descriptor.nested_types]
    first = pool.FindMessageTypeByName(_full_name(file.package, file.message_type[0].name))
    return ProtoSchema(tuple(sorted(every, key=lambda descriptor: descriptor.full_name)), first)


def _parse(definition: str) -> Any:
    from antlr4.error.ErrorListener import ErrorListener
    from proto_schema_parser.parser import Parser

    class Refuse(ErrorListener):  # type: ignore[misc]  # antlr4 ships no types
        """ANTLR prints syntax errors to stderr and recovers; a schema with one is refused instead."""

        def syntaxError(  # ANTLR's names and signature
            self,
            _recognizer: Any,
            _offending_symbol: Any,
            line: int,
            column: int,
            msg: str,
            _error: Any,
        ) -> None:
            reason = msg.split(" expecting ", 1)[0][:120]  # the expected tokens make a paragraph
            raise ProtoSchemaError(f"Protobuf schema does not parse: line {line}:{column}: {reason}")

    def quiet(recognizer: Any) -> None:
        recognizer.removeErrorListeners()
        recognizer.addErrorListener(Refuse())

    try:
        return Parser(setup_lexer=quiet, setup_parser=quiet).parse(definition)
    except RecursionError:
        raise ProtoSchemaError("Protobuf schema nests too deeply to parse") from None


def _full_name(package: str, name: str) -> str:
    return f"{package}.{name}" if package else name


def _add_well_known(pool: descriptor_pool.DescriptorPool, name: str) -> None:
    module = importlib.import_module(WELL_KNOWN_IMPORTS[name])
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    pool.Add(proto)


def _file_proto(tree: Any) -> descriptor_pb2.FileDescriptorProto:
    from proto_schema_parser import ast

    if tree.edition is not None:
        raise ProtoSchemaError(f"Protobuf editions (edition {tree.edition}) are not decoded; proto2 and proto3 are")
    syntax = (tree.syntax or "proto2").strip("'\"")
    file = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, syntax=syntax)
    for element in tree.file_elements:
        if isinstance(element, ast.Package):
            file.package = element.name
        elif isinstance(element, ast.Import):
            if element.name not in WELL_KNOWN_IMPORTS:
                raise ProtoSchemaError(
                    f"Protobuf schema imports {element.name!r}: a schema that imports another file is not "
                    "decoded (the Glue Schema Registry serializer registers one file; only the well-known "
                    "google/protobuf types are known here)"
                )
            file.dependency.append(element.name)
        elif isinstance(element, ast.Message):
            _message(element, file.message_type.add(), syntax)
        elif isinstance(element, ast.Enum):
            _enum(element, file.enum_type.add())
    if not file.message_type:
        raise ProtoSchemaError("Protobuf schema declares no message")
    return file


def _message(node: Any, proto: descriptor_pb2.DescriptorProto, syntax: str) -> None:
    from proto_schema_parser import ast

    proto.name = node.name
    optional_fields = []
    for element in node.elements:
        if isinstance(element, ast.Field):
            field = _field(element, proto.field.add(), syntax)
            if field.proto3_optional:
                optional_fields.append(field)
        elif isinstance(element, ast.MapField):
            _map(element, proto)
        elif isinstance(element, ast.OneOf):
            index = len(proto.oneof_decl)
            proto.oneof_decl.add(name=element.name)
            for member in element.elements:
                if isinstance(member, ast.Field):
                    _field(member, proto.field.add(), syntax).oneof_index = index
        elif isinstance(element, ast.Message):
            _message(element, proto.nested_type.add(), syntax)
        elif isinstance(element, ast.Enum):
            _enum(element, proto.enum_type.add())
        elif isinstance(element, ast.Group):
            raise ProtoSchemaError(f"message {node.name} has a group ({element.name}): groups are not decoded")
    for field in optional_fields:  # proto3 `optional`: a synthetic oneof each, after the declared ones
        field.oneof_index = len(proto.oneof_decl)
        proto.oneof_decl.add(name=f"_{field.name}")


def _field(node: Any, proto: descriptor_pb2.FieldDescriptorProto, syntax: str) -> descriptor_pb2.FieldDescriptorProto:
    from proto_schema_parser import ast

    proto.name, proto.number = node.name, node.number
    cardinality = node.cardinality.value if node.cardinality is not None else None
    proto.label = {
        "REPEATED": FieldDescriptor.LABEL_REPEATED,
        "REQUIRED": FieldDescriptor.LABEL_REQUIRED,
    }.get(cardinality or "", FieldDescriptor.LABEL_OPTIONAL)
    if cardinality == "OPTIONAL" and syntax == "proto3":
        proto.proto3_optional = True
    if node.type in _SCALARS:
        proto.type = _SCALARS[node.type]
    else:
        proto.type_name = node.type  # message or enum: the pool resolves which, and where
    for option in node.options:
        value = option.value.name if isinstance(option.value, ast.Identifier) else option.value
        if option.name == "packed":
            proto.options.packed = bool(value)
        elif option.name == "default":
            proto.default_value = ("true" if value else "false") if isinstance(value, bool) else str(value)
        elif option.name == "json_name":
            proto.json_name = str(value)
    return proto


def _map(node: Any, proto: descriptor_pb2.DescriptorProto) -> None:
    """A map field is a repeated nested `NameEntry` message with key = 1 and value = 2, as protoc makes it."""
    entry_name = "".join(part[:1].upper() + part[1:] for part in node.name.split("_")) + "Entry"
    entry = proto.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    for name, number, type_name in (("key", 1, node.key_type), ("value", 2, node.value_type)):
        field = entry.field.add(name=name, number=number, label=FieldDescriptor.LABEL_OPTIONAL)
        if type_name in _SCALARS:
            field.type = _SCALARS[type_name]
        else:
            field.type_name = type_name
    proto.field.add(name=node.name, number=node.number, label=FieldDescriptor.LABEL_REPEATED, type_name=entry_name)


def _enum(node: Any, proto: descriptor_pb2.EnumDescriptorProto) -> None:
    from proto_schema_parser import ast

    proto.name = node.name
    for element in node.elements:
        if isinstance(element, ast.EnumValue):
            proto.value.add(name=element.name, number=element.number)
        elif isinstance(element, ast.Option) and element.name == "allow_alias":
            proto.options.allow_alias = bool(element.value)


def _read_varint(body: bytes) -> tuple[int, int]:
    """(value, bytes it took) of the unsigned varint at the start of `body`."""
    value = shift = 0
    for position, byte in enumerate(body[:10]):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position + 1
        shift += 7
    raise ProtoPayloadError("no message index at the start of the payload (a truncated varint)")


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _document(message: Message, depth: int) -> dict[str, Any]:
    """A message as JSON-able data: field names as declared, 64-bit integers as numbers (the proto3
    JSON mapping spells them as strings, which `--where` would compare as text), enums by name, bytes
    in hex (as Avro records show them), a well-known type as its JSON mapping; fields with presence
    only when set, the others always. Fields the schema does not know mean the payload does not match."""
    if depth > MAX_MESSAGE_DEPTH:
        raise ProtoPayloadError(f"messages nest deeper than {MAX_MESSAGE_DEPTH} levels; not shown")
    descriptor = message.DESCRIPTOR
    if descriptor.full_name.startswith("google.protobuf."):
        mapped: dict[str, Any] = json_format.MessageToDict(message, preserving_proto_field_name=True)
        return mapped
    from google.protobuf.unknown_fields import UnknownFieldSet

    unknown = UnknownFieldSet(message)
    if len(unknown):
        numbers = sorted({field.field_number for field in unknown})
        raise ProtoPayloadError(
            f"{descriptor.full_name} has no field numbered {', '.join(map(str, numbers[:5]))} (another message's bytes?)"
        )
    out: dict[str, Any] = {}
    for field in descriptor.fields:
        if field.has_presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {str(key): _value(value_field, item, depth) for key, item in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value(field, item, depth) for item in value]
        else:
            out[field.name] = _value(field, value, depth)
    return out


def _value(field: FieldDescriptor, value: Any, depth: int) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return _document(value, depth + 1)
    if field.type == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and value != value:
        return None  # NaN has no JSON spelling
    return value


def _bytes_as_base64(document: Any, descriptor: Descriptor) -> Any:
    """A document whose `bytes` fields are in hex (as kconsole shows them) with those fields in base64,
    the spelling json_format reads; anything else is left for json_format to judge."""
    import base64

    if not isinstance(document, dict) or descriptor.full_name.startswith("google.protobuf."):
        return document
    out = dict(document)
    for name, value in document.items():
        field = descriptor.fields_by_name.get(name)
        if field is None:
            continue
        if field.type == FieldDescriptor.TYPE_BYTES:
            items = value if isinstance(value, list) else [value]
            try:
                converted = [base64.b64encode(bytes.fromhex(item)).decode() for item in items]
            except (TypeError, ValueError):
                raise ProtoPayloadError(f"field {name!r}: bytes are given in hex; got {value!r:.40}") from None
            out[name] = converted if isinstance(value, list) else converted[0]
        elif field.type == FieldDescriptor.TYPE_MESSAGE and not field.message_type.GetOptions().map_entry:
            if isinstance(value, list):
                out[name] = [_bytes_as_base64(item, field.message_type) for item in value]
            else:
                out[name] = _bytes_as_base64(value, field.message_type)
    return out
