"""Seeded: random DDL at odd moments under a writer, on a real MariaDB, through the MySQL connector,
into Delta (the executors' bucketed path), Iceberg and PostgreSQL at once; after every step each
target is read back with its own library (deltalake, pyiceberg, psycopg) and compared with the
source row for row.

The DDL: columns added (NULL, or with a DEFAULT the database fills its rows with), dropped,
widened (INT → BIGINT on the key too, TINYINT → INT, FLOAT → DOUBLE, DECIMAL precision and
scale up, DATE → DATETIME, VARCHAR longer) and, under
`evolve`, changed to an incompatible type (INT → VARCHAR). Steps apply one to three statements
before the targets catch up, so a micro-batch often holds events on both sides of an ALTER.

`lenient` (the default) must leave every source column equal, dropped columns kept; `evolve`
must equal the source exactly, dropped columns gone once a later batch has no event carrying
them. CDC_SCHEMA_SEED=<n> replays a run (random: a new one), CDC_SCHEMA_STEPS makes it longer.
"""

from __future__ import annotations

import datetime
import decimal
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, run_available_now
from tests.spark.test_e2e_mysql import _ship

# A fixed default seed, as the chaos test has, so the suite stays deterministic; CDC_SCHEMA_SEED=<n>
# or =random explores. Seed 77 drops, widens and fills a DEFAULT across buckets (it looped on the
# executors' path before the drop waited for every bucket).
_SEED_TEXT = os.environ.get("CDC_SCHEMA_SEED", "77")
SEED = random.randrange(2**32) if _SEED_TEXT == "random" else int(_SEED_TEXT)
STEPS = int(os.environ.get("CDC_SCHEMA_STEPS", "5"))
META = {"__seq", "__op", "__source_ts_ms", "__deleted", "__bucket"}

# column → its type now; widenings each type may take next
_WIDER = {
    "TINYINT": ["INT", "BIGINT"],
    "INT": ["BIGINT"],
    "FLOAT": ["DOUBLE"],
    "DECIMAL(10,2)": ["DECIMAL(14,4)"],
    "DECIMAL(14,4)": ["DECIMAL(20,6)"],
    "DATE": ["DATETIME"],
    "VARCHAR(20)": ["VARCHAR(200)"],
}
_NEW_TYPES = ["INT", "VARCHAR(20)", "DECIMAL(10,2)", "DATE", "TINYINT", "FLOAT"]


