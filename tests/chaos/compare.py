"""Source tables against target tables, row by row, each read with its own library.

The source through pymysql/psycopg, a Delta target through deltalake (Arrow's native local
filesystem, as the sink reads it), a PostgreSQL warehouse through psycopg. Values are
normalised by the column's kind so that only real differences remain: decimals by value
(scale aside), datetimes as naive UTC at microsecond precision, JSON parsed (text vs jsonb,
key order, whitespace), bytes as bytes. A column the target lacks (added in the source
after the target's last change) reads as NULL; the target's own `__*` columns are ignored.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.fs as pa_fs
from psycopg import sql

from tests.chaos.db import SourceDb
from tests.chaos.schema import BYTES, DATETIME, DECIMAL, JSON, TABLES, TIMESTAMPTZ, Table

Key = tuple[Any, ...]
Row = dict[str, Any]
EXAMPLES = 5


def normalise(v: Any, kind: str) -> Any:
    """One value in a form where equal data compares equal across engines."""
    if v is None:
        return None
    if isinstance(v, (memoryview, bytearray)):
        v = bytes(v)
    if kind == JSON:
        if isinstance(v, (str, bytes)):
            try:
                v = json.loads(v)
            except ValueError:
                return ("not JSON", v)
        return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if kind == DECIMAL:
        if isinstance(v, bool):
            return v
        if isinstance(v, (Decimal, int, str)):
            try:
                return Decimal(v).normalize()
            except InvalidOperation:
                return v
        return v
    if kind in (DATETIME, TIMESTAMPTZ) and isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo is not None else v
    if kind == BYTES and isinstance(v, bytes):
        return v
    return v


def _kinds(t: Table, dialect: str) -> dict[str, str]:
    return {c.name: c.kind_in(dialect) for c in (*t.columns, *t.added)}


@dataclass
class TableDiff:
    table: str
    source_rows: int = 0
    target_rows: int = 0
    missing: list[Key] = field(default_factory=list)
    extra: list[Key] = field(default_factory=list)
    duplicates: list[Key] = field(default_factory=list)
    differing: list[tuple[Key, list[tuple[str, Any, Any]]]] = field(default_factory=list)
    note: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.duplicates or self.differing)

    def lines(self) -> list[str]:
        head = (
            f"{self.table}: source {self.source_rows} rows, target {self.target_rows} rows: "
            f"{len(self.missing)} missing, {len(self.extra)} extra, {len(self.differing)} differing"
            + (f", {len(self.duplicates)} duplicate keys" if self.duplicates else "")
        )
        out = [head] + ([f"  note: {self.note}"] if self.note else [])
        out += [f"  missing in the target: {_key(k)}" for k in self.missing[:EXAMPLES]]
        out += [f"  extra in the target: {_key(k)}" for k in self.extra[:EXAMPLES]]
        out += [f"  key more than once in the target: {_key(k)}" for k in self.duplicates[:EXAMPLES]]
        for k, cols in self.differing[:EXAMPLES]:
            detail = "; ".join(f"{c}: source {_show(s)}, target {_show(t)}" for c, s, t in cols[:4])
            out.append(f"  differing {_key(k)}: {detail}")
        return out


def _key(k: Key) -> str:
    return ", ".join(_show(v) for v in k)


def _show(v: Any, width: int = 70) -> str:
    text = repr(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def diff_table(t: Table, dialect: str, source: list[Row], target: list[Row] | None) -> TableDiff:
    """Compare one table; `target` None means the target table does not exist."""
    kinds = _kinds(t, dialect)
    result = TableDiff(t.name, source_rows=len(source), target_rows=len(target or []))
    if target is None:
        result.note = "the target table does not exist"
        target = []
    columns = list(source[0]) if source else [c.name for c in t.columns]

    def keyed(rows: Iterable[Row]) -> tuple[dict[Key, Row], list[Key]]:
        out: dict[Key, Row] = {}
        dups: list[Key] = []
        for r in rows:
            k = tuple(normalise(r.get(c), kinds[c]) for c in t.key)
            if k in out:
                dups.append(k)
            out[k] = {c: normalise(r.get(c), kinds.get(c, "")) for c in columns}
        return out, dups

    src, _ = keyed(source)
    tgt, result.duplicates = keyed(target)
    result.missing = sorted((k for k in src if k not in tgt), key=repr)
    result.extra = sorted((k for k in tgt if k not in src), key=repr)
    for k in sorted(src.keys() & tgt.keys(), key=repr):
        s, g = src[k], tgt[k]
        cols = [(c, s[c], g[c]) for c in columns if s[c] != g[c]]
        if cols:
            result.differing.append((k, cols))
    return result


# -- reading --------------------------------------------------------------------------------------
def _dicts(cur: Any) -> list[Row]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def source_rows(db: SourceDb, t: Table) -> list[Row]:
    conn = db.connect(autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {t.name}")
            return _dicts(cur)
    finally:
        conn.close()


def _current(rows: list[Row]) -> list[Row]:
    """Without rows a soft delete marked and the sink's own columns."""
    return [{k: v for k, v in r.items() if not k.startswith("__")} for r in rows if r.get("__deleted") is not True]


def delta_rows(path: Path) -> list[Row] | None:
    """The current rows of a Delta table, read through Arrow's native local filesystem
    (deltalake's Python filesystem handler can abort the interpreter at exit)."""
    from deltalake import DeltaTable

    if not (path / "_delta_log").is_dir():
        return None
    fs = pa_fs.SubTreeFileSystem(os.path.abspath(path), pa_fs.LocalFileSystem())
    table = DeltaTable(str(path)).to_pyarrow_dataset(filesystem=fs).to_table()
    return _current(table.to_pylist())


def iceberg_rows(lake: Path, namespace: str, table: str) -> list[Row] | None:
    """The current rows of an Iceberg table of the SQLite SQL catalog in `lake`, read with
    pyiceberg's own catalog."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchTableError

    catalog = load_catalog("cdc", uri=f"sqlite:///{lake}/catalog.db", warehouse=f"file://{lake}")
    try:
        tbl = catalog.load_table((namespace, table))
    except NoSuchTableError:
        return None
    return _current(tbl.scan().to_arrow().to_pylist())


def warehouse_rows(dsn: str, schema: str, table: str) -> list[Row] | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s", (schema, table)
        ).fetchone()
        if not found:
            return None
        with conn.cursor() as cur:
            cur.execute(sql.SQL("SELECT * FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
            return _current(_dicts(cur))


def compare_all(db: SourceDb, read_target: Any) -> list[TableDiff]:
    """Every chaos table: `read_target(name)` gives the target's rows (None: no such table)."""
    return [diff_table(t, db.dialect, source_rows(db, t), read_target(t.name)) for t in TABLES]
