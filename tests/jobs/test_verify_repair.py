"""`cdc verify --repair`: the differing keys as `execute-snapshot` signals (cdc/jobs/verify/repair.py).

Unit tests build the conditions with the drivers' own quoting (pymysql's converters, psycopg's
`sql.Literal` without a connection). The integration tests run the built conditions against a
private MariaDB and PostgreSQL table of seeded adversarial keys (quotes, backslashes, `%`, unicode,
binary, dates, timestamps), in the connector's chunk-query shape, and check that each selects
exactly its keys. The seed is printed; CDC_TEST_SEED replays one.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import random
import re
from typing import Any

import pymysql
import pytest

from cdc.jobs.verify.compare import TableResult, _key
from cdc.jobs.verify.normalize import Column, converter
from cdc.jobs.verify.repair import (
    DATA_LIMIT,
    KEYS_PER_SIGNAL,
    MySqlLiterals,
    PostgresLiterals,
    plan_table,
    signal_for,
    wanted_keys,
)
from cdc.jobs.verify.repair_run import Outcome
from cdc.jobs.verify.report import outcome_lines, plan_lines

SEED = int(os.environ.get("CDC_TEST_SEED", random.SystemRandom().randrange(1 << 30)))


class _OfflineMySql:
    """pymysql's converters, as `Connection.escape` applies them (backslash escapes on)."""

    def escape(self, value: Any) -> str:
        return pymysql.converters.escape_item(value, "utf8mb4")


def _mysql() -> MySqlLiterals:
    return MySqlLiterals(_OfflineMySql())


def _pg() -> PostgresLiterals:
    return PostgresLiterals(None)


def _canon(values: tuple[Any, ...], columns: list[Column]) -> str:
    return _key([converter(c, False)(v) for c, v in zip(columns, values, strict=True)])


def _result(table: str, **keys: list[str]) -> TableResult:
    r = TableResult(table, "lake")
    r.keys = {kind: list(keys.get(kind, [])) for kind in ("missing", "extra", "changed", "duplicate")}
    r.missing, r.extra, r.changed, r.duplicates = (len(r.keys[k]) for k in ("missing", "extra", "changed", "duplicate"))
    return r


def _plan(lit: Any, columns: list[Column], rows: list[tuple[Any, ...]], table: str = "db.t", **kinds: Any):
    canon = {_canon(r, columns): r for r in rows}
    result = _result(table, **{k: [_canon(r, columns) for r in v] for k, v in kinds.items()})
    plan = plan_table(result, [c.name for c in columns], columns, lambda: list(canon.values()), lit)
    return plan, canon


# -- quoting ------------------------------------------------------------------------------------
def test_mysql_literals_of_every_key_type() -> None:
    lit = _mysql()
    cases = [
        (Column("i", "int", "int"), 42, "42"),
        (Column("u", "uint64", "bigint unsigned"), 2**64 - 1, "18446744073709551615"),
        (Column("d", "decimal", "decimal(10,2)"), decimal.Decimal("-1.50"), "-1.50"),
        (Column("s", "text", "varchar(20)"), "it's \\ \"x\" %s", "'it\\'s \\\\ \\\"x\\\" %s'"),
        (Column("s", "text", "varchar(20)"), "ü€😀", "'ü€😀'"),
        (Column("b", "bytes", "varbinary(8)"), b"\x00'\\\xff", "X'00275CFF'"),
        (Column("day", "date", "date"), datetime.date(2024, 2, 29), "'2024-02-29'"),
        (Column("at", "datetime", "datetime(6)"), datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
         "'2024-01-02 03:04:05.000006'"),
        (Column("ts", "timestamptz", "timestamp(6)"), datetime.datetime(1970, 1, 2, 0, 0, 1, 5),
         "FROM_UNIXTIME(86401.000005)"),
        (Column("t", "time", "time(6)"), datetime.timedelta(hours=25, microseconds=1), "'25:00:00.000001'"),
        (Column("bit", "bits", "bit(10)"), b"\x02\x01", "513"),
    ]  # fmt: skip
    for column, value, expected in cases:
        assert lit.literal(value, column) == expected, (column, value)
    assert lit.ident("we`ird") == "`we``ird`"


def test_postgres_literals_of_every_key_type() -> None:
    lit = _pg()
    cases = [
        (Column("i", "int", "integer"), -7, "-7"),
        (Column("s", "text", "text"), "it's %s", "'it''s %s'"),
        (Column("b", "bytes", "bytea"), b"a\x00'", "::bytea"),
        (Column("day", "date", "date"), datetime.date(2024, 2, 29), "'2024-02-29'::date"),
        (Column("u", "text", "uuid", select='"u"::text'), "0f8fad5b-d9cb-469f-a165-70867728950e",
         "CAST('0f8fad5b-d9cb-469f-a165-70867728950e' AS uuid)"),
        (Column("ts", "timestamptz", "timestamp with time zone"),
         datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC), "'2024-01-02 00:00:00+00:00'::timestamptz"),
    ]  # fmt: skip
    for column, value, expected in cases:
        assert expected in lit.literal(value, column), (column, value, lit.literal(value, column))
    assert lit.ident('we"ird') == '"we""ird"'


