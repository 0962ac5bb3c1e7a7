"""Values Debezium 3.6.1's binlog ITs assert, re-expressed against this connector's runs over the same scripts.

Each case names the IT it comes from, the run (debezium_scripts.KNOBS), the table, the row (in the
order the script inserts it) and the column. Every value is checked in the snapshot (`r`) and in
the binlog (`c` of the same row re-inserted while streaming), as the ITs check one or the other.
BinlogSourceTypeInSchemaIT's table is created while streaming, as in the IT (its values come from the DDL text).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cdc.api import SourceRecord, Type
from tests.debezium_material.mysql import statements
from tests.mysql.debezium_scripts import CONNECT_UNCAPTURABLE, RunCache, database_of, run_connector
from tests.mysql.harness import TaskRunner, connector_props, op
from tests.rig import MariaDbServer

D = decimal.Decimal
UTC = datetime.UTC


def f32(v: float) -> float:
    """Java's (double) (float) v."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


@dataclass(frozen=True)
class Case:
    it: str
    knob: str
    script: str
    table: str
    row: int
    column: str
    expected: Any
    type: Type | None = None  # the field's Connect type, where the IT checks it (getFloat32, getFloat64…)

    def __str__(self) -> str:
        return f"{self.it}:{self.knob}:{self.table}[{self.row}].{self.column}"


def _time(h: int, m: int, s: int, us: int = 0, sign: int = 1) -> int:
    return sign * (((h * 60 + m) * 60 + s) * 1_000_000 + us)


CASES: list[Case] = []


def _add(it: str, knob: str, script: str, table: str, row: int, values: dict[str, Any], type_: Type | None = None):
    CASES.extend(Case(it, knob, script, table, row, c, v, type_) for c, v in values.items())


# BinlogYearIT: two-digit years, with the connector's time adjuster (default) and without it.
_YEARS = {"y18": 2018, "y0018": 2018, "y2018": 2018, "d18": 17622, "d0018": 17622, "d2018": 17622,
          "dt18": 1_522_586_096_000, "dt0018": 1_522_586_096_000, "dt2018": 1_522_586_096_000,
          "y78": 1978, "y0078": 1978, "y1978": 1978, "d78": 3012, "d0078": 3012, "d1978": 3012,
          "dt78": 260_282_096_000, "dt0078": 260_282_096_000, "dt1978": 260_282_096_000}  # fmt: skip
_add("BinlogYearIT", "default", "year_test", "dbz_1143_year_test", 0, _YEARS)
# Without the adjuster the IT leaves dt0018/dt0078 out (before 1677 in its nanosecond arithmetic).
_NO_ADJUSTER = {k: v for k, v in _YEARS.items() if k not in ("dt0018", "dt0078")}
_add("BinlogYearIT", "adjuster=false", "year_test", "dbz_1143_year_test", 0,
     {**_NO_ADJUSTER, "d0018": -712863, "d0078": -690948})  # fmt: skip

# BinlogFloatIT: FLOAT is FLOAT32, FLOAT(M,D) and FLOAT(25+) FLOAT64.
_add("BinlogFloatIT", "default", "float_test", "DBZ3865", 0,
     {"f1": f32(5.6), "f4_23": f32(64.1), "f4_24": f32(64.1), "weight": f32(64.1234)}, Type.FLOAT32)  # fmt: skip
_add("BinlogFloatIT", "default", "float_test", "DBZ3865", 0,
     {"f2": f32(5.61), "f3": f32(30.12346), "f4_25": 64.1}, Type.FLOAT64)  # fmt: skip

# BinlogNumericColumnIT / BinlogDecimalColumnIT: NUMERIC and DECIMAL under each decimal.handling.mode.
for _script, _table in (("numeric_column_test", "dbz_751_numeric_column_test"),
                        ("decimal_column_test", "dbz_751_decimal_column_test")):  # fmt: skip
    _it = "BinlogNumericColumnIT" if "numeric" in _script else "BinlogDecimalColumnIT"
    _add(_it, "default", _script, _table, 0,
         {"rating1": D("123"), "rating2": D("123.4567"), "rating3": D("235"), "rating4": D("346")})  # fmt: skip
    _add(_it, "decimal=double", _script, _table, 0,
         {"rating1": 123.0, "rating2": 123.4567, "rating3": 235.0, "rating4": 346.0})  # fmt: skip
    _add(_it, "decimal=string", _script, _table, 0,
         {"rating1": "123", "rating2": "123.4567", "rating3": "235", "rating4": "346"})  # fmt: skip

