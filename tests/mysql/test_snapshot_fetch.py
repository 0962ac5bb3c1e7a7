"""snapshot_fetch.py: rows read off the wire are exactly PyMySQL's, and the connection is left as PyMySQL leaves it.

Seeded random tables of every column type family (integers signed and unsigned, floating
point, DECIMAL, temporal types with zero dates, text of several charsets and lengths across the
1-, 2- and 3-byte length prefixes, binary, ENUM/SET, BIT, JSON), with NULLs; each is read by
PyMySQL's SSCursor.fetchmany and by RowReader.fetch in batches of several sizes, and the
reader processes' form (deferred columns as text, sent column by column, decoded by the task's
process) gives the same rows again.
"""

from __future__ import annotations

import datetime
import decimal
import random
from typing import Any

import pymysql
import pymysql.cursors
import pytest

from cdc_mysql.snapshot_decoders import CONVERSIONS
from cdc_mysql.snapshot_fetch import RowReader, columns_of, deferred_columns
from cdc_mysql.snapshot_parallel import batch_rows
from tests.mysql.harness import execute

COLUMNS = [
    ("i", "INT NULL"),
    ("u", "BIGINT UNSIGNED NULL"),
    ("t", "TINYINT NULL"),
    ("y", "YEAR NULL"),
    ("f", "FLOAT NULL"),
    ("g", "DOUBLE NULL"),
    ("n", "DECIMAL(30, 7) NULL"),
    ("d", "DATE NULL"),
    ("dt", "DATETIME(6) NULL"),
    ("ts", "TIMESTAMP(3) NULL"),
    ("tm", "TIME(2) NULL"),
    ("s", "VARCHAR(400) CHARACTER SET utf8mb4 NULL"),
    ("l", "LONGTEXT CHARACTER SET latin1 NULL"),
    ("b", "VARBINARY(300) NULL"),
    ("bl", "MEDIUMBLOB NULL"),
    ("e", "ENUM('a', 'b,c', 'é') NULL"),
    ("st", "SET('x', 'y', 'z') NULL"),
    ("bt", "BIT(10) NULL"),
    ("j", "JSON NULL"),
]
TEXT = "aZ09 _-éç€日本\\'\""


def _value(rng: random.Random, name: str) -> Any:
    if rng.random() < 0.15:
        return None
    size = rng.choice([0, 1, 250, 251, 252, 300, 70_000])  # the wire's 1-, 2- and 3-byte length prefixes
    match name:
        case "i":
            return rng.randint(-(2**31), 2**31 - 1)
        case "u":
            return rng.choice([0, 2**64 - 1, rng.randrange(2**64)])
        case "t":
            return rng.randint(-128, 127)
        case "y":
            return rng.choice([1901, 2155, 1999, 0])
        case "f" | "g":
            return rng.choice([0.0, -1.5e-30, 3.4e30, rng.random() * 1e6])
        case "n":
            return decimal.Decimal(rng.randint(-(10**22), 10**22)) / 10**7
        case "d":
            return rng.choice(["0000-00-00", "2024-02-29", "1000-01-01", "9999-12-31", "2024-00-10"])
        case "dt":
            return rng.choice(["0000-00-00 00:00:00", "2024-02-29 23:59:59.999999", "1000-01-01 00:00:00.5"])
        case "ts":
            return rng.choice(["1970-01-01 00:00:01", "2038-01-19 03:14:07.999", "2024-06-01 12:00:00.1"])
        case "tm":
            return rng.choice(["-838:59:59", "838:59:59", "00:00:00.5", "-00:00:01.25", "25:00:00"])
        case "s":
            return "".join(rng.choice(TEXT) for _ in range(min(size, 400)))
        case "l":
            return "".join(rng.choice("abcé ") for _ in range(size))
        case "b" | "bl":
            return bytes(rng.randrange(256) for _ in range(min(size, 300) if name == "b" else size))
        case "e":
            return rng.choice(["a", "b,c", "é"])
        case "st":
            return rng.choice(["", "x", "x,z", "x,y,z"])
        case "bt":
            return rng.randrange(1024)
        case _:
            return rng.choice(['{"a": [1, 2.5, "é"]}', "null", "[]", '"x"'])


def _fill(server: Any, seed: int, n: int) -> None:
    rng = random.Random(seed)
    execute(server, f"CREATE TABLE f (pk INT PRIMARY KEY, {', '.join(f'{c} {t}' for c, t in COLUMNS)})")
    rows = [[k, *(_value(rng, c) for c, _ in COLUMNS)] for k in range(n)]
    bit = [c for c, _ in COLUMNS].index("bt") + 1
    for row in rows:
        if row[bit] is not None:  # BIT(10) takes its two bytes
            row[bit] = row[bit].to_bytes(2, "big")
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'")
        cur.executemany(f"INSERT INTO f VALUES ({', '.join(['%s'] * (len(COLUMNS) + 1))})", rows)


