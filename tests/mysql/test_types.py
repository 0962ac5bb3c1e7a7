"""Debezium's MySQL type mapping, identical in snapshot (`r`, via SELECT) and streaming (`c`, via binlog)."""

from __future__ import annotations

import base64
import decimal
from typing import Any

from cdc.api import Type
from tests.mysql.harness import TaskRunner, after, connector_props, execute

COLUMNS = """
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  dec1 DECIMAL(10,2), dec2 DECIMAL(30,10), f FLOAT, d DOUBLE, b1 BIT(1), b12 BIT(12), bo BOOL,
  c CHAR(5), vc VARCHAR(30), tx TEXT, u8 VARCHAR(10) CHARACTER SET utf8mb4, l1 VARCHAR(10) CHARACTER SET latin1,
  bin BINARY(4), vbin VARBINARY(10), bl BLOB,
  e ENUM('a','b','c'), st SET('x','y','z'), j JSON,
  dt DATE, tm TIME, tm6 TIME(6), dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, yr YEAR,
  dz DATE NOT NULL DEFAULT '2000-01-01',
  g GEOMETRY, p POINT
"""
VALUES = """(
  {id}, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808,
  18446744073709551615, 12345678.91, 12345678901234567890.0123456789, 1.5, 2.25, b'1', b'101000000011', TRUE,
  'ab', 'hello', 'long text', '😀ü', 'café', x'0102', x'00ff', x'deadbeef',
  'b', 'z,x', '{{"k": [1, 2]}}',
  '2024-02-29', '-838:59:59', '12:34:56.123456', '2024-01-02 03:04:05', '2024-01-02 03:04:05.678',
  '2024-01-02 03:04:05.678901', '2024-01-02 03:04:05', '2024-01-02 03:04:05.678', 2024,
  '0000-00-00',
  ST_GeomFromText('POINT(1 2)', 4326), ST_GeomFromText('POINT(3 4)')
)"""

# dz: a zero date in a NOT NULL column is the column's default, 2000-01-01 (Debezium's convertValue).
EXPECTED: dict[str, Any] = {
    "ti": -128, "tiu": 255, "si": -32768, "siu": 65535, "mi": -8388608, "miu": 16777215,
    "i": -2147483648, "iu": 4294967295, "bi": -9223372036854775808, "biu": -1,
    "dec1": decimal.Decimal("12345678.91"), "dec2": decimal.Decimal("12345678901234567890.0123456789"),
    "f": 1.5, "d": 2.25, "b1": True, "b12": (0b101000000011).to_bytes(2, "little"), "bo": 1,
    "c": "ab", "vc": "hello", "tx": "long text", "u8": "😀ü", "l1": "café",
    "bin": b"\x01\x02\x00\x00", "vbin": b"\x00\xff", "bl": b"\xde\xad\xbe\xef",
    "e": "b", "st": "x,z", "j": '{"k": [1, 2]}',
    "dt": 19782, "tm": -(838 * 3600 + 59 * 60 + 59) * 1_000_000, "tm6": (12 * 3600 + 34 * 60 + 56) * 1_000_000 + 123456,
    "dtm": 1704164645000, "dtm3": 1704164645678, "dtm6": 1704164645678901,
    "ts": "2024-01-02T03:04:05Z", "ts3": "2024-01-02T03:04:05.678Z", "yr": 2024, "dz": 10957,
}  # fmt: skip
SCHEMAS = {
    "ti": (Type.INT16, None), "tiu": (Type.INT16, None), "si": (Type.INT16, None), "siu": (Type.INT32, None),
    "mi": (Type.INT32, None), "miu": (Type.INT32, None), "i": (Type.INT32, None), "iu": (Type.INT64, None),
    "bi": (Type.INT64, None), "biu": (Type.INT64, None),
    "dec1": (Type.BYTES, "org.apache.kafka.connect.data.Decimal"), "f": (Type.FLOAT32, None),
    "d": (Type.FLOAT64, None), "b1": (Type.BOOLEAN, None), "b12": (Type.BYTES, "io.debezium.data.Bits"),
    "c": (Type.STRING, None), "bin": (Type.BYTES, None), "e": (Type.STRING, "io.debezium.data.Enum"),
    "st": (Type.STRING, "io.debezium.data.EnumSet"), "dt": (Type.INT32, "io.debezium.time.Date"),
    "tm": (Type.INT64, "io.debezium.time.MicroTime"), "dtm": (Type.INT64, "io.debezium.time.Timestamp"),
    "dtm6": (Type.INT64, "io.debezium.time.MicroTimestamp"), "ts": (Type.STRING, "io.debezium.time.ZonedTimestamp"),
    "yr": (Type.INT32, "io.debezium.time.Year"), "g": (Type.STRUCT, "io.debezium.data.geometry.Geometry"),
}  # fmt: skip


def _check(row: dict[str, Any]) -> None:
    for name, want in EXPECTED.items():
        assert row[name] == want, f"{name}: {row[name]!r} != {want!r}"
    assert row["g"]["srid"] == 4326 and row["g"]["wkb"][:1] == b"\x01" and len(row["g"]["wkb"]) == 21
    assert row["p"]["srid"] is None and len(row["p"]["wkb"]) == 21


