"""An incremental snapshot of a table while a writer changes it at full speed (issue 22's acceptance).

Shared by tests/jobs/test_incremental_snapshot_under_load.py (CI-sized) and
benchmarks/incremental_snapshot.py (1M rows, delays measured):

- `create_table` makes and fills `t` (a mix of column types) server-side from the Sequence engine;
- `Writer` updates, deletes and re-inserts random keys, one autocommit statement each, every row
  stamped with its op number (`seq`) and the wall time just before its commit (`stamp_us`);
- `lake_rows`/`table_rows`/`differences` compare the Delta table with the source, every column;
- `lake_delays` replays the Delta log version by version (the files each commit added) and, per
  writer op, finds the first commit whose rows reflect it or a later op of the same key: the
  delay from the op's commit to its visibility in the lake (delete.mode=soft, where a deleted row
  stays with `__deleted=true` and its last `seq`, so a delete is seen as the key's own state).

The job streams from the binlog position at its start (snapshot.mode=no_data); the snapshot of `t`
comes only from `cdc signal ... execute-snapshot`.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
from deltalake import DeltaTable

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.mysql.incremental_support import SIGNAL_TABLE, create_signal_table
from tests.rig import MariaDbServer

TABLE = "t"
BEAT = "beat"  # a tiny table: its first event in the log says the stream is live
COLUMNS = ("id", "seq", "stamp_us", "name", "amount", "ratio", "flag", "born", "updated", "note", "tag")
DDL = f"""CREATE TABLE {TABLE} (
  id INT PRIMARY KEY, seq BIGINT NOT NULL, stamp_us BIGINT NOT NULL, name VARCHAR(64) NOT NULL,
  amount DECIMAL(12,2), ratio DOUBLE, flag TINYINT(1), born DATE, updated DATETIME(6), note TEXT,
  tag VARBINARY(16))"""
FILL_STEP = 100_000


def create_table(server: MariaDbServer, rows: int) -> None:
    """`t` with ids 1..rows (seq 0, stamp 0), the signal table and `beat`, filled in 100k-row statements."""
    create_signal_table(server)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(DDL)
        cur.execute(f"CREATE TABLE {BEAT} (id INT PRIMARY KEY, v INT)")
        for lo in range(1, rows + 1, FILL_STEP):
            hi = min(rows, lo + FILL_STEP - 1)
            cur.execute(
                f"INSERT INTO {TABLE} SELECT seq, 0, 0, CONCAT('name-', seq), seq * 1.25, seq / 7, seq % 2,"
                " DATE_ADD('2000-01-01', INTERVAL seq % 9000 DAY),"
                " TIMESTAMP('2024-01-01') + INTERVAL seq * 1001 MICROSECOND,"
                " IF(seq % 5 = 0, NULL, REPEAT('x', seq % 40)), UNHEX(MD5(seq))"
                f" FROM seq_{lo}_to_{hi}"
            )


def job_file(
    tmp_path: Path, server: MariaDbServer, delete_mode: str = "hard", chunk: int | None = None, name: str = "load"
) -> Path:
    """The job: `t` and `beat` streamed from now on (no_data) into Delta, signals through the table."""
    db = server.database
    extra = {"incremental__snapshot__chunk__size": str(chunk)} if chunk else {}
    props = connector_props(
        server, table__include__list=f"{db}.{TABLE},{db}.{BEAT}", snapshot__mode="no_data",
        signal__data__collection=f"{db}.{SIGNAL_TABLE}", **extra,
    )  # fmt: skip
    tables = {
        f"{db}.{TABLE}": f"keys: [id], target: {TABLE}, delete.mode: {delete_mode}",
        f"{db}.{BEAT}": f"keys: [id], target: {BEAT}",
    }
    return mysql_delta_job(tmp_path, name, props, tables)


@dataclass
class Op:
    seq: int
    key: int
    kind: str  # u (update), d (delete), c (re-insert)
    stamp_us: int  # wall time just before the statement (autocommit: its commit follows at once)


class Writer(threading.Thread):
    """Seeded updates (60%), deletes (20%) and re-inserts of deleted keys (20%) of random ids in 1..rows,
    each one autocommit statement, as fast as the server takes them, until `stop_flag`."""

    def __init__(self, server: MariaDbServer, rows: int, seed: int) -> None:
        super().__init__(daemon=True, name="writer")
        self.server, self.rows = server, rows
        self.rnd = random.Random(seed)
        self.stop_flag = threading.Event()
        self.ops: list[Op] = []
        self.error: BaseException | None = None
        self._deleted: list[int] = []
        self._where: dict[int, int] = {}  # deleted key → its index in _deleted

    def _values(self, seq: int, stamp: int) -> tuple[Any, ...]:
        r = self.rnd
        return (
            seq, stamp, f"w-{seq}-{r.randint(0, 10**6)}", Decimal(r.randint(-10**9, 10**9)) / 100, r.uniform(-1e6, 1e6),
            r.randint(0, 1), dt.date(1990, 1, 1) + dt.timedelta(days=r.randint(0, 20000)),
            dt.datetime(2025, 1, 1) + dt.timedelta(microseconds=r.randint(0, 10**13)),
            None if r.random() < 0.2 else "y" * r.randint(0, 60), r.randbytes(r.randint(0, 16)),
        )  # fmt: skip

    def _take_deleted(self) -> int:
        i = self.rnd.randrange(len(self._deleted))
        key, last = self._deleted[i], self._deleted[-1]
        self._deleted[i] = last
        self._where[last] = i
        self._deleted.pop()
        del self._where[key]
        return key

    def _live_key(self) -> int:
        while True:
            key = self.rnd.randint(1, self.rows)
            if key not in self._where:
                return key

    def step(self, cur: Any, seq: int) -> Op:
        p = self.rnd.random()
        stamp = time.time_ns() // 1000
        if p < 0.2 and self._deleted:
            key = self._take_deleted()
            cur.execute(f"INSERT INTO {TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (key, *self._values(seq, stamp)))  # fmt: skip
            return Op(seq, key, "c", stamp)
        key = self._live_key()
        if p < 0.4:
            cur.execute(f"DELETE FROM {TABLE} WHERE id = %s", (key,))
            self._where[key] = len(self._deleted)
            self._deleted.append(key)
            return Op(seq, key, "d", stamp)
        cur.execute(
            f"UPDATE {TABLE} SET seq=%s, stamp_us=%s, name=%s, amount=%s, ratio=%s, flag=%s, born=%s, updated=%s,"
            " note=%s, tag=%s WHERE id = %s",
            (*self._values(seq, stamp), key),
        )
        return Op(seq, key, "u", stamp)

    def run(self) -> None:
        try:
            with self.server.connect() as conn, conn.cursor() as cur:
                seq = 0
                while not self.stop_flag.is_set():
                    seq += 1
                    op = self.step(cur, seq)
                    if cur.rowcount != 1:
                        raise AssertionError(f"writer op {op} changed {cur.rowcount} rows, expected 1")
                    self.ops.append(op)
        except BaseException as e:  # reported by the caller
            self.error = e


# -- comparing the lake with the table ---------------------------------------------------------------


def _norm(v: Any) -> Any:
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(v, bool):
        return int(v)
    return v


def table_rows(server: MariaDbServer) -> dict[int, tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {TABLE}")
        return {r[0]: tuple(_norm(v) for v in r) for r in cur.fetchall()}


def lake_path(tmp_path: Path) -> str:
    return str(tmp_path / "lake" / TABLE)


def lake_rows(path: str) -> dict[int, tuple[Any, ...]]:
    """The live rows of the Delta table (soft-deleted ones left out), the source's columns in order."""
    lake = DeltaTable(path).to_pyarrow_table()
    names = lake.column_names
    out: dict[int, tuple[Any, ...]] = {}
    for r in lake.to_pylist():
        if "__deleted" in names and r["__deleted"]:
            continue
        if r["id"] in out:
            raise AssertionError(f"the lake holds id {r['id']} twice")
        out[r["id"]] = tuple(_norm(r[c]) for c in COLUMNS)
    return out