# BinlogDecimalIT
_add("BinlogDecimalIT", "default", "decimal_test", "DBZ730", 0,
     {"A": D("1.33"), "B": D("-2.111"), "C": D("3.44400"), "D": None, "E": D("0.000000000000000000")})  # fmt: skip
_add("BinlogDecimalIT", "decimal=double", "decimal_test", "DBZ730", 0,
     {"A": 1.33, "B": -2.111, "C": 3.444, "D": None, "E": 0.0})  # fmt: skip
_add("BinlogDecimalIT", "decimal=string", "decimal_test", "DBZ730", 0,
     {"A": "1.33", "B": "-2.111", "C": "3.44400", "D": None, "E": "0.000000000000000000"})  # fmt: skip

# BinlogFixedLengthBinaryColumnIT (bytes mode): BINARY(16) padded with zero bytes.
for _i, _b64 in enumerate(["ZRrtCDkPSJOy8TaSPnt0AA==", "ZRrtCDkPSJOy8TaSPnt0qw==", "ZRrtCDkPSJOy8TaSPnt0AA==",
                           "AAAAAAAAAAAAAAAAAAAAAA=="]):  # fmt: skip
    _add("BinlogFixedLengthBinaryColumnIT", "default", "binary_column_test", "dbz_254_binary_column_test", _i,
         {"file_uuid": base64.b64decode(_b64)})  # fmt: skip

# BinlogConnectorIT.shouldConsumeAllEventsFromDatabaseUsingSnapshotAndHashedColumn… (connector_test_ro).
for _i, _hash in enumerate(["d540e71abf15be8b51c7967397ba359db27d6f6ae85a297fe8d0d7005ffd0e82",
                            "b1f1a1a63559c1d3a98bd7bb5c363d7e21a37463a7266bc2ff341eaef7ac8ef3",
                            "bbe1de7b1068bc8f86bbb19f432ce1d44fbd461339916f42544b3f7ebff674d6",
                            "ff21be44fb224e57d822ea9a51d343d77e4c49ac3dedd3d144024ac2012af0a1"]):  # fmt: skip
    _add("BinlogConnectorIT", "mask=hash", "connector_test_ro", "customers", _i, {"email": _hash})

# BinlogUnsignedIntegerIT (unsigned_integer_test), rows in insertion order, under both bigint modes
# (the ITs check the non-BIGINT tables under precise, the same mapping as long).
_U = "unsigned_integer_test"
_UNSIGNED_ROWS = {
    "dbz_228_tinyint_unsigned": [(255, 255, 127), (155, 155, -100), (0, 0, -128)],
    "dbz_228_smallint_unsigned": [(65535, 65535, 32767), (45535, 45535, -12767), (0, 0, -32768)],
    "dbz_228_mediumint_unsigned": [(16777215, 16777215, 8388607), (10777215, 10777215, -6388607), (0, 0, -8388608)],
    "dbz_integer_unsigned": [(4294967295, 4294967295, 2147483647), (3294967295, 3294967295, -1147483647),
                             (0, 0, -2147483648)],
}  # fmt: skip
for _table, _rows in _UNSIGNED_ROWS.items():
    for _i, _row in enumerate(_rows):
        _add(
            "BinlogUnsignedIntegerIT",
            "bigint=precise",
            _U,
            _table,
            _i,
            dict(zip(("c1", "c2", "c3"), _row, strict=True)),
        )
for _i, _row in enumerate([(4294967295, 2147483647), (3294967295, -1147483647), (0, -2147483648)]):
    _add("BinlogUnsignedIntegerIT", "bigint=precise", _U, "dbz_228_int_unsigned", _i,
         {"c1": _row[0], "c2": _row[0], "c3": _row[1], "c4": _row[0], "c5": _row[0], "c6": _row[1]})  # fmt: skip
for _i, (_big, _signed) in enumerate([("18446744073709551615", 9223372036854775807),
                                      ("14446744073709551615", -1223372036854775807),
                                      ("0", -9223372036854775808)]):  # fmt: skip
    _add("BinlogUnsignedIntegerIT", "bigint=precise", _U, "dbz_228_bigint_unsigned", _i,
         {"c1": D(_big), "c2": D(_big), "c3": _signed})  # fmt: skip
for _i, (_long, _signed) in enumerate([(-1, 9223372036854775807), (-4000000000000000001, -1223372036854775807),
                                       (0, -9223372036854775808)]):  # fmt: skip
    _add("BinlogUnsignedIntegerIT", "default", _U, "dbz_228_bigint_unsigned", _i,
         {"c1": _long, "c2": _long, "c3": _signed})  # fmt: skip
