"""`cdc verify --key-range` and `--sample` on real databases: what each side reads, and what is found.

A private MariaDB and PostgreSQL (the session servers' fresh databases) are the sources; the lakes are
written in the sink's layout with deltalake, pyiceberg and psycopg, as test_verify.py does. Each test
counts the rows the readers hand over (a row outside the range or the sample must not be read, or at
least not become a tuple) and checks what the comparison finds against drift made on purpose inside
and outside the range. The seed of the random keys is printed; CDC_TEST_SEED replays one.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result
from deltalake import DeltaTable, write_deltalake

from cdc.cli.verify import verify
from cdc.jobs.load import load_job
from cdc.jobs.verify.compare import _key
from cdc.jobs.verify.job import Verifier, verify_tables
from cdc.jobs.verify.key_range import parse_key_range
from cdc.jobs.verify.normalize import converter
from cdc.jobs.verify.sample import rank_parts, sample_keys
from cdc.jobs.verify.scope import TableScope, draw_sample
from cdc.jobs.verify.source import MySqlSource, PostgresSource, SourceTable
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as pg_props

pytestmark = pytest.mark.integration

SEED = int(os.environ.get("CDC_TEST_SEED", random.SystemRandom().randrange(1 << 30)))
N = 3000  # rows of `items`


def _verify(*args: str) -> Result:
    return CliRunner().invoke(verify, ["--quiet", *args], catch_exceptions=False)


def _meta(n: int, seqs: list[int] | None = None) -> dict[str, pa.Array]:
    return {
        "__op": pa.array(["r"] * n),
        "__seq": pa.array([s.to_bytes(32, "big") for s in (seqs or [0] * n)], pa.binary()),
        "__source_ts_ms": pa.array([0] * n, pa.int64()),
        "__deleted": pa.array([False] * n),
    }


class Counted:
    """Wraps a reader's methods to count the rows they hand over (`counts[method]`)."""

    def __init__(self, reader: Any, *methods: str) -> None:
        self.counts = dict.fromkeys(methods, 0)
        for name in methods:
            setattr(reader, name, self._wrap(name, getattr(reader, name)))

    def _wrap(self, name: str, method: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for row in method(*args, **kwargs):
                self.counts[name] += 1
                yield row

        return counted

    def reset(self) -> None:
        self.counts = dict.fromkeys(self.counts, 0)


def _shop(tmp_path: Path, server: Any, **props: str) -> Path:
    """MariaDB `items` (N rows, int key) and `notes` (text key), and their Delta tables with drift:
    inside 100..200: 150 missing, 160 changed; outside: 1500 missing, 99999 extra."""
    db = server.database
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, v INT)")
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)", [(i, f"n{i} ü", i * 3) for i in range(1, N + 1)])
        cur.execute("CREATE TABLE notes (k VARCHAR(10) PRIMARY KEY, body TEXT)")
        cur.execute("INSERT INTO notes VALUES ('a', 'x'), ('b', 'y')")
    ids = [i for i in range(1, N + 1) if i not in (150, 1500)] + [99999]
    lake = tmp_path / "lake"
    for part in range(3):  # three files: the range's statistics skip some
        chunk = ids[part::3]
        write_deltalake(
            str(lake / "items"),
            pa.table(
                {
                    "id": pa.array(chunk, pa.int32()),
                    "name": [f"n{i} ü" for i in chunk],
                    "v": pa.array([-1 if i == 160 else i * 3 for i in chunk], pa.int32()),
                    **_meta(len(chunk)),
                }
            ),
            mode="append",
        )
    write_deltalake(str(lake / "notes"), pa.table({"k": ["a", "b"], "body": ["x", "y"], **_meta(2)}))
    source = mysql_props(server, table__include__list=f"{db}.items,{db}.notes", **props)
    return mysql_delta_job(tmp_path, "shop", source, {f"{db}.items": "target: items", f"{db}.notes": "target: notes"})


