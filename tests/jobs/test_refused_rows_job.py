"""A value the target refuses, end to end through `cdc run` (issue 16).

`cdc run --until-caught-up` stops in one line naming the table, the key, the column, the cause
and the two ways out; every later run replays the same batch and stops the same way, whatever
is fixed at the source. The same job with `errors.tolerance: all` and `errors.deadletter.table`
catches up: every other row is in the target, each refused row's event is in the dead-letter
table, and once the value is fixed at the source the next run brings the target level with
the source, nothing lost.

Two stories: MariaDB → PostgreSQL warehouse (a NUL character, which PostgreSQL text cannot
hold) and PostgreSQL → Delta (dates of the years 10000 and 2 BC, which Delta cannot hold). The
rows, the refused ones and the later changes are seeded.
"""

from __future__ import annotations

import datetime
import json
import random
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable

from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

SEED = random.randrange(2**32)
_TRACE_MARKERS = ("Traceback", "\tat ", "=== Streaming Query ===", "Logical Plan", "Caused by", "py4j")


def _job(tmp_path: Path, source: str, sink: str) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(f"name: refused\nsource:\n{source}\ntransport:\n  state.dir: {tmp_path / 'state'}\nsink:\n{sink}\n")
    return job


def _run(job: Path, where: str, code: int) -> str:
    res = run_cdc("run", str(job), "--until-caught-up", timeout=900)
    assert res.returncode == code, f"{where}: exit {res.returncode}\n{res.stderr[-3000:]}"
    return res.stderr


def _last_line(stderr: str, where: str) -> str:
    lines = stderr.rstrip("\n").splitlines()
    noise = [line for line in lines[:-1] if any(marker in line for marker in _TRACE_MARKERS)]
    assert not noise, f"{where}: trace lines on stderr: {noise[:5]}\n{stderr[-3000:]}"
    return lines[-1]


def _dead_letters(path: Path) -> list[dict[str, Any]]:
    """The dead-letter table's rows, each with `id` (its record key's) and `event` (its value's payload)."""
    files = sorted(str(p) for p in path.rglob("*.parquet"))
    rows = ds.dataset(files, format="parquet").to_table().to_pylist() if files else []
    for r in rows:
        key, value = json.loads(r["key"]), json.loads(r["value"])
        r["id"] = key.get("payload", key)["id"]
        r["event"] = value.get("payload", value)
    return rows


def _story(
    rng: random.Random, ids: list[int], good: Any, bad: Any
) -> tuple[dict[int, Any], set[int], list[tuple[str, int, Any]]]:
    """The first rows (a refused value for a few ids), and later changes: (op, id, value)."""
    refused = set(rng.sample(ids, rng.randint(1, min(3, len(ids)))))
    rows = {i: bad(i) if i in refused else good(i) for i in ids}
    changes: list[tuple[str, int, Any]] = []
    for i in rng.sample([i for i in ids if i not in refused], rng.randint(1, len(ids) - len(refused))):
        changes.append(("delete", i, None) if rng.random() < 0.3 else ("update", i, good(i)))
    return rows, refused, changes


@pytest.mark.slow
def test_mariadb_to_postgres_a_nul_stops_the_run_and_tolerance_all_catches_up(
    tmp_path: Path, mariadb_db: Any, postgres_db: Any
) -> None:
    rng = random.Random(SEED)
    where = f"seed {SEED}"
    ids = rng.sample(range(1, 10_000), rng.randint(5, 40))

    def good(i: int) -> str:
        return f"item {i} " + "".join(rng.choices("abc xyz\n\t'\"", k=rng.randint(0, 20)))

    def bad(i: int) -> str:
        text = good(i)
        at = rng.randint(0, len(text))
        return text[:at] + "\x00" + text[at:]

    rows, refused, changes = _story(rng, ids, good, bad)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(60))")
        cur.executemany("INSERT INTO items VALUES (%s, %s)", list(rows.items()))
    source = "\n".join(f"  {k}: '{v}'" for k, v in connector_props(mariadb_db).items())
    sink = (
        f"  type: postgres\n  dsn: {postgres_db.dsn}\n  schema: lake\n"
        f"  tables:\n    {mariadb_db.database}.items: {{keys: [id], target: items}}\n"
    )
    job = _job(tmp_path, source, sink)

    # errors.tolerance none (the default): one line, and the same line on every run after it.
    line = _last_line(_run(job, where, 1), where)
    assert line.startswith("error: the sink failed: table lake.items: column 'name' holds a NUL"), f"{where}: {line}"
    named = [i for i in refused if f"in the row with key id={i}," in line]
    assert named and "errors.tolerance=all" in line and "errors.deadletter.table" in line, f"{where}: {line}"
    assert _last_line(_run(job, where, 1), where) == line, where

    # errors.tolerance all with a dead-letter table: the run catches up without the refused rows.
    dlq = tmp_path / "dead-letters"
    job = _job(tmp_path, source, sink + f"  errors.tolerance: all\n  errors.deadletter.table: {dlq}\n")
    _run(job, where, 0)
    assert _warehouse(postgres_db) == {i: v for i, v in rows.items() if i not in refused}, where
    dead = _dead_letters(dlq)
    assert sorted(d["id"] for d in dead) == sorted(refused), f"{where}: {dead}"
    for d in dead:
        nul = f"table lake.items: column 'name' holds a NUL character (U+0000) in the row with key id={d['id']},"
        assert d["error"].startswith(nul), f"{where}: {d}"
        assert d["topic"].endswith(".items") and d["event"]["op"] == "r", f"{where}: {d}"
        assert d["event"]["after"]["name"] == rows[d["id"]], f"{where}: {d}"

    # The values fixed at the source, and more changes: the target is level with the source.
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        for i in refused:
            rows[i] = good(i)
            cur.execute("UPDATE items SET name = %s WHERE id = %s", (rows[i], i))
        for op, i, value in changes:
            if op == "delete":
                cur.execute("DELETE FROM items WHERE id = %s", (i,))
                rows.pop(i)
            else:
                cur.execute("UPDATE items SET name = %s WHERE id = %s", (value, i))
                rows[i] = value
    _run(job, where, 0)
    assert _warehouse(postgres_db) == rows, where
    assert len(_dead_letters(dlq)) == len(refused), where


