"""RelationalDatabaseConnectorConfig: the shared keys of Debezium's relational connectors, read once, typed.

Debezium's CommonConnectorConfig and RelationalDatabaseConnectorConfig turn the keys every
connector accepts into typed getters, and each connector's config class (MySqlConnectorConfig,
PostgresConnectorConfig) extends them with its own. Here the keys are those
`cdc_debezium.config.define_common` defines; a connector's class checks its configuration,
then hands its ConfigDef (built on define_common) and the checked properties to this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from cdc.api import AbstractConfig, ConfigDef
from cdc_debezium import config as common
from cdc_debezium.filters import IncludeExclude, include_exclude
from cdc_debezium.handling_modes import (
    BigIntUnsignedHandlingMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
    TimePrecisionMode,
)
from cdc_debezium.key_columns import KeyColumns


class RelationalDatabaseConnectorConfig(AbstractConfig):
    """The settings of `define_common` as attributes, parsed once (Debezium's CommonConnectorConfig and
    RelationalDatabaseConnectorConfig).

    Subclasses validate first (the constructor assumes valid values: it raises only what the
    ConfigDef itself raises) and add their own attributes after calling it.
    """

    #: Whether the table regexes of `message.key.columns` match case-sensitively (MySQL's names do not).
    KEY_COLUMNS_CASE_SENSITIVE: ClassVar[bool] = True

    def __init__(self, definition: ConfigDef, originals: Mapping[str, Any]) -> None:
        super().__init__(definition, originals)
        values = self.values()
        # CommonConnectorConfig: naming, what is emitted, batching, heartbeats
        #: `topic.prefix`: starts every topic name; the offsets' source partition `server`.
        self.topic_prefix: str = self.get(common.TOPIC_PREFIX)
        #: `tombstones.on.delete`: a tombstone follows each delete.
        self.tombstones_on_delete: bool = self.get(common.TOMBSTONES_ON_DELETE)
        #: `skipped.operations`: the operations (c, u, d, t) not emitted; `none` gives the empty set.
        self.skipped_operations: set[str] = common.skipped_operations(self.get(common.SKIPPED_OPERATIONS))
        #: `include.schema.changes`: schema change events are emitted.
        self.include_schema_changes: bool = self.get(common.INCLUDE_SCHEMA_CHANGES)
        #: `provide.transaction.metadata`: BEGIN/END records and a `transaction` block on each event.
        self.provide_transaction_metadata: bool = self.get(common.PROVIDE_TRANSACTION_METADATA)
        #: `max.batch.size`: records per poll().
        self.max_batch_size: int = self.get(common.MAX_BATCH_SIZE)
        #: `max.queue.size`: records buffered between the reader and poll().
        self.max_queue_size: int = self.get(common.MAX_QUEUE_SIZE)
        #: `poll.interval.ms`: the longest one poll() waits.
        self.poll_interval_ms: int = self.get(common.POLL_INTERVAL_MS)
        #: `heartbeat.interval.ms`: 0 sends no heartbeats.
        self.heartbeat_interval_ms: int = self.get(common.HEARTBEAT_INTERVAL_MS)
        #: `heartbeat.action.query`: SQL run on each heartbeat, or None.
        self.heartbeat_action_query: str | None = self.get(common.HEARTBEAT_ACTION_QUERY)
        # RelationalDatabaseConnectorConfig: value handling, filters, keys, snapshot reads
        #: `decimal.handling.mode`
        self.decimal_mode = DecimalHandlingMode.parse(self.get(common.DECIMAL_HANDLING_MODE))
        #: `time.precision.mode`
        self.time_mode = TimePrecisionMode.parse(self.get(common.TIME_PRECISION_MODE))
        #: `bigint.unsigned.handling.mode`
        self.bigint_mode = BigIntUnsignedHandlingMode.parse(self.get(common.BIGINT_UNSIGNED_HANDLING_MODE))
        #: `binary.handling.mode`
        self.binary_mode = BinaryHandlingMode.parse(self.get(common.BINARY_HANDLING_MODE))
        #: `database.include.list` / `database.exclude.list`, matched against the database name.
        self.database_filter: IncludeExclude = include_exclude(
            values, common.DATABASE_INCLUDE_LIST, common.DATABASE_EXCLUDE_LIST
        )
        #: `table.include.list` / `table.exclude.list`, matched against `<db or schema>.<table>`.
        self.table_filter: IncludeExclude = include_exclude(
            values, common.TABLE_INCLUDE_LIST, common.TABLE_EXCLUDE_LIST
        )
        #: `column.include.list` / `column.exclude.list`, matched against `<db or schema>.<table>.<column>`.
        self.column_filter: IncludeExclude = include_exclude(
            values, common.COLUMN_INCLUDE_LIST, common.COLUMN_EXCLUDE_LIST
        )
        #: `message.key.columns`: the columns that replace a table's primary key as its message key.
        self.key_columns = KeyColumns.parse(
            self.get(common.MESSAGE_KEY_COLUMNS), case_sensitive=self.KEY_COLUMNS_CASE_SENSITIVE
        )
        #: `snapshot.fetch.size`: rows per fetch of the snapshot.
        self.fetch_size: int = self.get(common.SNAPSHOT_FETCH_SIZE)
