"""Column types declared by DDL text the connector reads while streaming (declared_types.py).

Re-expresses Debezium 3.x's BinlogDefaultValueIT.shouldConvertDefaultWithCharacterSetIntroducer (a
table created while streaming, after a no_data snapshot): `REAL` is java.sql.Types.REAL in Debezium's
DDL parser, a FLOAT32 field with the default 3.14f, although the server (SHOW CREATE TABLE,
information_schema) says `double`. A snapshot of the same table gives FLOAT64, as Debezium's snapshot
parses SHOW CREATE TABLE. A restart rebuilds the declared types from the schema history.

The declarations depend on the statements alone (never on when information_schema is read): the
unit tests at the end feed DeclaredTypes statement streams.
"""

from __future__ import annotations

import struct
from pathlib import Path

from cdc.api import Type
from cdc_mysql.declared_types import DeclaredTypes
from tests.mysql.harness import TaskRunner, connector_props, execute, op
from tests.rig import MariaDbServer

CREATE = (
    "CREATE TABLE DBZ_5241_DEFAULT_CS_INTRO (ID INT NOT NULL AUTO_INCREMENT PRIMARY KEY, C0 BIGINT NOT NULL, "
    "C16 NUMERIC(3, 2) DEFAULT _UTF8MB4'1.23', C18 REAL DEFAULT _UTF8MB4'3.14', "
    "C19 REAL NOT NULL DEFAULT _UTF8MB4'3.14', C20 DOUBLE DEFAULT 2.5)"
)