for _i, (_long, _precise) in enumerate([(10, D(10)), (11, D(11)), (-1, D("18446744073709551615"))]):
    _add("BinlogUnsignedIntegerIT", "default", _U, "dbz_1185_serial", _i, {"id": _long}, Type.INT64)
    _add("BinlogUnsignedIntegerIT", "bigint=precise", _U, "dbz_1185_serial", _i, {"id": _precise}, Type.BYTES)
for _i, _v in enumerate([10, 11, 1000]):
    _add("BinlogUnsignedIntegerIT", "default", _U, "dbz_1185_serial_default_value", _i, {"id": _v}, Type.INT32)

# BinlogTinyIntIT.shouldHandleTinyIntAsNumber: TINYINT(1) and BOOLEAN are INT16 without the converter.
_add("BinlogTinyIntIT", "default", "tinyint_test", "DBZ1773", 0, {"ti": 100, "ti1": 5, "ti2": 50, "b": 1}, Type.INT16)

# BinlogTinyIntIT with TinyIntOneToBooleanConverter: selected columns, every TINYINT(1), no length check.
_add("BinlogTinyIntIT", "tinyint=selected", "tinyint_test", "DBZ1773", 0, {"ti": 100, "ti1": 5, "ti2": 50}, Type.INT16)
_add("BinlogTinyIntIT", "tinyint=selected", "tinyint_test", "DBZ1773", 0, {"b": True}, Type.BOOLEAN)
_add("BinlogTinyIntIT", "tinyint=selected", "tinyint_test", "DBZ2085", 0, {"b": True}, Type.BOOLEAN)
for _knob in ("tinyint=all", "tinyint=unchecked"):
    _add("BinlogTinyIntIT", _knob, "tinyint_test", "DBZ5236", 0, {"ti1": 1}, Type.INT16)
    _add("BinlogTinyIntIT", _knob, "tinyint_test", "DBZ5236", 0, {"ti2": True, "ti3": False}, Type.BOOLEAN)

# BinlogBinaryModeIT: every binary column type under each binary.handling.mode.
_BINARY_COLUMNS = ("blob_col", "tinyblob_col", "mediumblob_col", "longblob_col", "binary_col", "varbinary_col")
for _knob, _value in (("default", b"\x01\x02\x03"), ("binary=hex", "010203"), ("binary=base64", "AQID"),
                      ("binary=base64-url-safe", "AQID")):  # fmt: skip
    _add("BinlogBinaryModeIT", _knob, "binary_mode_test", "dbz_1814_binary_mode_test", 0,
         dict.fromkeys(_BINARY_COLUMNS, _value))  # fmt: skip

# BinlogRegressionIT (regression_test), default config.
_R = ("BinlogRegressionIT", "default", "regression_test")
for _i, (_c1, _c2) in enumerate([("a", "a,b,c"), ("b", "a,b"), ("c", "a")]):
    _add(*_R, "dbz_100_enumsettest", _i, {"c1": _c1, "c2": _c2})
_add(*_R, "dbz_102_charsettest", 0, {"text": "产品"})
# MariaDB truncates the extra fractional digit ('…04.777' in TIME(2) is 04.77), MySQL rounds it (04.78):
# Debezium's IT expects 770 ms on MariaDB.
_add(*_R, "dbz_85_fractest", 0, {"c1": 16321, "c2": _time(17, 51, 4, 770_000), "c3": 1_410_198_664_770})
for _i, _c2 in enumerate([0, 60_000_000]):
    # DBZ-1912 (3.6): a zero TIMESTAMP is null in an optional column, in the snapshot as in the binlog.
    _add(*_R, "dbz_114_zerovaluetest", _i, {"c1": None, "c2": _c2, "c3": None, "c4": None})
    _add(*_R, "dbz_1318_zerovaluetest", _i,
         {"c1": None, "c2": _c2, "c3": None, "c4": None, "nnc1": 0, "nnc2": _c2, "nnc3": 0})  # fmt: skip
for _i in range(2):
    _add(*_R, "dbz_123_bitvaluetest", _i,
         {"c1": True, "c2": bytes([2]), "c3": bytes([64]), "c4": bytes([219, 14, 110, 1, 0, 0, 0, 0])})  # fmt: skip