def test_key_range_reads_the_range_alone_and_finds_its_drift_only(tmp_path: Path, mariadb_db: Any) -> None:
    db = mariadb_db.database
    job = _shop(tmp_path, mariadb_db)
    res = _verify(str(job), "--key-range", "id=100..200")
    assert res.exit_code == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"key range: 100 ≤ id ≤ 200 (--key-range id=100..200) on 1 table(s): {db}.items"
    assert lines[1] == (
        f"  not compared: {db}.notes: id is not a key column of {db}.notes (its key: k); a range applies to the "
        "first key column: --key-range k=LOW..HIGH"
    )
    assert f"{db}.items → {tmp_path / 'lake' / 'items'}: 101 source rows, 100 target rows, 2 differences" in lines[2]
    assert "  missing in the target: id=150" in lines and "  changed: id=160: v: source 480, target -1" in lines
    assert "1500" not in res.stdout and "99999" not in res.stdout

    res = _verify(str(job), "--key-range", "id=..200", "--json")
    doc = json.loads(res.stdout)
    assert doc["key_range"] == {
        "column": "id",
        "low": None,
        "high": "200",
        "tables": [f"{db}.items"],
        "skipped": [{"table": f"{db}.notes", "reason": doc["key_range"]["skipped"][0]["reason"]}],
    }
    (items,) = doc["tables"]
    assert (items["source_rows"], items["missing"], items["changed"], items["extra"]) == (200, 1, 1, 0)
    res = _verify(str(job), "--key-range", "id=1000..", "--json")
    (items,) = json.loads(res.stdout)["tables"]
    assert (items["source_rows"], items["missing"], items["changed"], items["extra"]) == (N - 999, 1, 0, 1)

    # What each side read: the range alone, not the table.
    spec = load_job(str(job))
    with Verifier(spec, key_range=parse_key_range("id=100..200")) as v:
        source, target = Counted(v.source, "rows"), Counted(v.target, "rows")
        results, _ = verify_tables(v, [f"{db}.items"])
    assert results[0].differences == 2
    # Pass 1 reads the range on both sides, pass 2 (the changed row's values) at most again: not the table.
    assert 101 < source.counts["rows"] <= 202 and 100 < target.counts["rows"] <= 200, source.counts | target.counts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--key-range", "k=a..b"], "--key-range k=a..b: {db}.items: k is not a key column"),
        (["--key-range", "id=a..b"], "--key-range id=a..b: 'a' is not a value of {db}.items.id (int(11):"),
        (["--key-range", "id=1..2", "--table", "{db}.notes"], "--key-range id=1..2: id is not a key column of"),
        (["--key-range", "id"], "--key-range 'id': write COLUMN=LOW..HIGH"),
        (["--key-range", "nope=1..2"], "--key-range nope=1..2: no table takes the range ("),
    ],
)
def test_a_range_no_table_can_take_is_one_line_exit_2(
    tmp_path: Path, mariadb_db: Any, args: list[str], message: str
) -> None:
    db = mariadb_db.database
    job = _shop(tmp_path, mariadb_db)
    res = _verify(str(job), *(a.format(db=db) for a in args))
    assert res.exit_code == 2, res.stdout + res.stderr
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
    if message.startswith("--key-range k=a..b"):  # both tables refuse: the first reason is given
        assert "no table takes the range" in res.stderr and "its key: id" in res.stderr
    else:
        assert message.format(db=db) in res.stderr, res.stderr


def test_a_sample_in_a_range_reads_its_keys_alone_on_both_sides(tmp_path: Path, mariadb_db: Any) -> None:
    db = mariadb_db.database
    job = _shop(tmp_path, mariadb_db)
    res = _verify(str(job), "--table", f"{db}.items", "--sample", "40", "--seed", str(SEED % 2**32), "--json")
    doc = json.loads(res.stdout)
    (items,) = doc["tables"]
    assert (items["sampled"], items["source_rows"], doc["sample"]["seed"]) == (40, 40, SEED % 2**32)

    spec = load_job(str(job))
    table = SourceTable(db, "items")
    for given, size in ((None, N), (parse_key_range("id=100..1200"), 1101)):
        with Verifier(spec, key_range=given) as v:
            key_cols = [c for c in v.source.columns(table) if c.name == "id"]
            convs = [converter(c) for c in key_cols]
            keys = [_key([f(v) for f, v in zip(convs, r, strict=True)]) for r in v.source.rows(table, key_cols)]
            source, target = Counted(v.source, "rows"), Counted(v.target, "rows")
            (result,), _ = verify_tables(v, [f"{db}.items"], sample=(40, SEED))
        in_range = [k for k in keys if given is None or 100 <= int(k) <= 1200]
        assert len(in_range) == size
        picked = sample_keys(in_range, 40, SEED)  # the draw in Python: the same keys
        assert picked is not None and result.sampled == 40 == result.source_rows
        lake_keys = {*(str(i) for i in range(1, N + 1) if i not in (150, 1500)), "99999"}
        in_lake = {k for k in lake_keys if k in picked and (given is None or 100 <= int(k) <= 1200)}
        assert result.target_rows == len(in_lake)
        want_missing = {k for k in ("150", "1500") if k in picked and (given is None or 100 <= int(k) <= 1200)}
        assert result.missing == len(want_missing) and result.extra == int("99999" in in_lake)
        # The database ranked the keys: 40 source rows read (and at most as many again for a changed row's values).
        assert 40 <= source.counts["rows"] <= (80 if result.changed else 40)
        assert len(in_lake) <= target.counts["rows"] <= len(in_lake) * (2 if result.changed else 1)


