"""Debezium's own PostgreSQL test tables and the values its ITs assert, snapshot and stream (issue 19).

Each scenario loads Debezium's `init_database.ddl` and `postgres_create_tables.ddl` (vendored in
tests/debezium_material/postgres) into a fresh database, inserts the ITs' rows, runs the connector
under the IT's configuration and checks every field the ITs check, schema and value, in the
snapshot's `r` event and again in the `c` event of the same row inserted while streaming.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cdc.api import SourceRecord
from cdc_debezium.naming import sanitize_topic
from tests.postgres import debezium_expected as x
from tests.postgres.harness import TaskRunner, connector_props

MATERIAL = Path(__file__).resolve().parents[1] / "debezium_material" / "postgres"


def load(sql: Any, *files: str) -> None:
    """Run Debezium's scripts as its TestHelper.executeDDL does: each file as one batch."""
    for name in files:
        sql.execute((MATERIAL / name).read_text())


Expected = Callable[[], list[x.Expect]]


@dataclass(frozen=True)
class Scenario:
    config: dict[str, str]
    rows: list[tuple[str, str, Expected]]  # (statement, schema.table, the IT's expectations for that row)
    keyless: tuple[str, ...] = field(default=())
    setup: str = ""  # run after Debezium's scripts


_HSTORE = [
    (x.HSTORE, "public.hstore_table"),
    (x.HSTORE_MULTIPLE, "public.hstore_table_mul"),
    (x.HSTORE_NULL, "public.hstore_table_with_null"),
    (x.HSTORE_SPECIAL, "public.hstore_table_with_special"),
]


def _hstore(expect: Callable[[str], list[x.Expect]]) -> list[tuple[str, str, Expected]]:
    return [(stmt, table, functools.partial(expect, table.split(".")[1])) for stmt, table in _HSTORE]


def _unknown(mode: str) -> list[tuple[str, str, Expected]]:
    return [
        (x.BYTEA_BINMODE, "public.bytea_binmode_table", lambda: x.bytea(mode)),
        (x.CIRCLE, "public.circle_table", lambda: x.unknown_circle(mode)),
    ]


SCENARIOS = {
    "default": Scenario(
        {},
        [
            (x.NUMERIC, "public.numeric_table", x.numeric),
            (x.DECIMAL_NO_NAN, "public.numeric_decimal_table", x.decimals_precise),
            (x.STRING, "public.string_table", x.strings),
            (x.CASH, "public.cash_table", lambda: x.money("1234.11")),
            (x.NEGATIVE_CASH, "public.cash_table", lambda: x.money("-1234.11")),
            (x.NULL_CASH, "public.cash_table", lambda: x.money(None)),
            (x.BITS, "public.bitbin_table", x.bit_types),
            (x.DATE_TIME, "public.time_table", x.date_times),
            (x.TEXT, "public.text_table", x.texts),
            (x.GEOM, "public.geom_table", x.geometry),
            (x.RANGE, "public.range_table", x.ranges),
            (x.ARRAY, "public.array_table", x.arrays),
            (x.ARRAY_NULLS, "public.array_table_with_nulls", x.arrays_with_nulls),
            (x.QUOTED, 'Quoted_" . Schema.Quoted_" . Table', x.quoted),
            (x.CUSTOM, "public.custom_table", x.custom_types),  # the isbn column is known, whatever the knob
            (x.NETWORK, "public.network_address_table", x.network),
            (x.CIDR, "public.cidr_network_address_table", x.cidr),
            (x.MACADDR, "public.macaddr_table", x.macaddr),
            (x.BYTEA_BINMODE, "public.bytea_binmode_table", lambda: x.bytea("bytes")),
            (x.WITHOUT_PK, "public.table_without_pk", x.without_pk),
            *_hstore(x.hstore_json),
        ],
        keyless=("public.table_without_pk",),
    ),
    "decimal_string": Scenario(
        {"decimal.handling.mode": "string"},
        [
            (x.DECIMAL_NAN, "public.numeric_decimal_table", x.decimals_string),
            (x.DECIMAL_INFINITY, "public.numeric_decimal_table", x.decimals_string_infinity),
        ],
    ),
    "decimal_double": Scenario(
        {"decimal.handling.mode": "double"}, [(x.DECIMAL_NAN, "public.numeric_decimal_table", x.decimals_double)]
    ),
    "adaptive_time_microseconds": Scenario(
        {"time.precision.mode": "adaptive_time_microseconds"},
        [(x.DATE_TIME, "public.time_table", x.date_times_adaptive_time_microseconds)],
    ),
    "interval_string": Scenario(
        {"interval.handling.mode": "string"}, [(x.DATE_TIME, "public.time_table", x.interval_string)]
    ),
    "hstore_map": Scenario({"hstore.handling.mode": "map"}, _hstore(x.hstore_map_mode)),
    "include_unknown": Scenario(
        {"include.unknown.datatypes": "true"},
        [(x.CUSTOM, "public.custom_table", x.custom_types), *_unknown("bytes")],
    ),
    "unknown_base64": Scenario(
        {"include.unknown.datatypes": "true", "binary.handling.mode": "base64"}, _unknown("base64")
    ),
    "unknown_base64_url_safe": Scenario(
        {"include.unknown.datatypes": "true", "binary.handling.mode": "base64-url-safe"}, _unknown("base64-url-safe")
    ),
    "unknown_hex": Scenario({"include.unknown.datatypes": "true", "binary.handling.mode": "hex"}, _unknown("hex")),
    "propagate_column_type": Scenario(
        {"column.propagate.source.type": ".*vc.*"}, [(x.STRING, "public.string_table", x.strings_with_source_type)]
    ),
    "domain_aliases": Scenario(
        {"decimal.handling.mode": "double", "include.unknown.datatypes": "true"},
        [(x.DOMAIN_ALIASES, "public.alias_table", x.domain_aliases)],
        setup=x.DOMAIN_SETUP,
    ),
    "propagate_column_scale": Scenario(
        {"column.propagate.source.type": ".*(d|dzs)", "decimal.handling.mode": "double"},
        [(x.DECIMAL_NAN, "public.numeric_decimal_table", x.decimals_double_with_source_type)],
    ),
}


