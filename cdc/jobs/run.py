"""`cdc run`: one job's source connector and its Spark sink in one process.

The source runs in an in-process worker (embedded log or Kafka, as the job says); the
sink is a Spark streaming query over the same topics. With `until_caught_up` the source
runs until its stored offset reaches the database position read at start (and holds no running
incremental snapshot), then the sink
applies everything in the log (Trigger.AvailableNow) and the run exits: cron and Airflow
style catch-up runs.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc.api.errors import ConnectException
from cdc.jobs.batch_watch import DEFAULT_BATCH_TIMEOUT_MS, BatchWatch
from cdc.jobs.checkpoints import checkpoint_dir, make_private_checkpoint_dir
from cdc.jobs.formats import sink_source_options
from cdc.jobs.incremental_status import queued_tables
from cdc.jobs.sink_config import sink_config
from cdc.jobs.source_positions import _family, _mysql_reached, _postgres_reached, position_text, source_position
from cdc.jobs.spec import JobSpec
from cdc.jobs.table_names import tables_to_name
from cdc.jobs.topics import data_topic_pattern, heartbeat_topic, topic_prefix
from cdc.jobs.verify.periodic import PeriodicVerify, VerifyCollector, VerifyFigures, VerifySchedule
from cdc.jobs.watch import Watch
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.state_lock import StateDirLock
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State

log = logging.getLogger(__name__)

# Admission control when the job sets no spark.maxEventsPerTrigger: a snapshot or a long
# outage leaves millions of events in the log, and Delta/Iceberg collect each batch's
# winners on the driver (bounded by spark.driver.maxResultSize, 1 GiB by default). 200k
# events of ~1-2 KB stay well inside it; larger batches gain little (per-batch overhead
# is about a second).
DEFAULT_MAX_EVENTS_PER_TRIGGER = 200_000


# -- Spark ----------------------------------------------------------------------------------
# Spark's own console output in a `cdc run` without --verbose: no stage bars, and log4j at WARN
# from the JVM's first line (cdc/jobs/spark-log4j2.properties; Spark's default profile prints
# its "Setting default log level" banner and start-up lines first). A job's spark.conf wins.
_QUIET_LOG4J = Path(__file__).with_name("spark-log4j2.properties")


def _quiet_spark_conf(conf: dict[str, Any]) -> dict[str, str]:
    quiet = {"spark.ui.showConsoleProgress": "false"}
    if "spark.driver.extraJavaOptions" not in conf:
        quiet["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{_QUIET_LOG4J}"
    return quiet


def _spark_session(job: JobSpec, verbose: bool = False) -> Any:
    # Spark's Python workers must run this interpreter, which has cdc and the plugins.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark_conf = job.spark or {}
    builder = (
        SparkSession.builder.master(str(spark_conf.get("master", "local[2]")))
        .appName(f"cdc-{job.name}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
    )
    conf = spark_conf.get("conf") or {}
    for k, v in ({} if verbose else _quiet_spark_conf(conf)).items():
        builder = builder.config(k, v)
    for k, v in conf.items():
        builder = builder.config(k, str(v))
    return builder.getOrCreate()


def _offset_sum(text: str | None) -> int:
    """The sum of a `cdc` source offset's positions (`{"topic": {"0": 5, ...}}`); 0 for none yet."""
    if not text or text == "null":
        return 0
    return sum(int(o) for parts in json.loads(text).values() for o in parts.values())


_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$")
# Our own exception classes by their module path, whatever their name ends in (LineageBreak).
_OUR_ERROR = re.compile(r"^(cdc\w*(?:\.\w+)+): (.+)$")


def _failure_text(error: object) -> str:
    """The text of a failed query's exception and of its causes, without the query plan.

    PySpark's StreamingQueryException keeps Spark's message (for a foreachBatch failure: the
    Python traceback of the batch function, and inside it the Python worker's) in `_desc`, and
    the exception it was converted from in `_cause`; `str()` adds the JVM stack when
    spark.sql.pyspark.jvmStacktrace.enabled is on. Any other object is taken by its `str()`.
    """
    texts: list[str] = []
    seen: set[int] = set()
    current: object = error
    while current is not None and id(current) not in seen and len(texts) < 8:
        seen.add(id(current))
        desc = getattr(current, "_desc", None)
        texts.append(desc if isinstance(desc, str) and desc else str(current))
        current = getattr(current, "_cause", None)
    return "\n".join(t.split("\n=== Streaming Query ===", 1)[0] for t in texts)


