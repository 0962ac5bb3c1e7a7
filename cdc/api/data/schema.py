"""The Connect data model's schemas (Kafka Connect's `Schema`, `ConnectSchema`, `SchemaBuilder`).

Values are plain Python objects: int for INT8..INT64, float for FLOAT32/FLOAT64, bool,
str, bytes, list, dict and `Struct`; logical types map to `decimal.Decimal`,
`datetime.date`, `datetime.time` and `datetime.datetime`.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from cdc.api.errors import DataException, SchemaBuilderException


class Type(Enum):
    """A schema's physical type (Kafka Connect's Schema.Type); the value is Kafka's JSON name for it."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float"
    FLOAT64 = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """True for every type but ARRAY, MAP and STRUCT."""
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}

# Logical types check the Python class of the value rather than the physical type.
_LOGICAL_CLASSES: dict[str, tuple[type, ...]] = {
    "org.apache.kafka.connect.data.Decimal": (decimal.Decimal,),
    "org.apache.kafka.connect.data.Date": (datetime.date,),
    "org.apache.kafka.connect.data.Time": (datetime.time,),
    "org.apache.kafka.connect.data.Timestamp": (datetime.datetime,),
}


class Field:
    """A named, positioned member of a STRUCT schema."""

    __slots__ = ("index", "name", "schema")

    def __init__(self, name: str, index: int, schema: Schema) -> None:
        self.name = name
        self.index = index
        self.schema = schema

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Field)
            and self.name == other.name
            and self.index == other.index
            and self.schema == other.schema
        )

    def __hash__(self) -> int:
        return hash((self.name, self.index))

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, index={self.index}, schema={self.schema!r})"


class Schema:
    """An immutable schema. Build one with `SchemaBuilder`, or use the constants below.

    Kafka Connect's Schema/ConnectSchema in one class: `type`, `optional`, `default_value`,
    `name` (a logical type's name, or the record name a converter writes), `version`, `doc`,
    `parameters`, and by type `fields` (STRUCT), `key_schema` and `value_schema` (MAP, ARRAY).
    Schemas compare by value and can be dict keys, so a connector should build one schema per
    table version and reuse it for every record, not one per record.
    """

    # Predefined schemas, assigned after the class body (Kafka's Schema.*_SCHEMA).
    INT8_SCHEMA: Schema
    INT16_SCHEMA: Schema
    INT32_SCHEMA: Schema
    INT64_SCHEMA: Schema
    FLOAT32_SCHEMA: Schema
    FLOAT64_SCHEMA: Schema
    BOOLEAN_SCHEMA: Schema
    STRING_SCHEMA: Schema
    BYTES_SCHEMA: Schema
    OPTIONAL_INT8_SCHEMA: Schema
    OPTIONAL_INT16_SCHEMA: Schema
    OPTIONAL_INT32_SCHEMA: Schema
    OPTIONAL_INT64_SCHEMA: Schema
    OPTIONAL_FLOAT32_SCHEMA: Schema
    OPTIONAL_FLOAT64_SCHEMA: Schema
    OPTIONAL_BOOLEAN_SCHEMA: Schema
    OPTIONAL_STRING_SCHEMA: Schema
    OPTIONAL_BYTES_SCHEMA: Schema

    __slots__ = (
        "_field_index",
        "_fingerprint",
        "_hash",
        "_same",
        "default_value",
        "doc",
        "fields",
        "key_schema",
        "name",
        "optional",
        "parameters",
        "type",
        "value_schema",
        "version",
    )

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default_value: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: list[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        self.type = type
        self.optional = optional
        self.name = name
        self.version = version
        self.doc = doc
        self.parameters = dict(parameters) if parameters is not None else None
        self.fields: list[Field] = list(fields) if type is Type.STRUCT and fields else []
        self._field_index = {f.name: f for f in self.fields}
        self.key_schema = key_schema
        self.value_schema = value_schema
        self._hash: int | None = None
        self._fingerprint: int | None = None
        # The last distinct schema found equal to this one (see __eq__).
        self._same: Schema | None = None
        if default_value is not None:
            validate_value(self, default_value, "default value")
        self.default_value = default_value

    def field(self, name: str) -> Field | None:
        """The struct field called `name`, or None."""
        if self.type is not Type.STRUCT:
            raise DataException(f"Cannot look up fields on non-struct type {self.type.value}")
        return self._field_index.get(name)

    def schema(self) -> Schema:
        """This schema itself, so a Schema and a SchemaBuilder can be used alike."""
        return self

    def __eq__(self, other: object) -> bool:
        """Kafka's ConnectSchema.equals: every attribute, fields and element schemas deeply.

        Two shortcuts keep the answer and save the walk: a distinct schema already found equal
        to this one (`_same`, one per side) is equal again, as schemas are immutable; schemas with
        different structural fingerprints (`fingerprint`) are not equal. So a converter that
        meets an equal copy of its cached schema on every record walks it once, not per record.
        """
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        if self._same is other or other._same is self:
            return True
        if self.fingerprint() != other.fingerprint():
            return False
        equal = (
            self.type is other.type
            and self.optional == other.optional
            and self.name == other.name
            and self.version == other.version
            and self.doc == other.doc
            and self.parameters == other.parameters
            and self.default_value == other.default_value
            and self.fields == other.fields
            and self.key_schema == other.key_schema
            and self.value_schema == other.value_schema
        )
        if equal:
            self._same, other._same = other, self
        return equal

    def fingerprint(self) -> int:
        """A hash of the schema's structure, computed once: equal schemas have equal fingerprints.

        Covers everything `__eq__` compares but default values (a default may be set after the
        build, as a self-referencing struct default is, and need not be hashable).
        """
        fp = self._fingerprint
        if fp is None:
            fp = hash(
                (
                    self.type,
                    self.optional,
                    self.name,
                    self.version,
                    self.doc,
                    tuple(sorted(self.parameters.items())) if self.parameters else None,
                    tuple((f.name, f.index, f.schema.fingerprint()) for f in self.fields),
                    self.key_schema.fingerprint() if self.key_schema is not None else None,
                    self.value_schema.fingerprint() if self.value_schema is not None else None,
                )
            )
            self._fingerprint = fp
        return fp

    # Pickled or copied without the caches: a fingerprint or hash is only good in the process
    # that computed it (str hashes are salted per process), and `_same` would drag another schema.
    _CACHES = ("_fingerprint", "_hash", "_same")

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in Schema.__slots__ if k not in Schema._CACHES}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)
        for k in Schema._CACHES:
            setattr(self, k, None)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.type, self.optional, self.name, self.version, len(self.fields)))
        return self._hash

    def __repr__(self) -> str:
        parts = [self.type.name]
        if self.name:
            parts.append(f"name={self.name!r}")
        if self.optional:
            parts.append("optional")
        return f"Schema({', '.join(parts)})"


