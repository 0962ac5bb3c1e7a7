"""Rows flattened by Debezium's ExtractNewRecordState ("unwrap") with `add.fields`, read as change events.

io.debezium.transforms.ExtractNewRecordState replaces the envelope by its `after` row (its
`before` row plus `__deleted="true"` for a delete under `delete.tombstone.handling.mode=rewrite`)
and, for each `add.fields` entry, adds `<prefix><field>` (a bare name: `op`, `ts_ms`…, or a
`source` field) or `<prefix><struct>_<field>` (`source.pos` → `__source_pos`). The sink orders
changes by the source position (sequence.py owns that format), so a flattened row is a change
event only when it carries the operation and the position:

- MySQL/MariaDB: `op`, `source.file`, `source.pos`, `source.row`, `source.sequence` (the binlog
  lineage epoch, null until a failover);
- PostgreSQL: `op`, `source.lsn`, `source.sequence` (`["<commit lsn>","<lsn>"]`);
- `source.snapshot` (optional) marks a table's last snapshot read, `source.ts_ms` (optional) fills
  `__source_ts_ms`.

This module finds those fields in a row (any prefix; each as `source_<f>` or bare `<f>`),
gives the decoder the op and a `source` block to order by, and gives the flattener the row
without them. Renamed entries (`source.pos:POS`) are not recognised: the sink knows the
fields by Debezium's names. Checked and not used: nothing in Debezium's or Kafka's Python
ecosystem reads these rows back into change events.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

# Debezium's rewrite flag: always this name, whatever add.fields.prefix says.
DELETED = "__deleted"
DEFAULT_PREFIX = "__"
# The position fields each source family needs (add.fields entries, `source.` struct).
REQUIRED = {
    "mysql": ("file", "pos", "row", "sequence"),
    "postgres": ("lsn", "sequence"),
}
OPTIONAL = ("snapshot", "ts_ms")
_ALL_SOURCE = ("file", "pos", "row", "sequence", "lsn", "snapshot", "ts_ms")
# Kafka/Debezium envelope fields that a bare add.fields name does not take from `source`.
_NOT_SOURCE = frozenset({"ts_ms"})


def add_fields(family: str | None) -> str:
    """The add.fields value the sink needs, for advice: `op,source.file,…`."""
    wanted = REQUIRED.get(family or "")
    if wanted is None:
        return f"{add_fields('mysql')} (MySQL) or {add_fields('postgres')} (PostgreSQL)"
    return ",".join(["op", *(f"source.{f}" for f in (*wanted, *OPTIONAL))])


def advice(family: str | None = None) -> str:
    """The fix, as the sink's errors say it (`Fix:` keeps the generic poison advice out)."""
    return (
        f"Fix: set add.fields={add_fields(family)} and delete.tombstone.handling.mode=rewrite on the "
        "ExtractNewRecordState transform"
    )


class UnwrapError(ValueError):
    """A flattened row without the fields the sink needs to order it."""


@dataclass(frozen=True)
class Layout:
    """Where one row shape keeps the op and the position: field name per logical field."""

    family: str
    op: str
    source: Mapping[str, str]  # `source` field → the row's field holding it

    @property
    def consumed(self) -> frozenset[str]:
        """The added fields the sink turns into its own columns (`__op`, `__seq`…): not row columns."""
        return frozenset({self.op, DELETED, *self.source.values()})

    def source_block(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {name: row.get(field) for name, field in self.source.items()}


def _lookup(names: Collection[str], prefix: str, field: str) -> str | None:
    qualified = f"{prefix}source_{field}"
    if qualified in names:
        return qualified
    bare = f"{prefix}{field}"
    return bare if field not in _NOT_SOURCE and bare in names else None


def _layout(names: Collection[str], prefix: str) -> Layout | None:
    op = f"{prefix}op"
    if op not in names:
        return None
    for family, wanted in REQUIRED.items():
        found = {f: _lookup(names, prefix, f) for f in (*wanted, *OPTIONAL)}
        if all(found[f] for f in wanted):
            return Layout(family, op, {f: n for f, n in found.items() if n})
    return None


def _family_hint(names: Collection[str]) -> str | None:
    if any(n.endswith(("file", "pos")) for n in names):
        return "mysql"
    if any(n.endswith("lsn") for n in names):
        return "postgres"
    return None


def layout_of(names: Collection[str]) -> Layout:
    """The layout of a flattened row with these field names; UnwrapError names what is missing.

    The prefix is Debezium's `__` unless the names show another (`<p>op` with the position)."""
    found = _layout(names, DEFAULT_PREFIX)
    if found is not None:
        return found
    prefixes = sorted({n[: -len("op")] for n in names if n.endswith("op")}, key=len, reverse=True)
    for prefix in prefixes:
        found = _layout(names, prefix)
        if found is not None:
            return found
    family = _family_hint(names)
    wanted = [("op", f"{DEFAULT_PREFIX}op" in names)]
    wanted += [(f"source_{f}", _lookup(names, DEFAULT_PREFIX, f) is not None) for f in REQUIRED[family or "mysql"]]
    missing = [DEFAULT_PREFIX + f for f, present in wanted if not present]
    raise UnwrapError(
        "the value is not a Debezium change event, and as a row flattened by ExtractNewRecordState it lacks "
        f"{', '.join(missing) or 'the operation and source position'}, which the sink needs to order changes. "
        + advice(family)
    )


_CACHE: dict[tuple[str, ...], Layout | UnwrapError] = {}


def cached_layout(names: Collection[str]) -> Layout:
    """layout_of, remembered per field-name tuple (records of one table repeat them)."""
    key = tuple(names)
    hit = _CACHE.get(key)
    if hit is None:
        try:
            hit = layout_of(names)
        except UnwrapError as e:
            hit = e
        if len(_CACHE) >= 256:
            _CACHE.clear()
        _CACHE[key] = hit
    if isinstance(hit, UnwrapError):
        raise hit
    return hit


def is_envelope(payload: Mapping[str, Any]) -> bool:
    """Debezium's envelope (op plus before/after/source), not a flattened row."""
    return "op" in payload and ("source" in payload or "after" in payload or "before" in payload)


def event(row: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(op, the `source` block the position fields make) of a flattened row."""
    layout = cached_layout(row.keys())
    return row.get(layout.op), layout.source_block(row)


def row_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's columns: the flattened value without the fields the sink consumed."""
    consumed = cached_layout(row.keys()).consumed
    return {k: v for k, v in row.items() if k not in consumed}


def is_envelope_schema(schema: Mapping[str, Any]) -> bool:
    names = {f.get("field") for f in schema.get("fields") or []}
    return str(schema.get("name") or "").endswith(".Envelope") or ("op" in names and bool(names & {"after", "before"}))


def row_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Connect schema of a flattened row's columns (the value schema without the consumed
    fields), or None when the fields the sink needs are missing."""
    fields = schema.get("fields") or []
    try:
        consumed = cached_layout([f.get("field") for f in fields]).consumed
    except UnwrapError:
        return None
    return {**schema, "fields": [f for f in fields if f.get("field") not in consumed]}
