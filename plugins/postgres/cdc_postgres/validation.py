"""The connector's checks against the live server, per config key, before anything runs.

Mirrors Debezium's `PostgresConnector.validateConnection` (reached through Kafka Connect's
`Connector.validate(config)`: a login, wal_level, the LOGIN/REPLICATION role), with the guards
the task runs at start through the same `PostgresConnection` methods and messages, and the
slot and publication state the task would meet: a slot another reader holds, no free
`max_replication_slots` for a new one, a publication that is missing or lacks captured tables
when `publication.autocreate.mode=disabled`. Nothing is created or changed. `cdc validate`
calls it through `PostgresConnector.validate_connection`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from cdc.api import ConfigException, ConfigValue, ConnectException, SourceBacklog
from cdc_postgres.config import PostgresConnectorConfig
from cdc_postgres.connection import PostgresConnection, connect_cause
from cdc_postgres.lsn import parse_lsn
from cdc_postgres.snapshot import captured_tables

# A guard's failure that names a server setting (wal_level) is reported on the server's key.
SERVER_KEY = "database.hostname"
CONNECT_TIMEOUT_S = 10


def _open(config: PostgresConnectorConfig) -> PostgresConnection:
    return PostgresConnection(config.dsn(), connect_timeout=CONNECT_TIMEOUT_S)


def _table_filter(config: PostgresConnectorConfig) -> Callable[[str], bool]:
    """`schema.table` → captured, as the task builds it from the schema and table lists."""
    table_match, schema_match = config.table_filter, config.schema_filter
    return lambda t: schema_match(t.split(".", 1)[0]) and table_match(t)


def validate_connection(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key errors of logging in, the start-up guards and the slot/publication state."""
    try:
        config = PostgresConnectorConfig.parse(dict(props))
    except ConfigException:
        return []  # the offline validation reports it, naming its key
    values: dict[str, ConfigValue] = {}

    def add(key: str, message: str) -> None:
        values.setdefault(key, ConfigValue(key, props.get(key))).add_error_message(message)

    try:
        admin = _open(config)
    except ConnectException as e:
        add(connect_cause(str(e.__cause__ or e))[0], str(e))
        return list(values.values())
    try:
        tables = captured_tables(admin.conn, _table_filter(config))
        checks: list[tuple[str, Callable[[], None]]] = [
            (SERVER_KEY, admin.check_wal_level),
            ("database.user", admin.check_replication_privilege),
            ("slot.name", lambda: admin.check_slot_available(config.slot_name)),
            (
                "publication.autocreate.mode",
                lambda: admin.check_publication(
                    config.publication_name, config.publication_autocreate_mode, [oid for oid, _, _ in tables]
                ),
            ),
        ]
        if config.stream_in_progress_transactions:
            checks.append(("stream.in.progress.transactions", admin.check_streaming_support))
        for key, check in checks:
            try:
                check()
            except ConnectException as e:
                add(key, str(e))
    except psycopg.Error as e:
        add(SERVER_KEY, f"the server failed a check query: {str(e).strip()}")
    finally:
        admin.close()
    return list(values.values())


def matching_collections(props: Mapping[str, str]) -> list[str]:
    """`<schema>.<table>` of every table the include/exclude lists capture now (Debezium's
    `getMatchingCollections`), as the snapshot lists them; a refused login raises ConnectException."""
    config = PostgresConnectorConfig.parse(dict(props))
    admin = _open(config)
    try:
        return [f"{ns}.{name}" for _, ns, name in captured_tables(admin.conn, _table_filter(config))]
    finally:
        admin.close()


def source_backlog(props: Mapping[str, str], offset: Mapping[str, Any] | None) -> SourceBacklog:
    """The WAL past the stored offset's LSN (PostgresConnector.source_backlog): pg_current_wal_lsn()
    minus the offset's `lsn_proc` (or `lsn`), read-only. The WAL holds every database's changes (and
    checkpoints), so an idle server may show a few bytes: the note says so."""
    config = PostgresConnectorConfig(dict(props))
    connection = _open(config)
    try:
        row = connection.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    finally:
        connection.close()
    here = str(row[0])
    stored = (offset or {}).get("lsn_proc") or (offset or {}).get("lsn")
    if not offset or stored is None:
        return SourceBacklog(None, here, "no offset is stored: nothing of the WAL is read yet")
    unread = max(0, parse_lsn(here) - int(stored))
    note = None
    if unread:
        note = "the WAL holds every database's changes and the server's own records, not only the captured tables'"
    return SourceBacklog(unread, here, note)