def _warehouse(server: Any) -> dict[int, str]:
    with psycopg.connect(server.dsn) as conn:
        return dict(conn.execute("SELECT id, name FROM lake.items").fetchall())


@pytest.mark.slow
def test_postgres_to_delta_a_date_the_lake_cannot_hold_stops_the_run_and_tolerance_all_catches_up(
    tmp_path: Path, postgres_db: Any
) -> None:
    rng = random.Random(SEED)
    where = f"seed {SEED}"
    ids = rng.sample(range(1, 10_000), rng.randint(5, 40))

    def good(i: int) -> datetime.date:
        return datetime.date(1, 1, 1) + datetime.timedelta(days=rng.randint(0, 3_652_058))

    def bad(i: int) -> str:  # PostgreSQL's date input: after 9999 or BC (2 BC is the astronomical year -1)
        return rng.choice(["10000-01-01", f"10{rng.randint(100, 999)}-02-28", "0002-06-30 BC", "4713-01-01 BC"])

    rows, refused, changes = _story(rng, ids, good, bad)
    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, day date)")
        for i, day in rows.items():
            conn.execute("INSERT INTO items VALUES (%s, %s::date)", (i, str(day)))
    server = postgres_db
    source = (
        f"  connector.class: postgres\n  database.hostname: {server.host}\n  database.port: {server.port}\n"
        f"  database.user: {server.user}\n  database.password: '{server.password}'\n"
        f"  database.dbname: {server.dbname}\n  topic.prefix: refused\n  slot.name: refused\n"
        "  table.include.list: public.items"
    )
    lake = tmp_path / "lake"
    sink = f"  type: delta\n  path: {lake}\n  tables:\n    public.items: {{keys: [id], target: items}}\n"
    job = _job(tmp_path, source, sink)

    line = _last_line(_run(job, where, 1), where)
    assert line.startswith("error: the sink failed: table items: column 'day' holds a value outside"), (
        f"{where}: {line}"
    )
    assert any(f"(key id={i}: " in line for i in refused), f"{where}: {line}"
    assert "errors.tolerance=all" in line and "errors.deadletter.table" in line, f"{where}: {line}"
    assert not DeltaTable.is_deltatable(str(lake / "items")) or _lake(lake) == {}, where

    dlq = tmp_path / "dead-letters"
    job = _job(tmp_path, source, sink + f"  errors.tolerance: all\n  errors.deadletter.table: {dlq}\n")
    _run(job, where, 0)
    assert _lake(lake) == {i: v for i, v in rows.items() if i not in refused}, where
    dead = _dead_letters(dlq)
    assert sorted(d["id"] for d in dead) == sorted(refused), f"{where}: {dead}"
    for d in dead:
        assert d["error"].startswith("table items: column 'day' holds a value outside"), f"{where}: {d}"
        assert f"(key id={d['id']}: " in d["error"] and d["event"]["op"] == "r", f"{where}: {d}"

    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        for i in refused:
            rows[i] = good(i)
            conn.execute("UPDATE items SET day = %s WHERE id = %s", (rows[i], i))
        for op, i, value in changes:
            if op == "delete":
                conn.execute("DELETE FROM items WHERE id = %s", (i,))
                rows.pop(i)
            else:
                conn.execute("UPDATE items SET day = %s WHERE id = %s", (value, i))
                rows[i] = value
    _run(job, where, 0)
    assert _lake(lake) == rows, where


def _lake(lake: Path) -> dict[int, datetime.date]:
    rows = DeltaTable(str(lake / "items")).to_pyarrow_table().to_pylist()
    return {r["id"]: r["day"] for r in rows}
