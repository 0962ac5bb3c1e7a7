"""Declared column types: each numeric column's type as the DDL statement text wrote it.

Debezium parses the DDL it sees (MySqlAntlrDdlParser with its DataTypeResolver) and keeps what the
statement declared: `NUMERIC(5,2)` is NUMERIC, `FLOAT(10)` has length 10, `INT` has no length and
`REAL` is java.sql.Types.REAL (a FLOAT32 field). information_schema has only what the server made of
it (DECIMAL, FLOAT, int(11), DOUBLE). This module is the one owner of that rule: it reads the column
definitions of CREATE TABLE and ALTER TABLE text when the connector sees the statement (a DDL read
while streaming, or the schema history replayed on a restart) and keeps them per table; the schema
lays them over information_schema's facts, which stay the fallback for every column no DDL text
declared (a snapshot, whose SHOW CREATE TABLE text says what information_schema says).

Only the numeric types are read (the types information_schema reports differently); other columns
keep information_schema's facts.

The declarations are a pure function of the DDL statements the connector has seen, in order: the
statements it records in the schema history (a streamed DDL, and the snapshot's SHOW CREATE TABLE
text, whose server-written types declare what information_schema says), replayed from that history
on a restart. Nothing here reads the server, so reading the same binlog again, later or after a
restart, gives the same declarations whatever DDL ran on the server since. The rules:
- A table is followed from a CREATE TABLE statement seen (with its column list; `LIKE` copies the
  source's declarations). A table never seen created (streaming began after its CREATE and the
  history does not hold it) is not followed: an ALTER of it declares nothing, so a restart whose
  history lacks what an earlier run saw gives the same records as the run that went on.
- A declaration holds until a statement that changes its column replaces or removes it (MODIFY,
  CHANGE, DROP and RENAME COLUMN; DROP or RENAME TABLE, CREATE OR REPLACE, DROP DATABASE).
- An ALTER TABLE with a clause this module cannot follow stops following the table (its columns take
  information_schema's facts from then on) until it is created again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from cdc_mysql.table import ColumnDef, ColumnMeta, TableMeta

# Declared base type → (java.sql.Types code Debezium gives it, the normalised types the server may
# make of it: information_schema DATA_TYPE / the table map's type). DataTypeResolver's numeric entries.
_NUMERIC: dict[str, tuple[int, tuple[str, ...]]] = {
    "TINYINT": (5, ("tinyint",)),
    "SMALLINT": (5, ("smallint",)),
    "MEDIUMINT": (4, ("mediumint",)),
    "INT": (4, ("int",)),
    "INTEGER": (4, ("int",)),
    "BIGINT": (-5, ("bigint",)),
    "DECIMAL": (3, ("decimal",)),
    "NUMERIC": (2, ("decimal",)),
    "FIXED": (3, ("decimal",)),
    "FLOAT": (6, ("float", "double")),  # FLOAT(p) with p over 24 is a DOUBLE on the server
    "DOUBLE": (8, ("double",)),
    "DOUBLE PRECISION": (8, ("double",)),
    "REAL": (7, ("double", "float")),  # FLOAT under sql_mode REAL_AS_FLOAT
}
# DECIMAL, NUMERIC and FIXED without (M,D) are (10,0), as DataTypeResolver's default dimensions.
_DEFAULT_DIMENSIONS = {"DECIMAL": (10, 0), "NUMERIC": (10, 0), "FIXED": (10, 0)}
JDBC_REAL = 7  # java.sql.Types.REAL: Debezium's FLOAT32 field for a REAL column

_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)
_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_COLUMN = re.compile(
    rf"\s*(?P<name>{_IDENT})\s+(?P<type>DOUBLE\s+PRECISION|[A-Za-z]+)\s*"
    r"(?:\(\s*(?P<length>\d+)\s*(?:,\s*(?P<scale>\d+)\s*)?\))?(?P<rest>.*)",
    re.S | re.I,
)
_CONSTRAINT = re.compile(
    r"\s*(PRIMARY|KEY|INDEX|UNIQUE|CONSTRAINT|FOREIGN|FULLTEXT|SPATIAL|CHECK|PERIOD|SYSTEM)\b", re.I
)
_SIGN = re.compile(r"\s*(UNSIGNED|SIGNED|ZEROFILL)\b", re.I)
_ALTER_TABLE = re.compile(
    rf"\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_IDENT}(?:\s*\.\s*{_IDENT})?", re.I
)
_CREATE_TABLE = re.compile(
    rf"\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    rf"{_IDENT}(?:\s*\.\s*{_IDENT})?\s*(?P<like>LIKE\b|\(\s*LIKE\b)?",
    re.I,
)
_ADD = re.compile(r"\s*ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?", re.I)
_MODIFY = re.compile(r"\s*MODIFY\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?", re.I)
_CHANGE = re.compile(rf"\s*CHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?(?P<old>{_IDENT})", re.I)
_DROP = re.compile(rf"\s*DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?(?P<name>{_IDENT})\s*$", re.I)
_RENAME_COLUMN = re.compile(rf"\s*RENAME\s+COLUMN\s+(?P<old>{_IDENT})\s+TO\s+(?P<new>{_IDENT})\s*$", re.I)
# ALTER TABLE clauses that change no column's type: keys, defaults, visibility, table options, the
# table's own rename, partitioning, algorithm/lock. Any other clause stops the table being followed.
_HARMLESS = re.compile(
    r"\s*(?:"
    r"ADD\s+(?:CONSTRAINT|PRIMARY|UNIQUE|INDEX|KEY|FULLTEXT|SPATIAL|FOREIGN|CHECK|PARTITION|PERIOD|SYSTEM)\b"
    r"|DROP\s+(?:PRIMARY\s+KEY|INDEX|KEY|FOREIGN\s+KEY|CONSTRAINT|CHECK|PARTITION|PERIOD|SYSTEM)\b"
    rf"|ALTER\s+(?:COLUMN\s+)?{_IDENT}\s+(?:SET\s+DEFAULT|DROP\s+DEFAULT|SET\s+(?:IN)?VISIBLE)\b"
    r"|ALTER\s+(?:INDEX|KEY|CHECK|CONSTRAINT)\b"
    r"|RENAME\s+(?:INDEX|KEY)\b|RENAME\s+(?:(?:TO|AS)\s+)?(?!COLUMN\b)"
    r"|(?:ENGINE|AUTO_INCREMENT|AVG_ROW_LENGTH|CHECKSUM|COMMENT|COMPRESSION|CONNECTION|DATA\s+DIRECTORY"
    r"|INDEX\s+DIRECTORY|DELAY_KEY_WRITE|ENCRYPTED|ENCRYPTION|ENCRYPTION_KEY_ID|INSERT_METHOD|KEY_BLOCK_SIZE"
    r"|MAX_ROWS|MIN_ROWS|PACK_KEYS|PAGE_CHECKSUM|PAGE_COMPRESSED|PAGE_COMPRESSION_LEVEL|PASSWORD|ROW_FORMAT"
    r"|SEQUENCE|STATS_AUTO_RECALC|STATS_PERSISTENT|STATS_SAMPLE_PAGES|TABLESPACE|TRANSACTIONAL|UNION"
    r"|IETF_QUOTES|ALGORITHM|LOCK)\b"
    r"|(?:DEFAULT\s+)?(?:CHARACTER\s+SET|CHARSET|COLLATE)\b"
    r"|CONVERT\s+TO\b|FORCE\b|ORDER\s+BY\b|(?:ENABLE|DISABLE)\s+KEYS\b|(?:DISCARD|IMPORT)\s+TABLESPACE\b"
    r"|(?:COALESCE|REORGANIZE|EXCHANGE|ANALYZE|CHECK|OPTIMIZE|REBUILD|REPAIR|TRUNCATE|REMOVE)\s+PARTITION"
    r"|PARTITION\s+BY\b|WITH(?:OUT)?\s+VALIDATION\b"
    r")",
    re.I,
)
_DROP_TEMPORARY = re.compile(r"\s*DROP\s+TEMPORARY\b", re.I)
_DROP_DATABASE = re.compile(rf"\s*DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?(?P<name>{_IDENT})", re.I)
_LIKE = re.compile(rf"\s*\(?\s*LIKE\s+(?P<a>{_IDENT})(?:\s*\.\s*(?P<b>{_IDENT}))?", re.I)


@dataclass(frozen=True, slots=True)
class DeclaredType:
    """One column's type as its DDL text declared it, named as Debezium names it."""

    type_name: str  # Debezium's typeName: NUMERIC, REAL, DOUBLE PRECISION, INT UNSIGNED…
    jdbc_type: int
    length: int | None
    scale: int | None
    unsigned: bool
    server_types: tuple[str, ...]  # the normalised types the server may make of it

    def fits(self, col: ColumnDef) -> bool:
        """`col` (a binlog table map's column, decoded from the same binlog) can be the column declared."""
        return col.type in self.server_types and col.unsigned == self.unsigned


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def _unquoted(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth after it) of each character of `text` from `start` that
    lies outside quotes and backticks (a backslash escapes inside '…' and "…")."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        else:
            depth += (ch == "(") - (ch == ")")
            yield i, ch, depth
        i += 1