MYSQL_KEYS = {
    "ints": ("id BIGINT", [(-(2**62),), (0,), (7,), (2**62,)]),
    "texts": ("k VARCHAR(20) CHARACTER SET utf8mb4", [("a",), ("ü😀",), ("it's",), ("back\\slash",), ("",)]),
    "latin": ("k VARCHAR(20) CHARACTER SET latin1", [("é",), ("plain",), ("x y",)]),
    "pair": ("a INT, b VARCHAR(10) CHARACTER SET utf8mb4", [(1, "x"), (1, "y"), (2, "ß")]),
    "year": ("y YEAR", [(1999,), (2024,)]),
    "mood": ("m ENUM('ok','sad')", [("ok",), ("sad",)]),
}


def test_mariadb_ranks_keys_exactly_as_python_does(mariadb_db: Any) -> None:
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    source = MySqlSource(mysql_props(mariadb_db))
    try:
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            for name, (ddl, rows) in MYSQL_KEYS.items():
                keys = [part.split()[0] for part in ddl.split(", ")]
                cur.execute(f"CREATE TABLE {name} ({ddl}, v INT, PRIMARY KEY ({', '.join(keys)}))")
                marks = ", ".join(["%s"] * (len(keys) + 1))
                cur.executemany(f"INSERT INTO {name} VALUES ({marks})", [(*r, 0) for r in rows])
            # sink.tables.<t>.keys may name a nullable column: NULL has its own text in the rank
            cur.execute("CREATE TABLE loose (a INT NOT NULL, b VARCHAR(5), v INT)")
            cur.execute("INSERT INTO loose VALUES (1, NULL, 0), (1, 'x', 0), (2, NULL, 0)")
        for name, (_, rows) in MYSQL_KEYS.items():
            _check_ranks(source, SourceTable(mariadb_db.database, name), len(rows), rng.randrange(2**32))
        _check_ranks(source, SourceTable(mariadb_db.database, "loose"), 3, rng.randrange(2**32), ["a", "b"])
    finally:
        source.close()


def _check_ranks(source: Any, table: SourceTable, n: int, seed: int, keys: list[str] | None = None) -> None:
    """The database's ranks equal Python's, and its threshold query draws the same sample."""
    key_names = keys or source.primary_key(table)
    by_name = {c.name: c for c in source.columns(table)}
    key_cols = [by_name[k] for k in key_names]
    scope = TableScope(key_cols)
    ranked = scope.rank_sql(source.family, seed, source.sql_expr)
    assert ranked is not None, table
    convs = [converter(c) for c in key_cols]
    cols = ", ".join(source.sql_expr(c) for c in key_cols)
    query = f"SELECT {ranked[0]}, {cols} FROM {table.schema}.{table.name}"
    got = (
        source._query(query, ranked[1])
        if source.family == "mysql"
        else source.conn.execute(query, ranked[1]).fetchall()
    )
    assert len(got) == n
    for r, *values in got:
        assert r == rank_parts(seed, [f(v) for f, v in zip(convs, values, strict=True)]), (table, values)
    keys = [_key([f(v) for f, v in zip(convs, row, strict=True)]) for row in source.rows(table, key_cols)]
    picked = draw_sample(source, table, scope, n - 1, seed, lambda m: None)
    assert picked == sample_keys(keys, n - 1, seed, len(key_cols))
    scope.sample = picked
    rows = list(source.rows(table, key_cols, scope))
    assert len(rows) == n - 1 and {_key([f(v) for f, v in zip(convs, r, strict=True)]) for r in rows} <= set(keys)


PG_KEYS = {
    "ints": ("id bigint", [(-(2**62),), (0,), (2**62,)]),
    "texts": ("k text", [("a",), ("ü😀",), ("it's",), ("100%",)]),
    "names": ("k varchar(12)", [("x",), ("ÿ",)]),
    "uuids": ("u uuid", [("0c2f5e0b-96c7-4ad2-a2c6-2d6f0c6b5e11",), ("00000000-0000-0000-0000-000000000000",)]),
    "moods": ("m mood", [("ok",), ("it's",)]),
    "pair": ("a int, b text", [(1, "x"), (1, "y"), (2, "ß")]),
}


