"""Debezium's PostgreSQL type mapping, value by value, from the server's own text output."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from cdc.api import Struct
from cdc.converters.json import JsonConverter
from cdc_postgres import text_values as tv
from cdc_postgres.types import PgColumn, TypeRegistry
from cdc_postgres.value_converters import (
    ConverterSettings,
    PostgresValueConverters,
    UnsupportedTypeError,
    _zoned_timestamp,
)

COLUMNS = """
    c_bool bool, c_bit1 bit(1), c_bit bit(10), c_varbit varbit(20),
    c_int2 int2, c_int4 int4, c_int8 int8, c_oid oid, c_f4 real, c_f8 double precision,
    c_num numeric(10,3), c_num_free numeric, c_money money,
    c_char char(5), c_varchar varchar(20), c_text text, c_bytea bytea, c_uuid uuid,
    c_json json, c_jsonb jsonb, c_xml xml,
    c_date date, c_time time(3), c_time6 time, c_timetz timetz,
    c_ts timestamp(3), c_ts6 timestamp, c_tstz timestamptz, c_interval interval,
    c_inet inet, c_cidr cidr, c_mac macaddr, c_point point,
    c_int_arr int4[], c_text_arr text[], c_mood mood, c_hstore hstore, c_range int4range
"""

VALUES = {
    "c_bool": "true",
    "c_bit1": "B'1'",
    "c_bit": "B'1000000001'",
    "c_varbit": "B'101'",
    "c_int2": "-32768",
    "c_int4": "2147483647",
    "c_int8": "-9223372036854775808",
    "c_oid": "4294967295",
    "c_f4": "1.5",
    "c_f8": "'NaN'",
    "c_num": "12345.678",
    "c_num_free": "-0.000123",
    "c_money": "-1234.56",
    "c_char": "'ab'",
    "c_varchar": "'héllo ☃'",
    "c_text": "'multi\nline'",
    "c_bytea": "'\\x00ff10'::bytea",
    "c_uuid": "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
    "c_json": "'{\"a\": [1, 2]}'",
    "c_jsonb": '\'{"b": true, "a": 1}\'',
    "c_xml": "'<a>x</a>'",
    "c_date": "'2018-06-20'",
    "c_time": "'13:14:15.123'",
    "c_time6": "'24:00:00'",
    "c_timetz": "'13:14:15.5+02'",
    "c_ts": "'2018-06-20 15:13:16.945'",
    "c_ts6": "'2018-06-20 15:13:16.945104'",
    "c_tstz": "'2018-06-20 15:13:16.945104+02'",
    "c_interval": "'1 year 2 mons 3 days 04:05:06.78'",
    "c_inet": "'192.168.0.1/24'",
    "c_cidr": "'10.0.0.0/8'",
    "c_mac": "'08:00:2b:01:02:03'",
    "c_point": "'(1.5,-2)'",
    "c_int_arr": "'{1,NULL,3}'",
    "c_text_arr": "ARRAY['a b', NULL]",
    "c_mood": "'happy'",
    "c_hstore": "'a=>1, b=>NULL'",
    "c_range": "'[1,10)'",
}


@pytest.fixture(scope="module")
def table(postgres):
    conn = postgres.connect()
    conn.execute("SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC'; SET lc_monetary = 'C'")
    conn.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    conn.execute("DROP TABLE IF EXISTS all_types; DROP TYPE IF EXISTS mood")
    conn.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    conn.execute(f"CREATE TABLE all_types(id int PRIMARY KEY, {COLUMNS})")
    cols = ", ".join(VALUES)
    conn.execute(f"INSERT INTO all_types(id, {cols}) VALUES (1, {', '.join(VALUES.values())})")
    registry = TypeRegistry.load(conn)
    meta = conn.execute(
        "SELECT attname, atttypid, atttypmod FROM pg_attribute WHERE attrelid = 'all_types'::regclass"
        " AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
    ).fetchall()
    # The raw text-format result is each type's output function, exactly what pgoutput sends
    # (a ::text cast is not: bool::text gives 'true' where boolout gives 't').
    raw = conn.execute(f"SELECT {', '.join(VALUES)} FROM all_types").pgresult
    text = {c: raw.get_value(0, i).decode() for i, c in enumerate(VALUES)}
    yield registry, {name: (oid, mod) for name, oid, mod in meta}, text
    conn.close()


def convert(table, column: str, settings: ConverterSettings | None = None):
    registry, meta, text = table
    oid, mod = meta[column]
    t = registry.get(oid)
    col = PgColumn(column, t, mod)
    conv = PostgresValueConverters(settings)
    element = registry.get(t.element_oid) if t.category == "A" else None
    schema = (
        conv.schema_builder(PgColumn(column, element, mod)).build() if element else conv.schema_builder(col).build()
    )
    return schema, conv.converter(col, element)(text[column])


def test_default_mapping_matches_debezium(table) -> None:
    def check(column, schema_type, name, value):
        schema, got = convert(table, column)
        assert schema.type.value == schema_type, column
        assert schema.name == name, column
        if isinstance(value, float) and value != value:
            assert got != got
        else:
            assert got == value, column

    check("c_bool", "boolean", None, True)
    check("c_bit1", "boolean", None, True)
    check("c_bit", "bytes", "io.debezium.data.Bits", (0b1000000001).to_bytes(2, "little"))
    check("c_varbit", "bytes", "io.debezium.data.Bits", b"\x05")
    check("c_int2", "int16", None, -32768)
    check("c_int4", "int32", None, 2147483647)
    check("c_int8", "int64", None, -9223372036854775808)
    check("c_oid", "int64", None, 4294967295)
    check("c_f4", "float", None, 1.5)
    check("c_f8", "double", None, float("nan"))
    check("c_num", "bytes", "org.apache.kafka.connect.data.Decimal", decimal.Decimal("12345.678"))
    check("c_money", "bytes", "org.apache.kafka.connect.data.Decimal", decimal.Decimal("-1234.56"))
    check("c_char", "string", None, "ab   ")
    check("c_varchar", "string", None, "héllo ☃")
    check("c_text", "string", None, "multi\nline")
    check("c_bytea", "bytes", None, b"\x00\xff\x10")
    check("c_uuid", "string", "io.debezium.data.Uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    check("c_json", "string", "io.debezium.data.Json", '{"a": [1, 2]}')
    check("c_jsonb", "string", "io.debezium.data.Json", '{"a": 1, "b": true}')
    check("c_xml", "string", "io.debezium.data.Xml", "<a>x</a>")
    check("c_date", "int32", "io.debezium.time.Date", (datetime.date(2018, 6, 20) - datetime.date(1970, 1, 1)).days)
    check("c_time", "int32", "io.debezium.time.Time", (13 * 3600 + 14 * 60 + 15) * 1000 + 123)
    check("c_time6", "int64", "io.debezium.time.MicroTime", 86_400_000_000)
    check("c_timetz", "string", "io.debezium.time.ZonedTime", "11:14:15.5Z")
    check("c_ts", "int64", "io.debezium.time.Timestamp", 1529507596945)
    # Debezium's documented example: "2018-06-20 15:13:16.945104" → 1529507596945104.
    check("c_ts6", "int64", "io.debezium.time.MicroTimestamp", 1529507596945104)
    check("c_tstz", "string", "io.debezium.time.ZonedTimestamp", "2018-06-20T13:13:16.945104Z")
    months_micros = round(14 * 30.4375 * 86_400_000_000)
    check(
        "c_interval",
        "int64",
        "io.debezium.time.MicroDuration",
        months_micros + 3 * 86_400_000_000 + (4 * 3600 + 5 * 60 + 6) * 1_000_000 + 780_000,
    )
    check("c_inet", "string", None, "192.168.0.1/24")
    check("c_cidr", "string", None, "10.0.0.0/8")
    check("c_mac", "string", None, "08:00:2b:01:02:03")
    check("c_int_arr", "int32", None, [1, None, 3])  # element schema; the converter gives the list
    check("c_text_arr", "string", None, ["a b", None])
    check("c_mood", "string", "io.debezium.data.Enum", "happy")
    check("c_hstore", "string", "io.debezium.data.Json", '{"a":"1","b":null}')
    check("c_range", "string", None, "[1,10)")


def test_enum_allowed_values_and_point(table) -> None:
    schema, _ = convert(table, "c_mood")
    assert schema.parameters == {"allowed": "sad,ok,happy"}
    schema, value = convert(table, "c_point")
    assert schema.name == "io.debezium.data.geometry.Point"
    assert isinstance(value, Struct) and value.get("x") == 1.5 and value.get("y") == -2.0
    assert value.get("wkb") == bytes.fromhex("0101000000000000000000f83f00000000000000c0")


def test_unconstrained_numeric_is_variable_scale_decimal(table) -> None:
    schema, value = convert(table, "c_num_free")
    assert schema.name == "io.debezium.data.VariableScaleDecimal"
    assert value.get("scale") == 6
    assert int.from_bytes(value.get("value"), "big", signed=True) == -123


def test_knobs(table) -> None:
    s = ConverterSettings(
        decimal_handling_mode="string",
        time_precision_mode="connect",
        binary_handling_mode="hex",
        interval_handling_mode="string",
        hstore_handling_mode="map",
    )
    assert convert(table, "c_num", s)[1] == "12345.678"
    assert convert(table, "c_bytea", s)[1] == "00ff10"
    assert convert(table, "c_interval", s)[1] == "P1Y2M3DT4H5M6.78S"
    assert convert(table, "c_hstore", s)[1] == {"a": "1", "b": None}
    assert convert(table, "c_date", s)[1] == datetime.date(2018, 6, 20)
    assert convert(table, "c_ts6", s)[0].name == "org.apache.kafka.connect.data.Timestamp"
    d = ConverterSettings(decimal_handling_mode="double")
    assert convert(table, "c_money", d) == (convert(table, "c_money", d)[0], -1234.56)
    assert convert(table, "c_time6", ConverterSettings(time_precision_mode="adaptive_time_microseconds"))[1] == (
        86_400_000_000
    )


def test_values_serialize_with_the_json_converter(table) -> None:
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, False)
    for column in ("c_num", "c_num_free", "c_point", "c_ts6", "c_tstz", "c_bit", "c_money"):
        schema, value = convert(table, column)
        out = json.loads(conv.from_connect_data("t", schema, value))
        assert out["schema"]["optional"] is True and out["payload"] is not None, column  # nullable columns


def test_unknown_type_is_explained(table) -> None:
    registry, _, _ = table
    t = registry.get(next(oid for oid, ty in registry.types.items() if ty.name == "tsquery"))
    with pytest.raises(UnsupportedTypeError, match=r"include\.unknown\.datatypes"):
        PostgresValueConverters().schema_builder(PgColumn("query", t))


def test_tsvector_is_debezium_tsvector_text(table) -> None:
    registry, _, _ = table
    t = registry.get(next(oid for oid, ty in registry.types.items() if ty.name == "tsvector"))
    conv = PostgresValueConverters()
    schema = conv.schema_builder(PgColumn("doc", t)).build()
    assert (schema.type.value, schema.name) == ("string", "io.debezium.data.Tsvector")
    assert conv.converter(PgColumn("doc", t))("'direct':6 'insert':8") == "'direct':6 'insert':8"


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-21 21:45:22.123456+00",
        "2026-11-21 21:45:22+00",
        "2026-11-21 21:45:22.5+00",
        "0001-01-01 00:00:00+00",
        "0999-12-31 23:59:59.000001+00",
        "9999-12-31 23:59:59.999999+00",
        "2020-02-29 10:00:00+05:30",
        "2020-01-01 10:00:00.25-10",
        "infinity",
        "-infinity",
    ],
)
@pytest.mark.parametrize("width", [0, 3, 6])
def test_timestamptz_shortcut_matches_the_full_parse(text: str, width: int) -> None:
    """UTC text takes a shortcut (the connector's sessions use TimeZone=UTC); it must agree byte for byte."""
    micros = tv.parse_timestamp(text)
    full = micros if isinstance(micros, str) else _zoned_timestamp(micros, width)
    assert PostgresValueConverters._timestamptz(text, width) == full


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        # Debezium's own expectations (AbstractRecordsProducerTest): timestamptz has 6 digits, zeros kept.
        ("21016-11-04 06:51:30+00", 6, "+21016-11-04T06:51:30.000000Z"),
        ("2020-04-01 11:51:02+00", 6, "2020-04-01T11:51:02.000000Z"),
        ("2016-11-04 11:51:30.123456+00", 6, "2016-11-04T11:51:30.123456Z"),
        ("2016-11-04 11:51:30.12+00", 3, "2016-11-04T11:51:30.120Z"),  # timestamptz(3)
        ("2016-11-04 11:51:30+00", 0, "2016-11-04T11:51:30Z"),  # timestamptz(0): no fraction
        ("infinity", 6, "infinity"),
    ],
)
def test_timestamptz_fraction_has_the_column_precision(text: str, width: int, expected: str) -> None:
    assert PostgresValueConverters._timestamptz(text, width) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10000-01-01 00:00:00+00", "+10000-01-01T00:00:00Z"),  # PostgreSQL allows up to 294276 AD
        ("294276-12-31 23:59:59.999999+00", "+294276-12-31T23:59:59.999999Z"),
        ("0001-01-01 00:00:00+00 BC", "0000-01-01T00:00:00Z"),  # ISO years are astronomical: 1 BC = 0000
        ("4714-11-24 00:00:00+00 BC", "-4713-11-24T00:00:00Z"),  # PostgreSQL's lower bound
        ("9999-12-31 23:00:00-02", "+10000-01-01T01:00:00Z"),  # crosses into year 10000 in UTC
    ],
)
def test_timestamptz_beyond_python_datetime(text: str, expected: str) -> None:
    """Years outside 1..9999 print like Java's ISO_OFFSET_DATE_TIME (Debezium's format), never crash."""
    assert PostgresValueConverters._timestamptz(text) == expected


