"""The connector's checks against the live server, per config key, before anything runs.

Two depths, both reached without a running task:

- `validate_connection`, Debezium's `BinlogConnector.validateConnection` (reached through Kafka
  Connect's `Connector.validate(config)`): a login with the connector's own settings (TLS
  included) and `SELECT 1`. The runtime runs it for a config submitted over REST, so a wrong
  password or host is refused with 400; every wait is bounded (`CHECK_CONNECT_TIMEOUT_MS`).
- `preflight`, for `cdc validate`: that login, then the guards the task runs at start
  (`MySqlConnection.check_binlog_settings` and `check_binlog_access`, the same code and
  messages; its dump with a throwaway server id, so a running job with the configured one is
  never disconnected), plus the snapshot's lock grants that the task would find wanting only
  once the snapshot starts.
- `preflight_warnings`, for `cdc validate` too: what may go wrong without stopping the start (a
  given `database.server.id` that another registered replica uses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pymysql

from cdc.api import ConfigException, ConfigValue, ConnectException, PositionRetention, SourceBacklog
from cdc_mysql.config import CONNECT_TIMEOUT_MS, SERVER_ID, MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection, login_key
from cdc_mysql.lineage import position
from cdc_mysql.retention import BinlogRetention, snapshot_on_loss
from cdc_mysql.server_ids import reader_host, stored_server_id
from cdc_mysql.snapshot import captured_tables

# A guard's failure names a server setting, not a config key: it is reported on the server's key.
SERVER_KEY = "database.hostname"
# An inspection command waits this long for the server, not the task's connect.timeout.ms.
BACKLOG_CONNECT_TIMEOUT_MS = 5000
# A REST create, update or validate call waits for `validate_connection`: it gives the server this
# long to connect, greet and answer unless the config sets connect.timeout.ms (whose 30 s default
# suits a task that retries, not a request that someone waits on).
CHECK_CONNECT_TIMEOUT_MS = 5000


def _refused_login(config: MySqlConnectorConfig, e: ConnectException) -> tuple[str, str]:
    """The key a refused login points at, and the message (which names the user, never the password)."""
    cause = e.__cause__
    return (login_key(config, cause) if isinstance(cause, pymysql.err.OperationalError) else SERVER_KEY), str(e)


def validate_connection(props: Mapping[str, str]) -> list[ConfigValue]:
    """The login's error on the key to fix; empty when the server accepts it.

    Read-only and bounded: one plain connection (no binlog dump, no lock), `SELECT 1`, and every
    wait (TCP connect, the server's greeting, the query) at most connect.timeout.ms when the
    config sets it, else `CHECK_CONNECT_TIMEOUT_MS`, so an unreachable host is refused quickly."""
    timeout_ms = props.get(CONNECT_TIMEOUT_MS) or str(CHECK_CONNECT_TIMEOUT_MS)
    try:
        config = MySqlConnectorConfig({**props, CONNECT_TIMEOUT_MS: timeout_ms})
    except ConfigException:
        return []  # the offline validation reports it, naming its key
    wait_s = max(1.0, config.connect_timeout_s)  # as MySqlConnection.settings() rounds the connect timeout
    try:
        conn = MySqlConnection(config).connect(read_timeout=wait_s, write_timeout=wait_s)
    except ConnectException as e:
        key, message = _refused_login(config, e)
        return [ConfigValue(key, props.get(key), errors=[message])]
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
    except pymysql.err.MySQLError as e:
        return [ConfigValue(SERVER_KEY, props.get(SERVER_KEY), errors=[f"the server failed a check query: {e}"])]
    finally:
        conn.close()
    return []


def preflight(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key errors of logging in and of the start-up guards; empty when the task would start."""
    try:
        config = MySqlConnectorConfig(dict(props))
    except ConfigException:
        return []  # the offline validation reports it, naming its key
    values: dict[str, ConfigValue] = {}

    def add(key: str, message: str) -> None:
        values.setdefault(key, ConfigValue(key, props.get(key))).add_error_message(message)

    connection = MySqlConnection(config)
    try:
        try:
            connection.query("SELECT 1")  # the login
        except ConnectException as e:
            add(*_refused_login(config, e))
            return list(values.values())
        if config.server_id is not None and config.server_id == int(connection.variable("server_id") or 0):
            add(
                SERVER_ID,
                f"database.server.id={config.server_id} is the server_id of the database server itself; set "
                "database.server.id to an id no replica uses, or omit it to let the connector choose one",
            )
        try:
            connection.check_binlog_settings()
        except ConnectException as e:
            add(SERVER_KEY, str(e))
        else:  # the binlog dump is asked for only of a server that writes a usable binlog
            try:
                # Never with the job's own server id: that would disconnect the job if it runs.
                connection.check_binlog_access(server_id=connection.throwaway_server_id())
            except ConnectException as e:
                add("database.user", str(e))
        if problem := lock_grant_problem(connection, config):
            add("database.user", problem)
    except pymysql.err.MySQLError as e:
        add(SERVER_KEY, f"the server failed a check query: {e}")
    finally:
        connection.close()
    return list(values.values())


def preflight_warnings(props: Mapping[str, str]) -> list[ConfigValue]:
    """Warnings per key (each ConfigValue's messages are warnings, not errors): a given
    `database.server.id` that a replica registered with the server uses (SHOW SLAVE HOSTS).

    The job's own reader, running, is listed too: it reports the host `cdc-<topic.prefix>`
    (server_ids.reader_host) and is not warned about. Only registered replicas are seen
    (MySqlConnection.choose_server_id says which are not). Without the id, the connector chooses
    one at its start and nothing is to be checked; a login that fails is preflight's error."""
    try:
        config = MySqlConnectorConfig(dict(props))
    except ConfigException:
        return []
    ours = config.server_id
    if ours is None:
        return []
    connection = MySqlConnection(config)
    try:
        replica = (connection.replicas() or {}).get(ours)
    except (ConnectException, pymysql.err.MySQLError):
        return []
    finally:
        connection.close()
    if replica is None or replica.host == reader_host(config.topic_prefix):
        return []
    message = (
        f"database.server.id={ours} is the id of a replica already connected to the server ({replica.described()}): "
        "the job would stop at its start, or, started first, be disconnected when that replica reconnects "
        "(error 4052/1236, 'A slave with the same server_uuid/server_id'). Set database.server.id to an id no "
        "other replica uses, or omit it to let the connector choose one"
    )
    return [ConfigValue(SERVER_ID, props.get(SERVER_ID), errors=[message])]


def matching_collections(props: Mapping[str, str]) -> list[str]:
    """`<db>.<table>` of every table the include/exclude lists capture now (Debezium's
    `getMatchingCollections`), as the snapshot lists them; a refused login raises ConnectException."""
    config = MySqlConnectorConfig(dict(props))
    connection = MySqlConnection(config)
    try:
        return [f"{db}.{table}" for db, table in captured_tables(connection.conn, config)]
    finally:
        connection.close()


def _privileges(connection: MySqlConnection) -> tuple[set[str], dict[str, set[str]]]:
    """The current user's global privileges and its per-database ones (information_schema, upper case)."""
    grantee = connection.query(
        "SELECT CONCAT(\"'\", SUBSTRING_INDEX(CURRENT_USER(), '@', 1), \"'@'\", "
        "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), \"'\") AS g"
    )[0]["g"]
    rows = connection.query(
        "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s", (grantee,)
    )
    glob = {str(r["PRIVILEGE_TYPE"]).upper() for r in rows}
    per_db: dict[str, set[str]] = {}
    for r in connection.query(
        "SELECT TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s", (grantee,)
    ):
        per_db.setdefault(str(r["TABLE_SCHEMA"]), set()).add(str(r["PRIVILEGE_TYPE"]).upper())
    return glob, per_db


def lock_grant_problem(connection: MySqlConnection, config: MySqlConnectorConfig) -> str | None:
    """snapshot.locking.mode=minimal takes FLUSH TABLES WITH READ LOCK (RELOAD) or, refused that,
    read locks on the captured tables (LOCK TABLES): with neither grant the snapshot fails at its
    start (SnapshotStart._lock_tables). Debezium's docs list both, with SELECT, for the user."""
    if config.locking_mode != "minimal" or config.snapshot_mode == "never":
        return None
    glob, per_db = _privileges(connection)
    if "RELOAD" in glob or "LOCK TABLES" in glob:
        return None
    dbs = sorted({db for db, _ in captured_tables(connection.conn, config)})
    if all("LOCK TABLES" in per_db.get(db, set()) for db in dbs):
        return None
    user = config.user
    return (
        f"{user!r} has neither RELOAD nor LOCK TABLES, and snapshot.locking.mode=minimal needs one of them to read "
        f"the binlog position under a lock: run GRANT RELOAD ON *.* TO '{user}'@'%'; (or GRANT LOCK TABLES on the "
        "captured databases), or set snapshot.locking.mode=none"
    )


def source_backlog(props: Mapping[str, str], offset: Mapping[str, Any] | None) -> SourceBacklog:
    """The binlog past the stored offset (MySqlConnector.source_backlog): read-only, one connection.

    The offset's position counts only on the server it was read from, in its binlog history
    (lineage.py): on another server, or below a position the server's binlog no longer reaches,
    the bytes are unknown and the note says why."""
    config = MySqlConnectorConfig({**props, "connect.timeout.ms": str(BACKLOG_CONNECT_TIMEOUT_MS)})
    connection = MySqlConnection(config)
    try:
        head_file, head_pos = connection.master_status()
        here = f"{head_file}:{head_pos}"
        if not offset or "file" not in offset or offset.get("snapshot") not in (None, False, "false"):
            what = "no offset is stored" if not offset else "the stored offset is a snapshot's"
            return SourceBacklog(None, here, f"{what}: nothing of the binlog is read yet")
        file, pos = str(offset["file"]), int(offset.get("pos") or 0)
        stored_identity = offset.get("server_identity")
        identity = connection.server_identity()
        if stored_identity and stored_identity != identity:
            note = f"the stored offset was read from another server ({stored_identity}; this is {identity})"
            return SourceBacklog(None, here, note)
        if position(head_file, head_pos) < position(file, pos):
            note = f"the server's binlog ends below the stored position {file}:{pos} (RESET MASTER or a restore)"
            return SourceBacklog(None, here, note)
        return SourceBacklog(connection.bytes_after(file, pos), here)
    finally:
        connection.close()


def position_retention(props: Mapping[str, str], offset: Mapping[str, Any] | None) -> PositionRetention:
    """How long the server keeps the binlog file the stored offset needs (MySqlConnector.position_retention,
    cdc_mysql.retention): read-only, one connection and at most one short binlog dump."""
    config = MySqlConnectorConfig({**props, "connect.timeout.ms": str(BACKLOG_CONNECT_TIMEOUT_MS)})
    # The job's id (given, or stored in its offsets), so that the probe's throwaway id is never it.
    given = config.server_id
    connection = MySqlConnection(config, server_id=given if given is not None else stored_server_id(offset))
    try:
        return BinlogRetention(connection, snapshot_on_loss(config.snapshot_mode)).read(offset)
    finally:
        connection.close()
