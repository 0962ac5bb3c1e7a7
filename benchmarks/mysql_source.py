"""MySQL/MariaDB source throughput against the bare python-mysql-replication loop and a bare SELECT.

Run: `python benchmarks/mysql_source.py` (about 1-2 minutes on 2 cores; needs the mariadbd
binaries the test rig uses, or CDC_TEST_MYSQL_URL). Prints one JSON line per figure (see
benchmarks/_common.py); progress goes to stderr.

- Generates N row changes (inserts in transactions of 1000 rows) in a private MariaDB.
- streaming, connector alone: MySqlConnectorTask resumed at the binlog position before
  the changes, polled until all N change events are out. Baseline: the bare library loop
  over the same binlog (BinLogStreamReader, FULL metadata, `.rows` of every rows event).
- streaming, single-row transactions (BENCH_SMALL_TXNS, 20k; `BENCH_ONLY=small_txns` runs just
  these): one autocommit INSERT each, as a writer at full speed makes them, so every row comes with
  its own GTID, TABLE_MAP and XID events. The connector alone and end to end into the embedded log,
  both against the bare loop over the same transactions.
- streaming end to end: a Worker + StandaloneHerder in this process (JsonConverter with
  schemas) into the embedded SQLite log and into Kafka (librdkafka's mock cluster), until
  the N records are in the log. Same baseline.
- snapshot: the N rows as `r` events (snapshot.mode=initial_only), with snapshot.max.threads
  = 1 and 2, vs a bare streaming `SELECT *` (PyMySQL SSCursor, fetchmany) of the same table,
  best of BENCH_ROUNDS (2) interleaved rounds; each round's figures and load go to stderr.
  `BENCH_ONLY=snapshot` runs just these.
- Avro (issue 20): the same end-to-end run into the embedded log with AvroConverter for keys
  and values (the worker's own registry); events/s against the same bare loop, and the bytes
  per record (key + value) against the JsonConverter records of the same events. The converters
  alone on the connector's first 50k records (keys and values): AvroConverter's
  from_connect_batch (the worker's path) and from_connect_data one by one, and JsonConverter's
  from_connect_batch, against bare fastavro writing the same Avro datums. `BENCH_ONLY=avro` runs
  these and the JSON end-to-end run, BENCH_ROUNDS times (2).
- memory: peak RSS growth while the connector drains the N-event backlog, with
  max.queue.size bounding what it holds (the figure's baseline is the bare loop's growth).

Each connector run is timed until the N-th event is out, so the last partial batch waits up
to poll.interval.ms (50 ms here) exactly as Debezium's ChangeEventQueue does. The machine's
other load moves every figure; compare the ratios of one run.

Measured (2 cores, 2026-11-22): 200k changes: streaming 1.55-2.19x the bare loop (row
images decoded by cdc_mysql.row_decoder; 0.76-0.80 when the library decoded them), end to
end 0.46-0.53 (embedded log) and 0.48-0.59 (Kafka mock), snapshot 0.37-0.43, RSS growth
21-29 MB; the spread is between runs of one day, and the commit before and after a change
measured back to back differ by less. 1M changes (BENCH_ROWS=1000000): streaming 1.88x,
end to end 0.59/0.59, snapshot 0.45, RSS growth 35.5 MB (bounded by max.queue.size, not by
the backlog).

Snapshot (issue 22, 2 cores shared with other work, load average 5-13, 2026-11-26), 200k
rows: snapshot.max.threads=1 0.72-0.95 of the bare SELECT (0.41 before: records built from
result tuples by a compiled emitter, DATETIME parsed by datetime.fromisoformat);
snapshot.max.threads=2 0.44-0.71; 1M rows: 0.80 and 0.61. A reader process only pays off with a core to spare, and
here every core is busy (the reader, this process and the server's threads), so the reader's
start, the pickled batches and the server's second stream cost more than they save.

snapshot.max.threads=2 after issue 22's second round (2026-11-27, 200k rows, 3 rounds a run, the
commit before and after alternated): load 5-6, per round 0.33-0.60 before, 0.66-1.01 after (the
figure, best of 3: 0.49-0.57 before, 0.83-0.96 after); load 3, 0.41-0.95 before, 0.79-1.22 after
(figure 0.63-0.65, 1.06-1.21); load 4-5 with the own connection's reads decoded by column too,
0.53-0.60 before, 0.95-1.26 after (figure 0.56-0.57, 0.95-1.25). 1M rows (BENCH_ROWS, 2 rounds):
0.99-1.09 after at load 3; 0.31-0.55 before at load 5-6. CPU per 200k rows (load 5-10): this
process 1.09 s before, 0.74 s after (0.42 s of it had been the GC promoting a whole fetch of
buffered records), the reader 0.80 s before, 0.45 s after (rows parsed off the wire by
snapshot_fetch.py, datetimes sent as text); the bare SELECT 0.95 s. What is left in this process
is the record building (1.8 us a row: five objects and their value lists) and about 0.2 s of task
start (the reader's interpreter and PyMySQL import, the connections' TLS contexts), which a
200k-row table does not amortize. Quiet machine (load 1.0-1.1, 2026-11-27 07:12, 3 rounds): bare
137-157k rows/s; threads=2 0.94-1.08 per round (figure 0.94), threads=1 0.89-0.97 (figure 0.89). At
load 1.3 the evening before: threads=2 0.79/0.81, threads=1 0.66/0.67 (bare 195k rows/s).

Single-row transactions (2026-11-27, 20k, load 1-2): before cdc_mysql/table_map_reuse.py the connector
alone made 0.73 of the bare loop and 0.42 end to end into the embedded log; with it 1.62 and 0.97 (same
runs back to back; 9.7k and 5.8k transactions/s). The library parsed every transaction's TABLE_MAP
(half of the reader's time under cProfile). Grouping the log transactions behind a busy commit
(cdc/runtime/source_task.py) made no difference measurable here (end to end 0.70/0.82 without, 0.65/1.00
with, alternated): draining a backlog polls full batches; it matters for a live stream's small polls.

Avro (issues 20, 21; 2 cores shared with other work, load average 9-27, 2026-11-26; the bare
loop itself ran 10k-49k events/s), 200k changes, 7 rounds (5 before the batch path): a record
(key + value) is 166.2 bytes in Avro against 3128.8 with JsonConverter's schemas (0.053). End to
end into the embedded log, Avro 0.37-0.77 of the bare loop where JSON made 0.45-0.65 in the same
rounds (Avro/JSON 0.58-1.38 per round, median 0.83) with AvroConverter.from_connect_batch;
converting one record at a time (before it), Avro/JSON 0.79-1.01: the batch path's gain is inside
this load's spread. Converters alone: AvroConverter's batch 0.49-0.85 of bare fastavro, one by one
0.54-0.74, JsonConverter's batch 1.36-1.97. fastavro's schemaless_writer is most of Avro's cost
(a profile at this load, per value record: fastavro 38 us, the Connect-to-datum mapping 20 us,
the batch 55 us, one by one 77 us), so an Avro record costs about 2.5x a JSON one to encode and
is 19x smaller.

Group commit in the embedded log (200k changes, BENCH_ONLY=avro, 4 runs a side of 2 rounds,
the commit before and after alternated, load 4-12 from other work on the 2 cores): end to end JSON
0.44-0.66 before, 0.25-0.83 after; Avro 0.32-0.56 before, 0.31-0.81 after; no change beyond this
load's spread, as expected: one task's transactions already group its polls (source_task.py), and
what its writer thread waits on is bytes, not syncs. Sampled every 2 ms, the task's log writer
thread was busy 84-87% of the JSON runs (inserts 42-51%, COMMIT 32-40%) and 37-53% of the Avro
runs, before and after alike. A JSON record with schemas is ~3 KB, written twice (WAL, then the
checkpoint into the database file): with commits of 4096 such records, synchronous=NORMAL is no
faster than FULL here (the WAL's sync per commit and the checkpoint's syncs move the same bytes),
only OFF is (about 2x). Group commit pays where commits are small and come from several writers
at once: benchmarks/transport.py (`BENCH_ONLY=group`).

Schema identity (issue 21, load 1.9-13, 3 runs a side): unchanged here (streaming 1.54-1.80 before, 1.64-1.84
after; end to end 0.43-0.55, 0.53-0.58); records with equal copies of cached schemas (snapshot then binlog, any
DDL) cost JsonConverter 12.8-14.1 us against 6.2-6.3 (load 2.8), now 6.5 either way.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import best_of_pair, emit, emit_throughput, note, timed

from cdc.api import OffsetStorageReader
from cdc.runtime.gc_tuning import raise_young_threshold
from cdc_mysql.task import MySqlConnectorTask
from tests.rig import mariadb as mariadb_rig

N = int(os.environ.get("BENCH_ROWS", "200000"))
SMALL_TXNS = int(os.environ.get("BENCH_SMALL_TXNS", "20000"))
TXN = 1000
DB = "bench"


class _Offsets(OffsetStorageReader):
    def __init__(self, offset: dict[str, Any] | None) -> None:
        self.offset_ = offset

    def offsets(self, partitions: list[Any]) -> list[dict[str, Any] | None]:
        return [self.offset_ for _ in partitions]


class _Context:
    def __init__(self, props: dict[str, str], offset: dict[str, Any] | None) -> None:
        self._props, self._reader = props, _Offsets(offset)

    def configs(self) -> dict[str, str]:
        return dict(self._props)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    def transaction_context(self) -> None:
        return None


def _props(server: Any, server_id: int, **extra: str) -> dict[str, str]:
    return {
        "name": "bench-mysql",
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": server.cdc_user,
        "database.password": server.cdc_password,
        "database.server.id": str(server_id),
        "topic.prefix": "bench",
        "database.include.list": DB,
        "poll.interval.ms": "50",
        **extra,
    }


def _generate(server: Any) -> tuple[str, int]:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        cur.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32), c DOUBLE, d DATETIME(3))")
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
        t0 = time.perf_counter()
        conn.autocommit(False)
        for start in range(0, N, TXN):
            rows = ",".join(
                f"({i}, {i * 7}, 'name-{i}', {i / 3}, '2024-01-02 03:04:05.678')" for i in range(start, start + TXN)
            )
            cur.execute(f"INSERT INTO {DB}.t VALUES {rows}")
            conn.commit()
        note(f"generated {N} inserts in {time.perf_counter() - t0:.1f}s")
    return str(file), int(pos)


def _raw_loop(server: Any, file: str, pos: int, want: int | None = None) -> float:
    want = N if want is None else want
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    t0 = time.perf_counter()
    stream = BinLogStreamReader(
        {"host": server.host, "port": server.port, "user": server.user, "password": server.password},
        server_id=9001,
        resume_stream=True,
        log_file=file,
        log_pos=pos,
        blocking=False,
        only_events=[WriteRowsEvent],
        enable_logging=False,
    )
    n = 0
    for ev in stream:
        for row in ev.rows:
            n += len(row["values"]) and 1
        if n >= want:
            break
    stream.close()
    if n != want:
        raise RuntimeError(f"raw loop saw {n} rows, expected {want}")
    return time.perf_counter() - t0


def _connector_alone(server: Any, props: dict[str, str], offset: dict[str, Any] | None, want: int) -> float:
    task = MySqlConnectorTask()
    task.initialize(_Context(props, offset))  # type: ignore[arg-type]
    t0 = time.perf_counter()
    task.start(dict(props))
    n = 0
    try:
        while n < want:
            batch = task.poll() or []
            n += sum(1 for r in batch if r.value is not None and r.topic.startswith("bench.bench."))
    finally:
        task.stop()
    return time.perf_counter() - t0


def _worker_run(
    server: Any, transport: dict[str, str], offset: dict[str, Any], server_id: int, table: str = "t", want: int = 0
) -> float:
    want = want or N
    from cdc.runtime.plugins import PluginRegistry
    from cdc.runtime.standalone import StandaloneHerder
    from cdc.runtime.transport import open_log, open_offset_store, open_status_store
    from cdc.runtime.worker import Worker
    from cdc.runtime.worker_config import WorkerConfig
    from cdc.storage.offsets import offset_key, offset_value

    props = _props(server, server_id)
    config = WorkerConfig(transport)
    log_ = open_log(config)
    store = open_offset_store(config, log_)
    store.start()
    store.set({offset_key(props["name"], {"server": "bench"}): offset_value(offset)})
    store.stop()
    worker = Worker(config, PluginRegistry.discover(), log_, open_offset_store(config, log_),
                    open_status_store(config, log_), "bench")  # fmt: skip
    herder = StandaloneHerder(worker)
    herder.start()
    topic = f"bench.bench.{table}"
    t0 = time.perf_counter()
    try:
        herder.put_connector_config(props)
        while True:
            desc = log_.describe_topic(topic)
            if desc is not None:
                end = sum(log_.end_offsets([tp])[tp] for tp in _partitions(log_, topic))
                if end >= want:
                    break
            time.sleep(0.05)
        return time.perf_counter() - t0
    finally:
        herder.stop()
        log_.close()


def _small_txn_figures(server: Any) -> None:
    """Streaming single-row transactions (a writer at full speed, one autocommit INSERT each): every
    row brings its own GTID, TABLE_MAP and XID event, so per-transaction costs dominate."""
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {DB}.s (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32), c DOUBLE, d DATETIME(3))")
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
        conn.autocommit(True)
        t0 = time.perf_counter()
        for i in range(SMALL_TXNS):
            cur.execute(f"INSERT INTO {DB}.s VALUES ({i}, {i * 7}, 'name-{i}', {i / 3}, '2024-01-02 03:04:05.678')")
        note(f"generated {SMALL_TXNS} single-row transactions in {time.perf_counter() - t0:.1f}s")
    offset = {"file": str(file), "pos": int(pos)}
    ids = iter(range(7300, 7400))
    ours, bare = best_of_pair(
        lambda: _connector_alone(server, _props(server, next(ids)), offset, SMALL_TXNS),
        lambda: _raw_loop(server, str(file), int(pos), SMALL_TXNS),
        runs=2,
    )
    emit_throughput("mysql.streaming.single_row_txns.connector", SMALL_TXNS, ours, bare, "txns/s")
    with tempfile.TemporaryDirectory() as state:
        e2e = _worker_run(server, {"transport": "embedded", "state.dir": state}, offset, next(ids), "s", SMALL_TXNS)
    emit_throughput("mysql.streaming.single_row_txns.e2e_embedded_json", SMALL_TXNS, e2e, bare, "txns/s")


def _partitions(log_: Any, topic: str) -> list[Any]:
    from cdc.log.base import TopicPartition

    desc = log_.describe_topic(topic)
    count = desc.partitions if hasattr(desc, "partitions") else int(desc)
    return [TopicPartition(topic, p) for p in range(count)]


def _bare_select(server: Any) -> float:
    import pymysql
    import pymysql.cursors

    t0 = time.perf_counter()
    conn = pymysql.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                           cursorclass=pymysql.cursors.SSCursor)  # fmt: skip
    n = 0
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {DB}.t")
        while batch := cur.fetchmany(10240):
            n += len(batch)
    conn.close()
    if n != N:
        raise RuntimeError(f"bare SELECT returned {n} rows, expected {N}")
    return time.perf_counter() - t0


def _snapshot_figures(server: Any) -> None:
    """Snapshot rows/s (snapshot.mode=initial_only) with snapshot.max.threads=1 and 2 against a bare
    streaming SELECT of the same table, best of 2 interleaved rounds each (issue 22)."""
    note("snapshot: connector (initial_only, snapshot.max.threads=1 and 2) vs bare SELECT ...")
    ids = iter(range(7300, 7400))
    best = {1: float("inf"), 2: float("inf")}
    bare_sel = float("inf")
    for round_ in range(int(os.environ.get("BENCH_ROUNDS", "2"))):
        bare = _bare_select(server)
        bare_sel = min(bare_sel, bare)
        took = {}
        for threads in best:
            props = _props(server, next(ids), **{"snapshot.mode": "initial_only", "snapshot.max.threads": str(threads)})
            took[threads] = _connector_alone(server, props, None, N)
            best[threads] = min(best[threads], took[threads])
        note(
            f"snapshot round {round_ + 1} (load {os.getloadavg()[0]:.1f}): bare {N / bare:.0f} rows/s, "
            + ", ".join(f"threads={t} {N / s:.0f} rows/s ({bare / s:.2f})" for t, s in took.items())
        )
    emit_throughput("mysql.snapshot.connector", N, best[1], bare_sel, "rows/s")
    emit_throughput("mysql.snapshot.connector_max_threads_2", N, best[2], bare_sel, "rows/s")


def _avro_figures(server: Any, offset: dict[str, Any], bare: float, server_id: int = 7400) -> None:
    """End to end into the embedded log in Avro: events/s, and bytes per record next to JSON's.

    JSON's bytes are those of the same events: the first records read back from the Avro log
    (through the log's registry) and written again with the worker's JsonConverter."""
    from cdc.converters.avro import AvroConverter
    from cdc.converters.json import JsonConverter
    from cdc.log.embedded import EmbeddedLog
    from cdc.log.schema_registry import open_schema_registry
    from cdc.log.schema_registry_client import EmbeddedSchemaRegistryClient

    avro = "io.confluent.connect.avro.AvroConverter"
    with tempfile.TemporaryDirectory() as state:
        transport = {"transport": "embedded", "state.dir": state, "key.converter": avro, "value.converter": avro}
        seconds = _worker_run(server, transport, offset, server_id)
        emit_throughput("mysql.streaming.e2e_embedded_avro", N, seconds, bare, "events/s")
        log_ = EmbeddedLog(state, auto_create_topics=False)
        store = open_schema_registry(log_)
        convs = {}
        for role in ("key", "value"):
            a, j = AvroConverter(), JsonConverter()
            a.use_registry(EmbeddedSchemaRegistryClient(store))  # type: ignore[arg-type]
            a.configure({}, role == "key")
            j.configure({"replace.null.with.default": "false"}, role == "key")
            convs[role] = (a, j)
        sizes = {"avro": 0, "json": 0}
        reader = log_.reader()
        reader.assign({tp: 0 for tp in _partitions(log_, "bench.bench.t")})
        seen = 0
        while seen < 5000:
            batch = reader.poll(1000, 5.0)
            if not batch:
                break
            for r in batch:
                for role, data in (("key", r.key), ("value", r.value)):
                    if data is None:
                        continue
                    a, j = convs[role]
                    sv = a.to_connect_data(r.topic, data)
                    sizes["avro"] += len(data)
                    sizes["json"] += len(j.from_connect_data(r.topic, sv.schema, sv.value) or b"")
                seen += 1
        reader.close()
        store.close()  # type: ignore[union-attr]
        log_.close()
    emit("mysql.record_bytes.avro_vs_json [bytes/record, lower is better]", sizes["avro"] / seen, "bytes",
         sizes["json"] / seen)  # fmt: skip


def _avro_only(server: Any, file: str, pos: int, offset: dict[str, Any]) -> None:
    """`BENCH_ONLY=avro`: the bare loop, then JSON and Avro end to end into the embedded log, each
    figure against the best bare loop of the run (BENCH_ROUNDS rounds, 2 by default)."""
    _convert_figures(server, offset)
    bare = _raw_loop(server, file, pos)
    ids = iter(range(7500, 7600))
    for _ in range(int(os.environ.get("BENCH_ROUNDS", "2"))):
        bare = min(bare, _raw_loop(server, file, pos))
        with tempfile.TemporaryDirectory() as state:
            e2e = _worker_run(server, {"transport": "embedded", "state.dir": state}, offset, next(ids))
        emit_throughput("mysql.streaming.e2e_embedded_json", N, e2e, bare, "events/s")
        _avro_figures(server, offset, bare, next(ids))


def _polled(server: Any, offset: dict[str, Any], want: int, server_id: int) -> list[Any]:
    """The first `want` change records of the connector alone (the records the worker converts)."""
    task = MySqlConnectorTask()
    props = _props(server, server_id)
    task.initialize(_Context(props, offset))  # type: ignore[arg-type]
    task.start(dict(props))
    out: list[Any] = []
    try:
        while len(out) < want:
            out.extend(r for r in task.poll() or [] if r.value is not None and r.topic.startswith("bench.bench."))
    finally:
        task.stop()
    return out[:want]


def _convert_figures(server: Any, offset: dict[str, Any], server_id: int = 7600) -> None:
    """The converters alone on the connector's records (keys and values): AvroConverter's
    from_connect_batch and from_connect_data, and JsonConverter's from_connect_batch, against bare
    fastavro writing the same Avro datums (schemaless_writer into one buffer), best of 3 rounds."""
    import io

    import fastavro

    from cdc.converters.avro import AvroConverter
    from cdc.converters.json import JsonConverter

    count = min(N, 50000)
    records = _polled(server, offset, count, server_id)
    topics = [r.topic for r in records]
    columns = {"key": ([r.key_schema for r in records], [r.key for r in records]),
               "value": ([r.value_schema for r in records], [r.value for r in records])}  # fmt: skip
    convs: dict[str, dict[str, Any]] = {"avro": {}, "json": {}}
    for role in columns:
        a = AvroConverter()
        a.configure({"schema.registry.url": "mock://bench-mysql"}, role == "key")
        j = JsonConverter()
        j.configure({}, role == "key")
        convs["avro"][role], convs["json"][role] = a, j
    datums = {role: [convs["avro"][role].avro_data.writer(s).write(v) for s, v in zip(*columns[role], strict=True)]
              for role in columns}  # fmt: skip
    codecs = {role: convs["avro"][role].avro_data.writer(columns[role][0][0]).codec for role in columns}

    def bare() -> None:
        for role in columns:
            out = io.BytesIO()
            for d in datums[role]:
                fastavro.schemaless_writer(out, codecs[role], d)

    def batch(kind: str) -> Any:
        return lambda: [convs[kind][role].from_connect_batch(topics, *columns[role]) for role in columns]

    def one_by_one() -> None:
        for role, (schemas, values) in columns.items():
            convert = convs["avro"][role].from_connect_data
            for t, sc, v in zip(topics, schemas, values, strict=True):
                convert(t, sc, v)

    assert batch("avro")() == [[convs["avro"][r].from_connect_data(t, s, v) for t, s, v in
                                zip(topics, *columns[r], strict=True)] for r in columns]  # fmt: skip
    best: dict[str, float] = {}
    for _ in range(3):
        for name, fn in (("bare", bare), ("avro_batch", batch("avro")), ("avro_one_by_one", one_by_one),
                         ("json_batch", batch("json"))):  # fmt: skip
            best[name] = min(best.get(name, float("inf")), timed(fn))
    for name in ("avro_batch", "avro_one_by_one", "json_batch"):
        emit_throughput(f"mysql.convert.{name}", count, best[name], best["bare"], "records/s")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return
    # The worker raises the GC's young threshold on its task threads (cdc.runtime.gc_tuning);
    # set it here for the whole process, so the bare loop runs under the same GC as ours.
    raise_young_threshold()
    with mariadb_rig.provide() as server:
        note(f"MariaDB on port {server.port}; generating {N} row changes ...")
        file, pos = _generate(server)
        offset = {"file": file, "pos": pos}
        if os.environ.get("BENCH_ONLY") == "snapshot":  # the snapshot figures alone
            _snapshot_figures(server)
            return
        if os.environ.get("BENCH_ONLY") == "avro":  # JSON and Avro end to end, embedded log, alone
            _avro_only(server, file, pos, offset)
            return
        if os.environ.get("BENCH_ONLY") == "small_txns":
            _small_txn_figures(server)
            return

        note("streaming: bare python-mysql-replication loop vs the connector alone ...")
        rss0 = _rss_mb()
        bare = _raw_loop(server, file, pos)
        rss_bare = _rss_mb() - rss0
        ids = iter(range(7000, 7100))
        ours, bare2 = best_of_pair(
            lambda: _connector_alone(server, _props(server, next(ids)), offset, N),
            lambda: _raw_loop(server, file, pos),
            runs=2,
        )
        bare = min(bare, bare2)
        rss_ours = _rss_mb() - rss0
        emit_throughput("mysql.streaming.connector", N, ours, bare, "events/s")

        note(f"streaming {SMALL_TXNS} single-row transactions: bare loop vs connector alone, and end to end ...")
        _small_txn_figures(server)

        note("streaming end to end into the embedded log ...")
        with tempfile.TemporaryDirectory() as state:
            e2e = _worker_run(server, {"transport": "embedded", "state.dir": state}, offset, 7100)
        emit_throughput("mysql.streaming.e2e_embedded_json", N, e2e, bare, "events/s")
        note("streaming end to end into the embedded log in Avro ...")
        _avro_figures(server, offset, bare)
        note("converters alone: Avro (batch, one by one) and JSON vs bare fastavro ...")
        _convert_figures(server, offset)

        note("streaming end to end into Kafka (librdkafka mock cluster) ...")
        try:
            from confluent_kafka import Producer

            keepalive = Producer({"test.mock.num.brokers": 3})
            md = keepalive.list_topics(timeout=10)
            bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
            # The mock cluster has no CreateTopics: a metadata request auto-creates (4 partitions).
            for internal in ("connect-status", "connect-offsets", "connect-configs"):
                keepalive.list_topics(internal, timeout=10)
            with tempfile.TemporaryDirectory() as state:
                kafka = {
                    "transport": "kafka",
                    "bootstrap.servers": bootstrap,
                    "offset.storage.file.filename": str(Path(state) / "offsets.json"),
                    "status.storage.partitions": "4",
                    "offset.flush.interval.ms": "1000",
                }
                e2e_k = _worker_run(server, kafka, offset, 7200)
            emit_throughput("mysql.streaming.e2e_kafka_mock_json", N, e2e_k, bare, "events/s")
        except Exception as e:  # report, never hide: the figure is missing and says why
            note(f"kafka mock run failed: {e!r}")
            print(json.dumps({"metric": "mysql.streaming.e2e_kafka_mock_json", "error": repr(e)}), flush=True)

        _snapshot_figures(server)

        emit("mysql.streaming.peak_rss_growth_mb [lower is better]", rss_ours, "MB", max(rss_bare, 0.1))


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