def differences(source: dict[int, tuple[Any, ...]], lake: dict[int, tuple[Any, ...]], limit: int = 10) -> list[str]:
    """Readable differences (at most `limit`), empty when the lake equals the table row for row."""
    out = [f"id {k}: in the table, not in the lake: {source[k]}" for k in sorted(source.keys() - lake.keys())]
    out += [f"id {k}: in the lake, not in the table: {lake[k]}" for k in sorted(lake.keys() - source.keys())]
    for k in sorted(source.keys() & lake.keys()):
        if source[k] != lake[k]:
            cols = [f"{c}: {a!r} vs lake {b!r}" for c, a, b in zip(COLUMNS, source[k], lake[k], strict=True) if a != b]
            out.append(f"id {k}: " + "; ".join(cols))
    return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


# -- when each change became visible in the lake ---------------------------------------------------------


@dataclass
class Visibility:
    delays_ms: list[tuple[int, float]]  # (op stamp_us, delay in ms) per op that became visible
    keys_per_version: list[tuple[int, int]]  # (commit ms, keys in the lake) per version
    unseen: list[Op]  # ops no lake version ever reflected
    regressions: list[str]  # a key's lake state went back to an older op: a defect


def _versions(path: str) -> Iterable[tuple[int, int, list[str], list[str]]]:
    """(version, commit ms, added files, removed files) from the Delta log's JSON commits, in order."""
    logdir = Path(path) / "_delta_log"
    for f in sorted(logdir.glob("*.json")):
        added, removed, ts = [], [], 0
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                added.append(action["add"]["path"])
            elif "remove" in action:
                removed.append(action["remove"]["path"])
            elif "commitInfo" in action:
                ts = int(action["commitInfo"].get("timestamp", 0))
        yield int(f.stem), ts, added, removed


