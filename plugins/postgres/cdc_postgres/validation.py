"""The connector's checks against the live server, per config key, before anything runs.

Two depths, both through the `PostgresConnection` methods and messages the task uses at start:

- `validate_connection`, Debezium's `PostgresConnector.validateConnection` (reached through
  Kafka Connect's `Connector.validate(config)`): a login, wal_level, the LOGIN/REPLICATION role.
  The runtime runs it for a config submitted over REST, so a wrong password or host is refused
  with 400; the connection waits at most `CHECK_CONNECT_TIMEOUT_S`.
- `preflight`, for `cdc validate`: the same, plus the slot and publication state the task
  would meet: a slot another reader holds, no free `max_replication_slots` for a new one, a
  publication that is missing or lacks captured tables when
  `publication.autocreate.mode=disabled`.

Both use a plain SQL connection: nothing is created or changed, no replication connection opened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from cdc.api import ConfigException, ConfigValue, ConnectException, PositionRetention, SourceBacklog
from cdc_postgres.config import PostgresConnectorConfig
from cdc_postgres.connection import PostgresConnection, connect_cause
from cdc_postgres.lsn import parse_lsn
from cdc_postgres.retention import probe
from cdc_postgres.snapshot import captured_tables

# A guard's failure that names a server setting (wal_level) is reported on the server's key.
SERVER_KEY = "database.hostname"
CONNECT_TIMEOUT_S = 10
# A REST create, update or validate call waits for `validate_connection`: libpq's connect_timeout
# for it (Debezium's PostgreSQL connector has no key for the connect timeout).
CHECK_CONNECT_TIMEOUT_S = 5


def _open(config: PostgresConnectorConfig, connect_timeout: int = CONNECT_TIMEOUT_S) -> PostgresConnection:
    return PostgresConnection(config.dsn(), connect_timeout=connect_timeout)


def _table_filter(config: PostgresConnectorConfig) -> Callable[[str], bool]:
    """`schema.table` → captured, as the task builds it from the schema and table lists."""
    table_match, schema_match = config.table_filter, config.schema_filter
    return lambda t: schema_match(t.split(".", 1)[0]) and table_match(t)


def validate_connection(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key errors of logging in, wal_level and the REPLICATION attribute; read-only, bounded."""
    return _check(props, CHECK_CONNECT_TIMEOUT_S, slot_and_publication=False)


def preflight(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key errors of logging in, the start-up guards and the slot/publication state."""
    return _check(props, CONNECT_TIMEOUT_S, slot_and_publication=True)


def _check(props: Mapping[str, str], connect_timeout: int, slot_and_publication: bool) -> list[ConfigValue]:
    try:
        config = PostgresConnectorConfig.parse(dict(props))
    except ConfigException:
        return []  # the offline validation reports it, naming its key
    values: dict[str, ConfigValue] = {}

    def add(key: str, message: str) -> None:
        values.setdefault(key, ConfigValue(key, props.get(key))).add_error_message(message)

    try:
        admin = _open(config, connect_timeout)
    except ConnectException as e:
        add(connect_cause(str(e.__cause__ or e))[0], str(e))
        return list(values.values())
    try:
        checks: list[tuple[str, Callable[[], None]]] = [
            (SERVER_KEY, admin.check_wal_level),
            ("database.user", admin.check_replication_privilege),
        ]
        if slot_and_publication:
            tables = captured_tables(admin.conn, _table_filter(config))
            checks.append(("slot.name", lambda: admin.check_slot_available(config.slot_name, own_reader_ok=True)))
            checks.append(
                (
                    "publication.autocreate.mode",
                    lambda: admin.check_publication(
                        config.publication_name, config.publication_autocreate_mode, [oid for oid, _, _ in tables]
                    ),
                )
            )
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


def position_retention(props: Mapping[str, str], offset: Mapping[str, Any] | None) -> PositionRetention:
    """How long the server keeps the WAL the job's slot needs (PostgresConnector.position_retention,
    cdc_postgres.retention): read-only, one connection, about a second to measure the WAL rate."""
    config = PostgresConnectorConfig(dict(props))
    connection = _open(config)
    try:
        return probe(connection.conn, config.slot_name, config.snapshot_mode, offset)
    finally:
        connection.close()
