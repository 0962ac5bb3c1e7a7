"""An initial snapshot stopped at a random chunk resumes at the next one (issue 22, deliverable 5).

Seeded-random (CDC_RESUME_SEED replays one): tables keyed by INT, VARCHAR under a
case-insensitive collation, BINARY, and composite keys; a writer updates, deletes, inserts and
changes keys while the first attempt reads; the task is stopped after a random number of `r`
records, written to again, then resumed (sometimes stopped and resumed a second time). Asserted:

- the committed offsets name the tables done and the last key out, and keep the first
  attempt's binlog position (streaming starts there);
- each resumed attempt emits exactly the rows left at its start (its `r` count), none of a done
  table: it resumed, it did not start over;
- a table's last record of a resumed attempt (the sink's mark) ranks at the first attempt's
  position;
- the events replayed by a sink that orders by position and clears rows older than a table's
  snapshot mark (cdc_spark's rules), and by a consumer that applies them in log order, both end
  in the database's rows.

And a `cdc run` killed with SIGKILL mid-snapshot, restarted with `--until-caught-up`: the `r` records
of the restart are the rows left, and the Delta lake (read with deltalake) equals the database.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pa_fs
import pytest
from deltalake import DeltaTable

from cdc.api import SourceRecord, Struct
from cdc_debezium.signals import keys
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_spark.decode.sequence import from_source
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, op
from tests.rig import MariaDbServer
from tests.support.proc import REPO, cdc_argv, kill_group_at, run_cdc


def _seed() -> int:
    return int(os.environ.get("CDC_RESUME_SEED", random.randrange(1 << 30)))


@dataclass
class Shape:
    """A table: its key columns' DDL and a generator of fresh key values."""

    name: str
    key_ddl: str
    key: tuple[str, ...]
    make_key: Callable[[random.Random], tuple[Any, ...]]


def _letters(rnd: random.Random, n: int) -> str:
    return "".join(rnd.choice("abcdefghijKLMNOPQRSTuvwxyz0123") for _ in range(n))


SHAPES = [
    Shape("t_int", "id INT NOT NULL", ("id",), lambda r: (r.randrange(1, 1 << 30),)),
    Shape(
        "t_varchar",
        "code VARCHAR(24) COLLATE utf8mb4_general_ci NOT NULL",
        ("code",),
        lambda r: (_letters(r, r.randint(1, 12)),),
    ),
    Shape("t_binary", "b BINARY(4) NOT NULL", ("b",), lambda r: (r.randbytes(4),)),
    Shape(
        "t_composite",
        "a INT NOT NULL, s VARCHAR(10) COLLATE utf8mb4_bin NOT NULL",
        ("a", "s"),
        lambda r: (r.randrange(0, 5), _letters(r, r.randint(0, 6))),
    ),
    Shape(
        "t_varbinary_int",
        "vb VARBINARY(6) NOT NULL, n INT NOT NULL",
        ("vb", "n"),
        lambda r: (r.randbytes(r.randint(0, 3)), r.randrange(0, 9)),
    ),
]