_add(*_R, "dbz_147_decimalvalues", 0, {"decimal_value": D("12345.67")})
for _i, _v in enumerate([0, -2147483648, 2147483647]):
    _add(*_R, "dbz_195_numvalues", _i, {"search_version_read": _v})
_add(*_R, "dbz_342_timetest", 0, {
    "c1": _time(517, 51, 4, 770_000), "c2": _time(13, 14, 50, sign=-1), "c3": _time(733, 0, 0, 1000, -1),
    "c4": _time(1, 59, 59, 1000, -1), "c5": _time(838, 59, 58, 999_999, -1), "c6": _time(0, 20, 38, sign=-1),
    "c7": _time(1, 1, 1, 1, -1), "c8": _time(1, 1, 1, sign=-1), "c9": _time(1, 1, 0, sign=-1),
    "c10": _time(1, 0, 0, sign=-1), "c11": 0,
})  # fmt: skip

# BinlogRegressionIT, time.precision.mode=connect.
_C = ("BinlogRegressionIT", "time=connect", "regression_test")
_add(*_C, "dbz_85_fractest", 0, {
    "c1": datetime.date(2014, 9, 8), "c2": datetime.time(17, 51, 4, 770_000),
    "c3": datetime.datetime(2014, 9, 8, 17, 51, 4, 770_000, tzinfo=UTC),
})  # fmt: skip
for _i, _c2 in enumerate([datetime.time(0, 0), datetime.time(0, 1)]):
    _add(*_C, "dbz_114_zerovaluetest", _i, {"c1": None, "c2": _c2, "c3": None, "c4": None})
# The row with TIME values a Connect Time cannot hold is received (Debezium's converter leaves them
# null under event.converting.failure.handling.mode=warn, its default); the ones it can hold are kept.
_add(*_C, "dbz_342_timetest", 0, {"c1": None, "c2": None, "c11": datetime.time(0, 0)})

# BinlogEnumColumnIT: ENUM members holding a comma are escaped in `allowed`.
_ALLOWED = "station,post_office,plane,ahihi_dongok,now,test,a\\,b,c\\,'d,g\\,'h"

# BinlogSourceTypeInSchemaIT
_TYPE, _LENGTH, _SCALE = (
    "__debezium.source.column.type",
    "__debezium.source.column.length",
    "__debezium.source.column.scale",
)
SOURCE_TYPE_CASES = [
    ("propagate=column", "id", None),
    ("propagate=column", "c1", {_TYPE: "INT"}),
    ("propagate=column", "c2", {_TYPE: "MEDIUMINT"}),
    ("propagate=column", "c3a", {_TYPE: "NUMERIC", _LENGTH: "5", _SCALE: "2"}),
    ("propagate=column", "c3b", {_TYPE: "VARCHAR", _LENGTH: "128"}),
    ("propagate=column", "f1", {_TYPE: "FLOAT", _LENGTH: "10"}),
    ("propagate=column", "f2", {_TYPE: "FLOAT", _LENGTH: "8", _SCALE: "4"}),
    ("propagate=datatype", "id", None),
    ("propagate=datatype", "c1", None),
    ("propagate=datatype", "c2", None),
    ("propagate=datatype", "c3b", {_TYPE: "VARCHAR", _LENGTH: "128"}),
    ("propagate=datatype", "f1", {_TYPE: "FLOAT", _LENGTH: "10"}),
    ("propagate=datatype", "f2", {_TYPE: "FLOAT", _LENGTH: "8", _SCALE: "4"}),
]
# BinlogSourceTypeInSchemaIT creates its table while streaming (snapshot.mode=no_data): the parameters are
# the declared types of the CREATE TABLE text (NUMERIC, FLOAT(10)), not what the server made of them.
SOURCE_TYPE_KNOBS = {
    "propagate=column": {"column.propagate.source.type": ".*\\.c1,.*\\.c2,.*\\.c3.*,.*\\.f."},
    "propagate=datatype": {"datatype.propagate.source.type": ".+\\.FLOAT,.+\\.VARCHAR"},
}
SOURCE_TYPE_CASES.append(("propagate=datatype", "c3a", {_TYPE: None}))  # the IT: no type parameter (NUMERIC)