def test_every_type_in_snapshot_and_streaming(mariadb_db) -> None:
    execute(
        mariadb_db,
        "SET SESSION sql_mode = ''",
        "SET SESSION time_zone = '+00:00'",
        f"CREATE TABLE types ({COLUMNS})",
        f"INSERT INTO types VALUES {VALUES.format(id=1)}",
    )
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute(f"INSERT INTO types VALUES {VALUES.format(id=2)}")
        read, create = run.wait_data(2)
    snap, stream = after(read), after(create)
    _check(snap)
    _check(stream)
    assert {k: v for k, v in snap.items() if k != "id"} == {k: v for k, v in stream.items() if k != "id"}
    assert read.value_schema == create.value_schema
    value_schema = create.value_schema.field("after").schema
    for name, (type_, logical) in SCHEMAS.items():
        s = value_schema.field(name).schema
        assert (s.type, s.name) == (type_, logical), name
    assert value_schema.field("dec1").schema.parameters == {"scale": "2", "connect.decimal.precision": "10"}
    assert value_schema.field("e").schema.parameters == {"allowed": "a,b,c"}
    assert value_schema.field("b12").schema.parameters == {"length": "12"}
    assert value_schema.field("dz").schema.optional is False and value_schema.field("ti").schema.optional


def test_type_handling_knobs(mariadb_db) -> None:
    execute(
        mariadb_db,
        "CREATE TABLE k (id INT PRIMARY KEY, dec1 DECIMAL(10,2), biu BIGINT UNSIGNED, vb VARBINARY(8), tm TIME,"
        " dtm DATETIME(6))",
        "INSERT INTO k VALUES (1, 1.50, 18446744073709551615, x'fbff', '10:11:12', '2024-01-02 03:04:05.5')",
    )
    base = connector_props(mariadb_db)
    cases = [
        ({"decimal.handling.mode": "string", "bigint.unsigned.handling.mode": "precise",
          "binary.handling.mode": "base64", "time.precision.mode": "connect"},
         {"dec1": "1.50", "biu": decimal.Decimal(18446744073709551615), "vb": base64.b64encode(b"\xfb\xff").decode()}),
        ({"decimal.handling.mode": "double", "binary.handling.mode": "hex"},
         {"dec1": 1.5, "biu": -1, "vb": "fbff", "tm": 36672000000, "dtm": 1704164645500000}),
        ({"binary.handling.mode": "base64-url-safe"}, {"vb": "-_8="}),
    ]  # fmt: skip
    for extra, expected in cases:
        props = {**base, **extra, "database.server.id": str(int(base["database.server.id"]) + 500)}
        with TaskRunner(props) as run:
            row = after(run.wait_data(1)[0])
        for name, want in expected.items():
            assert row[name] == want, (extra, name, row[name])
        if extra.get("time.precision.mode") == "connect":
            import datetime

            assert row["tm"] == datetime.time(10, 11, 12)
            assert row["dtm"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=datetime.UTC)


def test_edge_values_read_the_same_from_the_binlog_as_from_a_select(mariadb_db) -> None:
    """Values python-mysql-replication decodes differently from the server: a negative TIME
    with a fraction, an empty SET, YEAR 0000. The binlog must give what the snapshot gives."""
    columns = "id INT PRIMARY KEY, tm6 TIME(6), tm3 TIME(3), st SET('x','y'), yr YEAR, tm1 TIME(1), tm5 TIME(5)"
    rows = [
        "({id}, '-12:34:56.000001', '-00:00:01.500', '', 0, '-00:00:00.1', '-01:00:00.00001')",
        "({id}, '-838:59:58.999999', '00:00:00.001', 'y', 1901, '-838:59:58.9', '838:59:58.99999')",
    ]
    execute(
        mariadb_db,
        f"CREATE TABLE edge ({columns})",
        *(f"INSERT INTO edge VALUES {r.format(id=i)}" for i, r in enumerate(rows)),
    )
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(2)
        execute(mariadb_db, *(f"INSERT INTO edge VALUES {r.format(id=10 + i)}" for i, r in enumerate(rows)))
        records = run.wait_data(4)
    by_id = {after(r)["id"]: {k: v for k, v in after(r).items() if k != "id"} for r in records}
    max_time = (838 * 3600 + 59 * 60 + 58) * 1_000_000
    assert by_id[0] == {
        "tm6": -(12 * 3600 + 34 * 60 + 56) * 1_000_000 - 1,
        "tm3": -1_500_000,
        "st": "",
        "yr": 0,
        "tm1": -100_000,
        "tm5": -3_600_000_010,
    }
    assert by_id[1] == {
        "tm6": -max_time - 999_999,
        "tm3": 1_000,
        "st": "y",
        "yr": 1901,
        "tm1": -max_time - 900_000,
        "tm5": max_time + 999_990,
    }
    assert by_id[10] == by_id[0] and by_id[11] == by_id[1]  # streaming (binlog) = snapshot (SELECT)
