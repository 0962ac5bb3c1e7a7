"""The chaos run: a seeded whole-pipeline fault test (issue 16), shared by tests/chaos and
benchmarks/chaos.py.

One run, for one variant (mariadb-delta, mariadb-postgres, postgres-delta or mariadb-iceberg):

1. Private servers from the test rig (tests/rig): the source database, and for the warehouse
   variant a second PostgreSQL as the target. Three tables with different key shapes and
   mixed types (schema.py), several thousand rows each.
2. A writer thread (writer.py) changes the source for the whole run.
3. `cdc run job.yaml` (continuous) is started and SIGKILLed (its whole process group: Python,
   Spark's JVM and its Python workers) `kills` times, restarted each time. Kill 1 lands
   during the initial snapshot, once a seeded share of the initial rows is in the log; some
   of the rows already snapshotted are then deleted in the source before the restart. The
   others land inside a Spark micro-batch (between the checkpoint's offsets/N and
   commits/N), at random moments, or early in start-up. Once per run the source database
   itself is SIGKILLed and restarted on its data directory while the job runs.
4. The writer stops; one `cdc run --until-caught-up`; then every source table is compared
   with its target row by row (compare.py), and `cdc verify` must agree.

Transport: the embedded log (`state.dir`, default) or Kafka (`transport="kafka"`): a Tansu broker
the rig spawns for the run (tests/rig/kafka.py), holding the topics and the stored source
offsets; state.dir then keeps only the job lock and the Spark checkpoint. (The MySQL schema
history is then in memory only, as the job names no history topic: on Kafka the worker keeps
none itself, and decoding does not need it.) The run's progress (records in the log, the stored
offset, the snapshotted keys) is then read from the broker (KafkaJobState) instead of cdc.db.

Determinism: the seed fixes the data, the writer's sequence of operations, the kill schedule
(kinds, delays, the snapshot share) and which snapshotted keys are deleted. Wall-clock timing
does not repeat: where a kill lands relative to the writer's progress, and so the exact
rows, differ between two runs of one seed. A failure's seed replays the same schedule and
workload, which in practice reproduces a defect that does not need an exact interleaving.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from cdc.log.base import LogError, LogReader, TopicDescription, TopicPartition
from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import read_topic
from tests.chaos.compare import TableDiff, compare_all, delta_rows, iceberg_rows, warehouse_rows
from tests.chaos.db import SourceDb
from tests.chaos.schema import BY_NAME, TABLES, Table
from tests.chaos.writer import Writer, populate
from tests.rig import MariaDbServer, PostgresServer
from tests.rig import kafka as kafka_rig
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig
from tests.rig.kafka import KafkaBroker
from tests.support.proc import REPO, cdc_argv

ICEBERG_NAMESPACE = "chaos"  # the mariadb-iceberg variant's tables, in a SQL catalog under lake/
VARIANTS = ("mariadb-delta", "mariadb-postgres", "postgres-delta", "mariadb-iceberg")
TRANSPORTS = ("embedded", "kafka")
JOB = "chaos"
PREFIX = "chaos"
DB_NAME = "chaos"
WAREHOUSE_SCHEMA = "lake"
SINK_STARTED = "sink query started"
LONG_SIZES = {"accounts": 5000, "order_lines": 8000, "tags": 4000}
KILL_KINDS = ("snapshot", "batch", "random", "early", "db")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")


@dataclass(frozen=True)
class ChaosConfig:
    variant: str
    seed: int
    kills: int = 12
    db_kill: bool = True
    sizes: dict[str, int] = field(default_factory=lambda: dict(LONG_SIZES))
    big_rows: int = 20_000  # rows of the one large transaction
    duration: float = 0.0  # the kill phase lasts at least this many seconds
    catch_up_timeout: float = 900.0
    pace: float = 0.06  # seconds the writer rests between transactions
    transport: str = "embedded"  # or "kafka": a Tansu broker spawned for the run
    # Run `cdc` from another checkout (a git worktree of an older commit, say, to see whether the
    # run catches a defect fixed since); None: this one.
    repo: Path | None = None


@dataclass(frozen=True)
class Kill:
    """One planned kill of `cdc run`; the numbers come from the seed."""

    kind: str
    delay: float  # seconds after the kill point is reached
    fraction: float = 0.0  # snapshot: share of the initial rows in the log before the kill
    down: float = 0.0  # db: seconds the database stays down
    batches: int = 0  # batch: micro-batches this run commits before the one that is killed


@dataclass
class KillRecord:
    index: int
    kind: str
    at_s: float  # seconds after that run started
    in_snapshot: bool = False  # the stored source offset still said "snapshot" (Kafka: or none was stored yet)
    in_batch: bool = False  # a micro-batch was planned but not committed
    sink_started: bool = False  # the run's Spark query had started
    batch: int = -1  # the micro-batch in flight (in_batch) or the last one planned
    exited: int | None = None  # the run had exited by itself with this code
    last_line: str = ""

    def describe(self) -> str:
        if self.in_snapshot:
            where = "in the snapshot"
        elif self.in_batch:
            where = f"in micro-batch {self.batch}"
        else:
            where = "between batches" if self.sink_started else "before the sink query started"
        if self.exited is not None:
            where = f"but it had exited by itself (code {self.exited}: {self.last_line[:160]})"
        return f"kill {self.index + 1} ({self.kind}) after {self.at_s:.1f}s: {where}"


@dataclass
class ChaosResult:
    config: ChaosConfig
    kills: list[KillRecord] = field(default_factory=list)
    db_kills: int = 0
    diffs: list[TableDiff] = field(default_factory=list)
    verify: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    writer: dict[str, Any] = field(default_factory=dict)

    @property
    def missing(self) -> int:
        return sum(len(d.missing) for d in self.diffs)

    @property
    def extra(self) -> int:
        return sum(len(d.extra) + len(d.duplicates) for d in self.diffs)

    @property
    def differing(self) -> int:
        return sum(len(d.differing) for d in self.diffs)

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.diffs) and all(d.ok for d in self.diffs)

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.config.seed,
            "variant": self.config.variant,
            "transport": self.config.transport,
            "kills": len(self.kills),
            "db_kills": self.db_kills,
            "source_rows": sum(d.source_rows for d in self.diffs),
            "missing": self.missing,
            "extra": self.extra,
            "differing": self.differing,
            "wall_s": round(self.wall_s, 1),
            "snapshot_kills": sum(k.in_snapshot for k in self.kills),
            "batch_kills": sum(k.in_batch for k in self.kills),
            "errors": len(self.errors),
        }

    def report(self) -> list[str]:
        c = self.config
        lines = [
            f"chaos {c.variant} over {c.transport} seed {c.seed} (replay: --seed {c.seed} / CDC_CHAOS_SEED={c.seed})"
        ]
        lines += ["  " + k.describe() for k in self.kills]
        for d in self.diffs:
            lines += d.lines()
        if self.verify is not None:
            lines.append(f"cdc verify: exit {self.verify.get('exit')}, {self.verify.get('differences')} differences")
        lines += [f"ERROR: {e}" for e in self.errors]
        lines.append(f"writer: {self.writer}")
        return lines


# -- the plan --------------------------------------------------------------------------------------
def plan_kills(seed: int, kills: int, db_kill: bool) -> list[Kill]:
    """The kill schedule of a seed: the snapshot first, then a shuffled mix with at least one
    kill inside a batch and (if asked) the database kill."""
    rng = random.Random(f"kills-{seed}")
    rest: list[str] = []
    if db_kill and kills > 1:
        rest.append("db")
    if kills - 1 > len(rest):
        rest.append("batch")
    while len(rest) < kills - 1:
        rest.append(rng.choice(["batch", "batch", "random", "early"]))
    rng.shuffle(rest)
    plan = [Kill("snapshot", 0.0, fraction=rng.uniform(0.15, 0.5))]
    for kind in rest:
        if kind == "batch":
            plan.append(Kill(kind, rng.uniform(0.0, 1.5), batches=rng.choice([0, 1, 1, 2])))
        elif kind == "random":
            plan.append(Kill(kind, rng.uniform(1.0, 15.0)))
        elif kind == "early":
            plan.append(Kill(kind, rng.uniform(0.3, 5.0)))
        else:
            plan.append(Kill(kind, rng.uniform(0.5, 3.0), down=rng.uniform(0.5, 3.0)))
    return plan[:kills]


def special_cycles(kills: int) -> dict[str, int]:
    """Before which cycle the writer's one-off operations are asked for."""
    last = max(kills - 1, 1)
    return {"big": min(max(1, kills // 3), last), "add_columns": min(max(1, kills // 2), last),
            "default_change": min(max(1, (2 * kills) // 3), last)}  # fmt: skip


# -- servers and the job ---------------------------------------------------------------------------
@dataclass
class Servers:
    source: SourceDb
    target: PostgresServer | None  # the warehouse variant's PostgreSQL
    kafka: KafkaBroker | None = None  # transport kafka: the run's broker
    lake_format: str = "delta"  # without a warehouse target: delta, or iceberg (a SQLite SQL catalog)


@contextlib.contextmanager
def private_servers(variant: str, transport: str = "embedded") -> Iterator[Servers]:
    """The variant's private servers, spawned by the test rig (kill() and restart() work on them),
    and with transport kafka a Tansu broker, stopped (SIGINT) when the run ends."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; choose one of {', '.join(TRANSPORTS)}")
    with contextlib.ExitStack() as stack:
        # Tansu (v0.6, memory storage) stands in for Kafka: no log compaction (the offsets topic
        # keeps every value), transactions only half work (records of aborted ones reach
        # read_committed readers; cdc's at-least-once source does not use them), and its high
        # watermark is the base offset of the last batch + 1, not the log's end (cdc's Spark
        # source reads past it, probeEndOffsets; KafkaJobState counts records it read). With
        # CDC_TEST_KAFKA_BOOTSTRAP set the rig hands out that (real, shared) cluster instead: a
        # second run there would find the first one's topics, so give each its own broker.
        kafka = stack.enter_context(kafka_rig.provide_tansu()) if transport == "kafka" else None
        if variant.startswith("mariadb"):
            server: MariaDbServer | PostgresServer = stack.enter_context(mariadb_rig.spawn_local())
            with server.connect() as conn, conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE {DB_NAME} CHARACTER SET utf8mb4")
            server = replace(server, database=DB_NAME)
        else:
            server = stack.enter_context(postgres_rig.spawn_local())
        target = stack.enter_context(postgres_rig.spawn_local()) if variant.endswith("postgres") else None
        lake_format = "iceberg" if variant.endswith("iceberg") else "delta"
        yield Servers(SourceDb(server), target, kafka, lake_format)


def write_job(path: Path, servers: Servers, workdir: Path, seed: int) -> tuple[Path, str]:
    """The job file, and a line naming its seeded choices."""
    rng = random.Random(f"job-{seed}")
    s = servers.source.server
    # Seeded: small caps split the snapshot and the large transaction over several micro-batches;
    # `none` takes the MySQL snapshot without the global read lock.
    max_events = rng.choice([3000, 20000, 200000])
    locking = rng.choice(["minimal", "none"])
    if isinstance(s, MariaDbServer):
        schema = DB_NAME
        source = f"""  connector.class: mysql
  snapshot.locking.mode: {locking}
  database.hostname: {s.host}
  database.port: {s.port}
  database.user: {s.cdc_user}
  database.password: '{s.cdc_password}'
  database.server.id: {5400 + seed % 1000}
  topic.prefix: {PREFIX}
  database.include.list: {DB_NAME}
"""
    else:
        schema = "public"
        source = f"""  connector.class: postgres
  database.hostname: {s.host}
  database.port: {s.port}
  database.user: {s.user}
  database.password: '{s.password}'
  database.dbname: {s.dbname}
  topic.prefix: {PREFIX}
  slot.name: chaos_slot
  table.include.list: {",".join(f"public.{t.name}" for t in TABLES)}
"""
    if servers.target is None and servers.lake_format == "iceberg":
        # The default catalog: SQLite at lake/catalog.db, the tables under lake/.
        sink = f"  type: iceberg\n  path: {workdir / 'lake'}\n  schema: {ICEBERG_NAMESPACE}\n"
    elif servers.target is None:
        sink = f"  type: delta\n  path: {workdir / 'lake'}\n"
    else:
        sink = f"  type: postgres\n  dsn: {servers.target.dsn}\n  schema: {WAREHOUSE_SCHEMA}\n"
    tables = "".join(f"    {schema}.{t.name}: {{target: {t.name}}}\n" for t in TABLES)
    # state.dir stays with Kafka too: the job lock and the Spark checkpoint live there.
    transport = f"  state.dir: {workdir / 'state'}\n"
    flush = 0
    if servers.kafka is not None:
        # On Kafka the source's offsets are stored every offset.flush.interval.ms, not with each
        # batch as on the embedded log, and a kill replays what came after them. Not the 60 s
        # default: every run here is killed within a minute, so none would ever store an offset,
        # each restart would snapshot again and no change (the large transaction neither) would
        # ever be streamed. Seeded, 1 or 5 s of changes to replay after a kill.
        flush = rng.choice([1000, 5000])
        transport = (
            f"  type: kafka\n  bootstrap.servers: {servers.kafka.bootstrap}\n{transport}"
            f"  offset.flush.interval.ms: {flush}\n"
        )
    path.write_text(
        f"""name: {JOB}
source:
{source}transport:
{transport}sink:
{sink}  tables:
{tables}spark:
  master: local[2]
  trigger: {{processingTime: 1 second}}
  maxEventsPerTrigger: {max_events}
"""
    )
    chosen = f"maxEventsPerTrigger {max_events}"
    if isinstance(s, MariaDbServer):
        chosen += f", snapshot.locking.mode {locking}"
    if flush:
        chosen += f", offset.flush.interval.ms {flush}"
    return path, chosen


# -- watching a run --------------------------------------------------------------------------------
def _snapshot_read_keys(table: Table, values: list[Any]) -> list[tuple[Any, ...]]:
    """Keys of the `r` (snapshot read) records among JSON record values."""
    keys = []
    for raw in values:
        if raw is None:
            continue
        doc = json.loads(raw)
        payload = doc["payload"] if isinstance(doc, dict) and "payload" in doc and "schema" in doc else doc
        if payload.get("op") == "r" and payload.get("after"):
            keys.append(tuple(payload["after"][k] for k in table.key))
    return keys


class JobState:
    """What a run has done so far, read from its state directory (never from the process)."""

    def __init__(self, state_dir: Path) -> None:
        self.db = state_dir / "cdc.db"
        self.checkpoint = state_dir / "spark-checkpoints" / JOB

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if not self.db.exists():
            return []
        try:
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            try:
                return conn.execute(sql, args).fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            return []  # not created yet, or mid-write: ask again

    def data_topics(self) -> list[str]:
        pattern = re.compile(re.escape(PREFIX) + r"\.[^.]+\.[^.]+$")
        return [t for (t,) in self._query("SELECT name FROM topics") if pattern.match(t)]

    def close(self) -> None:
        """Nothing held open here (each query opens the file read-only)."""

    def data_records(self) -> int:
        rows = self._query("SELECT topic, next_offset FROM partitions")
        pattern = re.compile(re.escape(PREFIX) + r"\.[^.]+\.[^.]+$")
        return sum(int(n) for t, n in rows if pattern.match(t))

    def written(self) -> int:
        """Records in the data topics now, as cheaply as the log can say it."""
        return self.data_records()

    def last_offset(self) -> dict[str, Any] | None:
        rows = self._query("SELECT value FROM records WHERE topic = 'connect-offsets' ORDER BY offset DESC LIMIT 1")
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def in_snapshot(self) -> bool:
        offset = self.last_offset()
        if offset is None:
            return False  # nothing stored yet: the snapshot had not written anything
        return _snapshot_running(offset)

    def snapshot_keys(self, limit: int) -> dict[str, list[tuple[Any, ...]]]:
        """Keys of `r` (snapshot read) records among the first `limit` of each data topic."""
        out: dict[str, list[tuple[Any, ...]]] = {}
        for topic in self.data_topics():
            table = BY_NAME.get(topic.rsplit(".", 1)[-1])
            if table is None:
                continue
            rows = self._query("SELECT value FROM records WHERE topic = ? ORDER BY offset LIMIT ?", (topic, limit))
            out[table.name] = _snapshot_read_keys(table, [raw for (raw,) in rows])
        return out

    def _max_batch(self, sub: str) -> int:
        try:
            names = os.listdir(self.checkpoint / sub)
        except OSError:
            return -1
        return max((int(n) for n in names if n.isdigit()), default=-1)

    def planned(self) -> int:
        """The last micro-batch Spark planned (-1: none yet)."""
        return self._max_batch("offsets")

    def committed(self) -> int:
        """The last micro-batch Spark committed (-1: none yet)."""
        return self._max_batch("commits")

    def in_batch(self) -> bool:
        """Spark wrote offsets/N (the batch is planned) but not commits/N (not done)."""
        return self._max_batch("offsets") > self._max_batch("commits")


class KafkaJobState(JobState):
    """JobState on the Kafka transport: the log and the stored source offsets are topics of the
    broker (read with cdc's own Kafka client); the Spark checkpoint is still under state.dir."""

    def __init__(self, state_dir: Path, bootstrap: str) -> None:
        super().__init__(state_dir)
        self.log = KafkaLog(bootstrap, request_timeout=10.0)
        self.offsets_topic = f"{JOB}-offsets"  # the job's offset.storage.topic (cdc/jobs/spec.py)
        self._pattern = re.compile(re.escape(PREFIX) + r"\.[^.]+\.[^.]+$")
        self._counter: LogReader | None = None  # data_records: reads on from where it was
        self._counted: dict[TopicPartition, int] = {}
        self._records = 0
        self._listed = 0.0

    def close(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None

    def _topics(self) -> dict[str, TopicDescription]:
        try:
            return self.log.list_topics()
        except (LogError, KafkaException):
            return {}  # the broker did not answer in time: ask again

    def data_topics(self) -> list[str]:
        return sorted(t for t in self._topics() if self._pattern.match(t))

    def data_records(self) -> int:
        """Records read so far from the data topics. Not their end offsets: Tansu's high watermark
        lags the log's end by up to a whole produced batch (thousands of snapshot rows)."""
        try:
            if time.monotonic() - self._listed > 0.5:  # new topics (tables) join
                self._listed = time.monotonic()
                tps = [TopicPartition(t, p) for t, d in self._topics().items() if self._pattern.match(t)
                       for p in range(d.partitions)]  # fmt: skip
                new = [tp for tp in tps if tp not in self._counted]
                if new:
                    if self._counter is None:
                        self._counter = self.log.reader()
                    self._counted.update({tp: self._counter.position(tp) for tp in self._counter.assignment()})
                    self._counted.update(self.log.beginning_offsets(new))
                    self._counter.assign(self._counted)
            if self._counter is not None:
                while batch := self._counter.poll(5000, 0.05):
                    self._records += len(batch)
        except (LogError, KafkaException):
            pass  # the broker did not answer in time: count on at the next call
        return self._records

    def written(self) -> int:
        """The data topics' end offsets: one request. data_records() reads every record back and
        trails the source by seconds, while the whole short snapshot reaches the broker in about
        one (seed 16 saw the snapshot end and its offset flushed before the count reached the
        kill's threshold). Tansu's high watermark may lag the log's end by a produced batch: that
        errs late, by less than the counter does."""
        try:
            tps = [TopicPartition(t, p) for t, d in self._topics().items() if self._pattern.match(t)
                   for p in range(d.partitions)]  # fmt: skip
            return sum(self.log.end_offsets(tps).values()) if tps else 0
        except (LogError, KafkaException):
            return 0

    def last_offset(self) -> dict[str, Any] | None:
        if self.offsets_topic not in self._topics():
            return None
        try:
            stored = [r for r in read_topic(self.log, self.offsets_topic) if r.value is not None]
        except (LogError, KafkaException):
            return None
        # One connector, one source partition: one key, so one partition of the offsets topic.
        return json.loads(max(stored, key=lambda r: (r.timestamp, r.offset)).value) if stored else None

    def in_snapshot(self) -> bool:
        """Also when no offset was stored yet but the snapshot had sent records: the restart
        then takes the snapshot again from its start (offsets are stored every
        offset.flush.interval.ms here, not with each batch as on the embedded log)."""
        offset = self.last_offset()
        if offset is None:
            # Asked after the kill, so nothing more arrives: the counter (which trails the log)
            # reads on until it has seen a record, for a few seconds at most.
            deadline = time.monotonic() + 10
            while self.data_records() == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            return self.data_records() > 0
        return _snapshot_running(offset)

    def snapshot_keys(self, limit: int) -> dict[str, list[tuple[Any, ...]]]:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for topic in self.data_topics():
            table = BY_NAME.get(topic.rsplit(".", 1)[-1])
            if table is None:
                continue
            values: list[bytes | None] = []
            try:
                tps = self.log.partitions(topic)
                reader = self.log.reader()
                try:
                    reader.assign(self.log.beginning_offsets(tps))
                    while len(values) < limit and (batch := reader.poll(5000, 1.0)):
                        values += [r.value for r in batch]
                finally:
                    reader.close()
            except (LogError, KafkaException):
                pass
            out[table.name] = _snapshot_read_keys(table, values[:limit])
        return out


def cdc_env(repo: Path | None) -> tuple[Path, dict[str, str] | None]:
    """The directory and environment `cdc` runs in: this checkout, or `repo` with its own core and
    plugins ahead of the installed (editable) ones, for the CLI and Spark's Python workers alike."""
    if repo is None:
        return REPO, None
    paths = [str(repo), *(str(p) for p in sorted((repo / "plugins").iterdir()) if p.is_dir())]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return repo, {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class CdcRun:
    """One `cdc run` process in its own session, so SIGKILL reaches Spark's JVM and workers too."""

    def __init__(self, job: Path, log: Path, *args: str, repo: Path | None = None) -> None:
        self.log = log
        self.started = time.monotonic()
        cwd, env = cdc_env(repo)
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                cdc_argv("run", str(job), *args),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def last_line(self) -> str:
        """Why the run ended: the CLI's one-line `error:` message, else the root exception of
        the first traceback, else the last line of output."""
        lines = [ln.strip() for ln in self.output().splitlines() if ln.strip()]
        cli = [ln for ln in lines if ln.startswith("error:")]
        if cli:
            return cli[-1][:400]
        raised = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
        return (raised[:1] or lines[-1:] or [""])[0][:400]

    def kill(self) -> int | None:
        """SIGKILL the whole group; the exit code if it had already exited by itself."""
        code = self.proc.poll()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)
        return code

    def wait_for(self, condition: Callable[[], bool], timeout: float, poll: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            if not self.alive():
                return False
            time.sleep(poll)
        return False

    def started_sink(self) -> bool:
        return SINK_STARTED in self.output()


# -- the run -----------------------------------------------------------------------------------------
class Chaos:
    def __init__(self, config: ChaosConfig, workdir: Path, note: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.workdir = workdir
        self.t0 = time.monotonic()
        self._note = note or (lambda m: print(m, file=sys.stderr, flush=True))
        self.result = ChaosResult(config)
        self.rng = random.Random(f"chaos-{config.seed}")

    def note(self, message: str) -> None:
        self._note(f"[chaos {time.monotonic() - self.t0:6.1f}s] {message}")

    def run(self) -> ChaosResult:
        c = self.config
        self.note(
            f"variant {c.variant}, transport {c.transport}, seed {c.seed}, {c.kills} kills, "
            f"db kill {c.db_kill}, workdir {self.workdir}"
        )
        if c.repo is not None:
            self.note(f"cdc runs from {c.repo}")
        try:
            with private_servers(c.variant, c.transport) as servers:
                self._run(servers)
        except Exception as e:  # the harness itself failed: report it, do not hide it
            self.result.errors.append(f"harness: {type(e).__name__}: {e}")
        self.result.wall_s = time.monotonic() - self.t0
        return self.result

    def _run(self, servers: Servers) -> None:
        c, res = self.config, self.result
        db = servers.source
        populate(db, c.seed, c.sizes)
        self.note(f"source populated: {c.sizes}")
        job, chosen = write_job(self.workdir / "job.yaml", servers, self.workdir, c.seed)
        self.note(f"job {job}: {chosen}")
        if servers.kafka is None:
            state = JobState(self.workdir / "state")
        else:
            state = KafkaJobState(self.workdir / "state", servers.kafka.bootstrap)
        runs = self.workdir / "runs"
        runs.mkdir(exist_ok=True)
        writer = Writer(db, c.seed, self.note, pace=c.pace)
        writer.start()
        specials = special_cycles(c.kills)
        plan = plan_kills(c.seed, c.kills, c.db_kill)
        phase_start = time.monotonic()
        run: CdcRun | None = None
        try:
            for i, kill in enumerate(plan):
                for name in ("big", "add_columns", "default_change"):
                    if specials[name] == i:
                        writer.submit(name, *((c.big_rows,) if name == "big" else ()))
                committed_before = state.committed()
                run = CdcRun(job, runs / f"run-{i + 1:02d}.log", repo=c.repo)
                self.note(f"run {i + 1}: started; kill planned: {kill.kind}")
                last = i == len(plan) - 1
                extra = max(0.0, c.duration - (time.monotonic() - phase_start)) if last else 0.0
                record = self._kill(i, kill, run, db, state, writer, extra, committed_before)
                res.kills.append(record)
                self.note(record.describe())
                if record.exited is not None and kill.kind != "db":
                    res.errors.append(f"run {i + 1} exited by itself (code {record.exited}): {record.last_line}")
                run = None
                if writer.failure is not None:
                    break
            for name in ("big", "add_columns", "default_change"):
                if specials[name] >= len(plan):
                    writer.submit(name, *((c.big_rows,) if name == "big" else ()))
        finally:
            if run is not None:
                run.kill()
            writer.stop()
            state.close()
        res.writer = {"transactions": writer.stats.transactions, "rows": writer.stats.rows,
                      "reconnects": writer.stats.reconnects, "conflicts": writer.stats.conflicts}  # fmt: skip
        if writer.failure is not None:
            res.errors.append(f"the writer failed: {type(writer.failure).__name__}: {writer.failure}")
        if res.kills and not res.kills[0].in_snapshot:
            res.errors.append(
                "the first kill did not land during the initial snapshot (it completed first): "
                "make the initial tables bigger"
            )
        self._finish(job, servers, runs)

    def _kill(
        self,
        i: int,
        kill: Kill,
        run: CdcRun,
        db: SourceDb,
        state: JobState,
        writer: Writer,
        extra: float,
        committed_before: int,
    ) -> KillRecord:
        c = self.config
        if kill.kind == "snapshot":
            threshold = max(1, int(sum(c.sizes.values()) * kill.fraction))
            if not run.wait_for(lambda: state.written() >= threshold, 300, poll=0.01):
                self.note(f"run {i + 1}: {threshold} records never reached the log")
        elif kill.kind in ("batch", "db"):
            if not run.wait_for(run.started_sink, 300, poll=0.1):
                self.note(f"run {i + 1}: the sink query never started")
            if kill.kind == "batch":
                # Progress first (else every kill could hit the same first batch after a restart),
                # then a batch in flight.
                goal = committed_before + kill.batches
                if not run.wait_for(lambda: state.committed() >= goal, 300, poll=0.05):
                    self.note(f"run {i + 1}: the sink did not commit {kill.batches} micro-batches in 300 s")
                if not run.wait_for(state.in_batch, 60):
                    self.note(f"run {i + 1}: no micro-batch started within 60 s")
            time.sleep(kill.delay)
            if kill.kind == "db":
                self._kill_database(db, kill)
                time.sleep(self.rng.uniform(2.0, 6.0))  # the job (and the writer) meet the restarted server
        else:
            time.sleep(kill.delay)
        if extra:
            self.note(f"run {i + 1}: kept alive {extra:.0f}s more (--duration)")
            time.sleep(extra)
        exited = run.kill()
        # A batch the previous run left planned but uncommitted is only this run's once its query started.
        started = run.started_sink()
        record = KillRecord(i, kind=kill.kind, at_s=run.elapsed, in_snapshot=state.in_snapshot(),
                            in_batch=started and state.in_batch(), sink_started=started, exited=exited,
                            batch=state.planned())  # fmt: skip
        if exited is not None:
            record.last_line = run.last_line()
        if kill.kind == "snapshot":
            self._delete_snapshotted(state, writer, threshold)
        return record

    def _kill_database(self, db: SourceDb, kill: Kill) -> None:
        self.note(f"killing the source database (-9); down for {kill.down:.1f}s")
        db.server.kill()
        self.result.db_kills += 1
        time.sleep(kill.down)
        db.server.restart()
        self.note("source database restarted on its data directory")

    def _delete_snapshotted(self, state: JobState, writer: Writer, threshold: int) -> None:
        """Defect 2's scenario: rows the killed snapshot already sent are deleted before the restart."""
        total = 0
        for table, keys in sorted(state.snapshot_keys(threshold).items()):
            if not keys:
                continue
            chosen = self.rng.sample(keys, min(len(keys), 25))
            special = writer.submit("delete", table, chosen)
            if not special.done.wait(120):
                self.result.errors.append(f"deleting snapshotted rows of {table} did not finish in 120 s")
            total += len(chosen)
        self.note(f"deleted {total} rows that the killed snapshot had already sent")

    def _finish(self, job: Path, servers: Servers, runs: Path) -> None:
        res = self.result
        self.note("writer stopped; final run --until-caught-up")
        final = CdcRun(job, runs / "final.log", "--until-caught-up", repo=self.config.repo)
        try:
            code = final.proc.wait(self.config.catch_up_timeout)
        except subprocess.TimeoutExpired:
            final.kill()
            code = None
            res.errors.append(f"the final --until-caught-up run did not finish in {self.config.catch_up_timeout:.0f}s")
        if code not in (0, None):
            res.errors.append(f"the final --until-caught-up run exited {code}: {final.last_line()}")
        self.note(f"final run exited {code}; comparing")
        lake = self.workdir / "lake"
        if servers.target is None and servers.lake_format == "iceberg":
            res.diffs = compare_all(servers.source, lambda name: iceberg_rows(lake, ICEBERG_NAMESPACE, name))
        elif servers.target is None:
            res.diffs = compare_all(servers.source, lambda name: delta_rows(lake / name))
        else:
            dsn = servers.target.dsn
            res.diffs = compare_all(servers.source, lambda name: warehouse_rows(dsn, WAREHOUSE_SCHEMA, name))
        self._verify(job)

    def _verify(self, job: Path) -> None:
        """`cdc verify` must agree: same exit status, same counts per table."""
        res = self.result
        cwd, env = cdc_env(self.config.repo)
        proc = subprocess.run(
            cdc_argv("verify", str(job), "--json", "--quiet", "--max-diffs", "5"),
            capture_output=True,
            text=True,
            timeout=600,
            cwd=cwd,
            env=env,
        )
        try:
            doc = json.loads(proc.stdout)
        except ValueError:
            res.verify = {"exit": proc.returncode, "differences": None}
            res.errors.append(f"cdc verify exited {proc.returncode} without a report: {proc.stderr.strip()[-300:]}")
            return
        res.verify = {"exit": proc.returncode, "differences": doc.get("differences")}
        ours_ok = all(d.ok for d in res.diffs)
        if (proc.returncode == 0) != ours_ok:
            res.errors.append(
                f"cdc verify disagrees: it exited {proc.returncode} ({doc.get('differences')} differences), "
                f"the row-by-row comparison found {res.missing} missing, {res.extra} extra, {res.differing} differing"
            )
        by_table = {str(t.get("source", "")).rsplit(".", 1)[-1]: t for t in doc.get("tables", [])}
        for d in res.diffs:
            t = by_table.get(d.table)
            if t is None:
                res.errors.append(f"cdc verify did not report {d.table}")
                continue
            ours = (len(d.missing), len(d.extra) + len(d.duplicates), len(d.differing))
            theirs = (t.get("missing"), int(t.get("extra", 0)) + int(t.get("duplicates", 0)), t.get("changed"))
            if ours != theirs:
                res.errors.append(
                    f"cdc verify disagrees on {d.table}: it counts (missing, extra, changed) {theirs}, "
                    f"the row-by-row comparison {ours}"
                )


def _snapshot_running(offset: dict[str, Any]) -> bool:
    """A stored source offset taken inside a snapshot that has not completed."""
    snap = offset.get("snapshot")
    return snap not in (None, False, "false", "FALSE") and not offset.get("snapshot_completed")