def _connect(server: Any) -> Any:
    return server.connect(cursorclass=pymysql.cursors.SSCursor, conv=CONVERSIONS)


def _pymysql_rows(conn: Any, sql: str, size: int) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        out: list[tuple[Any, ...]] = []
        while batch := cur.fetchmany(size):
            out.extend(batch)
        return out


@pytest.mark.parametrize("seed", [3, 2026])
def test_rows_are_pymysqls_in_any_batch_size(mariadb_db: Any, seed: int) -> None:
    _fill(mariadb_db, seed, 120)
    rng = random.Random(seed)
    sql = "SELECT * FROM f ORDER BY pk"
    with _connect(mariadb_db) as conn:
        expected = _pymysql_rows(conn, sql, 1000)
        assert len(expected) == 120
        reader = RowReader()
        for size in (1, 7, rng.randint(2, 200), 1000):
            with conn.cursor() as cur:
                cur.execute(sql)
                got: list[tuple[Any, ...]] = []
                while batch := reader.fetch(cur, size):
                    assert len(batch) <= size
                    got.extend(batch)
                assert reader.fetch(cur, size) == []
                assert cur.rownumber == 120
            assert got == expected, size
            assert [list(map(type, r)) for r in got] == [list(map(type, r)) for r in expected]
        assert reader._parsers  # read by the compiled parser, not by fetchmany
        # the connection is where PyMySQL leaves it: the next statements read as usual
        assert _pymysql_rows(conn, "SELECT 1, 'x'", 5) == [(1, "x")]


@pytest.mark.parametrize("seed", [5, 77])
def test_a_reader_processes_batches_decode_to_the_same_rows(mariadb_db: Any, seed: int) -> None:
    """The reader's form: deferred columns as text, a batch by column; the task's process decodes them."""
    _fill(mariadb_db, seed, 90)
    sql = "SELECT * FROM f ORDER BY pk"
    with _connect(mariadb_db) as conn:
        expected = _pymysql_rows(conn, sql, 1000)
        reader = RowReader()
        with conn.cursor() as cur:
            cur.execute(sql)
            deferred = deferred_columns(cur)
            names = [d[0] for d in cur.description]
            assert {names[i] for i, _ in deferred} == {"n", "d", "dt", "ts", "tm"}
            at = frozenset(i for i, _ in deferred)
            decoders = [(i, CONVERSIONS[t]) for i, t in deferred]
            got: list[tuple[Any, ...]] = []
            while batch := reader.fetch(cur, 13, at):
                assert all(isinstance(r[i], str) for r in batch for i in at if r[i] is not None)
                columns = columns_of(batch, len(names))
                assert columns is not None
                got.extend(batch_rows(("cols", 0, columns), decoders))
                got_rows = batch_rows(("rows", 0, batch), decoders)  # the per-row form gives the same
                assert got_rows == got[-len(batch) :]
        assert got == expected
        kinds = {type(v) for r in got for v in r}
        assert {datetime.datetime, datetime.date, datetime.timedelta, decimal.Decimal, str, bytes} <= kinds


def test_an_error_in_the_result_is_raised_as_pymysql_raises_it(mariadb_db: Any) -> None:
    execute(mariadb_db, "CREATE TABLE e (k INT PRIMARY KEY)", "INSERT INTO e SELECT seq FROM seq_1_to_5000")
    # A row past the first few thousand fails while the rows before it are already sent.
    sql = "SELECT k, IF(k = 4000, (SELECT 1 UNION SELECT 2), 0) FROM e ORDER BY k"

    def failure(read: Any) -> tuple[type, int, list[tuple[Any, ...]]]:
        with _connect(mariadb_db) as conn:
            rows: list[tuple[Any, ...]] = []
            with pytest.raises(pymysql.MySQLError) as info, conn.cursor() as cur:
                cur.execute(sql)
                while batch := read(cur):
                    rows.extend(batch)
            assert _pymysql_rows(conn, "SELECT 2", 5) == [(2,)]  # the connection still works
            return type(info.value), info.value.args[0], rows

    reader = RowReader()
    theirs = failure(lambda cur: cur.fetchmany(100))
    ours = failure(lambda cur: reader.fetch(cur, 100))
    assert reader._parsers
    assert ours == theirs
    assert ours[1] == 1242 and len(ours[2]) > 0  # "Subquery returns more than 1 row", after rows were read


def test_a_cursor_of_another_kind_is_read_by_pymysql(mariadb_db: Any) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:  # a buffered cursor
        cur.execute("SELECT 1, 'a' UNION ALL SELECT 2, 'b'")
        assert RowReader().fetch(cur, 1) == [(1, "a")]
        assert RowReader().fetch(cur, 5) == [(2, "b")]
        assert deferred_columns(cur) == []
