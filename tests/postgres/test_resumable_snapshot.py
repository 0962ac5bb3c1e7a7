"""A PostgreSQL initial snapshot stopped at a random chunk resumes at the next one (issue 22, deliverable 5).

Seeded-random (CDC_RESUME_SEED replays one): tables keyed by int, text, bytea, uuid and
composite keys, and one without a primary key (read whole); NULLs in the non-key columns; a
leading column sometimes left out by column.exclude.list (the row's columns then have a gap); a
writer updates, deletes, inserts and changes keys while the first attempt reads; the task is
stopped after a random number of `r` records, written to again, then resumed (sometimes
stopped and resumed a second time). Asserted:

- the committed offsets name the tables done and the last key out, and keep the first
  attempt's LSN P1 (the slot's consistent point; streaming starts there);
- each resumed attempt emits exactly the rows left at its start (its `r` count), none of a done
  table: it resumed, it did not start over;
- a resumed attempt's rows rank at its new point P2, past P1, and a table's last record (the
  sink's mark) ranks at P1;
- the events replayed by a sink that orders by position and clears rows older than a table's
  snapshot mark (cdc_spark's rules), and by a consumer that applies them in log order, both end
  in the database's rows.

An offset without the progress keys, snapshot.mode=always and a dropped slot snapshot again
from the start. And a `cdc run` (PostgreSQL to Delta) killed with SIGKILL mid-snapshot,
restarted with `--until-caught-up`: the `r` records of the restart are the rows left, and the
Delta lake (read with deltalake) equals the database.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.fs as pa_fs
import pytest
from deltalake import DeltaTable

from cdc.api import SourceRecord, Struct
from cdc_debezium.signals import keys
from cdc_postgres.offset_context import PostgresOffsetContext, progress
from cdc_postgres.replication import ReplicationConnection, ReplicationError
from cdc_spark.decode.sequence import from_source
from tests.postgres.harness import TaskRunner, connector_props, op
from tests.rig import PostgresServer
from tests.support.proc import REPO, cdc_argv, kill_group_at, run_cdc
from tests.support.task_context import MemoryOffsets


def _seed() -> int:
    return int(os.environ.get("CDC_RESUME_SEED", random.randrange(1 << 30)))


@dataclass
class Shape:
    """A table: its key columns (name, SQL type), whether they are its primary key, a fresh key maker."""

    name: str
    key: tuple[tuple[str, str], ...]
    make_key: Callable[[random.Random], tuple[Any, ...]]
    primary: bool = True

    @property
    def cols(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.key)


def _letters(rnd: random.Random, n: int) -> str:
    return "".join(rnd.choice("abcdefghijKLMNOPQRSTuvwxyz0123 _") for _ in range(n))


SHAPES = [
    Shape("t_int", (("id", "int"),), lambda r: (r.randrange(-(1 << 30), 1 << 30),)),
    Shape("t_text", (("code", "text"),), lambda r: (_letters(r, r.randint(1, 12)),)),
    Shape("t_bytea", (("b", "bytea"),), lambda r: (r.randbytes(r.randint(0, 5)),)),
    Shape("t_uuid", (("u", "uuid"),), lambda r: (str(uuid.UUID(int=r.getrandbits(128))),)),
    Shape("t_composite", (("a", "int"), ("s", "text")), lambda r: (r.randrange(0, 5), _letters(r, r.randint(0, 6)))),
    Shape("t_nokey", (("id", "bigint"),), lambda r: (r.randrange(1 << 40),), primary=False),
]


def _norm(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


class Source:
    """The database side: the tables, their rows, and a random writer."""

    def __init__(self, server: PostgresServer, rnd: random.Random, shapes: list[Shape]) -> None:
        self.server, self.rnd, self.shapes = server, rnd, shapes
        self.conn = server.connect()

    def run(self, sql: str, args: tuple[Any, ...] | list[Any] | None = None) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []

    def create(self, rows: dict[str, int]) -> None:
        for s in self.shapes:
            cols = ", ".join(f"{c} {t} NOT NULL" for c, t in s.key)
            pk = f", PRIMARY KEY ({', '.join(s.cols)})" if s.primary else ""
            # `pad` first: excluded by column.exclude.list, the captured columns sit behind a gap in the row.
            self.run(f"CREATE TABLE {s.name} (pad int DEFAULT 0, {cols}, v int, note text{pk})")
            if not s.primary:
                self.run(f"ALTER TABLE {s.name} REPLICA IDENTITY FULL")
            for _ in range(rows[s.name]):
                self.insert(s)
        self.run("CREATE TABLE marker (id int PRIMARY KEY)")

    def _where(self, s: Shape) -> str:
        return " AND ".join(f"{c} = %s" for c in s.cols)

    def _value(self) -> tuple[Any, Any]:
        v = None if self.rnd.random() < 0.2 else self.rnd.randrange(1000)
        return v, None if self.rnd.random() < 0.3 else _letters(self.rnd, 5)

    def insert(self, s: Shape) -> None:
        cols = ", ".join(s.cols)
        marks = ", ".join(["%s"] * len(s.key))
        conflict = " ON CONFLICT DO NOTHING" if s.primary else ""
        self.run(
            f"INSERT INTO {s.name} ({cols}, v, note) VALUES ({marks}, %s, %s){conflict}",
            (*s.make_key(self.rnd), *self._value()),
        )

    def some_key(self, s: Shape) -> tuple[Any, ...] | None:
        self.run(f"SELECT setseed({self.rnd.random() * 2 - 1})")
        rows = self.run(f"SELECT {', '.join(s.cols)} FROM {s.name} ORDER BY random() LIMIT 1")
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
            self.run(f"UPDATE {s.name} SET v = v + 1, note = %s WHERE {self._where(s)}", (self._value()[1], *key))
        elif kind == "delete":
            self.run(f"DELETE FROM {s.name} WHERE {self._where(s)}", key)
        else:
            sets = ", ".join(f"{c} = %s" for c in s.cols)
            with contextlib.suppress(psycopg.errors.UniqueViolation):
                self.run(f"UPDATE {s.name} SET {sets} WHERE {self._where(s)}", (*s.make_key(self.rnd), *key))

    def rows(self) -> dict[tuple[str, tuple[Any, ...]], tuple[Any, Any]]:
        out = {}
        for s in self.shapes:
            for row in self.run(f"SELECT {', '.join(s.cols)}, v, note FROM {s.name}"):
                k = len(s.key)
                out[(s.name, tuple(_norm(v) for v in row[:k]))] = (row[k], row[k + 1])
        return out

    def remaining(self, offset: dict[str, Any]) -> int:
        """The rows an attempt resuming from `offset` must read: those of the tables not done, and
        of the table in progress after its last key (compared by the server in the key's types)."""
        done = set(offset["snapshot_tables_done"])
        table, last = offset.get("snapshot_table"), keys.loads(offset.get("snapshot_last_key"))
        n = 0
        for s in self.shapes:
            if f"public.{s.name}" in done:
                continue
            if f"public.{s.name}" == table and last is not None:
                assert s.primary, f"{s.name} has no primary key, but the offset names a key of it: {offset}"
                cols = ", ".join(s.cols)
                bound = ", ".join(f"%s::{t}" for _, t in s.key)
                n += self.run(f"SELECT count(*) FROM {s.name} WHERE ({cols}) > ({bound})" if len(s.key) > 1
                              else f"SELECT count(*) FROM {s.name} WHERE {cols} > {bound}", last)[0][0]  # fmt: skip
            else:
                n += self.run(f"SELECT count(*) FROM {s.name}")[0][0]
        return n


def _table(r: SourceRecord) -> str:
    return r.topic.rsplit(".", 1)[1]


def _data(records: list[SourceRecord], shapes: list[Shape]) -> list[SourceRecord]:
    names = {s.name for s in shapes}
    return [r for r in records if r.topic.count(".") == 2 and _table(r) in names and r.value is not None]


def _reads(records: list[SourceRecord], shapes: list[Shape]) -> list[SourceRecord]:
    return [r for r in _data(records, shapes) if op(r) == "r"]


def _key_of(row: Struct | None, s: Shape) -> tuple[Any, ...]:
    assert row is not None
    return tuple(_norm(row.get(c)) for c in s.cols)


def _source(r: SourceRecord) -> dict[str, Any]:
    src = r.value.get("source")
    return {f.name: src.get(f.name) for f in src.schema.fields}


def _log_order(records: list[SourceRecord], shapes: list[Shape]) -> dict:
    """A consumer applying every event in log order (last writer wins)."""
    by = {s.name: s for s in shapes}
    rows: dict = {}
    for r in _data(records, shapes):
        s, code = by[_table(r)], op(r)
        if code == "d":
            rows.pop((s.name, _key_of(r.value.get("before"), s)), None)
        else:
            if code == "u" and r.value.get("before") is not None:  # REPLICA IDENTITY FULL: the old key goes
                rows.pop((s.name, _key_of(r.value.get("before"), s)), None)
            a = r.value.get("after")
            rows[(s.name, _key_of(a, s))] = (a.get("v"), a.get("note"))
    return rows


def _by_sequence(records: list[SourceRecord], shapes: list[Shape]) -> dict:
    """cdc_spark's rules: the highest `__seq` wins per key (the later record on a tie), deletes are
    remembered with theirs, and a table's snapshot mark (its `last`/`last_in_data_collection`
    read) clears the rows and drops the events older than it."""
    by = {s.name: s for s in shapes}
    state: dict[str, dict[tuple[Any, ...], tuple[bytes, tuple[Any, Any] | None]]] = {s.name: {} for s in shapes}
    marks: dict[str, bytes] = {}

    def put(rows: dict, key: tuple[Any, ...], seq: bytes, value: tuple[Any, Any] | None) -> None:
        if key not in rows or seq >= rows[key][0]:
            rows[key] = (seq, value)

    for r in _data(records, shapes):
        s, code, source = by[_table(r)], op(r), _source(r)
        seq, rows = from_source(source), state[s.name]
        if code == "r" and source["snapshot"] in ("last", "last_in_data_collection"):
            marks[s.name] = max(marks.get(s.name, seq), seq)
            state[s.name] = rows = {k: v for k, v in rows.items() if v[0] >= marks[s.name]}
        if s.name in marks and seq < marks[s.name]:
            continue
        if code == "d":
            put(rows, _key_of(r.value.get("before"), s), seq, None)
            continue
        a = r.value.get("after")
        before = r.value.get("before") if code == "u" else None
        if before is not None and _key_of(before, s) != _key_of(a, s):  # a key change without a delete event
            put(rows, _key_of(before, s), seq, None)
        put(rows, _key_of(a, s), seq, (a.get("v"), a.get("note")))
    return {(t, k): v[1] for t, rows in state.items() for k, v in rows.items() if v[1] is not None}


def _marker_seen(n: int) -> Callable[[list[SourceRecord]], bool]:
    return lambda records: any(
        r.value is not None and r.topic.endswith(".marker") and op(r) == "c" and r.value.get("after").get("id") == n
        for r in records
    )


def _diff(want: dict, got: dict) -> str:
    extra, missing = set(got) - set(want), set(want) - set(got)
    differing = [(k, want[k], got[k]) for k in want.keys() & got.keys() if want[k] != got[k]]
    return (
        f"extra {sorted(extra, key=repr)[:5]} ({len(extra)}), missing {sorted(missing, key=repr)[:5]} "
        f"({len(missing)}), differing {differing[:5]} ({len(differing)})"
    )


def _finished(records: list[SourceRecord]) -> bool:
    """The snapshot's `last` read is among `records` (the task may stream before its reads are all polled)."""
    return any(r.value is not None and op(r) == "r" and _source(r)["snapshot"] == "last" for r in records)


def _stored(offsets: MemoryOffsets) -> dict[str, Any]:
    return next(iter(offsets.stored.values()))


def test_a_stopped_snapshot_resumes_at_the_next_chunk(postgres_db: PostgresServer) -> None:
    seed = _seed()
    rnd = random.Random(seed)
    shapes = rnd.sample(SHAPES, k=rnd.randint(2, len(SHAPES)))
    source = Source(postgres_db, rnd, shapes)
    source.create({s.name: rnd.randint(40, 160) for s in shapes})
    total = sum(source.run(f"SELECT count(*) FROM {s.name}")[0][0] for s in shapes)
    props = connector_props(
        postgres_db,
        snapshot__fetch__size=rnd.randint(3, 17),
        max__batch__size=rnd.randint(2, 9),
        slot__drop__on__stop="false",
        **({"column.exclude.list": "public\\..*\\.pad"} if rnd.random() < 0.5 else {}),
    )
    offsets = MemoryOffsets()
    every: list[list[SourceRecord]] = []
    stops = rnd.randint(1, 2)
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
    stored = _stored(offsets)
    assert stored.get("snapshot") is True and not stored.get("last_snapshot_record"), f"{context}: {stored}"
    assert "snapshot_tables_done" in stored, f"{context}: {stored}"
    p1 = stored["lsn"]
    for r in run.records:
        if r.source_offset.get("snapshot"):
            assert r.source_offset["lsn"] == p1, context

    for attempt in range(stops):
        for _ in range(rnd.randint(1, 12)):  # changes between the attempts (before the next snapshot point)
            source.write()
        stored = _stored(offsets)
        resuming = bool(stored.get("snapshot")) and not stored.get("last_snapshot_record")
        left = source.remaining(stored) if resuming else 0
        done = set(stored.get("snapshot_tables_done", [f"public.{s.name}" for s in shapes]))
        final = attempt == stops - 1
        stop_at = min(left, rnd.randint(1, 30))
        with TaskRunner(props, offsets) as run:
            if final:
                source.run("INSERT INTO marker VALUES (1)")
                run.poll_until(_marker_seen(1), timeout=60, what="marker 1")
                for _ in range(rnd.randint(0, 10)):  # changes while streaming
                    source.write()
                source.run("INSERT INTO marker VALUES (2)")
                run.poll_until(_marker_seen(2), timeout=60, what="marker 2")
            else:
                run.poll_until(
                    lambda rs, n=stop_at: len(_reads(rs, shapes)) >= n or _finished(rs), timeout=60, what="reads"
                )
        every.append(run.records)
        reads = _reads(run.records, shapes)
        # Resumed, not restarted: no row of a done table again.
        assert not [r for r in reads if f"public.{_table(r)}" in done], context
        if final or _finished(run.records):
            assert len(reads) == left, f"{context}: attempt {attempt + 2} read {len(reads)} rows, {left} were left"
        else:
            assert len(reads) <= left, context
        # Every snapshot offset keeps P1 (streaming starts there).
        for r in run.records:
            if r.source_offset.get("snapshot"):
                assert r.source_offset["lsn"] == p1, f"{context}: {r.source_offset}"
        # Rows rank at the new point P2; a table's mark at P1, so it clears none of the rows read before.
        for r in reads:
            if _source(r)["snapshot"] in ("last", "last_in_data_collection"):
                assert _source(r)["lsn"] == p1, context
            else:
                assert _source(r)["lsn"] > p1, context

    log = [r for records in every for r in records]
    want = source.rows()
    by_seq, in_order = _by_sequence(log, shapes), _log_order(log, shapes)
    assert by_seq == want, f"{context}: a position-ordered sink: {_diff(want, by_seq)}"
    assert in_order == want, f"{context}: a log-order consumer: {_diff(want, in_order)}"


@pytest.mark.parametrize("why", ["no progress keys", "snapshot.mode=always", "slot dropped", "no temporary slot"])
def test_a_snapshot_that_cannot_resume_starts_over(
    postgres_db: PostgresServer, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debezium's (or an older cdc's) offset without progress keys, snapshot.mode=always, a slot dropped
    while the connector was stopped, or no slot to be had for the new snapshot (max_replication_slots):
    the whole snapshot again, as before."""
    shape = SHAPES[0]
    source = Source(postgres_db, random.Random(7), [shape])
    source.create({shape.name: 30})
    extra = {"snapshot__mode": "always"} if why == "snapshot.mode=always" else {}
    props = connector_props(postgres_db, snapshot__fetch__size=4, max__batch__size=3, slot__drop__on__stop="false")
    offsets = MemoryOffsets()
    with TaskRunner(props, offsets) as run:
        run.poll_until(lambda rs: len(_reads(rs, [shape])) >= 10, what="10 reads")
    key, stored = next(iter(offsets.stored.items()))
    assert stored.get("snapshot_table") == f"public.{shape.name}" and stored.get("snapshot_last_key"), stored
    if why == "no progress keys":
        offsets.stored[key] = {k: v for k, v in stored.items() if not k.startswith("snapshot_")}
    elif why == "slot dropped":
        source.run("SELECT pg_drop_replication_slot(%s)", (props["slot.name"],))
    elif why == "no temporary slot":
        create = ReplicationConnection.create_slot

        def no_temporary(self: ReplicationConnection, name: str, *args: Any, temporary: bool = False, **kw: Any) -> Any:
            if temporary:
                raise ReplicationError(f"cannot create replication slot {name!r}: all replication slots are in use")
            return create(self, name, *args, **kw)

        monkeypatch.setattr(ReplicationConnection, "create_slot", no_temporary)
    with TaskRunner({**props, **{k.replace("__", "."): v for k, v in extra.items()}}, offsets) as again:
        again.poll_until(_finished, what="the end of the snapshot")
    reads = _reads(again.records, [shape])
    assert len(reads) == 30
    assert _source(reads[0])["snapshot"] == "first" and _source(reads[0])["lsn"] == reads[0].source_offset["lsn"]


def test_the_progress_keys_round_trip_and_only_while_snapshotting() -> None:
    rnd = random.Random(_seed())
    key = keys.dumps(("\\x" + rnd.randbytes(4).hex(), _letters(rnd, 5), str(rnd.randrange(1 << 40))))
    offset = {"snapshot": True, "last_snapshot_record": False, "lsn": 1234, "lsn_proc": 1234, "ts_usec": 5}
    offset.update(progress(("public.a", "public.b"), "public.c", key))
    loaded = PostgresOffsetContext.from_offset(json.loads(json.dumps(offset)))
    assert loaded is not None and loaded.snapshot and not loaded.snapshot_completed
    assert (loaded.tables_done, loaded.snapshot_table, loaded.snapshot_last_key) == (
        ("public.a", "public.b"),
        "public.c",
        key,
    )
    assert keys.loads(loaded.snapshot_last_key) == keys.loads(key)
    assert loaded.to_offset() == offset
    old = PostgresOffsetContext.from_offset({"snapshot": True, "lsn": 4, "last_snapshot_record": False})
    assert old is not None and old.snapshot and old.tables_done is None  # Debezium's: snapshotted again
    streaming = PostgresOffsetContext.from_offset({"lsn": 4, "lsn_commit": 4, "snapshot_tables_done": ["x.y"]})
    assert (
        streaming is not None and streaming.tables_done is None and "snapshot_tables_done" not in streaming.to_offset()
    )


# -- kill -9 of `cdc run` during its snapshot, the lake read back --------------------------------------------------

KILL_TABLES = {
    # name: (key columns DDL, key columns, key expression over g)
    "bins": ("b bytea NOT NULL, n int NOT NULL", ("b", "n"), "decode(lpad(to_hex(g * 7919), 8, '0'), 'hex'), g % 3"),
    "codes": ("code text NOT NULL", ("code",), "CASE WHEN g % 2 = 1 THEN 'K' ELSE 'k' END || g"),
    "ids": ("u uuid NOT NULL", ("u",), "md5(g::text)::uuid"),
    "items": ("id int NOT NULL", ("id",), "g"),
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
def test_a_killed_snapshot_resumes_and_the_lake_equals_the_database(
    postgres_db: PostgresServer, tmp_path: Path
) -> None:
    seed = _seed()
    rnd = random.Random(seed)
    source = Source(postgres_db, rnd, [])
    sizes = {name: rnd.randint(1000, 4000) for name in KILL_TABLES}
    sizes["items"] = rnd.randint(8000, 20000)
    for name, (ddl, key, expr) in KILL_TABLES.items():
        source.run(f"CREATE TABLE {name} ({ddl}, v int, note text, PRIMARY KEY ({', '.join(key)}))")
        source.run(
            f"INSERT INTO {name} SELECT {expr}, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 101 END, 'n' || g "
            f"FROM generate_series(1, {sizes[name]}) g"
        )
    types = {"b": "bytea", "n": "int", "code": "text", "u": "uuid", "id": "int"}
    source.shapes = [
        Shape(name, tuple((c, types[c]) for c in key), lambda r: ()) for name, (_, key, _) in KILL_TABLES.items()
    ]
    state, lake = tmp_path / "state", tmp_path / "lake"
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: rsk
source:
  connector.class: postgres
  database.hostname: {postgres_db.host}
  database.port: {postgres_db.port}
  database.user: {postgres_db.user}
  database.password: '{postgres_db.password}'
  database.dbname: {postgres_db.dbname}
  topic.prefix: rsk
  slot.name: rsk
  snapshot.fetch.size: {rnd.choice([200, 500, 900])}
transport:
  state.dir: {state}
sink:
  type: delta
  path: {lake}
"""
    )
    db = state / "cdc.db"
    total = sum(sizes.values())
    # The log moves in whole transactions, which grow while the snapshot outruns the log's writes (each
    # one about the size of all before it, up to 20k records): a point in the first third is passed at a
    # boundary before the snapshot's end. Points later could be passed only by its last transaction.
    at = rnd.randint(1500, max(1600, total // 3))
    topics = tuple(f"rsk.public.{name}" for name in KILL_TABLES)
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
    assert stored.get("snapshot") is True and "snapshot_tables_done" in stored, f"{context}: {stored}"
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
    source.run("UPDATE items SET note = NULL WHERE id %% 83 = %s", (rnd.randrange(83),))
    source.run("DELETE FROM codes WHERE right(code, 2) = %s", (f"{rnd.randrange(100):02d}",))
    source.run("UPDATE bins SET v = -v WHERE n = %s", (rnd.randrange(3),))
    source.run("DELETE FROM ids WHERE v = %s", (rnd.randrange(101),))
    source.run("INSERT INTO items VALUES (%s, 1, 'new'), (%s, NULL, 'new')", (total + 7, total + 8))
    source.run("INSERT INTO codes VALUES ('NEW1', 1, 'new'), ('new2', 2, NULL)")
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
    want_all = source.rows()
    for shape in source.shapes:
        path = lake / f"rsk_public_{shape.name}"
        fs = pa_fs.SubTreeFileSystem(str(path), pa_fs.LocalFileSystem())
        table = DeltaTable(str(path)).to_pyarrow_dataset(filesystem=fs).to_table(columns=[*shape.cols, "v", "note"])
        got = {(shape.name, tuple(_norm(r[c]) for c in shape.cols)): (r["v"], r["note"]) for r in table.to_pylist()}
        want = {k: v for k, v in want_all.items() if k[0] == shape.name}
        assert got == want, f"{context}: {shape.name}: {_diff(want, got)}"
