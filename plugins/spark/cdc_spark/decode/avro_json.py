"""Avro datums written straight as JsonConverter payloads, for the schemas where that is exact.

fastavro's datum of a Confluent Avro record (read with the structure-only schema, so no
logical-type conversion) is, for most Debezium schemas, already the JsonConverter payload of
the record's Connect value: records are JSON objects in field order, `["null", X]` unions are
the value or null, int8/int16/date/time/timestamp are the same integers, and bytes (Connect
BYTES, Decimal's unscaled two's complement, VariableScaleDecimal's value) are JsonConverter's
base64 of the same bytes. `orjson` then writes a payload without the per-record round trip
through Connect structs and `JsonConverter` (about 3x the records per second).

What is not the same goes the exact way (`AvroConverter` → Connect → `JsonConverter`, decode/avro.py):
maps with non-string keys (Avro arrays of MapEntry records; JsonConverter writes `[[k, v]]`),
unions of more than null and one type, floats inside arrays or maps, and a batch in which a
float field holds NaN or an infinity (JsonConverter quotes them as Jackson does; orjson would
write null).
"""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson

_PRIMITIVES = {"null", "boolean", "int", "long", "string", "bytes"}
_FLOATS = {"float", "double"}
_MAP_ENTRY = "io.confluent.connect.avro.MapEntry"

Path = tuple[str, ...]


def _b64(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class PlainPayloads:
    """Whether an Avro schema's datums are their JsonConverter payloads, and the float fields to check."""

    def __init__(self, avro: Any) -> None:
        self._named: dict[str, tuple[dict[str, Any], str | None]] = {}
        self.floats: list[Path] = []
        self.plain = self._walk(avro, (), None, nested=False)

    def _register(self, node: dict[str, Any], ns: str | None) -> tuple[str, str | None]:
        name = str(node["name"])
        space = name.rsplit(".", 1)[0] if "." in name else node.get("namespace", ns)
        full = name if "." in name else (f"{space}.{name}" if space else name)
        self._named[full] = (node, space)
        self._named.setdefault(name.rsplit(".", 1)[-1], (node, space))
        return full, space

    def _walk(self, node: Any, path: Path, ns: str | None, nested: bool) -> bool:
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return True
            if node in _FLOATS:
                if nested:
                    return False
                self.floats.append(path)
                return True
            ref = self._named.get(node) or self._named.get(f"{ns}.{node}")
            if ref is None:
                return False
            target, space = ref
            if target.get("type") in ("enum", "fixed"):
                return True
            return self._fields(target, path, space, nested)
        if isinstance(node, list):
            others = [b for b in node if b != "null"]
            return len(node) == 2 and len(others) == 1 and self._walk(others[0], path, ns, nested)
        if not isinstance(node, dict):
            return False
        kind = node.get("type")
        if kind in ("record", "error"):
            full, space = self._register(node, ns)
            if full == _MAP_ENTRY or node.get("connect.internal.type") == "MapEntry":
                return False
            return self._fields(node, path, space, nested)
        if kind in ("enum", "fixed"):
            self._register(node, ns)
            return True
        if kind == "array":
            return self._walk(node.get("items"), path, ns, nested=True)
        if kind == "map":
            return self._walk(node.get("values"), path, ns, nested=True)
        return self._walk(kind, path, ns, nested)  # a primitive with properties: {"type": "int", ...}

    def _fields(self, record: dict[str, Any], path: Path, ns: str | None, nested: bool) -> bool:
        return all(self._walk(f["type"], (*path, str(f["name"])), ns, nested) for f in record.get("fields", []))

    def finite(self, datums: list[Any]) -> bool:
        """No float field of these datums holds NaN or an infinity."""
        for path in self.floats:
            for datum in datums:
                value = datum
                for step in path:
                    if value is None:
                        break
                    value = value[step]
                if value is not None and not math.isfinite(value):
                    return False
        return True


def payloads(prefix: bytes, datums: list[Any]) -> list[bytes]:
    """`prefix` + each datum as JSON + `}`: whole JsonConverter records (prefix `{"schema":…,"payload":`)."""
    dumps = orjson.dumps
    return [prefix + dumps(d, default=_b64) + b"}" for d in datums]
