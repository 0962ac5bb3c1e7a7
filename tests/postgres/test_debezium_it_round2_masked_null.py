"""Issue 39, item 6: a masked NULL becomes the mask, as in Debezium 3.x.

Debezium's TableSchemaBuilder passes every column value, null included, through the column's mapping
converter, and MaskStrings' MaskingValueConverter returns the mask whatever it is given; its
HashValueConverter gives null for a null and TruncatingValueConverter leaves it as it is. The cases
re-express PostgresConnectorIT.shouldConsumeEventsWithMaskedColumns,
shouldTakeColumnIncludeListFilterIntoAccount and shouldConsumeEventsWithMaskedHashedColumns on a real
server, in the snapshot and in streaming, in `after` and `before`. MySQL shares the mask rule
(cdc_debezium.filters), so one case runs it on MariaDB.
"""

from __future__ import annotations

from typing import Any

from cdc.api import SourceRecord, Struct
from tests.mysql import harness as mysql_harness
from tests.postgres.harness import TaskRunner, connector_props, op

# PostgresConnectorIT's SETUP_TABLES_STMT: one row in each table, s2.a.bb left null.
SETUP = (
    "CREATE SCHEMA s1",
    "CREATE SCHEMA s2",
    "CREATE TABLE s1.a (pk SERIAL, aa integer, PRIMARY KEY (pk))",
    "CREATE TABLE s2.a (pk SERIAL, aa integer, bb varchar(20), PRIMARY KEY (pk))",
    "INSERT INTO s1.a (aa) VALUES (1)",
    "INSERT INTO s2.a (aa) VALUES (1)",
)


def _struct(record: SourceRecord, name: str) -> dict[str, Any] | None:
    value = record.value.get(name)
    assert value is None or isinstance(value, Struct)
    return None if value is None else value.to_dict()


def test_masked_null_is_the_mask_in_snapshot_and_streaming_after_and_before(postgres_db) -> None:
    """shouldConsumeEventsWithMaskedColumns (column.mask.with.5.chars=s2.a.bb), with the `before` images
    it checks when present: a FULL old row on update, and a key-only old row on delete, whose unlogged bb
    is null and so masked too."""
    sql = postgres_db.connect()
    for statement in SETUP:
        sql.execute(statement)
    props = connector_props(postgres_db, **{"column.mask.with.5.chars": "s2.a.bb"})
    with TaskRunner(props) as runner:
        (read,) = runner.wait_data(1, "s2.a")
        runner.wait_data(1, "s1.a")
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO s2.a (aa, bb) VALUES (1, 'test')")
        sql.execute("INSERT INTO s2.a (aa, bb) VALUES (3, NULL)")
        sql.execute("UPDATE s2.a SET aa = 2, bb = 'hello' WHERE pk = 2")
        sql.execute("ALTER TABLE s2.a REPLICA IDENTITY FULL")
        sql.execute("UPDATE s2.a SET bb = NULL WHERE pk = 2")
        sql.execute("ALTER TABLE s2.a REPLICA IDENTITY DEFAULT")
        sql.execute("DELETE FROM s2.a WHERE pk = 3")
        events = runner.wait_data(6, "s2.a")
    assert [op(r) for r in events] == ["r", "c", "c", "u", "u", "d"]
    # The snapshot's null bb, a value, a null, each update's after: all the mask.
    assert _struct(read, "after") == {"pk": 1, "aa": 1, "bb": "*****"}
    _, create, null_create, update, full_update, delete = events
    assert _struct(create, "after") == {"pk": 2, "aa": 1, "bb": "*****"}
    assert _struct(null_create, "after") == {"pk": 3, "aa": 3, "bb": "*****"}
    assert _struct(update, "before") is None  # REPLICA IDENTITY DEFAULT logs no old row for this update
    assert _struct(update, "after") == {"pk": 2, "aa": 2, "bb": "*****"}
    assert _struct(full_update, "before") == {"pk": 2, "aa": 2, "bb": "*****"}
    assert _struct(full_update, "after") == {"pk": 2, "aa": 2, "bb": "*****"}
    assert _struct(delete, "before") == {"pk": 3, "aa": None, "bb": "*****"}  # key-only old row
    field = read.value.get("after").schema.field("bb").schema
    assert field.optional and field.parameters == {"masked": "true"}