def _topic(script: str, table: str) -> str:
    return f"dbserver1.{database_of(script)}.{table}"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_it_value(debezium_runs: RunCache, case: Case) -> None:
    run = debezium_runs[case.knob]
    assert run.error is None, run.error
    topic = _topic(case.script, case.table)
    for phase, code in (("snapshot", "r"), ("binlog", "c")):
        rows = [r.value.get("after") for r in run.data(topic) if op(r) == code]
        assert len(rows) > case.row, f"{phase}: {len(rows)} rows of {topic}"
        # Struct.getWithoutDefault, as the ITs read a null that has a schema default
        actual = rows[case.row].get_without_default(case.column)
        if case.type is Type.FLOAT32:
            actual = f32(actual)
        assert (actual, type(actual)) == (case.expected, type(case.expected)), f"{phase} {case}"
        if isinstance(actual, decimal.Decimal):
            assert str(actual) == str(case.expected), f"{phase} {case}: the scale differs"
    if case.type is not None:
        record = next(r for r in run.data(topic))
        field_type = record.value_schema.field("after").schema.field(case.column).schema.type
        assert field_type is case.type, case


def test_enum_allowed_values_escape_their_commas(debezium_runs: RunCache) -> None:
    """BinlogEnumColumnIT.shouldParseEnumWithQuotedValues… (the allowed list after the ALTER)."""
    run = debezium_runs["default"]
    record = run.data(_topic("enum_column_test", "test_stations_10"))[0]
    schema = record.value_schema.field("after").schema.field("type").schema
    assert schema.parameters == {"allowed": _ALLOWED}
    assert [after["type"] for after in run.created(_topic("enum_column_test", "test_stations_10"))] == [
        "station",
        "now",
    ]


def test_decimal_default_keeps_its_scale(debezium_runs: RunCache) -> None:
    """BinlogDecimalIT: D NUMERIC(7,5) DEFAULT '15.28' has the default 15.28000 in the schema."""
    record = debezium_runs["default"].data(_topic("decimal_test", "DBZ730"))[0]
    default = record.value_schema.field("after").schema.field("D").schema.default_value
    assert str(default) == "15.28000"


@pytest.fixture(scope="module")
def streamed_source_types(mariadb: MariaDbServer) -> Iterator[dict[str, SourceRecord]]:
    """knob → the INSERT of source_type_as_schema_parameter_test, its table created while streaming."""
    out: dict[str, SourceRecord] = {}
    for knob, settings in SOURCE_TYPE_KNOBS.items():
        with mariadb.fresh_database() as server:
            props = connector_props(server, **{"snapshot.mode": "no_data", "include.schema.changes": "false"})
            with TaskRunner({**props, **settings}) as runner:
                runner.wait_streaming()
                with server.connect() as conn, conn.cursor() as cur:
                    for sql in statements("source_type_as_schema_parameter_test", str(server.database))[2:]:
                        cur.execute(sql)  # the script but its DROP and CREATE DATABASE
                out[knob] = runner.wait_data(1, "dbz_644_source_type_mapped_as_schema_parameter_test")[0]
    yield out


@pytest.mark.parametrize("knob,column,expected", SOURCE_TYPE_CASES)
def test_source_type_parameters(
    streamed_source_types: dict[str, SourceRecord], knob: str, column: str, expected: dict | None
) -> None:
    """BinlogSourceTypeInSchemaIT: `contains` the entries (no parameters at all where expected is None)."""
    record = streamed_source_types[knob]
    assert op(record) == "c"
    params = record.value_schema.field("before").schema.field(column).schema.parameters
    if expected is None:
        assert not params
    else:
        assert params is not None and {k: params.get(k) for k in expected} == expected, params


def test_source_type_parameters_of_a_snapshot_are_the_servers(debezium_runs: RunCache) -> None:
    """A snapshot has only SHOW CREATE TABLE's text (`decimal(5,2)`, `float`, `int(11)` on MariaDB), as
    Debezium's snapshot parses it: the server's types, the same as information_schema's."""
    run = debezium_runs["propagate=column"]
    assert run.error is None, run.error
    record = run.data(
        _topic("source_type_as_schema_parameter_test", "dbz_644_source_type_mapped_as_schema_parameter_test")
    )[0]
    assert op(record) == "r"
    fields = record.value_schema.field("before").schema
    c3a = fields.field("c3a").schema.parameters
    assert {k: c3a.get(k) for k in (_TYPE, _LENGTH, _SCALE)} == {_TYPE: "DECIMAL", _LENGTH: "5", _SCALE: "2"}
    assert _LENGTH not in fields.field("f1").schema.parameters
    assert fields.field("c1").schema.parameters.get(_LENGTH) == "11"


