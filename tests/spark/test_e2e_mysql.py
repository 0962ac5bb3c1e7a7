"""End to end: MariaDB → the MySQL connector → embedded log → Spark → Delta, row-for-row equal.

The connector task is driven in-process by tests/mysql/harness.py (as the runtime does:
poll, then store), and its records are written to the embedded log with the JsonConverter
(schemas.enable=true), exactly what a `cdc run` worker stores.
"""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

from cdc.converters.json import JsonConverter
from cdc.log import TopicSpec
from cdc.log.embedded import EmbeddedLog
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.spark.helpers import delta_rows, run_available_now


def _ship(runner: TaskRunner, state: str, already: int) -> int:
    """Append the connector's records from index `already` to the embedded log, converted as a
    `cdc run` worker does (cdc/jobs/spec.py): a NULL stays NULL in a column with a DEFAULT
    (Kafka's JsonConverter would write the default: replace.null.with.default=true)."""
    keys, values = JsonConverter(), JsonConverter()
    keys.configure({"schemas.enable": True, "replace.null.with.default": False}, is_key=True)
    values.configure({"schemas.enable": True, "replace.null.with.default": False}, is_key=False)
    with EmbeddedLog(state) as log:
        producer = log.producer()
        for r in runner.records[already:]:
            log.create_topics([TopicSpec(r.topic, 2)])
            producer.send(
                r.topic,
                values.from_connect_data(r.topic, r.value_schema, r.value),
                key=keys.from_connect_data(r.topic, r.key_schema, r.key),
            )
        assert producer.flush(30) == 0
        producer.close()
    return len(runner.records)


def _source_rows(server: Any) -> dict[int, tuple]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, name, price, qty FROM items")
        return {r[0]: tuple(r) for r in cur.fetchall()}


def test_mariadb_to_delta_row_for_row(spark: Any, mariadb_db: Any, tmp_path: Path) -> None:
    execute(
        mariadb_db,
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), qty INT NULL)",
        "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}', {i}.25, {i})" for i in range(1, 31)),
    )
    state, lake = str(tmp_path / "state"), str(tmp_path / "lake")
    source = {"state.dir": state, "topic.pattern": r"dbserver1\..*\.items"}
    sink = {"target": "delta", "path": lake, "table.name.format": "${table}"}
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(30)  # the snapshot
        shipped = _ship(run, state, 0)
        run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
        execute(
            mariadb_db,
            "INSERT INTO items VALUES (100, 'new', 9.99, NULL), (101, 'gone soon', 1.00, 1)",
            "UPDATE items SET price = price * 2, qty = NULL WHERE id <= 10",
            "DELETE FROM items WHERE id BETWEEN 20 AND 25 OR id = 101",
            "UPDATE items SET id = 200 WHERE id = 30",  # a primary-key change: d for 30, c for 200
            "START TRANSACTION",
            "UPDATE items SET name = 'in-txn' WHERE id = 1",
            "UPDATE items SET name = 'in-txn-again' WHERE id = 1",
            "COMMIT",
        )
        run.wait_data(30 + 2 + 10 + 7 + 2 + 2)
        _ship(run, state, shipped)
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    lake_rows = {r["id"]: (r["id"], r["name"], r["price"], r["qty"]) for r in delta_rows(f"{lake}/items")}
    expected = _source_rows(mariadb_db)
    assert lake_rows == expected
    assert expected[1][1] == "in-txn-again" and expected[5][2] == decimal.Decimal("10.50") and 200 in expected


def test_a_column_added_with_a_default_holds_it_in_the_lakes_untouched_rows(
    spark: Any, mariadb_db: Any, tmp_path: Path
) -> None:
    """`ALTER TABLE … ADD COLUMN vip INT NOT NULL DEFAULT 7` fills MariaDB's rows without an event;
    the lake's rows the source did not touch again hold 7 too (the default travels in the events'
    schema), the updated one its own value."""
    execute(
        mariadb_db,
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
        "INSERT INTO items VALUES " + ", ".join(f"({i}, 'item{i}')" for i in range(1, 6)),
    )
    state, lake = str(tmp_path / "state"), str(tmp_path / "lake")
    source = {"state.dir": state, "topic.pattern": r"dbserver1\..*\.items"}
    sink = {"target": "delta", "path": lake, "table.name.format": "${table}"}
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(5)  # the snapshot
        shipped = _ship(run, state, 0)
        run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
        execute(
            mariadb_db,
            "ALTER TABLE items ADD COLUMN vip INT NOT NULL DEFAULT 7",
            "UPDATE items SET vip = 1, name = 'touched' WHERE id = 2",
        )
        run.wait_data(5 + 1)
        _ship(run, state, shipped)
    run_available_now(spark, source, sink, str(tmp_path / "ckpt"))
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, name, vip FROM items")
        expected = {r[0]: tuple(r) for r in cur.fetchall()}
    assert {r["id"]: (r["id"], r["name"], r["vip"]) for r in delta_rows(f"{lake}/items")} == expected
    assert expected[1] == (1, "item1", 7) and expected[2] == (2, "touched", 1)
