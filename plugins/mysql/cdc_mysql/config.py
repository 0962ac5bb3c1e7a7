"""MySqlConnectorConfig: Debezium's MySQL connector configuration names, defaults and checks."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Range,
    ValidRegex,
    ValidString,
)
from cdc_debezium import config as common
from cdc_debezium import snapshot_modes
from cdc_debezium.connector_config import RelationalDatabaseConnectorConfig
from cdc_debezium.filters import ColumnMappers, IncludeExclude, include_exclude
from cdc_debezium.queue import MAX_QUEUE_SIZE_IN_BYTES
from cdc_debezium.signals import config as signal_config
from cdc_mysql import column_hash, debezium_keys, tls
from cdc_mysql.schema_options import SchemaOptions

log = logging.getLogger(__name__)

HOSTNAME = "database.hostname"
PORT = "database.port"
USER = "database.user"
PASSWORD = "database.password"
SERVER_ID = "database.server.id"
CONNECT_TIMEOUT_MS = "connect.timeout.ms"
SNAPSHOT_MODE = "snapshot.mode"
SNAPSHOT_LOCKING_MODE = "snapshot.locking.mode"
SNAPSHOT_LOCK_TIMEOUT_MS = "snapshot.lock.timeout.ms"
SNAPSHOT_MAX_THREADS = "snapshot.max.threads"
SNAPSHOT_MAX_THREADS_MULTIPLIER = "snapshot.max.threads.multiplier"
INCLUDE_QUERY = "include.query"
GTID_SOURCE_INCLUDES = "gtid.source.includes"
GTID_SOURCE_EXCLUDES = "gtid.source.excludes"
GTID_SOURCE_FILTER_DML = "gtid.source.filter.dml.events"
HISTORY_PREFIX = "schema.history.internal"
HISTORY_CLASS = "schema.history.internal"
HISTORY_FILE = "schema.history.internal.file.filename"
HISTORY_KAFKA_TOPIC = "schema.history.internal.kafka.topic"
HISTORY_KAFKA_BOOTSTRAP = "schema.history.internal.kafka.bootstrap.servers"
HISTORY_STORE_ONLY_CAPTURED = "schema.history.internal.store.only.captured.tables.ddl"
HISTORY_SKIP_UNPARSEABLE = "schema.history.internal.skip.unparseable.ddl"
RECONNECT_MAX_ATTEMPTS = "errors.max.retries"
RECONNECT_BACKOFF_MS = "errors.retry.delay.initial.ms"
RECONNECT_BACKOFF_MAX_MS = "errors.retry.delay.max.ms"
EVENT_DESERIALIZATION_FAILURE = "event.deserialization.failure.handling.mode"
INCONSISTENT_SCHEMA = "inconsistent.schema.handling.mode"
FAILURE_KEYS = (common.EVENT_PROCESSING_FAILURE, EVENT_DESERIALIZATION_FAILURE, INCONSISTENT_SCHEMA)

SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "when_needed", "always", "recovery")
LOCKING_MODES = ("minimal", "none")
# Debezium's other snapshot.locking.mode values, refused with the reason (validation names the key).
_LOCKING_REFUSED = {
    "extended": "it holds the global read lock for the whole snapshot, blocking every write to the server for "
    "its duration, which this connector never does",
    "minimal_percona": "it takes Percona Server's LOCK TABLES FOR BACKUP, which MariaDB and MySQL do not have",
    "custom": "it loads a Java SnapshotLock (snapshot.locking.mode.custom.name), which cannot run here",
}
FILE_HISTORY = "io.debezium.storage.file.history.FileSchemaHistory"
KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"
MEMORY_HISTORY = "io.debezium.relational.history.MemorySchemaHistory"
EMBEDDED_HISTORY = "cdc.embedded"
HISTORY_CLASSES = (FILE_HISTORY, KAFKA_HISTORY, MEMORY_HISTORY, EMBEDDED_HISTORY)

_RENAMED = {
    "database.server.name": "topic.prefix",
    "database.history": "schema.history.internal",
    "database.history.file.filename": "schema.history.internal.file.filename",
    "database.history.kafka.topic": "schema.history.internal.kafka.topic",
    "database.history.kafka.bootstrap.servers": "schema.history.internal.kafka.bootstrap.servers",
    "database.history.store.only.captured.tables.ddl": "schema.history.internal.store.only.captured.tables.ddl",
    "database.history.skip.unparseable.ddl": "schema.history.internal.skip.unparseable.ddl",
    "database.whitelist": "database.include.list",
    "database.blacklist": "database.exclude.list",
    "table.whitelist": "table.include.list",
    "table.blacklist": "table.exclude.list",
    "column.whitelist": "column.include.list",
    "column.blacklist": "column.exclude.list",
}
_MODE_ALIASES = {"schema_only": "no_data", "schema_only_recovery": "recovery"}


def _server_id(name: str, value: Any) -> None:
    Range.between(1, 2**32 - 1)(name, value)


def config_def() -> ConfigDef:
    d = ConfigDef()
    d.define(
        HOSTNAME,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="MySQL/MariaDB host name.",
    )
    d.define(PORT, ConfigType.INT, 3306, Range.between(1, 65535), Importance.HIGH, "Server port.")
    d.define(
        USER,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="User with REPLICATION SLAVE, REPLICATION CLIENT/BINLOG MONITOR, SELECT, RELOAD.",
    )
    d.define(PASSWORD, ConfigType.PASSWORD, None, None, Importance.HIGH, "Password of database.user.")
    d.define(
        SERVER_ID,
        ConfigType.LONG,
        None,
        _server_id,
        Importance.HIGH,
        "Replica server id of the connector's binlog reader; unique among the server's replicas and readers. "
        "Optional (Debezium requires it): when omitted, the connector chooses an id no listed replica uses at its "
        "first start and keeps it in its offsets (reader_server_id).",
    )
    d.define(CONNECT_TIMEOUT_MS, ConfigType.LONG, 30000, Range.at_least(1), Importance.LOW, "Connect timeout.")
    d.define(
        SNAPSHOT_MODE,
        ConfigType.STRING,
        "initial",
        ValidString.in_ignore_case(*SNAPSHOT_MODES, *_MODE_ALIASES),
        Importance.MEDIUM,
        "When to snapshot: " + ", ".join(SNAPSHOT_MODES),
    )
    d.define(
        SNAPSHOT_MAX_THREADS,
        ConfigType.INT,
        1,
        Range.between(1, 64),
        Importance.MEDIUM,
        "Readers of the initial snapshot: above 1, tables and primary-key ranges of large tables are read at once "
        "by that many reader processes, all in transactions of the snapshot's one consistent point",
    )
    d.define(
        SNAPSHOT_MAX_THREADS_MULTIPLIER,
        ConfigType.INT,
        1,
        Range.between(1, 64),
        Importance.LOW,
        "With snapshot.max.threads above 1, a large table is split into up to 2 x snapshot.max.threads x this "
        "many primary-key ranges (each of at least 20000 estimated rows)",
    )
    d.define(
        SNAPSHOT_LOCKING_MODE,
        ConfigType.STRING,
        "minimal",
        ValidString.in_ignore_case(*LOCKING_MODES),
        Importance.LOW,
        "minimal: global read lock (FLUSH TABLES WITH READ LOCK) while the binlog position and the schema are "
        "read, or read locks on the captured tables where the global lock is refused; none: no lock where the "
        "server can say without one which binlog position the snapshot is at (MariaDB; MySQL with gtid_mode=ON "
        "when no commit is in flight), else read locks on the captured tables for that instant",
    )
    d.define(
        SNAPSHOT_LOCK_TIMEOUT_MS,
        ConfigType.LONG,
        10_000,
        Range.at_least(1),
        Importance.LOW,
        "How long the snapshot waits for its read locks (global or on the captured tables) before it fails.",
    )
    d.define(INCLUDE_QUERY, ConfigType.BOOLEAN, False, None, Importance.LOW, "Put the SQL into source.query.")
    d.define(
        GTID_SOURCE_INCLUDES,
        ConfigType.LIST,
        None,
        ValidRegex(),
        Importance.LOW,
        "GTID sources (MySQL UUIDs, MariaDB domain ids) to keep in the offsets' GTID set.",
    )
    d.define(GTID_SOURCE_EXCLUDES, ConfigType.LIST, None, ValidRegex(), Importance.LOW, "GTID sources to drop.")
    d.define(
        GTID_SOURCE_FILTER_DML,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "With gtid.source.includes/excludes set: emit row changes only of transactions whose GTID source they keep.",
    )
    d.define(
        HISTORY_CLASS,
        ConfigType.STRING,
        FILE_HISTORY,
        ValidString.in_(*HISTORY_CLASSES),
        Importance.LOW,
        "Schema history implementation.",
    )
    d.define(
        MAX_QUEUE_SIZE_IN_BYTES,
        ConfigType.LONG,
        0,
        Range.at_least(0),
        Importance.MEDIUM,
        "Bytes of decoded records poll() may hold, as Debezium's queue bound: decoding pauses once the buffered "
        "records' estimated size reaches it (a larger record still passes, alone), and poll() returns them. "
        "0: bounded by max.queue.size records only. The estimate is cdc_debezium.queue.approximate_size.",
    )
    d.define(HISTORY_FILE, ConfigType.STRING, None, None, Importance.LOW, "FileSchemaHistory path.")
    d.define(HISTORY_KAFKA_TOPIC, ConfigType.STRING, None, None, Importance.LOW, "KafkaSchemaHistory topic.")
    d.define(HISTORY_KAFKA_BOOTSTRAP, ConfigType.STRING, None, None, Importance.LOW, "KafkaSchemaHistory brokers.")
    d.define(HISTORY_STORE_ONLY_CAPTURED, ConfigType.BOOLEAN, False, None, Importance.LOW, "Skip others' DDL.")
    d.define(HISTORY_SKIP_UNPARSEABLE, ConfigType.BOOLEAN, False, None, Importance.LOW, "Accepted for compatibility.")
    d.define(
        RECONNECT_MAX_ATTEMPTS,
        ConfigType.INT,
        -1,
        Range.at_least(-1),
        Importance.LOW,
        "Reconnect attempts after a lost connection; -1 retries forever.",
    )
    d.define(RECONNECT_BACKOFF_MS, ConfigType.LONG, 300, Range.at_least(1), Importance.LOW, "First reconnect delay.")
    d.define(RECONNECT_BACKOFF_MAX_MS, ConfigType.LONG, 10000, Range.at_least(1), Importance.LOW, "Max delay.")
    tls.define(d)
    return debezium_keys.define(common.define_common(d))


CONFIG_DEF = config_def()


def normalize(props: Mapping[str, str]) -> dict[str, str]:
    """Maps snapshot.mode aliases; rejects Debezium 1.x names with the new name in the message."""
    out = dict(props)
    for old, new in _RENAMED.items():
        if old in out and new not in out:
            raise ConfigException(
                f"{old} was renamed to {new} in Debezium 2.0; set {new}={out[old]} instead", old, out[old]
            )
    mode = out.get(SNAPSHOT_MODE)
    if mode and mode.strip().lower() == "never":
        # Debezium 2.x streamed from the oldest binlog still on the server, without a snapshot: rows
        # older than that binlog were never emitted. Removed in Debezium 3.6.
        raise ConfigException(
            "snapshot.mode=never is not supported (Debezium deprecated it and removed it in 3.6): it read only "
            "the binlogs still on the server, silently missing every older row. Use snapshot.mode=initial to "
            "read the existing rows first, or snapshot.mode=no_data to stream changes from now on without them",
            SNAPSHOT_MODE,
            mode,
        )
    if mode and mode.lower() in _MODE_ALIASES:
        out[SNAPSHOT_MODE] = _MODE_ALIASES[mode.lower()]
    locking = str(out.get(SNAPSHOT_LOCKING_MODE) or "").strip().lower()
    if locking in _LOCKING_REFUSED:
        raise ConfigException(
            f"snapshot.locking.mode={locking} is not supported: {_LOCKING_REFUSED[locking]}. Use minimal (the default: "
            "a global read lock only while the binlog position and the schema are read, then one consistent "
            "REPEATABLE READ snapshot) or none",
            SNAPSHOT_LOCKING_MODE,
            out.get(SNAPSHOT_LOCKING_MODE),
        )
    if resolved := snapshot_modes.resolve(out):  # configuration_based / custom, as on PostgreSQL
        out[SNAPSHOT_MODE] = resolved
    return out


def validate(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key results plus the cross-key rules (mutually exclusive lists, queue vs batch)."""
    try:
        props = normalize(props)
    except ConfigException as e:
        cv = ConfigValue(e.name or "", e.value)
        cv.add_error_message(str(e))
        return [*CONFIG_DEF.validate(props), cv]
    values = common.add_cross_field_errors(CONFIG_DEF.validate(props))
    by_name = {v.name: v for v in values}
    signal_config.add_errors(props, by_name)
    if props.get(GTID_SOURCE_INCLUDES) and props.get(GTID_SOURCE_EXCLUDES):
        by_name[GTID_SOURCE_EXCLUDES].add_error_message(
            f"{GTID_SOURCE_INCLUDES} and {GTID_SOURCE_EXCLUDES} are mutually exclusive: set only one of them"
        )
    if props.get(HISTORY_CLASS) == KAFKA_HISTORY and not (
        props.get(HISTORY_KAFKA_TOPIC) and props.get(HISTORY_KAFKA_BOOTSTRAP)
    ):
        by_name[HISTORY_KAFKA_TOPIC].add_error_message(
            f"{KAFKA_HISTORY} needs {HISTORY_KAFKA_TOPIC} and {HISTORY_KAFKA_BOOTSTRAP}"
        )
    return [
        *values,
        *_column_mapper_errors(props),
        *tls.cross_key_errors(props),
        *debezium_keys.validated(props),
        *column_hash.errors(props),
    ]


