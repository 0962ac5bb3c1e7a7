"""Issue 16, defect 3: the lake must follow the source across a change of binlog lineage.

The sink ranks MySQL events by binlog file number and position. A GTID switch-over to a
replica (whose binlog numbering is its own, here lower than the old primary's) or a RESET
MASTER (numbering restarts at 000001) makes new changes rank below the rows the lake already
holds, and an order guard that trusts positions alone would drop them. These tests run
`cdc run --until-caught-up` into Delta across such changes, with a seeded random workload of
many-row updates, deletes, inserts, re-inserted keys and primary-key changes on an INT-keyed
and a VARCHAR-keyed table, and require the lake to equal the source row for row (read with
deltalake, not the product's own reader), and `cdc verify` to agree.

Set CDC_FAILOVER_SEED to replay a workload; the seed is in every failure message.
"""

from __future__ import annotations

import decimal
import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.fs as pa_fs
import pytest
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.rig import MariaDbServer
from tests.rig import mariadb_pair as pair_rig
from tests.rig._common import unavailable
from tests.rig.mariadb import local_binaries, spawn_local
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # several `cdc run`s, each starting Spark

DB = "shop"
ROWS = 300
# table → (key column, the columns compared)
TABLES = {"items": ("id", ("id", "name", "qty", "price")), "tags": ("code", ("code", "label", "n"))}
Rows = dict[Any, tuple[Any, ...]]


def _seed() -> int:
    return int(os.environ.get("CDC_FAILOVER_SEED", random.randrange(1 << 30)))


# -- source ---------------------------------------------------------------------------------------
def _create_tables(server: MariaDbServer) -> None:
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


def _source_rows(server: MariaDbServer, table: str) -> Rows:
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
def _write_job(tmp_path: Path, server: MariaDbServer, **extra: str) -> Path:
    props = connector_props(replace(server, database=DB), topic__prefix="fo", **extra)
    return mysql_delta_job(tmp_path, "failover", props, {f"{DB}.items": "target: items", f"{DB}.tags": "target: tags"})


def _edit_job(job: Path, **settings: str) -> None:
    """Change source settings in the job file, as a user would after a switch-over."""
    text = job.read_text()
    for name, value in settings.items():
        line = f"  {name}: '{value}'"
        pattern = re.compile(rf"^  {re.escape(name)}: .*$", re.M)
        text = pattern.sub(line, text) if pattern.search(text) else text.replace("source:\n", f"source:\n{line}\n", 1)
    job.write_text(text)


def _point_job_at(job: Path, server: MariaDbServer) -> None:
    _edit_job(job, **{"database.hostname": server.host, "database.port": str(server.port)})


def _run(job: Path, what: str, seed: int) -> None:
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, f"seed {seed}: the run {what} exited {res.returncode}:\n{res.stderr[-4000:]}"


# -- the lake -------------------------------------------------------------------------------------
def _lake_rows(lake: Path, table: str) -> Rows:
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


def _differences(source: Rows, lake: Rows) -> list[str]:
    missing = sorted(set(source) - set(lake), key=str)
    extra = sorted(set(lake) - set(source), key=str)
    changed = sorted((k for k in set(source) & set(lake) if source[k] != lake[k]), key=str)
    out = [f"missing {len(missing)}: {missing[:8]}"] if missing else []
    out += [f"extra {len(extra)}: {extra[:8]}"] if extra else []
    out += [f"changed {len(changed)}: " + "; ".join(f"{k}: {source[k]} ≠ {lake[k]}" for k in changed[:5])] * bool(
        changed
    )
    return out


def _assert_lake_equals(
    job: Path, tmp_path: Path, server: MariaDbServer, when: str, seed: int, *, verify: bool = True
) -> None:
    """Row-for-row equality of both tables, and (with `verify`) `cdc verify` reaching the same verdict."""
    diffs = {t: _differences(_source_rows(server, t), _lake_rows(tmp_path / "lake", t)) for t in TABLES}
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


def _file_number(position: tuple[str, int]) -> int:
    return int(position[0].rsplit(".", 1)[1])


# -- the tests ------------------------------------------------------------------------------------
def test_switch_over_to_a_gtid_replica_and_back(tmp_path: Path) -> None:
    """Snapshot the primary; switch over to the replica (binlog 000001 against the primary's
    000005) with changes on both sides of the switch; then switch back to the first server, whose
    binlog holds another mysql-bin.000001 under the stored file name.

    Three runs only (each starts Spark): the changes made on the primary before the switch reach
    the lake through the replica's binlog, where they were replicated under their own GTIDs.
    """
    seed = _seed()
    work = Workload(random.Random(seed))
    with pair_rig.spawn_pair() as pair:
        primary, replica = pair.primary, pair.replica
        with primary.connect(database=None) as conn, conn.cursor() as cur:
            for _ in range(4):  # the replica's binlog stays at 000001: its positions rank lower
                cur.execute("FLUSH BINARY LOGS")
        _create_tables(primary)
        job = _write_job(tmp_path, primary)
        _run(job, "snapshotting the primary", seed)
        _assert_lake_equals(job, tmp_path, primary, "after the snapshot", seed, verify=False)

        # Switch-over: writes stop, the replica catches up, the primary goes away, the replica
        # takes writes and the job is pointed at it. Both sides change rows the lake holds.
        work.transactions(primary, 20)
        pair_rig.wait_caught_up(replica, primary)
        old_position = pair_rig.binlog_position(primary)
        primary.stop()
        pair_rig.promote(replica)
        assert _file_number(pair_rig.binlog_position(replica)) < _file_number(old_position), "test set-up"
        _point_job_at(job, replica)
        work.transactions(replica, 20)
        _run(job, "after the switch-over to the replica", seed)
        _assert_lake_equals(job, tmp_path, replica, "after the switch-over", seed)

        # And back: the old primary returns as a replica of the new one, catches up, takes over.
        primary.restart()
        pair_rig.replicate(primary, replica)
        pair_rig.wait_caught_up(primary, replica)
        with replica.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL read_only = ON")
        pair_rig.promote(primary)
        _point_job_at(job, primary)
        work.transactions(primary, 15)
        _run(job, "after switching back to the first server", seed)
        _assert_lake_equals(job, tmp_path, primary, "after switching back", seed)


