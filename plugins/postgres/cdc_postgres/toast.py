"""Debezium's stand-ins for unchanged TOASTed values that pgoutput does not send ('u').

`unavailable.value.placeholder` (a `hex:` prefix gives raw bytes) is expressed in each
column's own type, as Debezium's UnchangedToastedPlaceholder does, so consumers can
recognise it and keep the value they have: text as the placeholder, bytes as its bytes,
hstore as the map {placeholder: placeholder} (JSON text in hstore.handling.mode=json),
and arrays in their element type (text-like elements: one placeholder element; numbers:
one element per placeholder byte). Types with no such form get None and fall back to null.
"""

from __future__ import annotations

import decimal
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from cdc.api import Decimal as ConnectDecimal
from cdc.api import Schema, Struct, Type
from cdc_debezium import logical_types

UUID_NAME = logical_types.UUID
VARIABLE_SCALE_DECIMAL = logical_types.VARIABLE_SCALE_DECIMAL


def _signed(byte: int) -> int:
    """A placeholder byte as Java's signed `byte`, which Debezium widens for numeric elements."""
    return byte - 256 if byte > 127 else byte


@dataclass(frozen=True)
class ToastPlaceholder:
    binary: bytes

    @classmethod
    def parse(cls, configured: str) -> ToastPlaceholder:
        """The configured value: `hex:<digits>` for raw bytes, otherwise its UTF-8 bytes (as Debezium)."""
        if configured.startswith("hex:"):
            return cls(bytes.fromhex(configured[4:]))
        return cls(configured.encode())

    @property
    def text(self) -> str:
        return self.binary.decode("utf-8", errors="replace")

    def for_column(self, schema: Schema, is_hstore: bool = False) -> Any:
        """The placeholder in the column's schema, or None where Debezium has no placeholder for it."""
        if is_hstore:
            pair = {self.text: self.text}
            return pair if schema.type is Type.MAP else json.dumps(pair, separators=(",", ":"), ensure_ascii=False)
        if schema.type is Type.STRING:
            return self.text
        if schema.type is Type.BYTES and schema.name != ConnectDecimal.LOGICAL_NAME:
            return self.binary
        if schema.type is Type.ARRAY and schema.value_schema is not None:
            return self._array(schema.value_schema)
        return None

    def _array(self, element: Schema) -> list[Any] | None:
        per_byte = [_signed(b) for b in self.binary]
        match element.type:
            case Type.STRING:
                if element.name == UUID_NAME:
                    # Java's UUID.nameUUIDFromBytes: an MD5 (version 3) UUID of the placeholder bytes.
                    return [str(uuid.UUID(bytes=hashlib.md5(self.binary, usedforsecurity=False).digest(), version=3))]
                return [self.text]
            case Type.BYTES if element.name == ConnectDecimal.LOGICAL_NAME:
                scale = ConnectDecimal.scale(element)
                return [decimal.Decimal(b).scaleb(-scale) for b in per_byte]
            case Type.BYTES:
                return [self.binary]
            case Type.INT8 | Type.INT16 | Type.INT32 | Type.INT64:
                return per_byte
            case Type.FLOAT32 | Type.FLOAT64:
                return [float(b) for b in per_byte]
            case Type.BOOLEAN:
                return [b != 0 for b in per_byte]
            case Type.STRUCT if element.name == VARIABLE_SCALE_DECIMAL:
                integral = ConnectDecimal.schema(0)
                values = (ConnectDecimal.from_logical(integral, decimal.Decimal(b)) for b in per_byte)
                return [Struct(element).put("scale", 0).put("value", v) for v in values]
        return None
