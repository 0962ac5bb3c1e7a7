"""PostgresConnectorConfig: Debezium's PostgreSQL connector keys, on top of the shared ones."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidRegex,
    ValidString,
)
from cdc_debezium import snapshot_modes
from cdc_debezium.config import (
    EVENT_PROCESSING_FAILURE,
    TIME_PRECISION_MODE,
    add_cross_field_errors,
    define_common,
    define_failure_modes,
    warn_unless_fail,
)
from cdc_debezium.connector_config import RelationalDatabaseConnectorConfig
from cdc_debezium.filters import IncludeExclude, include_exclude
from cdc_debezium.key_columns import KeyColumns
from cdc_debezium.queue import MAX_QUEUE_SIZE_IN_BYTES
from cdc_debezium.signals import config as signal_config
from cdc_postgres import debezium_keys, names, replica_identity, tls
from cdc_postgres.column_mappers import ColumnMappers
from cdc_postgres.replica_identity import ValidAutosetValues
from cdc_postgres.reselect import ERROR_MODES, SCOPES, ReselectSettings
from cdc_postgres.topics import PostgresTopicNaming

log = logging.getLogger(__name__)

HOSTNAME = "database.hostname"
PORT = "database.port"
USER = "database.user"
PASSWORD = "database.password"
DATABASE_NAME = "database.dbname"
PLUGIN_NAME = "plugin.name"
SLOT_NAME = "slot.name"
SLOT_MAX_RETRIES = "slot.max.retries"
SLOT_RETRY_DELAY_MS = "slot.retry.delay.ms"
DROP_SLOT_ON_STOP = "slot.drop.on.stop"
PUBLICATION_NAME = "publication.name"
PUBLICATION_AUTOCREATE_MODE = "publication.autocreate.mode"
SCHEMA_INCLUDE_LIST = "schema.include.list"
SCHEMA_EXCLUDE_LIST = "schema.exclude.list"
MSG_PREFIX_INCLUDE_LIST = "message.prefix.include.list"
MSG_PREFIX_EXCLUDE_LIST = "message.prefix.exclude.list"
SNAPSHOT_MODE = "snapshot.mode"
SNAPSHOT_ISOLATION_MODE = "snapshot.isolation.mode"
SNAPSHOT_LOCKING_MODE = "snapshot.locking.mode"
SNAPSHOT_LOCK_TIMEOUT_MS = "snapshot.lock.timeout.ms"
UNAVAILABLE_VALUE_PLACEHOLDER = "unavailable.value.placeholder"
INTERVAL_HANDLING_MODE = "interval.handling.mode"
HSTORE_HANDLING_MODE = "hstore.handling.mode"
MONEY_FRACTION_DIGITS = "money.fraction.digits"
STATUS_UPDATE_INTERVAL_MS = "status.update.interval.ms"
STREAM_IN_PROGRESS_TRANSACTIONS = "stream.in.progress.transactions"
STREAM_BUFFER_MEMORY_BYTES = "stream.buffer.memory.bytes"
INCONSISTENT_SCHEMA = "inconsistent.schema.handling.mode"

SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "when_needed", "always")
AUTOCREATE_MODES = ("all_tables", "filtered", "disabled", "no_tables")
ISOLATION_MODES = ("serializable", "repeatable_read", "read_committed", "read_uncommitted")
LOCKING_MODES = ("shared", "none")
SSL_MODES = tls.SSL_MODES
FAILURE_KEYS = (EVENT_PROCESSING_FAILURE, INCONSISTENT_SCHEMA)
# Enum keys Debezium parses case-insensitively; parse() hands the task their lower-case form.
_LOWER_CASE_KEYS = (
    SNAPSHOT_MODE,
    PLUGIN_NAME,
    PUBLICATION_AUTOCREATE_MODE,
    INTERVAL_HANDLING_MODE,
    HSTORE_HANDLING_MODE,
    tls.SSLMODE,
    SNAPSHOT_ISOLATION_MODE,
    SNAPSHOT_LOCKING_MODE,
    "reselect.scope",
    "reselect.error.handling.mode",
    *FAILURE_KEYS,
)
# Earlier Debezium names of snapshot modes, mapped to today's.
_MODE_ALIASES = {"never": "no_data", "exported": "initial"}
_RENAMED = {
    "database.server.name": "topic.prefix",
    "schema.whitelist": SCHEMA_INCLUDE_LIST,
    "schema.blacklist": SCHEMA_EXCLUDE_LIST,
    "table.whitelist": "table.include.list",
    "table.blacklist": "table.exclude.list",
    "column.whitelist": "column.include.list",
    "column.blacklist": "column.exclude.list",
}
_EXCLUSIVE = (
    (SCHEMA_INCLUDE_LIST, SCHEMA_EXCLUDE_LIST),
    (MSG_PREFIX_INCLUDE_LIST, MSG_PREFIX_EXCLUDE_LIST),
    ("reselect.columns.include.list", "reselect.columns.exclude.list"),
)
# Debezium's re-select post processor; its options are this connector's reselect.* keys.
RESELECT_PROCESSOR = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"
RESELECT_KEYS = (
    "reselect.columns.include.list",
    "reselect.columns.exclude.list",
    "reselect.unavailable.values",
    "reselect.null.values",
    "reselect.use.event.key",
    "reselect.error.handling.mode",
)
# The post processor's defaults where they differ from the connector's: it re-selects for every
# event, nulls included, and only warns when it cannot.
_PROCESSOR_DEFAULTS = {"reselect.scope": "all", "reselect.null.values": "true", "reselect.error.handling.mode": "warn"}
_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")


def _slot_name(name: str, value: Any) -> None:
    """PostgreSQL's own rule for slot names (and Debezium's check of slot.name)."""
    if value is None or not _SLOT_NAME.fullmatch(str(value)):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: a replication slot name may contain only lower-case "
            "letters, digits and underscores, at most 63 characters (e.g. debezium_shop)",
            name,
            value,
        )


_PG_KEYS = (
    ConfigDef()
    .define(HOSTNAME, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define(PORT, ConfigType.INT, 5432, Range.between(1, 65535), Importance.HIGH)
    .define(USER, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define(PASSWORD, ConfigType.PASSWORD, None, None, Importance.HIGH)
    .define(DATABASE_NAME, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define(
        PLUGIN_NAME,
        ConfigType.STRING,
        "pgoutput",
        ValidString.in_ignore_case("pgoutput"),
        Importance.MEDIUM,
        "Logical decoding plugin; only pgoutput (built into PostgreSQL 10+) is supported.",
    )
    .define(SLOT_NAME, ConfigType.STRING, "debezium", _slot_name, Importance.MEDIUM)
    .define(
        SLOT_MAX_RETRIES,
        ConfigType.INT,
        6,
        Range.at_least(0),
        Importance.LOW,
        "How often to retry when the slot is active for another connection.",
    )
    .define(SLOT_RETRY_DELAY_MS, ConfigType.LONG, 10_000, Range.at_least(0), Importance.LOW, "Delay of those retries.")
    .define(DROP_SLOT_ON_STOP, ConfigType.BOOLEAN, False, None, Importance.LOW, "Drop the slot on stop (tests).")
    .define(PUBLICATION_NAME, ConfigType.STRING, "dbz_publication", NonEmptyString(), Importance.MEDIUM)
    .define(
        PUBLICATION_AUTOCREATE_MODE,
        ConfigType.STRING,
        "all_tables",
        ValidString.in_ignore_case(*AUTOCREATE_MODES),
        Importance.MEDIUM,
    )
    .define(SCHEMA_INCLUDE_LIST, ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define(SCHEMA_EXCLUDE_LIST, ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define(MSG_PREFIX_INCLUDE_LIST, ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define(MSG_PREFIX_EXCLUDE_LIST, ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define(
        SNAPSHOT_MODE,
        ConfigType.STRING,
        "initial",
        ValidString.in_ignore_case(*SNAPSHOT_MODES, *_MODE_ALIASES, "custom", "configuration_based"),
        Importance.MEDIUM,
        "When to snapshot: " + ", ".join(SNAPSHOT_MODES),
    )
    .define(
        SNAPSHOT_ISOLATION_MODE,
        ConfigType.STRING,
        "serializable",
        ValidString.in_ignore_case(*ISOLATION_MODES),
        Importance.LOW,
        "Debezium's isolation of the snapshot transaction. The snapshot reads the replication slot's exported "
        "snapshot under REPEATABLE READ (READ COMMITTED cannot hold an imported snapshot, and SERIALIZABLE cannot "
        "import one a non-serializable transaction exported): every value reads that one consistent snapshot "
        "(read_committed and read_uncommitted get the stronger isolation, with a warning).",
    )
    .define(
        SNAPSHOT_LOCKING_MODE,
        ConfigType.STRING,
        "shared",
        ValidString.in_ignore_case(*LOCKING_MODES),
        Importance.LOW,
        "shared: ACCESS SHARE locks on the captured tables while their structure is read (DDL waits, writes do "
        "not); none: no locks.",
    )
    .define(
        SNAPSHOT_LOCK_TIMEOUT_MS,
        ConfigType.LONG,
        10_000,
        Range.at_least(0),
        Importance.LOW,
        "How long the snapshot waits for its table locks before failing.",
    )
    .define(
        replica_identity.KEY,
        ConfigType.STRING,
        None,
        ValidAutosetValues(),
        Importance.LOW,
        "Comma-separated <schema.table regex>:<DEFAULT|FULL|NOTHING|INDEX name>; applied with ALTER TABLE at start.",
    )
    .define(
        UNAVAILABLE_VALUE_PLACEHOLDER,
        ConfigType.STRING,
        "__debezium_unavailable_value",
        None,
        Importance.LOW,
        "Stands in for unchanged TOASTed values that pgoutput does not send.",
    )
    .define(
        "reselect.unavailable.values",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Re-select the values pgoutput did not send (unchanged TOASTed columns) from the table, by the row's key, "
        "in the events reselect.scope names, instead of sending unavailable.value.placeholder. Debezium does this "
        "only with its ReselectColumnsPostProcessor configured.",
    )
    .define(
        "reselect.scope",
        ConfigType.STRING,
        "key_changes",
        ValidString.in_ignore_case(*SCOPES),
        Importance.MEDIUM,
        "Not a Debezium option. key_changes: only the create of a primary-key change (an UPDATE of the key under "
        "REPLICA IDENTITY DEFAULT or INDEX), whose values no target holds; all: every create and update that "
        "lacks a value, as Debezium's ReselectColumnsPostProcessor (one SELECT per such event).",
    )
    .define(
        "post.processors",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Debezium's post processors, each configured under <name>.*: only "
        "io.debezium.processors.reselect.ReselectColumnsPostProcessor, which maps to the reselect.* keys.",
    )
    .define(
        "reselect.null.values",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Also re-select columns that are null in those events (the post processor's default is true).",
    )
    .define(
        "reselect.columns.include.list",
        ConfigType.LIST,
        None,
        ValidRegex(),
        Importance.LOW,
        "Regexes of <schema>.<table>:<column> to re-select (default: every column).",
    )
    .define(
        "reselect.columns.exclude.list",
        ConfigType.LIST,
        None,
        ValidRegex(),
        Importance.LOW,
        "Regexes of <schema>.<table>:<column> never to re-select.",
    )
    .define(
        "reselect.use.event.key",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Find the row by the message key (message.key.columns) instead of the primary key; a table without a "
        "primary key always uses the message key.",
    )
    .define(
        "reselect.error.handling.mode",
        ConfigType.STRING,
        "fail",
        ValidString.in_ignore_case(*ERROR_MODES),
        Importance.LOW,
        "fail: a value that cannot be re-selected (no privilege, an ambiguous key) stops the task with the fix; "
        "warn: log it and send the placeholder (the post processor's default). A row that no longer exists is "
        "not an error: the change that removed it follows.",
    )
    .define(INTERVAL_HANDLING_MODE, ConfigType.STRING, "numeric", ValidString.in_ignore_case("numeric", "string"))
    .define(HSTORE_HANDLING_MODE, ConfigType.STRING, "json", ValidString.in_ignore_case("json", "map"))
    .define(MONEY_FRACTION_DIGITS, ConfigType.SHORT, 2, Range.between(0, 20))
    .define(STATUS_UPDATE_INTERVAL_MS, ConfigType.INT, 10_000, Range.at_least(0), Importance.LOW)
    .define(
        STREAM_IN_PROGRESS_TRANSACTIONS,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Not a Debezium option. pgoutput proto 2 streaming (PostgreSQL 14+): the server sends transactions larger "
        "than logical_decoding_work_mem before they commit, instead of spilling them itself; the connector keeps "
        "them and emits each at its commit, exactly as without streaming.",
    )
    .define(
        STREAM_BUFFER_MEMORY_BYTES,
        ConfigType.LONG,
        64 * 1024 * 1024,
        Range.at_least(0),
        Importance.LOW,
        "With stream.in.progress.transactions: bytes of open streamed transactions kept in memory; past it the "
        "largest moves to a temporary file.",
    )
    .define(
        MAX_QUEUE_SIZE_IN_BYTES,
        ConfigType.LONG,
        0,
        Range.at_least(0),
        Importance.MEDIUM,
        "Bytes the queue between the WAL reader and poll() may hold, as Debezium's: the reader waits once the "
        "queued records' estimated size reaches it (a larger record still passes, alone). 0: bounded by "
        "max.queue.size records only. The estimate is cdc_debezium.queue.approximate_size.",
    )
    .define(
        TIME_PRECISION_MODE,
        ConfigType.STRING,
        "adaptive",
        ValidString.in_ignore_case("adaptive", "adaptive_time_microseconds", "connect"),
        Importance.MEDIUM,
        "adaptive (PostgreSQL's default) | adaptive_time_microseconds | connect",
    )
)

define_failure_modes(_PG_KEYS, FAILURE_KEYS)
tls.define(_PG_KEYS)  # database.sslmode, sslrootcert, sslcert, sslkey, sslpassword

# Every other key of Debezium's PostgreSQL connector: implemented there, or accepted with a warning.
CONFIG_DEF = debezium_keys.define(define_common(ConfigDef()).merge(_PG_KEYS))


def with_post_processors(props: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConfigValue]]:
    """Debezium's `post.processors` form of the re-select options, as this connector's reselect.* keys.

    Debezium configures ReselectColumnsPostProcessor as `post.processors=<name>`,
    `<name>.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor` and `<name>.reselect.*`;
    here it is built in. Such a configuration gets the post processor's behaviour (every event, nulls
    too, warn). Other post processor types are refused rather than ignored.
    """
    names = [n.strip() for n in str(props.get("post.processors") or "").split(",") if n.strip()]
    out = dict(props)
    errors: list[str] = []
    for name in names:
        kind = props.get(f"{name}.type")
        if kind != RESELECT_PROCESSOR:
            errors.append(
                f"post processor {name!r} has {name}.type={kind}, which the PostgreSQL connector does not support "
                f"(only {RESELECT_PROCESSOR}, which is built in); remove it from post.processors"
            )
            continue
        for key in (*RESELECT_KEYS, *_PROCESSOR_DEFAULTS):
            given = props.get(f"{name}.{key}", _PROCESSOR_DEFAULTS.get(key))
            if given is None:
                continue
            if key in props and str(props[key]).strip().lower() != str(given).strip().lower():
                if f"{name}.{key}" in props:
                    errors.append(f"{key}={props[key]} and {name}.{key}={given} disagree: set only one of them")
                continue  # the connector's own key wins over the post processor's default
            out[key] = given
    problems = []
    for message in errors:
        cv = ConfigValue("post.processors", props.get("post.processors"))
        cv.add_error_message(message)
        problems.append(cv)
    return out, problems


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Per-key results plus the cross-key rules; renamed Debezium 1.x keys are errors that name the new key."""
    props, post_processor_errors = with_post_processors(props)
    values = add_cross_field_errors(CONFIG_DEF.validate(props))
    by_name = {v.name: v for v in values}
    signal_config.add_errors(props, by_name)
    for inc, exc in _EXCLUSIVE:
        if props.get(inc) and props.get(exc):
            by_name[exc].add_error_message(f"{inc} and {exc} are mutually exclusive: set only one of them")
    key_columns = by_name["message.key.columns"]
    if not key_columns.errors:
        try:
            KeyColumns.parse(props.get("message.key.columns"))
        except ConfigException as e:
            key_columns.add_error_message(str(e))
    try:
        snapshot_modes.resolve(props)
    except ConfigException as e:
        by_name[SNAPSHOT_MODE].add_error_message(str(e))
    return [*values, *_extra_key_errors(props), *post_processor_errors, *debezium_keys.dynamic_keys(props)]