def test_masked_null_char_column_with_column_include_list(postgres_db) -> None:
    """shouldTakeColumnIncludeListFilterIntoAccount: column.include.list=.+aa,.+cc and
    column.mask.with.5.chars=.+cc; bb is left out and the null char(12) cc is the mask."""
    sql = postgres_db.connect()
    for statement in SETUP:
        sql.execute(statement)
    sql.execute("ALTER TABLE s1.a ADD COLUMN bb integer")
    sql.execute("ALTER TABLE s1.a ADD COLUMN cc char(12)")
    sql.execute("INSERT INTO s1.a (aa, bb) VALUES (2, 2)")
    props = connector_props(postgres_db, **{"column.mask.with.5.chars": ".+cc", "column.include.list": ".+aa,.+cc"})
    with TaskRunner(props) as runner:
        reads = runner.wait_data(2, "s1.a")
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO s1.a (aa, cc) VALUES (4, 'x')")
        events = runner.wait_data(3, "s1.a")
    assert len(reads) == 2 and [op(r) for r in events] == ["r", "r", "c"]
    for record in events:
        after = record.value.get("after")
        assert after.schema.field("bb") is None
        assert after.get("cc") == "*****"
    assert [r.value.get("after").get("aa") for r in events] == [1, 2, 4]


def test_hashed_and_truncated_nulls_stay_null(postgres_db) -> None:
    """shouldConsumeEventsWithMaskedHashedColumns (a hashed null bb is null) and TruncateColumn on a null:
    only the mask replaces a null."""
    sql = postgres_db.connect()
    for statement in SETUP:
        sql.execute(statement)
    sql.execute("CREATE TABLE s2.b (pk SERIAL, bb varchar(255), note text, PRIMARY KEY (pk))")
    sql.execute("INSERT INTO s2.b (bb, note) VALUES (NULL, NULL)")
    props = connector_props(
        postgres_db,
        **{
            "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": "s2.a.bb, s2.b.bb",
            "column.truncate.to.3.chars": "s2.b.note",
        },
    )
    with TaskRunner(props) as runner:
        (read_a,) = runner.wait_data(1, "s2.a")
        (read_b,) = runner.wait_data(1, "s2.b")
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO s2.b (bb, note) VALUES (NULL, NULL), ('test', 'a long note')")
        events = runner.wait_data(3, "s2.b")
    assert _struct(read_a, "after") == {"pk": 1, "aa": 1, "bb": None}
    assert _struct(read_b, "after") == {"pk": 1, "bb": None, "note": None}
    _, null_create, create = events
    assert _struct(null_create, "after") == {"pk": 2, "bb": None, "note": None}
    hashed = create.value.get("after")
    assert len(hashed.get("bb")) == 64 and hashed.get("note") == "a l"  # the hex SHA-256 and the cut text


def test_mysql_masked_null_is_the_mask(mariadb_db) -> None:
    """MySQL takes the same mask rule (cdc_debezium.filters); Debezium's binlog connectors build their
    values with the same TableSchemaBuilder, so a null there is masked too, in the snapshot and the binlog."""
    mysql_harness.execute(
        mariadb_db,
        "CREATE TABLE a (pk INT PRIMARY KEY, bb VARCHAR(20))",
        "INSERT INTO a VALUES (1, NULL)",
    )
    db = mariadb_db.database
    props = mysql_harness.connector_props(mariadb_db, **{"column.mask.with.5.chars": f"{db}\\.a\\.bb"})
    with mysql_harness.TaskRunner(props) as run:
        run.wait_data(1)
        mysql_harness.execute(mariadb_db, "INSERT INTO a VALUES (2, NULL)", "INSERT INTO a VALUES (3, 'x')")
        records = run.wait_data(3)
    assert [mysql_harness.after(r) for r in records] == [
        {"pk": 1, "bb": "*****"},
        {"pk": 2, "bb": "*****"},
        {"pk": 3, "bb": "*****"},
    ]