def test_postgres_ranks_keys_exactly_as_python_does(postgres_db: Any) -> None:
    rng = random.Random(SEED + 1)
    print(f"seed {SEED}")
    with postgres_db.connect() as conn:
        conn.execute("CREATE TYPE mood AS ENUM ('ok', 'it''s')")
        for name, (ddl, rows) in PG_KEYS.items():
            keys = [part.split()[0] for part in ddl.split(", ")]
            conn.execute(f"CREATE TABLE {name} ({ddl}, v int, PRIMARY KEY ({', '.join(keys)}))")
            with conn.cursor() as cur:
                marks = ", ".join(["%s"] * (len(keys) + 1))
                cur.executemany(f"INSERT INTO {name} VALUES ({marks})", [(*r, 0) for r in rows])
        conn.execute("CREATE TABLE loose (a int NOT NULL, b text, v int)")
        conn.execute("INSERT INTO loose VALUES (1, NULL, 0), (1, 'x', 0), (2, NULL, 0)")
        conn.execute("CREATE TABLE padded (k char(5) PRIMARY KEY, v int)")
        conn.execute("INSERT INTO padded VALUES ('a', 0), ('bb', 0), ('ccc', 0)")
    source = PostgresSource(pg_props(postgres_db))
    try:
        for name, (_, rows) in PG_KEYS.items():
            _check_ranks(source, SourceTable("public", name), len(rows), rng.randrange(2**32))
        _check_ranks(source, SourceTable("public", "loose"), 3, rng.randrange(2**32), ["a", "b"])
        # char(n): its SQL text drops the padding canonical keeps, so Python ranks it; same draw.
        table = SourceTable("public", "padded")
        key_cols = [c for c in source.columns(table) if c.name == "k"]
        scope = TableScope(key_cols)
        assert scope.rank_sql("postgres", 5, source.sql_expr) is None
        picked = draw_sample(source, table, scope, 2, 5, lambda m: None)
        assert picked == sample_keys(["a    ", "bb   ", "ccc  "], 2, 5)
    finally:
        source.close()


