"""Issue 39, round two: Debezium 3.x ITs of the binlog connectors re-expressed on a real MariaDB 10.11.

- UuidColumnIT.shouldHandleUuidSnapshot (debezium-connector-mariadb): a UUID primary key is a required
  string named io.debezium.data.Uuid (version 1) equal to its text; here also in the binlog, as the
  record key, and MariaDB's INET4/INET6 (no Debezium mapping: the address's text).
- BinlogSkipMessagesWithoutChangeConfigIT: the streaming metric NumberOfUnchangedEventsSkipped is 1
  after one update skipped by skip.messages.without.change, and -1 with the option off.
- BinlogMultiTableStatementIT: the schema change event of `DROP TABLE t1,t2,t3,t4` has
  source.table naming all four tables, comma-separated.
"""

from __future__ import annotations

from typing import Any

from cdc.api import SourceRecord, Type
from tests.mysql.harness import TaskRunner, after, connector_props, execute

# Debezium's uuid_column_test.sql rows, and a version-1 UUID (MariaDB stores those with swapped
# segments: the binlog must still give the text's order).
UUIDS = [
    "01020304-0506-0708-090a-0b0c0d0e0f10",
    "00000000-0000-0000-0000-000000000000",
    "00000000-0000-0000-0000-000000000001",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
]
V1_UUID = "6ccd780c-baba-1026-9564-5b8c656024db"
MOVED = "aa020304-0506-0708-090a-0b0c0d0e0f10"


