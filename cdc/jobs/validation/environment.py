"""Checks of the world around a job: the database and warehouse reachable, the sink DSN well
formed, Kafka client settings librdkafka can take, state.dir writable, and a Spark cluster's
executors able to reach the transport and the target."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs import source_db
from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.problems import Collector


def check_reachable(job: dict[str, Any], out: Collector) -> None:
    source = job.get("source") or {}
    host = source.get("database.hostname")
    if host:
        port = int(source.get("database.port") or (5432 if "postgres" in str(source.get("connector.class")) else 3306))
        try:
            with socket.create_connection((str(host), port), timeout=3):
                pass
        except OSError as e:
            out.add(
                ("source", "database.hostname"),
                f"cannot reach the database at {host}:{port} ({e.strerror or e}); "
                "check database.hostname/database.port and that the server is running",
            )
        else:
            if problem := source_db.source_tls_problem(source):  # TLS keys set: log in as the connector will
                out.add(("source", problem[0]), problem[1])
    sink = job.get("sink") or {}
    # the warehouse: its dsn plus the sink's TLS keys
    if sink.get("type") == "postgres" and sink.get("dsn") and (problem := source_db.sink_problem(sink)):
        out.add(("sink", problem[0]), problem[1])


def check_dsn(job: dict[str, Any], out: Collector) -> None:
    sink = job.get("sink")
    dsn = sink.get("dsn") if isinstance(sink, dict) else None
    if not isinstance(dsn, str) or sink.get("type") != "postgres":
        return
    from psycopg import conninfo

    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception as e:
        out.add(("sink", "dsn"), f"not a valid PostgreSQL DSN ({str(e).strip()}); e.g. postgresql://user@host:5432/db")


def check_cluster(job: dict[str, Any], out: Collector) -> None:
    """On a Spark cluster the executors read the topics and may write the target from other
    machines: the transport and the target must be reachable from there, not only from here."""
    master = str((job.get("spark") or {}).get("master", "local[2]"))
    if master.startswith("local"):  # local, local[N], local-cluster[…]: this machine
        return
    transport = job.get("transport") or {}
    if transport.get("type", "embedded") == "embedded":
        out.add(
            ("spark", "master"),
            f"spark.master {master!r} runs executors on other machines, and they cannot read the embedded "
            "transport (a SQLite file under state.dir on this one): set transport.type: kafka with "
            "bootstrap.servers, or use a local master (local[N])",
        )
    sink = job.get("sink") or {}
    if sink.get("type") == "postgres" and isinstance(sink.get("dsn"), str):
        from psycopg import conninfo

        try:
            host = conninfo.conninfo_to_dict(sink["dsn"]).get("host") or "localhost"
        except Exception:
            return  # check_dsn reported it
        if any(h in ("localhost", "127.0.0.1", "::1") or h.startswith("/") for h in str(host).split(",")):
            out.warn(
                ("sink", "dsn"),
                f"host {host!r} is this machine, but on spark.master {master!r} the executors write to "
                "PostgreSQL from theirs: give a host name they can reach",
            )
    if sink.get("type") == "parquet" and "://" not in str(sink.get("path", "")):
        out.warn(
            ("sink", "path"),
            f"on spark.master {master!r} the executors write the Parquet changelog on their own machines: "
            "use a path on storage they share (hdfs://…, s3a://…, or a mount present on every node)",
        )


def check_kafka_clients(job: dict[str, Any], out: Collector) -> None:
    """The transport's Kafka client settings translate for librdkafka (a JKS truststore does not)."""
    transport = job.get("transport") or {}
    if transport.get("type") != "kafka":
        return
    from cdc.api.kafka_clients import librdkafka_config

    spec = JobSpec(job["name"], job["source"], [], transport)
    try:
        librdkafka_config(spec.kafka_security())
        librdkafka_config(transport.get("kafka") or {}, "kafka.")
    except ConfigException as e:
        name = e.name or ""
        path = ("transport", "kafka", name.removeprefix("kafka.")) if name.startswith("kafka.") else ("transport", name)
        out.add(path if name else ("transport",), str(e).removeprefix(f"{name}: "))


# Kernel file systems: a directory there holds no files of the user's (/proc, /sys), or only
# devices (/dev), so a state.dir there fails at the first write of `cdc run`, not here.
_KERNEL_DIRS = (Path("/proc"), Path("/sys"), Path("/dev"))


def check_state_dir(job: dict[str, Any], out: Collector) -> None:
    """`cdc run` creates state.dir and its lock there: say now when it cannot, not at start."""
    state_dir = Path(str((job.get("transport") or {}).get("state.dir", ".cdc")))
    try:
        real = Path(os.path.realpath(state_dir))  # a symbolic link into /proc counts as /proc
    except (OSError, ValueError):
        real = state_dir.absolute()
    for kernel in _KERNEL_DIRS:
        if real == kernel or kernel in real.parents:
            out.add(
                ("transport", "state.dir"),
                f"cannot use {str(state_dir)!r} as state.dir: it is under {kernel}, a kernel file system that "
                "holds no files of yours; choose a directory on a disk (e.g. .cdc next to the job file)",
            )
            return
    existing = state_dir.absolute()
    try:
        while not existing.exists():
            existing = existing.parent
    except OSError as e:  # a name longer than the file system allows (ENAMETOOLONG), a loop of links
        out.add(
            ("transport", "state.dir"),
            f"cannot use {str(state_dir)[:120]!r} as state.dir: {e.strerror or e}; choose a shorter path to a "
            "writable directory",
        )
        return
    if not existing.is_dir():
        problem = f"{existing} is a file, not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = f"{existing} is not writable"
    else:
        return
    out.add(
        ("transport", "state.dir"),
        f"cannot use {str(state_dir)!r} as state.dir: {problem}; choose a writable directory",
    )


def check_kafka_reachable(job: dict[str, Any], out: Collector) -> None:
    """transport=kafka: a broker at bootstrap.servers answers, with the job's security settings,
    within the inspection commands' bound (KafkaLog.probe, the check `cdc status` runs too)."""
    transport = job.get("transport") or {}
    if transport.get("type") != "kafka":
        return
    from cdc.log.base import INSPECTION_REACH_TIMEOUT, LogError
    from cdc.runtime.transport import open_log
    from cdc.runtime.worker_config import WorkerConfig

    spec = JobSpec(job["name"], job["source"], [], transport)
    try:
        with open_log(WorkerConfig(spec.worker_config())) as log_:
            log_.probe(INSPECTION_REACH_TIMEOUT)
    except (LogError, ConfigException) as e:
        out.add(("transport", "bootstrap.servers"), str(e))
