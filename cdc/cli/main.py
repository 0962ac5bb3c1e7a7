"""`cdc`: run connectors and inspect what they wrote.

Every command has --help. Config errors exit with status 2 and one line that names the
offending key; runtime failures exit with status 1.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time

import click

from cdc import __version__
from cdc.cli._common import decode_bytes, echo_json, env_default, fail, friendly_errors, load_worker, setup_logging
from cdc.cli.jobs import run, validate
from cdc.config.files import load_connector_config
from cdc.log.base import TopicPartition
from cdc.rest.server import RestBindError, RestServer
from cdc.runtime.plugins import PluginKind, PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import cluster_id, open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.storage.offsets import describe_offsets

WORKER_OPTION = click.option(
    "--worker",
    "worker_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Worker .properties file whose transport and stores to use.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cdc")
@click.option("--log-level", default=env_default("CDC_LOG_LEVEL", "INFO"), show_default="INFO or $CDC_LOG_LEVEL")
def cli(log_level: str) -> None:
    """Change data capture with a Kafka Connect-shaped runtime."""
    setup_logging(log_level)


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
    with friendly_errors():
        config, transformer = load_worker(worker_properties)
        connectors = [load_connector_config(p) for p in connector_configs]
        registry = PluginRegistry.discover(config.get("plugin.path"))
        log_ = open_log(config)
        worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_))
        herder = StandaloneHerder(worker, transformer)
        for props in connectors:
            worker.ensure_valid(transformer.transform(props).data)  # fail before anything starts
        rest = RestServer(config, herder, cluster_id=cluster_id(log_))
        herder.start()
        try:
            rest.start()
        except RestBindError as e:
            # Standalone connectors still run; only the API is missing (Kafka would exit here).
            logging.getLogger("cdc.rest").error("%s; running without the REST API", e)
            rest = None
        stop = threading.Event()

        def on_signal(signum: int, frame: object) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        try:
            for props in connectors:
                herder.put_connector_config(props)
            while not stop.wait(0.5):
                herder.tick()
        finally:
            if rest is not None:
                rest.stop()
            herder.stop()
            transformer.close()


# -- distributed -----------------------------------------------------------------------------
@cli.command("worker")
@click.argument("worker_properties", type=click.Path(dir_okay=False))
def worker_command(worker_properties: str) -> None:
    """Run a distributed worker, like connect-distributed.sh.

    WORKER_PROPERTIES needs transport=kafka, bootstrap.servers and group.id; workers with the
    same group.id share connectors and tasks through Kafka's consumer-group protocol and keep
    configs, offsets and status in config.storage.topic, offset.storage.topic and
    status.storage.topic. Create connectors over the REST API (`listeners`, default
    http://127.0.0.1:8083); any worker accepts requests and forwards writes to the leader.
    """
    from cdc.runtime.distributed.herder import DistributedHerder

    with friendly_errors():
        config, transformer = load_worker(worker_properties)
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
        # Kafka Connect names a distributed worker by its advertised REST host:port, so other
        # workers can reach the worker a status record names.
        worker.worker_id = worker.reporter.worker_id = rest.advertised_url.removeprefix("http://")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        herder.start(rest.advertised_url)
        try:
            while not stop.wait(0.5):
                pass
        finally:
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


# -- topics ----------------------------------------------------------------------------------
@cli.group()
def topics() -> None:
    """List and read the topics of a worker's transport."""


@topics.command("list")
@WORKER_OPTION
def topics_list(worker_path: str) -> None:
    """Print each topic with its partition count and end offsets."""
    with friendly_errors():
        config, _ = load_worker(worker_path)
        with open_log(config) as log_:
            for name, desc in sorted(log_.list_topics().items()):
                ends = log_.end_offsets([TopicPartition(name, p) for p in range(desc.partitions)])
                total = sum(ends.values())
                click.echo(f"{name}\tpartitions={desc.partitions}\tend_offsets={total}")


@topics.command("read")
@WORKER_OPTION
@click.argument("topic")
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
    worker_path: str,
    topic: str,
    from_beginning: bool,
    max_records: int | None,
    partition: int | None,
    follow: bool | None,
    timeout_ms: int | None,
) -> None:
    """Print records as JSON lines: {topic, partition, offset, key, value, headers, timestamp}.

    Keys, values and header values are decoded as JSON where they are JSON, else as text
    (binary data as {"base64": ...}).
    """
    with friendly_errors():
        config, _ = load_worker(worker_path)
        follow = (not from_beginning) if follow is None else follow
        with open_log(config) as log_:
            if log_.describe_topic(topic) is None:
                fail(f"topic {topic!r} does not exist in the {config.transport} transport; see `cdc topics list`")
            tps = log_.partitions(topic)
            if partition is not None:
                if partition >= len(tps):
                    fail(f"--partition {partition}: topic {topic!r} has {len(tps)} partitions")
                tps = [tps[partition]]
            starts = log_.beginning_offsets(tps) if from_beginning else log_.end_offsets(tps)
            reader = log_.reader()
            reader.assign(starts)
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
                                "key": decode_bytes(r.key),
                                "value": decode_bytes(r.value),
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
            finally:
                reader.close()


# -- offsets ---------------------------------------------------------------------------------
@cli.group()
def offsets() -> None:
    """Inspect stored source offsets."""


@offsets.command("show")
@WORKER_OPTION
@click.option("--connector", help="Only this connector's offsets.")
def offsets_show(worker_path: str, connector: str | None) -> None:
    """Print each stored offset as JSON: {connector, partition, offset, key}."""
    with friendly_errors():
        config, _ = load_worker(worker_path)
        with open_log(config) as log_:
            store = open_offset_store(config, log_)
            if hasattr(store, "refresh") and log_.describe_topic(config.get("offset.storage.topic")) is None:
                return
            store.start()
            try:
                for row in describe_offsets(store):
                    if connector is None or row["connector"] == connector:
                        echo_json(row)
            finally:
                store.stop()


cli.add_command(validate)
cli.add_command(run)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