def test_numerics_wider_than_28_digits_are_not_rounded(table) -> None:
    registry, meta, _ = table
    wide = "-12345678901234567890123456789012345678.123456"
    for column in ("c_num_free", "c_num"):  # variable scale, and a fixed scale re-quantized
        oid, mod = meta[column]
        col = PgColumn(column, registry.get(oid), mod)
        value = PostgresValueConverters().converter(col, None)(wide)
        if column == "c_num_free":
            assert value.get("scale") == 6
            assert int.from_bytes(value.get("value"), "big", signed=True) == int(wide.replace(".", ""))
        else:
            assert value == decimal.Decimal(wide).quantize(decimal.Decimal("0.001"), context=decimal.Context(prec=100))


def test_multi_dimensional_arrays_name_the_column_and_the_fix(table) -> None:
    from cdc.api import DataException

    registry, meta, _ = table
    oid, mod = meta["c_int_arr"]
    t = registry.get(oid)
    conv = PostgresValueConverters().converter(PgColumn("c_int_arr", t, mod), registry.get(t.element_oid))
    assert conv("{1,NULL,3}") == [1, None, 3]
    with pytest.raises(DataException, match=r"column c_int_arr holds a multi-dimensional array.*column.exclude.list"):
        conv("{{1,2},{3,4}}")