def test_connect_mode_fails_on_a_time_key_it_cannot_hold(debezium_runs: RunCache) -> None:
    """The TIME(2) PRIMARY KEY of connector_test_ro holding 517:51:04.77 fails the task under
    time.precision.mode=connect, as Debezium's does (a key cannot be null), with the key to change."""
    db_table = CONNECT_UNCAPTURABLE.replace("\\\\", "")
    run = run_connector(
        debezium_runs.loaded,
        {"time.precision.mode": "connect", "table.include.list": CONNECT_UNCAPTURABLE},
        timeout=60,
    )
    assert run.error is not None
    message = str(run.error)
    assert db_table.split(".")[1] in message and "adaptive_time_microseconds" in message, message


# BinlogDefaultValueAllZeroTimeIT: the schema defaults of zero date/time defaults (None: optional, no default).
_EPOCH_TS = "1970-01-01T00:00:00Z"
ZERO_DEFAULTS = {
    "all_zero_date_and_time_table": {
        "A": _EPOCH_TS, "B": None, "C": _EPOCH_TS, "D": None, "E": 0, "F": None, "G": 0, "H": None,
        "I": 0, "J": None, "K": 0, "L": None,
    },
    "part_zero_date_and_time_table": {
        "A": _EPOCH_TS, "B": None, "C": 0, "D": None, "E": 0, "F": None, "G": 3_600_000_000, "H": 3_600_000_000,
    },
}  # fmt: skip


@pytest.mark.parametrize("table,column", [(t, c) for t, columns in ZERO_DEFAULTS.items() for c in columns], ids=str)
def test_zero_date_and_time_defaults(debezium_runs: RunCache, table: str, column: str) -> None:
    record = debezium_runs["default"].data(_topic("default_value_all_zero_time", table))[0]
    schema = record.value_schema.field("after").schema.field(column).schema
    expected = ZERO_DEFAULTS[table][column]
    assert (schema.default_value, type(schema.default_value)) == (expected, type(expected))
    if expected is None:
        assert schema.optional


# BinlogDefaultValueIT (default_value.sql): schema defaults; (knob, table) → {column: default}.
_UNSIGNED = {"A": 0, "B": 10, "C": None, "E": 0, "F": 0}
SCHEMA_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("default", "UNSIGNED_TINYINT_TABLE"): _UNSIGNED,
    ("default", "UNSIGNED_SMALLINT_TABLE"): _UNSIGNED,
    ("default", "UNSIGNED_MEDIUMINT_TABLE"): _UNSIGNED,
    ("default", "UNSIGNED_INT_TABLE"): _UNSIGNED,
    ("default", "UNSIGNED_BIGINT_TABLE"): _UNSIGNED,
    ("bigint=precise", "UNSIGNED_BIGINT_TABLE"): {"A": D(0), "B": D(10), "C": None, "E": D(0), "F": D(0)},
    ("default", "STRING_TABLE"): {"A": "A", "B": "b", "C": "CC", "D": "10", "E": "0", "F": None, "G": None, "H": None},
    ("default", "BIT_TABLE"): {
        "A": None, "B": False, "C": True, "D": False, "E": True, "F": True, "G": False,
        "H": bytes([66, 1]), "I": None, "J": bytes([15, 97, 1, 0]),
    },
    ("default", "BOOLEAN_TABLE"): {"A": 0, "B": 1, "C": 1, "D": 1, "E": None},
    ("default", "NUMBER_TABLE"): {"A": 10, "B": 5, "C": 0, "D": 20, "E": None, "G": 1, "H": 1},
    ("default", "FlOAT_DOUBLE_TABLE"): {"F": 0.0, "G": 1.0},
    ("default", "REAL_TABLE"): {"A": 1.0, "B": None},
    ("decimal=double", "NUMERIC_DECIMAL_TABLE"): {"A": 1.23, "B": 2.321, "C": 12.678},
    ("default", "NUMERIC_DECIMAL_TABLE"): {"A": D("1.23"), "B": D("2.321")},
    ("default", "DATE_TIME_TABLE"): {
        "A": 2426, "C": 1_514_937_610_000, "D": 1_514_937_610_700, "E": 1_514_937_610_123_456, "F": 2001,
        "G": 0, "H": 82_800_700_000, "I": 82_800_123_456, "L": _time(23, 45, 56, 700_000, -1),
        "M": _time(123, 0, 0, 123_456),
    },
}  # fmt: skip
# BinlogDefaultValueIT checks isOptional of A-F of the unsigned tables too.
_UNSIGNED_OPTIONAL = {"A": True, "B": True, "C": True, "D": False, "E": False, "F": False}