@contextmanager
def _private_server() -> Iterator[MariaDbServer]:
    """A server of its own: RESET MASTER on the session's shared server would break other tests."""
    if local_binaries() is None:
        unavailable("RESET MASTER needs a private MariaDB from the local mariadbd and mariadb-install-db binaries")
    with spawn_local() as server:
        yield server


def _gtid_seq(server: MariaDbServer) -> int:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@global.gtid_binlog_pos")
        pos = str(cur.fetchone()[0] or "")
    return max((int(g.rsplit("-", 1)[1]) for g in pos.split(",") if g), default=0)


def test_reset_master_restarts_the_binlog(tmp_path: Path) -> None:
    """RESET MASTER: binlog 000001 again and GTID sequence numbers from 1 again.

    More transactions follow the reset than the stored GTID position counts, so the stored GTID
    names a transaction of the new history: resuming "after" it would skip the first ones
    silently. Under the default snapshot.mode the run must either follow the source exactly or
    refuse with advice; with snapshot.mode=when_needed (the documented way to recover a lost
    binlog) the lake must end equal to the source.
    """
    seed = _seed()
    work = Workload(random.Random(seed))
    with _private_server() as server:
        with server.connect(database=None) as conn, conn.cursor() as cur:
            for _ in range(3):
                cur.execute("FLUSH BINARY LOGS")
        _create_tables(server)
        job = _write_job(tmp_path, server)
        work.transactions(server, 20)
        _run(job, "snapshotting", seed)
        _assert_lake_equals(job, tmp_path, server, "before RESET MASTER", seed, verify=False)

        stored_seq = _gtid_seq(server)
        with server.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("RESET MASTER")
        work.transactions(server, stored_seq + 10)
        assert _gtid_seq(server) > stored_seq, "test set-up: the new history must pass the stored GTID"

        res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
        if res.returncode == 0:
            _assert_lake_equals(job, tmp_path, server, "after RESET MASTER (snapshot.mode=initial)", seed)
            return
        last = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
        assert "snapshot" in last and "Traceback" not in res.stderr[-3000:], (
            f"seed {seed}: after RESET MASTER the run refused without one line of advice:\n{res.stderr[-4000:]}"
        )
        _edit_job(job, **{"snapshot.mode": "when_needed"})
        _run(job, "after RESET MASTER with snapshot.mode=when_needed", seed)
        _assert_lake_equals(job, tmp_path, server, "after RESET MASTER (snapshot.mode=when_needed)", seed)


def test_reset_master_while_the_job_streams_stops_it_and_a_new_snapshot_makes_the_lake_equal(tmp_path: Path) -> None:
    """Issue 31: a RESET MASTER *while* `cdc run` streams. Before, the reader went on from its old
    position in the new binlog: the changes written below it never arrived and the job ran on.
    Now the connector sees the break (lineage_watch.py) and the run stops with one line naming it
    and snapshot.mode=when_needed; with that mode the next run takes a new snapshot and the lake
    (read with deltalake) equals the source. The seed varies the changes before and after the
    reset, an idle pause after it, and a rotation."""
    from tests.support.proc import CdcProcess, wait_for

    seed = _seed()
    rng = random.Random(seed)
    work = Workload(random.Random(seed))
    with _private_server() as server:
        _create_tables(server)
        job = _write_job(tmp_path, server)
        _run(job, "snapshotting", seed)
        run = CdcProcess("run", str(job), log_path=tmp_path / "streaming.log")
        try:
            wait_for(lambda: "Streaming binlog from" in run.output(), 120, "streaming to start", run)
            work.transactions(server, rng.randint(0, 15))
            with server.connect(database=None) as conn, conn.cursor() as cur:
                cur.execute("RESET MASTER")
            if rng.random() < 0.5:
                time.sleep(rng.uniform(0.5, 3.0))  # idle: the periodic check, not a GTID, finds it
            work.transactions(server, rng.randint(1, 15))
            if rng.random() < 0.5:
                with server.connect(database=None) as conn, conn.cursor() as cur:
                    cur.execute("FLUSH BINARY LOGS")
                work.transactions(server, rng.randint(1, 5))
            deadline = time.monotonic() + 120
            while run.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not run.alive(), f"seed {seed}: the job streamed on after RESET MASTER:\n{run.output()[-3000:]}"
            code = run.proc.returncode
        finally:
            if run.alive():
                run.kill9()
        output = run.output()
        assert code != 0, f"seed {seed}: the job ended with 0 after RESET MASTER:\n{output[-3000:]}"
        assert "snapshot.mode=when_needed" in output and "RESET MASTER" in output, (
            f"seed {seed}: the stop does not say what happened and what to do:\n{output[-3000:]}"
        )
        _edit_job(job, **{"snapshot.mode": "when_needed"})
        _run(job, "after the stop, with snapshot.mode=when_needed", seed)
        _assert_lake_equals(job, tmp_path, server, "after RESET MASTER while streaming", seed)
