"""Debezium's binlog test scripts on a private MariaDB, and one connector run over all of them per config.

Each script loads into a database of its own (`dbz_<template>`), as Debezium's UniqueDatabase does;
a copy of every table (`dbzcopy_<template>`, not captured) keeps its rows. A run snapshots every
captured table, then streams, per table, a DELETE of its rows and an INSERT of the same rows from
the copy (an INSERT IGNORE of defaults for an empty table), so every table produces events and
every value goes through both the SELECT and the binlog decoders.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cdc.api import SourceRecord
from cdc_debezium.naming import TopicNamingStrategy
from tests.debezium_material.mysql import script_names, statements
from tests.mysql.harness import TaskRunner, after, before, connector_props, op
from tests.rig import MariaDbServer

# Scripts whose SQL MariaDB 10.11 does not take (see tests/debezium_material/mysql/README.md).
MYSQL_ONLY = {
    "default_value_generated": "NOT NULL on a generated column (MySQL 5.7+ syntax)",
    "json_test": "CAST(... AS JSON) and JSON literals (MySQL's JSON type)",
    "vector_test": "the VECTOR type (MySQL 9)",
    "maria_vector_test": "the VECTOR type (MariaDB 11.7+)",
}
# Scripts whose database Debezium's ITs create with a character set.
CHARSETS = {"db_default_charset": "utf8mb4", "db_default_charset_noutf": "latin2"}


def database_of(template: str) -> str:
    return "dbz_" + template.replace("-", "_")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class Table:
    db: str
    name: str
    rows: int
    columns: list[str]  # insertable (not generated) columns

    @property
    def topic(self) -> str:
        """Debezium's topic name (characters Kafka refuses become `_`)."""
        return TopicNamingStrategy("dbserver1").data_change_topic(self.db, self.name)


@dataclass
class Loaded:
    server: MariaDbServer
    databases: dict[str, str]  # template → database
    failed: dict[str, str]  # template → load error
    tables: list[Table] = field(default_factory=list)


def load_all(server: MariaDbServer) -> Loaded:
    """Loads every vendored script; the ones MariaDB refuses are reported in `failed`."""
    loaded = Loaded(server, {}, {})
    for template in script_names():
        db = database_of(template)
        try:
            with server.connect(database=None) as conn, conn.cursor() as cur:
                for sql in statements(template, db):
                    if template in CHARSETS and sql.strip().startswith("CREATE DATABASE"):
                        sql = f"{sql.strip()} CHARSET {CHARSETS[template]}"
                    cur.execute(sql)
        except Exception as e:
            loaded.failed[template] = f"{type(e).__name__}: {e}"
            with server.connect(database=None) as conn, conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {_q(db)}")
            continue
        loaded.databases[template] = db
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        for db in loaded.databases.values():
            cur.execute(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                "AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
                (db,),
            )
            names = [r[0] for r in cur.fetchall()]
            if names:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {_q('dbzcopy_' + db[4:])}")
            for name in names:
                cur.execute(
                    "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                    "AND EXTRA NOT LIKE '%%GENERATED%%' AND EXTRA NOT LIKE '%%PERSISTENT%%' ORDER BY ORDINAL_POSITION",
                    (db, name),
                )
                columns = [r[0] for r in cur.fetchall()]
                cur.execute(f"SELECT COUNT(*) FROM {_q(db)}.{_q(name)}")
                rows = int(cur.fetchone()[0])
                copy = f"{_q('dbzcopy_' + db[4:])}.{_q(name)}"
                cur.execute(f"CREATE TABLE {copy} LIKE {_q(db)}.{_q(name)}")
                cols = ", ".join(_q(c) for c in columns)
                cur.execute(f"INSERT INTO {copy} ({cols}) SELECT {cols} FROM {_q(db)}.{_q(name)}")
                loaded.tables.append(Table(db, name, rows, columns))
    return loaded


def stream_changes(loaded: Loaded) -> dict[str, int]:
    """Deletes and re-inserts every table's rows (a default row into an empty table, deleted again):
    the events expected per table ("db.table")."""
    expected = {}
    with loaded.server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET SESSION foreign_key_checks = 0")
        for t in loaded.tables:
            target = f"{_q(t.db)}.{_q(t.name)}"
            if t.rows:
                cols = ", ".join(_q(c) for c in t.columns)
                copy = f"{_q('dbzcopy_' + t.db[4:])}.{_q(t.name)}"
                cur.execute(f"DELETE FROM {target}")
                cur.execute(f"INSERT INTO {target} ({cols}) SELECT {cols} FROM {copy}")
                expected[f"{t.db}.{t.name}"] = 2 * t.rows
            else:
                # A row of defaults, deleted again: the table stays empty for the next run.
                inserted = cur.execute(f"INSERT IGNORE INTO {target} () VALUES ()")
                cur.execute(f"DELETE FROM {target}")
                expected[f"{t.db}.{t.name}"] = 2 * inserted
    return expected


_ids = itertools.count(7000)


@dataclass
class Run:
    """The records of one connector run over every loaded script."""

    props: dict[str, str]
    records: list[SourceRecord]
    error: BaseException | None

    def data(self, topic: str) -> list[SourceRecord]:
        return [r for r in self.records if r.topic == topic and r.value is not None]

    def snapshot(self, topic: str) -> list[dict[str, Any]]:
        return [after(r) for r in self.data(topic) if op(r) == "r"]

    def created(self, topic: str) -> list[dict[str, Any]]:
        return [after(r) for r in self.data(topic) if op(r) == "c"]

    def deleted(self, topic: str) -> list[dict[str, Any]]:
        return [before(r) for r in self.data(topic) if op(r) == "d"]


