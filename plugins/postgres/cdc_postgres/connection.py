"""PostgresConnection: start-up checks and slot/publication management, with advice-style errors."""

from __future__ import annotations

from typing import Any

import psycopg

from cdc.api import ConnectException
from cdc_postgres import tls
from cdc_postgres.lsn import parse_lsn


class PostgresConnectorError(ConnectException):
    """A condition the user must fix; the message says how."""


# libpq/server wording → the key to fix and the advice; anything else may be any of the connection keys.
_CONNECT_CAUSES = (
    ('database "', "does not exist", "database.dbname", "check database.dbname"),
    ('role "', "does not exist", "database.user", "check database.user"),
    ("password authentication failed", "", "database.password", "check database.password (and database.user)"),
    ("no password supplied", "", "database.password", "set database.password"),
    (
        "sslmode",
        "",
        "database.sslmode",
        "set database.sslmode to disable, allow, prefer, require, verify-ca or verify-full",
    ),
    (
        "no pg_hba.conf entry",
        "",
        "database.user",
        "allow this host and user in the server's pg_hba.conf, or change database.user",
    ),
)


def connect_cause(message: str) -> tuple[str, str]:
    """(the config key a failed connection points at, the advice): the TLS keys when TLS refused it."""
    if fix := tls.advice(message):
        return "database.sslmode", fix
    for first, second, key, advice in _CONNECT_CAUSES:
        if first in message and second in message:
            return key, advice
    return "database.hostname", "check database.hostname, database.port, database.user and database.password"


def connect_advice(message: str) -> str:
    """Which config key a failed connection points at (the TLS keys when TLS refused it)."""
    return connect_cause(message)[1]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def missing_publication(name: str) -> str:
    return (
        f"publication {name!r} does not exist and publication.autocreate.mode=disabled; create it with "
        f"CREATE PUBLICATION {_ident(name)} FOR TABLE …; or set publication.autocreate.mode=filtered"
    )


def streaming_application_name(slot: str) -> str:
    """The application_name of the connector's streaming connection (pg_stat_activity /
    pg_stat_replication show it): names the slot, so `cdc validate` can tell the job's own reader
    from another client's, and a DBA sees which connector reads. PostgreSQL keeps 63 bytes."""
    return f"cdc streaming {slot}"[:63]