def test_composite_key_condition_and_signal_shape() -> None:
    cols = [Column("a", "int", "int"), Column("b", "text", "varchar(9)")]
    plan, _ = _plan(
        _mysql(), cols, [(1, "x'"), (2, "y")], table="shop.order$lines", missing=[(1, "x'")], changed=[(2, "y")]
    )
    assert plan.conditions == ["(`a`, `b`) IN ((1, 'x\\''), (2, 'y'))"]
    sig = signal_for(plan.table, plan.conditions[0], "repair-1")
    doc = json.loads(sig.document())
    assert doc["type"] == "execute-snapshot"
    assert doc["data"] == {
        "data-collections": [re.escape("shop.order$lines")],
        "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": re.escape("shop.order$lines"), "filter": plan.conditions[0]}],
    }
    assert re.fullmatch(doc["data"]["data-collections"][0], "shop.order$lines", re.IGNORECASE)
    assert not re.fullmatch(doc["data"]["data-collections"][0], "shopXorder$lines", re.IGNORECASE)


def test_integer_runs_become_between_and_select_nothing_more() -> None:
    cols = [Column("id", "int", "int")]
    keys = [(i,) for i in [1, 2, 3, 4, 7, 9, 10, 11, 20]]
    plan, _ = _plan(_pg(), cols, keys, missing=keys)
    assert plan.conditions == ['("id" IN (7, 20) OR "id" BETWEEN 1 AND 4 OR "id" BETWEEN 9 AND 11)']
    assert plan.counts == [9]


def test_large_key_sets_are_chunked_to_fit_the_signal_table() -> None:
    rnd = random.Random(SEED)
    print(f"seed {SEED}")
    cols = [Column("k", "text", "varchar(64)"), Column("n", "int", "int")]
    rows = list({(f"k-{rnd.randrange(10**9)}'\\", rnd.randrange(-(2**31), 2**31)) for _ in range(5000)})
    plan, _ = _plan(_mysql(), cols, rows, changed=rows)
    assert len(plan.conditions) > 1
    assert sum(plan.counts) == len(rows) == len(plan.keys) == len(set(plan.keys))
    for text, count in zip(plan.conditions, plan.counts, strict=True):
        sig = signal_for(plan.table, text)
        assert sig.problem() is None and len(sig.data_text() or "") <= DATA_LIMIT
        assert 0 < count <= KEYS_PER_SIGNAL
    # The cap on keys per signal holds where the size would allow more.
    small = [Column("k", "int", "int")]
    spread = [(i * 2,) for i in range(50)]
    capped = plan_table(
        _result("db.t", missing=[_canon(r, small) for r in spread]), ["k"], small, lambda: spread, _pg(), max_keys=7
    )
    assert capped.counts == [7] * 7 + [1]


def test_extra_gone_null_and_inexact_keys_are_reported_not_signalled() -> None:
    cols = [Column("a", "int", "int"), Column("b", "text", "text")]
    present = [(1, "x"), (2, None)]
    canon = [_canon(r, cols) for r in [*present, (3, "gone"), (9, "extra")]]
    result = _result("db.t", missing=canon[:3], extra=[canon[3]])
    plan = plan_table(result, ["a", "b"], cols, lambda: present, _mysql())
    assert plan.conditions == ["(`a`, `b`) IN ((1, 'x'))"]
    assert plan.extra == [canon[3]] and plan.gone == [canon[2]] and plan.unselectable == [canon[1]]
    assert "NULL" in (plan.why_unselectable or "")
    assert plan.checked_keys == set(canon)
    floats = [Column("f", "float", "double")]
    inexact = plan_table(_result("db.f", changed=["1.5"]), ["f"], floats, lambda: [(1.5,)], _mysql())
    assert not inexact.conditions and inexact.unselectable == ["1.5"]
    # The report says why extra keys cannot be healed by a snapshot, and what to do.
    lines = plan_lines([plan], {"db.t": ["a", "b"]}, 5)
    assert any("1 extra in the target, not repairable by a snapshot" in line for line in lines)
    assert any("a=9, b=extra" in line for line in lines)
    assert any("delete it from the target by its key" in line for line in lines)


def test_wanted_keys_read_duplicates_but_never_extra_keys() -> None:
    r = _result("db.t", missing=["1"], changed=["2"], duplicate=["3", "4"], extra=["4", "5"])
    assert wanted_keys(r) == (["1", "2", "3"], ["4", "5"])