def _column_mapper_errors(props: Mapping[str, str]) -> list[ConfigValue]:
    """`column.mask.*` / `column.truncate.*` keys: bad regexes, and the Debezium variants not implemented."""
    out = []
    for name, raw in props.items():
        if not name.startswith(("column.mask.", "column.truncate.")) or column_hash.HASH_KEY.match(name):
            continue
        cv = ConfigValue(name, raw)
        out.append(cv)
        try:
            known = bool(ColumnMappers.from_config({name: raw}).rules)
        except ConfigException as e:
            cv.add_error_message(str(e))
            continue
        if not known:
            # An unsupported masking key would leave the columns it names unmasked: refuse it.
            cv.add_error_message(
                f"{name} is not supported by this connector (only column.mask.with.<n>.chars and "
                "column.truncate.to.<n>.chars are); leave the columns out with column.exclude.list instead"
            )
    return out


class MySqlConnectorConfig(RelationalDatabaseConnectorConfig):
    """Parsed, checked configuration with typed accessors for the task (Debezium's MySqlConnectorConfig).

    The shared keys' attributes (topic_prefix, max_batch_size, decimal_mode, table_filter,
    key_columns, …) come from RelationalDatabaseConnectorConfig; the MySQL keys' are set here.
    """

    KEY_COLUMNS_CASE_SENSITIVE = False  # MySQL table names compare case-insensitively

    def __init__(self, props: Mapping[str, str]) -> None:
        submitted, props = props, normalize(props)
        errors = [(v.name, e) for v in validate(props) for e in v.errors]
        if errors:
            name, message = errors[0]
            raise ConfigException(message, name)
        super().__init__(CONFIG_DEF, props)
        self.hostname: str = self.get(HOSTNAME)
        self.port: int = self.get(PORT)
        self.user: str = self.get(USER)
        pw = self.get(PASSWORD)
        self.password: str = pw.value() if pw is not None else ""
        # None: not given; the task resolves the reader's id (cdc_mysql/server_ids.py).
        self.server_id: int | None = self.get(SERVER_ID)
        self.connect_timeout_s: float = self.get(CONNECT_TIMEOUT_MS) / 1000
        self.tls = tls.MySqlTls.from_props(self.values())
        self.snapshot_mode: str = self.get(SNAPSHOT_MODE).lower()
        self.locking_mode: str = self.get(SNAPSHOT_LOCKING_MODE).lower()
        self.lock_timeout_ms: int = self.get(SNAPSHOT_LOCK_TIMEOUT_MS)
        self.snapshot_threads: int = self.get(SNAPSHOT_MAX_THREADS)
        self.snapshot_threads_multiplier: int = self.get(SNAPSHOT_MAX_THREADS_MULTIPLIER)
        self.include_query: bool = self.get(INCLUDE_QUERY)
        #: `max.queue.size.in.bytes`: the decoded records' bound by estimated size (0: none).
        self.max_queue_size_in_bytes: int = self.get(MAX_QUEUE_SIZE_IN_BYTES)
        self.gtid_filter: IncludeExclude = include_exclude(self.values(), GTID_SOURCE_INCLUDES, GTID_SOURCE_EXCLUDES)
        # Debezium's gtid.source.filter.dml.events: row events of other GTID sources are not emitted.
        self.gtid_filters_dml: bool = self.get(GTID_SOURCE_FILTER_DML) and bool(
            self.gtid_filter.include or self.gtid_filter.exclude
        )
        self.column_mappers = ColumnMappers.from_config(props)
        self.history_class: str = self.get(HISTORY_CLASS)
        self.history_file: str | None = self.get(HISTORY_FILE)
        self.history_store_only_captured: bool = self.get(HISTORY_STORE_ONLY_CAPTURED)
        self.reconnect_attempts: int = self.get(RECONNECT_MAX_ATTEMPTS)
        self.reconnect_backoff_s: float = self.get(RECONNECT_BACKOFF_MS) / 1000
        self.reconnect_backoff_max_s: float = self.get(RECONNECT_BACKOFF_MAX_MS) / 1000
        # Debezium keys beyond the type mapping (debezium_keys.py)
        self.time_adjuster: bool = self.get(debezium_keys.ENABLE_TIME_ADJUSTER)
        self.processing_failure: str = self.get(debezium_keys.EVENT_PROCESSING_FAILURE).lower()
        self.deserialization_failure: str = self.get(debezium_keys.EVENT_DESERIALIZATION_FAILURE).lower()
        self.inconsistent_schema: str = self.get(debezium_keys.INCONSISTENT_SCHEMA).lower()
        self.schema_options = SchemaOptions.from_config(self.get, props)
        self.select_overrides = debezium_keys.select_overrides(props)
        # read.only: incremental snapshots watermark by GTID set and write nothing (incremental_read_only.py)
        self.read_only: bool = self.get(debezium_keys.READ_ONLY)
        debezium_keys.warn_recognised(submitted)  # as submitted: configuration_based's keys are read, not ignored

    def captures_database(self, db: str) -> bool:
        return db.lower() not in _SYSTEM_DATABASES and self.database_filter(db)

    def captures_table(self, db: str, table: str) -> bool:
        return self.captures_database(db) and self.table_filter(f"{db}.{table}")

    def captures_column(self, db: str, table: str, column: str) -> bool:
        return self.column_filter(f"{db}.{table}.{column}")


_SYSTEM_DATABASES = {"mysql", "information_schema", "performance_schema", "sys"}