def f32(v: float) -> float:
    """Java's (double) (float) v."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _props(server: MariaDbServer, history: Path, **extra: str) -> dict[str, str]:
    return connector_props(
        server,
        **{
            "snapshot.mode": "no_data",
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": str(history),
            "include.schema.changes": "false",
            **extra,
        },
    )


def _field(record, column: str):
    return record.value_schema.field("after").schema.field(column).schema


def _check_real_columns(record, defaults: bool = True) -> None:
    for column in ("C18", "C19"):
        schema = _field(record, column)
        assert schema.type is Type.FLOAT32, (column, schema.type)
        if defaults:
            assert f32(schema.default_value) == f32(3.14), (column, schema.default_value)
        assert record.value.get("after").get(column) == f32(3.14), column  # the value as Java's floatValue()
    assert _field(record, "C19").optional is False
    # DOUBLE stays FLOAT64; NUMERIC is a decimal either way.
    assert _field(record, "C20").type is Type.FLOAT64
    if defaults:
        assert _field(record, "C20").default_value == 2.5


def test_real_created_while_streaming_is_float32_and_survives_a_restart(mariadb_db: MariaDbServer, tmp_path) -> None:
    history = tmp_path / "history.jsonl"
    props = _props(mariadb_db, history)
    with TaskRunner(props) as runner:
        runner.wait_streaming()
        execute(mariadb_db, CREATE, "INSERT INTO DBZ_5241_DEFAULT_CS_INTRO (C0) VALUES (1)")
        live = runner.wait_data(1, "DBZ_5241_DEFAULT_CS_INTRO")[0]
        offsets = runner.offsets
    _check_real_columns(live)

    # A restart from the stored offset: the CREATE is behind it, only the schema history has its text.
    with TaskRunner(props, offsets) as again:
        again.wait_streaming()
        execute(mariadb_db, "INSERT INTO DBZ_5241_DEFAULT_CS_INTRO (C0) VALUES (2)")
        resumed = again.wait_data(1, "DBZ_5241_DEFAULT_CS_INTRO")[0]
    # The restart reads the history, not information_schema: the defaults (information_schema's facts)
    # come back with the table's next DDL, as before the declared types (plugins/mysql/README.md).
    _check_real_columns(resumed, defaults=False)
    types = [(f.name, f.schema.type) for f in live.value_schema.field("after").schema.fields]
    assert [(f.name, f.schema.type) for f in resumed.value_schema.field("after").schema.fields] == types


def test_real_in_a_snapshot_is_float64(mariadb_db: MariaDbServer, tmp_path) -> None:
    """The snapshot has no DDL text but SHOW CREATE TABLE's (`double`): FLOAT64, as Debezium's snapshot."""
    execute(mariadb_db, CREATE, "INSERT INTO DBZ_5241_DEFAULT_CS_INTRO (C0) VALUES (1)")
    props = _props(mariadb_db, tmp_path / "history.jsonl", **{"snapshot.mode": "initial"})
    with TaskRunner(props) as runner:
        record = runner.wait_data(1, "DBZ_5241_DEFAULT_CS_INTRO")[0]
        assert op(record) == "r"
        # A later ALTER read while streaming declares the column REAL: FLOAT32 from then on.
        execute(
            mariadb_db,
            "ALTER TABLE DBZ_5241_DEFAULT_CS_INTRO MODIFY C20 REAL DEFAULT 2.5",
            "INSERT INTO DBZ_5241_DEFAULT_CS_INTRO (C0) VALUES (2)",
        )
        created = runner.wait_data(2, "DBZ_5241_DEFAULT_CS_INTRO")[1]
    for column in ("C18", "C19", "C20"):
        assert _field(record, column).type is Type.FLOAT64, column
    assert _field(record, "C18").default_value == 3.14
    assert [_field(created, c).type for c in ("C18", "C19", "C20")] == [Type.FLOAT64, Type.FLOAT64, Type.FLOAT32]
    assert f32(_field(created, "C20").default_value) == f32(2.5)


# -- the declarations as a function of the statements ----------------------------------------------


def _declared(*statements: str, db: str = "d") -> DeclaredTypes:
    declared = DeclaredTypes()
    for sql in statements:
        declared.observe(db, sql)
    return declared


def _type(declared: DeclaredTypes, table: str, column: str) -> tuple[str, int | None] | None:
    d = declared.declared(f"d.{table}", column)
    return None if d is None else (d.type_name, d.length)


def test_an_alter_of_a_table_never_seen_created_declares_nothing() -> None:
    """A table created before streaming began (and not in the history): a restart whose history lacks
    the ALTER gives the same as the run that read it (test_table_map_reuse's seeds 11 and 90210)."""
    declared = _declared("ALTER TABLE a MODIFY n BIGINT", "ALTER TABLE a ADD COLUMN e INT NULL")
    assert not declared.follows("d.a") and _type(declared, "a", "n") is None


def test_a_declaration_holds_until_a_statement_changes_its_column() -> None:
    create = "CREATE TABLE a (id INT PRIMARY KEY, n NUMERIC(5,2), r REAL, f FLOAT(10))"
    declared = _declared(create, "ALTER TABLE a ADD INDEX i (n), ALGORITHM=INPLACE, COMMENT 'x'")
    assert [_type(declared, "a", c) for c in ("id", "n", "r", "f")] == [
        ("INT", None), ("NUMERIC", 5), ("REAL", None), ("FLOAT", 10),
    ]  # fmt: skip
    declared.observe("d", "ALTER TABLE a MODIFY n BIGINT, CHANGE r r2 DOUBLE, DROP COLUMN f")
    assert [_type(declared, "a", c) for c in ("n", "r", "r2", "f")] == [("BIGINT", None), None, ("DOUBLE", None), None]
    declared.observe("d", "RENAME TABLE a TO t, b TO a, t TO b")  # a swap: the declarations go with the table
    assert _type(declared, "b", "n") == ("BIGINT", None) and not declared.follows("d.a")
    declared.observe("d", "CREATE OR REPLACE TABLE b (n INT)")
    assert _type(declared, "b", "n") == ("INT", None)
    declared.observe("d", "DROP TABLE b")
    assert not declared.follows("d.b")


def test_a_clause_that_cannot_be_followed_clears_the_table() -> None:
    declared = _declared("CREATE TABLE a (n NUMERIC(5,2))", "ALTER TABLE a WAIT 5 MODIFY n INT")
    assert not declared.follows("d.a")
    # … and an ALTER after that declares nothing until the table is created again
    declared.observe("d", "ALTER TABLE a MODIFY n REAL")
    assert _type(declared, "a", "n") is None


def test_the_snapshot_text_declares_the_servers_types() -> None:
    """SHOW CREATE TABLE's text (recorded in the history by the snapshot) says what information_schema
    says, ZEROFILL included (`INT UNSIGNED`, as catalog.py names it)."""
    declared = _declared(
        "CREATE TABLE `a` (\n  `id` int(11) NOT NULL,\n  `z` int(10) unsigned zerofill DEFAULT NULL,\n"
        "  `c` decimal(5,2) DEFAULT NULL,\n  `f` float DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB"
    )
    assert [_type(declared, "a", c) for c in ("id", "z", "c", "f")] == [
        ("INT", 11), ("INT UNSIGNED", 10), ("DECIMAL", 5), ("FLOAT", None),
    ]  # fmt: skip


def test_a_replayed_history_declares_what_the_live_run_did() -> None:
    statements = [
        ("d", "CREATE TABLE a (id INT PRIMARY KEY, n NUMERIC(5,2))"),
        ("d", "ALTER TABLE a RENAME TO b, MODIFY n FLOAT(10)"),
        ("e", "CREATE TABLE d.c LIKE d.b"),
        ("d", "DROP TEMPORARY TABLE b"),
    ]
    live = DeclaredTypes()
    for db, sql in statements:
        live.observe(db, sql)
    replayed = DeclaredTypes()
    replayed.replay([{"databaseName": db, "ddl": sql, "tableChanges": []} for db, sql in statements])
    assert replayed._tables == live._tables
    assert _type(live, "c", "n") == ("FLOAT", 10) and _type(live, "b", "n") == ("FLOAT", 10)
