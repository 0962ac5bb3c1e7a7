"""`Struct`: a record-shaped value whose fields are validated against a STRUCT schema."""

from __future__ import annotations

from typing import Any

from cdc.api.data.schema import Field, Schema, Type, validate_value
from cdc.api.errors import DataException


class Struct:
    """The value of a STRUCT schema: one value per field, in field order (Kafka Connect's Struct).

    Build it with `Struct(schema).put(name, value)...` (each put is checked against the field's
    schema) or, on hot paths, `Struct.from_values`. A Debezium change event's value, its
    `before`/`after` rows and its `source` block are all Structs.
    """

    __slots__ = ("_values", "schema")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataException("Not a struct schema: " + repr(schema))
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields)

    @classmethod
    def from_values(cls, schema: Schema, values: list[Any]) -> Struct:
        """A Struct from values in field order, without per-field validation.

        For connector hot paths whose converters already produce values of the field types
        (per-put validation costs more than the conversion itself). `validate()` still checks.
        """
        if len(values) != len(schema.fields):
            raise DataException(f"{len(values)} values for {len(schema.fields)} fields of {schema.name or 'struct'}")
        s = cls.__new__(cls)
        s.schema = schema
        s._values = values
        return s

    def _lookup(self, name: str) -> Field:
        f = self.schema.field(name)
        if f is None:
            raise DataException(f"{name!r} is not a valid field name of {self.schema.name or 'struct'}")
        return f

    def put(self, field: str | Field, value: Any) -> Struct:
        """Set a field, validating the value against the field's schema (chainable)."""
        f = self._lookup(field) if isinstance(field, str) else field
        validate_value(f.schema, value, f"value for field {f.name!r}")
        self._values[f.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        """The field's value; a null falls back to the field schema's default, as in Kafka."""
        f = self._lookup(field) if isinstance(field, str) else field
        v = self._values[f.index]
        if v is None and f.schema.default_value is not None:
            return f.schema.default_value
        return v

    def get_without_default(self, field: str) -> Any:
        """The field's value as set, None included (no fall-back to the schema's default)."""
        return self._values[self._lookup(field).index]

    def validate(self) -> None:
        """Raise DataException naming the first field whose value does not fit its schema."""
        for f in self.schema.fields:
            v = self._values[f.index]
            if v is None and f.schema.default_value is not None:
                continue
            validate_value(f.schema, v, f"value for field {f.name!r}")

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (nested structs converted too); handy for tests and logging."""
        out: dict[str, Any] = {}
        for f in self.schema.fields:
            v = self.get(f)
            out[f.name] = v.to_dict() if isinstance(v, Struct) else v
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.schema == other.schema and self._values == other._values

    def __hash__(self) -> int:
        return hash((self.schema, tuple(repr(v) for v in self._values)))

    def __repr__(self) -> str:
        # Same shape as Kafka's Struct.toString(), which also lands in SimpleHeaderConverter output.
        inner = ",".join(
            f"{f.name}={self._values[f.index]}" for f in self.schema.fields if self._values[f.index] is not None
        )
        return f"Struct{{{inner}}}"
