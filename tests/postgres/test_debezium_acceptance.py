"""Acceptance for issue 19: all of Debezium's PostgreSQL DDL loads on a private PostgreSQL, and in one worker the
connector captures every table (snapshot and streamed inserts) with no task FAILED, under Debezium's default
config and under each knob its ITs use.

Loaded: `init_database.ddl`, `postgres_create_tables.ddl`, `postgres_create_multiple_tables.ddl`,
`init_tsvector.ddl` in one database, `postgres_create_role_specific_tables.ddl` in another (it makes its own
`dbz_publication` and roles; its `GRANT ... ON DATABASE postgres` names that database instead). Not
loadable here: `init_postgis.ddl`/`postgis_create_tables.ddl` (no PostGIS) and `init_pgvector.ddl` (no
pgvector); see tests/debezium_material/postgres/README.md.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from cdc.runtime.standalone import StandaloneHerder
from cdc.storage.status import State
from cdc_debezium.naming import sanitize_topic
from tests.postgres import debezium_expected as x
from tests.postgres.test_connector import herder  # noqa: F401  (the worker fixture)
from tests.postgres.test_debezium_material import MATERIAL, load
from tests.support.logs import topic_records

# The IT's row for each table of postgres_create_tables.ddl; any other table gets DEFAULT VALUES.
ROWS = {
    "public.numeric_table": x.NUMERIC,
    "public.numeric_decimal_table": x.DECIMAL_NAN,
    "public.string_table": x.STRING,
    "public.network_address_table": x.NETWORK,
    "public.cidr_network_address_table": x.CIDR,
    "public.macaddr_table": x.MACADDR,
    "public.cash_table": x.CASH,
    "public.bitbin_table": x.BITS,
    "public.bytea_binmode_table": x.BYTEA_BINMODE,
    "public.time_table": x.DATE_TIME,
    "public.text_table": x.TEXT,
    "public.geom_table": x.GEOM,
    "public.range_table": x.RANGE,
    "public.array_table": x.ARRAY,
    "public.array_table_with_nulls": x.ARRAY_NULLS,
    "public.custom_table": x.CUSTOM,
    "public.hstore_table": x.HSTORE,
    "public.hstore_table_mul": x.HSTORE_MULTIPLE,
    "public.hstore_table_with_null": x.HSTORE_NULL,
    "public.hstore_table_with_special": x.HSTORE_SPECIAL,
    "public.circle_table": x.CIRCLE,
    "public.not_null_table": x.NOT_NULL,
    "public.table_without_pk": x.WITHOUT_PK,
    'Quoted_" . Schema.Quoted_" . Table': x.QUOTED,
}
# Debezium's default config, then each knob its ITs set (one connector each, side by side in one worker).
KNOBS: dict[str, dict[str, str]] = {
    "default": {},
    "decimal_double": {"decimal.handling.mode": "double"},
    "decimal_string": {"decimal.handling.mode": "string"},
    "time_adaptive_us": {"time.precision.mode": "adaptive_time_microseconds"},
    "time_connect": {"time.precision.mode": "connect"},
    "hstore_map": {"hstore.handling.mode": "map"},
    "interval_string": {"interval.handling.mode": "string"},
    "unknown_types": {"include.unknown.datatypes": "true"},
    "unknown_base64": {"include.unknown.datatypes": "true", "binary.handling.mode": "base64"},
}
BATCH = 5  # connectors at a time: each holds a replication slot and a walsender (the rig allows 10)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _tables(sql: Any) -> list[str]:
    rows = sql.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2"
    ).fetchall()
    return [f"{ns}.{name}" for ns, name in rows]


def _insert(sql: Any, table: str) -> None:
    if table in ROWS:
        sql.execute(ROWS[table])
    else:
        ns, name = table.split(".", 1)
        sql.execute(f"INSERT INTO {_quote(ns)}.{_quote(name)} DEFAULT VALUES")


def _connector(db: Any, name: str, extra: dict[str, str]) -> dict[str, str]:
    return {
        "name": name,
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.dbname": db.dbname,
        "topic.prefix": name,
        "slot.name": name,
        "slot.drop.on.stop": "true",
        "poll.interval.ms": "100",
        **extra,
    }


def _ops(h: StandaloneHerder, prefix: str, table: str) -> list[str]:
    topic = sanitize_topic(f"{prefix}.{table}")
    return [json.loads(r.value)["payload"]["op"] for r in topic_records(h.worker.log, topic) if r.value is not None]


def _states(h: StandaloneHerder, names: list[str]) -> dict[str, tuple[State | None, str]]:
    out = {}
    for name in names:
        status = h.worker.status_store.get_task(name, 0)
        out[name] = (status.state if status else None, (status.trace or "")[-600:] if status else "")
    return out


def _run(h: StandaloneHerder, db: Any, sql: Any, knobs: dict[str, dict[str, str]], timeout: float = 240) -> None:
    """Start one connector per knob, check every table's snapshot row, insert again, check the streamed rows."""
    tables = _tables(sql)
    names = list(knobs)
    for name in names:
        h.put_connector_config(_connector(db, name, knobs[name]))

    def missing(op: str) -> list[str]:
        failed = {n: s for n, s in _states(h, names).items() if s[0] is State.FAILED}
        assert not failed, f"tasks FAILED: {failed}"
        return [f"{n}:{t}" for n in names for t in tables if op not in _ops(h, n, t)]

    deadline = time.monotonic() + timeout
    while missing("r"):
        assert time.monotonic() < deadline, f"no snapshot event for {missing('r')[:20]}"
        time.sleep(0.5)
    # Streaming: the slots exist once the snapshots are done; rows inserted now are streamed.
    while sql.execute(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = ANY(%s) AND active", (names,)
    ).fetchone()[0] < len(names):
        assert time.monotonic() < deadline, "the connectors' slots are not all streaming"
        time.sleep(0.5)
    for table in tables:
        _insert(sql, table)
    while missing("c"):
        assert time.monotonic() < deadline, f"no streamed event for {missing('c')[:20]}"
        time.sleep(0.5)
    assert all(s[0] is State.RUNNING for s in _states(h, names).values()), _states(h, names)
    for name in names:
        h.delete_connector(name)