@runtime_checkable
class _StructValue(Protocol):
    """What validation needs of a STRUCT value: `cdc.api.data.struct.Struct` has it.

    A protocol rather than `isinstance(value, Struct)` keeps this module free of an import of
    struct.py, which imports this one."""

    schema: Schema

    def validate(self) -> None: ...


def _check_type(schema: Schema, value: Any, where: str) -> None:
    t = schema.type
    if schema.name in _LOGICAL_CLASSES:
        expected = _LOGICAL_CLASSES[schema.name]
        # datetime is a subclass of date: a Date field must not silently take a datetime.
        if schema.name == "org.apache.kafka.connect.data.Date" and isinstance(value, datetime.datetime):
            raise DataException(f"Invalid {where}: {schema.name} expects datetime.date, got datetime")
        if not isinstance(value, expected):
            raise DataException(
                f"Invalid {where}: {schema.name} expects {expected[0].__module__}."
                f"{expected[0].__name__}, got {type(value).__name__}"
            )
        return
    if t in _INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            raise DataException(f"Invalid {where}: {t.value} expects int, got {type(value).__name__}")
        lo, hi = _INT_RANGES[t]
        if not lo <= value <= hi:
            raise DataException(f"Invalid {where}: {value} is out of range for {t.value}")
    elif t in (Type.FLOAT32, Type.FLOAT64):
        if not isinstance(value, float):
            raise DataException(f"Invalid {where}: {t.value} expects float, got {type(value).__name__}")
    elif t is Type.BOOLEAN:
        if not isinstance(value, bool):
            raise DataException(f"Invalid {where}: boolean expects bool, got {type(value).__name__}")
    elif t is Type.STRING:
        if not isinstance(value, str):
            raise DataException(f"Invalid {where}: string expects str, got {type(value).__name__}")
    elif t is Type.BYTES:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"Invalid {where}: bytes expects bytes, got {type(value).__name__}")
    elif t is Type.ARRAY:
        if not isinstance(value, list | tuple):
            raise DataException(f"Invalid {where}: array expects list, got {type(value).__name__}")
        assert schema.value_schema is not None
        for item in value:
            validate_value(schema.value_schema, item, f"{where} array element")
    elif t is Type.MAP:
        if not isinstance(value, Mapping):
            raise DataException(f"Invalid {where}: map expects dict, got {type(value).__name__}")
        assert schema.key_schema is not None and schema.value_schema is not None
        for k, v in value.items():
            validate_value(schema.key_schema, k, f"{where} map key")
            validate_value(schema.value_schema, v, f"{where} map value")
    elif t is Type.STRUCT:
        if not isinstance(value, _StructValue):
            raise DataException(f"Invalid {where}: struct expects Struct, got {type(value).__name__}")
        if value.schema is not schema and value.schema != schema:
            raise DataException(f"Invalid {where}: Struct schemas do not match")
        value.validate()


def validate_value(schema: Schema, value: Any, where: str = "value") -> None:
    """Raise DataException if `value` does not fit `schema` (Kafka's ConnectSchema.validateValue)."""
    if value is None:
        if not schema.optional:
            raise DataException(f"Invalid {where}: null used for required {schema.type.value} schema")
        return
    _check_type(schema, value, where)