def _split_top_level(text: str) -> list[str]:
    """`text` split at the commas outside parentheses, quotes and backticks."""
    parts: list[str] = []
    start = 0
    for i, ch, depth in _unquoted(text):
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _parenthesised(text: str, open_at: int) -> str:
    """The text inside the parentheses opening at `open_at` (to the end if they never close)."""
    for i, ch, depth in _unquoted(text, open_at):
        if ch == ")" and depth == 0:
            return text[open_at + 1 : i]
    return text[open_at + 1 :]


def parse_column(definition: str) -> tuple[str, DeclaredType | None] | None:
    """(column name, its declared numeric type or None for another type) of one column definition;
    None if `definition` is no column (a key, a constraint)."""
    if _CONSTRAINT.match(definition):
        return None
    m = _COLUMN.match(definition)
    if m is None:
        return None
    name = _unquote(m.group("name"))
    base = " ".join(m.group("type").upper().split())
    entry = _NUMERIC.get(base)
    if entry is None:
        return name, None
    jdbc, server_types = entry
    length = int(m.group("length")) if m.group("length") is not None else None
    scale = int(m.group("scale")) if m.group("scale") is not None else None
    if length is None and base in _DEFAULT_DIMENSIONS:
        length, scale = _DEFAULT_DIMENSIONS[base]
    elif scale is None and base in _DEFAULT_DIMENSIONS:
        scale = _DEFAULT_DIMENSIONS[base][1]
    signs = set()
    rest = m.group("rest")
    while s := _SIGN.match(rest):
        signs.add(s.group(1).upper())
        rest = rest[s.end() :]
    # Debezium's typeName drops SIGNED; ZEROFILL implies UNSIGNED. The typeName is `… UNSIGNED` either
    # way, as information_schema's (catalog.py): the snapshot's SHOW CREATE TABLE text must declare
    # exactly what information_schema says.
    suffix = " UNSIGNED" if signs & {"UNSIGNED", "ZEROFILL"} else ""
    return name, DeclaredType(base + suffix, jdbc, length, scale, bool(suffix), server_types)


