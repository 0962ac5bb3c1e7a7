"""The values Debezium 3.6's PostgreSQL integration tests assert, re-expressed for this project.

Read from Debezium v3.6.1.Final's `AbstractRecordsProducerTest`, `RecordsSnapshotProducerIT` and
`RecordsStreamProducerIT` (Apache-2.0); nothing is copied: each statement below is the one those
tests insert into a table of `tests/debezium_material/postgres/postgres_create_tables.ddl`, and
each `Expect` is a field they check, with the Connect schema and value Debezium emits for it.
Schemas are built here from Debezium's logical names, not with the connector's own builders.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc.api import Schema, SchemaBuilder, Struct

# -- the statements (the ITs' INSERT_*_STMT) --------------------------------------------------------------

NUMERIC = (
    "INSERT INTO numeric_table (si, i, bi, r, db, r_int, db_int, r_nan, db_nan, r_pinf, db_pinf, r_ninf, db_ninf,"
    " ss, bs, b, o) VALUES (1, 123456, 1234567890123, 3.3, 4.44, 3, 4, 'NaN', 'NaN', 'Infinity', 'Infinity',"
    " '-Infinity', '-Infinity', 1, 123, true, 4000000000)"
)
_DECIMAL_COLUMNS = (
    "d, dzs, dvs, d_nn, n, nzs, nvs, d_int, dzs_int, dvs_int, n_int, nzs_int, nvs_int,"
    " d_nan, dzs_nan, dvs_nan, n_nan, nzs_nan, nvs_nan"
)
_DECIMAL_HEAD = "1.1, 10.11, 10.1111, 3.30, 22.22, 22.2, 22.2222, 1, 10, 10, 22, 22, 22"
_NULLS = ", ".join(["null"] * 6)
_NANS = ", ".join(["'NaN'"] * 6)
DECIMAL_NO_NAN = f"INSERT INTO numeric_decimal_table ({_DECIMAL_COLUMNS}) VALUES ({_DECIMAL_HEAD}, {_NULLS})"
DECIMAL_NAN = f"INSERT INTO numeric_decimal_table ({_DECIMAL_COLUMNS}) VALUES ({_DECIMAL_HEAD}, {_NANS})"
DECIMAL_INFINITY = (
    f"INSERT INTO numeric_decimal_table ({_DECIMAL_COLUMNS}) VALUES ({_DECIMAL_HEAD},"
    " null, null, 'Infinity', null, null, '-Infinity')"
)
STRING = (
    "INSERT INTO string_table (vc, vcv, ch, c, t, b, bnn, ct) VALUES ('\u017e\u0161', 'bb', 'cdef', 'abc',"
    " 'some text', E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea, 'Hello World')"
)
CASH = "INSERT INTO cash_table (csh) VALUES ('$1234.11')"
NEGATIVE_CASH = "INSERT INTO cash_table (csh) VALUES ('($1234.11)')"
NULL_CASH = "INSERT INTO cash_table (csh) VALUES (NULL)"
BITS = (
    "INSERT INTO bitbin_table (ba, bol, bol2, bs, bs7, bv1, bv, bv2, bvl, bvunlimited1, bvunlimited2) VALUES"
    " (E'\\\\001\\\\002\\\\003'::bytea, '0'::bit(1), '1'::bit(1), '11'::bit(2), '1'::bit(7), '1'::bit varying(1),"
    " '00'::bit(2), '000000110000001000000001'::bit(24),"
    " '1000000000000000000000000000000000000000000000000000000000000000'::bit(64), '101',"
    " '111011010001000110000001000000001')"
)
BYTEA_BINMODE = (
    "INSERT INTO bytea_binmode_table (ba, bytea_array) VALUES (E'\\\\001\\\\002\\\\003'::bytea,"
    " array[E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea])"
)
CIRCLE = "INSERT INTO circle_table (ccircle) VALUES ('((10, 20),10)'::circle)"
GEOM = "INSERT INTO geom_table(p) VALUES ('(1,1)'::point)"
TEXT = (
    'INSERT INTO text_table(j, jb, x, u) VALUES (\'{"bar": "baz"}\'::json, \'{"bar": "baz"}\'::jsonb,'
    " '<foo>bar</foo><foo>bar</foo>'::xml, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID)"
)
NETWORK = "INSERT INTO network_address_table (i) VALUES ('192.168.2.0/12')"
CIDR = "INSERT INTO cidr_network_address_table (i) VALUES ('192.168.100.128/25')"
MACADDR = "INSERT INTO macaddr_table (m) VALUES ('08:00:2b:01:02:03')"
DATE_TIME = (
    "INSERT INTO time_table(ts, tsneg, ts_ms, ts_us, tz, date, date_pinf, date_ninf, ti, tip, ttf, ttz, tptz, it,"
    " ts_large, ts_large_us, ts_large_ms, tz_large, ts_max, ts_min, tz_max, tz_min, ts_pinf, ts_ninf, tz_pinf,"
    " tz_ninf, tz_zero) VALUES ('2016-11-04T13:51:30.123456'::TIMESTAMP, '1936-10-25T22:10:12.608'::TIMESTAMP,"
    " '2016-11-04T13:51:30.123456'::TIMESTAMP, '2016-11-04T13:51:30.123456'::TIMESTAMP,"
    " '2016-11-04T13:51:30.123456+02:00'::TIMESTAMPTZ, '2016-11-04'::DATE, 'infinity'::DATE, '-infinity'::DATE,"
    " '13:51:30'::TIME, '13:51:30.123'::TIME, '24:00:00'::TIME, '13:51:30.123789+02:00'::TIMETZ,"
    " '13:51:30.123+02:00'::TIMETZ, 'P1Y2M3DT4H5M6.78S'::INTERVAL, '21016-11-04T13:51:30.123456'::TIMESTAMP,"
    " '21016-11-04T13:51:30.123457'::TIMESTAMP, '21016-11-04T13:51:30.124'::TIMESTAMP,"
    " '21016-11-04T13:51:30.123456+07:00'::TIMESTAMPTZ, '294247-01-01T23:59:59.999999'::TIMESTAMP,"
    " '4713-12-31T23:59:59.999999 BC'::TIMESTAMP, '294247-01-01T23:59:59.999999+00:00'::TIMESTAMPTZ,"
    " '4714-12-31T23:59:59.999999Z BC'::TIMESTAMPTZ, 'infinity'::TIMESTAMP, '-infinity'::TIMESTAMP,"
    " 'infinity'::TIMESTAMPTZ, '-infinity'::TIMESTAMPTZ, '21016-11-04T13:51:30.000000+07:00'::TIMESTAMPTZ)"
)
RANGE = (
    "INSERT INTO range_table (unbounded_exclusive_tsrange, bounded_inclusive_tsrange, unbounded_exclusive_tstzrange,"
    " bounded_inclusive_tstzrange, unbounded_exclusive_daterange, bounded_exclusive_daterange, int4_number_range,"
    " numerange, int8_number_range) VALUES ('[2019-03-31 15:30:00, infinity)',"
    " '[2019-03-31 15:30:00, 2019-04-30 15:30:00]', '[2017-06-05 11:29:12.549426+00,)',"
    " '[2017-06-05 11:29:12.549426+00, 2017-06-05 12:34:56.789012+00]', '[2019-03-31, infinity)',"
    " '[2019-03-31, 2019-04-30)', '[1000,6000)', '[5.3,6.3)', '[1000000,6000000)')"
)
ARRAY = (
    "INSERT INTO array_table (int_array, bigint_array, text_array, char_array, varchar_array, date_array,"
    " numeric_array, varnumeric_array, citext_array, inet_array, cidr_array, macaddr_array, tsrange_array,"
    " tstzrange_array, daterange_array, int4range_array, numerange_array, int8range_array, uuid_array, json_array,"
    " jsonb_array, oid_array) VALUES ('{1,2,3}', '{1550166368505037572}', '{\"one\",\"two\",\"three\"}',"
    ' \'{"cone","ctwo","cthree"}\', \'{"vcone","vctwo","vcthree"}\', \'{2016-11-04,2016-11-05,2016-11-06}\','
    " '{1.2,3.4,5.6}', '{1.1,2.22,3.333}', '{\"four\",\"five\",\"six\"}',"
    ' \'{"192.168.2.0/12","192.168.1.1","192.168.0.2/1"}\','
    ' \'{"192.168.100.128/25", "192.168.0.0/25", "192.168.1.0/24"}\','
    ' \'{"08:00:2b:01:02:03", "08-00-2b-01-02-03", "08002b:010203"}\','
    ' \'{"[2019-03-31 15:30:00, infinity)", "[2019-03-31 15:30:00, 2019-04-30 15:30:00]"}\','
    ' \'{"[2017-06-05 11:29:12.549426+00,)", "[2017-06-05 11:29:12.549426+00, 2017-06-05 12:34:56.789012+00]"}\','
    ' \'{"[2019-03-31, infinity)", "[2019-03-31, 2019-04-30)"}\', \'{"[1,6)", "[1,4)"}\','
    ' \'{"[5.3,6.3)", "[10.0,20.0)"}\', \'{"[1000000,6000000)", "[5000,9000)"}\','
    ' \'{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "f0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}\','
    ' array[\'{"bar": "baz"}\',\'{"foo": "qux"}\']::json[], array[\'{"bar": "baz"}\',\'{"foo": "qux"}\']::jsonb[],'
    " '{3,4000000000}')"
)
ARRAY_NULLS = (
    "INSERT INTO array_table_with_nulls (int_array, bigint_array, text_array, date_array, numeric_array,"
    " varnumeric_array, citext_array, inet_array, cidr_array, macaddr_array, tsrange_array, tstzrange_array,"
    " daterange_array, int4range_array, numerange_array, int8range_array, uuid_array, json_array, jsonb_array)"
    " VALUES (" + ", ".join(["null"] * 19) + ")"
)
QUOTED = 'INSERT INTO "Quoted_"" . Schema"."Quoted_"" . Table" ("Quoted_"" . Text_Column") VALUES (\'some text\')'
CUSTOM = (
    "INSERT INTO custom_table (lt, i, n, lt_array) VALUES ('Top.Collections.Pictures.Astronomy.Galaxies',"
    " '978-0-393-04002-9', NULL, '{\"Ship.Frigate\",\"Ship.Destroyer\"}')"
)
HSTORE = 'INSERT INTO hstore_table (hs) VALUES (\'"key" => "val"\'::hstore)'
HSTORE_MULTIPLE = (
    'INSERT INTO hstore_table_mul (hs, hsarr) VALUES (\'"key1" => "val1","key2" => "val2","key3" => "val3"\','
    ' array[\'"key4" => "val4","key5" => NULL\'::hstore, \'"key6" => "val6"\'])'
)
HSTORE_NULL = 'INSERT INTO hstore_table_with_null (hs) VALUES (\'"key1" => "val1","key2" => NULL\')'
HSTORE_SPECIAL = 'INSERT INTO hstore_table_with_special (hs) VALUES (\'"key_#1" => "val 1","key 2" =>" ##123 78"\')'
WITHOUT_PK = "insert into table_without_pk values(1, 1000)"
NOT_NULL = (
    "INSERT INTO not_null_table VALUES (default, 30, '2019-02-10 11:34:58', '2019-02-10 11:35:00', '10:20:11',"
    " '10:20:12', '2019-02-01', '$20', B'101', 32766, 2147483646, 9223372036854775806, 3.14, true, 3.14768, 1234.56,"
    " 'Test', '(0,0),(1,1)', '<(0,0),1>', '01:02:03', '{0,1,2}', '((0,0),(1,1))', '((0,0),(0,1),(0,2))', '(1,1)',"
    " '((0,0),(0,1),(1,1))', 'a', 'hello world', '{\"key\": 123}', '<doc><item>abc</item></doc>',"
    " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', B'101', '192.168.1.100', '192.168.1', '08:00:2b:01:02:03')"
)

# -- schemas, from Debezium's logical names -------------------------------------------------------------------


def _named(b: SchemaBuilder, name: str) -> SchemaBuilder:
    return b.name(name).version(1)


def opt(b: SchemaBuilder) -> Schema:
    return b.optional().build()


def micro_timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), "io.debezium.time.MicroTimestamp")


def timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), "io.debezium.time.Timestamp")


def zoned_timestamp() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.time.ZonedTimestamp")


def zoned_time() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.time.ZonedTime")


def date() -> SchemaBuilder:
    return _named(SchemaBuilder.int32(), "io.debezium.time.Date")


def time_ms() -> SchemaBuilder:
    return _named(SchemaBuilder.int32(), "io.debezium.time.Time")


def micro_time() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), "io.debezium.time.MicroTime")


def micro_duration() -> SchemaBuilder:
    return _named(SchemaBuilder.int64(), "io.debezium.time.MicroDuration")


def interval() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.time.Interval")


def json_() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.data.Json")


def xml() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.data.Xml")


def uuid() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.data.Uuid")


def ltree() -> SchemaBuilder:
    return _named(SchemaBuilder.string(), "io.debezium.data.Ltree")


def bits(length: int) -> SchemaBuilder:
    return _named(SchemaBuilder.bytes(), "io.debezium.data.Bits").parameter("length", str(length))


def connect_decimal(scale: int, precision: int | None = None) -> SchemaBuilder:
    b = SchemaBuilder.bytes().name("org.apache.kafka.connect.data.Decimal").version(1)
    b.parameter("scale", str(scale))
    if precision is not None:
        b.parameter("connect.decimal.precision", str(precision))
    return b


def variable_scale_decimal() -> SchemaBuilder:
    return (
        SchemaBuilder.struct()
        .name("io.debezium.data.VariableScaleDecimal")
        .version(1)
        .doc("Variable scaled decimal")
        .field("scale", Schema.INT32_SCHEMA)
        .field("value", Schema.BYTES_SCHEMA)
    )


def point() -> SchemaBuilder:
    return (
        SchemaBuilder.struct()
        .name("io.debezium.data.geometry.Point")
        .version(1)
        .doc("Geometry (POINT)")
        .field("x", Schema.FLOAT64_SCHEMA)
        .field("y", Schema.FLOAT64_SCHEMA)
        .field("wkb", Schema.OPTIONAL_BYTES_SCHEMA)
        .field("srid", Schema.OPTIONAL_INT32_SCHEMA)
    )


def array(element: Schema) -> Schema:
    return SchemaBuilder.array(element).optional().build()


def hstore_map() -> Schema:
    return SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).optional().build()


# -- values -----------------------------------------------------------------------------------------------------


class F32(float):
    """A Java float: compared after rounding the actual value to 32 bits."""


def f32(x: float) -> F32:
    return F32(struct.unpack("<f", struct.pack("<f", x))[0])


def epoch_days(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (years past 9999 included)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def micros(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> int:
    return ((epoch_days(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1_000_000 + s * 1_000_000 + us


def time_micros(h: int, m: int, s: int, us: int = 0) -> int:
    return ((h * 60 + m) * 60 + s) * 1_000_000 + us


DAYS_PER_MONTH_AVG = 365.25 / 12.0


def duration_micros(years: int, months: int, days: int, hours: int, minutes: int, seconds: float, us: int = 0) -> int:
    """Debezium's MicroDuration.durationMicros, in double arithmetic as Java does it."""
    number_of_days = (years * 12 + months) * DAYS_PER_MONTH_AVG + days
    number_of_seconds = (((number_of_days * 24 + hours) * 60) + minutes) * 60 + seconds
    return int(number_of_seconds * 1e6 + us)


