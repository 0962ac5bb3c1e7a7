"""Avro schema -> Connect schema, and Avro datum -> Connect value, as Confluent's `AvroData.toConnectSchema`.

The inverse of from_connect.py for schemas we wrote (`connect.*` properties restore names,
versions, docs, parameters, defaults and INT8/INT16), and Confluent's reading of any other Avro
schema: a record is a STRUCT named by its full name (not `ConnectDefault*`), `[null, T]` an
optional T, an enum a STRING with `io.confluent.connect.avro.Enum` parameters, a fixed BYTES with
`connect.fixed.size`, an array of `MapEntry` records a MAP, logical types `decimal`, `date`,
`time-millis` and `timestamp-millis` Kafka's logical types (other logical types keep their
physical type). Unions of more than one non-null branch are refused: Confluent maps them to a
`io.confluent.connect.avro.Union` struct, which no Debezium schema produces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cdc.api.data import Field, Schema, Struct, Type
from cdc.api.data.logical import Date, Decimal, Time, Timestamp
from cdc.api.errors import DataException
from cdc.converters.avro.from_connect import (
    AVRO_ENUM,
    CONNECT_DEFAULT,
    CONNECT_DOC,
    CONNECT_INTERNAL_TYPE,
    CONNECT_NAME,
    CONNECT_PARAMETERS,
    CONNECT_TYPE,
    CONNECT_VERSION,
    DECIMAL_PRECISION,
    DECIMAL_PRECISION_DEFAULT,
    DEFAULT_SCHEMA_NAME,
    ENUM_DEFAULT_PARAM,
    ENUM_DOC_PARAM,
    FIELD_DEFAULT_FLAG,
    FIELD_DOC_PARAM,
    MAP_ENTRY_TYPE_NAME,
    NAMESPACE,
    RECORD_DOC_PARAM,
)

log = logging.getLogger(__name__)

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})
_TYPES = PRIMITIVES | _NAMED | {"array", "map"}
_ABSENT: Any = object()
_DEFAULT_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
FIXED_SIZE_PARAM = "connect.fixed.size"


def _is_null(node: Any) -> bool:
    return node == "null" or (isinstance(node, dict) and node.get("type") == "null")


class _Spec:
    """Everything a Connect schema is made of, gathered before it is built."""

    def __init__(self, type: Type) -> None:
        self.type = type
        self.name: str | None = None
        self.version: int | None = None
        self.doc: str | None = None
        self.params: dict[str, str] = {}
        self.fields: list[Field] = []
        self.key: Schema | None = None
        self.value: Schema | None = None


class AvroToConnect:
    """One conversion of an Avro schema (parsed JSON) to a Connect schema."""

    def __init__(self, meta: bool = True) -> None:
        self.meta = meta
        self.names: dict[str, tuple[dict[str, Any], str | None]] = {}
        self.active: set[str] = set()

    def convert(self, node: Any, version: int | None = None) -> Schema:
        """The Connect schema of `node`; `version` (the registry's) when the schema carries none."""
        return self._convert(node, None, version=version)

    # -- names ---------------------------------------------------------------------------------
    @staticmethod
    def _full_name(node: dict[str, Any], ns: str | None) -> tuple[str, str | None]:
        name = node["name"]
        if "." in name:
            return name, name.rpartition(".")[0]
        space = node.get("namespace", ns) or None
        return (f"{space}.{name}" if space else name), space

    def _resolve(self, ref: str, ns: str | None) -> tuple[dict[str, Any], str | None]:
        for full in (ref, f"{ns}.{ref}" if ns and "." not in ref else None):
            if full is not None and full in self.names:
                return self.names[full]
        raise DataException(f"AvroConverter: the Avro schema refers to unknown type {ref!r}")

    # -- schemas -------------------------------------------------------------------------------
    def _convert(
        self,
        node: Any,
        ns: str | None,
        force_optional: bool = False,
        field_default: Any = _ABSENT,
        version: int | None = None,
    ) -> Schema:
        if isinstance(node, list):
            return self._union(node, ns)
        if isinstance(node, str):
            if node in PRIMITIVES:
                node = {"type": node}
            else:
                definition, def_ns = self._resolve(node, ns)
                return self._convert(definition, def_ns, force_optional, field_default)
        if not isinstance(node, dict):
            raise DataException(f"AvroConverter: not an Avro schema: {node!r}")
        t = node.get("type")
        if isinstance(t, list | dict) or (
            isinstance(t, str) and t not in PRIMITIVES and t not in _NAMED and t not in ("array", "map")
        ):
            return self._convert(t, ns, force_optional, field_default, version)

        logical = node.get("logicalType")
        spec, own_ns = self._base(node, t, logical, ns)
        self._annotate(spec, node, t, version)
        default = self._default(spec, node, field_default)
        name = self._name_of(spec, node, t, own_ns)
        if name is not None and not name.startswith(_DEFAULT_FULL_NAME):
            if spec.name is not None and spec.name != name:
                raise DataException(
                    f"AvroConverter: mismatched names: {spec.name!r} from the Avro type, {name!r} in connect.name"
                )
            spec.name = name
        return self._build(spec, force_optional, default)

    def _base(self, node: dict[str, Any], t: str, logical: Any, ns: str | None) -> tuple[_Spec, str | None]:
        own_ns = ns
        if t == "boolean":
            spec = _Spec(Type.BOOLEAN)
        elif t in ("bytes", "fixed"):
            if logical == "decimal":
                scale = node.get("scale")
                scale = scale if isinstance(scale, int) else 0
                spec = _Spec(Type.BYTES)
                spec.name, spec.version = Decimal.LOGICAL_NAME, 1
                spec.params[Decimal.SCALE_FIELD] = str(scale)
                precision = node.get("precision")
                if precision is not None:
                    if not isinstance(precision, int):
                        raise DataException("AvroConverter: decimal precision must be a JSON integer")
                    if precision != DECIMAL_PRECISION_DEFAULT:
                        spec.params[DECIMAL_PRECISION] = str(precision)
            else:
                spec = _Spec(Type.BYTES)
            if t == "fixed":
                full, own_ns = self._full_name(node, ns)
                self.names[full] = (node, own_ns)
                spec.params[FIXED_SIZE_PARAM] = str(node["size"])
        elif t == "double":
            spec = _Spec(Type.FLOAT64)
        elif t == "float":
            spec = _Spec(Type.FLOAT32)
        elif t == "int":
            ct = node.get(CONNECT_TYPE)
            if logical == "date":
                spec = _Spec(Type.INT32)
                spec.name, spec.version = Date.LOGICAL_NAME, 1
            elif logical == "time-millis":
                spec = _Spec(Type.INT32)
                spec.name, spec.version = Time.LOGICAL_NAME, 1
            elif logical is None and ct in ("int8", "int16"):
                spec = _Spec(Type.INT8 if ct == "int8" else Type.INT16)
            else:
                spec = _Spec(Type.INT32)
        elif t == "long":
            spec = _Spec(Type.INT64)
            if logical == "timestamp-millis":
                spec.name, spec.version = Timestamp.LOGICAL_NAME, 1
        elif t == "string":
            spec = _Spec(Type.STRING)
        elif t == "array":
            items = node["items"]
            entry = self._map_entry(items, ns)
            if entry is not None:
                entry_node, entry_ns = entry
                fields = {f["name"]: f for f in entry_node.get("fields", [])}
                if len(fields) != 2 or "key" not in fields or "value" not in fields:
                    raise DataException(
                        "AvroConverter: found a map encoded as an array of key-value pairs, but its"
                        " elements are not {key, value} records"
                    )
                spec = _Spec(Type.MAP)
                spec.key = AvroToConnect(self.meta)._with(self.names)._convert(fields["key"]["type"], entry_ns)
                spec.value = AvroToConnect(self.meta)._with(self.names)._convert(fields["value"]["type"], entry_ns)
            else:
                spec = _Spec(Type.ARRAY)
                spec.value = self._convert(items, ns)
        elif t == "map":
            spec = _Spec(Type.MAP)
            spec.key = Schema.STRING_SCHEMA
            spec.value = self._convert(node["values"], ns)
        elif t in ("record", "error"):
            full, own_ns = self._full_name(node, ns)
            if full in self.active:
                raise DataException(f"AvroConverter: recursive Avro type {full!r} has no Connect equivalent")
            self.names[full] = (node, own_ns)
            self.active.add(full)
            spec = _Spec(Type.STRUCT)
            if self.meta and node.get("doc") is not None:
                spec.params[RECORD_DOC_PARAM] = node["doc"]
            for i, f in enumerate(node.get("fields", [])):
                if self.meta and f.get("doc") is not None:
                    spec.params[FIELD_DOC_PARAM + f["name"]] = f["doc"]
                fs = self._convert(f["type"], own_ns, False, f.get("default", _ABSENT))
                field_params = f.get(CONNECT_PARAMETERS)
                if self.meta and isinstance(field_params, dict):
                    fs = _with_params(fs, field_params)
                spec.fields.append(Field(f["name"], i, fs))
            self.active.discard(full)
        elif t == "enum":
            full, own_ns = self._full_name(node, ns)
            self.names[full] = (node, own_ns)
            spec = _Spec(Type.STRING)
            if self.meta:
                if node.get("doc") is not None:
                    spec.params[ENUM_DOC_PARAM + node["name"]] = node["doc"]
                if node.get("default") is not None:
                    spec.params[ENUM_DEFAULT_PARAM + node["name"]] = node["default"]
            spec.params[AVRO_ENUM] = full
            for symbol in node["symbols"]:
                spec.params[f"{AVRO_ENUM}.{symbol}"] = symbol
        elif t == "null":
            raise DataException("AvroConverter: standalone null schemas have no Connect equivalent")
        else:
            raise DataException(f"AvroConverter: unsupported Avro type {t!r}")
        return spec, own_ns

    def _with(self, names: dict[str, tuple[dict[str, Any], str | None]]) -> AvroToConnect:
        self.names = names
        return self

    def _map_entry(self, items: Any, ns: str | None) -> tuple[dict[str, Any], str | None] | None:
        if isinstance(items, str):
            if items in PRIMITIVES:
                return None
            items_node, items_ns = self._resolve(items, ns)
        else:
            items_node, items_ns = items, ns
        if not isinstance(items_node, dict) or items_node.get("type") not in ("record", "error"):
            return None
        full, own_ns = self._full_name(items_node, items_ns)
        if full == f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}" or items_node.get(CONNECT_INTERNAL_TYPE) == MAP_ENTRY_TYPE_NAME:
            self.names[full] = (items_node, own_ns)
            return items_node, own_ns
        return None

    def _annotate(self, spec: _Spec, node: dict[str, Any], t: str, version: int | None) -> None:
        if self.meta and node.get(CONNECT_DOC) is not None:
            spec.doc = node[CONNECT_DOC]
        v = node.get(CONNECT_VERSION)
        if v is not None and not isinstance(v, int):
            raise DataException(f"AvroConverter: invalid connect.version {v!r}")
        v = v if v is not None else version
        if v is not None and v >= 0:
            if spec.version is not None and spec.version != v:
                raise DataException(
                    f"AvroConverter: mismatched versions: {spec.version} from the logical type, {v} in the schema"
                )
            spec.version = v
        params = node.get(CONNECT_PARAMETERS)
        if self.meta and params is not None:
            if not isinstance(params, dict) or not all(isinstance(x, str) for x in params.values()):
                raise DataException(f"AvroConverter: connect.parameters must map strings to strings, got {params!r}")
            spec.params.update(params)
        for k, x in node.items():
            if k.startswith("avro"):
                spec.params[k] = x if isinstance(x, str) else _java_string(x)

    def _default(self, spec: _Spec, node: dict[str, Any], field_default: Any) -> Any:
        connect_default = node.get(CONNECT_DEFAULT, _ABSENT)
        if field_default is _ABSENT:
            return connect_default
        if self.meta and connect_default is _ABSENT:
            spec.params[FIELD_DEFAULT_FLAG] = "true"
        return field_default

    @staticmethod
    def _name_of(spec: _Spec, node: dict[str, Any], t: str, own_ns: str | None) -> str | None:
        name = node.get(CONNECT_NAME)
        if name is not None:
            if not isinstance(name, str):
                raise DataException(f"AvroConverter: invalid connect.name {name!r}")
            return name
        if t in ("record", "error", "enum") or (t == "fixed" and spec.name != Decimal.LOGICAL_NAME):
            full, _ = AvroToConnect._full_name(node, own_ns)
            return full
        return None

    def _union(self, branches: list[Any], ns: str | None) -> Schema:
        if len(branches) == 1:
            return self._convert(branches[0], ns)
        if len(branches) == 2 and any(_is_null(b) for b in branches):
            other = next(b for b in branches if not _is_null(b))
            return self._convert(other, ns, force_optional=True)
        raise DataException(
            f"AvroConverter: Avro unions other than [null, T] are not supported (union of {len(branches)} types)"
        )

    @staticmethod
    def _build(spec: _Spec, optional: bool, default: Any) -> Schema:
        def make(default_value: Any) -> Schema:
            return Schema(
                spec.type,
                optional=optional,
                default_value=default_value,
                name=spec.name,
                version=spec.version,
                doc=spec.doc,
                parameters=spec.params or None,
                fields=spec.fields,
                key_schema=spec.key,
                value_schema=spec.value,
            )

        schema = make(None)
        if default is _ABSENT or default is None:
            return schema
        try:
            return make(default_from_json(schema, default))
        except (DataException, ValueError, TypeError, KeyError, AttributeError) as e:
            log.warning("AvroConverter: ignoring invalid default for %s: %s", spec.name or spec.type.value, e)
            return schema


