"""An Avro schema as a tree of named nodes, written as JSON the way Avro's Java `Schema.toString` does.

Confluent's AvroData builds `org.apache.avro.Schema` objects; the text registered with a
Schema Registry is their `toString()`. Reproducing that text (key order, a named type defined
at its first use and referenced by name after, `namespace` written only where it differs from
the enclosing one) makes the registered schemas read like those a Java Connect worker
registers. fastavro's `parse_schema` takes the resulting JSON for encoding.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NO_DEFAULT", "Array", "AvroField", "AvroMap", "Named", "Node", "Primitive", "Record", "Union", "to_json"]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


class Node:
    """Any Avro schema; `props` are the extra JSON properties (`connect.*`, `logicalType`...)."""

    __slots__ = ("props",)

    def __init__(self) -> None:
        self.props: dict[str, Any] = {}


class Primitive(Node):
    __slots__ = ("type",)

    def __init__(self, type: str) -> None:
        super().__init__()
        self.type = type


class Array(Node):
    __slots__ = ("items",)

    def __init__(self, items: Node) -> None:
        super().__init__()
        self.items = items


class AvroMap(Node):
    __slots__ = ("values",)

    def __init__(self, values: Node) -> None:
        super().__init__()
        self.values = values


class Union(Node):
    __slots__ = ("branches",)

    def __init__(self, branches: list[Node]) -> None:
        super().__init__()
        self.branches = branches


class Named(Node):
    """A record (or enum): full name = namespace + '.' + name."""

    __slots__ = ("doc", "name", "namespace")

    def __init__(self, name: str, namespace: str | None, doc: str | None = None) -> None:
        super().__init__()
        self.name = name
        self.namespace = namespace or None
        self.doc = doc

    @property
    def full_name(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name


class AvroField:
    __slots__ = ("default", "doc", "name", "props", "type")

    def __init__(self, name: str, type: Node, doc: str | None = None, default: Any = NO_DEFAULT) -> None:
        self.name = name
        self.type = type
        self.doc = doc
        self.default = default
        self.props: dict[str, Any] = {}


class Record(Named):
    __slots__ = ("fields",)

    def __init__(self, name: str, namespace: str | None, doc: str | None = None) -> None:
        super().__init__(name, namespace, doc)
        self.fields: list[AvroField] = []


class Enum(Named):
    __slots__ = ("default_symbol", "symbols")

    def __init__(self, name: str, namespace: str | None, symbols: list[str], doc: str | None = None) -> None:
        super().__init__(name, namespace, doc)
        self.symbols = symbols
        self.default_symbol: str | None = None


def to_jsonable(node: Node) -> Any:
    """The JSON value of `node` (named types defined once, then referenced), as Avro's Java writes it."""
    return _Writer().write(node)


def to_json(node: Node) -> str:
    """The compact JSON text of `node`: what is registered with a Schema Registry."""
    return json.dumps(to_jsonable(node), separators=(",", ":"), ensure_ascii=False)


class _Writer:
    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.space: str | None = None

    def write(self, node: Node) -> Any:
        if isinstance(node, Primitive):
            return {"type": node.type, **node.props} if node.props else node.type
        if isinstance(node, Union):
            return [self.write(b) for b in node.branches]
        if isinstance(node, Array):
            return {"type": "array", "items": self.write(node.items), **node.props}
        if isinstance(node, AvroMap):
            return {"type": "map", "values": self.write(node.values), **node.props}
        if isinstance(node, Named):
            return self._named(node)
        raise TypeError(f"not an Avro schema node: {node!r}")

    def _named(self, node: Named) -> Any:
        full = node.full_name
        if full in self.seen:
            # Schema.Name.getQualified: the simple name where the namespace is the enclosing one.
            return node.name if node.namespace is None or node.namespace == self.space else full
        self.seen.add(full)
        out: dict[str, Any] = {"type": "record" if isinstance(node, Record) else "enum", "name": node.name}
        if node.namespace is not None:
            if node.namespace != self.space:
                out["namespace"] = node.namespace
        elif self.space is not None:
            out["namespace"] = ""
        if node.doc is not None:
            out["doc"] = node.doc
        if isinstance(node, Enum):
            out["symbols"] = list(node.symbols)
            if node.default_symbol is not None:
                out["default"] = node.default_symbol
        else:
            assert isinstance(node, Record)
            saved = self.space
            self.space = node.namespace
            out["fields"] = [self._field(f) for f in node.fields]
            self.space = saved
        out.update(node.props)
        return out

    def _field(self, field: AvroField) -> dict[str, Any]:
        out: dict[str, Any] = {"name": field.name, "type": self.write(field.type)}
        if field.doc is not None:
            out["doc"] = field.doc
        if field.default is not NO_DEFAULT:
            out["default"] = field.default
        out.update(field.props)
        return out


def valid_default(node: Node, value: Any) -> bool:
    """Whether `value` (JSON) is a valid default for `node` (Avro's Schema.isValidDefault).

    Avro's Java library refuses a field whose default does not fit (a union's default must fit its
    first branch); Confluent's AvroData then writes the field without one, and so do we.
    """
    if isinstance(node, Union):
        return bool(node.branches) and valid_default(node.branches[0], value)
    if isinstance(node, Primitive):
        t = node.type
        if t == "null":
            return value is None
        if t == "boolean":
            return isinstance(value, bool)
        if t in ("int", "long"):
            return isinstance(value, int) and not isinstance(value, bool)
        if t in ("float", "double"):
            return isinstance(value, int | float) and not isinstance(value, bool)
        return isinstance(value, str)  # string, bytes
    if isinstance(node, Array):
        return isinstance(value, list) and all(valid_default(node.items, v) for v in value)
    if isinstance(node, AvroMap):
        return isinstance(value, dict) and all(valid_default(node.values, v) for v in value.values())
    if isinstance(node, Enum):
        return isinstance(value, str) and value in node.symbols
    if isinstance(node, Record):
        if not isinstance(value, dict):
            return False
        for f in node.fields:
            if f.name in value:
                if not valid_default(f.type, value[f.name]):
                    return False
            elif f.default is NO_DEFAULT:
                return False
        return True
    return False
