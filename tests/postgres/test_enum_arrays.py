"""Array item schemas as Debezium's PostgresValueConverter builds them, on a real PostgreSQL.

Debezium's RecordsStreamProducerIT.shouldStreamEnumArrayAsKnownType and
RecordsSnapshotProducerIT.shouldSnapshotEnumArrayAsKnownType: a `test_type[] NOT NULL` column is a
required array of *required* io.debezium.data.Enum items (`SchemaBuilder.array(Enum.builder("V1,V2"))`),
while the arrays it lists one by one (int4[], text[], ...) have optional items.
"""

from __future__ import annotations

from typing import Any

from cdc.api import Schema, SchemaBuilder, SourceRecord
from tests.postgres.harness import TaskRunner, connector_props, op

ENUM = "io.debezium.data.Enum"
TABLE = "public.enum_array_table"
SOURCE_TYPE = "public.enum_array_table.value"


def _enum_array(column_name: str) -> Schema:
    """Debezium's expected schema of the `value` column, with column.propagate.source.type on it."""
    items = SchemaBuilder.string().name(ENUM).version(1).parameter("allowed", "V1,V2").build()
    return (
        SchemaBuilder.array(items)
        .parameter("__debezium.source.column.type", "_TEST_TYPE")
        .parameter("__debezium.source.column.length", str(2**31 - 1))
        .parameter("__debezium.source.column.scale", "0")
        .parameter("__debezium.source.column.name", column_name)
        .build()
    )


def _field(record: SourceRecord, name: str) -> tuple[Schema, Any]:
    after = record.value.get("after")
    field = after.schema.field(name)
    assert field is not None, f"{name} missing from {[f.name for f in after.schema.fields]}"
    return field.schema, after.get(name)


def _assert_other_arrays(record: SourceRecord) -> None:
    """int4[] and text[] keep Debezium's optional items (array(OPTIONAL_INT32_SCHEMA) ...)."""
    ints, int_values = _field(record, "ints")
    texts, text_values = _field(record, "texts")
    assert ints == SchemaBuilder.array(Schema.OPTIONAL_INT32_SCHEMA).optional().build()
    assert texts == SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).build()
    assert int_values == [1, None] and text_values == ["a", None]


def _props(db: Any, mode: str) -> dict[str, str]:
    return connector_props(
        db,
        **{
            "table.include.list": TABLE,
            "snapshot.mode": mode,
            "include.unknown.datatypes": "false",
            "column.propagate.source.type": SOURCE_TYPE,
        },
    )


def test_snapshot_enum_array_items_are_required(postgres_db: Any) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TYPE test_type AS ENUM ('V1', 'V2')")
    sql.execute(
        "CREATE TABLE enum_array_table (pk SERIAL PRIMARY KEY, value test_type[] NOT NULL, ints int4[], "
        "texts text[] NOT NULL)"
    )
    sql.execute("INSERT INTO enum_array_table (value, ints, texts) VALUES ('{V1, V2}', '{1,NULL}', '{a,NULL}')")
    with TaskRunner(_props(postgres_db, "initial")) as runner:
        (record,) = runner.wait_data(1, TABLE)
    assert op(record) == "r"
    schema, value = _field(record, "value")
    assert schema == _enum_array("value")
    assert schema.value_schema is not None and not schema.value_schema.optional
    assert value == ["V1", "V2"]
    _assert_other_arrays(record)


def test_stream_enum_array_items_are_required(postgres_db: Any) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE enum_array_table (pk SERIAL PRIMARY KEY, ints int4[], texts text[] NOT NULL)")
    with TaskRunner(_props(postgres_db, "no_data")) as runner:
        runner.wait_streaming(sql)
        # As Debezium's test: the enum type is created once streaming runs, a later schema change.
        sql.execute("CREATE TYPE test_type AS ENUM ('V1','V2')")
        sql.execute("ALTER TABLE enum_array_table ADD COLUMN value test_type[] NOT NULL")
        sql.execute("INSERT INTO enum_array_table (value, ints, texts) VALUES ('{V1, V2}', '{1,NULL}', '{a,NULL}')")
        sql.execute("UPDATE enum_array_table SET value = '{V1}'")
        sql.execute("DELETE FROM enum_array_table")
        records = runner.wait_data(3, TABLE)
    insert, update, delete = records
    assert [op(r) for r in records] == ["c", "u", "d"]
    for record, expected in ((insert, ["V1", "V2"]), (update, ["V1"])):
        schema, value = _field(record, "value")
        assert schema == _enum_array("value")
        assert schema.value_schema is not None and not schema.value_schema.optional
        assert value == expected
        _assert_other_arrays(record)
    before = delete.value.get("before")
    assert before.get("pk") == 1 and before.schema.field("value").schema == _enum_array("value")