def unscaled(value: str) -> bytes:
    """Java's BigDecimal(value).unscaledValue().toByteArray(): minimal big-endian two's complement."""
    n = int(decimal.Decimal(value).scaleb(-decimal.Decimal(value).as_tuple().exponent))  # type: ignore[operator]
    length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
    return n.to_bytes(length, "big", signed=True)


def vsd(value: str) -> Struct:
    exp = decimal.Decimal(value).as_tuple().exponent
    scale = -exp if isinstance(exp, int) and exp < 0 else 0
    return Struct(variable_scale_decimal().build()).put("scale", scale).put("value", unscaled(value))


def point_value(x: float, y: float, optional: bool = True) -> Struct:
    schema = opt(point()) if optional else point().build()
    wkb = b"\x01" + struct.pack("<Idd", 1, x, y)
    return Struct(schema).put("x", x).put("y", y).put("wkb", wkb)


# -- what a field must hold -------------------------------------------------------------------------------------

Check = Callable[[Any], bool]


@dataclass(frozen=True)
class Expect:
    """One field Debezium's tests check: its schema (None: not checked) and its value (or a check of it)."""

    field: str
    schema: Schema | None
    value: Any
    check: Check | None = None

    def problems(self, row: Struct) -> list[str]:
        out = []
        f = row.schema.field(self.field)
        if f is None:
            return [f"{self.field}: missing from the schema (fields: {[x.name for x in row.schema.fields]})"]
        if self.schema is not None and not same_schema(f.schema, self.schema):
            out.append(f"{self.field}: schema {describe(f.schema)} != Debezium's {describe(self.schema)}")
        actual = row.get_without_default(self.field)
        ok = self.check(actual) if self.check is not None else same_value(self.value, actual)
        if not ok:
            out.append(f"{self.field}: value {actual!r} != Debezium's {self.value!r}")
        return out


