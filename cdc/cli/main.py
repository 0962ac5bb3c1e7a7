"""`cdc`: run connectors and inspect what they wrote.

The core commands are here; the job layer's (`cdc run`, `validate`, `status`, `verify`)
come from the `cdc.commands` entry points, installed with the `jobs` extra
(cdc/cli/extras.py). Every command has --help. Config errors exit with status 2 and one
line that names the offending key; runtime failures exit with status 1.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click

from cdc import __version__
from cdc.api.errors import ConfigException
from cdc.cli._common import (
    EXIT_RUNTIME,
    decode_bytes,
    echo_json,
    env_default,
    fail,
    friendly_errors,
    load_worker,
    setup_logging,
)
from cdc.cli.extras import EntryPointGroup, JobFile, open_job_file
from cdc.cli.record_text import RecordText, RecordTextError
from cdc.config.files import load_connector_config
from cdc.log.base import INSPECTION_REACH_TIMEOUT, TopicPartition
from cdc.log.embedded import DB_FILE
from cdc.rest.server import RestBindError, RestServer
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.runtime.prometheus.server import start_metrics_server
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.state_lock import hold_state_dir
from cdc.runtime.traces import redact
from cdc.runtime.transport import cluster_id, open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import OffsetBackingStore, describe_offsets

LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL"]

WORKER_OPTION = click.option(
    "--worker",
    "worker_path",
    type=click.Path(dir_okay=False),
    help="A worker .properties file whose transport and stores to use (instead of a job file).",
)


@click.group(cls=EntryPointGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cdc")
@click.option(
    "--log-level",
    default=env_default("CDC_LOG_LEVEL", "INFO"),
    show_default="INFO or $CDC_LOG_LEVEL",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    help="How much the runtime logs on stderr.",
)
@click.option(
    "--log-format",
    default=env_default("CDC_LOG_FORMAT", "text"),
    show_default="text or $CDC_LOG_FORMAT",
    type=click.Choice(["text", "json"], case_sensitive=False),
    help="text: Kafka Connect's pattern with [connector|task-N]; json: one object per line with connector, task "
    "and table fields (a worker file's or job's log.format sets it too).",
)
def cli(log_level: str, log_format: str) -> None:
    """Change data capture with a Kafka Connect-shaped runtime."""
    setup_logging(log_level, log_format.lower())


# -- standalone ------------------------------------------------------------------------------
@cli.command()
@click.argument("worker_properties", type=click.Path(dir_okay=False))
@click.argument("connector_configs", nargs=-1, type=click.Path(dir_okay=False))
def standalone(worker_properties: str, connector_configs: tuple[str, ...]) -> None:
    """Run connectors in one process, like connect-standalone.sh.

    WORKER_PROPERTIES is a worker .properties file (transport=embedded|kafka, state.dir,
    bootstrap.servers, plugin.path, converters, offset.flush.interval.ms, ...).
    Each CONNECTOR_CONFIG is a .properties file or a JSON file ({"name", "config"} or flat).
    The Kafka Connect REST API listens on `listeners` (default http://127.0.0.1:8083), so
    connectors can also be created, paused, restarted and deleted over HTTP.
    Stops gracefully on Ctrl-C or SIGTERM.
    """
    with friendly_errors(), contextlib.ExitStack() as held:
        config, transformer = load_worker(worker_properties)
        # One writer per state.dir: a second standalone there is refused with the first's pid.
        held.enter_context(hold_state_dir(config, "cdc standalone"))
        connectors = [load_connector_config(p) for p in connector_configs]
        registry = PluginRegistry.discover(config.get("plugin.path"))
        log_ = open_log(config)
        worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_))
        herder = StandaloneHerder(worker, transformer)
        for props in connectors:
            resolved = transformer.transform(props)
            try:
                worker.ensure_valid(resolved.data)  # fail before anything starts
            except ConfigException as e:  # `Invalid value <resolved value> ...`: not on the terminal
                raise ConfigException(redact(str(e), resolved.secrets), e.name) from None
        rest = RestServer(config, herder, cluster_id=cluster_id(log_))
        try:
            rest.bind()  # a taken port fails here, before any connector starts (as Kafka's worker exits)
        except RestBindError as e:
            fail(str(e))
        metrics = start_metrics_server(config, herder)  # metrics.port, if set
        herder.start()
        try:
            rest.start()
        except RestBindError as e:
            herder.stop()
            fail(str(e), EXIT_RUNTIME)
        stop = threading.Event()

        def on_signal(signum: int, frame: object) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        try:
            for props in connectors:
                herder.put_connector_config(props, trusted=True)  # the operator's files: every provider, any path
            while not stop.wait(0.5):
                herder.tick()
        finally:
            if metrics is not None:
                metrics.stop()
            rest.stop()
            herder.stop()
            transformer.close()


# -- distributed -----------------------------------------------------------------------------
@cli.command("worker")
@click.argument("worker_properties", type=click.Path(dir_okay=False))
def worker_command(worker_properties: str) -> None:
    """Run a distributed worker, like connect-distributed.sh.

    WORKER_PROPERTIES needs bootstrap.servers and group.id (transport=kafka is implied, so
    Kafka's own connect-distributed.properties works unchanged); workers with the
    same group.id share connectors and tasks through Kafka's consumer-group protocol and keep
    configs, offsets and status in config.storage.topic, offset.storage.topic and
    status.storage.topic. Create connectors over the REST API (`listeners`, default
    http://127.0.0.1:8083); any worker accepts requests and forwards writes to the leader.
    """
    from cdc.runtime.distributed.herder import DistributedHerder

    with friendly_errors(), contextlib.ExitStack() as held:
        config, transformer = load_worker(worker_properties, distributed=True)
        held.enter_context(hold_state_dir(config, "cdc worker"))  # the same rule as standalone's
        registry = PluginRegistry.discover(config.get("plugin.path"))
        log_ = open_log(config)
        worker = Worker(
            config, registry, log_, open_offset_store(config, log_, distributed=True), open_status_store(config, log_)
        )
        herder = DistributedHerder(worker, transformer)
        rest = RestServer(config, herder, cluster_id=cluster_id(log_))
        try:
            rest.start()
        except RestBindError as e:
            fail(str(e))
        metrics = start_metrics_server(config, herder)  # metrics.port, if set
        # Kafka Connect names a distributed worker by its advertised REST host:port, so other
        # workers can reach the worker a status record names.
        worker.worker_id = worker.reporter.worker_id = rest.advertised_url.split("://", 1)[-1]
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        herder.start(rest.advertised_url)
        try:
            while not stop.wait(0.5):
                pass
        finally:
            if metrics is not None:
                metrics.stop()
            herder.stop()
            rest.stop()
            transformer.close()


# -- plugins ---------------------------------------------------------------------------------
@cli.group()
def plugins() -> None:
    """Inspect installed and plugin.path plugins."""


@plugins.command("list")
@click.option(
    "--plugin-path",
    "plugin_path",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A plugin.path directory (repeatable).",
)
@click.option("--worker", "worker_path", type=click.Path(dir_okay=False), help="Take plugin.path from this worker.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per plugin.")
def plugins_list(plugin_path: tuple[str, ...], worker_path: str | None, as_json: bool) -> None:
    """Print each plugin's class, kind, version and location."""
    with friendly_errors():
        dirs = list(plugin_path)
        if worker_path:
            config, _ = load_worker(worker_path)
            dirs += [d for d in config.get("plugin.path") if d]
        registry = PluginRegistry.discover(dirs)
        rows = registry.of_kind(*PluginKind)
        if as_json:
            for p in rows:
                echo_json({**p.as_json(), "location": p.location, "aliases": sorted(p.aliases)})
        else:
            width = max((len(p.class_name) for p in rows), default=10)
            click.echo(f"{'CLASS':<{width}}  {'KIND':<16}  {'VERSION':<10}  LOCATION")
            for p in rows:
                click.echo(f"{p.class_name:<{width}}  {p.kind.value:<16}  {p.version:<10}  {p.location}")
        for err in registry.errors:
            click.echo(f"warning: {err.location}: {err.entry_point} {err.message}".replace("  ", " "), err=True)


# -- topics ---------------------------------------------------------------------------------
def _never_written(config: WorkerConfig) -> bool:
    """An embedded transport whose log file does not exist: nothing was ever written there, and a
    read-only command must not create the state dir (opening the log would)."""
    return config.transport == "embedded" and not (Path(config.get("state.dir")) / DB_FILE).exists()


def _where(config: WorkerConfig) -> str:
    if config.transport == "embedded":
        return f"the embedded log in {config.get('state.dir')}"
    return f"Kafka at {','.join(config.get('bootstrap.servers'))}"


def _say_empty(config: WorkerConfig, what: str) -> None:
    """On stderr, so stdout stays one record per line for scripts."""
    click.echo(f"{what}: {_where(config)} holds no records yet", err=True)


def _open_target(job_file: str | None, worker_path: str | None) -> tuple[WorkerConfig, JobFile | None]:
    """The transport of a job file or of a worker .properties file (exactly one of them)."""
    if (job_file is None) == (worker_path is None):
        fail("give a job file (cdc … JOB_FILE) or --worker WORKER_PROPERTIES, exactly one of them")
    if job_file is not None:
        job = open_job_file(job_file)
        return WorkerConfig(job.worker_config()), job
    assert worker_path is not None
    return load_worker(worker_path)[0], None


def _split_topic_args(args: tuple[str, ...], worker_path: str | None) -> tuple[str | None, str]:
    want = 1 if worker_path else 2
    if len(args) != want:
        fail("usage: cdc topics read JOB_FILE TOPIC, or cdc topics read --worker WORKER_PROPERTIES TOPIC")
    return (None, args[0]) if worker_path else (args[0], args[1])


@cli.group()
def topics() -> None:
    """List and read the topics of a job's (or a worker's) transport."""


@topics.command("list")
@click.argument("job_file", required=False, type=click.Path(dir_okay=False))
@WORKER_OPTION
def topics_list(job_file: str | None, worker_path: str | None) -> None:
    """Print each topic with its partition count, record count and end offsets.

    JOB_FILE is a job .yaml (its transport and state.dir are used); or give --worker with a
    worker .properties file instead.
    """
    with friendly_errors():
        config, _ = _open_target(job_file, worker_path)
        if _never_written(config):
            _say_empty(config, "no topics")
            return
        with open_log(config) as log_:
            log_.probe(INSPECTION_REACH_TIMEOUT)
            found = sorted(log_.list_topics().items())
            for name, desc in found:
                tps = [TopicPartition(name, p) for p in range(desc.partitions)]
                ends, begins = log_.end_offsets(tps), log_.beginning_offsets(tps)
                records = sum(ends[tp] - begins[tp] for tp in tps)
                click.echo(f"{name}\tpartitions={desc.partitions}\trecords={records}\tend_offsets={sum(ends.values())}")
            if not found:
                _say_empty(config, "no topics")


@topics.command("read")
@click.argument("args", nargs=-1, metavar="[JOB_FILE] TOPIC")
@WORKER_OPTION
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset (default: only new records).")
@click.option("--max", "max_records", type=click.IntRange(min=1), help="Exit after this many records.")
@click.option("--partition", type=click.IntRange(min=0), help="Only this partition.")
@click.option(
    "--follow/--no-follow", default=None, help="Keep waiting for new records (default: on unless --from-beginning)."
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=0),
    default=None,
    help="With --follow: exit when no record arrives for this long.",
)
def topics_read(
    args: tuple[str, ...],
    worker_path: str | None,
    from_beginning: bool,
    max_records: int | None,
    partition: int | None,
    follow: bool | None,
    timeout_ms: int | None,
) -> None:
    """Print records as JSON lines: {topic, partition, offset, key, value, headers, timestamp}.

    `cdc topics read JOB_FILE TOPIC` reads the job's transport; `cdc topics read --worker
    WORKER_PROPERTIES TOPIC` a worker's. Keys, values and header values are decoded as JSON
    where they are JSON, else as text (binary data as {"base64": ...}).
    """
    with friendly_errors():
        job_file, topic = _split_topic_args(args, worker_path)
        config, _ = _open_target(job_file, worker_path)
        follow = (not from_beginning) if follow is None else follow
        if _never_written(config):
            where = f"cdc topics list {job_file}" if job_file else f"cdc topics list --worker {worker_path}"
            fail(f"topic {topic!r} does not exist: {_where(config)} holds no records yet; see `{where}`")
        with open_log(config) as log_:
            log_.probe(INSPECTION_REACH_TIMEOUT)
            if log_.describe_topic(topic) is None:
                where = f"cdc topics list {job_file}" if job_file else f"cdc topics list --worker {worker_path}"
                fail(f"topic {topic!r} does not exist in the {config.transport} transport; see `{where}`")
            tps = log_.partitions(topic)
            if partition is not None:
                if partition >= len(tps):
                    fail(f"--partition {partition}: topic {topic!r} has {len(tps)} partitions")
                tps = [tps[partition]]
            starts = log_.beginning_offsets(tps) if from_beginning else log_.end_offsets(tps)
            reader = log_.reader()
            reader.assign(starts)
            text = RecordText(config, log_)  # Confluent Avro decoded through the registry (cdc/cli/record_text.py)
            printed = 0
            idle_since = time.monotonic()
            try:
                while True:
                    batch = reader.poll(500, 0.5)
                    for r in batch:
                        echo_json(
                            {
                                "topic": r.topic,
                                "partition": r.partition,
                                "offset": r.offset,
                                "key": text.show(r.topic, r.partition, r.offset, "key", r.key),
                                "value": text.show(r.topic, r.partition, r.offset, "value", r.value),
                                "headers": [[k, decode_bytes(v)] for k, v in r.headers],
                                "timestamp": r.timestamp,
                            }
                        )
                        printed += 1
                        if max_records is not None and printed >= max_records:
                            return
                    if batch:
                        idle_since = time.monotonic()
                        continue
                    if not follow:
                        # At the end: some brokers under-report end offsets, so stop only on idle.
                        ends = log_.end_offsets(tps)
                        if all(reader.position(tp) >= ends[tp] for tp in tps):
                            return
                    elif timeout_ms is not None and time.monotonic() - idle_since >= timeout_ms / 1000:
                        return
            except KeyboardInterrupt:
                return
            except RecordTextError as e:
                fail(str(e))
            finally:
                text.close()
                reader.close()


# -- offsets ---------------------------------------------------------------------------------
@cli.group()
def offsets() -> None:
    """Inspect and reset stored source offsets."""


@contextlib.contextmanager
def _offset_store(config: WorkerConfig) -> Iterator[OffsetBackingStore | None]:
    """The started offset store, or None when its topic does not exist yet (nothing stored)."""
    with open_log(config) as log_:
        log_.probe(INSPECTION_REACH_TIMEOUT)
        store = open_offset_store(config, log_)
        if hasattr(store, "refresh") and log_.describe_topic(config.get("offset.storage.topic")) is None:
            yield None
            return
        store.start()
        try:
            yield store
        finally:
            store.stop()


@offsets.command("show")
@click.argument("job_file", required=False, type=click.Path(dir_okay=False))
@WORKER_OPTION
@click.option("--connector", help="Only this connector's offsets (a job's own connector by default).")
def offsets_show(job_file: str | None, worker_path: str | None, connector: str | None) -> None:
    """Print each stored offset as JSON: {connector, partition, offset, key}.

    JOB_FILE is a job .yaml; or give --worker with a worker .properties file instead.
    """
    with friendly_errors():
        config, job = _open_target(job_file, worker_path)
        connector = connector or (job.name if job else None)
        if _never_written(config):
            _say_empty(config, "no stored offsets")
            return
        shown = 0
        with _offset_store(config) as store:
            for row in describe_offsets(store) if store is not None else []:
                if connector is None or row["connector"] == connector:
                    echo_json(row)
                    shown += 1
        if not shown:
            _say_empty(config, "no stored offsets" + (f" for connector {connector!r}" if connector else ""))


@offsets.command("reset")
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def offsets_reset(job_file: str, yes: bool) -> None:
    """Forget a job's source offsets, so its next run starts over (with a new snapshot).

    Only while the job is stopped: a running `cdc run` holds the job's lock and the reset
    refuses. Like Kafka Connect's DELETE /connectors/{name}/offsets, the offsets are
    tombstoned in the offset topic; the events already in the log and the sink's tables stay,
    and the new snapshot's rows overwrite them (they rank after everything applied before).
    """
    with friendly_errors():
        job = open_job_file(job_file)
        config = WorkerConfig(job.worker_config())
        if _never_written(config):  # the job never ran: nothing to reset, and nothing to create
            click.echo(f"{job.name}: no stored offsets; nothing to reset")
            return
        with job.lock("reset its offsets"), _offset_store(config) as store:
            rows = [r for r in describe_offsets(store) if r["connector"] == job.name] if store is not None else []
            if not rows:
                click.echo(f"{job.name}: no stored offsets; nothing to reset")
                return
            for row in rows:
                click.echo(f"{job.name}: {json.dumps(row['partition'])} → {json.dumps(row['offset'])}")
            if not yes and not click.confirm(f"reset {len(rows)} offset(s) of job {job.name!r}?", err=True):
                fail("not reset", EXIT_RUNTIME)
            assert store is not None
            store.set({row["key"].encode(): None for row in rows})
            click.echo(f"{job.name}: {len(rows)} offset(s) reset; the next `cdc run {job_file}` starts over")


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