class Source:
    """The database side: the tables, their rows, and a random writer."""

    def __init__(self, server: MariaDbServer, rnd: random.Random, shapes: list[Shape]) -> None:
        self.server, self.rnd, self.shapes = server, rnd, shapes

    def run(self, sql: str, args: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            rows = list(cur.fetchall())
            conn.commit()
        return rows

    def create(self, rows: dict[str, int]) -> None:
        for s in self.shapes:
            key = ", ".join(s.key)
            self.run(f"CREATE TABLE {s.name} ({s.key_ddl}, v INT NOT NULL, note VARCHAR(20), PRIMARY KEY ({key}))")
            for _ in range(rows[s.name]):
                self.insert(s)
        self.run("CREATE TABLE marker (id INT PRIMARY KEY)")

    def _where(self, s: Shape) -> str:
        return " AND ".join(f"{c} = %s" for c in s.key)

    def insert(self, s: Shape) -> None:
        cols = ", ".join(s.key)
        marks = ", ".join(["%s"] * len(s.key))
        self.run(
            f"INSERT IGNORE INTO {s.name} ({cols}, v, note) VALUES ({marks}, %s, %s)",
            (*s.make_key(self.rnd), self.rnd.randrange(1000), _letters(self.rnd, 5)),
        )

    def some_key(self, s: Shape) -> tuple[Any, ...] | None:
        rows = self.run(f"SELECT {', '.join(s.key)} FROM {s.name} ORDER BY RAND({self.rnd.randrange(1 << 30)}) LIMIT 1")
        return tuple(rows[0]) if rows else None

    def write(self) -> None:
        """One random change: an update, a delete, an insert, or a primary-key change."""
        s = self.rnd.choice(self.shapes)
        kind = self.rnd.choice(["update", "update", "delete", "insert", "insert", "rekey"])
        if kind == "insert":
            self.insert(s)
            return
        key = self.some_key(s)
        if key is None:
            return
        if kind == "update":
            self.run(f"UPDATE {s.name} SET v = v + 1, note = %s WHERE {self._where(s)}", (_letters(self.rnd, 4), *key))
        elif kind == "delete":
            self.run(f"DELETE FROM {s.name} WHERE {self._where(s)}", key)
        else:
            sets = ", ".join(f"{c} = %s" for c in s.key)
            self.run(f"UPDATE IGNORE {s.name} SET {sets} WHERE {self._where(s)}", (*s.make_key(self.rnd), *key))

    def rows(self) -> dict[tuple[str, tuple[Any, ...]], tuple[int, str]]:
        out = {}
        for s in self.shapes:
            for row in self.run(f"SELECT {', '.join(s.key)}, v, note FROM {s.name}"):
                k = len(s.key)
                out[(s.name, _norm(tuple(row[:k])))] = (row[k], row[k + 1])
        return out

    def remaining(self, offset: dict[str, Any]) -> int:
        """The rows an attempt resuming from `offset` must read: those of the tables not done, and
        of the table in progress after its last key (compared by the server)."""
        done = set(offset["snapshot_tables_done"])
        table, last = offset.get("snapshot_table"), keys.loads(offset.get("snapshot_last_key"))
        n = 0
        for s in self.shapes:
            table_id = f"{self.server.database}.{s.name}"
            if table_id in done:
                continue
            if table_id == table and last is not None:
                cols = ", ".join(s.key)
                expr = cols if len(s.key) == 1 else f"({cols})"
                marks = ", ".join(["%s"] * len(s.key))
                bound = marks if len(s.key) == 1 else f"({marks})"
                n += self.run(f"SELECT COUNT(*) FROM {s.name} WHERE {expr} > {bound}", last)[0][0]
            else:
                n += self.run(f"SELECT COUNT(*) FROM {s.name}")[0][0]
        return n


def _norm(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, bytes | bytearray) else v for v in key)


def _table(r: SourceRecord) -> str:
    return r.topic.rsplit(".", 1)[1]


def _data(records: list[SourceRecord], shapes: list[Shape]) -> list[SourceRecord]:
    names = {s.name for s in shapes}
    return [r for r in records if r.topic.count(".") == 2 and _table(r) in names]


def _reads(records: list[SourceRecord], shapes: list[Shape]) -> list[SourceRecord]:
    return [r for r in _data(records, shapes) if r.value is not None and op(r) == "r"]


def _key_of(row: Struct | None, s: Shape) -> tuple[Any, ...]:
    assert row is not None
    return _norm(tuple(row.get(c) for c in s.key))


def _source(r: SourceRecord) -> dict[str, Any]:
    src = r.value.get("source")
    return {f.name: src.get(f.name) for f in src.schema.fields}


def _log_order(records: list[SourceRecord], shapes: list[Shape]) -> dict:
    """A consumer applying every event in log order (last writer wins)."""
    by = {s.name: s for s in shapes}
    rows: dict = {}
    for r in _data(records, shapes):
        if r.value is None:
            continue
        s, code = by[_table(r)], op(r)
        if code == "d":
            rows.pop((s.name, _key_of(r.value.get("before"), s)), None)
        else:
            a = r.value.get("after")
            rows[(s.name, _key_of(a, s))] = (a.get("v"), a.get("note"))
    return rows


def _by_sequence(records: list[SourceRecord], shapes: list[Shape]) -> dict:
    """cdc_spark's rules: the highest `__seq` wins per key (the later record on a tie), deletes are
    remembered with theirs, and a table's snapshot mark (its `last`/`last_in_data_collection`
    read) clears the rows and drops the events older than it."""
    by = {s.name: s for s in shapes}
    state: dict[str, dict[tuple[Any, ...], tuple[bytes, tuple[int, str] | None]]] = {s.name: {} for s in shapes}
    marks: dict[str, bytes] = {}
    for r in _data(records, shapes):
        if r.value is None:
            continue
        s, code, source = by[_table(r)], op(r), _source(r)
        seq, rows = from_source(source), state[s.name]
        if code == "r" and source["snapshot"] in ("last", "last_in_data_collection"):
            marks[s.name] = max(marks.get(s.name, seq), seq)
            state[s.name] = rows = {k: v for k, v in rows.items() if v[0] >= marks[s.name]}
        if s.name in marks and seq < marks[s.name]:
            continue
        if code == "d":
            key, value = _key_of(r.value.get("before"), s), None
        else:
            a = r.value.get("after")
            key, value = _key_of(a, s), (a.get("v"), a.get("note"))
        if key not in rows or seq >= rows[key][0]:
            rows[key] = (seq, value)
    return {(t, k): v[1] for t, rows in state.items() for k, v in rows.items() if v[1] is not None}