def sink_failure(error: object) -> str:
    """The root cause of a failed sink query, without Spark's and Python's stack traces.

    A StreamingQueryException's text is the whole Python traceback of foreachBatch plus,
    for JVM failures, the Java stack: the last Python exception line names the error, and
    for a Py4J error the innermost `Caused by:` says what the JVM refused. The full text
    goes to the log at DEBUG.
    """
    text = _failure_text(error)
    log.debug("sink query failed: %s", text)
    return root_cause(text) or type(error).__name__


def sink_failure_message(error: object, verbose: bool = False) -> str:
    """The one line `cdc run` ends with when its sink query failed.

    The sink's own errors (cdc_spark's) name the table and the cause and say what to fix;
    for any other error the line says where the full trace is.
    """
    cause = sink_failure(error)
    if verbose or _own_error(_failure_text(error)):
        return f"the sink failed: {cause}"
    return f"the sink failed: {cause} (run `cdc run --verbose` to see the full trace)"


def _own_error(text: str) -> bool:
    return any((m := _PYTHON_ERROR.match(line)) and m.group(1).startswith("cdc") for line in text.splitlines())


def root_cause(text: str) -> str:
    """The error a Python (and Java) traceback ends in: our own errors by their advice alone."""
    found = [m for line in text.splitlines() if (m := _PYTHON_ERROR.match(line) or _OUR_ERROR.match(line))]
    ours = [m for m in found if m.group(1).startswith("cdc")]
    if ours:  # our errors say what to do, wherever Spark's wrapping put them
        return ours[-1].group(2)
    if not found:
        return text.strip().splitlines()[0] if text.strip() else ""
    name, message = found[-1].group(1), found[-1].group(2)
    if name.endswith("Py4JJavaError"):
        causes = [line.strip().removeprefix("Caused by: ") for line in text.splitlines() if "Caused by: " in line]
        if causes:
            return causes[-1]
    return f"{name.rsplit('.', 1)[-1]}: {message}"


# Spark's loggers that print a failed micro-batch's whole Python and Java trace again: the
# task's failure (Executor, TaskSetManager) and the query's end (MicroBatchExecution, under its
# Spark 4.0 and 4.1+ packages). `cdc run` names the cause in one line; --verbose keeps them.
_SPARK_FAILURE_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
)
_PY4J_PROXY_FAILURE = "There was an exception while executing the Python Proxy"


def _drop_proxy_failure(record: logging.LogRecord) -> bool:
    """py4j logs each failed foreachBatch call (the batch function) with its traceback at ERROR."""
    return not record.getMessage().startswith(_PY4J_PROXY_FAILURE)


def quiet_failure_traces(session: Any) -> None:
    """Keep Spark and py4j from printing a failed batch's traces: the run ends with one line instead."""
    proxy_log = logging.getLogger("py4j.clientserver")
    if _drop_proxy_failure not in proxy_log.filters:
        proxy_log.addFilter(_drop_proxy_failure)
    try:
        jvm = session.sparkContext._jvm
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        off = jvm.org.apache.logging.log4j.Level.OFF
        for name in _SPARK_FAILURE_LOGGERS:
            configurator.setLevel(name, off)
    except Exception:  # another logging backend in the JVM: its traces stay, the run still ends in one line
        log.debug("cannot lower Spark's failure loggers", exc_info=True)


class _SparkStarter:
    """Starts the SparkSession on a thread: the JVM's start-up (seconds) overlaps the source's catch-up."""

    def __init__(self, job: JobSpec, verbose: bool = False) -> None:
        self._session: Any = None
        self._error: BaseException | None = None
        self._verbose = verbose
        self._master = str((job.spark or {}).get("master", "local[2]"))
        self._thread = threading.Thread(target=self._start, args=(job,), name="spark-start", daemon=True)
        self._thread.start()

    def _start(self, job: JobSpec) -> None:
        try:
            self._session = _spark_session(job, verbose=True) if self._verbose else _spark_session(job)
        except BaseException as e:  # handed to the caller of get()
            self._error = e

    def get(self) -> Any:
        self._thread.join()
        if isinstance(self._error, Exception):  # a bad master or conf: one line (KeyboardInterrupt passes through)
            cause = root_cause(str(self._error)) or type(self._error).__name__
            raise ConnectException(f"cannot start Spark (spark.master={self._master}): {cause}")
        if self._error is not None:
            raise self._error
        return self._session

    def stop(self) -> None:
        self._thread.join()
        if self._session is not None:
            self._session.stop()