def run_connector(loaded: Loaded, knobs: dict[str, str], timeout: float = 300) -> Run:
    """Snapshot plus the streamed changes of `stream_changes`, under `knobs`; an error is kept, not raised."""
    server = loaded.server
    props = connector_props(server)
    props.update(
        {
            "database.include.list": ",".join(sorted(loaded.databases.values())),
            "database.server.id": str(next(_ids)),
            "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
            "include.schema.changes": "false",
            "max.batch.size": "4096",
            "max.queue.size": "16384",
            **knobs,
        }
    )
    excluded = set(knobs.get("table.exclude.list", "").replace("\\.", ".").split(","))
    snapshot_rows = sum(t.rows for t in loaded.tables if f"{t.db}.{t.name}" not in excluded)
    runner = TaskRunner(props)
    error: BaseException | None = None
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(runner)
            runner.poll_until(
                lambda _: sum(op(r) == "r" for r in runner.records if r.value is not None) >= snapshot_rows,
                timeout,
                "the snapshot",
            )
            streamed = sum(n for name, n in stream_changes(loaded).items() if name not in excluded)
            runner.poll_until(
                lambda _: sum(op(r) in ("c", "d") for r in runner.records if r.value is not None) >= streamed,
                timeout,
                f"{streamed} streamed events",
            )
        except Exception as e:  # the task FAILED (or timed out): the test reports it
            error = e
    return Run(props, runner.records, error)


def tables_without_events(loaded: Loaded, run: Run) -> list[str]:
    topics = {r.topic for r in run.records if r.value is not None}
    excluded = set(run.props.get("table.exclude.list", "").replace("\\.", ".").split(","))
    return [t.topic for t in loaded.tables if t.topic not in topics and f"{t.db}.{t.name}" not in excluded]


def iter_tables(loaded: Loaded, template: str) -> Iterator[Table]:
    db = loaded.databases[template]
    return (t for t in loaded.tables if t.db == db)


class RunCache(dict):  # type: ignore[type-arg]
    """knob name → Run, each made on first use with `KNOBS`' settings (dict[str, Run])."""

    def __init__(self, loaded: Loaded) -> None:
        super().__init__()
        self.loaded = loaded

    def __missing__(self, knob: str) -> Run:
        run = self[knob] = run_connector(self.loaded, KNOBS[knob])
        return run


CONNECT_UNCAPTURABLE = "dbz_connector_test_ro\\.dbz_342_timetest"
# Debezium's defaults (decimal precise, time adaptive_time_microseconds, bigint long, adjuster on) are the
# first run; each other value the ITs set is a run of its own.
KNOBS: dict[str, dict[str, str]] = {
    "default": {},
    "decimal=double": {"decimal.handling.mode": "double"},
    "decimal=string": {"decimal.handling.mode": "string"},
    # connector_test_ro's dbz_342_timetest has a TIME PRIMARY KEY holding 517:51:04.77, which a Connect
    # Time cannot hold and a key cannot leave null: Debezium's task fails on it too (its ITs never run
    # that script in connect mode). test_debezium_it_values checks that failure on its own.
    "time=connect": {"time.precision.mode": "connect", "table.exclude.list": CONNECT_UNCAPTURABLE},
    "bigint=precise": {"bigint.unsigned.handling.mode": "precise"},
    "adjuster=false": {"enable.time.adjuster": "false"},
    # The defaults set explicitly, as the ITs also set them.
    "decimal=precise": {"decimal.handling.mode": "precise"},
    "time=adaptive_time_microseconds": {"time.precision.mode": "adaptive_time_microseconds"},
    "bigint=long": {"bigint.unsigned.handling.mode": "long"},
    "adjuster=true": {"enable.time.adjuster": "true"},
}
ACCEPTANCE_KNOBS = list(KNOBS)
# Runs of single ITs (not part of the acceptance matrix).
KNOBS["propagate=column"] = {"column.propagate.source.type": ".*\\.c1,.*\\.c2,.*\\.c3.*,.*\\.f."}
for _mode in ("hex", "base64", "base64-url-safe"):
    KNOBS[f"binary={_mode}"] = {"binary.handling.mode": _mode}
KNOBS["comments"] = {
    "include.schema.changes": "true",
    "include.schema.comments": "true",
    "datatype.propagate.source.type": ".+\\.BIGINT,.+\\.VARCHAR",
}
KNOBS["names=avro"] = {"schema.name.adjustment.mode": "avro"}
_BOOLEAN = {
    "converters": "boolean",
    "boolean.type": "io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter",
}
KNOBS["tinyint=selected"] = {**_BOOLEAN, "boolean.selector": ".*DBZ1773.b,.*DBZ2085.b"}
KNOBS["tinyint=all"] = dict(_BOOLEAN)
KNOBS["tinyint=unchecked"] = {
    **_BOOLEAN,
    "boolean.length.checker": "false",
    "boolean.selector": ".*DBZ5236.ti2,.*DBZ5236.ti3",
}
KNOBS["mask=hash"] = {"column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": "dbz_connector_test_ro.customers.email"}
KNOBS["propagate=datatype"] = {"datatype.propagate.source.type": ".+\\.FLOAT,.+\\.VARCHAR"}
