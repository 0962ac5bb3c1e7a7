"""The failover tests' shared set-up: a seeded workload on two tables, the MySQL → Delta job
that captures them, and the row-for-row comparison of the lake (read with deltalake, not the
product's own reader) with a source server.

Used by tests/jobs/test_failover.py (switch-overs and RESET MASTER between runs) and
tests/jobs/test_failover_live.py (a switch-over under a streaming `cdc run`, through a proxy).
The primary/replica pair itself is tests/rig/mariadb_pair.py.
"""

from __future__ import annotations

import decimal
import os
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.fs as pa_fs
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.rig import MariaDbServer
from tests.support.proc import run_cdc

DB = "shop"
ROWS = 300
# table → (key column, the columns compared)
TABLES = {"items": ("id", ("id", "name", "qty", "price")), "tags": ("code", ("code", "label", "n"))}
Rows = dict[Any, tuple[Any, ...]]


# -- source ---------------------------------------------------------------------------------------
def create_tables(server: MariaDbServer) -> None:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {DB}")
        cur.execute(
            f"CREATE TABLE {DB}.items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT, price DECIMAL(10,2))"
        )
        cur.execute(f"CREATE TABLE {DB}.tags (code VARCHAR(40) PRIMARY KEY, label VARCHAR(60) NOT NULL, n INT NULL)")
        cur.execute(
            f"INSERT INTO {DB}.items VALUES " + ", ".join(f"({i}, 'item{i}', {i}, {i}.25)" for i in range(1, ROWS + 1))
        )
        cur.execute(
            f"INSERT INTO {DB}.tags VALUES " + ", ".join(f"('tag-{i}', 'label {i}', {i})" for i in range(1, ROWS + 1))
        )


def source_rows(server: MariaDbServer, table: str) -> Rows:
    _key, columns = TABLES[table]
    with server.connect(database=DB) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(columns)} FROM {table}")
        return {r[0]: tuple(r[1:]) for r in cur.fetchall()}