@pytest.mark.parametrize(
    "knob,table,column", [(k, t, c) for (k, t), columns in SCHEMA_DEFAULTS.items() for c in columns], ids=str
)
def test_schema_default(debezium_runs: RunCache, knob: str, table: str, column: str) -> None:
    run = debezium_runs[knob]
    record = run.data(_topic("default_value", table))[0]
    schema = record.value_schema.field("after").schema.field(column).schema
    expected = SCHEMA_DEFAULTS[(knob, table)][column]
    assert (schema.default_value, type(schema.default_value)) == (expected, type(expected)), schema
    if isinstance(expected, decimal.Decimal):
        assert str(schema.default_value) == str(expected)
    if table.startswith("UNSIGNED_"):
        assert schema.optional is _UNSIGNED_OPTIONAL[column]


# BinlogGeometryIT (geometry_test_5: POINT as io.debezium.data.geometry.Point, other types as Geometry).
_POINT_WKB_1_1 = "0101000000000000000000F03F000000000000F03F"
_LINESTRING = "01020000000200000000000000000000000000000000000000000000000000F03F000000000000F03F"
GEOMETRY_CASES: list[tuple[str, int, str, str, Any]] = [
    ("dbz_222_point", 0, "point", "x", 1.0),
    ("dbz_222_point", 0, "point", "y", 1.0),
    ("dbz_222_point", 0, "point", "srid", None),
    ("dbz_222_point", 1, "point", "x", 8.25554554),
    ("dbz_222_point", 1, "point", "y", 3.22124447),
    ("dbz_222_point", 1, "point", "srid", 4326),
    ("dbz_222_point", 2, "point", "x", 0.0),
    ("dbz_222_point", 2, "point", "y", 0.0),
    ("dbz_222_point", 2, "point", "srid", 1234),
    ("dbz_222_point", 3, "point", "", None),
    ("dbz_507_geometry", 0, "geom", "srid", 4326),
    ("dbz_507_geometry", 0, "geom", "wkb", _POINT_WKB_1_1),
    ("dbz_507_geometry", 0, "linestring", "srid", 3187),
    ("dbz_507_geometry", 0, "linestring", "wkb", _LINESTRING),
    ("dbz_507_geometry", 0, "polygon", "srid", None),
    ("dbz_507_geometry", 0, "polygon", "wkb", "0103000000010000000400000000000000000000000000000000000000000000000000"
     "F03F000000000000F03F000000000000F03F000000000000000000000000000000000000000000000000"),
    ("dbz_507_geometry", 0, "collection", "srid", 4326),
    ("dbz_507_geometry", 0, "collection", "wkb", "0107000000020000000101000000000000000000F03F000000000000F03F"
     + _LINESTRING),
    ("dbz_507_geometry", 1, "geom", "srid", None),
    ("dbz_507_geometry", 1, "geom", "wkb", _LINESTRING),
    ("dbz_507_geometry", 1, "linestring", "", None),
    ("dbz_507_geometry", 1, "polygon", "", None),
    ("dbz_507_geometry", 1, "collection", "", None),
]  # fmt: skip


@pytest.mark.parametrize("table,row,column,part,expected", GEOMETRY_CASES, ids=str)
def test_geometry(debezium_runs: RunCache, table: str, row: int, column: str, part: str, expected: Any) -> None:
    run = debezium_runs["default"]
    topic = _topic("geometry_test_5", table)
    for code in ("r", "c"):
        rows = [r.value.get("after") for r in run.data(topic) if op(r) == code]
        value = rows[row].get(column)
        if part:
            value = value.get(part)
            if part == "wkb":
                value = value.hex().upper()
        assert value == expected, (code, table, row, column, part)
    if table == "dbz_222_point":
        schema = run.data(topic)[0].value_schema.field("after").schema.field("point").schema
        assert schema.name == "io.debezium.data.geometry.Point" and [f.name for f in schema.fields] == [
            "x", "y", "wkb", "srid"
        ]  # fmt: skip


def test_zero_datetime_in_a_primary_key(debezium_runs: RunCache) -> None:
    """BinlogDateTimeInKeyIT: zero DATETIME, DATE and TIME key columns are 0 in the key (and the value)."""
    run = debezium_runs["default"]
    records = run.data(_topic("datetime_key_test", "dbz_1194_datetime_key_test"))
    assert {op(r) for r in records} == {"r", "c", "d"}
    for record in records:
        key = record.key.to_dict()
        assert (key["dtval"], key["dval"], key["tval"]) == (0, 0, 0), record


