"""MySqlConnector: validates the config and runs exactly one task (a binlog is one ordered stream)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigValue,
    PositionRetention,
    SourceBacklog,
    SourceConnector,
    Task,
)
from cdc_mysql import __version__
from cdc_mysql import config as cfg

log = logging.getLogger(__name__)


class MySqlConnector(SourceConnector):
    """Also registered as io.debezium.connector.mariadb.MariaDbConnector: one class serves both."""

    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        errors = [(v.name, e) for v in cfg.validate(props) for e in v.errors]
        if errors:
            name, message = errors[0]
            raise ConfigException(message, name)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        from cdc_mysql.task import MySqlConnectorTask

        return MySqlConnectorTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if max_tasks > 1:
            log.warning(
                "tasks.max=%d but the MySQL connector always runs exactly one task: the binlog is a single "
                "ordered stream",
                max_tasks,
            )
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return cfg.CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        return cfg.validate(connector_configs)

    def validate_connection(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Debezium's validateConnection: log in, within a few seconds, read-only (cdc_mysql.validation)."""
        from cdc_mysql.validation import validate_connection

        return validate_connection(connector_configs)

    def preflight(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """`cdc validate`'s live checks: log in and run the task's start-up guards (cdc_mysql.validation)."""
        from cdc_mysql.validation import preflight

        return preflight(connector_configs)

    def preflight_warnings(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """`cdc validate`'s live warnings (their messages in `errors`): a database.server.id another
        replica uses (cdc_mysql.validation)."""
        from cdc_mysql.validation import preflight_warnings

        return preflight_warnings(connector_configs)

    def source_backlog(self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None) -> SourceBacklog:
        """The binlog bytes the server has written past the stored offset (cdc_mysql.validation)."""
        from cdc_mysql.validation import source_backlog

        return source_backlog(connector_config, offset)

    def position_retention(
        self, connector_config: Mapping[str, str], offset: Mapping[str, Any] | None
    ) -> PositionRetention:
        """How long the server keeps the binlog file the stored offset needs (cdc_mysql.retention)."""
        from cdc_mysql.validation import position_retention

        return position_retention(connector_config, offset)

    def matching_collections(self, connector_configs: Mapping[str, str]) -> list[str]:
        """`<db>.<table>` of every table the config captures (Debezium's getMatchingCollections)."""
        from cdc_mysql.validation import matching_collections

        return matching_collections(connector_configs)