class Model:
    """The source table's columns as the test changed them, and a writer of values that fit."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.columns: dict[str, str] = {
            "id": "INT",
            "name": "VARCHAR(20)",
            "qty": "INT",
            "small": "TINYINT",
            "price": "FLOAT",
            "amount": "DECIMAL(10,2)",
            "day": "DATE",
        }
        self.next_id = 1
        self.added = 0
        self.defaults: dict[str, str] = {}  # added column → its DEFAULT clause

    def value(self, column: str) -> str:
        t = self.columns[column]
        r = self.rng
        if r.random() < 0.15 and column != "id":
            return "NULL"
        if t == "TINYINT":
            return str(r.randint(-128, 127))
        if t == "INT":
            return str(r.randint(-(2**31), 2**31 - 1))
        if t == "BIGINT":
            return str(r.choice([r.randint(-(2**63), 2**63 - 1), r.randint(0, 1000)]))
        if t in ("FLOAT", "DOUBLE"):
            return f"{r.randint(-1000, 1000)}.{r.choice(['0', '5', '25', '75'])}"
        if t.startswith("DECIMAL"):
            p, s = (int(x) for x in t[8:-1].split(","))
            whole = r.randint(0, 10 ** (p - s) - 1)
            return f"{r.choice(['', '-'])}{whole}.{r.randint(0, 10**s - 1):0{s}d}"
        if t == "DATE":
            return f"'{r.randint(1, 9999):04d}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}'"
        if t == "DATETIME":
            return (
                f"'{r.randint(1970, 2100)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:30:15'"
            )
        return "'" + "".join(r.choice("abcxyz ") for _ in range(r.randint(0, 20))).replace("'", "") + "'"

    def new_id(self) -> str:
        big = self.columns["id"] == "BIGINT" and self.rng.random() < 0.5
        self.next_id += 1
        return str(2**40 + self.next_id if big else self.next_id)

    def insert(self, n: int) -> str:
        cols = list(self.columns)
        rows = []
        for _ in range(n):
            rows.append("(" + ", ".join(self.new_id() if c == "id" else self.value(c) for c in cols) + ")")
        return f"INSERT INTO items ({', '.join(cols)}) VALUES " + ", ".join(rows)

    def ddl(self, evolve: bool) -> str:
        r = self.rng
        droppable = [c for c in self.columns if c not in ("id", "name")]
        widenable = [c for c, t in self.columns.items() if t in _WIDER]
        moves = ["add", "widen", "widen"] + (["drop"] if len(droppable) > 2 else [])
        if evolve:
            moves.append("incompatible")
        move = r.choice(moves)
        if move == "add" or (move == "widen" and not widenable):
            self.added += 1
            name, t = f"c{self.added}", r.choice(_NEW_TYPES)
            self.columns[name] = t
            default = ""
            if r.random() < 0.5:  # the database fills its rows with the DEFAULT, without events
                value = self.value(name)
                default = f" DEFAULT {value}" if value != "NULL" else ""
            self.defaults[name] = default
            return f"ALTER TABLE items ADD COLUMN {name} {t} NULL{default}"
        if move == "drop":
            name = r.choice(droppable)
            del self.columns[name]
            return f"ALTER TABLE items DROP COLUMN {name}"
        if move == "incompatible":
            ints = [c for c, t in self.columns.items() if t in ("INT", "TINYINT") and c != "id"]
            if ints:
                name = r.choice(ints)
                self.columns[name] = "VARCHAR(20)"
                return f"ALTER TABLE items MODIFY {name} VARCHAR(20) NULL{self.defaults.get(name, '')}"
        name = r.choice(widenable)
        self.columns[name] = r.choice(_WIDER[self.columns[name]])
        null = "NOT NULL" if name == "id" else "NULL"
        # MySQL's MODIFY drops a DEFAULT it does not restate; the sink learns an added column's
        # DEFAULT from the first event carrying the column, so a DBA's MODIFY keeps it here (see
        # the stop note: a DEFAULT changed before any event carries the column is not recovered).
        return f"ALTER TABLE items MODIFY {name} {self.columns[name]} {null}{self.defaults.get(name, '')}"

    def dml(self, ids: list[Any]) -> list[str]:
        r = self.rng
        kind = r.choice(["insert", "update", "update", "delete"]) if ids else "insert"
        if kind == "insert":
            return [self.insert(r.randint(1, 5))]
        chosen = ", ".join(str(i) for i in r.sample(ids, min(len(ids), r.randint(1, 4))))
        if kind == "delete":
            return [f"DELETE FROM items WHERE id IN ({chosen})"]
        cols = r.sample([c for c in self.columns if c != "id"], r.randint(1, 2))
        sets = ", ".join(f"{c} = {self.value(c)}" for c in cols)
        return [f"UPDATE items SET {sets} WHERE id IN ({chosen})"]


def _source(server: Any) -> tuple[list[str], dict[int, dict[str, Any]]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM items")
        names = [d[0] for d in cur.description]
        return names, {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}


def _norm(v: Any) -> Any:
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.UTC).replace(tzinfo=None) if v.tzinfo else v
    if isinstance(v, datetime.date):
        return datetime.datetime(v.year, v.month, v.day)
    if isinstance(v, float):
        return decimal.Decimal(repr(v))
    if isinstance(v, decimal.Decimal):
        return v.normalize() if v != 0 else decimal.Decimal(0)
    if isinstance(v, int):
        return decimal.Decimal(v)
    return v


def _compare(what: str, names: list[str], source: dict[int, dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    target = {r["id"]: r for r in rows if not r.get("__deleted")}
    problems = []
    if sorted(target) != sorted(source):
        problems.append(
            f"{what}: keys differ: only in source {sorted(set(source) - set(target))[:5]}, "
            f"only in target {sorted(set(target) - set(source))[:5]}"
        )
    for key in sorted(set(source) & set(target)):
        for c in names:
            if c not in target[key]:
                continue  # added at the source, and no event has carried it yet: the target learns it from one
            a, b = _norm(source[key][c]), _norm(target[key].get(c))
            if a is not None and b is not None and isinstance(a, str) != isinstance(b, str):
                # An INT column made VARCHAR (evolve) on one side only: the target follows once an
                # event of the new type reaches it. Compared as the source's text.
                a, b = str(source[key][c]), str(target[key].get(c))
            if a != b:
                problems.append(f"{what}: id={key} {c}: source {source[key][c]!r}, target {target[key].get(c)!r}")
    return problems[:10]


@pytest.mark.parametrize("behavior", ["lenient", "evolve"])
def test_random_schema_changes_keep_every_target_equal_to_the_source(
    spark: Any, mariadb_db: Any, postgres_db: Any, tmp_path: Path, behavior: str
) -> None:
    seed = SEED + (1 if behavior == "evolve" else 0)
    print(f"seed {seed} ({behavior}); replay with CDC_SCHEMA_SEED={SEED}")
    rng = random.Random(seed)
    model = Model(rng)
    cols = ", ".join(f"{c} {t}{' PRIMARY KEY' if c == 'id' else ' NULL'}" for c, t in model.columns.items())
    execute(mariadb_db, f"CREATE TABLE items ({cols})", model.insert(20))
    (tmp_path / "wh").mkdir()
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    common = {"table.name.format": "${table}", "schema.change.behavior": behavior}
    sinks = {
        "delta": {"target": "delta", "path": str(tmp_path / "lake"), **common},
        "iceberg": {"target": "iceberg", "catalog": catalog, "namespace": "lake", **common},
        "postgres": {"target": "postgres", "dsn": postgres_db.dsn, **common},
    }
    readers = {
        "delta": lambda: delta_rows(str(tmp_path / "lake" / "items")),
        "iceberg": lambda: iceberg_rows(catalog, "lake", "items"),
        "postgres": lambda: postgres_rows(postgres_db.dsn, "items"),
    }
    state = str(tmp_path / "state")
    source = {"state.dir": state, "topic.pattern": r"dbserver1\..*\.items"}
    dropped: set[str] = set()
    history: list[str] = []

    def catch_up(run: TaskRunner, shipped: int, marker: int) -> int:
        execute(mariadb_db, f"INSERT INTO marks VALUES ({marker})")
        run.poll_until(
            lambda rs: any(r.topic.endswith(".marks") and r.value is not None and _after(r) == marker for r in rs),
            60,
            f"marker {marker}",
        )
        shipped = _ship(run, state, shipped)
        names, rows = _source(mariadb_db)
        problems = []
        for name, sink in sinks.items():
            run_available_now(spark, source, sink, str(tmp_path / f"ckpt-{name}"))
            problems += _compare(name, names, rows, readers[name]())
        assert not problems, f"seed {SEED} ({behavior}) after {history}:\n" + "\n".join(problems)
        return shipped

    execute(mariadb_db, "CREATE TABLE marks (id INT PRIMARY KEY)")
    # Years 1-99 are the source's own (Debezium's time adjuster would read them as 2-digit years).
    with TaskRunner(connector_props(mariadb_db, enable__time__adjuster="false")) as run:
        shipped = catch_up(run, 0, 0)
        for step in range(1, STEPS + 1):
            statements: list[str] = []
            for _ in range(rng.randint(1, 3)):
                ids = list(_source(mariadb_db)[1])
                if rng.random() < 0.5:
                    before = set(model.columns)
                    statements.append(model.ddl(evolve=behavior == "evolve"))
                    dropped |= before - set(model.columns)
                else:
                    statements += model.dml(ids)
                execute(mariadb_db, statements[-1])
            history.append(" ; ".join(s[:80] for s in statements))
            shipped = catch_up(run, shipped, step)
        # A last batch touching every row: under evolve, no event carries a dropped column any more.
        execute(mariadb_db, "UPDATE items SET name = IF(name <=> 'touched', 'touched!', 'touched')")
        shipped = catch_up(run, shipped, STEPS + 1)
    for name, read in readers.items():
        columns = set().union(*(r.keys() for r in read())) - META
        gone = {c for c in dropped if c not in model.columns}
        if behavior == "evolve":
            assert not (columns & gone), f"{name}: dropped columns still there: {sorted(columns & gone)} (seed {SEED})"
        else:
            assert gone <= columns, f"{name}: lenient lost dropped columns {sorted(gone - columns)} (seed {SEED})"


def _after(record: Any) -> Any:
    after = record.value.get("after")
    return after.get("id") if after is not None else None