class SchemaBuilder:
    """Fluent construction of schemas: `SchemaBuilder.struct().name("x").field("id", ...).build()`."""

    def __init__(self, type: Type) -> None:
        self._type = type
        self._optional = False
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories -------------------------------------------------------------------------
    @classmethod
    def of(cls, type: Type) -> SchemaBuilder:
        """A builder for a schema of `type` (ARRAY and MAP need `array`/`map` for their element schemas)."""
        return cls(type)

    @classmethod
    def int8(cls) -> SchemaBuilder:
        """A builder for an INT8 schema (Python int, -128..127)."""
        return cls(Type.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        """A builder for an INT16 schema (Python int)."""
        return cls(Type.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        """A builder for an INT32 schema (Python int)."""
        return cls(Type.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        """A builder for an INT64 schema (Python int)."""
        return cls(Type.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        """A builder for a FLOAT32 schema (Python float)."""
        return cls(Type.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        """A builder for a FLOAT64 schema (Python float)."""
        return cls(Type.FLOAT64)

    @classmethod
    def bool(cls) -> SchemaBuilder:
        """A builder for a BOOLEAN schema (Python bool)."""
        return cls(Type.BOOLEAN)

    @classmethod
    def string(cls) -> SchemaBuilder:
        """A builder for a STRING schema (Python str)."""
        return cls(Type.STRING)

    @classmethod
    def bytes(cls) -> SchemaBuilder:
        """A builder for a BYTES schema (bytes, bytearray or memoryview)."""
        return cls(Type.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        """A builder for a STRUCT schema; add fields in order with `field`."""
        return cls(Type.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema) -> SchemaBuilder:
        """A builder for an ARRAY schema whose elements (list items) fit `value_schema`."""
        b = cls(Type.ARRAY)
        b._value_schema = value_schema
        return b

    @classmethod
    def map(cls, key_schema: Schema, value_schema: Schema) -> SchemaBuilder:
        """A builder for a MAP schema (a dict) with keys fitting `key_schema` and values `value_schema`."""
        b = cls(Type.MAP)
        b._key_schema = key_schema
        b._value_schema = value_schema
        return b

    # -- modifiers -------------------------------------------------------------------------
    def optional(self) -> SchemaBuilder:
        """Allow None as a value (a nullable column); returns self."""
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        """Refuse None as a value (the default); returns self."""
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        """The value `Struct.get` returns for a null field; `build` checks that it fits. Returns self."""
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        """The schema's fully qualified name (for example `server.db.table.Value`); set once. Returns self."""
        self._check_unset("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        """The schema's version number; set once. Returns self."""
        self._check_unset("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        """A description, carried by converters that write schemas; set once. Returns self."""
        self._check_unset("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        """Add one string parameter (for example a Decimal's `scale` or a source column type); returns self."""
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, params: Mapping[str, str]) -> SchemaBuilder:
        """Add every parameter of `params`; returns self."""
        for k, v in params.items():
            self.parameter(k, v)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Append a STRUCT field (a builder is built now); names must be unique. Returns self."""
        if self._type is not Type.STRUCT:
            raise SchemaBuilderException("Cannot create fields on type " + self._type.value)
        if not name:
            raise SchemaBuilderException("Field name cannot be empty")
        if name in self._fields:
            raise SchemaBuilderException(f"Cannot create field because of field name duplication {name}")
        built = schema.build() if isinstance(schema, SchemaBuilder) else schema
        self._fields[name] = Field(name, len(self._fields), built)
        return self

    def build(self) -> Schema:
        """The immutable Schema; raises SchemaBuilderException if the default value does not fit."""
        try:
            return Schema(
                self._type,
                optional=self._optional,
                default_value=self._default,
                name=self._name,
                version=self._version,
                doc=self._doc,
                parameters=self._parameters,
                fields=list(self._fields.values()),
                key_schema=self._key_schema,
                value_schema=self._value_schema,
            )
        except DataException as e:
            raise SchemaBuilderException(f"Invalid default value: {e}") from e

    @staticmethod
    def _check_unset(what: str, current: object, new: object) -> None:
        if current is not None and current != new:
            raise SchemaBuilderException(f"Invalid SchemaBuilder call: {what} has already been set.")


for _t, _attr in [
    (Type.INT8, "INT8"),
    (Type.INT16, "INT16"),
    (Type.INT32, "INT32"),
    (Type.INT64, "INT64"),
    (Type.FLOAT32, "FLOAT32"),
    (Type.FLOAT64, "FLOAT64"),
    (Type.BOOLEAN, "BOOLEAN"),
    (Type.STRING, "STRING"),
    (Type.BYTES, "BYTES"),
]:
    setattr(Schema, f"{_attr}_SCHEMA", Schema(_t))
    setattr(Schema, f"OPTIONAL_{_attr}_SCHEMA", Schema(_t, optional=True))