def describe(s: Schema) -> str:
    parts = [s.type.name, s.name or "", "optional" if s.optional else "required"]
    if s.parameters:
        parts.append(str(dict(sorted(s.parameters.items()))))
    if s.default_value is not None:
        parts.append(f"default={s.default_value!r}")
    if s.value_schema is not None:
        parts.append(f"of {describe(s.value_schema)}")
    return "<" + " ".join(p for p in parts if p) + ">"


def same_schema(a: Schema, b: Schema) -> bool:
    return (
        a.type is b.type
        and a.optional == b.optional
        and a.name == b.name
        and a.version == b.version
        and (a.parameters or {}) == (b.parameters or {})
        and same_value(b.default_value, a.default_value)
        and len(a.fields) == len(b.fields)
        and all(x.name == y.name and same_schema(x.schema, y.schema) for x, y in zip(a.fields, b.fields, strict=False))
        and (a.value_schema is None) == (b.value_schema is None)
        and (a.value_schema is None or same_schema(a.value_schema, b.value_schema))  # type: ignore[arg-type]
        and (a.key_schema is None or same_schema(a.key_schema, b.key_schema))  # type: ignore[arg-type]
    )


def same_value(expected: Any, actual: Any) -> bool:
    """Java's equals as Debezium's assertions apply it: BigDecimal compares scale too, floats by bits."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, F32):
        if not isinstance(actual, float):
            return False
        a = f32(actual)
        return (a != a and expected != expected) or a == expected
    if isinstance(expected, float):
        return isinstance(actual, float) and ((expected != expected and actual != actual) or expected == actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, decimal.Decimal):
        return isinstance(actual, decimal.Decimal) and expected.as_tuple() == actual.as_tuple()
    if isinstance(expected, bytes):
        return isinstance(actual, (bytes, bytearray, memoryview)) and bytes(actual) == expected
    if isinstance(expected, Struct):
        return isinstance(actual, Struct) and all(
            same_value(expected.get_without_default(f.name), actual.get_without_default(f.name))
            for f in expected.schema.fields
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(same_value(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(same_value(expected[k], actual[k]) for k in expected)
        )
    return type(expected) is type(actual) and expected == actual


def E(field: str, schema: Schema | SchemaBuilder | None, value: Any, check: Check | None = None) -> Expect:
    return Expect(field, schema.build() if isinstance(schema, SchemaBuilder) else schema, value, check)


# -- per table ----------------------------------------------------------------------------------------------------


def numeric() -> list[Expect]:
    return [
        E("si", Schema.OPTIONAL_INT16_SCHEMA, 1),
        E("i", Schema.OPTIONAL_INT32_SCHEMA, 123456),
        E("bi", Schema.OPTIONAL_INT64_SCHEMA, 1234567890123),
        E("r", Schema.OPTIONAL_FLOAT32_SCHEMA, f32(3.3)),
        E("db", Schema.OPTIONAL_FLOAT64_SCHEMA, 4.44),
        E("r_int", Schema.OPTIONAL_FLOAT32_SCHEMA, f32(3.0)),
        E("db_int", Schema.OPTIONAL_FLOAT64_SCHEMA, 4.0),
        E("ss", SchemaBuilder.int16().default_value(0), 1),
        E("bs", SchemaBuilder.int64().default_value(0), 123),
        E("b", Schema.OPTIONAL_BOOLEAN_SCHEMA, True),
        E("o", Schema.OPTIONAL_INT64_SCHEMA, 4_000_000_000),
        E("r_nan", Schema.OPTIONAL_FLOAT32_SCHEMA, f32(float("nan"))),
        E("db_nan", Schema.OPTIONAL_FLOAT64_SCHEMA, float("nan")),
        E("r_pinf", Schema.OPTIONAL_FLOAT32_SCHEMA, f32(float("inf"))),
        E("db_pinf", Schema.OPTIONAL_FLOAT64_SCHEMA, float("inf")),
        E("r_ninf", Schema.OPTIONAL_FLOAT32_SCHEMA, f32(float("-inf"))),
        E("db_ninf", Schema.OPTIONAL_FLOAT64_SCHEMA, float("-inf")),
    ]


def decimals_precise() -> list[Expect]:
    D = decimal.Decimal
    return [
        E("d", opt(connect_decimal(2, 3)), D("1.10")),
        E("dzs", opt(connect_decimal(0, 4)), D("10")),
        E("dvs", opt(variable_scale_decimal()), vsd("10.1111")),
        E("d_nn", connect_decimal(2, 3), D("3.30")),
        E("n", opt(connect_decimal(4, 6)), D("22.2200")),
        E("nzs", opt(connect_decimal(0, 4)), D("22")),
        E("nvs", opt(variable_scale_decimal()), vsd("22.2222")),
        E("d_int", opt(connect_decimal(2, 3)), D("1.00")),
        E("dvs_int", opt(variable_scale_decimal()), vsd("10")),
        E("n_int", opt(connect_decimal(4, 6)), D("22.0000")),
        E("nvs_int", opt(variable_scale_decimal()), vsd("22")),
    ]


def _strings(values: dict[str, str]) -> list[Expect]:
    return [E(k, Schema.OPTIONAL_STRING_SCHEMA, v) for k, v in values.items()]


def decimals_string() -> list[Expect]:
    head = {"d": "1.10", "dzs": "10", "dvs": "10.1111", "n": "22.2200", "nzs": "22", "nvs": "22.2222"}
    head |= {"d_int": "1.00", "dzs_int": "10", "dvs_int": "10", "n_int": "22.0000", "nzs_int": "22", "nvs_int": "22"}
    nan = {k: "NAN" for k in ("d_nan", "dzs_nan", "dvs_nan", "n_nan", "nzs_nan", "nvs_nan")}
    return _strings(head | nan)


def decimals_string_infinity() -> list[Expect]:
    head = decimals_string()[:12]
    return [*head, *_strings({"dvs_nan": "POSITIVE_INFINITY", "nvs_nan": "NEGATIVE_INFINITY"})]


def decimals_double() -> list[Expect]:
    values = {"d": 1.1, "dzs": 10.0, "dvs": 10.1111, "n": 22.22, "nzs": 22.0, "nvs": 22.2222}
    values |= {k: float("nan") for k in ("d_nan", "dzs_nan", "dvs_nan", "n_nan", "nzs_nan", "nvs_nan")}
    return [E(k, Schema.OPTIONAL_FLOAT64_SCHEMA, v) for k, v in values.items()]


def strings() -> list[Expect]:
    return [
        *_strings({"vc": "\u017e\u0161", "vcv": "bb", "ch": "cdef", "c": "abc", "t": "some text"}),
        E("b", Schema.OPTIONAL_BYTES_SCHEMA, b"\x00\x01\x02"),
        E("bnn", Schema.BYTES_SCHEMA, b"\x03\x04\x05"),
        E("ct", Schema.OPTIONAL_STRING_SCHEMA, "Hello World"),
    ]


def money(value: str | None) -> list[Expect]:
    return [E("csh", opt(connect_decimal(2)), None if value is None else decimal.Decimal(value))]


def bit_types() -> list[Expect]:
    return [
        E("ba", Schema.OPTIONAL_BYTES_SCHEMA, b"\x01\x02\x03"),
        E("bol", Schema.OPTIONAL_BOOLEAN_SCHEMA, False),
        E("bol2", Schema.OPTIONAL_BOOLEAN_SCHEMA, True),
        E("bs", opt(bits(2)), b"\x03"),
        E("bs7", opt(bits(7)), b"\x40"),
        E("bv1", Schema.OPTIONAL_BOOLEAN_SCHEMA, True),  # Debezium 3.6: BIT VARYING(1) is a boolean
        E("bv", opt(bits(2)), b""),  # '00': no bit set, no byte
        E("bv2", opt(bits(24)), b"\x01\x02\x03"),
        E("bvl", opt(bits(64)), b"\x00" * 7 + b"\x80"),
        E("bvunlimited1", opt(bits(2**31 - 1)), b"\x05"),
        E("bvunlimited2", opt(bits(2**31 - 1)), bytes([1, 2, 35, 256 - 38, 1])),
    ]


def _tstz_range_check(text: Any) -> bool:
    """Debezium's check of a tstzrange: the bounds name the same instants, whatever the zone written."""
    if not isinstance(text, str):
        return False
    bounds = re.findall(r'"([^"]+)"', text)
    want = [datetime.datetime(2017, 6, 5, 11, 29, 12, 549426, datetime.UTC)]
    if len(bounds) == 2:
        want.append(datetime.datetime(2017, 6, 5, 12, 34, 56, 789012, datetime.UTC))
    if len(bounds) != len(want):
        return False
    parsed = [datetime.datetime.fromisoformat(b + (":00" if re.search(r"[+-]\d\d$", b) else "")) for b in bounds]
    return parsed == want


