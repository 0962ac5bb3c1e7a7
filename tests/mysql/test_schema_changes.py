"""Schema change events carry the table (Debezium's tableChanges[].table); column defaults reach the Connect schema."""

from __future__ import annotations

import datetime
import decimal

from cdc_mysql.defaults import default_expression, raw_default
from cdc_mysql.table import ColumnDef
from tests.mysql.harness import TaskRunner, connector_props, execute


def _columns(change) -> dict[str, dict]:
    table = change.get("table")
    return {c.get("name"): {f.name: c.get(f.name) for f in c.schema.fields} for c in table.get("columns")}


def test_streamed_ddl_carries_the_table_and_defaults_reach_the_schema(mariadb_db) -> None:
    execute(
        mariadb_db,
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) DEFAULT 'it''s', "
        "ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, s INT DEFAULT (1 + 2)) COMMENT 'orders' CHARSET latin1",
        "INSERT INTO t (id) VALUES (1)",
    )
    with TaskRunner(connector_props(mariadb_db, include__schema__comments="true")) as run:
        snap = run.wait_data(1)[0]
        execute(
            mariadb_db,
            "ALTER TABLE t ADD COLUMN price DECIMAL(6,2) NOT NULL DEFAULT 1.5 COMMENT 'net', "
            "ADD COLUMN flags SET('a','b') DEFAULT 'a,b', ADD COLUMN d DATE DEFAULT '2020-01-02'",
            "INSERT INTO t (id, v) VALUES (2, NULL)",
            "CREATE TABLE u (k BIGINT UNSIGNED NOT NULL PRIMARY KEY, b BIT(4) DEFAULT b'101')",
        )
        run.wait_data(2)
        # A DROP carries the last known table (the CREATE must be read first: information_schema has no past).
        run.poll_until(lambda rs: sum(r.topic == "dbserver1" for r in rs) == 3, what="3 schema changes")
        execute(mariadb_db, "DROP TABLE u")
        run.poll_until(lambda rs: sum(r.topic == "dbserver1" for r in rs) == 4, what="4 schema changes")
    changes = [r.value for r in run.records if r.topic == "dbserver1"]
    # Snapshot-time defaults on the value schema; expressions other than CURRENT_TIMESTAMP are left out.
    value = snap.value_schema.field("after").schema
    assert value.field("v").schema.default_value == "it's"
    assert value.field("ts").schema.default_value == "1970-01-01T00:00:00Z"
    assert value.field("s").schema.default_value is None

    alter = changes[1].get("tableChanges")[0]
    assert alter.get("type") == "ALTER" and alter.get("id") == f'"{mariadb_db.database}"."t"'
    table = alter.get("table")
    assert table.get("primaryKeyColumnNames") == ["id"]
    assert (table.get("defaultCharsetName"), table.get("comment")) == ("latin1", "orders")
    cols = _columns(alter)
    assert list(cols) == ["id", "v", "ts", "s", "price", "flags", "d"]
    assert cols["id"]["autoIncremented"] and cols["id"]["generated"]
    assert (cols["id"]["jdbcType"], cols["id"]["typeName"], cols["id"]["optional"]) == (4, "INT", False)
    assert (cols["v"]["typeName"], cols["v"]["length"], cols["v"]["charsetName"]) == ("VARCHAR", 20, "latin1")
    assert cols["v"]["defaultValueExpression"] == "it's" and cols["s"]["defaultValueExpression"] is None
    price = cols["price"]
    assert (price["length"], price["scale"], price["defaultValueExpression"], price["comment"]) == (6, 2, "1.50", "net")
    assert cols["flags"]["enumValues"] == ["a", "b"] and cols["flags"]["position"] == 6

    # The row streamed after the ALTER: its schema (from TABLE_MAP) carries the new defaults.
    streamed = run.data("t")[-1]
    after = streamed.value_schema.field("after").schema
    assert after.field("price").schema.default_value == decimal.Decimal("1.50")
    assert after.field("flags").schema.default_value == "a,b"
    assert after.field("d").schema.default_value == (datetime.date(2020, 1, 2) - datetime.date(1970, 1, 1)).days
    assert streamed.value.get("after").get_without_default("v") is None

    create, drop = changes[2].get("tableChanges")[0], changes[3].get("tableChanges")[0]
    assert create.get("type") == "CREATE" and _columns(create)["k"]["typeName"] == "BIGINT UNSIGNED"
    assert _columns(create)["b"]["defaultValueExpression"] == "101"
    assert drop.get("type") == "DROP" and list(_columns(drop)) == ["k", "b"]


def test_default_expressions_of_mariadb_and_mysql() -> None:
    assert default_expression("'it''s \\\\ x'", "", True, True) == "it's \\ x"
    assert default_expression("NULL", "", True, True) is None
    assert default_expression("current_timestamp()", "", False, True) == "1970-01-01 00:00:00"
    assert default_expression("current_timestamp(3)", "", True, True) is None
    assert default_expression("(1 + 2)", "", True, True) is None
    assert default_expression("b'101'", "", True, True) == "101"
    assert default_expression("-5", "", True, True) == "-5"
    # MySQL 8: bare literals; expressions flagged in EXTRA.
    assert default_expression("abc", "", True, False) == "abc"
    assert default_expression("CURRENT_TIMESTAMP", "DEFAULT_GENERATED", False, False) == "1970-01-01 00:00:00"
    assert default_expression("(rand())", "DEFAULT_GENERATED", True, False) is None
    assert default_expression(None, "", False, False) is None


def test_raw_defaults_take_the_shape_the_converters_read() -> None:
    assert raw_default(ColumnDef("c", "time"), "-01:02:03") == -datetime.timedelta(hours=1, minutes=2, seconds=3)
    expected = datetime.datetime(2020, 1, 2, 3, 4, 5, 500000)
    assert raw_default(ColumnDef("c", "datetime"), "2020-01-02 03:04:05.5") == expected
    assert raw_default(ColumnDef("c", "date"), "0000-00-00") == "0000-00-00"
    assert raw_default(ColumnDef("c", "int"), "true") == 1
    assert raw_default(ColumnDef("c", "bit", length=4), "101") == "101"
