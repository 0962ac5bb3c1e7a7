"""Every key of Debezium 3.6's PostgreSQL connector: implemented here, or accepted with a warning.

Debezium's PostgresConnectorConfig, RelationalDatabaseConnectorConfig and CommonConnectorConfig (plus
the heartbeat, topic naming and notification keys they include) define the keys below. A connector
configuration written for Debezium must start here: a key this connector implements works as in
Debezium; one it does not is accepted, and logged once at start as
`<key>=<value>: recognised, not supported: <what happens instead>`, never a refusal.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from cdc.api import ConfigDef, ConfigType, ConfigValue, Importance, ValidString
from cdc_debezium import snapshot_modes
from cdc_debezium.config import EVENT_PROCESSING_FAILURE, FAILURE_MODES
from cdc_debezium.signals import config as signal_config
from cdc_postgres import names
from cdc_postgres.column_mappers import ColumnMappers, is_mapper_key

log = logging.getLogger(__name__)

INCLUDE_UNKNOWN = "include.unknown.datatypes"
OVERRIDES = "snapshot.select.statement.overrides"
TOPIC_NAMING = "topic.naming.strategy"
TOPIC_DELIMITER = "topic.delimiter"
TOPIC_TRANSACTION = "topic.transaction"
TOPIC_HEARTBEAT_PREFIX = "topic.heartbeat.prefix"
HEARTBEAT_TOPICS_PREFIX = "heartbeat.topics.prefix"  # its deprecated name
SNAPSHOT_DELAY = "snapshot.delay.ms"
STREAMING_DELAY = "streaming.delay.ms"
SCHEMA_NAMING = "io.debezium.schema.SchemaTopicNamingStrategy"
DEFAULT_NAMING = "io.debezium.schema.DefaultTopicNamingStrategy"
NAMING_STRATEGIES = (SCHEMA_NAMING, DEFAULT_NAMING)

_IMPLEMENTED = (
    ConfigDef()
    .define(
        INCLUDE_UNKNOWN,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Capture columns of types Debezium does not map (geometric types, tsquery, pg_lsn, extension types) as "
        "their text in binary (binary.handling.mode); false: leave them out (logged once per column).",
    )
    .define(
        "column.propagate.source.type",
        ConfigType.LIST,
        None,
        None,
        Importance.LOW,
        "Regexes of schema.table.column whose schemas get __debezium.source.column.type/length/scale/name.",
    )
    .define(
        "datatype.propagate.source.type",
        ConfigType.LIST,
        None,
        None,
        Importance.LOW,
        "Regexes of schema.table.typename whose columns' schemas get the __debezium.source.column.* parameters.",
    )
    .define(
        OVERRIDES,
        ConfigType.LIST,
        None,
        None,
        Importance.MEDIUM,
        "schema.table names whose snapshot reads `snapshot.select.statement.overrides.<schema.table>` (a SELECT of "
        "the table's columns) instead of the whole table.",
    )
    .define(
        EVENT_PROCESSING_FAILURE,
        ConfigType.STRING,
        "fail",
        ValidString.in_ignore_case(*FAILURE_MODES),
        Importance.LOW,
        "A change event that cannot be processed while streaming: fail stops the task; warn logs it with its "
        "offset and goes on; skip/ignore go on (logged at DEBUG), as Debezium's EventDispatcher.",
    )
    .define(
        names.FIELD_KEY,
        ConfigType.STRING,
        "none",
        ValidString.in_ignore_case(*names.MODES),
        Importance.LOW,
        "none | avro (invalid characters become _) | avro_unicode (_uXXXX) for field names.",
    )
    .define(
        names.SCHEMA_KEY,
        ConfigType.STRING,
        "none",
        ValidString.in_ignore_case(*names.MODES),
        Importance.LOW,
        "none | avro | avro_unicode for the Key/Value/Envelope schema names.",
    )
    .define(
        TOPIC_NAMING,
        ConfigType.STRING,
        SCHEMA_NAMING,
        None,
        Importance.MEDIUM,
        "SchemaTopicNamingStrategy (<prefix>.<schema>.<table>, the default) or DefaultTopicNamingStrategy; another "
        "class is accepted with a warning and topics are named as by the default.",
    )
    .define(TOPIC_DELIMITER, ConfigType.STRING, ".", None, Importance.LOW, "Between the parts of topic names.")
    .define(TOPIC_TRANSACTION, ConfigType.STRING, "transaction", None, Importance.LOW, "The transaction topic suffix.")
    .define(
        TOPIC_HEARTBEAT_PREFIX,
        ConfigType.STRING,
        "__debezium-heartbeat",
        None,
        Importance.LOW,
        "Heartbeat topic: <prefix><delimiter><topic.prefix>.",
    )
    .define(
        HEARTBEAT_TOPICS_PREFIX, ConfigType.STRING, None, None, Importance.LOW, "Old name of topic.heartbeat.prefix."
    )
    .define(SNAPSHOT_DELAY, ConfigType.LONG, 0, None, Importance.LOW, "Wait this long before the snapshot.")
    .define(STREAMING_DELAY, ConfigType.LONG, 0, None, Importance.LOW, "Wait this long before streaming starts.")
    .define(
        "table.ignore.builtin",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "System schemas are never captured (false is accepted with a warning).",
    )
    .define(
        "read.only",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Incremental snapshots write nothing to the database: their watermarks are pg_current_snapshot() read "
        "before and after each chunk (cdc_postgres/incremental_read_only.py), signals come through the file or "
        "kafka channel.",
    )
)

# key → (what happens instead, when the value given is the one that changes nothing: no warning then)
_CONFIGURATION_BASED = "read only with snapshot.mode=configuration_based"
UNSUPPORTED: dict[str, tuple[str, str | None]] = {
    "advanced.metrics.enable": ("the connector's usual metrics only", "false"),
    "connection.validation.timeout.ms": ("connections are validated when they are opened, with libpq's timeouts", None),
    "slot.failover": ("the slot is created without FAILOVER (PostgreSQL 17+)", "false"),
    "create.slot.command.timeout": ("CREATE_REPLICATION_SLOT waits as long as the server needs", None),
    "converters": ("values keep this connector's type mapping (Java custom converters cannot run here)", None),
    "custom.metric.tags": ("metrics carry their usual names only", None),
    "custom.retriable.exception": ("only lost connections are retried", None),
    "custom.sanitize.pattern": ("values in logs are not sanitised by a custom pattern", None),
    "event.converting.failure.handling.mode": (
        "a value that cannot be converted fails the event (see event.processing.failure.handling.mode)",
        None,
    ),
    "executor.shutdown.timeout.ms": ("the task stops its threads within 10 s", None),
    "extended.headers.enabled": ("records carry no __debezium.context.* headers", "false"),
    "guardrail.collections.max": ("any number of tables is captured", "0"),
    "guardrail.collections.limit.action": ("no guardrail applies", None),
    "include.schema.comments": ("column comments are not put in the schemas", "false"),
    "incremental.snapshot.allow.schema.changes": (
        "an incremental snapshot re-reads no chunk after a schema change",
        "false",
    ),
    "legacy.snapshot.max.threads": ("the snapshot reads one table at a time", None),
    "log.position.check.enable": ("the stored offset is always checked against the slot at start", None),
    "lsn.flush.mode": ("the slot is confirmed up to each stored offset", None),
    "lsn.flush.timeout.action": ("confirming the slot never times out", None),
    "lsn.flush.timeout.ms": ("confirming the slot never times out", None),
    "flush.lsn.source": ("the slot is always confirmed up to each stored offset", "true"),
    "errors.max.retries": ("a lost connection is retried until it works or the task stops", None),
    "errors.retry.delay.initial.ms": ("reconnects back off from 0.5 s to 10 s", None),
    "errors.retry.delay.max.ms": ("reconnects back off from 0.5 s to 10 s", None),
    "retriable.restart.connector.wait.ms": ("reconnects back off from 0.5 s to 10 s", None),
    "offset.mismatch.strategy": (
        "a stored offset behind the slot's confirmed position is always refused, unless snapshot.mode=when_needed",
        None,
    ),
    "database.initial.statements": ("no statements run when a connection opens", None),
    "openlineage.integration.enabled": ("no OpenLineage events are emitted", "false"),
    "openlineage.integration.config.file.path": ("no OpenLineage events are emitted", None),
    "openlineage.integration.dataset.kafka.bootstrap.servers": ("no OpenLineage events are emitted", None),
    "openlineage.integration.job.description": ("no OpenLineage events are emitted", None),
    "openlineage.integration.job.namespace": ("no OpenLineage events are emitted", None),
    "openlineage.integration.job.owners": ("no OpenLineage events are emitted", None),
    "openlineage.integration.job.tags": ("no OpenLineage events are emitted", None),
    "publish.via.partition.root": (
        "an autocreated publication publishes partitions under their own names; create the publication WITH "
        "(publish_via_partition_root = true) and the connector follows it",
        "false",
    ),
    "query.fetch.size": ("queries other than the snapshot fetch whole results", None),
    "database.query.timeout.ms": ("statements have no timeout beyond the server's statement_timeout", None),
    "queue.provider.type": ("the built-in in-memory queue is used", None),
    "schema.refresh.mode": ("schemas are rebuilt from every pgoutput Relation message (columns_diff)", None),
    "memory.management.schemas.class": ("schemas are kept in memory", None),
    "memory.management.tables.class": ("tables are kept in memory", None),
    "skip.messages.without.change": ("an update is emitted even if no captured column changed", "false"),
    "slot.seek.to.known.offset.on.start": ("the stream starts at the stored offset's commit LSN", None),
    "snapshot.scan.all.columns.force": ("the snapshot reads the captured columns", None),
    "snapshot.locking.mode.custom.name": ("snapshot.locking.mode applies (shared or none)", None),
    "snapshot.max.threads": ("the snapshot reads one table at a time", "1"),
    "snapshot.max.threads.multiplier": ("the snapshot reads one table at a time", "1"),
    "snapshot.mode.configuration.based.snapshot.data": (_CONFIGURATION_BASED, None),
    "snapshot.mode.configuration.based.snapshot.on.data.error": (
        "read only with snapshot.mode=configuration_based",
        None,
    ),
    "snapshot.mode.configuration.based.snapshot.on.schema.error": (
        "read only with snapshot.mode=configuration_based",
        None,
    ),
    "snapshot.mode.configuration.based.snapshot.schema": (_CONFIGURATION_BASED, None),
    "snapshot.mode.configuration.based.start.stream": (_CONFIGURATION_BASED, None),
    "snapshot.mode.custom.name": ("snapshot.mode applies", None),
    "snapshot.include.collection.list": ("the snapshot reads every captured table", None),
    "snapshot.query.mode": ("the snapshot reads SELECT * (or snapshot.select.statement.overrides)", "select_all"),
    "snapshot.query.mode.custom.name": ("the snapshot reads SELECT * (or snapshot.select.statement.overrides)", None),
    "snapshot.tables.order.by.row.count": ("tables are snapshotted in schema.table name order", "disabled"),
    "sourceinfo.struct.maker": ("the source block is Debezium's default PostgreSQL one", None),
    "statistics.metrics.enabled": ("the connector's usual metrics only", None),
    "slot.stream.params": ("pgoutput gets proto_version and publication_names only", None),
    "database.tcpKeepAlive": ("libpq's TCP keepalives stay on", "true"),
    "transaction.metadata.factory": ("transaction metadata is Debezium's default", None),
    "xmin.fetch.interval.ms": ("source.xmin is always null", "0"),
    "topic.cache.size": ("topic names are computed once per table (no cache to size)", None),
}
# Families of keys named by an alias or an index (Debezium's KafkaSignalChannel, converter settings, ...).
_UNSUPPORTED_PREFIXES = {
    "signal.kafka.": "the kafka signal channel reads signal.kafka.topic in the worker's own log",
    "signal.consumer.": "the kafka signal channel reads signal.kafka.topic in the worker's own log",
    "notification.": "notifications go to the log and sink channels only",
    "openlineage.integration.": "no OpenLineage events are emitted",
}
_OVERRIDE_TABLE = re.compile(r"^snapshot\.select\.statement\.overrides\.(.+)$")


def define(d: ConfigDef) -> ConfigDef:
    """`d` with the implemented keys and every unsupported key defined (STRING, any value accepted)."""
    merged = signal_config.define(d.merge(_IMPLEMENTED))  # signal.*, incremental.snapshot.*: incremental.py
    extra = ConfigDef()
    for key, (instead, _neutral) in UNSUPPORTED.items():
        if key not in merged.names():
            extra.define(key, ConfigType.STRING, None, None, Importance.LOW, f"Recognised, not supported: {instead}.")
    return merged.merge(extra)


def dynamic_keys(props: Mapping[str, Any]) -> list[ConfigValue]:
    """The keys named by a table or an index (column mappers, per-table snapshot SELECTs, signal/notification
    settings), validated: known to the runtime, and a bad regex reported on its key."""
    out = []
    for name, value in props.items():
        if not (
            is_mapper_key(name) or _OVERRIDE_TABLE.match(name) or any(name.startswith(p) for p in _UNSUPPORTED_PREFIXES)
        ):
            continue
        cv = ConfigValue(name, value)
        if is_mapper_key(name):
            try:
                ColumnMappers.from_config({name: value})
            except Exception as e:  # ConfigException: a bad regex or hash algorithm, named
                cv.add_error_message(str(e))
        out.append(cv)
    return out


def warn_unsupported(props: Mapping[str, Any]) -> None:
    """One line per Debezium key this connector accepts without implementing it, saying what happens instead."""
    for key, value in props.items():
        instead: str | None = None
        if snapshot_modes.applies(props, key):
            continue
        if key in UNSUPPORTED:
            what, neutral = UNSUPPORTED[key]
            if neutral is not None and str(value).strip().lower() == neutral:
                continue
            instead = what
        elif key not in signal_config.KEYS:
            instead = next((v for p, v in _UNSUPPORTED_PREFIXES.items() if key.startswith(p)), None)
        if instead is not None:
            log.warning("%s=%s: recognised, not supported: %s", key, value, instead)
    naming = props.get(TOPIC_NAMING)
    if naming and str(naming).strip() not in NAMING_STRATEGIES:
        log.warning(
            "%s=%s: recognised, not supported: topics are named as by %s (<topic.prefix>.<schema>.<table>)",
            TOPIC_NAMING, naming, SCHEMA_NAMING,
        )  # fmt: skip
    if str(props.get("table.ignore.builtin", "true")).strip().lower() == "false":
        log.warning(
            "table.ignore.builtin=false: recognised, not supported: tables of pg_catalog, information_schema and "
            "pg_* schemas are never captured"
        )


def select_overrides(props: Mapping[str, Any], tables: list[str] | None) -> dict[str, str]:
    """`snapshot.select.statement.overrides`: schema.table → the SELECT its snapshot reads, as Debezium's
    getSnapshotSelectOverridesByTable (a listed table without its statement key is logged and skipped)."""
    out = {}
    for table in tables or []:
        table = table.strip()
        statement = props.get(f"{OVERRIDES}.{table}")
        if not statement:
            log.warning(
                "%s names %s, but %s.%s is not set: the table is snapshotted whole", OVERRIDES, table, OVERRIDES, table
            )
            continue
        out[table] = str(statement)
    return out