def _bank(tmp_path: Path, server: Any, sink: str) -> Path:
    """PostgreSQL `accounts` (N rows) and its target in the sink's layout: `sink` postgres (schema lake in the
    same database) or iceberg; drift: 150 missing, 160 changed, 1500 missing."""
    with server.connect() as conn:
        conn.execute("CREATE TABLE accounts (id int PRIMARY KEY, owner text, v int)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO accounts VALUES (%s, %s, %s)", [(i, f"o{i}", i) for i in range(1, N + 1)])
    ids = [i for i in range(1, N + 1) if i not in (150, 1500)]
    values = [-1 if i == 160 else i for i in ids]
    job = tmp_path / f"{sink}.yaml"
    if sink == "postgres":
        with server.connect() as conn:
            conn.execute("CREATE SCHEMA lake")
            conn.execute(
                "CREATE TABLE lake.bank_public_accounts (id int PRIMARY KEY, owner text, v int, __op text, "
                "__seq bytea, __source_ts_ms bigint, __deleted boolean)"
            )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO lake.bank_public_accounts VALUES (%s, %s, %s, 'r', '', 0, false)",
                    [(i, f"o{i}", v) for i, v in zip(ids, values, strict=True)],
                )
        target = f"  type: postgres\n  dsn: {server.dsn}\n  schema: lake\n"
    else:
        from pyiceberg.catalog.sql import SqlCatalog

        warehouse = tmp_path / "ice"
        warehouse.mkdir()
        catalog = SqlCatalog("cdc", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
        catalog.create_namespace("cdc")
        rows = pa.table(
            {"id": pa.array(ids, pa.int32()), "owner": [f"o{i}" for i in ids], "v": pa.array(values, pa.int32())}
            | _meta(len(ids))
        )
        ice = catalog.create_table(("cdc", "bank_public_accounts"), schema=rows.schema)
        for part in range(3):
            ice.append(rows.slice(part * 1000, 1000))
        target = f"  type: iceberg\n  path: {warehouse}\n"
    job.write_text(
        f"""name: bank
source:
  connector.class: postgres
  database.hostname: {server.host}
  database.port: {server.port}
  database.user: {server.user}
  database.password: '{server.password}'
  database.dbname: {server.dbname}
  topic.prefix: bank
  table.include.list: public.accounts
transport:
  state.dir: {tmp_path / "state"}
sink:
{target}"""
    )
    return job


@pytest.mark.parametrize("sink", ["postgres", "iceberg"])
def test_postgres_source_range_and_sample_are_read_on_both_sides(tmp_path: Path, postgres_db: Any, sink: str) -> None:
    job = _bank(tmp_path, postgres_db, sink)
    res = _verify(str(job), "--key-range", "id=100..200", "--json")
    assert res.exit_code == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    (accounts,) = doc["tables"]
    assert (accounts["source_rows"], accounts["target_rows"], accounts["missing"], accounts["changed"]) == (
        101,
        100,
        1,
        1,
    )
    assert doc["key_range"]["tables"] == ["public.accounts"] and doc["key_range"]["skipped"] == []

    spec = load_job(str(job))
    with Verifier(spec, key_range=parse_key_range("id=1001..2000")) as v:
        source, target = Counted(v.source, "rows"), Counted(v.target, "rows")
        (result,), _ = verify_tables(v, sample=(30, SEED))
        picked = sample_keys((str(i) for i in range(1001, 2001)), 30, SEED)
        assert picked is not None and result.sampled == 30 == result.source_rows
        assert (result.target_rows, result.missing, result.changed) == (30 - ("1500" in picked), "1500" in picked, 0)
        assert (source.counts["rows"], target.counts["rows"]) == (30, result.target_rows)  # no pass 2: no change
        source.reset()
        target.reset()
        (whole,), _ = verify_tables(v)
    assert (whole.source_rows, whole.missing, whole.changed) == (1000, 1, 0)
    assert (source.counts["rows"], target.counts["rows"]) == (1000, 999)


def test_online_compare_and_repair_plan_stay_in_the_range(tmp_path: Path, mariadb_db: Any) -> None:
    """The lake at a position X (versions, tombstones) is read in the range; `--repair` plans only its keys."""
    from cdc.jobs.verify.repair_run import literals_for, plan
    from cdc.jobs.verify.snapshot import Point

    db = mariadb_db.database
    job = _shop(tmp_path, mariadb_db)
    items = str(tmp_path / "lake" / "items")
    # Keys changed after X in the lake: 170 (in the range) and 2000 (outside); a remembered delete of 180.
    DeltaTable(items).update(updates={"__seq": "X'09'"}, predicate="id = 170 OR id = 2000")
    write_deltalake(
        str(tmp_path / "lake" / "items__tombstones"),
        pa.table({"id": pa.array([180, 2100], pa.int32()), "__seq": [b"\x09", b"\x09"]}),
    )
    spec = load_job(str(job))
    with Verifier(spec, key_range=parse_key_range("id=100..200")) as v:
        target = Counted(v.target, "versions", "tombstones")
        (table,) = v.apply_key_range([SourceTable(db, "items")], named=True)
        at = Point("mysql", "X", b"\x05", lambda offset: True)
        result = v.verify_table(table, 20, keep_keys=True, at=at)
        assert (result.missing, result.changed, result.changed_since) == (1, 1, 2)
        # versions: the changed-since pass, the comparison, and the changed row's values (stops at it)
        assert 200 < target.counts["versions"] <= 3 * 100 and target.counts["tombstones"] == 1, target.counts
        assert result.keys is not None and result.keys["missing"] == ["150"] and result.keys["changed"] == ["160"]
        source = Counted(v.source, "rows")
        (p,) = plan(v, [result], lambda m: None)
        assert sorted(p.keys) == ["150", "160"] and p.conditions == ["`id` IN (150, 160)"]
        assert source.counts["rows"] <= 101  # the source's key values were read in the range
        assert literals_for(v).family == "mysql"


def test_repair_signals_only_the_differences_in_the_range(tmp_path: Path, mariadb_db: Any) -> None:
    """The job stopped: `--repair --key-range` sends one signal for the range's missing and changed keys
    (to the signal table, read by the job's next run) and none for the drift outside the range."""
    from tests.mysql.incremental_support import SIGNAL_TABLE, create_signal_table

    db = mariadb_db.database
    signals = create_signal_table(mariadb_db)
    job = _shop(tmp_path, mariadb_db, signal__data__collection=signals)
    res = _verify(str(job), "--repair", "--key-range", "id=100..200")
    assert res.exit_code == 1, res.stdout + res.stderr
    assert res.stdout.startswith(f"key range: 100 ≤ id ≤ 200 (--key-range id=100..200) on 1 table(s): {db}.items")
    assert f"repair {db}.items: 2 keys to read again in 1 signal(s)" in res.stdout, res.stdout
    assert "the job is not running: sent 1 of 1 signal(s) to the source channel" in res.stdout
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT type, data FROM {SIGNAL_TABLE}")
        ((kind, data),) = cur.fetchall()
    assert kind == "execute-snapshot"
    assert json.loads(data)["additional-conditions"] == [
        {"data-collection": f"{db}\\.items", "filter": "`id` IN (150, 160)"}
    ]


def _range_cases(rng: random.Random) -> list[tuple[str, str, list[Any]]]:
    """(column DDL type, kind of bound, random key values) for the range types."""
    base = datetime.datetime(2024, 1, 1)
    stamps = [base + datetime.timedelta(microseconds=rng.randrange(10**11)) for _ in range(300)]
    return [
        ("BIGINT", "int", [rng.randrange(-(2**40), 2**40) for _ in range(300)]),
        ("DECIMAL(12,3)", "decimal", [decimal.Decimal(rng.randrange(-(10**9), 10**9)).scaleb(-3) for _ in range(300)]),
        (
            "DATE",
            "date",
            [datetime.date(2000, 1, 1) + datetime.timedelta(days=rng.randrange(9000)) for _ in range(300)],
        ),
        ("DATETIME(3)", "datetime", stamps),
        ("TIMESTAMP(6)", "timestamptz", stamps),
    ]


def _bounds(rng: random.Random, values: list[Any]) -> tuple[str | None, str | None]:
    low, high = sorted(rng.sample(values, 2))
    text = [v.isoformat() if isinstance(v, datetime.date) else str(v) for v in (low, high)]
    shape = rng.random()
    return (None if shape < 0.2 else text[0]), (None if 0.2 <= shape < 0.4 else text[1])


@pytest.mark.parametrize("family", ["mysql", "postgres"])
def test_the_source_reads_every_key_the_range_holds(request: pytest.FixtureRequest, family: str) -> None:
    """Each range type on a real database: the rows the source's WHERE returns are those whose canonical key
    the range holds (a DATETIME(3) bound between two milliseconds, a timestamp bound with an offset …)."""
    from cdc.jobs.verify.key_range import KeyRange, bind

    rng = random.Random(f"{SEED}-{family}")
    print(f"seed {SEED}")
    server = request.getfixturevalue("mariadb_db" if family == "mysql" else "postgres_db")
    pg_types = {"BIGINT": "bigint", "DATETIME(3)": "timestamp(3)", "TIMESTAMP(6)": "timestamptz"}
    cases = _range_cases(rng)
    if family == "mysql":
        source: Any = MySqlSource(mysql_props(server))
        schema = server.database
        with server.connect(init_command="SET time_zone = '+00:00'") as conn, conn.cursor() as cur:
            for i, (ddl, _, values) in enumerate(cases):
                cur.execute(f"CREATE TABLE r{i} (k {ddl} PRIMARY KEY)")
                cur.executemany(f"INSERT IGNORE INTO r{i} VALUES (%s)", [(v,) for v in values])
    else:
        source = PostgresSource(pg_props(server))
        schema = "public"
        with server.connect() as conn:
            conn.execute("SET TIME ZONE 'UTC'")
            for i, (ddl, _, values) in enumerate(cases):
                conn.execute(f"CREATE TABLE r{i} (k {pg_types.get(ddl, ddl)} PRIMARY KEY)")
                with conn.cursor() as cur:
                    cur.executemany(f"INSERT INTO r{i} VALUES (%s) ON CONFLICT DO NOTHING", [(v,) for v in values])
    try:
        for i, (_, kind, values) in enumerate(cases):
            table = SourceTable(schema, f"r{i}")
            (col,) = source.columns(table)
            assert col.kind == kind, col
            every = list(source.rows(table, [col]))
            conv = converter(col)
            for _ in range(10):
                low, high = _bounds(rng, values)
                r = bind(KeyRange("k", low, high), table.qualified, ["k"], [col])
                truth = {conv(v) for (v,) in every if r.holds(conv(v))}
                read = {conv(v) for (v,) in source.rows(table, [col], TableScope([col], r))}
                assert truth <= read, (col.type, low, high, sorted(truth - read)[:3])
                assert read - truth <= {c for c in read if kind == "datetime"}, (col.type, low, high)
                assert len(read - truth) <= 1, (col.type, low, high, sorted(read - truth))
    finally:
        source.close()
