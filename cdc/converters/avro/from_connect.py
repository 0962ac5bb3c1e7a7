"""Connect schema -> Avro schema, as Confluent's `AvroData.fromConnectSchema` does it.

- A STRUCT is a record named by its Connect name split at the last `.` (namespace, name);
  unnamed structs are `io.confluent.connect.avro.ConnectDefault`, `ConnectDefault2`, ... in the
  order met. An optional struct is `["null", record]`.
- INT8/INT16 are `int` with `"connect.type": "int8"/"int16"`; the other primitives map to
  their Avro namesakes.
- A MAP with required STRING keys is an Avro `map`; any other map is an array of `MapEntry`
  records `{key, value}` (`io.confluent.connect.avro.MapEntry`, or the map's own name with
  `"connect.internal.type": "MapEntry"`).
- Kafka's logical types: Decimal is `bytes` with `logicalType: decimal`, `scale` and `precision`
  (`connect.decimal.precision`, else 64); Date `int`+`date`; Time `int`+`time-millis`; Timestamp
  `long`+`timestamp-millis`. Any other named schema (Debezium's `io.debezium.time.*`,
  `io.debezium.data.Json`, ...) is its physical type carrying the name in `connect.name`.
- With `connect.meta.data` (default): `connect.doc`, `connect.version`, `connect.parameters`,
  `connect.default` and `connect.name` on every non-union schema.
- An optional schema is a union with null: `["null", T]` with field default null, or, when it has a
  default, `[T, "null"]` with that default. A required schema with a default keeps it as the field's.
- A named type used again is referenced by name (Debezium's `after: ["null", "Value"]`).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from typing import Any

from cdc.api.data import Schema, Struct, Type
from cdc.api.data.logical import Date, Decimal, Time, Timestamp
from cdc.api.errors import DataException
from cdc.converters.avro.avro_schema import (
    NO_DEFAULT,
    Array,
    AvroField,
    AvroMap,
    Enum,
    Named,
    Node,
    Primitive,
    Record,
    Union,
    valid_default,
)
from cdc.converters.avro.names import NameRules

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
MAP_ENTRY_TYPE_NAME = "MapEntry"
CONNECT_NAME = "connect.name"
CONNECT_DOC = "connect.doc"
CONNECT_VERSION = "connect.version"
CONNECT_PARAMETERS = "connect.parameters"
CONNECT_DEFAULT = "connect.default"
CONNECT_TYPE = "connect.type"
CONNECT_INTERNAL_TYPE = "connect.internal.type"
DECIMAL_PRECISION = "connect.decimal.precision"
DECIMAL_PRECISION_DEFAULT = 64
AVRO_ENUM = NAMESPACE + ".Enum"
AVRO_UNION = NAMESPACE + ".Union"
RECORD_DOC_PARAM = NAMESPACE + ".record.doc"
FIELD_DOC_PARAM = NAMESPACE + ".field.doc."
FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
ENUM_DOC_PARAM = NAMESPACE + ".enum.doc."
ENUM_DEFAULT_PARAM = NAMESPACE + ".enum.default."

_PHYSICAL = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}
_LOGICAL = {Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "time-millis", Timestamp.LOGICAL_NAME: "timestamp-millis"}


def non_optional(schema: Schema) -> Schema:
    """The same schema, required (AvroData.nonOptional): the record an optional struct unions with null."""
    if not schema.optional:
        return schema
    return Schema(
        schema.type,
        optional=False,
        default_value=schema.default_value,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=schema.fields,
        key_schema=schema.key_schema,
        value_schema=schema.value_schema,
    )


def is_enum(schema: Schema) -> bool:
    return schema.type is Type.STRING and bool(schema.parameters) and AVRO_ENUM in (schema.parameters or {})


class Conversion:
    """One `from_connect_schema` call: its named types, and what the value writer needs of them."""

    def __init__(self, rules: NameRules, meta: bool, enhanced: bool, optional_map_keys: bool) -> None:
        self.rules = rules
        self.meta = meta
        self.enhanced = enhanced
        self.optional_map_keys = optional_map_keys
        self.schema_map: dict[Schema, Node] = {}
        self.defined: dict[str, Schema] = {}
        self.seen_names: set[str] = set()
        self.default_index = 0
        self.map_entry_index = 0
        # required Connect schema -> Avro full name, for union branches of optional named types
        self.branch_names: dict[Schema, str] = {}

    # -- names ---------------------------------------------------------------------------------
    def _name(self, name: str | None) -> tuple[str | None, str]:
        if name is not None:
            return self.rules.split(name)
        self.default_index += 1
        return NAMESPACE, DEFAULT_SCHEMA_NAME + (str(self.default_index) if self.default_index > 1 else "")

    def _define(self, node: Named, schema: Schema) -> None:
        full = node.full_name
        other = self.defined.get(full)
        if other is not None and other != schema:
            raise DataException(
                f"AvroConverter: two different schemas are named {full!r} in one record; Avro allows one"
                " definition per name (give them distinct names, e.g. with SetSchemaMetadata)"
            )
        self.defined[full] = schema
        self.branch_names[schema] = full

    # -- schemas -------------------------------------------------------------------------------
    def convert(self, schema: Schema, ignore_optional: bool = False) -> Node:
        if not schema.optional:
            cached = self.schema_map.get(schema)
            if cached is not None:
                return cached
        connect_type: str | None = None
        t = schema.type
        params = schema.parameters or {}
        base: Node
        if t in (Type.INT8, Type.INT16):
            connect_type = "int8" if t is Type.INT8 else "int16"
            base = Primitive("int")
        elif t is Type.STRING and self.enhanced and is_enum(schema):
            base = self._enum(schema, params)
        elif t is Type.BYTES:
            base = Primitive("bytes")
            if schema.name == Decimal.LOGICAL_NAME:
                base.props["scale"] = int(params[Decimal.SCALE_FIELD])
                base.props["precision"] = int(params.get(DECIMAL_PRECISION, DECIMAL_PRECISION_DEFAULT))
        elif t.is_primitive:
            base = Primitive(_PHYSICAL[t])
        elif t is Type.ARRAY:
            assert schema.value_schema is not None
            base = Array(self.convert(schema.value_schema))
        elif t is Type.MAP:
            base = self._map(schema)
        elif schema.optional:
            base = Union([Primitive("null"), self.convert(non_optional(schema))])
        else:
            base = self._record(schema, params)

        final = base
        if not isinstance(base, Union):
            if self.meta:
                self._meta(schema, base, params, connect_type)
            self._logical(schema, base)
            for k, v in params.items():
                if k.startswith("avro"):
                    base.props[k] = v
            if not ignore_optional:
                final = self._maybe_optional(schema, base)
        if not schema.optional:
            self.schema_map[schema] = final
        return final

    def _meta(self, schema: Schema, base: Node, params: dict[str, str], connect_type: str | None) -> None:
        if schema.doc is not None:
            base.props[CONNECT_DOC] = schema.doc
        if schema.version is not None:
            base.props[CONNECT_VERSION] = schema.version
        if params:
            shown = {k: v for k, v in params.items() if k != FIELD_DEFAULT_FLAG}
            if shown:
                base.props[CONNECT_PARAMETERS] = shown
        if schema.default_value is not None and FIELD_DEFAULT_FLAG not in params:
            base.props[CONNECT_DEFAULT] = self.default_json(schema, schema.default_value)
        if schema.name is not None:
            base.props[CONNECT_NAME] = schema.name
        if connect_type is not None:
            base.props[CONNECT_TYPE] = connect_type

    @staticmethod
    def _logical(schema: Schema, base: Node) -> None:
        name = schema.name
        if name is None:
            return
        if name == Decimal.LOGICAL_NAME:
            # `scale` and `precision` are already there (convert); a scale outside 0..precision
            # breaks the Avro spec, and Confluent then sets the property without Avro's logical
            # type object: the text is the same either way.
            base.props["logicalType"] = "decimal"
        elif name in _LOGICAL:
            base.props["logicalType"] = _LOGICAL[name]

    @staticmethod
    def _maybe_optional(schema: Schema, base: Node) -> Node:
        if not schema.optional:
            return base
        if schema.default_value is not None:
            return Union([base, Primitive("null")])
        return Union([Primitive("null"), base])

    def _enum(self, schema: Schema, params: dict[str, str]) -> Enum:
        enum_full = params[AVRO_ENUM]
        prefix = AVRO_ENUM + "."
        symbols = [k[len(prefix) :] for k in params if k.startswith(prefix)]
        _, simple = self._name(schema.name)
        namespace, _, name = enum_full.rpartition(".")
        node = Enum(name, namespace or None, symbols, params.get(ENUM_DOC_PARAM + simple))
        node.default_symbol = params.get(ENUM_DEFAULT_PARAM + simple)
        self._define(node, non_optional(schema))
        return node

    def _map(self, schema: Schema) -> Node:
        key, value = schema.key_schema, schema.value_schema
        assert key is not None and value is not None
        if key.type is Type.STRING and (not key.optional or self.optional_map_keys):
            return AvroMap(self.convert(value))
        if schema.name is None:
            self.map_entry_index += 1
            # Avro allows one definition per name; Java's AvroData fails on a second distinct
            # unnamed non-string map in one record. Later ones get a number (and the marker
            # property, which is how readers, Confluent's included, recognise map entries).
            suffix = str(self.map_entry_index) if self.map_entry_index > 1 else ""
            entry = Record(MAP_ENTRY_TYPE_NAME + suffix, NAMESPACE)
            if suffix:
                entry.props[CONNECT_INTERNAL_TYPE] = MAP_ENTRY_TYPE_NAME
        else:
            namespace, name = self._name(schema.name)
            entry = Record(name, namespace)
            entry.props[CONNECT_INTERNAL_TYPE] = MAP_ENTRY_TYPE_NAME
        entry.fields.append(self._field("key", key, None))
        entry.fields.append(self._field("value", value, None))
        return Array(entry)

    def _record(self, schema: Schema, params: dict[str, str]) -> Record:
        namespace, name = self._name(schema.name)
        record = Record(name, namespace, params.get(RECORD_DOC_PARAM))
        self._define(record, schema)
        for f in schema.fields:
            avro_name = self.rules.field(f.name, schema.name or "struct")
            record.fields.append(self._field(avro_name, f.schema, params.get(FIELD_DOC_PARAM + f.name)))
        return record

    def _field(self, name: str, schema: Schema, doc: str | None) -> AvroField:
        default: Any = NO_DEFAULT
        if schema.default_value is not None:
            default = self.default_json(schema, schema.default_value)
        elif schema.optional:
            default = None
        full = schema.name
        already_seen = full is not None and full in self.seen_names
        if full is not None:
            self.seen_names.add(full)
        node = self.convert(schema)
        if default is not NO_DEFAULT and not valid_default(node, default):
            default = NO_DEFAULT  # Avro refuses it; Confluent logs "Ignoring invalid default" and drops it
        field = AvroField(name, node, doc, default)
        if self.meta and already_seen and schema.parameters and _is_named(node):
            field.props[CONNECT_PARAMETERS] = dict(schema.parameters)
        return field

    # -- defaults ------------------------------------------------------------------------------
    def default_json(self, schema: Schema, value: Any) -> Any:
        """A Connect default as the JSON Avro keeps it (AvroData.defaultValueFromConnect)."""
        if value is None:
            return None
        name = schema.name
        if name == Decimal.LOGICAL_NAME:
            return Decimal.from_logical(schema, value).decode("latin-1")
        if name == Date.LOGICAL_NAME and isinstance(value, datetime.date):
            return Date.from_logical(schema, value)
        if name == Time.LOGICAL_NAME and isinstance(value, datetime.time):
            return Time.from_logical(schema, value)
        if name == Timestamp.LOGICAL_NAME and isinstance(value, datetime.datetime):
            return Timestamp.from_logical(schema, value)
        t = schema.type
        if t is Type.BYTES:
            return bytes(value).decode("latin-1")
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            return [self.default_json(schema.value_schema, v) for v in value]
        if t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            if schema.key_schema.type is Type.STRING and (not schema.key_schema.optional or self.optional_map_keys):
                return {k: self.default_json(schema.value_schema, v) for k, v in value.items()}
            return [
                [self.default_json(schema.key_schema, k), self.default_json(schema.value_schema, v)]
                for k, v in value.items()
            ]
        if t is Type.STRUCT:
            assert isinstance(value, Struct)
            return {
                self.rules.field(f.name, schema.name or "struct"): self.default_json(f.schema, value.get(f))
                for f in schema.fields
            }
        if isinstance(value, decimal.Decimal):  # a float field's default given as Decimal
            return float(value)
        return value


def _is_named(node: Node) -> bool:
    if isinstance(node, Named):
        return True
    return isinstance(node, Union) and any(isinstance(b, Named) for b in node.branches)


# -- values ------------------------------------------------------------------------------------
Write = Callable[[Any], Any]


NULL = ("null", None)
"""The datum of a null in a union (every null a writer makes is one: only optional schemas take null),
in fastavro's tuple notation: fastavro finds the branch by name instead of validating the value
against each branch (about 4% of the encode of a Debezium change event)."""


def _identity(v: Any) -> Any:
    return v


def branch_name(schema: Schema, conv: Conversion) -> str:
    """The name of the union branch a non-null value of optional `schema` is written as (fastavro's
    tuple notation, which skips fastavro's search of the union)."""
    t = schema.type
    if t is Type.STRUCT or (t is Type.STRING and conv.enhanced and is_enum(schema)):
        return conv.branch_names[non_optional(schema)]
    if t is Type.ARRAY:
        return "array"
    if t is Type.MAP:
        assert schema.key_schema is not None
        keys_ok = schema.key_schema.type is Type.STRING and (not schema.key_schema.optional or conv.optional_map_keys)
        return "map" if keys_ok else "array"
    return _PHYSICAL[t]


def compile_writer(schema: Schema, conv: Conversion) -> Write:
    """A function from a Connect value of `schema` to the datum fastavro writes (AvroData.fromConnectData).

    Logical values become their physical form (unscaled bytes, days, millis), structs dicts keyed
    by Avro field names, non-string maps lists of `{key, value}`; a non-null value of an optional
    schema is tagged `(branch, datum)`, and a null is `NULL`.
    """
    if schema.type is Type.STRUCT and not schema.optional and schema.name not in _KAFKA_LOGICAL:
        return _struct_writer(schema, conv)  # checks for null itself
    inner = _compile_required(schema, conv)
    if not schema.optional:
        where = schema.name or schema.type.value

        def required(v: Any) -> Any:
            if v is None:
                raise DataException(f"AvroConverter: null value for required schema {where}")
            return inner(v)

        return required
    branch = branch_name(schema, conv)
    return lambda v: NULL if v is None else (branch, inner(v))


def _compile_required(schema: Schema, conv: Conversion) -> Write:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return lambda v: Decimal.from_logical(schema, v)
    if name == Date.LOGICAL_NAME:
        return lambda v: Date.from_logical(schema, v)
    if name == Time.LOGICAL_NAME:
        return lambda v: Time.from_logical(schema, v)
    if name == Timestamp.LOGICAL_NAME:
        return lambda v: Timestamp.from_logical(schema, v)
    t = schema.type
    if t is Type.BYTES:
        return lambda v: v if type(v) is bytes else bytes(v)
    if t is Type.FLOAT32 or t is Type.FLOAT64:
        return float
    if t.is_primitive:
        return _identity
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = compile_writer(schema.value_schema, conv)
        return lambda v: [item(x) for x in v]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        val = compile_writer(schema.value_schema, conv)
        if branch_name(non_optional(schema), conv) == "map":
            return lambda v: {k: val(x) for k, x in v.items()}
        key = compile_writer(schema.key_schema, conv)
        return lambda v: [{"key": key(k), "value": val(x)} for k, x in v.items()]
    return _struct_writer(schema, conv)


_KAFKA_LOGICAL = frozenset((Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME))

# per field: Avro name, index, value writer (None: as is), optional, default, union branch
_Entry = tuple[str, int, "Write | None", bool, Any, "str | None"]


def _entries(schema: Schema, conv: Conversion) -> list[_Entry]:
    record = schema.name or "struct"
    entries: list[_Entry] = []
    for f in schema.fields:
        fs = f.schema
        inner: Write | None = _compile_required(fs, conv)
        branch = branch_name(fs, conv) if fs.optional else None
        entries.append(
            (
                conv.rules.field(f.name, record),
                f.index,
                None if inner is _identity else inner,
                fs.optional,
                fs.default_value,
                branch,
            )
        )
    return entries


def _struct_writer(schema: Schema, conv: Conversion) -> Write:
    """The struct's writer: generated code (`_generated_struct`), falling back to `_closure_struct`
    for a Struct whose values do not unpack into the schema's fields (that one's errors)."""
    entries = _entries(schema, conv)
    closure = _closure_struct(schema, entries)
    return _generated_struct(schema, entries, closure)


def _generated_struct(schema: Schema, entries: list[_Entry], closure: Write) -> Write:
    """A struct's writer compiled to one function: the fields unpacked at once and the datum built as
    one dict display, with the field names, union branches and value writers bound as constants.

    Written as generated code because this is the per-record hot path of every Avro record: the
    loop of `_closure_struct` spends most of its time unpacking its per-field tuples and branching
    on them (about half of the Connect-to-datum mapping of a Debezium change event). The datum is
    the same as `_closure_struct`'s for every value (a property test holds them together), errors
    included: a required field that is null, or a value that is not a Struct.
    """
    record = schema.name or "struct"
    where = schema.name or schema.type.value
    env: dict[str, Any] = {
        "Struct": Struct,
        "DataException": DataException,
        "closure": closure,
        "NULL": NULL,
        "record": record,
        "where": where,
    }
    if sorted(e[1] for e in entries) != list(range(len(entries))):
        return closure  # not one value slot per field: nothing to unpack
    required: list[str] = []
    items: list[str] = []
    for name, i, inner, optional, default, branch in entries:
        x = f"x{i}"
        src = x
        if default is not None:  # a null takes the default (as Struct.get), then is written like a value
            env[f"d{i}"] = default
            src = f"(d{i} if {x} is None else {x})"
        elif not optional:
            required.append(x)
        value = src
        if inner is not None:
            env[f"w{i}"] = inner
            value = f"w{i}({src})"
        if branch is not None:
            env[f"b{i}"] = branch
            value = f"(b{i}, {value})"
        if default is None and optional:
            value = f"NULL if {x} is None else {value}"
        items.append(f"{name!r}: {value}")
    names = [f"x{i}" for i in range(len(entries))]
    body = [
        "def write(v):",
        "    if type(v) is not Struct:",
        "        if v is None:",
        "            raise DataException(f'AvroConverter: null value for required schema {where}')",
        "        if not isinstance(v, Struct):",
        "            raise DataException(f'AvroConverter: {record} expects a Struct, got {type(v).__name__}')",
    ]
    if names:
        body += [
            "    try:",
            f"        {', '.join(names)}, = v._values",
            "    except ValueError:",
            "        return closure(v)",
        ]
    if required:
        body += [f"    if {' or '.join(f'{x} is None' for x in required)}:", "        return closure(v)"]
    body.append("    return {" + ", ".join(items) + "}")
    exec(compile("\n".join(body), f"<avro writer for {record!a}>", "exec"), env)
    return env["write"]  # type: ignore[no-any-return]


def _closure_struct(schema: Schema, entries: list[_Entry]) -> Write:
    """A struct's writer as a loop over its fields (the reference `_generated_struct` is held to)."""
    record = schema.name or "struct"
    where = schema.name or schema.type.value

    def write(v: Any) -> dict[str, Any]:
        if v is None:
            raise DataException(f"AvroConverter: null value for required schema {where}")
        if not isinstance(v, Struct):
            raise DataException(f"AvroConverter: {record} expects a Struct, got {type(v).__name__}")
        values = v._values  # the hot path reads the slots; a null takes the default, as Struct.get
        out: dict[str, Any] = {}
        for name, i, inner, optional, default, branch in entries:
            x = values[i]
            if x is None:
                x = default
                if x is None:
                    if not optional:
                        raise DataException(
                            f"AvroConverter: field {schema.fields[i].name!r} of {record} is required but null"
                        )
                    out[name] = NULL
                    continue
            if inner is not None:
                x = inner(x)
            out[name] = x if branch is None else (branch, x)
        return out

    return write