def _extra_key_errors(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Keys Debezium knows that this connector must refuse rather than ignore."""
    out = []
    for name, value in props.items():
        if name in _RENAMED and _RENAMED[name] not in props:
            message = f"{name} was renamed to {_RENAMED[name]} in Debezium 2.0; set {_RENAMED[name]}={value} instead"
        elif name.startswith(("column.mask.", "column.truncate.")) and not debezium_keys.is_mapper_key(name):
            # Ignoring a masking rule would publish the very values it was meant to hide.
            message = (
                f"{name} is not a column mapper Debezium knows (column.mask.with.<n>.chars, "
                "column.mask.hash[.v2].<algorithm>.with.salt.<salt>, column.truncate.to.<n>.chars), so the columns "
                "would be emitted as they are; fix the key or leave the columns out with column.exclude.list"
            )
        else:
            continue
        cv = ConfigValue(name, value)
        cv.add_error_message(message)
        out.append(cv)
    return out


class PostgresConnectorConfig(RelationalDatabaseConnectorConfig):
    """Debezium's PostgresConnectorConfig: the checked configuration, read once into typed attributes.

    The shared keys' attributes (topic_prefix, max_batch_size, decimal_mode, table_filter,
    column_filter, key_columns, fetch_size, …) come from RelationalDatabaseConnectorConfig; the
    PostgreSQL keys' are set here. Enum values are in lower case and snapshot.mode aliases are
    mapped, in the attributes and in `get(key)` / `config[key]` alike.
    """

    def __init__(self, props: Mapping[str, Any]) -> None:
        """Checks `props` (the first problem raises ConfigException, naming its key), then reads them."""
        for v in validate(props):
            if v.errors:
                raise ConfigException(v.errors[0], v.name, v.value)
        super().__init__(CONFIG_DEF, with_post_processors(props)[0])
        normalised = {key: self.get(key).lower() for key in _LOWER_CASE_KEYS}
        mode = snapshot_modes.resolve(props) or normalised[SNAPSHOT_MODE]  # configuration_based, as on MySQL
        normalised[SNAPSHOT_MODE] = _MODE_ALIASES.get(mode, mode)
        self._values.update(normalised)  # what get() answers: the parsed values in their canonical form
        if normalised[SNAPSHOT_ISOLATION_MODE] in ("read_committed", "read_uncommitted"):
            log.warning(
                "snapshot.isolation.mode=%s: the snapshot reads the replication slot's exported snapshot under "
                "REPEATABLE READ (READ COMMITTED would drop it at the first statement), so it is consistent with where "
                "streaming starts",
                normalised[SNAPSHOT_ISOLATION_MODE],
            )
        warn_unless_fail(self.get, [k for k in FAILURE_KEYS if k != EVENT_PROCESSING_FAILURE])
        debezium_keys.warn_unsupported(props)
        if props.get(tls.SSLFACTORY):
            log.warning(tls.SSLFACTORY_IGNORED, tls.SSLFACTORY, props.get(tls.SSLFACTORY))
        values = self.values()
        # The connection (dsn() adds the database.ssl* keys)
        self.hostname: str = self.get(HOSTNAME)
        self.port: int = self.get(PORT)
        self.user: str = self.get(USER)
        #: `database.password`, still wrapped (its repr is masked): `.value()` only where it is used.
        self.password: Password | None = self.get(PASSWORD)
        #: `database.dbname`: the one database the connector captures.
        self.dbname: str = self.get(DATABASE_NAME)
        #: `plugin.name`: always pgoutput.
        self.plugin_name: str = self.get(PLUGIN_NAME)
        # The replication slot and the publication
        self.slot_name: str = self.get(SLOT_NAME)
        #: `slot.max.retries` x `slot.retry.delay.ms`: how long a slot held by another reader is waited for.
        self.slot_max_retries: int = self.get(SLOT_MAX_RETRIES)
        self.slot_retry_delay_ms: int = self.get(SLOT_RETRY_DELAY_MS)
        #: `slot.drop.on.stop`: the slot is dropped when the task stops (tests; loses the stream's position).
        self.drop_slot_on_stop: bool = self.get(DROP_SLOT_ON_STOP)
        self.publication_name: str = self.get(PUBLICATION_NAME)
        #: `publication.autocreate.mode`: all_tables | filtered | disabled | no_tables.
        self.publication_autocreate_mode: str = self.get(PUBLICATION_AUTOCREATE_MODE)
        #: `replica.identity.autoset.values`: the rules replica_identity.apply runs at start, or None.
        self.replica_identity_autoset_values: str | None = self.get(replica_identity.KEY)
        # What is captured (the shared table and column filters come from the base class)
        #: `schema.include.list` / `schema.exclude.list`, matched against the schema name.
        self.schema_filter: IncludeExclude = include_exclude(values, SCHEMA_INCLUDE_LIST, SCHEMA_EXCLUDE_LIST)
        #: `message.prefix.include.list` / `message.prefix.exclude.list`: the logical decoding messages emitted.
        self.message_prefix_filter: IncludeExclude = include_exclude(
            values, MSG_PREFIX_INCLUDE_LIST, MSG_PREFIX_EXCLUDE_LIST
        )
        #: `column.mask.*`, `column.truncate.*`, `column.mask.hash.*`, `column.propagate.source.type`, …
        self.column_mappers = ColumnMappers.from_config(props)
        # The snapshot
        #: `snapshot.mode`, aliases mapped: initial | initial_only | no_data | when_needed | always.
        self.snapshot_mode: str = self.get(SNAPSHOT_MODE)
        #: `snapshot.isolation.mode` (the snapshot always runs under REPEATABLE READ; see its documentation).
        self.snapshot_isolation_mode: str = self.get(SNAPSHOT_ISOLATION_MODE)
        #: `snapshot.locking.mode`: shared | none.
        self.locking_mode: str = self.get(SNAPSHOT_LOCKING_MODE)
        self.lock_timeout_ms: int = self.get(SNAPSHOT_LOCK_TIMEOUT_MS)
        self.snapshot_delay_ms: int = self.get(debezium_keys.SNAPSHOT_DELAY)
        # Streaming
        self.streaming_delay_ms: int = self.get(debezium_keys.STREAMING_DELAY)
        #: `status.update.interval.ms`: how often the confirmed position is sent to the server.
        self.status_update_interval_ms: int = self.get(STATUS_UPDATE_INTERVAL_MS)
        #: `stream.in.progress.transactions`: pgoutput proto 2 streaming of large open transactions.
        self.stream_in_progress_transactions: bool = self.get(STREAM_IN_PROGRESS_TRANSACTIONS)
        #: `stream.buffer.memory.bytes`: bytes of open streamed transactions kept in memory.
        self.stream_buffer_memory_bytes: int = self.get(STREAM_BUFFER_MEMORY_BYTES)
        #: `max.queue.size.in.bytes`: the queue's bound by estimated size (0: none).
        self.max_queue_size_in_bytes: int = self.get(MAX_QUEUE_SIZE_IN_BYTES)
        #: `event.processing.failure.handling.mode`: fail | warn | skip | ignore.
        self.processing_failure: str = self.get(EVENT_PROCESSING_FAILURE)
        # Values, names and topics
        #: `interval.handling.mode`: numeric | string.
        self.interval_handling_mode: str = self.get(INTERVAL_HANDLING_MODE)
        #: `hstore.handling.mode`: json | map.
        self.hstore_handling_mode: str = self.get(HSTORE_HANDLING_MODE)
        self.money_fraction_digits: int = self.get(MONEY_FRACTION_DIGITS)
        self.include_unknown_datatypes: bool = self.get(debezium_keys.INCLUDE_UNKNOWN)
        #: `unavailable.value.placeholder`: stands in for unchanged TOASTed values that are not re-selected.
        self.unavailable_value_placeholder: str = self.get(UNAVAILABLE_VALUE_PLACEHOLDER)
        #: The `reselect.*` keys (or Debezium's ReselectColumnsPostProcessor form of them).
        self.reselect = ReselectSettings.from_config(values)
        #: `field.name.adjustment.mode` / `schema.name.adjustment.mode`: none | avro | avro_unicode.
        self.field_name_adjustment_mode: str = self.get(names.FIELD_KEY).lower()
        self.schema_name_adjustment_mode: str = self.get(names.SCHEMA_KEY).lower()
        #: `topic.naming.strategy`, `topic.delimiter`, `topic.transaction`, `topic.heartbeat.prefix`.
        self.topic_naming = PostgresTopicNaming.from_config(values)

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> PostgresConnectorConfig:
        """The checked configuration (the first problem raises, naming its key)."""
        return cls(props)

    def __getitem__(self, key: str) -> Any:
        """The value of a declared key, as `get(key)`: for tools and tests; the task reads the attributes."""
        return self.get(key)

    def select_overrides(self) -> dict[str, str]:
        """`snapshot.select.statement.overrides`: schema.table → the SELECT its snapshot reads.

        Read when the snapshot starts, as before: a listed table without its statement key is logged then.
        """
        return debezium_keys.select_overrides(self.originals(), self.get(debezium_keys.OVERRIDES))

    def dsn(self, replication: bool = False) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "host": self.hostname,
            "port": self.port,
            "user": self.user,
            "dbname": self.dbname,
            # Text output must follow the grammar text_values parses, whatever the server default.
            "options": "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c TimeZone=UTC",
        }
        if self.password is not None:
            kw["password"] = self.password.value()
        # sslmode, sslrootcert, sslcert, sslkey, sslpassword: every connection, the replication one too
        kw.update(tls.libpq_params(self.values()))
        return kw