class PostgresConnection:
    def __init__(self, dsn: dict[str, Any], connect_timeout: int = 30) -> None:
        try:
            self.conn = psycopg.connect(autocommit=True, connect_timeout=connect_timeout, **dsn)
        except psycopg.OperationalError as e:
            raise PostgresConnectorError(
                f"cannot connect to PostgreSQL at {dsn.get('host')}:{dsn.get('port')}: {tls.first_line(e)}; "
                f"{connect_advice(str(e))}"
            ) from e

    def execute(self, *args: Any) -> Any:
        return self.conn.execute(*args)

    def check_wal_level(self) -> None:
        level = self.conn.execute("SHOW wal_level").fetchone()[0]
        if level != "logical":
            raise PostgresConnectorError(
                f"wal_level is {level!r}, but logical decoding needs 'logical'. Run "
                "ALTER SYSTEM SET wal_level = logical; (or set wal_level = logical in postgresql.conf) "
                "and restart PostgreSQL"
            )

    def check_replication_privilege(self) -> None:
        """REPLICATION (or superuser), or on Amazon RDS/Aurora membership of rds_replication."""
        user, rep, sup, rds = self.conn.execute(
            "SELECT r.rolname, r.rolreplication, r.rolsuper, EXISTS (SELECT 1 FROM pg_roles g WHERE "
            "g.rolname = 'rds_replication' AND pg_has_role(r.oid, g.oid, 'member')) "
            "FROM pg_roles r WHERE r.rolname = current_user"
        ).fetchone()
        if not (rep or sup or rds):
            raise PostgresConnectorError(
                f"user {user!r} lacks the REPLICATION attribute needed to stream changes; run "
                f"ALTER ROLE {_ident(user)} REPLICATION; (on Amazon RDS: GRANT rds_replication TO {_ident(user)};) "
                "or connect as a role that has it"
            )

    def check_slot_available(self, name: str, *, own_reader_ok: bool = False) -> None:
        """The slot is free to read, or there is room to create it (max_replication_slots).

        `own_reader_ok` (`cdc validate` of a job that may be running): a slot read by a cdc
        streaming connection of this slot (its application_name, `streaming_application_name`)
        is the job's own reader, not a conflict."""
        slot = self.slot(name)
        if slot is not None:
            if (
                slot[1]
                and own_reader_ok
                and slot[3]
                and self._application_name(slot[3]) == streaming_application_name(name)
            ):
                return
            if slot[1]:
                holder = f"process {slot[3]}" if slot[3] else "another connection"
                raise PostgresConnectorError(
                    f"replication slot {name!r} is in use by {holder}: another connector or client is reading it "
                    "(or this job's own run, if it is running now). Give this connector its own slot.name, or stop "
                    f"the other reader (SELECT pg_terminate_backend({slot[3] or '<active_pid>'}); ends it)"
                )
            return
        used, limit = self.conn.execute(
            "SELECT count(*), current_setting('max_replication_slots')::int FROM pg_replication_slots"
        ).fetchone()
        if used >= limit:
            raise PostgresConnectorError(
                f"replication slot {name!r} does not exist yet, and all max_replication_slots={limit} slots of the "
                "server are taken: drop an unused one (SELECT pg_drop_replication_slot('<name>'); see "
                "pg_replication_slots) or raise max_replication_slots in postgresql.conf and restart PostgreSQL"
            )

    def check_publication(self, name: str, mode: str, oids: list[int]) -> None:
        """Under publication.autocreate.mode=disabled nothing creates or fills the publication: it must
        exist (the message ensure_publication gives at start) and carry every captured table."""
        if mode != "disabled":
            return
        if not self.conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,)).fetchone():
            raise PostgresConnectorError(missing_publication(name))
        missing = self.unpublished_tables(name, oids)
        if missing:
            raise PostgresConnectorError(
                f"publication {name!r} does not carry the captured table(s) {', '.join(missing)}, so PostgreSQL "
                f"sends none of their changes, and publication.autocreate.mode=disabled does not add them. Run "
                f"ALTER PUBLICATION {_ident(name)} ADD TABLE {', '.join(missing)}; or exclude them with "
                "table.exclude.list, or set publication.autocreate.mode=filtered"
            )

    def check_streaming_support(self) -> None:
        version = self.conn.info.server_version
        if version < 140000:
            raise PostgresConnectorError(
                f"stream.in.progress.transactions needs PostgreSQL 14 or later (pgoutput proto 2 streaming); "
                f"the server is {version // 10000}. Set stream.in.progress.transactions=false"
            )

    def _application_name(self, pid: int) -> str | None:
        row = self.conn.execute("SELECT application_name FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        return row[0] if row else None

    def slot(self, name: str) -> tuple[int | None, bool, str | None, int | None] | None:
        """(confirmed_flush_lsn, active, wal_status, active_pid) of an existing slot, or None."""
        row = self.conn.execute(
            "SELECT confirmed_flush_lsn::text, active, wal_status, active_pid FROM pg_replication_slots"
            " WHERE slot_name = %s AND database = current_database()",
            (name,),
        ).fetchone()
        if row is None:
            return None
        return (parse_lsn(row[0]) if row[0] else None, row[1], row[2], row[3])

    def retained_wal_bytes(self, name: str) -> int | None:
        row = self.conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots WHERE slot_name = %s",
            (name,),
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def drop_slot(self, name: str) -> None:
        self.conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))

    def publishes_via_root(self, name: str) -> bool:
        row = self.conn.execute("SELECT pubviaroot FROM pg_publication WHERE pubname = %s", (name,)).fetchone()
        return bool(row and row[0])

    def uncaptured_partitions(self, oids: list[int], captured: Any) -> list[tuple[str, list[str]]]:
        """(partitioned table, its leaf partitions that `captured` rejects) for each captured partitioned table."""
        out = []
        for oid, parent in self.conn.execute(
            "SELECT c.oid, n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.oid = ANY(%s) AND c.relkind = 'p' AND NOT c.relispartition ORDER BY 2",
            (oids,),
        ).fetchall():
            rows = self.conn.execute(
                "SELECT n.nspname || '.' || c.relname FROM pg_partition_tree(%s) t JOIN pg_class c ON c.oid = t.relid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE t.isleaf ORDER BY 1",
                (oid,),
            ).fetchall()
            missing = [r[0] for r in rows if not captured(r[0])]
            if missing:
                out.append((parent, missing))
        return out

    def published_tables(self, name: str) -> set[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s", (name,)
        ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def unpublished_tables(self, name: str, oids: list[int]) -> list[str]:
        """Captured plain tables the publication does not carry: pgoutput sends nothing for them.

        Partitioned tables and partitions are left out: which of them pg_publication_tables lists
        depends on publish_via_partition_root.
        """
        if not oids:
            return []
        rows = self.conn.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.oid = ANY(%s) AND c.relkind = 'r' AND NOT c.relispartition AND NOT EXISTS ("
            "  SELECT 1 FROM pg_publication_tables p WHERE p.pubname = %s"
            "  AND p.schemaname = n.nspname AND p.tablename = c.relname) ORDER BY 1",
            (oids, name),
        ).fetchall()
        return [r[0] for r in rows]

    def ensure_publication(self, name: str, mode: str, tables: list[tuple[str, str]]) -> list[str]:
        """Create or (filtered) update the publication; returns the tables a filtered one newly carries."""
        exists = self.conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,)).fetchone()
        if exists:
            if mode == "filtered" and tables:
                before = self.published_tables(name)
                names = ", ".join(f"{_ident(s)}.{_ident(t)}" for s, t in tables)
                self.conn.execute(f"ALTER PUBLICATION {_ident(name)} SET TABLE {names}")
                return [f"{s}.{t}" for s, t in tables if (s, t) not in before]
            return []
        if mode == "disabled":
            raise PostgresConnectorError(missing_publication(name))
        try:
            if mode == "all_tables":
                self.conn.execute(f"CREATE PUBLICATION {_ident(name)} FOR ALL TABLES")
            elif mode == "filtered":
                names = ", ".join(f"{_ident(s)}.{_ident(t)}" for s, t in tables)
                self.conn.execute(f"CREATE PUBLICATION {_ident(name)}" + (f" FOR TABLE {names}" if names else ""))
            else:
                self.conn.execute(f"CREATE PUBLICATION {_ident(name)}")
            return []
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
            # Another connector on this database created it between the check and here (the
            # catalog's unique index decides): use it as one that existed.
            return self.ensure_publication(name, mode, tables)
        except psycopg.errors.InsufficientPrivilege as e:
            raise PostgresConnectorError(
                f"cannot create publication {name!r}: {str(e).strip()}; FOR ALL TABLES needs a superuser. "
                "Create it as an administrator, or use publication.autocreate.mode=filtered with table owners"
            ) from e

    def replica_identities(self, tables: list[tuple[int, str, str]]) -> list[tuple[str, str, bool]]:
        """(table, identity d/n/f/i, has primary key) for each captured table."""
        out = []
        for oid, ns, name in tables:
            ident, has_pk = self.conn.execute(
                "SELECT c.relreplident, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)"
                " FROM pg_class c WHERE c.oid = %s",
                (oid,),
            ).fetchone()
            out.append((f"{ns}.{name}", ident, has_pk))
        return out

    def close(self) -> None:
        self.conn.close()