def test_a_stopped_job_is_told_when_the_repair_happens() -> None:
    cols = [Column("id", "int", "int")]
    plan, _ = _plan(_pg(), cols, [(1,)], missing=[(1,)])
    out = Outcome(False, "source", sent={"db.t": 1}, total={"db.t": 3})
    text = "\n".join(outcome_lines([plan], out, "job.yaml"))
    assert "the job is not running: sent 1 of 3 signal(s)" in text
    assert "cdc verify job.yaml --repair` again to send the rest" in text


def test_randomized_keys_round_trip_through_the_signal_document() -> None:
    """Seeded adversarial keys: every condition fits one signal and survives its JSON unchanged."""
    rnd = random.Random(SEED + 1)
    print(f"seed {SEED}")
    for lit in (_mysql(), _pg()):
        cols = [Column("s", "text", "text"), Column("b", "bytes", "bytea"), Column("d", "date", "date")]
        rows = list(
            {
                (_text(rnd), _binary(rnd), datetime.date(1, 1, 1) + datetime.timedelta(rnd.randrange(10**6)))
                for _ in range(400)
            }
        )
        plan, _ = _plan(lit, cols, rows, missing=rows)
        assert sum(plan.counts) == len(rows)
        for text in plan.conditions:
            doc = json.loads(signal_for("db.t", text).document())
            assert doc["data"]["additional-conditions"][0]["filter"] == text
            assert "\x00" not in text  # literals never carry a raw NUL


# -- against real databases ----------------------------------------------------------------------
ALPHABET = "aZ09 '\"\\%_`;-/*\n\tüß€中😀\u200b"


def _text(rnd: random.Random, nul: bool = False) -> str:
    chars = ALPHABET + ("\x00" if nul else "")
    text = "".join(rnd.choice(chars) for _ in range(rnd.randint(1, 12)))
    return text.rstrip(" ") or "x"  # no trailing blanks: PAD SPACE collations would match them too


def _binary(rnd: random.Random) -> bytes:
    return bytes(rnd.randint(1, 255) for _ in range(rnd.randint(1, 8)))  # NUL-free


def _check(rows: list[tuple[Any, ...]], plan: Any, select: Any, cols: list[Column]) -> None:
    """Each condition selects exactly the keys it was built for; together, exactly the wanted keys."""
    offset = 0
    seen: set[str] = set()
    for text, count in zip(plan.conditions, plan.counts, strict=True):
        mine = set(plan.keys[offset : offset + count])
        offset += count
        got = {_canon(tuple(r), cols) for r in select(text)}
        assert got == mine, (text, sorted(got ^ mine)[:5])
        seen |= got
    assert seen == set(plan.keys)