def _marker_seen(n: int) -> Callable[[list[SourceRecord]], bool]:
    return lambda records: any(
        r.value is not None and r.topic.endswith(".marker") and r.value.get("after").get("id") == n for r in records
    )


def _diff(want: dict, got: dict) -> str:
    extra, missing = set(got) - set(want), set(want) - set(got)
    differing = [k for k in want.keys() & got.keys() if want[k] != got[k]]
    return (
        f"extra {sorted(extra)[:5]} ({len(extra)}), missing {sorted(missing)[:5]} ({len(missing)}), "
        f"differing {differing[:5]}"
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_a_stopped_snapshot_resumes_at_the_next_chunk(mariadb_db: MariaDbServer, threads: int) -> None:
    seed = _seed()
    rnd = random.Random(seed)
    shapes = rnd.sample(SHAPES, k=rnd.randint(2, len(SHAPES)))
    source = Source(mariadb_db, rnd, shapes)
    source.create({s.name: rnd.randint(40, 160) for s in shapes})
    total = sum(source.run(f"SELECT COUNT(*) FROM {s.name}")[0][0] for s in shapes)
    props = connector_props(
        mariadb_db,
        snapshot__fetch__size=rnd.randint(3, 17),
        max__batch__size=rnd.randint(2, 9),
        snapshot__max__threads=threads,
    )
    offsets = MemoryOffsets()
    every: list[list[SourceRecord]] = []
    stops = rnd.randint(1, 2)
    first_position: tuple[str, int] | None = None
    context = f"seed {seed}, shapes {[s.name for s in shapes]}, props {props}"

    # The first attempt, written to while it reads; stopped after a random number of reads.
    cut = rnd.randint(1, max(1, total - 20))
    with TaskRunner(props, offsets) as run:
        deadline = time.monotonic() + 60
        while len(_reads(run.records, shapes)) < cut:
            assert time.monotonic() < deadline, f"{context}: only {len(_reads(run.records, shapes))} reads"
            run.poll_once()
            if rnd.random() < 0.3:
                source.write()
    every.append(run.records)
    stored = next(iter(offsets.stored.values()))
    assert stored.get("snapshot") == "INITIAL", f"{context}: the snapshot completed before the stop ({cut} of {total})"
    assert "snapshot_tables_done" in stored, context
    first_position = (stored["file"], stored["pos"])

    for attempt in range(stops):
        for _ in range(rnd.randint(0, 12)):  # changes between the attempts (before the next snapshot point)
            source.write()
        stored = next(iter(offsets.stored.values()))
        resuming = bool(stored.get("snapshot"))  # else an earlier attempt finished the snapshot
        left = source.remaining(stored) if resuming else 0
        done = set(stored.get("snapshot_tables_done", [f"{mariadb_db.database}.{s.name}" for s in shapes]))
        final = attempt == stops - 1
        stop_at = min(left, rnd.randint(1, 30))
        with TaskRunner(props, offsets) as run:
            if final:
                run.poll_until(lambda _: run.task.streaming is not None, timeout=60, what="the end of the snapshot")
            else:
                run.poll_until(
                    lambda rs, n=stop_at: len(_reads(rs, shapes)) >= n or run.task.streaming is not None,
                    timeout=60,
                    what="reads",
                )
            if final:
                source.run("INSERT INTO marker VALUES (1)")
                run.poll_until(_marker_seen(1), timeout=60, what="marker 1")
                for _ in range(rnd.randint(0, 10)):  # changes while streaming
                    source.write()
                source.run("INSERT INTO marker VALUES (2)")
                run.poll_until(_marker_seen(2), timeout=60, what="marker 2")
        every.append(run.records)
        reads = _reads(run.records, shapes)
        # Resumed, not restarted: no row of a done table again.
        assert not [r for r in reads if f"{mariadb_db.database}.{_table(r)}" in done], context
        if final or run.task.streaming is not None:
            assert len(reads) == left, f"{context}: attempt {attempt + 2} read {len(reads)} rows, {left} were left"
        else:
            assert len(reads) <= left, context
        # Every snapshot offset keeps the first attempt's position (streaming starts there).
        for r in run.records:
            if r.source_offset.get("snapshot"):
                assert (r.source_offset["file"], r.source_offset["pos"]) == first_position, context
        # A table's mark ranks at the first attempt's position, so it clears none of its rows.
        for r in reads:
            if _source(r)["snapshot"] in ("last", "last_in_data_collection"):
                assert (_source(r)["file"], _source(r)["pos"]) == first_position, context

    log = [r for records in every for r in records]
    want = source.rows()
    by_seq, in_order = _by_sequence(log, shapes), _log_order(log, shapes)
    assert by_seq == want, f"{context}: a position-ordered sink: {_diff(want, by_seq)}"
    assert in_order == want, f"{context}: a log-order consumer: {_diff(want, in_order)}"


def test_an_offset_without_progress_keys_snapshots_again(mariadb_db: MariaDbServer) -> None:
    """An interrupted snapshot's offset from Debezium (or an older cdc), without progress keys: all is read again."""
    source = Source(mariadb_db, random.Random(7), [SHAPES[0]])
    source.create({"t_int": 30})
    props = connector_props(mariadb_db, snapshot__fetch__size=4, max__batch__size=3)
    offsets = MemoryOffsets()
    with TaskRunner(props, offsets) as run:
        run.poll_until(lambda rs: len(_reads(rs, [SHAPES[0]])) >= 10, what="10 reads")
    key, stored = next(iter(offsets.stored.items()))
    assert stored.get("snapshot_table") == f"{mariadb_db.database}.t_int" and stored.get("snapshot_last_key")
    offsets.stored[key] = {k: v for k, v in stored.items() if not k.startswith("snapshot_")}
    with TaskRunner(props, offsets) as again:
        again.poll_until(lambda _: again.task.streaming is not None, what="the end of the snapshot")
    assert len(_reads(again.records, [SHAPES[0]])) == 30


# -- kill -9 of `cdc run` during its snapshot, the lake read back --------------------------------------------------

KILL_TABLES = {
    "bins": ("b BINARY(4) NOT NULL, n INT NOT NULL", ("b", "n"), "UNHEX(LPAD(HEX(seq * 7919), 8, '0')), seq % 3"),
    "codes": ("code VARCHAR(24) COLLATE utf8mb4_general_ci NOT NULL", ("code",), "CONCAT(IF(seq % 2, 'K', 'k'), seq)"),
    "items": ("id INT NOT NULL", ("id",), "seq"),
}


def _log_rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute(sql, args).fetchall()


def _stored_offset(db: Path, connector: str) -> dict[str, Any]:
    rows = _log_rows(db, "SELECT key, value FROM records WHERE topic = 'connect-offsets' ORDER BY partition, offset")
    values = [json.loads(v) for k, v in rows if v is not None and json.loads(k)[0] == connector]
    return values[-1]


def _payload(value: bytes) -> dict[str, Any]:
    v = json.loads(value)
    return v["payload"] if isinstance(v, dict) and "payload" in v and "schema" in v else v


@pytest.mark.slow
def test_a_killed_snapshot_resumes_and_the_lake_equals_the_database(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    seed = _seed()
    rnd = random.Random(seed)
    source = Source(mariadb_db, rnd, [])
    sizes = {"bins": rnd.randint(1000, 4000), "codes": rnd.randint(1000, 4000), "items": rnd.randint(8000, 20000)}
    for name, (ddl, key, expr) in KILL_TABLES.items():
        source.run(f"CREATE TABLE {name} ({ddl}, v INT NOT NULL, note VARCHAR(20), PRIMARY KEY ({', '.join(key)}))")
        source.run(f"INSERT INTO {name} SELECT {expr}, seq % 101, CONCAT('n', seq) FROM seq_1_to_{sizes[name]}")
    shapes = [Shape(name, ddl, key, lambda r: ()) for name, (ddl, key, _) in KILL_TABLES.items()]
    source.shapes = shapes
    props = connector_props(mariadb_db, topic__prefix="rsk", snapshot__fetch__size=rnd.choice([200, 500, 900]))
    settings = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    state, lake = tmp_path / "state", tmp_path / "lake"
    job = tmp_path / "job.yaml"
    job.write_text(
        f"name: rsk\nsource:\n{settings}\ntransport:\n  state.dir: {state}\nsink:\n  type: delta\n  path: {lake}\n"
    )
    db = state / "cdc.db"
    total = sum(sizes.values())
    # The log moves in whole transactions, which grow while the snapshot outruns the log's writes (each
    # one about the size of all before it, up to 20k records): a point in the first third is passed at a
    # boundary before the snapshot's end. Points later could be passed only by its last transaction.
    at = rnd.randint(1500, max(1600, total // 3))
    topics = tuple(f"rsk.{mariadb_db.database}.{name}" for name in KILL_TABLES)
    marks = ",".join("?" * len(topics))

    def in_log() -> int:
        if not db.exists():
            return 0
        try:
            return int(_log_rows(db, f"SELECT count(*) FROM records WHERE topic IN ({marks})", topics)[0][0])
        except sqlite3.Error:
            return 0

    log = tmp_path / "run1.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cdc_argv("run", str(job)), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
    kill_group_at(proc, in_log, at, 300, lambda: f"seed {seed}:\n{log.read_text()[-3000:]}")
    context = f"seed {seed}, sizes {sizes}, killed after {in_log()} records"
    stored = _stored_offset(db, "rsk")
    assert stored.get("snapshot") == "INITIAL" and "snapshot_tables_done" in stored, f"{context}: {stored}"
    ends = dict(
        ((t, p), o)
        for t, p, o in _log_rows(
            db,
            f"SELECT topic, partition, max(offset) FROM records WHERE topic IN ({marks}) GROUP BY topic, partition",
            topics,
        )
    )

    # Changes before the restart: deletes (among the rows read and not), updates, inserts.
    source.run("DELETE FROM items WHERE id %% 97 = %s", (rnd.randrange(97),))
    source.run("UPDATE items SET v = v + 1000, note = 'upd' WHERE id %% 89 = %s", (rnd.randrange(89),))
    source.run("DELETE FROM codes WHERE RIGHT(code, 2) = %s", (f"{rnd.randrange(100):02d}",))
    source.run("UPDATE bins SET v = -v WHERE n = %s", (rnd.randrange(3),))
    source.run("INSERT INTO items VALUES (%s, 1, 'new'), (%s, 2, 'new')", (total + 7, total + 8))
    source.run("INSERT INTO codes VALUES ('NEW1', 1, 'new'), ('new2', 2, 'new')")
    left = source.remaining(stored)

    res = run_cdc("run", str(job), "--until-caught-up", timeout=900)
    assert res.returncode == 0, f"{context}: {res.stderr[-3000:]}"
    reads = 0
    for topic, partition, offset, value in _log_rows(
        db, f"SELECT topic, partition, offset, value FROM records WHERE topic IN ({marks})", topics
    ):
        if value is not None and offset > ends.get((topic, partition), -1) and _payload(value).get("op") == "r":
            reads += 1
    assert reads == left, f"{context}: the restart read {reads} rows, {left} were left (stored offset {stored})"
    for shape in shapes:
        path = lake / f"rsk_{mariadb_db.database}_{shape.name}"
        fs = pa_fs.SubTreeFileSystem(str(path), pa_fs.LocalFileSystem())
        table = DeltaTable(str(path)).to_pyarrow_dataset(filesystem=fs).to_table(columns=[*shape.key, "v", "note"])
        got = {(shape.name, _norm(tuple(r[c] for c in shape.key))): (r["v"], r["note"]) for r in table.to_pylist()}
        want = {k: v for k, v in source.rows().items() if k[0] == shape.name}
        assert got == want, f"{context}: {shape.name}: {_diff(want, got)}"


def test_the_progress_keys_round_trip_and_only_while_snapshotting() -> None:
    rnd = random.Random(_seed())
    key = keys.dumps((rnd.randbytes(4), _letters(rnd, 5), rnd.randrange(1 << 40)))
    stored = MySqlOffsetContext("mysql-bin.000003", 1234, "0-1-9", snapshot=True, tables_done=("d.a",)).progress(
        ("d.a", "d.b"), "d.c", key
    )
    assert stored["snapshot"] == "INITIAL" and stored["file"] == "mysql-bin.000003" and stored["pos"] == 1234
    loaded = MySqlOffsetContext.load(json.loads(json.dumps(stored)))
    assert (loaded.tables_done, loaded.snapshot_table, loaded.snapshot_last_key) == (("d.a", "d.b"), "d.c", key)
    assert keys.loads(loaded.snapshot_last_key) == keys.loads(key)
    assert loaded.offset() == stored
    assert not any(k.startswith("snapshot_") for k in loaded.completed().offset())
    old = MySqlOffsetContext.load({"file": "f.000001", "pos": 4, "snapshot": "INITIAL"})
    assert old.snapshot and old.tables_done is None  # Debezium's or an older cdc's: snapshotted again
    streaming = MySqlOffsetContext.load({"file": "f.000001", "pos": 4, "snapshot_tables_done": ["x.y"]})
    assert streaming.tables_done is None and "snapshot_tables_done" not in streaming.offset()