class Workload:
    """Seeded random changes to rows that exist (so, after a run, rows the lake holds).

    Each call of `transactions(n)` commits n transactions: many-row updates, single-row updates
    on either table, deletes, inserts of new keys and of keys deleted earlier, primary-key
    changes, and multi-statement transactions over both tables.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.next_id = ROWS + 1

    def transactions(self, server: MariaDbServer, n: int) -> None:
        with server.connect(database=DB, autocommit=False) as conn, conn.cursor() as cur:
            cur.execute("SELECT id FROM items")
            items = {r[0] for r in cur.fetchall()}
            cur.execute("SELECT code FROM tags")
            tags = {r[0] for r in cur.fetchall()}
            gone_items: set[int] = set(range(1, self.next_id)) - items
            gone_tags = {f"tag-{i}" for i in range(1, self.next_id)} - tags
            for _ in range(n):
                for _ in range(self.rng.choice((1, 1, 1, 3))):  # some transactions hold several changes
                    self._one(cur, items, tags, gone_items, gone_tags)
                conn.commit()

    def _one(self, cur: Any, items: set[int], tags: set[str], gone_items: set[int], gone_tags: set[str]) -> None:
        rng = self.rng
        op = rng.choice(("bulk", "bulk", "update", "update", "delete", "insert", "reinsert", "rekey"))
        if op == "bulk" and len(items) > 60 and len(tags) > 60:
            ids = rng.sample(sorted(items), rng.randint(20, 60))
            cur.execute(
                "UPDATE items SET qty = qty + %s, price = price + 1.5, name = CONCAT('b', id) WHERE id IN %s",
                (rng.randint(1, 9), ids),
            )
            codes = rng.sample(sorted(tags), rng.randint(20, 60))
            cur.execute(
                "UPDATE tags SET n = IF(n IS NULL, 0, NULL), label = CONCAT(label, '+') WHERE code IN %s", (codes,)
            )
        elif op == "update" and items and tags:
            cur.execute(
                "UPDATE items SET qty = %s WHERE id = %s", (rng.randint(-1000, 1000), rng.choice(sorted(items)))
            )
            cur.execute(
                "UPDATE tags SET label = %s WHERE code = %s", (f"u{rng.random():.6f}", rng.choice(sorted(tags)))
            )
        elif op == "delete" and len(items) > 10 and len(tags) > 10:
            for i in rng.sample(sorted(items), 3):
                cur.execute("DELETE FROM items WHERE id = %s", (i,))
                items.discard(i)
                gone_items.add(i)
            for c in rng.sample(sorted(tags), 3):
                cur.execute("DELETE FROM tags WHERE code = %s", (c,))
                tags.discard(c)
                gone_tags.add(c)
        elif op == "reinsert" and gone_items and gone_tags:
            i, c = rng.choice(sorted(gone_items)), rng.choice(sorted(gone_tags))
            cur.execute("INSERT INTO items VALUES (%s, 'back', %s, 0.5)", (i, rng.randint(0, 99)))
            cur.execute("INSERT INTO tags VALUES (%s, 'back', NULL)", (c,))
            gone_items.discard(i)
            items.add(i)
            gone_tags.discard(c)
            tags.add(c)
        elif op == "rekey" and items:
            old, new = rng.choice(sorted(items)), self._new_id()
            cur.execute("UPDATE items SET id = %s WHERE id = %s", (new, old))
            items.discard(old)
            gone_items.add(old)
            items.add(new)
        else:  # insert (and the fallback when the table is too small for the chosen change)
            i = self._new_id()
            cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (i, f"new{i}", i, decimal.Decimal("1.10")))
            cur.execute("INSERT INTO tags VALUES (%s, %s, %s)", (f"tag-{i}", f"new {i}", i))
            items.add(i)
            tags.add(f"tag-{i}")

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


# -- the job --------------------------------------------------------------------------------------
def write_job(tmp_path: Path, server: MariaDbServer, **extra: str) -> Path:
    props = connector_props(replace(server, database=DB), topic__prefix="fo", **extra)
    return mysql_delta_job(tmp_path, "failover", props, {f"{DB}.items": "target: items", f"{DB}.tags": "target: tags"})


def edit_job(job: Path, **settings: str) -> None:
    """Change source settings in the job file, as a user would after a switch-over."""
    text = job.read_text()
    for name, value in settings.items():
        line = f"  {name}: '{value}'"
        pattern = re.compile(rf"^  {re.escape(name)}: .*$", re.M)
        text = pattern.sub(line, text) if pattern.search(text) else text.replace("source:\n", f"source:\n{line}\n", 1)
    job.write_text(text)


def point_job_at(job: Path, server: MariaDbServer) -> None:
    edit_job(job, **{"database.hostname": server.host, "database.port": str(server.port)})


def run_until_caught_up(job: Path, what: str, seed: int) -> None:
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    # Kept beside the job for a failure's post-mortem, one file per run.
    logs = sorted(job.parent.glob("until-caught-up-*.log"))
    (job.parent / f"until-caught-up-{len(logs) + 1}.log").write_text(f"{what}\n{res.stdout}\n{res.stderr}")
    assert res.returncode == 0, f"seed {seed}: the run {what} exited {res.returncode}:\n{res.stderr[-4000:]}"


# -- the lake -------------------------------------------------------------------------------------
def lake_rows(lake: Path, table: str) -> Rows:
    """The Delta table read with deltalake through Arrow's native local filesystem."""
    key, columns = TABLES[table]
    path = str(lake / table)
    dataset = DeltaTable(path).to_pyarrow_dataset(
        filesystem=pa_fs.SubTreeFileSystem(os.path.abspath(path), pa_fs.LocalFileSystem())
    )
    rows = [r for r in dataset.to_table().to_pylist() if not r.get("__deleted")]
    out = {r[key]: tuple(r[c] for c in columns[1:]) for r in rows}
    assert len(out) == len(rows), f"{table}: a key is stored more than once in the lake"
    return out


def differences(source: Rows, lake: Rows) -> list[str]:
    missing = sorted(set(source) - set(lake), key=str)
    extra = sorted(set(lake) - set(source), key=str)
    changed = sorted((k for k in set(source) & set(lake) if source[k] != lake[k]), key=str)
    out = [f"missing {len(missing)}: {missing[:8]}"] if missing else []
    out += [f"extra {len(extra)}: {extra[:8]}"] if extra else []
    out += [f"changed {len(changed)}: " + "; ".join(f"{k}: {source[k]} ≠ {lake[k]}" for k in changed[:5])] * bool(
        changed
    )
    return out


def assert_lake_equals(
    job: Path, tmp_path: Path, server: MariaDbServer, when: str, seed: int, *, verify: bool = True
) -> None:
    """Row-for-row equality of both tables, and (with `verify`) `cdc verify` reaching the same verdict."""
    diffs = {t: differences(source_rows(server, t), lake_rows(tmp_path / "lake", t)) for t in TABLES}
    if not verify:
        found = {t: d for t, d in diffs.items() if d}
        assert not found, f"seed {seed}: {when}, the lake differs from the source: {found}"
        return
    res = run_cdc("verify", str(job), timeout=180)
    verify_clean = res.returncode == 0 and f"{len(TABLES)} tables verified: 0 differences" in res.stdout
    found = {t: d for t, d in diffs.items() if d}
    assert not found, (
        f"seed {seed}: {when}, the lake differs from the source: {found}\ncdc verify:\n{res.stdout[-2000:]}"
    )
    assert verify_clean, (
        f"seed {seed}: {when}, the lake equals the source but cdc verify says:\n"
        f"{res.stdout[-2000:]}{res.stderr[-2000:]}"
    )