def _java_string(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _with_params(schema: Schema, params: dict[str, Any]) -> Schema:
    """`schema` with a field's own `connect.parameters` (a named type reused with other parameters)."""
    current = schema.parameters or {}
    if all(current.get(str(k)) == str(v) for k, v in params.items()):
        return schema
    merged = dict(current)
    merged.update({str(k): str(v) for k, v in params.items()})
    return Schema(
        schema.type,
        optional=schema.optional,
        default_value=schema.default_value,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=merged,
        fields=schema.fields,
        key_schema=schema.key_schema,
        value_schema=schema.value_schema,
    )


def default_from_json(schema: Schema, value: Any) -> Any:
    """A default in Avro's JSON as the Connect value of `schema` (AvroData.defaultValueFromAvro)."""
    if value is None:
        return None
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return Decimal.to_logical(schema, value.encode("latin-1"))
    if name == Date.LOGICAL_NAME:
        return Date.to_logical(schema, value)
    if name == Time.LOGICAL_NAME:
        return Time.to_logical(schema, value)
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, value)
    t = schema.type
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DataException(f"{value!r} is not an integer")
        return value
    if t in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    if t is Type.BYTES:
        return value.encode("latin-1")
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [default_from_json(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        ks, vs = schema.key_schema, schema.value_schema
        if isinstance(value, dict):
            return {default_from_json(ks, k): default_from_json(vs, v) for k, v in value.items()}
        out = {}
        for entry in value:
            k, v = (entry["key"], entry["value"]) if isinstance(entry, dict) else entry
            out[default_from_json(ks, k)] = default_from_json(vs, v)
        return out
    if t is Type.STRUCT:
        # (a struct schema's own default would have to hold the schema being built: it fails
        # validation in _build and is dropped, as Confluent drops defaults it cannot read)
        return Struct.from_values(
            schema,
            [
                default_from_json(f.schema, value[f.name]) if f.name in value else f.schema.default_value
                for f in schema.fields
            ],
        )
    return value


# -- values ------------------------------------------------------------------------------------
Read = Callable[[Any], Any]


def compile_reader(schema: Schema) -> Read | None:
    """A function from fastavro's datum to the Connect value of `schema`; None where they are equal."""
    inner = _compile(schema)
    if inner is None or not schema.optional:
        return inner
    return lambda v: None if v is None else inner(v)


def _compile(schema: Schema) -> Read | None:
    name = schema.name
    if name == Decimal.LOGICAL_NAME and schema.type is Type.BYTES:
        return lambda v: Decimal.to_logical(schema, v)
    if name == Date.LOGICAL_NAME and schema.type is Type.INT32:
        return lambda v: Date.to_logical(schema, v)
    if name == Time.LOGICAL_NAME and schema.type is Type.INT32:
        return lambda v: Time.to_logical(schema, v)
    if name == Timestamp.LOGICAL_NAME and schema.type is Type.INT64:
        return lambda v: Timestamp.to_logical(schema, v)
    t = schema.type
    if t.is_primitive:
        return None
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = compile_reader(schema.value_schema)
        return None if item is None else (lambda v: [item(x) for x in v])
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        key = compile_reader(schema.key_schema) or _same
        val = compile_reader(schema.value_schema) or _same

        def read_map(v: Any) -> dict[Any, Any]:
            if isinstance(v, dict):
                return {k: val(x) for k, x in v.items()}
            return {key(e["key"]): val(e["value"]) for e in v}

        return read_map
    readers = [(f.name, compile_reader(f.schema)) for f in schema.fields]

    def read_struct(v: dict[str, Any]) -> Struct:
        return Struct.from_values(schema, [v[n] if r is None else r(v[n]) for n, r in readers])

    return read_struct


def _same(v: Any) -> Any:
    return v