def _topic(table: str) -> str:
    return sanitize_topic("test_server." + table)


def _events(records: list[SourceRecord], table: str, op: str) -> list[SourceRecord]:
    topic = _topic(table)
    return [r for r in records if r.topic == topic and r.value is not None and r.value.get("op") == op]


def _check(scenario: Scenario, records: list[SourceRecord], op: str) -> tuple[int, int, list[str]]:
    """(fields checked, fields equal, problems) for every row of the scenario in its `op` event."""
    seen: dict[str, int] = {}
    checked, equal, problems = 0, 0, []
    for _stmt, table, expected in scenario.rows:
        n = seen.get(table, 0)
        seen[table] = n + 1
        events = _events(records, table, op)
        if len(events) <= n:
            problems.append(f"{table}: no {op!r} event for row {n + 1} (got {len(events)})")
            checked += len(expected())
            continue
        record = events[n]
        if table in scenario.keyless and (record.key is not None or record.key_schema is not None):
            problems.append(f"{table}: a table without a primary key has a null key, not {record.key!r}")
        after = record.value.get("after")
        for expect in expected():
            checked += 1
            found = expect.problems(after)
            equal += not found
            problems += [f"{table} ({op}) {p}" for p in found]
    return checked, equal, problems


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_debezium_it_values_in_snapshot_and_stream(name: str, postgres_db) -> None:
    scenario = SCENARIOS[name]
    sql = postgres_db.connect()
    load(sql, "init_database.ddl", "postgres_create_tables.ddl")
    if scenario.setup:
        sql.execute(scenario.setup)
    for stmt, _table, _ in scenario.rows:
        sql.execute(stmt)
    tables = {table for _, table, _ in scenario.rows}
    counts: dict[str, int] = {}
    for _stmt, table, _ in scenario.rows:
        counts[table] = counts.get(table, 0) + 1
    with TaskRunner(connector_props(postgres_db, **scenario.config)) as runner:
        runner.poll_until(
            lambda recs: all(len(_events(recs, t, "r")) >= counts[t] for t in tables), what="the snapshot rows"
        )
        runner.wait_streaming(sql)
        for stmt, _table, _ in scenario.rows:
            sql.execute(stmt)
        runner.poll_until(
            lambda recs: all(len(_events(recs, t, "c")) >= counts[t] for t in tables), what="the streamed rows"
        )
        records = list(runner.records)
    snapshot = _check(scenario, records, "r")
    stream = _check(scenario, records, "c")
    problems = snapshot[2] + stream[2]
    print(
        f"\n{name}: {snapshot[1] + stream[1]} of {snapshot[0] + stream[0]} IT-asserted fields equal (schema and value)"
    )
    assert not problems, "\n".join(problems)