def _columns(definitions: list[str]) -> dict[str, DeclaredType | None]:
    out: dict[str, DeclaredType | None] = {}
    for definition in definitions:
        parsed = parse_column(definition)
        if parsed is not None:
            out[parsed[0]] = parsed[1]
    return out


class DeclaredTypes:
    """The declared types of each followed table's columns, by table id (`db.table`) and column name.

    A column maps to None when its DDL declared a type this module does not read: it then takes
    information_schema's facts, as every column of a table that is not followed.
    """

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, DeclaredType | None]] = {}

    def observe(self, db: str | None, sql: str) -> None:
        """Follows one DDL statement as the schema history records it, `db` its session database."""
        # Imported here: schema_change imports catalog, which imports schema, which imports this module.
        from cdc_mysql.schema_change import classify

        stmt = classify(sql)
        text = _COMMENT.sub(" ", sql)
        ids = [f"{t_db or db}.{t}" for t_db, t in stmt.tables]
        if stmt.kind == "DATABASE":
            if d := _DROP_DATABASE.match(text):
                prefix = _unquote(d.group("name")) + "."
                for table_id in [t for t in self._tables if t.startswith(prefix)]:
                    del self._tables[table_id]
            return
        if stmt.renamed_to:
            news = [f"{new_db or db}.{new}" for new_db, new in stmt.renamed_to]
            for old, new in zip(ids, news, strict=False):  # in order: RENAME TABLE a TO t, b TO a, t TO b
                columns = self._tables.pop(old, None)
                self._tables.pop(new, None)
                if columns is not None:
                    self._tables[new] = columns
            if stmt.kind != "ALTER" or not _ALTER_TABLE.match(text):
                return  # RENAME TABLE: nothing else changes; ALTER … RENAME TO may change columns too
            ids = news
        if not ids:
            return
        if stmt.kind == "DROP":
            if _DROP_TEMPORARY.match(text):
                return  # the session's temporary table, not the table
            for table_id in ids:
                self._tables.pop(table_id, None)
        elif stmt.kind == "CREATE":
            self._create(ids[0], db, text)
        elif stmt.kind == "ALTER":
            self._alter(ids[0], text)

    def _create(self, table_id: str, db: str | None, text: str) -> None:
        m = _CREATE_TABLE.match(text)
        if m is None:
            self._tables.pop(table_id, None)
            return
        head = text[: m.end()].upper()
        if "TEMPORARY" in head.split():
            return  # a temporary table shadows the table for its session only: the table is unchanged
        if "IF" in head.split() and table_id in self._tables and "REPLACE" not in head.split():
            return  # CREATE TABLE IF NOT EXISTS of a table that exists: the server did nothing
        if m.group("like"):
            like = _LIKE.match(text, m.start("like"))
            source = None
            if like is not None:
                like_db = _unquote(like.group("a")) if like.group("b") else db
                like_name = _unquote(like.group("b") or like.group("a"))
                source = self._tables.get(f"{like_db}.{like_name}")
            if source is None:
                self._tables.pop(table_id, None)  # a copy of a table not followed: the server's types
            else:
                self._tables[table_id] = dict(source)
            return
        open_at = text.find("(", m.end())
        if open_at < 0 or text[m.end() : open_at].strip():
            self._tables[table_id] = {}  # … AS SELECT with no column list: the server's types, followed
            return
        self._tables[table_id] = _columns(_split_top_level(_parenthesised(text, open_at)))

    def _alter(self, table_id: str, text: str) -> None:
        m = _ALTER_TABLE.match(text)
        columns = self._tables.get(table_id)
        if m is None or columns is None:
            self._tables.pop(table_id, None)
            return  # not followed: an ALTER alone declares nothing (see the module's docstring)
        for spec in _split_top_level(text[m.end() :]):
            if _HARMLESS.match(spec):
                continue
            if a := _ADD.match(spec):
                body = spec[a.end() :].strip()
                if body.startswith("("):  # ADD (c1 …, c2 …)
                    added = _columns(_split_top_level(_parenthesised(body, 0)))
                else:
                    added = _columns([body])
                if not added:
                    break
                columns.update(added)
            elif mo := _MODIFY.match(spec):
                if not (modified := _columns([spec[mo.end() :]])):
                    break
                columns.update(modified)
            elif c := _CHANGE.match(spec):
                if not (changed := _columns([spec[c.end() :]])):
                    break
                columns.pop(_unquote(c.group("old")), None)
                columns.update(changed)
            elif d := _DROP.match(spec):
                columns.pop(_unquote(d.group("name")), None)
            elif r := _RENAME_COLUMN.match(spec):
                columns[_unquote(r.group("new"))] = columns.pop(_unquote(r.group("old")), None)
            else:
                break
        else:
            return
        del self._tables[table_id]  # a clause not followed: the server's types from now on

    def follows(self, table_id: str) -> bool:
        return table_id in self._tables

    def declared(self, table_id: str, column: str) -> DeclaredType | None:
        return self._tables.get(table_id, {}).get(column)

    def column_meta(self, table_id: str, col: ColumnDef, base: ColumnMeta | None) -> ColumnMeta | None:
        """`base` (information_schema's facts of `col`, or None) with the declared type laid over it,
        where the column's type was declared and `col` (the binlog's table map) fits the declaration.
        A declaration the table map contradicts leaves the column with neither (its own type alone)."""
        declared = self.declared(table_id, col.name)
        if declared is None:
            return base
        if not declared.fits(col):
            return None
        if base is None:
            base = ColumnMeta(type=col.type, type_name=declared.type_name, jdbc_type=declared.jdbc_type)
        return _laid_over(base, declared)

    def table_meta(self, table_id: str, meta: TableMeta) -> TableMeta:
        """`meta` (information_schema's facts of the whole table) with the declared types laid over it,
        whatever information_schema says of the column now (a reader behind later DDL reads a later
        version of the table): the declared names, lengths and scales depend on the statements alone."""
        columns = self._tables.get(table_id)
        if not columns:
            return meta
        out: dict[str, ColumnMeta] = {}
        for name, column in meta.columns.items():
            declared = columns.get(name)
            out[name] = column if declared is None else _laid_over(column, declared)
        return replace(meta, columns=out)

    def replay(self, records: list[dict[str, Any]]) -> None:
        """Follows the DDL of the schema history's records, in order: a restarted task declares what
        the task that wrote them had declared (Debezium recovers its schema from the same history)."""
        for record in records:
            ddl = record.get("ddl")
            if ddl:
                self.observe(record.get("databaseName") or None, str(ddl))


def _laid_over(base: ColumnMeta, declared: DeclaredType) -> ColumnMeta:
    return replace(
        base, type_name=declared.type_name, jdbc_type=declared.jdbc_type, length=declared.length, scale=declared.scale
    )
