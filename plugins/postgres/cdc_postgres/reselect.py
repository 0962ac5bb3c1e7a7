"""Re-select the values pgoutput did not send, from the table, by the row's key.

pgoutput leaves an unchanged TOASTed value out of an UPDATE's new row ('u'). Where the old
row holds it (REPLICA IDENTITY FULL) the emitter takes it from there; otherwise Debezium sends
its `unavailable.value.placeholder`. A sink can keep the value it stores for the key, except
when an UPDATE changed the primary key: that arrives as a delete of the old key and a create
of the new one, and no one holds the new key's values. So, as Debezium's
ReselectColumnsPostProcessor does when it is configured, the connector reads those columns
from the table by the row's (new) key, on a connection of its own, and converts the server's
text output with the column's own converter, exactly as the stream's text.

Why the value read is right: it is the row's current value, committed no earlier than the
event (the statement first checks that the event's transaction is visible to it). If the
column changes again, a later event carries the new value; if the row is gone (deleted, or
its key changed again), the placeholder stays, and the delete that follows removes the row.

Scope (`reselect.scope`): `key_changes` (the default) re-selects for the create of a
primary-key change only, and every other event is left exactly as it was decoded; `all`
re-selects for every create and update that carries a placeholder (or a null, with
`reselect.null.values`), as Debezium's post processor does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from cdc_debezium.filters import include_exclude
from cdc_postgres.connection import PostgresConnectorError, _ident
from cdc_postgres.pgoutput import UNCHANGED_TOAST
from cdc_postgres.schema import ColumnInfo, TableSchema

log = logging.getLogger(__name__)

KEY_CHANGES = "key_changes"
ALL_EVENTS = "all"
SCOPES = (KEY_CHANGES, ALL_EVENTS)
ERROR_MODES = ("fail", "warn")
APPLICATION_NAME = "cdc-reselect"
VISIBILITY_TIMEOUT_S = 60.0  # how long the event's transaction may stay invisible to a new statement

# Whether transaction `xid` (32 bits, from pgoutput) is visible to this statement's snapshot. The
# 64-bit txid is rebuilt from the snapshot's xmax: the one within 2^31 of it, as PostgreSQL
# compares xids. pgoutput can send a commit a moment before the committing backend has made it
# visible to other sessions; a snapshot that does not see it yet would not find the new key.
_VISIBLE = (
    "txid_visible_in_snapshot(txid_snapshot_xmax(txid_current_snapshot())"
    " + ((%s::bigint - (txid_snapshot_xmax(txid_current_snapshot()) & 4294967295) + 6442450944) %% 4294967296)"
    " - 2147483648, txid_current_snapshot())"
)
_RELATION_SQL = (
    "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.oid = %s"
)


@dataclass(frozen=True)
class ReselectSettings:
    """The `reselect.*` keys: Debezium's ReselectColumnsPostProcessor options, plus `reselect.scope`."""

    unavailable_values: bool = True
    null_values: bool = False
    scope: str = KEY_CHANGES
    use_event_key: bool = False
    fail: bool = True
    columns: Callable[[str], bool] = lambda _name: True  # `<schema>.<table>:<column>` → re-select it?

    @property
    def enabled(self) -> bool:
        return self.unavailable_values or self.null_values

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> ReselectSettings:
        return cls(
            unavailable_values=bool(values["reselect.unavailable.values"]),
            null_values=bool(values["reselect.null.values"]),
            scope=str(values["reselect.scope"]).lower(),
            use_event_key=bool(values["reselect.use.event.key"]),
            fail=str(values["reselect.error.handling.mode"]).lower() == "fail",
            columns=include_exclude(values, "reselect.columns.include.list", "reselect.columns.exclude.list"),
        )


class _Unavailable(Exception):
    """The value cannot be read (table or column gone, no privilege, …): the message says why and what to do."""

    def __init__(self, cause: str, fix: str, gone: bool = False) -> None:
        super().__init__(cause)
        self.cause = cause
        self.fix = fix
        self.gone = gone  # the table or column no longer exists: nothing is lost by keeping the placeholder


