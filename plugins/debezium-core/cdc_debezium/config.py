"""Config keys shared by Debezium's relational connectors, with Debezium's names and defaults."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Range,
    ValidList,
    ValidRegex,
    ValidString,
)
from cdc_debezium.handling_modes import (
    BigIntUnsignedHandlingMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
    TimePrecisionMode,
)
from cdc_debezium.key_columns import KeyColumns

log = logging.getLogger(__name__)

TOPIC_PREFIX = "topic.prefix"
TOMBSTONES_ON_DELETE = "tombstones.on.delete"
SKIPPED_OPERATIONS = "skipped.operations"
INCLUDE_SCHEMA_CHANGES = "include.schema.changes"
PROVIDE_TRANSACTION_METADATA = "provide.transaction.metadata"
MAX_BATCH_SIZE = "max.batch.size"
MAX_QUEUE_SIZE = "max.queue.size"
POLL_INTERVAL_MS = "poll.interval.ms"
HEARTBEAT_INTERVAL_MS = "heartbeat.interval.ms"
HEARTBEAT_ACTION_QUERY = "heartbeat.action.query"
DECIMAL_HANDLING_MODE = "decimal.handling.mode"
TIME_PRECISION_MODE = "time.precision.mode"
BIGINT_UNSIGNED_HANDLING_MODE = "bigint.unsigned.handling.mode"
BINARY_HANDLING_MODE = "binary.handling.mode"
DATABASE_INCLUDE_LIST = "database.include.list"
DATABASE_EXCLUDE_LIST = "database.exclude.list"
TABLE_INCLUDE_LIST = "table.include.list"
TABLE_EXCLUDE_LIST = "table.exclude.list"
COLUMN_INCLUDE_LIST = "column.include.list"
COLUMN_EXCLUDE_LIST = "column.exclude.list"
MESSAGE_KEY_COLUMNS = "message.key.columns"
SNAPSHOT_FETCH_SIZE = "snapshot.fetch.size"

_TOPIC_PREFIX_CHARS = re.compile(r"^[a-zA-Z0-9._\-]+$")
_MAX_TOPIC_PREFIX = 249  # Kafka's limit: the prefix alone names the schema change topic


def _topic_prefix(name: str, value: Any) -> None:
    NonEmptyString()(name, value)
    if not _TOPIC_PREFIX_CHARS.match(value):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: the topic prefix may only contain "
            "ASCII letters, digits, '.', '_' and '-' because it starts every topic name",
            name,
            value,
        )
    if value in (".", "..") or len(value) > _MAX_TOPIC_PREFIX:
        # Kafka refuses the topic names "." and "..", and names over 249 characters.
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: use a name of at most {_MAX_TOPIC_PREFIX} "
            "characters (Kafka's limit for topic names; shorter still leaves room for '.<db>.<table>'), "
            "other than '.' or '..'",
            name,
            value,
        )


def _message_key_columns(name: str, value: Any) -> None:
    if value:
        KeyColumns.parse(str(value))


def define_common(d: ConfigDef) -> ConfigDef:
    """Adds the shared keys to `d` (Debezium's CommonConnectorConfig + RelationalDatabaseConnectorConfig)."""
    d.define(
        TOPIC_PREFIX,
        ConfigType.STRING,
        validator=_topic_prefix,
        importance=Importance.HIGH,
        documentation="Prefix of every topic name; also the offsets' source partition `server`.",
    )
    d.define(
        TOMBSTONES_ON_DELETE, ConfigType.BOOLEAN, True, None, Importance.MEDIUM, "Emit a tombstone after a delete."
    )
    d.define(
        SKIPPED_OPERATIONS,
        ConfigType.LIST,
        "t",
        ValidList("c", "u", "d", "t", "none"),
        Importance.LOW,
        "Operations not to emit: c, u, d, t, or none.",
    )
    d.define(INCLUDE_SCHEMA_CHANGES, ConfigType.BOOLEAN, True, None, Importance.MEDIUM, "Emit schema change events.")
    d.define(
        PROVIDE_TRANSACTION_METADATA,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Emit BEGIN/END records and a `transaction` block on each event.",
    )
    d.define(MAX_BATCH_SIZE, ConfigType.INT, 2048, Range.at_least(1), Importance.MEDIUM, "Records per poll().")
    d.define(MAX_QUEUE_SIZE, ConfigType.INT, 8192, Range.at_least(2), Importance.MEDIUM, "Records buffered in memory.")
    d.define(POLL_INTERVAL_MS, ConfigType.LONG, 500, Range.at_least(1), Importance.MEDIUM, "Max wait of one poll().")
    d.define(HEARTBEAT_INTERVAL_MS, ConfigType.INT, 0, Range.at_least(0), Importance.MEDIUM, "0 disables heartbeats.")
    d.define(HEARTBEAT_ACTION_QUERY, ConfigType.STRING, None, None, Importance.LOW, "SQL run on each heartbeat.")
    d.define(
        DECIMAL_HANDLING_MODE,
        ConfigType.STRING,
        "precise",
        ValidString.in_ignore_case(*DecimalHandlingMode.values()),
        Importance.MEDIUM,
        "precise | double | string",
    )
    d.define(
        TIME_PRECISION_MODE,
        ConfigType.STRING,
        "adaptive_time_microseconds",
        ValidString.in_ignore_case(*TimePrecisionMode.values()),
        Importance.MEDIUM,
        "adaptive_time_microseconds | adaptive | connect | isostring",
    )
    d.define(
        BIGINT_UNSIGNED_HANDLING_MODE,
        ConfigType.STRING,
        "long",
        ValidString.in_ignore_case(*BigIntUnsignedHandlingMode.values()),
        Importance.MEDIUM,
        "long | precise",
    )
    d.define(
        BINARY_HANDLING_MODE,
        ConfigType.STRING,
        "bytes",
        ValidString.in_ignore_case(*BinaryHandlingMode.values()),
        Importance.LOW,
        "bytes | base64 | base64-url-safe | hex",
    )
    for key in (
        DATABASE_INCLUDE_LIST,
        DATABASE_EXCLUDE_LIST,
        TABLE_INCLUDE_LIST,
        TABLE_EXCLUDE_LIST,
        COLUMN_INCLUDE_LIST,
        COLUMN_EXCLUDE_LIST,
    ):
        d.define(key, ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM, "Anchored regular expressions.")
    d.define(
        MESSAGE_KEY_COLUMNS,
        ConfigType.STRING,
        None,
        _message_key_columns,
        Importance.LOW,
        "'<db>.<table>:<col>,<col>;…' replaces the primary key as the message key.",
    )
    d.define(SNAPSHOT_FETCH_SIZE, ConfigType.INT, 10240, Range.at_least(1), Importance.MEDIUM, "Rows per fetch.")
    return d


_EXCLUSIVE = [
    (DATABASE_INCLUDE_LIST, DATABASE_EXCLUDE_LIST),
    (TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST),
    (COLUMN_INCLUDE_LIST, COLUMN_EXCLUDE_LIST),
]


def cross_field_errors(parsed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, advice) for rules that span several keys."""
    errors: list[tuple[str, str]] = []
    for inc, exc in _EXCLUSIVE:
        if parsed.get(inc) and parsed.get(exc):
            errors.append((exc, f"{inc} and {exc} are mutually exclusive: set only one of them"))
    batch, queue = parsed.get(MAX_BATCH_SIZE), parsed.get(MAX_QUEUE_SIZE)
    if isinstance(batch, int) and isinstance(queue, int) and queue <= batch:
        errors.append((MAX_QUEUE_SIZE, f"max.queue.size ({queue}) must be larger than max.batch.size ({batch})"))
    return errors


def add_cross_field_errors(values: list[ConfigValue]) -> list[ConfigValue]:
    by_name = {v.name: v for v in values}
    parsed = {v.name: v.value for v in values if not v.errors}
    for name, message in cross_field_errors(parsed):
        by_name[name].add_error_message(message)
    return values


def skipped_operations(values: list[str]) -> set[str]:
    return set() if "none" in values else set(values)


FAILURE_MODES = ("fail", "warn", "skip", "ignore")
EVENT_PROCESSING_FAILURE = "event.processing.failure.handling.mode"


def define_failure_modes(d: ConfigDef, keys: Iterable[str]) -> ConfigDef:
    """Debezium's `*.failure.handling.mode` keys, with Debezium's values so its configs load."""
    for key in keys:
        d.define(
            key,
            ConfigType.STRING,
            "fail",
            ValidString.in_ignore_case(*FAILURE_MODES),
            Importance.LOW,
            "Only fail is implemented: an event that cannot be processed stops the task, never a silent skip.",
        )
    return d


def warn_unless_fail(get: Callable[[str], Any], keys: Iterable[str]) -> None:
    """Say at start that warn/skip/ignore act as fail: nothing is skipped without a word."""
    for key in keys:
        value = str(get(key)).lower()
        if value != "fail":
            log.warning("%s=%s is treated as fail: an event that cannot be processed stops the task", key, value)