def ranges() -> list[Expect]:
    return [
        *_strings(
            {
                "unbounded_exclusive_tsrange": '["2019-03-31 15:30:00",infinity)',
                "bounded_inclusive_tsrange": '["2019-03-31 15:30:00","2019-04-30 15:30:00"]',
            }
        ),
        E(
            "unbounded_exclusive_tstzrange",
            Schema.OPTIONAL_STRING_SCHEMA,
            "[<2017-06-05 11:29:12.549426Z>,)",
            _tstz_range_check,
        ),
        E(
            "bounded_inclusive_tstzrange",
            Schema.OPTIONAL_STRING_SCHEMA,
            "[<2017-06-05 11:29:12.549426Z>,<2017-06-05 12:34:56.789012Z>]",
            _tstz_range_check,
        ),
        *_strings(
            {
                "unbounded_exclusive_daterange": "[2019-03-31,infinity)",
                "bounded_exclusive_daterange": "[2019-03-31,2019-04-30)",
                "int4_number_range": "[1000,6000)",
                "numerange": "[5.3,6.3)",
                "int8_number_range": "[1000000,6000000)",
            }
        ),
    ]


def date_times() -> list[Expect]:
    ts = micros(2016, 11, 4, 13, 51, 30, 123456)
    large = micros(21016, 11, 4, 13, 51, 30)
    return [
        E("ts", opt(micro_timestamp()), ts),
        E("tsneg", opt(micro_timestamp()), micros(1936, 10, 25, 22, 10, 12, 608000)),
        E("ts_ms", opt(timestamp()), ts // 1000),
        E("ts_us", opt(micro_timestamp()), ts),
        E("tz", opt(zoned_timestamp()), "2016-11-04T11:51:30.123456Z"),
        E("date", opt(date()), epoch_days(2016, 11, 4)),
        E("ti", opt(micro_time()), time_micros(13, 51, 30)),
        E("tip", opt(time_ms()), time_micros(13, 51, 30, 123000) // 1000),
        E("ttf", opt(micro_time()), 24 * 3600 * 1_000_000),
        E("ttz", opt(zoned_time()), "11:51:30.123789Z"),
        E("tptz", opt(zoned_time()), "11:51:30.123Z"),
        E("it", opt(micro_duration()), duration_micros(1, 2, 3, 4, 5, 6, 780000)),
        E("ts_large", opt(micro_timestamp()), large + 123456),
        E("ts_large_us", opt(micro_timestamp()), large + 123457),
        E("ts_large_ms", opt(timestamp()), (large + 124000) // 1000),
        E("tz_large", opt(zoned_timestamp()), "+21016-11-04T06:51:30.123456Z"),
        E("ts_max", opt(micro_timestamp()), 9223371331200000000 - 1),
        E("ts_min", opt(micro_timestamp()), -210831897600000001),
        E("tz_max", opt(zoned_timestamp()), "+294247-01-01T23:59:59.999999Z"),
        E("tz_min", opt(zoned_timestamp()), "-4713-12-31T23:59:59.999999Z"),
        E("ts_pinf", opt(micro_timestamp()), 9223372036825200000),  # pgjdbc's DATE_POSITIVE_INFINITY
        E("ts_ninf", opt(micro_timestamp()), -9223372036832400000),
        E("tz_pinf", opt(zoned_timestamp()), "infinity"),
        E("tz_ninf", opt(zoned_timestamp()), "-infinity"),
        E("tz_zero", opt(zoned_timestamp()), "+21016-11-04T06:51:30.000000Z"),
    ]


def date_times_adaptive_time_microseconds() -> list[Expect]:
    keep = {"ts", "tsneg", "ts_ms", "ts_us", "tz", "date", "ti", "ttz", "ts_large", "ts_large_us", "ts_large_ms"}
    out = [e for e in date_times() if e.field in keep]
    return [*out, E("it", opt(micro_duration()), duration_micros(1, 2, 3, 4, 5, 6.78))]


def interval_string() -> list[Expect]:
    return [E("it", opt(interval()), "P1Y2M3DT4H5M6.78S")]


def texts() -> list[Expect]:
    return [
        E("j", opt(json_()), '{"bar": "baz"}'),
        E("jb", opt(json_()), '{"bar": "baz"}'),
        E("x", opt(xml()), "<foo>bar</foo><foo>bar</foo>"),
        E("u", opt(uuid()), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ]


def geometry() -> list[Expect]:
    return [E("p", opt(point()), point_value(1.0, 1.0))]


def network() -> list[Expect]:
    return [E("i", Schema.OPTIONAL_STRING_SCHEMA, "192.168.2.0/12")]


def cidr() -> list[Expect]:
    return [E("i", Schema.OPTIONAL_STRING_SCHEMA, "192.168.100.128/25")]


def macaddr() -> list[Expect]:
    return [E("m", Schema.OPTIONAL_STRING_SCHEMA, "08:00:2b:01:02:03")]


def arrays() -> list[Expect]:
    s = Schema.OPTIONAL_STRING_SCHEMA
    D = decimal.Decimal
    elem_vsd = opt(variable_scale_decimal())
    varnum = [
        Struct(elem_vsd).put("scale", sc).put("value", unscaled(v)) for v, sc in (("1.1", 1), ("2.22", 2), ("3.333", 3))
    ]
    return [
        E("int_array", array(Schema.OPTIONAL_INT32_SCHEMA), [1, 2, 3]),
        E("bigint_array", array(Schema.OPTIONAL_INT64_SCHEMA), [1550166368505037572]),
        E("text_array", array(s), ["one", "two", "three"]),
        E("char_array", array(s), ["cone      ", "ctwo      ", "cthree    "]),
        E("varchar_array", array(s), ["vcone", "vctwo", "vcthree"]),
        E("date_array", array(opt(date())), [epoch_days(2016, 11, d) for d in (4, 5, 6)]),
        E("numeric_array", array(opt(connect_decimal(2, 10))), [D("1.20"), D("3.40"), D("5.60")]),
        E("varnumeric_array", array(elem_vsd), varnum),
        E("citext_array", array(s), ["four", "five", "six"]),
        E("inet_array", array(s), ["192.168.2.0/12", "192.168.1.1", "192.168.0.2/1"]),
        E("cidr_array", array(s), ["192.168.100.128/25", "192.168.0.0/25", "192.168.1.0/24"]),
        E("macaddr_array", array(s), ["08:00:2b:01:02:03"] * 3),
        E(
            "tsrange_array",
            array(s),
            ['["2019-03-31 15:30:00",infinity)', '["2019-03-31 15:30:00","2019-04-30 15:30:00"]'],
        ),
        E(
            "tstzrange_array",
            array(s),
            "two tstzranges",
            lambda v: isinstance(v, list) and len(v) == 2 and all(_tstz_range_check(x) for x in v),
        ),
        E("daterange_array", array(s), ["[2019-03-31,infinity)", "[2019-03-31,2019-04-30)"]),
        E("int4range_array", array(s), ["[1,6)", "[1,4)"]),
        E("numerange_array", array(s), ["[5.3,6.3)", "[10.0,20.0)"]),
        E("int8range_array", array(s), ["[1000000,6000000)", "[5000,9000)"]),
        E(
            "uuid_array",
            array(opt(uuid())),
            ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "f0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
        ),
        E("json_array", array(opt(json_())), ['{"bar": "baz"}', '{"foo": "qux"}']),
        E("jsonb_array", array(opt(json_())), ['{"bar": "baz"}', '{"foo": "qux"}']),
        E("oid_array", array(Schema.OPTIONAL_INT64_SCHEMA), [3, 4_000_000_000]),
    ]


def arrays_with_nulls() -> list[Expect]:
    s = Schema.OPTIONAL_STRING_SCHEMA
    schemas = {
        "int_array": array(Schema.OPTIONAL_INT32_SCHEMA),
        "bigint_array": array(Schema.OPTIONAL_INT64_SCHEMA),
        "text_array": array(s),
        "char_array": array(s),
        "varchar_array": array(s),
        "date_array": array(opt(date())),
        "numeric_array": array(opt(connect_decimal(2, 10))),
        "citext_array": array(s),
        "inet_array": array(s),
        "cidr_array": array(s),
        "macaddr_array": array(s),
        "tsrange_array": array(s),
        "tstzrange_array": array(s),
        "daterange_array": array(s),
        "int4range_array": array(s),
        "numerange_array": array(s),
        "int8range_array": array(s),
        "uuid_array": array(opt(uuid())),
    }
    return [E(k, v, None) for k, v in schemas.items()]


def quoted() -> list[Expect]:
    return [E('Quoted_" . Text_Column', Schema.OPTIONAL_STRING_SCHEMA, "some text")]


def custom_types() -> list[Expect]:
    return [
        E("lt", opt(ltree()), "Top.Collections.Pictures.Astronomy.Galaxies"),
        E("i", Schema.STRING_SCHEMA, "0-393-04002-X"),
        E("n", Schema.OPTIONAL_STRING_SCHEMA, None),
        E("lt_array", array(opt(ltree())), ["Ship.Frigate", "Ship.Destroyer"]),
    ]


def hstore_json(table: str) -> list[Expect]:
    json_schema = opt(json_())
    if table == "hstore_table":
        return [E("hs", json_schema, '{"key":"val"}')]
    if table == "hstore_table_mul":
        return [
            E("hs", json_schema, '{"key1":"val1","key2":"val2","key3":"val3"}'),
            # Debezium's order comes from a Java HashMap: key5 before key4
            E("hsarr", array(json_schema), ['{"key5":null,"key4":"val4"}', '{"key6":"val6"}']),
        ]
    if table == "hstore_table_with_null":
        return [E("hs", json_schema, '{"key1":"val1","key2":null}')]
    return [E("hs", json_schema, '{"key_#1":"val 1","key 2":" ##123 78"}')]


def hstore_map_mode(table: str) -> list[Expect]:
    if table == "hstore_table":
        return [E("hs", hstore_map(), {"key": "val"})]
    if table == "hstore_table_mul":
        return [
            E("hs", hstore_map(), {"key1": "val1", "key2": "val2", "key3": "val3"}),
            E("hsarr", array(hstore_map()), [{"key4": "val4", "key5": None}, {"key6": "val6"}]),
        ]
    if table == "hstore_table_with_null":
        return [E("hs", hstore_map(), {"key1": "val1", "key2": None})]
    return [E("hs", hstore_map(), {"key_#1": "val 1", "key 2": " ##123 78"})]


def bytea(mode: str) -> list[Expect]:
    if mode == "bytes":
        return [
            E("ba", Schema.OPTIONAL_BYTES_SCHEMA, b"\x01\x02\x03"),
            E("bytea_array", array(Schema.OPTIONAL_BYTES_SCHEMA), [b"\x00\x01\x02", b"\x03\x04\x05"]),
        ]
    encode = {
        "base64": lambda b: base64.b64encode(b).decode(),
        "base64-url-safe": lambda b: base64.urlsafe_b64encode(b).decode(),
        "hex": lambda b: b.hex(),
    }[mode]
    return [
        E("ba", Schema.OPTIONAL_STRING_SCHEMA, encode(b"\x01\x02\x03")),
        E("bytea_array", array(Schema.OPTIONAL_STRING_SCHEMA), [encode(b"\x00\x01\x02"), encode(b"\x03\x04\x05")]),
    ]


def unknown_circle(mode: str) -> list[Expect]:
    """include.unknown.datatypes=true: a circle is the text pgjdbc's PGcircle writes, as binary.handling.mode says."""
    text = b"<(10.0,20.0),10.0>"
    value = {
        "bytes": text,
        "base64": "PCgxMC4wLDIwLjApLDEwLjA+",
        "base64-url-safe": "PCgxMC4wLDIwLjApLDEwLjA-",
        "hex": "3c2831302e302c32302e30292c31302e303e",
    }[mode]
    schema = Schema.OPTIONAL_BYTES_SCHEMA if mode == "bytes" else Schema.OPTIONAL_STRING_SCHEMA
    return [E("ccircle", schema, value)]


def without_pk() -> list[Expect]:
    return [E("id", SchemaBuilder.int32().default_value(0), 1), E("val", Schema.OPTIONAL_INT32_SCHEMA, 1000)]


def _source_type(schema: SchemaBuilder, type_name: str, length: int, scale: int, column: str) -> Schema:
    """Debezium's PropagateSourceMetadataToSchemaParameter parameters on an optional field."""
    schema.parameter("__debezium.source.column.type", type_name)
    schema.parameter("__debezium.source.column.length", str(length))
    schema.parameter("__debezium.source.column.scale", str(scale))
    schema.parameter("__debezium.source.column.name", column)
    return schema.optional().build()


def strings_with_source_type() -> list[Expect]:
    """column.propagate.source.type=.*vc.*"""
    return [
        E("vc", _source_type(SchemaBuilder.string(), "VARCHAR", 2, 0, "vc"), "\u017e\u0161"),
        E("vcv", _source_type(SchemaBuilder.string(), "VARCHAR", 2, 0, "vcv"), "bb"),
        *[e for e in strings() if e.field not in ("vc", "vcv", "ct")],
    ]


def decimals_double_with_source_type() -> list[Expect]:
    """column.propagate.source.type=.*(d|dzs) and decimal.handling.mode=double."""
    return [
        E("d", _source_type(SchemaBuilder.float64(), "NUMERIC", 3, 2, "d"), 1.1),
        E("dzs", _source_type(SchemaBuilder.float64(), "NUMERIC", 4, 0, "dzs"), 10.0),
        *[
            E(k, Schema.OPTIONAL_FLOAT64_SCHEMA, v)
            for k, v in {"dvs": 10.1111, "n": 22.22, "nzs": 22.0, "nvs": 22.2222}.items()
        ],
    ]


# RecordsSnapshotProducerIT.shouldSnapshotDomainTypesLikeBaseTypes / RecordsStreamProducerIT's alias tests:
# a domain maps as its base type, with the domain's own modifier (bit2 = bit(3) → Bits(3)).
_DOMAIN_BASES = {
    "bit": "BIT(3)",
    "smallint": "smallint",
    "integer": "integer",
    "bigint": "bigint",
    "real": "real",
    "float8": "float8",
    "numeric": "numeric(6,2)",
    "bool": "BOOL DEFAULT false",
    "string": "varchar(25) DEFAULT NULL",
    "date": "date",
    "time": "time",
    "timetz": "timetz",
    "timestamp": "timestamp",
    "timestamptz": "timestamptz",
    "timewottz": "time without time zone",
    "box": "box",
    "circle": "circle",
    "interval": "interval",
    "line": "line",
    "lseg": "lseg",
    "path": "path",
    "point": "point",
    "polygon": "polygon",
    "char": "char",
    "text": "text",
    "json": "json",
    "xml": "xml",
    "uuid": "uuid",
    "varbit": "varbit(3)",
    "inet": "inet",
    "cidr": "cidr",
    "macaddr": "macaddr",
}
_DOMAIN_VALUES = {
    "bit": "B'101'",
    "smallint": "1",
    "integer": "1",
    "bigint": "1000",
    "real": "3.14",
    "float8": "3.14",
    "numeric": "1234.12",
    "bool": "true",
    "string": "'hello'",
    "date": "'2019-10-02'",
    "time": "'01:02:03'",
    "timetz": "'01:02:03.123789Z'",
    "timestamp": "'2019-10-02T01:02:03.123456'",
    "timestamptz": "'2019-10-02T13:51:30.123456+02:00'::TIMESTAMPTZ",
    "timewottz": "'01:02:03'",
    "box": "'(0,0),(1,1)'",
    "circle": "'10,4,10'",
    "interval": "'1 year 2 months 3 days 4 hours 5 minutes 6 seconds'",
    "line": "'(0,0),(0,1)'",
    "lseg": "'((0,0),(0,1))'",
    "path": "'((0,0),(0,1),(0,2))'",
    "point": "'(1,1)'",
    "polygon": "'((0,0),(0,1),(1,0),(0,0))'",
    "char": "'a'",
    "text": "'Hello World'",
    "json": '\'{"key": "value"}\'',
    "xml": "XML('<foo>Hello</foo>')",
    "uuid": "'40e6215d-b5c6-4896-987c-f30f3678f608'",
    "varbit": "B'101'",
    "inet": "'192.168.0.1'",
    "cidr": "'192.168/24'",
    "macaddr": "'08:00:2b:01:02:03'",
}


def _domain(kind: str) -> str:
    return "timewotz2" if kind == "timewottz" else kind + "2"


DOMAIN_SETUP = "".join(f"CREATE DOMAIN {_domain(k)} AS {v};" for k, v in _DOMAIN_BASES.items()) + (
    "CREATE TABLE alias_table (pk SERIAL, "
    + ", ".join(
        f"{k}_base {_DOMAIN_BASES[k].split(' DEFAULT')[0]} NOT NULL, {k}_alias {_domain(k)} NOT NULL"
        for k in _DOMAIN_BASES
    )
    + ", PRIMARY KEY(pk));"
)
DOMAIN_ALIASES = (
    "INSERT INTO alias_table ("
    + ", ".join(f"{k}_base, {k}_alias" for k in _DOMAIN_VALUES)
    + ") VALUES ("
    + ", ".join(f"{v}, {v}" for v in _DOMAIN_VALUES.values())
    + ")"
)


def domain_aliases() -> list[Expect]:
    """decimal.handling.mode=double, include.unknown.datatypes=true: each base column and its domain alias."""
    text = {
        "box": b"(1.0,1.0),(0.0,0.0)",
        "circle": b"<(10.0,4.0),10.0>",
        "line": b"{-1.0,0.0,0.0}",
        "lseg": b"[(0.0,0.0),(0.0,1.0)]",
        "path": b"((0.0,0.0),(0.0,1.0),(0.0,2.0))",
        "polygon": b"((0.0,0.0),(0.0,1.0),(1.0,0.0),(0.0,0.0))",
    }
    each: dict[str, tuple[Schema | SchemaBuilder, Any]] = {
        "bit": (bits(3), b"\x05"),
        "smallint": (Schema.INT16_SCHEMA, 1),
        "integer": (Schema.INT32_SCHEMA, 1),
        "bigint": (Schema.INT64_SCHEMA, 1000),
        "real": (Schema.FLOAT32_SCHEMA, f32(3.14)),
        "float8": (Schema.FLOAT64_SCHEMA, 3.14),
        "numeric": (Schema.FLOAT64_SCHEMA, 1234.12),
        "bool": (Schema.BOOLEAN_SCHEMA, True),
        "string": (Schema.STRING_SCHEMA, "hello"),
        "date": (date(), epoch_days(2019, 10, 2)),
        "time": (micro_time(), time_micros(1, 2, 3)),
        "timetz": (zoned_time(), "01:02:03.123789Z"),
        "timestamp": (micro_timestamp(), micros(2019, 10, 2, 1, 2, 3, 123456)),
        "timestamptz": (zoned_timestamp(), "2019-10-02T11:51:30.123456Z"),
        "timewottz": (micro_time(), time_micros(1, 2, 3)),
        "interval": (micro_duration(), duration_micros(1, 2, 3, 4, 5, 6)),
        "point": (point(), point_value(1.0, 1.0, optional=False)),
        "char": (Schema.STRING_SCHEMA, "a"),
        "text": (Schema.STRING_SCHEMA, "Hello World"),
        "json": (json_(), '{"key": "value"}'),
        "xml": (xml(), "<foo>Hello</foo>"),
        "uuid": (uuid(), "40e6215d-b5c6-4896-987c-f30f3678f608"),
        "varbit": (bits(3), b"\x05"),
        "inet": (Schema.STRING_SCHEMA, "192.168.0.1"),
        "cidr": (Schema.STRING_SCHEMA, "192.168.0.0/24"),
        "macaddr": (Schema.STRING_SCHEMA, "08:00:2b:01:02:03"),
        **{k: (Schema.BYTES_SCHEMA, v) for k, v in text.items()},
    }
    # pk: the IT's one row is 1; here the streamed copy is row 2
    out = [E("pk", SchemaBuilder.int32().default_value(0), 1, lambda v: type(v) is int and v >= 1)]
    for k in _DOMAIN_BASES:
        schema, value = each[k]
        out += [E(f"{k}_base", schema, value), E(f"{k}_alias", schema, value)]
    return out