def lake_delays(path: str, ops: list[Op], rows: int) -> Visibility:
    """Per writer op, the first Delta commit whose rows show that op or a later one of its key.

    Needs delete.mode=soft: a row's (`seq`, `__deleted`) names the op it reflects: (s, false) the op
    numbered s (0: the filled row), (s, true) the delete that followed op s on that key. `rows`: ids
    1..rows exist, so once that many keys are in the lake every one has arrived."""
    import pyarrow as pa
    import pyarrow.compute as pc

    per_key: dict[int, list[Op]] = {}
    for op in ops:
        per_key.setdefault(op.key, []).append(op)
    touched = pa.array(list(per_key), pa.int32())
    index: dict[tuple[int, int, bool], int] = {}  # (key, seq, deleted) → the op index it reflects
    for key, kops in per_key.items():
        index[(key, 0, False)] = -1
        prev = 0
        for i, op in enumerate(kops):
            if op.kind == "d":
                index[(key, prev, True)] = i
            else:
                index[(key, op.seq, False)] = i
                prev = op.seq
    seen: dict[int, int] = {}  # key → highest op index reflected so far
    state: dict[int, tuple[int, bool]] = {}
    arrived: set[int] = set()
    delays: list[tuple[int, float]] = []
    regressions: list[str] = []
    keys_per_version: list[tuple[int, int]] = []
    for version, ts, added, _removed in _versions(path):
        for rel in added:
            part = pq.read_table(str(Path(path) / unquote(rel)), columns=["id", "seq", "__deleted"])
            if len(arrived) < rows:
                arrived.update(part.column("id").to_pylist())
            part = part.filter(pc.is_in(part.column("id"), value_set=touched.cast(part.schema.field("id").type)))
            columns = (part.column(c).to_pylist() for c in ("id", "seq", "__deleted"))
            for key, seq, deleted in zip(*columns, strict=True):
                if state.get(key) == (seq, bool(deleted)):
                    continue
                state[key] = (seq, bool(deleted))
                at = index.get((key, seq, bool(deleted)))
                if at is None:
                    regressions.append(f"version {version}: id {key} shows seq {seq} deleted={deleted}, no such op")
                    continue
                done = seen.get(key, -1)
                if at < done:
                    regressions.append(f"version {version}: id {key} went back from op {done} to op {at}")
                    continue
                for op in per_key[key][done + 1 : at + 1]:
                    delays.append((op.stamp_us, ts - op.stamp_us / 1000))
                seen[key] = max(done, at)
        keys_per_version.append((ts, len(arrived)))
    unseen = [op for key, kops in per_key.items() for op in kops[seen.get(key, -1) + 1 :]]
    return Visibility(delays, keys_per_version, unseen, regressions)


