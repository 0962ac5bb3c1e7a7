"""`r` records of snapshot rows built straight from result tuples: the snapshot's per-row hot path.

The same records EventDispatcher.read builds from a row dict (Envelope.read of TableSchema's
value and key Structs, the source block of SourceInfo.struct), from a function compiled once
per table and column list: values are read by position (no dict per row), converters that
change nothing are skipped, and the source block is filled from a per-table template with
only its times and snapshot marker set per row. A value the compiled path cannot take (a
converter refusing it, a column the SELECT left out) goes through TableSchema's own builders,
which apply event.converting.failure.handling.mode exactly as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc.api import Headers, SourceRecord, Struct
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.schema import TableSchema
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.value_converters import IDENTITY, Converter

# emit(values, marker, offset): buffers the `r` record of one result row.
Emit = Callable[[tuple[Any, ...], str, dict[str, Any]], None]


# The attributes SourceRecord's constructor sets; the emitter sets them itself while they are all there is.
RECORD_FIELDS = frozenset(
    ("source_partition", "source_offset", "topic", "kafka_partition", "key_schema", "key", "value_schema", "value",
     "timestamp", "headers")
)  # fmt: skip


def _headers_new() -> bool:
    """True while Headers holds nothing but its `_items` list (the emitter then sets that list itself)."""
    return getattr(Headers, "__slots__", None) == ("_items",)


def _record_slots() -> frozenset[str]:
    return frozenset(name for cls in SourceRecord.__mro__ for name in getattr(cls, "__slots__", ()))


def _struct(target: str, schema: str, values: str) -> str:
    """`target = Struct.from_values(schema, [values])` inlined (the values are the schema's fields, in order)."""
    return f"{target} = new(Struct); {target}.schema = {schema}; {target}._values = [{values}]"


def _exprs(columns: list[tuple[str, Converter]], position: dict[str, int], ns: dict[str, Any], tag: str) -> str | None:
    parts = []
    for i, (name, convert) in enumerate(columns):
        if name not in position:
            return None
        at = f"values[{position[name]}]"
        if convert is IDENTITY:
            parts.append(at)
        else:
            ns[f"{tag}{i}"] = convert
            parts.append(f"{tag}{i}({at})")
    return ", ".join(parts)


def compile_emit(
    ts: TableSchema, names: list[str], source_info: SourceInfo, dispatcher: EventDispatcher, file: str, pos: int
) -> Emit:
    """The emitter of `ts`'s rows read as tuples of the columns `names`, at binlog position `file:pos`."""
    position = {name: i for i, name in enumerate(names)}  # a repeated name: the last, as dict(zip()) keeps
    template = source_info.struct(ts_ms=0, db=ts.table.db, table=ts.table.name, server_id=0, file=file, pos=pos)
    sschema = template.schema
    index = {f.name: f.index for f in sschema.fields}
    source_parts = [f"s{i}" for i in range(len(sschema.fields))]
    for name, expr in (("ts_ms", "ms"), ("snapshot", "marker"), ("ts_us", "ms * 1000"), ("ts_ns", "ms * 1000000")):
        source_parts[index[name]] = expr
    ns: dict[str, Any] = {f"s{i}": v for i, v in enumerate(template._values)}
    ns.update(
        new=object.__new__, Struct=Struct, Headers=Headers, time_ns=time.time_ns,
        SourceRecord=SourceRecord, dict=dict, zip=zip, names=list(names), value_of=ts.value, key_of=ts.key,
        vschema=ts.value_schema, kschema=ts.key_schema, sschema=sschema, eschema=ts.envelope.schema, topic=ts.topic,
        partition=dispatcher.partition, buffer=dispatcher.buffer,
    )  # fmt: skip
    value_expr = _exprs(ts.value_columns, position, ns, "v")
    key_expr = _exprs(ts.key_columns, position, ns, "k") if ts.key_schema is not None else "None"
    if value_expr is None or key_expr is None:
        build = "    row = dict(zip(names, values))\n    after = value_of(row)\n    key = key_of(row)\n"
    else:
        key_build = "key = None" if ts.key_schema is None else _struct("key", "kschema", key_expr)
        build = (
            "    try:\n"
            f"        {_struct('after', 'vschema', value_expr)}\n"
            f"        {key_build}\n"
            "    except Exception:\n"  # the builders' own path: failure handling mode, exact errors
            "        row = dict(zip(names, values))\n"
            "        after = value_of(row)\n"
            "        key = key_of(row)\n"
        )
    if _record_slots() == RECORD_FIELDS:
        record = (
            "    r = new(SourceRecord); r.source_partition = partition; r.source_offset = offset; r.topic = topic\n"
            "    r.kafka_partition = None; r.key_schema = kschema; r.key = key; r.value_schema = eschema\n"
            "    r.value = value; r.timestamp = None\n"
            + (
                "    h = new(Headers); h._items = []; r.headers = h\n"
                if _headers_new()
                else "    r.headers = Headers()\n"
            )
            + "    buffer.append(r)\n"
        )
    else:  # SourceRecord changed shape: its own constructor
        record = "    buffer.append(SourceRecord(partition, offset, topic, None, kschema, key, eschema, value))\n"
    envelope = "None, after, src, None, 'r', ns // 1000000, ns // 1000, ns"
    source = (
        "def emit(values, marker, offset):\n"
        "    ns = time_ns()\n"  # one clock read: the source's ts_ms (the read) and the envelope's (the record)
        "    ms = ns // 1000000\n"
        f"{build}"
        f"    {_struct('src', 'sschema', ', '.join(source_parts))}\n"
        f"    {_struct('value', 'eschema', envelope)}\n"
        f"{record}"
    )
    exec(compile(source, f"<snapshot emit {ts.table.id}>", "exec"), ns)
    emit: Emit = ns["emit"]
    return emit
