"""Change events that must match Debezium's PostgreSQL connector value for value.

TOASTed values: under REPLICA IDENTITY FULL the `after` of an update carries the real value
(PostgreSQL logs the whole old row), and under DEFAULT an unchanged TOASTed value is
Debezium's placeholder in the column's own type (arrays and hstore included), never null,
which a sink would write over the stored value. Snapshot markers: the snapshot's last row is
`last` (and its offset `last_snapshot_record`) even when the tables after it are empty.
"""

from __future__ import annotations

import decimal
import json
import time

from cdc.api import Decimal as ConnectDecimal
from cdc.api import Schema, SchemaBuilder
from cdc.runtime.task import ConnectorTaskId
from cdc_postgres.toast import ToastPlaceholder
from tests.postgres.test_connector import _streaming, connector, herder, values, wait_until  # noqa: F401
from tests.support.logs import stored_offsets

PLACEHOLDER = "__debezium_unavailable_value"
BIG = "y" * 20_000


def _external(sql, table: str, *columns: str) -> None:
    """Values of these columns go to the TOAST table uncompressed, so 20 kB surely leaves the row."""
    for column in columns:
        sql.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE EXTERNAL")


def test_full_identity_update_carries_unchanged_toasted_values(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE docs(id int PRIMARY KEY, v text, body text NOT NULL)")
    _external(sql, "docs", "body")
    sql.execute("ALTER TABLE docs REPLICA IDENTITY FULL")
    _streaming(sql, herder)
    sql.execute("INSERT INTO docs VALUES (1, 'a', %s)", (BIG,))
    sql.execute("UPDATE docs SET v = 'b' WHERE id = 1")
    sql.execute("UPDATE docs SET id = 2 WHERE id = 1")  # a key change: delete + tombstone + create
    topic = "srv.public.docs"
    wait_until(lambda: len(values(herder, topic)) == 5, what="create, update, delete, tombstone, create")
    _, update, delete, tombstone, create = values(herder, topic)
    assert update["before"] == {"id": 1, "v": "a", "body": BIG}
    assert update["after"] == {"id": 1, "v": "b", "body": BIG}  # not the placeholder
    assert delete["op"] == "d" and delete["before"]["body"] == BIG and tombstone is None
    assert create["op"] == "c" and create["after"] == {"id": 2, "v": "b", "body": BIG}


def test_unchanged_toasted_arrays_and_hstore_get_typed_placeholders(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    sql.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    sql.execute(
        "CREATE TABLE blobs(id int PRIMARY KEY, v text, texts text[], ints int[], longs int8[], tags hstore,"
        " doc jsonb, raw bytea)"
    )
    _external(sql, "blobs", "texts", "ints", "longs", "tags", "doc", "raw")
    _streaming(sql, herder)
    sql.execute(
        "INSERT INTO blobs SELECT 1, 'a', array_fill(repeat('x', 5000), ARRAY[5]),"
        " (SELECT array_agg(g) FROM generate_series(1, 10000) g),"
        " (SELECT array_agg(g::int8) FROM generate_series(1, 10000) g),"
        " hstore('k', repeat('v', 20000)), jsonb_build_object('k', repeat('v', 20000)),"
        " convert_to(repeat('z', 20000), 'UTF8')"
    )
    sql.execute("UPDATE blobs SET v = 'b' WHERE id = 1")  # REPLICA IDENTITY DEFAULT: no old row
    topic = "srv.public.blobs"
    wait_until(lambda: len(values(herder, topic)) == 2, what="create and update")
    after = values(herder, topic)[1]["after"]
    per_byte = [ord(c) for c in PLACEHOLDER]  # Debezium: one number per placeholder byte
    assert after["texts"] == [PLACEHOLDER]
    assert after["ints"] == per_byte and after["longs"] == per_byte
    assert after["tags"] == json.dumps({PLACEHOLDER: PLACEHOLDER}, separators=(",", ":"))
    assert after["doc"] == PLACEHOLDER
    assert after["raw"] == "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="  # the placeholder's bytes, base64 in JSON


def test_placeholder_in_each_column_type() -> None:
    ph = ToastPlaceholder.parse(PLACEHOLDER)
    hstore_map = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).optional().build()
    assert ph.for_column(hstore_map, is_hstore=True) == {PLACEHOLDER: PLACEHOLDER}
    uuids = SchemaBuilder.array(SchemaBuilder.string().name("io.debezium.data.Uuid").optional().build()).build()
    assert ph.for_column(uuids) == ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"]  # Java's UUID.nameUUIDFromBytes
    decimals = SchemaBuilder.array(ConnectDecimal.builder(2).optional().build()).build()
    assert ph.for_column(decimals)[:2] == [decimal.Decimal("0.95"), decimal.Decimal("0.95")]  # '_' is byte 95
    assert ph.for_column(ConnectDecimal.schema(2)) is None  # a scalar numeric has no placeholder: null
    assert ph.for_column(SchemaBuilder.array(Schema.OPTIONAL_BOOLEAN_SCHEMA).build()) == [True] * len(PLACEHOLDER)
    raw = ToastPlaceholder.parse("hex:00ff")
    assert raw.for_column(Schema.BYTES_SCHEMA) == b"\x00\xff"
    assert raw.for_column(SchemaBuilder.array(Schema.OPTIONAL_INT16_SCHEMA).build()) == [0, -1]  # Java bytes


def test_snapshot_marks_its_last_row_last_even_when_later_tables_are_empty(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    for table, rows in (("a", 2), ("b", 1), ("c", 1), ("z", 0)):  # snapshotted in name order
        sql.execute(f"CREATE TABLE {table}(id int PRIMARY KEY)")
        if rows:
            sql.execute(f"INSERT INTO {table} SELECT generate_series(1, {rows})")
    herder.put_connector_config(connector(postgres_db))

    def snapshot_rows() -> list[tuple[str, str]]:
        return [(t, v["source"]["snapshot"]) for t in "abc" for v in values(herder, f"srv.public.{t}")]

    wait_until(lambda: len(snapshot_rows()) == 4, what="4 snapshot rows")
    # Debezium's precedence: a table's only row is last_in_data_collection, the snapshot's final row last.
    assert snapshot_rows() == [
        ("a", "first"),
        ("a", "last_in_data_collection"),
        ("b", "last_in_data_collection"),
        ("c", "last"),
    ]
    wait_until(
        lambda: next(iter(stored_offsets(herder.worker.log).values()), {}).get("last_snapshot_record") is True,
        what="the offset of the snapshot's last row",
    )
    # With the snapshot recorded as complete, a restart streams instead of snapshotting again.
    herder.restart_task(ConnectorTaskId("pg", 0))
    time.sleep(1.0)
    sql.execute("INSERT INTO z VALUES (1)")
    wait_until(lambda: len(values(herder, "srv.public.z")) == 1, what="the streamed row")
    assert [op for t in "abc" for op in (v["op"] for v in values(herder, f"srv.public.{t}"))] == ["r"] * 4


def test_timestamptz_and_tsvector_match_debezium_in_snapshot_and_stream(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    sql.execute(
        "CREATE TABLE times(id int PRIMARY KEY, tz timestamptz, tz3 timestamptz(3), tz0 timestamptz(0),"
        " tza timestamptz[], doc tsvector)"
    )
    row = (
        "'2020-04-01 13:51:02+02', '2016-11-04 11:51:30.12+00', '2016-11-04 11:51:30+00',"
        " ARRAY['2020-04-01 11:51:02+00'::timestamptz], to_tsvector('simple', 'direct insert')"
    )
    sql.execute(f"INSERT INTO times VALUES (1, {row})")
    herder.put_connector_config(connector(postgres_db))
    topic = "srv.public.times"
    wait_until(lambda: len(values(herder, topic)) == 1, what="the snapshot row")
    sql.execute(f"INSERT INTO times VALUES (2, {row})")
    wait_until(lambda: len(values(herder, topic)) == 2, what="the streamed row")
    # Debezium pads a ZonedTimestamp's fraction to the column's precision (6 unless declared).
    expected = {
        "tz": "2020-04-01T11:51:02.000000Z",
        "tz3": "2016-11-04T11:51:30.120Z",
        "tz0": "2016-11-04T11:51:30Z",
        "tza": ["2020-04-01T11:51:02.000000Z"],
        "doc": "'direct':1 'insert':2",
    }
    snapshot, streamed = values(herder, topic)
    assert (snapshot["op"], streamed["op"]) == ("r", "c")
    for event in (snapshot, streamed):
        assert {k: v for k, v in event["after"].items() if k != "id"} == expected