# -- the scenario ---------------------------------------------------------------------------------------


@dataclass
class Run:
    ops: list[Op]
    stream_live_s: float  # time.time() when the stream was seen live end to end (a beat row in the lake)
    signal_s: float  # when execute-snapshot was sent
    done_s: float  # when the task logged the snapshot's completion (its last chunk's window closed)
    caught_up_s: float  # when the lake's live rows equalled the table's by count and last seq
    writer_stop_s: float
    log_path: Path


def _lake_summary(path: str) -> tuple[int, int] | None:
    """(live rows, highest seq) of the Delta table, None while it does not exist."""
    import pyarrow.compute as pc

    if not DeltaTable.is_deltatable(path):
        return None
    lake = DeltaTable(path).to_pyarrow_table(columns=["seq", "__deleted"])
    live = lake.filter(pc.invert(pc.fill_null(lake.column("__deleted"), False)))
    return live.num_rows, (pc.max(live.column("seq")).as_py() or 0)


def run_scenario(
    tmp_path: Path, server: MariaDbServer, rows: int, seed: int, *, delete_mode: str = "hard",
    chunk: int | None = None, warmup_s: float = 2.0, tail_s: float = 2.0, timeout_s: float = 600.0,
    note: Any = lambda _text: None, process: Any = None,
) -> Run:  # fmt: skip
    """`cdc run` streams `t` (already filled) into Delta; the writer starts, after `warmup_s` the
    snapshot of `t` is signalled; `tail_s` after the source finished it the writer stops; returns once
    the lake caught up (live rows and highest seq as the table's), `cdc run` stopped. `process`: what
    starts `cdc run` (CdcProcess; the benchmark's profiler wraps it)."""
    from tests.support.proc import CdcProcess, run_cdc, wait_for

    db = server.database
    job = job_file(tmp_path, server, delete_mode, chunk)
    log_path = tmp_path / "run.log"
    proc = (process or CdcProcess)("run", str(job), log_path=log_path)
    writer = Writer(server, rows, seed)
    try:
        with server.connect() as conn, conn.cursor() as cur:
            beat = 0
            deadline = time.monotonic() + timeout_s
            # Until a beat is in the lake, the stream may not have its start position and Spark may
            # still be starting: beat again.
            while not DeltaTable.is_deltatable(str(tmp_path / "lake" / BEAT)):
                if not proc.alive() or time.monotonic() > deadline:
                    raise AssertionError(f"the stream never went live:\n{proc.output()[-4000:]}")
                beat += 1
                cur.execute(f"INSERT INTO {BEAT} VALUES (%s, %s)", (beat, beat))
                time.sleep(1.0)
        live = time.time()
        note(f"stream live; writer starts, snapshot signal in {warmup_s:.0f}s")
        writer.start()
        time.sleep(warmup_s)
        signal_s = time.time()
        res = run_cdc("signal", str(job), "execute-snapshot", "--tables", f"{db}.{TABLE}", "--id", "load-t")
        assert res.returncode == 0, res.stdout + res.stderr

        def done() -> bool:  # the task logs the last chunk's window close (its rows go out in that poll)
            if writer.error is not None:
                raise AssertionError(f"the writer failed: {writer.error!r}")
            time.sleep(0.2)
            return "Incremental snapshot completed" in proc.output()

        wait_for(done, timeout_s, "the incremental snapshot's end", proc)
        done_s = time.time()
        note(f"snapshot read in {done_s - signal_s:.1f}s ({len(writer.ops)} writer ops so far)")
        time.sleep(tail_s)
        writer.stop_flag.set()
        writer.join(30)
        stop_s = time.time()
        assert writer.error is None, writer.error
        last_seq = max((op.seq for op in writer.ops if op.kind != "d"), default=0)
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {TABLE}")
            want = (cur.fetchone()[0], last_seq)
        path = lake_path(tmp_path)

        def caught_up() -> bool:
            time.sleep(1.0)  # each look reads the table's live rows
            try:
                return _lake_summary(path) == want
            except Exception:  # a commit in flight: look again
                return False

        wait_for(caught_up, timeout_s, f"the lake to reach {want[0]} live rows and seq {want[1]}", proc)
        caught = time.time()
        note(f"lake caught up {caught - stop_s:.1f}s after the writer stopped ({len(writer.ops)} writer ops)")
    finally:
        writer.stop_flag.set()
        if proc.alive():
            proc.terminate(120)
    return Run(writer.ops, live, signal_s, done_s, caught, stop_s, log_path)