def test_datetime_with_zero_precision_defaulting_to_now(debezium_runs: RunCache) -> None:
    """BinlogTimestampColumnIT: update_time DATETIME(0) NOT NULL DEFAULT CURRENT_TIMESTAMP(0) is set."""
    run = debezium_runs["default"]
    rows = run.snapshot(_topic("timestamp_column_test", "t_user_block_list")) + run.created(
        _topic("timestamp_column_test", "t_user_block_list")
    )
    assert len(rows) == 2 and all(r["update_time"] is not None and r["data"] == "test2" for r in rows)


@pytest.mark.parametrize(
    "script,columns",
    [
        ("db_default_charset", {"MESSAGE": "Žluťoučký"}),
        ("db_default_charset_noutf", {"MESSAGE": "Žluťoučký", "FLAG": 1}),
    ],
)
def test_database_default_charset(debezium_runs: RunCache, script: str, columns: dict[str, Any]) -> None:
    """BinlogDefaultDatabaseCharsetIT / BinlogNonUtfDatabaseCharsetIT: text in a utf8mb4 and a latin2 database."""
    run = debezium_runs["default"]
    topic = _topic(script, "DATA")
    for rows in (run.snapshot(topic), run.created(topic)):
        assert [{k: row[k] for k in columns} for row in rows] == [columns]


@pytest.mark.parametrize(
    "table,topic_table", [("dbz_878_some|test@data", "dbz_878_some_test_data"), ("DBZ.1834", "DBZ.1834")]
)
def test_topic_name_sanitization(debezium_runs: RunCache, table: str, topic_table: str) -> None:
    """BinlogTopicNameSanitizationIT: characters Kafka refuses become `_` in the topic and schema names,
    and source.table keeps the table's own name."""
    run = debezium_runs["default"]
    records = run.data(_topic("topic_name_sanitization_test", topic_table))
    assert records, table
    for record in records:
        assert record.value_schema.name.endswith(f"{topic_table}.Envelope")
        assert record.value.get("source").get("table") == table


@pytest.mark.parametrize("knob", ["comments", "default"])
def test_table_and_column_comments(debezium_runs: RunCache, knob: str) -> None:
    """BinlogTableAndColumnCommentIT: with include.schema.comments the schema change event carries the
    table and column comments, and the source-type parameters the column comment; without, none."""
    run = debezium_runs[knob]
    db = database_of("table_column_comment_test")
    comments = knob == "comments"
    if comments:
        (change,) = [
            r.value.get("tableChanges")[0]
            for r in run.records
            if r.topic == "dbserver1" and r.value is not None and r.value.get("databaseName") == db
            and r.value.get("tableChanges")
        ]  # fmt: skip
        table = change.get("table")
        assert table.get("comment") == "table for dbz-4000"
        by_name = {c.get("name"): c.get("comment") for c in table.get("columns")}
        assert by_name == {"id": "pk", "name": "this is name column", "value": "the value is bigint type"}
    record = run.data(_topic("table_column_comment_test", "dbz_4000_comment_test"))[0]
    before = record.value_schema.field("before").schema
    if comments:
        assert not before.field("id").schema.parameters
        for column, comment in (("name", "this is name column"), ("value", "the value is bigint type")):
            params = before.field(column).schema.parameters or {}
            assert params.get("__debezium.source.column.comment") == comment, params
    else:
        assert all(not f.schema.parameters for f in before.fields)


@pytest.mark.parametrize("knob,name", [("names=avro", "name_adjustment"), ("default", "name-adjustment")])
def test_schema_name_adjustment(debezium_runs: RunCache, knob: str, name: str) -> None:
    """BinlogSchemaNameAdjustmentModeIT: schema.name.adjustment.mode=avro makes `name-adjustment` Avro-valid."""
    (record,) = debezium_runs[knob].data(_topic("schema_name_adjustment", "name-adjustment"))[:1]
    assert name in record.value_schema.name and record.value_schema.name.endswith(".Envelope")
    assert name in record.value_schema.field("after").schema.name  # the table has no key


def test_tinyint_one_to_boolean_default(debezium_runs: RunCache) -> None:
    """BinlogTinyIntIT.shouldDefaultValueForTinyIntOneAsBoolean: the BOOLEAN field's default is false."""
    record = debezium_runs["tinyint=selected"].data(_topic("tinyint_test", "DBZ2085"))[0]
    assert record.value_schema.field("after").schema.field("b").schema.default_value is False
