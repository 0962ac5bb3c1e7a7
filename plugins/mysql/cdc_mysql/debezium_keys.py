"""Every key of Debezium 3.6's MySQL connector: implemented here, or recognised with what happens instead.

Debezium's MySqlConnectorConfig (with BinlogConnectorConfig, HistorizedRelationalDatabaseConnectorConfig,
RelationalDatabaseConnectorConfig, CommonConnectorConfig, SchemaHistory and DefaultTopicNamingStrategy)
defines the keys. A Debezium config must load unchanged: a key this connector does not implement is
accepted, and the start logs one line per key, "<key>: recognised, not supported: <what happens
instead>" (not when the value is Debezium's default, which changes nothing). No Debezium key stops
the connector, let alone the worker.

Implemented in this module's ConfigDef entries: `enable.time.adjuster`,
`event.converting.failure.handling.mode`, `event.processing.failure.handling.mode`,
`event.deserialization.failure.handling.mode`, `inconsistent.schema.handling.mode`,
`column.propagate.source.type`, `datatype.propagate.source.type`, `field.name.adjustment.mode`,
`topic.naming.strategy` (Debezium's default class), `snapshot.select.statement.overrides`,
`include.schema.comments`, `skip.messages.without.change`, `snapshot.include.collection.list`,
`schema.name.adjustment.mode`, `snapshot.delay.ms`, `streaming.delay.ms`, `read.only` (GTID-set
watermarks, incremental_read_only.py) and `converters` with TinyIntOneToBooleanConverter
(custom_converters.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cdc.api import ConfigDef, ConfigException, ConfigType, ConfigValue, Importance, Range, ValidString
from cdc_debezium import snapshot_modes
from cdc_debezium.signals import config as signal_config
from cdc_mysql.custom_converters import CustomConverters
from cdc_mysql.schema_options import (
    FIELD_NAME_ADJUSTMENT_MODE,
    FIELD_NAME_MODES,
    PROPAGATE_COLUMN_SOURCE_TYPE,
    PROPAGATE_DATATYPE_SOURCE_TYPE,
    SCHEMA_NAME_ADJUSTMENT_MODE,
    regex_list,
)

log = logging.getLogger(__name__)

ENABLE_TIME_ADJUSTER = "enable.time.adjuster"
EVENT_CONVERTING_FAILURE = "event.converting.failure.handling.mode"
EVENT_PROCESSING_FAILURE = "event.processing.failure.handling.mode"
EVENT_DESERIALIZATION_FAILURE = "event.deserialization.failure.handling.mode"
INCONSISTENT_SCHEMA = "inconsistent.schema.handling.mode"
TOPIC_NAMING_STRATEGY = "topic.naming.strategy"
SNAPSHOT_SELECT_OVERRIDES = "snapshot.select.statement.overrides"
INCLUDE_SCHEMA_COMMENTS = "include.schema.comments"
SKIP_MESSAGES_WITHOUT_CHANGE = "skip.messages.without.change"
SNAPSHOT_INCLUDE_COLLECTIONS = "snapshot.include.collection.list"
SNAPSHOT_DELAY_MS = "snapshot.delay.ms"
STREAMING_DELAY_MS = "streaming.delay.ms"
READ_ONLY = "read.only"

DEFAULT_TOPIC_NAMING_STRATEGY = "io.debezium.schema.DefaultTopicNamingStrategy"
# The default's other names: the Kafka Connect alias form and the pre-2.0 class.
_DEFAULT_STRATEGY_NAMES = {
    DEFAULT_TOPIC_NAMING_STRATEGY.lower(),
    "defaulttopicnamingstrategy",
    "io.debezium.schema.defaultunicodetopicnamingstrategy",
}
# fail | warn | skip (| ignore, Debezium's older spelling of skip)
PROCESSING_MODES = ("fail", "warn", "skip", "ignore")
CONVERTING_MODES = ("fail", "warn", "skip")

_NO_INCREMENTAL = "an incremental snapshot re-reads no chunk after a schema change"
_HISTORY_KAFKA = "the Kafka schema history uses its own defaults"
_BUILT_IN_MODES = "only the built-in snapshot.mode values exist"
_CONFIGURATION_BASED = "read only with snapshot.mode=configuration_based"

# key → (Debezium's default as text or None, what happens instead)
RECOGNISED: dict[str, tuple[str | None, str]] = {
    # connection (BinlogConnectorConfig, MySqlConnectorConfig)
    "database.initial.statements": (None, "no statements are run when a connection opens"),
    "database.server.id.offset": ("10000", "not used: the snapshot opens no replica connection"),
    "database.query.timeout.ms": ("600000", "queries run without a timeout of their own"),
    "database.jdbc.driver": ("com.mysql.cj.jdbc.Driver", "there is no JDBC driver: PyMySQL speaks the protocol"),
    "database.protocol": ("jdbc:mysql", "there is no JDBC URL: PyMySQL speaks the protocol"),
    "connect.keep.alive": ("true", "a lost binlog connection is reopened per errors.max.retries, no keep-alive thread"),
    "connect.keep.alive.interval.ms": ("60000", "a lost binlog connection is reopened per errors.max.retries"),
    "use.nongraceful.disconnect": ("false", "the binlog connection is closed gracefully"),
    "binlog.net.write.timeout": (None, "the server's net_write_timeout applies"),
    "binlog.net.read.timeout": (None, "the server's net_read_timeout applies"),
    "min.row.count.to.stream.results": ("1000", "every snapshot SELECT streams its rows"),
    "binlog.buffer.size": ("0", "events are emitted as they are read, without a look-ahead buffer"),
    "gtid.ignore.on.recovery": ("true", "the stored GTID set is kept as the offset has it"),
    "ddl.parser.type": ("antlr", "DDL is not parsed: tables come from the binlog's table map and information_schema"),
    "sourceinfo.struct.maker": (None, "the source block is Debezium's default MySQL one"),
    # snapshot
    "snapshot.query.mode": ("select_all", "snapshot rows come from SELECT * (or snapshot.select.statement.overrides)"),
    "snapshot.query.mode.custom.name": (None, "snapshot rows come from SELECT *"),
    "snapshot.locking.mode.custom.name": (None, "only snapshot.locking.mode=minimal|none exist"),
    "snapshot.mode.custom.name": (None, "only the built-in snapshot.mode values exist"),
    "snapshot.mode.configuration.based.snapshot.data": ("false", _CONFIGURATION_BASED),
    "snapshot.mode.configuration.based.snapshot.schema": ("false", _CONFIGURATION_BASED),
    "snapshot.mode.configuration.based.start.stream": ("false", _CONFIGURATION_BASED),
    "snapshot.mode.configuration.based.snapshot.on.schema.error": ("false", _CONFIGURATION_BASED),
    "snapshot.mode.configuration.based.snapshot.on.data.error": ("false", _CONFIGURATION_BASED),
    "legacy.snapshot.max.threads": (None, "the snapshot reads one table at a time"),
    "snapshot.scan.all.columns.force": ("false", "the snapshot selects every column"),
    "snapshot.tables.order.by.row.count": ("disabled", "tables are snapshotted in name order"),
    "query.fetch.size": ("0", "snapshot.fetch.size sets the rows per fetch"),
    "incremental.snapshot.allow.schema.changes": ("false", _NO_INCREMENTAL),
    # events and records
    "post.processors": (None, "no post processors run"),
    "unavailable.value.placeholder": ("__debezium_unavailable_value", "full row images have no unavailable values"),
    "table.ignore.builtin": ("true", "the system databases are never captured"),
    "heartbeat.topics.prefix": ("__debezium-heartbeat", "heartbeats go to __debezium-heartbeat.<topic.prefix>"),
    "topic.delimiter": (".", "topic names are joined with '.'"),
    "topic.cache.size": ("10000", "topic names are cached per table"),
    "topic.heartbeat.prefix": ("__debezium-heartbeat", "heartbeats go to __debezium-heartbeat.<topic.prefix>"),
    "topic.transaction": ("transaction", "transaction records go to <topic.prefix>.transaction"),
    "transaction.metadata.factory": (None, "Debezium's default transaction metadata is written"),
    "extended.headers.enabled": ("true", "records carry no Debezium context headers"),
    # runtime and metrics
    "retriable.restart.connector.wait.ms": ("10000", "the worker's restart policy applies"),
    "custom.retriable.exception": (None, "only lost connections are retried"),
    "log.position.check.enable": ("true", "the stored binlog position is always checked at start"),
    "advanced.metrics.enable": ("false", "the connector's standard metrics are reported"),
    "statistics.metrics.enabled": ("false", "the connector's standard metrics are reported"),
    "custom.metric.tags": (None, "metrics carry no custom tags"),
    "connection.validation.timeout.ms": ("60000", "connect.timeout.ms bounds the connection checks"),
    "executor.shutdown.timeout.ms": ("4000", "the task stops within poll.interval.ms"),
    "guardrail.collections.max": ("0", "the number of captured tables is not limited"),
    "guardrail.collections.limit.action": ("warn", "the number of captured tables is not limited"),
    "custom.sanitize.pattern": (None, "secrets are recognised by the worker's own rules"),
    "openlineage.integration.enabled": ("false", "no OpenLineage events are emitted"),
    "openlineage.integration.config.file.path": (None, "no OpenLineage events are emitted"),
    "openlineage.integration.job.namespace": (None, "no OpenLineage events are emitted"),
    "openlineage.integration.job.description": (None, "no OpenLineage events are emitted"),
    "openlineage.integration.job.tags": (None, "no OpenLineage events are emitted"),
    "openlineage.integration.job.owners": (None, "no OpenLineage events are emitted"),
    "openlineage.integration.dataset.kafka.bootstrap.servers": (None, "no OpenLineage events are emitted"),
    # schema history (SchemaHistory, KafkaSchemaHistory)
    "schema.history.internal.store.only.captured.databases.ddl": ("false", "the DDL of every database is kept"),
    "schema.history.internal.prefer.ddl": ("false", "the history's table changes come from information_schema"),
    "schema.history.internal.name": (None, "set by the connector"),
    "schema.history.internal.connector.class": (None, "set by the connector"),
    "schema.history.internal.connector.id": (None, "set by the connector"),
    "schema.history.internal.kafka.recovery.poll.interval.ms": ("100", _HISTORY_KAFKA),
    "schema.history.internal.kafka.recovery.attempts": ("100", _HISTORY_KAFKA),
    "schema.history.internal.kafka.query.timeout.ms": ("3000", _HISTORY_KAFKA),
    "schema.history.internal.kafka.create.timeout.ms": ("30000", _HISTORY_KAFKA),
    "schema.history.internal.kafka.buffer.batch.size": ("100", _HISTORY_KAFKA),
}  # fmt: skip


def _topic_naming_strategy(name: str, value: Any) -> None:
    if value is None or str(value).strip().lower() in _DEFAULT_STRATEGY_NAMES:
        return
    raise ConfigException(
        f"Invalid value {value} for configuration {name}: only Debezium's default "
        f"{DEFAULT_TOPIC_NAMING_STRATEGY} (<topic.prefix>.<db>.<table>) is available; remove the key or set it "
        "to that class, and rename topics with a RegexRouter transform if needed",
        name,
        value,
    )


def _regex_list(name: str, value: Any) -> None:
    text = ",".join(value) if isinstance(value, list | tuple) else value
    regex_list(name, text)


def define(d: ConfigDef) -> ConfigDef:
    """Adds the keys implemented here and, as accepted strings, every recognised key `d` lacks."""
    d.define(
        ENABLE_TIME_ADJUSTER,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Read years 00-69 of DATE/DATETIME/TIMESTAMP values as 2000-2069 and 70-99 as 1970-1999, as MySQL "
        "reads two-digit years (Debezium's default); false keeps the year as stored.",
    )
    d.define(
        EVENT_CONVERTING_FAILURE,
        ConfigType.STRING,
        "warn",
        ValidString.in_ignore_case(*CONVERTING_MODES),
        Importance.MEDIUM,
        "A column value that cannot be converted: warn (default) or skip emit null in an optional column "
        "(logged at WARNING or DEBUG); fail, or a NOT NULL column, stops the task.",
    )
    for key, doc in (
        (EVENT_PROCESSING_FAILURE, "A binlog row event that cannot be processed"),
        (EVENT_DESERIALIZATION_FAILURE, "A binlog row event that cannot be decoded"),
        (INCONSISTENT_SCHEMA, "A captured table whose binlog table map cannot be turned into a schema"),
    ):
        d.define(
            key,
            ConfigType.STRING,
            "fail",
            ValidString.in_ignore_case(*PROCESSING_MODES),
            Importance.LOW,
            f"{doc}: fail stops the task; warn skips it with a warning naming its binlog position; skip "
            "(or ignore) skips it with a debug line.",
        )
    d.define(
        PROPAGATE_COLUMN_SOURCE_TYPE,
        ConfigType.LIST,
        None,
        _regex_list,
        Importance.LOW,
        "Regexes of <db>.<table>.<column>: their value fields carry __debezium.source.column.type/length/scale/name.",
    )
    d.define(
        PROPAGATE_DATATYPE_SOURCE_TYPE,
        ConfigType.LIST,
        None,
        _regex_list,
        Importance.LOW,
        "Regexes of <db>.<table>.<TYPE> (e.g. .+\\.FLOAT): those columns carry the source-type parameters.",
    )
    d.define(
        FIELD_NAME_ADJUSTMENT_MODE,
        ConfigType.STRING,
        "none",
        ValidString.in_ignore_case(*FIELD_NAME_MODES),
        Importance.LOW,
        "none | avro (invalid characters of field names become _) | avro_unicode (they become _uXXXX).",
    )
    d.define(
        INCLUDE_SCHEMA_COMMENTS,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Table and column comments in schema change events and the schema history (and, with "
        "column/datatype.propagate.source.type, the __debezium.source.column.comment parameter); off: null.",
    )
    d.define(
        SKIP_MESSAGES_WITHOUT_CHANGE,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Skip an update whose captured columns (after column.include/exclude.list) did not change.",
    )
    d.define(
        SCHEMA_NAME_ADJUSTMENT_MODE,
        ConfigType.STRING,
        "none",
        ValidString.in_ignore_case(*FIELD_NAME_MODES),
        Importance.LOW,
        "none | avro (invalid characters of key, value and envelope schema names become _) | avro_unicode.",
    )
    d.define(SNAPSHOT_DELAY_MS, ConfigType.LONG, 0, Range.at_least(0), Importance.LOW, "Wait before a snapshot.")
    d.define(STREAMING_DELAY_MS, ConfigType.LONG, 0, Range.at_least(0), Importance.LOW, "Wait after a snapshot.")
    d.define(
        "converters",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium custom converter aliases (<alias>.type, <alias>.*): TinyIntOneToBooleanConverter is built in; "
        "others are accepted, their columns keeping the standard mapping.",
    )
    d.define(
        SNAPSHOT_INCLUDE_COLLECTIONS,
        ConfigType.LIST,
        None,
        _regex_list,
        Importance.MEDIUM,
        "Regexes of <db>.<table>: the snapshot reads the rows of these captured tables only (every captured "
        "table's schema is read); unset: all of them.",
    )
    d.define(
        TOPIC_NAMING_STRATEGY,
        ConfigType.STRING,
        DEFAULT_TOPIC_NAMING_STRATEGY,
        _topic_naming_strategy,
        Importance.LOW,
        "Only Debezium's default, io.debezium.schema.DefaultTopicNamingStrategy.",
    )
    d.define(
        SNAPSHOT_SELECT_OVERRIDES,
        ConfigType.LIST,
        None,
        None,
        Importance.LOW,
        "<db>.<table> names whose snapshot runs the SELECT in snapshot.select.statement.overrides.<db>.<table>.",
    )
    d.define(
        READ_ONLY,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Incremental snapshots write nothing to the database: their watermarks are the executed GTID sets read "
        "before and after each chunk (gtid_mode=ON on MySQL), signals come through the file or kafka channel.",
    )
    signal_config.define(d)  # signal.* and incremental.snapshot.*: cdc_mysql/incremental.py
    known = set(d.names())
    for key, (_default, instead) in RECOGNISED.items():
        if key not in known:
            d.define(key, ConfigType.STRING, None, None, Importance.LOW, f"Recognised, not supported: {instead}.")
    return d


def select_overrides(props: Mapping[str, Any]) -> dict[str, str]:
    """`snapshot.select.statement.overrides`: table id (as listed) → the SELECT to snapshot it with."""
    listed = props.get(SNAPSHOT_SELECT_OVERRIDES)
    names = listed if isinstance(listed, list | tuple) else str(listed or "").split(",")
    out = {}
    for name in (str(n).strip() for n in names):
        if not name:
            continue
        statement = props.get(f"{SNAPSHOT_SELECT_OVERRIDES}.{name}")
        if statement is not None and str(statement).strip():
            out[name] = str(statement).strip()
    return out


def validated(props: Mapping[str, Any]) -> list[ConfigValue]:
    """The keys named at run time that the connector reads: snapshot SELECT overrides (with their errors)
    and the settings of the `converters` aliases (accepted, not used), so a worker reports none as unknown."""
    aliases = [a.strip() for a in str(props.get("converters") or "").split(",") if a.strip()]
    settings = [
        ConfigValue(key, value) for key, value in props.items() if any(key.startswith(f"{a}.") for a in aliases)
    ]
    return [*override_errors(props), *settings]


def override_errors(props: Mapping[str, Any]) -> list[ConfigValue]:
    """One ConfigValue per `snapshot.select.statement.overrides.<db>.<table>` key (so the worker counts it
    as a key the connector read, not an unknown one), and an error for a listed table without its statement."""
    out = [ConfigValue(key, value) for key, value in props.items() if key.startswith(f"{SNAPSHOT_SELECT_OVERRIDES}.")]
    listed = str(props.get(SNAPSHOT_SELECT_OVERRIDES) or "")
    for name in (n.strip() for n in listed.split(",")):
        key = f"{SNAPSHOT_SELECT_OVERRIDES}.{name}"
        if name and not str(props.get(key) or "").strip():
            cv = ConfigValue(SNAPSHOT_SELECT_OVERRIDES, listed)
            cv.add_error_message(
                f"{SNAPSHOT_SELECT_OVERRIDES} lists {name} but {key} is not set: add the SELECT statement for "
                f"{name} under {key}, or remove {name} from the list"
            )
            out.append(cv)
    return out


def warn_recognised(props: Mapping[str, Any]) -> list[str]:
    """Logs (and returns) one line per recognised key set to something other than Debezium's default."""
    lines = []
    for key, (default, instead) in RECOGNISED.items():
        if key not in props or props[key] is None or snapshot_modes.applies(props, key):
            continue
        value = str(props[key]).strip()
        if default is not None and value.lower() == default.lower():
            continue
        lines.append(f"{key}={value}: recognised, not supported: {instead}")
    for line in lines:
        log.warning("%s", line)
    return lines + CustomConverters.from_config(props).warn_unsupported()
