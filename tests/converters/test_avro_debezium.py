"""Every type the MySQL and PostgreSQL connectors emit, under each of Debezium's handling modes, goes
through AvroConverter and back equal (real servers, the type tables of tests/mysql/test_types.py and
tests/postgres/test_value_converters.py), and confluent-kafka's AvroDeserializer reads the same values.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cdc.api import SchemaBuilder, SourceRecord, Struct, Type
from cdc_postgres.value_converters import ConverterSettings
from tests.converters.avro_compare import confluent_decode, connect_millis, plain, same
from tests.converters.avro_strategies import converter, mock_registry, top_level
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.test_types import COLUMNS as MYSQL_COLUMNS
from tests.mysql.test_types import VALUES as MYSQL_VALUES
from tests.postgres.test_value_converters import VALUES as PG_VALUES
from tests.postgres.test_value_converters import convert as pg_convert
from tests.postgres.test_value_converters import table  # noqa: F401  (the fixture)

_ids = itertools.count(1)


def _through_avro(record: SourceRecord, registry: Any) -> None:
    for is_key, schema, value in ((True, record.key_schema, record.key), (False, record.value_schema, record.value)):
        if schema is None:
            continue
        value = connect_millis(schema, value)
        c = converter(registry, is_key=is_key)
        data = c.from_connect_data(record.topic, schema, value)
        if value is None:
            assert data is None
            continue
        back = c.to_connect_data(record.topic, data)
        expected = top_level(schema, 1)
        assert back.schema == expected, (record.topic, is_key)
        if isinstance(value, Struct):
            value = Struct.from_values(expected, [value.get(f) for f in schema.fields])
        if not same(back.value, value):
            diffs = _diff(back.value, value)
            raise AssertionError(f"{record.topic} {'key' if is_key else 'value'}: {diffs}")
        decoded = confluent_decode(registry, record.topic, data, is_key=is_key)
        assert same(decoded, plain(schema, value)), (record.topic, is_key)


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, Struct) and isinstance(b, Struct):
        return [d for f in a.schema.fields for d in _diff(a.get(f.name), b.get(f.name), f"{path}.{f.name}")]
    return [] if same(a, b) else [f"{path}: {a!r} != {b!r}"]


MYSQL_MODES = [
    {},
    {"time.precision.mode": "connect", "decimal.handling.mode": "precise", "bigint.unsigned.handling.mode": "precise"},
    {"decimal.handling.mode": "string", "binary.handling.mode": "base64", "time.precision.mode": "adaptive"},
    {"decimal.handling.mode": "double", "binary.handling.mode": "hex"},
]


@pytest.mark.parametrize("mode", MYSQL_MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "defaults")
def test_mysql_types_round_trip(mariadb_db, mode: dict[str, str]) -> None:
    execute(
        mariadb_db,
        "SET SESSION sql_mode = ''",
        "SET SESSION time_zone = '+00:00'",
        f"CREATE TABLE types ({MYSQL_COLUMNS})",
        f"INSERT INTO types VALUES {MYSQL_VALUES.format(id=1)}",
    )
    props = {**connector_props(mariadb_db), **mode}
    registry = mock_registry()
    with TaskRunner(props) as run:
        run.wait_data(1)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute(f"INSERT INTO types VALUES {MYSQL_VALUES.format(id=2)}")
            cur.execute("UPDATE types SET vc = 'changed' WHERE id = 2")
            cur.execute("DELETE FROM types WHERE id = 1")
        events = run.wait_data(4)
        run.poll_until(lambda _: any(r.value is None for r in run.records), what="the delete's tombstone")
        records = list(run.records)  # with the tombstone and the schema change events
    assert [r.value.get("op") for r in events] == ["r", "c", "u", "d"]
    for record in records:
        _through_avro(record, registry)
    assert registry.get_versions(f"{events[0].topic}-value") == [1]  # one schema for every event of the table


PG_SETTINGS = [
    ConverterSettings(),
    ConverterSettings(decimal_handling_mode="precise", time_precision_mode="connect", hstore_handling_mode="map"),
    ConverterSettings(
        decimal_handling_mode="string",
        time_precision_mode="adaptive_time_microseconds",
        binary_handling_mode="hex",
        interval_handling_mode="string",
    ),
    ConverterSettings(decimal_handling_mode="double", binary_handling_mode="base64"),
]


@pytest.mark.parametrize("settings", PG_SETTINGS, ids=["defaults", "precise-connect", "string-micros", "double"])
def test_postgres_types_round_trip(table, settings: ConverterSettings) -> None:  # noqa: F811
    builder = SchemaBuilder.struct().name(f"pg.public.all_types{next(_ids)}.Value").optional()
    row: list[Any] = []
    for column in PG_VALUES:
        schema, value = pg_convert(table, column, settings)
        if isinstance(value, list) and schema.type is not Type.ARRAY:  # convert() gives an array's element schema
            schema = SchemaBuilder.array(schema).optional().build()
        builder.field(column, schema)
        row.append(value)
    schema = builder.build()
    value = Struct.from_values(schema, row)
    value.validate()
    registry = mock_registry()
    record = SourceRecord({}, {}, "pg.public.all_types", None, None, None, schema, value)
    _through_avro(record, registry)
    _through_avro(SourceRecord({}, {}, "pg.public.all_types", None, None, None, schema, None), registry)