def log_events(tmp_path: Path, db: str) -> list[dict[str, Any]]:
    """The change events of `t` in the embedded log, in log order (payloads of the JsonConverter records)."""
    from cdc.log.embedded import EmbeddedLog
    from tests.support.logs import topic_records

    with EmbeddedLog(tmp_path / "state", synchronous="NORMAL") as log_:
        values = [json.loads(r.value) for r in topic_records(log_, f"dbserver1.{db}.{TABLE}") if r.value]
    return [v.get("payload", v) for v in values]


Streamed = dict[int, list[tuple[str, int]]]  # per key, its streamed events as (op, after.seq or -1)


def log_delays(tmp_path: Path, db: str, ops: list[Op]) -> tuple[list[tuple[int, float]], Streamed]:
    """Streamed changes of `t` in the embedded log, read in batches (the `r` events are only counted):
    (op stamp_us, ms from its commit to its append to the log) per writer op, matched to the key's
    streamed events in order, and per key its streamed events as (op, after.seq or -1) for the checks."""
    from cdc.log.base import TopicPartition
    from cdc.log.embedded import EmbeddedLog

    streamed: Streamed = {}
    stamps: dict[int, list[int]] = {}
    with EmbeddedLog(tmp_path / "state", synchronous="NORMAL") as log_:
        reader = log_.reader()
        tp = TopicPartition(f"dbserver1.{db}.{TABLE}", 0)
        end = log_.end_offsets([tp])[tp]
        reader.assign({tp: 0})
        at = 0
        while at < end:
            for r in reader.poll(5000, 5.0):
                at = r.offset + 1
                if r.value is None or b'"op":"r"' in r.value[-400:]:
                    continue
                e = json.loads(r.value)
                e = e.get("payload", e)
                row = e["after"] if e["op"] != "d" else e["before"]
                streamed.setdefault(row["id"], []).append((e["op"], e["after"]["seq"] if e["after"] else -1))
                stamps.setdefault(row["id"], []).append(r.timestamp)
        reader.close()
    delays: list[tuple[int, float]] = []
    per_key: dict[int, int] = {}
    for op in ops:
        i = per_key.get(op.key, 0)
        per_key[op.key] = i + 1
        if i < len(stamps.get(op.key, ())):
            delays.append((op.stamp_us, stamps[op.key][i] - op.stamp_us / 1000))
    return delays, streamed