@pytest.mark.integration
def test_conditions_select_exactly_their_keys_on_mariadb(mariadb_db: Any) -> None:
    from cdc.jobs.verify.source import MySqlSource, SourceTable
    from tests.mysql.harness import connector_props

    rnd = random.Random(SEED + 2)
    print(f"seed {SEED}")
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE t (s VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin, b VARBINARY(8), "
            "d DATE, ts TIMESTAMP(6) NOT NULL, n INT, v INT, PRIMARY KEY (s, b, d, ts, n))"
        )
        cur.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, v INT)")
        rows = {
            (_text(rnd), _binary(rnd), datetime.date(1000, 1, 1) + datetime.timedelta(rnd.randrange(10**6)),
             datetime.datetime(1980, 1, 1)
             + datetime.timedelta(seconds=rnd.randrange(10**9), microseconds=rnd.randrange(10**6)),
             rnd.randrange(-5, 5))
            for _ in range(600)
        }  # fmt: skip
        cur.execute("SET time_zone = '+00:00'")
        cur.executemany("INSERT IGNORE INTO t VALUES (%s, %s, %s, %s, %s, 0)", sorted(rows))
        ids = rnd.sample(range(1, 5000), 1500)
        cur.executemany("INSERT INTO r VALUES (%s, 0)", [(i,) for i in ids])
        conn.commit()
    source = MySqlSource(connector_props(mariadb_db))
    try:
        for name, keys, shape in (("t", ["s", "b", "d", "ts", "n"], None), ("r", ["id"], "runs")):
            table = SourceTable(mariadb_db.database, name)
            by_name = {c.name: c for c in source.columns(table)}
            cols = [by_name[k] for k in keys]
            all_rows = list(source.rows(table, cols))
            wanted = rnd.sample(all_rows, len(all_rows) // 3)
            if shape == "runs":  # whole runs of consecutive ids, so that BETWEEN is used
                wanted = [r for r in all_rows if r[0] % 100 < 40]
            result = _result(table.qualified, missing=[_canon(r, cols) for r in wanted])
            plan = plan_table(result, keys, cols, lambda t=table, c=cols: source.rows(t, c), MySqlLiterals(source.conn))
            assert len(plan.keys) == len(wanted) and not plan.unselectable
            if shape == "runs":
                assert any("BETWEEN" in c for c in plan.conditions)

            def select(cond: str, t: Any = table, c: list[Column] = cols) -> list[tuple[Any, ...]]:
                # The connector's chunk query: parameters after the filter, its `%` doubled.
                quoted = ", ".join(f"`{x.name}`" for x in c)
                with mariadb_db.connect() as conn, conn.cursor() as cur:
                    cur.execute("SET time_zone = 'SYSTEM'")  # not verify's UTC: FROM_UNIXTIME is zone-free
                    cur.execute(
                        f"SELECT {quoted} FROM `{t.name}` WHERE ({quoted}) > ({', '.join(['%s'] * len(c))}) "
                        f"AND ({cond.replace('%', '%%')})",
                        _minimum(c),
                    )
                    fetched = cur.fetchall()
                return _to_utc(fetched, c)

            _check(all_rows, plan, select, cols)
    finally:
        source.close()


def _minimum(cols: list[Column]) -> list[Any]:
    low = {"text": "", "bytes": b"", "date": datetime.date(1, 1, 1), "timestamptz": datetime.datetime(1970, 1, 1)}
    return [low.get(c.kind or "", -(2**63)) for c in cols]


def _to_utc(rows: Any, cols: list[Column]) -> list[tuple[Any, ...]]:
    """TIMESTAMP values read in the session's zone, converted back to UTC as verify reads them."""
    ts = [i for i, c in enumerate(cols) if c.kind == "timestamptz"]
    if not ts:
        return [tuple(r) for r in rows]
    local = datetime.datetime.now().astimezone().tzinfo
    out = []
    for r in rows:
        r = list(r)
        for i in ts:
            r[i] = r[i].replace(tzinfo=local).astimezone(datetime.UTC).replace(tzinfo=None)
        out.append(tuple(r))
    return out


@pytest.mark.integration
def test_conditions_select_exactly_their_keys_on_postgres(postgres_db: Any) -> None:
    from psycopg import sql

    from cdc.jobs.verify.source import PostgresSource, SourceTable
    from tests.postgres.harness import connector_props

    rnd = random.Random(SEED + 3)
    print(f"seed {SEED}")
    with postgres_db.connect() as conn:
        conn.execute("CREATE TYPE mood AS ENUM ('ok', 'it''s', 'sad')")
        conn.execute(
            "CREATE TABLE t (s text, b bytea, d date, ts timestamptz, u uuid, m mood, n numeric(12,3), v int, "
            "PRIMARY KEY (s, b, d, ts, u, m, n))"
        )
        rows = {
            (_text(rnd), _binary(rnd), datetime.date(1000, 1, 1) + datetime.timedelta(rnd.randrange(10**6)),
             datetime.datetime(1980, 1, 1, tzinfo=datetime.UTC)
             + datetime.timedelta(microseconds=rnd.randrange(10**15)),
             f"{rnd.randrange(16**32):032x}", rnd.choice(["ok", "it's", "sad"]),
             decimal.Decimal(rnd.randrange(-(10**9), 10**9)).scaleb(-3))
            for _ in range(600)
        }  # fmt: skip
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s, %s, 0) ON CONFLICT DO NOTHING", sorted(rows))
        conn.commit()
    source = PostgresSource(connector_props(postgres_db))
    try:
        table = SourceTable("public", "t")
        keys = ["s", "b", "d", "ts", "u", "m", "n"]
        by_name = {c.name: c for c in source.columns(table)}
        cols = [by_name[k] for k in keys]
        all_rows = list(source.rows(table, cols))
        wanted = rnd.sample(all_rows, len(all_rows) // 3)
        result = _result(table.qualified, changed=[_canon(r, cols) for r in wanted])
        plan = plan_table(result, keys, cols, lambda: source.rows(table, cols), PostgresLiterals(source.conn))
        assert len(plan.keys) == len(wanted) and not plan.unselectable and len(plan.conditions) > 1

        def select(cond: str) -> list[tuple[Any, ...]]:
            # The connector's chunk query (cdc_postgres/incremental.py): parameters, the filter's `%` doubled.
            names = sql.SQL(", ").join(sql.Identifier(k) for k in keys)
            reads = sql.SQL(", ").join(sql.SQL(by_name[k].select or sql.Identifier(k).as_string(None)) for k in keys)
            query = sql.SQL("SELECT {} FROM t WHERE ({}) IS NOT NULL AND s > %s AND ({})").format(
                reads, names, sql.SQL(cond.replace("%", "%%"))
            )
            with postgres_db.connect() as conn:
                return [tuple(r) for r in conn.execute(query, [""]).fetchall()]

        _check(all_rows, plan, select, cols)
    finally:
        source.close()