class ColumnReselector:
    """Fills the values a change event lacks from the table, on its own autocommit connection.

    Used by the streaming thread only. A lost connection (server restart, network) is retried
    until it works or the task stops: the value is still in the table, and an event sent with
    the placeholder instead would leave it wrong in every target.
    """

    def __init__(self, dsn: Mapping[str, Any], settings: ReselectSettings, stop: threading.Event) -> None:
        self.dsn = dict(dsn)
        self.settings = settings
        self.stop = stop
        self._conn: psycopg.Connection[Any] | None = None
        self._relations: dict[int, tuple[str, str, str] | None] = {}  # oid → (schema, name, relkind)
        self._selected: dict[tuple[str, str], bool] = {}

    # -- which columns -------------------------------------------------------------------------
    def _wanted(self, table: TableSchema, new: tuple[object, ...]) -> list[ColumnInfo]:
        s = self.settings
        out = []
        for col in table.value_columns:
            raw = new[col.index] if col.index < len(new) else None
            if raw is UNCHANGED_TOAST:
                if not s.unavailable_values:
                    continue
            elif raw is not None or not s.null_values or col.name in table.key_names:
                continue
            chosen = self._selected.get((table.id, col.name))
            if chosen is None:
                chosen = self._selected[(table.id, col.name)] = bool(s.columns(f"{table.id}:{col.name}"))
            if chosen:
                out.append(col)
        return out

    def _key(self, table: TableSchema) -> list[tuple[str, int]]:
        """(column, position in the row) of the columns the row is found by."""
        pk = table.primary_key
        if self.settings.use_event_key or not pk or any(name not in table.column_index for name in pk):
            return [(c.name, c.index) for c in table.key_columns]
        return [(name, table.column_index[name]) for name in pk]

    # -- the read ------------------------------------------------------------------------------
    def fill(self, table: TableSchema, new: tuple[object, ...], tx_id: int | None) -> tuple[object, ...]:
        """`new` with the wanted columns' current values (server text, as pgoutput sends it).

        Unchanged when nothing is wanted, or the row no longer exists (the change that removed it
        follows in the stream). A value that cannot be read fails the task, or with
        reselect.error.handling.mode=warn is logged and keeps the placeholder.
        """
        if UNCHANGED_TOAST not in new and not (self.settings.null_values and None in new):
            return new
        columns = self._wanted(table, new)
        if not columns:
            return new
        key = self._key(table)
        key_values = [new[i] if i < len(new) else None for _, i in key]
        where = ", ".join(f"{name}={value}" for (name, _), value in zip(key, key_values, strict=True))
        try:
            if not key or any(v is UNCHANGED_TOAST or not isinstance(v, (str, type(None))) for v in key_values):
                raise _Unavailable(
                    "the row's key is not in the event"
                    if key
                    else "the table has no primary key and the event no message key to find the row by",
                    "give the table a primary key, or set message.key.columns and reselect.use.event.key=true",
                )
            found = self._read(table, columns, key, key_values, tx_id)
        except _Unavailable as e:
            self._unavailable(table, columns, where, e)
            return new
        if found is None:
            log.debug("%s: no row with %s any more; the change that removed it follows", table.id, where)
            return new
        values = list(new)
        for col, text in zip(columns, found, strict=True):
            values[col.index] = text
        return tuple(values)

    def _unavailable(self, table: TableSchema, columns: list[ColumnInfo], where: str, e: _Unavailable) -> None:
        names = ", ".join(c.name for c in columns)
        message = (
            f"cannot re-select column(s) {names} of {table.id} for the row with {where}, whose values PostgreSQL "
            f"did not send (unchanged TOASTed values): {e.cause}"
        )
        if e.gone:
            log.warning("%s; the event keeps the unavailable-value placeholder", message)
            return
        if self.settings.fail:
            raise PostgresConnectorError(
                f"{message}. Fix: {e.fix}; or set reselect.error.handling.mode=warn to send the placeholder "
                "instead (targets then keep it for this row)"
            )
        log.warning("%s (fix: %s); reselect.error.handling.mode=warn: the event keeps the placeholder", message, e.fix)

    def _read(
        self,
        table: TableSchema,
        columns: list[ColumnInfo],
        key: list[tuple[str, int]],
        key_values: list[Any],
        tx_id: int | None,
    ) -> list[str | None] | None:
        """The columns' text of the row with that key, or None if there is none."""
        deadline = time.monotonic() + VISIBILITY_TIMEOUT_S
        pause = 0.001
        refreshed = False
        while True:
            try:
                statement, params = self._statement(table, columns, key, key_values, tx_id)
                result = self._execute(statement, params)
            except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as e:
                if not refreshed:  # renamed since it was looked up: look it up again, once
                    self._relations.pop(table.relation_id, None)
                    refreshed = True
                    continue
                raise _Unavailable(
                    f"{str(e).strip()} (dropped or renamed since the change)", "none needed", gone=True
                ) from e
            except psycopg.errors.InsufficientPrivilege as e:
                raise _Unavailable(
                    str(e).strip(),
                    f"GRANT SELECT ON {table.id} TO {self.dsn.get('user')}, the connector's database.user",
                ) from e
            except psycopg.Error as e:
                raise _Unavailable(str(e).strip(), "remove the cause PostgreSQL gives") from e
            if result.get_value(0, 0) != b"t":  # the event's transaction is not visible yet
                if time.monotonic() > deadline:
                    raise _Unavailable(
                        f"its transaction {tx_id} was not visible to other sessions {VISIBILITY_TIMEOUT_S:.0f} s "
                        "after pgoutput sent its commit",
                        "check the server for stuck commits (pg_stat_activity)",
                    )
                self._pause(pause)
                pause = min(pause * 2, 0.05)
                continue
            if result.get_value(0, 1) is None:
                return None
            if result.ntuples > 1:
                raise _Unavailable(
                    f"more than one row has {', '.join(name for name, _ in key)} equal to the event's",
                    "set message.key.columns to columns that identify one row",
                )
            raw = [result.get_value(0, 2 + j) for j in range(len(columns))]
            return [None if v is None else bytes(v).decode() for v in raw]

    def _statement(
        self,
        table: TableSchema,
        columns: list[ColumnInfo],
        key: list[tuple[str, int]],
        key_values: list[Any],
        tx_id: int | None,
    ) -> tuple[str, list[Any]]:
        """One SELECT: whether the event's transaction is visible, then the row's columns (at most 2 rows).

        The key values are the event's text, sent untyped so the server reads them as the key
        columns' own types; the columns come back as their text output, as pgoutput sends them.
        """
        relation = self._relation(table)
        if relation is None:
            raise psycopg.errors.UndefinedTable(f'relation with oid {table.relation_id} ("{table.id}") does not exist')
        schema_name, name, relkind = relation
        source = f"{'' if relkind == 'p' else 'ONLY '}{_ident(schema_name)}.{_ident(name)}"
        where = " AND ".join(
            f"{_ident(k)} IS NULL" if v is None else f"{_ident(k)} = %s"
            for (k, _), v in zip(key, key_values, strict=True)
        )
        selected = ", ".join(_ident(c.name) for c in columns)
        visible = _VISIBLE if tx_id is not None else "true"
        statement = (
            f"SELECT {visible}, r.* FROM (SELECT 1) AS one LEFT JOIN "
            f"(SELECT true, {selected} FROM {source} WHERE {where} LIMIT 2) AS r ON true"
        )
        params: list[Any] = [] if tx_id is None else [tx_id]
        params += [v for v in key_values if v is not None]
        return statement, params

    def _relation(self, table: TableSchema) -> tuple[str, str, str] | None:
        """The table's current schema, name and kind, by OID (it may have been renamed since the event)."""
        oid = table.relation_id
        if oid not in self._relations:
            row = self._execute(_RELATION_SQL, [oid])
            self._relations[oid] = (
                None
                if row.ntuples == 0
                else (
                    bytes(row.get_value(0, 0)).decode(),
                    bytes(row.get_value(0, 1)).decode(),
                    bytes(row.get_value(0, 2)).decode(),
                )
            )
        return self._relations[oid]

    def _execute(self, statement: str, params: list[Any]) -> Any:
        """The statement's raw result (text format); waits out a lost connection (raises InterruptedError on stop)."""
        pause = 0.5
        while True:
            try:
                conn = self._connection()
                return conn.execute(statement, params).pgresult
            except psycopg.OperationalError as e:
                self.close()
                if self.stop.is_set():
                    raise InterruptedError from e
                log.warning(
                    "re-selecting unsent (TOASTed) values: %s; retrying in %.1fs", str(e).strip() or type(e), pause
                )
                self._pause(pause)
                pause = min(pause * 2, 10.0)

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            conn = self._conn = psycopg.connect(
                autocommit=True,
                connect_timeout=10,
                application_name=APPLICATION_NAME,
                client_encoding="UTF8",
                **self.dsn,
            )
        return conn

    def _pause(self, seconds: float) -> None:
        if self.stop.wait(seconds):
            raise InterruptedError("the task is stopping")

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error as e:
                log.debug("closing the re-select connection: %s", e)
