"""The chaos tables: three key shapes, mixed column types, and seeded values for them.

The same logical tables exist on MariaDB and on PostgreSQL; each column names its type in
both dialects and a `kind` the comparison normalises by (see compare.py). Values come from
a `random.Random`, so one seed always produces the same rows.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# Kinds the comparison knows how to normalise.
INT, TEXT, DECIMAL, DATETIME, TIMESTAMPTZ, JSON, BYTES = (
    "int",
    "text",
    "decimal",
    "datetime",
    "timestamptz",
    "json",
    "bytes",
)


@dataclass(frozen=True)
class Column:
    name: str
    mysql: str
    pg: str
    kind: str
    scale: int = 0  # decimals: digits after the point
    digits: int = 0  # decimals: digits before the point

    def ddl(self, dialect: str) -> str:
        return f"{self.name} {self.mysql if dialect == 'mysql' else self.pg}"

    def kind_in(self, dialect: str) -> str:
        """The kind on this dialect: the MySQL side of a timestamptz column is a DATETIME(6)."""
        return DATETIME if self.kind == TIMESTAMPTZ and dialect == "mysql" else self.kind

    @property
    def nullable(self) -> bool:
        return "NOT NULL" not in self.mysql


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    # Added by the workload's ALTER TABLE ADD COLUMN (nullable, no default: rows written before
    # the ALTER read NULL in the source, as no change event rewrites them).
    added: tuple[Column, ...] = ()

    def column(self, name: str) -> Column:
        return next(c for c in (*self.columns, *self.added) if c.name == name)

    @property
    def value_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.name not in self.key)

    def create_sql(self, dialect: str) -> str:
        cols = ", ".join(c.ddl(dialect) for c in self.columns)
        return f"CREATE TABLE {self.name} ({cols}, PRIMARY KEY ({', '.join(self.key)}))"


ACCOUNTS = Table(
    "accounts",
    ("id",),
    (
        Column("id", "INT NOT NULL", "integer NOT NULL", INT),
        Column("owner", "VARCHAR(100) NULL", "varchar(100)", TEXT),
        Column("balance", "DECIMAL(20,6) NULL", "numeric(20,6)", DECIMAL, scale=6, digits=14),
        Column("opened", "DATETIME(6) NULL", "timestamp(6)", DATETIME),
        Column("profile", "JSON NULL", "jsonb", JSON),
        Column("bio", "MEDIUMTEXT NULL", "text", TEXT),
        Column("avatar", "MEDIUMBLOB NULL", "bytea", BYTES),
        Column("visits", "BIGINT NOT NULL DEFAULT 0", "bigint NOT NULL DEFAULT 0", INT),
    ),
    added=(Column("region", "VARCHAR(20) NULL", "varchar(20)", TEXT),),
)

ORDER_LINES = Table(
    "order_lines",
    ("order_id", "sku"),
    (
        Column("order_id", "INT NOT NULL", "integer NOT NULL", INT),
        Column("sku", "VARCHAR(40) NOT NULL", "varchar(40) NOT NULL", TEXT),
        Column("qty", "INT NOT NULL", "integer NOT NULL", INT),
        Column("price", "DECIMAL(12,2) NOT NULL", "numeric(12,2) NOT NULL", DECIMAL, scale=2, digits=10),
        # MariaDB's TIMESTAMP depends on the session time zone; DATETIME(6) is the lake's usual
        # MySQL type. PostgreSQL's timestamptz goes through Debezium's ZonedTimestamp.
        Column("shipped", "DATETIME(6) NULL", "timestamptz(6)", TIMESTAMPTZ),
        Column("note", "TEXT NULL", "text", TEXT),
        Column("meta", "JSON NULL", "jsonb", JSON),
    ),
)

TAGS = Table(
    "tags",
    ("code",),
    (
        Column("code", "VARCHAR(64) NOT NULL", "varchar(64) NOT NULL", TEXT),
        Column("label", "TEXT NULL", "text", TEXT),
        Column("weight", "DECIMAL(30,10) NULL", "numeric(30,10)", DECIMAL, scale=10, digits=20),
        Column("seen", "DATETIME(6) NULL", "timestamp(6)", DATETIME),
        Column("attrs", "JSON NULL", "jsonb", JSON),
        Column("raw", "BLOB NULL", "bytea", BYTES),
        Column("hits", "INT NULL", "integer", INT),
    ),
    added=(Column("rank_no", "INT NULL", "integer", INT),),
)

TABLES = (ACCOUNTS, ORDER_LINES, TAGS)
BY_NAME = {t.name: t for t in TABLES}

_WORDS = [
    "alpha",
    "béta",
    "γάμμα",
    "дельта",
    "音符",
    "quote'd",
    'dq"x',
    "back\\slash",
    "tab\tsep",
    "new\nline",
    "emoji🙂",
]
# Key suffixes: unique per key number, so no collation folds two keys together.
_KEY_SUFFIXES = ["", "", "", "-ключ", "-键值", "-with space", "-quote'", "-a/b", "-ÄÖü", "-" + "x" * 40]


def key_code(n: int, rng: random.Random) -> str:
    """A VARCHAR key: unique by its number, with unicode, spaces, quotes or length around it."""
    return f"tag-{n:07d}{rng.choice(_KEY_SUFFIXES)}"[:64]


def sku(n: int, rng: random.Random) -> str:
    return f"sku-{n}{rng.choice(['', '-blue', '-größe-L', '-紅'])}"


def _text(rng: random.Random, long_chance: float = 0.02) -> str | None:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.2:
        return ""
    if r < 0.2 + long_chance:
        # Past PostgreSQL's ~2 KB TOAST threshold even compressed: random letters.
        n = rng.randrange(3_000, 40_000)
        return "".join(rng.choices(string.ascii_letters + string.digits + " ", k=n))
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(1, 6)))


def _decimal(rng: random.Random, col: Column) -> Decimal:
    unscaled = rng.randrange(-(10 ** (col.digits + col.scale)) + 1, 10 ** (col.digits + col.scale))
    if rng.random() < 0.1:
        unscaled = rng.choice([0, 1, -1, 10**col.scale])
    return Decimal(unscaled).scaleb(-col.scale)


def _datetime(rng: random.Random) -> dt.datetime:
    # 1901-2100, microseconds included: before the epoch too.
    base = dt.datetime(1901, 1, 1)
    return base + dt.timedelta(seconds=rng.randrange(0, 199 * 365 * 86400), microseconds=rng.randrange(1_000_000))


def _json(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.2:
        return [rng.randrange(-1000, 1000) for _ in range(rng.randrange(0, 5))]
    doc: dict[str, Any] = {
        "n": rng.randrange(-(2**40), 2**40),
        "s": rng.choice(_WORDS),
        "ok": rng.random() < 0.5,
        "none": None,
        "nested": {"list": [rng.choice(_WORDS) for _ in range(rng.randrange(0, 3))], "half": 0.5},
    }
    if rng.random() < 0.3:
        doc["empty"] = ""
    return doc


def _bytes(rng: random.Random) -> bytes | None:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.2:
        return b""
    if r < 0.22:
        return rng.randbytes(rng.randrange(5_000, 60_000))
    return rng.randbytes(rng.randrange(1, 64)) + b"\x00\xff"


def value(rng: random.Random, col: Column, dialect: str) -> Any:
    """A random value for a non-key column (None only where the column is nullable)."""
    nullable = col.nullable
    kind = col.kind_in(dialect)
    if kind == INT:
        v: Any = rng.randrange(-(2**31), 2**31) if col.name != "visits" else rng.randrange(0, 10**12)
    elif kind == TEXT:
        v = _text(rng, 0.03 if col.name in ("bio", "label", "note") else 0.0)
        if v is not None and col.name in ("owner", "region"):
            v = v[: 20 if col.name == "region" else 100]
    elif kind == DECIMAL:
        v = _decimal(rng, col)
    elif kind == DATETIME:
        v = _datetime(rng)
    elif kind == TIMESTAMPTZ:  # any offset: the target must hold the same instant
        offset = dt.timedelta(minutes=15 * rng.randrange(-14 * 4, 14 * 4 + 1))
        v = _datetime(rng).replace(tzinfo=dt.timezone(offset))
    elif kind == JSON:
        v = _json(rng)
    else:
        v = _bytes(rng)
    if v is None and not nullable:
        return value(rng, col, dialect)
    if nullable and rng.random() < 0.05:
        return None
    return v