@pytest.mark.parametrize("batch", range((len(KNOBS) + BATCH - 1) // BATCH))
def test_all_of_debeziums_ddl_every_table_every_knob(batch: int, herder: StandaloneHerder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    load(
        sql,
        "init_database.ddl",
        "postgres_create_tables.ddl",
        "postgres_create_multiple_tables.ddl",
        "init_tsvector.ddl",
    )
    tables = _tables(sql)
    assert len(tables) == 28 and 'Quoted_" . Schema.Quoted_" . Table' in tables and "s3.a" in tables
    for table in tables:
        _insert(sql, table)  # the snapshot's rows
    names = list(KNOBS)[batch * BATCH : (batch + 1) * BATCH]
    _run(herder, postgres_db, sql, {n: KNOBS[n] for n in names})


def test_role_specific_ddl_and_its_own_publication(herder: StandaloneHerder, postgres) -> None:  # noqa: F811
    """postgres_create_role_specific_tables.ddl creates dbz_publication FOR TABLE s1.a, s2.a as role_1: the
    connector (publication.autocreate.mode=all_tables, the default) uses that publication as it is."""
    with postgres.fresh_database() as db:
        sql = db.connect()
        try:
            # The script grants on the database its ITs use, `postgres`; here it is this one.
            script = (MATERIAL / "postgres_create_role_specific_tables.ddl").read_text()
            sql.execute(script.replace("DATABASE postgres", f"DATABASE {_quote(db.dbname)}"))
            for table in ("s1.a", "s2.a"):
                _insert(sql, table)
            _run(herder, db, sql, {"default": {}})
        finally:
            for role in ("role_1", "role_2"):
                if sql.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    sql.execute(f"DROP OWNED BY {role}")
                    sql.execute(f"DROP ROLE {role}")