def _server_text(server: Any, sql: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def test_uuid_column_in_snapshot_and_binlog(mariadb_db) -> None:
    execute(
        mariadb_db,
        "CREATE TABLE test_uuid (id uuid NOT NULL, expected char(36), PRIMARY KEY (id))",
        *(f"INSERT INTO test_uuid VALUES ('{u}', '{u}')" for u in UUIDS),
    )
    with TaskRunner(connector_props(mariadb_db, snapshot__mode="initial")) as run:
        snapshot = run.wait_data(4, "test_uuid")
        field = snapshot[0].value.schema.field("after").schema.field("id").schema
        assert (field.type, field.name, field.version, field.optional) == (
            Type.STRING,
            "io.debezium.data.Uuid",
            1,
            False,
        )
        key_field = snapshot[0].key_schema.field("id").schema
        assert (key_field.type, key_field.name, key_field.optional) == (Type.STRING, "io.debezium.data.Uuid", False)
        for record in snapshot:
            assert record.value.get("op") == "r"
            row = after(record)
            assert row is not None and row["id"] == row["expected"]
            assert record.key.get("id") == row["expected"]
        assert sorted(after(r)["id"] for r in snapshot) == sorted(UUIDS)

        # The same values from the binlog (BINARY(16) in the table map), inserted, as key, and updated.
        run.wait_streaming()
        execute(
            mariadb_db,
            "DELETE FROM test_uuid",
            *(f"INSERT INTO test_uuid VALUES ('{u}', '{u}')" for u in [*UUIDS, V1_UUID]),
            f"UPDATE test_uuid SET id = '{MOVED}', expected = 'moved' WHERE id = '{UUIDS[0]}'",
        )
        streamed = run.wait_data(4 + 4 + 5 + 2, "test_uuid")[4:]
        creates = [r for r in streamed if r.value.get("op") == "c"]
        deletes = [r for r in streamed if r.value.get("op") == "d"]
        for record in creates[:5]:
            row = after(record)
            assert row is not None and row["id"] == row["expected"], row
            assert record.key.get("id") == row["expected"]
        assert [after(r)["id"] for r in creates[:5]] == [*UUIDS, V1_UUID]
        # The primary key update: a delete of the old key and a create of the new one.
        assert deletes[-1].key.get("id") == UUIDS[0]
        assert creates[-1].key.get("id") == MOVED
        assert after(creates[-1])["expected"] == "moved"
        assert sorted(r.key.get("id") for r in deletes[:4]) == sorted(UUIDS)


INET6 = [
    "2001:db8::ff00:42:8329",
    "::ffff:1.2.3.4",  # IPv4-mapped
    "::1.2.3.4",  # IPv4-compatible
    "::",
    "::1",
    "1::",
    "1:0:0:2::3",  # the longer zero run is compressed
    "1:0:2:3:4:5:6:7",  # MariaDB writes 1::2:3:4:5:6:7 (a single zero group is compressed too)
    "fe80::1:0:0:0",  # the first of two equal runs
    "::ffff:0.0.0.0",
    "1:2:3:4:5:6:7:8",
]
INET4 = ["192.168.1.2", "0.0.0.0", "255.255.255.255", "10.0.0.0"]


def test_inet4_and_inet6_columns_are_their_text(mariadb_db) -> None:
    rows = [(i, INET4[i % len(INET4)], a) for i, a in enumerate(INET6)]
    values = ", ".join(f"({i}, '{v4}', '{v6}', '{v6}')" for i, v4, v6 in rows)
    execute(mariadb_db, "CREATE TABLE addr (id INT PRIMARY KEY, v4 INET4, v6 INET6, k6 INET6 NOT NULL, UNIQUE (k6))",
            f"INSERT INTO addr VALUES {values}")  # fmt: skip
    # The server's own text of each address: what a SELECT returns, and what the binlog's bytes must give.
    server = {
        r[0]: (r[1], r[2]) for r in _server_text(mariadb_db, "SELECT id, CAST(v4 AS CHAR), CAST(v6 AS CHAR) FROM addr")
    }
    with TaskRunner(connector_props(mariadb_db)) as run:
        snapshot = run.wait_data(len(rows), "addr")
        schema = snapshot[0].value.schema.field("after").schema
        assert schema.field("v4").schema.type == Type.STRING and schema.field("v4").schema.name is None
        assert schema.field("v6").schema.optional and not schema.field("k6").schema.optional
        run.wait_streaming()
        execute(
            mariadb_db,
            "DELETE FROM addr",  # k6 is unique: the same addresses again, now from the binlog
            f"INSERT INTO addr VALUES {values.replace('(', '(100 + ')}",
            "INSERT INTO addr (id, k6) VALUES (999, '::2')",
        )
        run.wait_data(3 * len(rows) + 1, "addr")
        streamed = [r for r in run.data("addr") if r.value.get("op") == "c"]
        deleted = [r.value.get("before") for r in run.data("addr") if r.value.get("op") == "d"]
    assert [(d.get("id"), d.get("k6")) for d in deleted] == [(d.get("id"), server[d.get("id")][1]) for d in deleted]
    for record in [*snapshot, *streamed[:-1]]:
        row = after(record)
        assert row is not None
        want_v4, want_v6 = server[row["id"] % 100]
        assert (row["v4"], row["v6"], row["k6"]) == (want_v4, want_v6, want_v6), (record.value.get("op"), row)
    assert [after(r)["v6"] for r in streamed[:-1]] == [server[i][1] for i in range(len(INET6))]
    assert server[7][1] == "1::2:3:4:5:6:7" and server[1][1] == "::ffff:1.2.3.4" and server[2][1] == "::1.2.3.4"
    assert after(streamed[-1]) == {"id": 999, "v4": None, "v6": None, "k6": "::2"}


def _skip_run(server: Any, skip: bool) -> tuple[list[SourceRecord], Any]:
    """BinlogSkipMessagesWithoutChangeConfigIT: only id and white captured; an update of black alone
    changes nothing captured."""
    db = server.database
    execute(server, "CREATE TABLE debezium_test (id INT PRIMARY KEY, black INT, white INT)")
    props = connector_props(
        server,
        snapshot__mode="no_data",
        column__include__list=f"{db}.debezium_test.id,{db}.debezium_test.white",
        skip__messages__without__change=str(skip).lower(),
    )
    with TaskRunner(props) as run:
        run.wait_streaming()
        metrics = run.task._metrics()
        before = metrics["NumberOfUnchangedEventsSkipped"]
        execute(
            server,
            "INSERT INTO debezium_test (id, black, white) VALUES (1, 1, 1)",
            "UPDATE debezium_test SET black = 2 WHERE id = 1",
            "UPDATE debezium_test SET white = 2 WHERE id = 1",
            "UPDATE debezium_test SET white = 3, black = 3 WHERE id = 1",
            "INSERT INTO debezium_test VALUES (2, 0, 0)",  # a marker: everything before it was read
        )
        records = run.poll_until(
            lambda _: any(after(r) == {"id": 2, "white": 0} for r in run.data("debezium_test")), what="the marker"
        )
        del records
        return run.data("debezium_test")[:-1], (before, run.task._metrics()["NumberOfUnchangedEventsSkipped"])


def test_unchanged_events_skipped_metric_when_enabled(mariadb_db) -> None:
    records, (before, after_) = _skip_run(mariadb_db, skip=True)
    assert before == 0
    assert [(r.value.get("op"), after(r)) for r in records] == [
        ("c", {"id": 1, "white": 1}),
        ("u", {"id": 1, "white": 2}),
        ("u", {"id": 1, "white": 3}),
    ]
    assert after_ == 1


def test_unchanged_events_skipped_metric_is_minus_one_when_disabled(mariadb_db) -> None:
    records, (before, after_) = _skip_run(mariadb_db, skip=False)
    assert before == -1
    assert [after(r)["white"] for r in records] == [1, 1, 2, 3]
    assert after_ == -1


def test_multi_table_drop_names_every_table_in_source(mariadb_db) -> None:
    db = mariadb_db.database
    with TaskRunner(connector_props(mariadb_db, snapshot__mode="no_data")) as run:
        run.wait_streaming()
        execute(
            mariadb_db,
            *(f"CREATE TABLE t{i} (id INT PRIMARY KEY)" for i in range(1, 5)),
            "DROP TABLE t1,t2,t3,t4",
            "CREATE TABLE a (id INT PRIMARY KEY)",
            "CREATE TABLE c (id INT PRIMARY KEY)",
            "RENAME TABLE a TO b, c TO d",
        )

        def changes(records: list[SourceRecord]) -> list[SourceRecord]:
            return [r for r in records if r.topic == "dbserver1" and r.value.get("source").get("table")]

        run.poll_until(lambda rs: len(changes(rs)) >= 8, what="8 schema change events")
        events = changes(run.records)
    tables = [e.value.get("source").get("table") for e in events]
    assert all(e.value.get("source").get("db") == db for e in events)
    assert tables[:4] == ["t1", "t2", "t3", "t4"]
    # Debezium's BinlogSourceInfo.table(): every table of the statement, comma-separated.
    assert tables[4] == "t1,t2,t3,t4"
    drop = events[4].value.get("tableChanges")
    assert [(c.get("type"), c.get("id")) for c in drop] == [("DROP", f'"{db}"."t{i}"') for i in range(1, 5)]
    # A rename names its new tables (Debezium's TableAlteredEvent carries the new id).
    assert tables[5:] == ["a", "c", "b,d"]
