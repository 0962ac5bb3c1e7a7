"""PostgresConnector: one task per database, as Debezium's PostgreSQL connector."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cdc.api import ConfigDef, ConfigValue, PositionRetention, SourceBacklog, SourceConnector, Task
from cdc_postgres import __version__
from cdc_postgres.config import CONFIG_DEF, PostgresConnectorConfig, validate
from cdc_postgres.task import PostgresConnectorTask

log = logging.getLogger(__name__)


class PostgresConnector(SourceConnector):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        PostgresConnectorConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[Task]:
        return PostgresConnectorTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if max_tasks > 1:
            log.warning("tasks.max=%d: a PostgreSQL slot has one reader, so this connector runs one task", max_tasks)
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, connector_configs: dict[str, str]) -> list[ConfigValue]:  # type: ignore[override]
        return validate(connector_configs)

    def validate_connection(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Debezium's validateConnection: log in, check wal_level and the REPLICATION attribute, within a few
        seconds, read-only (cdc_postgres.validation)."""
        from cdc_postgres.validation import validate_connection

        return validate_connection(connector_configs)

    def preflight(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """`cdc validate`'s live checks: log in, run the task's start-up guards, and look at the slot and
        publication (cdc_postgres.validation)."""
        from cdc_postgres.validation import preflight

        return preflight(connector_configs)

    def source_backlog(self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None) -> SourceBacklog:
        """The WAL bytes past the stored offset's LSN (cdc_postgres.validation)."""
        from cdc_postgres.validation import source_backlog

        return source_backlog(connector_config, offset)

    def position_retention(
        self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None
    ) -> PositionRetention:
        """How long the server keeps the WAL the job's slot needs (cdc_postgres.retention)."""
        from cdc_postgres.validation import position_retention

        return position_retention(connector_config, offset)

    def matching_collections(self, connector_configs: Mapping[str, str]) -> list[str]:
        """`<schema>.<table>` of every table the config captures (Debezium's getMatchingCollections)."""
        from cdc_postgres.validation import matching_collections

        return matching_collections(connector_configs)