class JobRunner:
    def __init__(
        self,
        job: JobSpec,
        until_caught_up: bool = False,
        progress: Callable[[str], None] = log.info,
        verbose: bool = False,
    ) -> None:
        """`verbose`: a failed sink prints its full Python and Java trace (and Spark's own
        failure logs) before the one-line error; otherwise only that line says what failed."""
        self.job = job
        self.until_caught_up = until_caught_up
        self.progress = progress
        self.verbose = verbose
        self.stop_requested = threading.Event()

    def _connector_config(self) -> dict[str, str]:
        config = self.job.connector_config()
        keys = [f"{t.source}:{','.join(t.keys)}" for t in self.job.tables if t.keys]
        if keys and "message.key.columns" not in config:
            config["message.key.columns"] = ";".join(keys)
        if self.until_caught_up and "heartbeat.interval.ms" not in config:
            # Heartbeats move the stored offset while tables are idle, so it can reach the target.
            config["heartbeat.interval.ms"] = "1000"
        return config

    def _source(self) -> dict[str, str]:
        worker = self.job.worker_config()
        src = {"transport": worker["transport"], "topic.pattern": data_topic_pattern(topic_prefix(self.job))}
        if (mark := heartbeat_topic(self.job, self._connector_config())) is not None:
            src["watermark.topic"] = mark  # each batch's checkpoint says which heartbeat it covers
        if worker["transport"] == "embedded":
            src["state.dir"] = os.path.abspath(worker["state.dir"])
        else:
            src["bootstrap.servers"] = worker["bootstrap.servers"]
            # Tansu's high watermark is short by its last batch's tail (issue 40); Apache Kafka's is exact.
            src["probeEndOffsets"] = str(bool(self.job.transport.get("probe.end.offsets", True))).lower()
            # The Spark source's consumers reach the brokers as the worker's clients do.
            src.update({f"kafka.{k}": v for k, v in WorkerConfig(worker).kafka_common().items()})
        src.update(sink_source_options(self.job.transport, self.job.source))  # format: avro
        max_events = (self.job.spark or {}).get("maxEventsPerTrigger", DEFAULT_MAX_EVENTS_PER_TRIGGER)
        src["maxEventsPerTrigger"] = str(max_events)
        return src

    def _checkpoint(self) -> str:
        return checkpoint_dir(self.job)

    def run(self) -> int:
        connector = self._connector_config()
        sink = sink_config(self.job, captured=tables_to_name(self.job))
        with StateDirLock.for_job(self.job.worker_config()["state.dir"], self.job.name).acquire("start it again"):
            make_private_checkpoint_dir(self.job)
            return self._run(connector, sink)

    def _run(self, connector: dict[str, str], sink: dict[str, Any]) -> int:
        props = self.job.worker_config()
        if self.until_caught_up and "offset.flush.interval.ms" not in props:
            # On Kafka, offsets are stored every offset.flush.interval.ms (60 s by default); the
            # run is over only once the stored offset reaches the target, so store it often.
            props["offset.flush.interval.ms"] = "1000"
        config = WorkerConfig(props)
        log_ = open_log(config)
        worker = Worker(
            config,
            PluginRegistry.discover(),
            log_,
            open_offset_store(config, log_),
            open_status_store(config, log_),
            f"cdc-run-{self.job.name}",
        )
        herder = StandaloneHerder(worker, warn_unknown_keys=False)  # load_job reported them with their lines
        worker.ensure_valid(connector)
        target = None
        family = ""
        if self.until_caught_up:
            family = _family(connector["connector.class"])
            target = source_position(family, connector)
            self.progress(f"source position at start: {position_text(family, target)}")
        herder.start()
        spark: _SparkStarter | None = None
        watch: Watch | None = None
        checking: PeriodicVerify | None = None
        schedule = None if self.until_caught_up else VerifySchedule.of(self.job)
        figures = VerifyFigures()
        try:
            extra = (VerifyCollector(figures),) if schedule else ()
            watch = Watch.start(self.job, config, herder, sink, collectors=extra)  # metrics.port; the live view
            herder.put_connector_config(connector, trusted=True)  # the job file is the operator's
            spark = _SparkStarter(self.job, self.verbose)
            if self.until_caught_up:
                self._wait_for_source(worker, connector["name"], family, target)
                # The source has everything up to the start position in the log: stop it, then
                # let the sink apply the whole log and stop (Trigger.AvailableNow).
                herder.stop()
                herder = None
                from cdc_spark.pipeline import start_query

                self.progress("source caught up; applying the log to the sink")
                query = start_query(
                    self._session(spark),
                    self._source(),
                    sink,
                    self._checkpoint(),
                    available_now=True,
                    name=self.job.name,
                )
                self._await_catch_up(query)
                self._raise_if_failed(query)
                self.progress("caught up: every change up to the start position is applied")
                return 0
            from cdc_spark.pipeline import start_query

            trigger = (self.job.spark or {}).get("trigger")
            processing = trigger.get("processingTime") if isinstance(trigger, dict) else None
            session = self._session(spark)
            self._check_source(worker, connector["name"])  # it failed while Spark started: no query to unwind
            query = start_query(
                session,
                self._source(),
                sink,
                self._checkpoint(),
                available_now=trigger == "availableNow",
                processing_time=processing or "2 seconds",
                name=self.job.name,
            )
            self.progress(f"sink query started: {sink['target']}, checkpoint {self._checkpoint()}")
            if schedule is not None:
                checking = PeriodicVerify(self.job, schedule, figures).start()
            stalled = self._batch_watch()
            try:
                while not self.stop_requested.is_set():
                    if _terminated(query, 1):
                        break
                    self._check_source(worker, connector["name"])
                    stalled.check(query)
            finally:
                query.stop()  # before the session stops, else Spark's stream thread logs its own stack traces
            self._raise_if_failed(query)
            return 0
        finally:
            if checking is not None:
                checking.stop()
            if watch is not None:
                watch.stop()
            if herder is not None:
                herder.stop()
            if spark is not None:
                spark.stop()

    def _session(self, spark: _SparkStarter) -> Any:
        session = spark.get()
        if not self.verbose:
            quiet_failure_traces(session)
        return session

    def _batch_watch(self) -> BatchWatch:
        timeout = (self.job.spark or {}).get("batchTimeoutMs", DEFAULT_BATCH_TIMEOUT_MS)
        return BatchWatch(int(timeout))

    def _raise_if_failed(self, query: Any) -> None:
        """A failed sink query ends the run with one line (after its full trace with --verbose)."""
        error = query.exception()
        if error is None:
            return
        if self.verbose:
            self.progress(f"the sink query failed; its full trace:\n{error}")
        raise ConnectException(sink_failure_message(error, self.verbose))

    def _await_catch_up(self, query: Any) -> None:
        """Wait for the Trigger.AvailableNow query, reporting each micro-batch it applies: a
        backlog goes in maxEventsPerTrigger-sized batches and can take minutes."""
        reported, first_start = -1, None
        stalled = self._batch_watch()
        while True:
            done = _terminated(query, 2)
            if not done:
                try:
                    stalled.check(query)
                except ConnectException:
                    query.stop()
                    raise
            for p in query.recentProgress:
                if p["batchId"] <= reported or not p["sources"]:
                    continue
                source = p["sources"][0]
                if first_start is None:  # where this run started: the checkpoint, or the log's start
                    first_start = _offset_sum(source["startOffset"])
                reported = p["batchId"]
                done_records = _offset_sum(source["endOffset"]) - first_start
                self.progress(f"sink: micro-batch {reported} applied; {done_records} log records so far")
            if done:
                return

    def _check_source(self, worker: Worker, name: str) -> None:
        status = worker.status_store.get_task(name, 0)
        if status is not None and status.state is State.FAILED:
            raise ConnectException(f"the source task failed: {root_cause(status.trace or '') or 'see the log'}")

    def _wait_for_source(self, worker: Worker, name: str, family: str, target: Any) -> None:
        from cdc.storage.offsets import OffsetStorageReaderImpl

        reader = OffsetStorageReaderImpl(worker.offset_store, name)
        partition = {"server": self.job.source.get("topic.prefix")}
        reached = _mysql_reached if family == "mysql" else _postgres_reached
        if family == "mysql":
            # An offset of an earlier binlog lineage (before a failover or RESET MASTER) may sit at
            # a higher position than the target: only the connector's new epoch counts.
            target = target.after(reader.offset(partition))
        last_report = 0.0
        while not self.stop_requested.is_set():
            self._check_source(worker, name)
            offset = reader.offset(partition) or {}
            # An incremental snapshot still queued (a signal, or snapshot.new.tables) is part of catching up:
            # its tables' rows are not in the log until it ends.
            snapshotting = queued_tables(offset)
            if offset and reached(offset, target) and not snapshotting:
                return
            if time.monotonic() - last_report > 5:
                last_report = time.monotonic()
                at, goal = position_text(family, offset), position_text(family, target)
                also = f"; incremental snapshot of {', '.join(snapshotting)} running" if snapshotting else ""
                self.progress(f"source catching up: at {at}, target {goal}{also}")
            time.sleep(0.2)
        raise ConnectException("stopped before the source caught up")


def _terminated(query: Any, timeout_s: float) -> bool:
    """`query.awaitTermination(timeout_s)`, except that a failed query returns True instead of
    raising its StreamingQueryException (whose text is the whole trace and the query plan):
    the caller reports `query.exception()` in one line."""
    from pyspark.errors import StreamingQueryException

    try:
        return bool(query.awaitTermination(timeout_s))
    except StreamingQueryException:
        return True
