"""Golden test: key and value through the JSON converter (schemas.enable=true) match Debezium's MySQL events.

The expected schemas are Debezium 3.x's documented `customers` example (envelope version 2,
`ts_us`/`ts_ns`, `transaction` block, the MySQL source block), with the database name of
this test. Only values that differ per run (positions, timestamps) are checked by type.
"""

from __future__ import annotations

import json
from typing import Any

from cdc.converters.json import JsonConverter
from tests.mysql.harness import TaskRunner, connector_props, execute


def _field(type_: str, name: str, optional: bool = False, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, **extra, "field": name}


SOURCE_FIELDS = [
    _field("string", "version"),
    _field("string", "connector"),
    _field("string", "name"),
    _field("int64", "ts_ms"),
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
        "default": "false",
        "field": "snapshot",
    },
    _field("string", "db"),
    _field("string", "sequence", True),
    _field("int64", "ts_us", True),
    _field("int64", "ts_ns", True),
    _field("string", "table", True),
    _field("int64", "server_id"),
    _field("string", "gtid", True),
    _field("string", "file"),
    _field("int64", "pos"),
    _field("int32", "row"),
    _field("int64", "thread", True),
    _field("string", "query", True),
]


def expected_value_schema(db: str) -> dict[str, Any]:
    row_fields = [
        _field("int32", "id"),
        _field("string", "first_name"),
        _field("string", "last_name"),
        _field("string", "email"),
    ]
    row = {"type": "struct", "fields": row_fields, "optional": True, "name": f"dbserver1.{db}.customers.Value"}
    return {
        "type": "struct",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {
                "type": "struct",
                "fields": SOURCE_FIELDS,
                "optional": False,
                "name": "io.debezium.connector.mysql.Source",
                "version": 1,
                "field": "source",
            },
            {
                "type": "struct",
                "fields": [
                    _field("string", "id"),
                    _field("int64", "total_order"),
                    _field("int64", "data_collection_order"),
                ],
                "optional": True,
                "name": "event.block",
                "version": 1,
                "field": "transaction",
            },
            _field("string", "op"),
            _field("int64", "ts_ms", True),
            _field("int64", "ts_us", True),
            _field("int64", "ts_ns", True),
        ],
        "optional": False,
        "name": f"dbserver1.{db}.customers.Envelope",
        "version": 2,
    }


def _converter(is_key: bool) -> JsonConverter:
    c = JsonConverter()
    c.configure({"schemas.enable": "true"}, is_key)
    return c


def test_customers_events_match_debezium_field_for_field(mariadb_db) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE customers (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name VARCHAR(255) NOT NULL,"
        " last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE KEY) AUTO_INCREMENT=1001",
        "INSERT INTO customers (first_name, last_name, email) VALUES ('Sally', 'Thomas', 'sally.thomas@acme.com')",
    )
    keys, values = _converter(True), _converter(False)
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        execute(mariadb_db, "UPDATE customers SET first_name = 'Anne Marie' WHERE id = 1001")
        recs = run.wait_data(2)
    read, update = recs
    assert read.topic == update.topic == f"dbserver1.{db}.customers"

    key = json.loads(keys.from_connect_data(update.topic, update.key_schema, update.key))
    assert key == {
        "schema": {
            "type": "struct",
            "fields": [{"type": "int32", "optional": False, "field": "id"}],
            "optional": False,
            "name": f"dbserver1.{db}.customers.Key",
        },
        "payload": {"id": 1001},
    }

    for record in (read, update):
        value = json.loads(values.from_connect_data(record.topic, record.value_schema, record.value))
        assert value["schema"] == expected_value_schema(db)
        payload = value["payload"]
        assert list(payload) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
        assert [f["field"] for f in SOURCE_FIELDS] == list(payload["source"])
        assert payload["transaction"] is None
        assert payload["ts_us"] // 1000 == payload["ts_ms"] and payload["ts_ns"] // 1000 == payload["ts_us"]

    read_payload = json.loads(values.from_connect_data(read.topic, read.value_schema, read.value))["payload"]
    assert read_payload["op"] == "r" and read_payload["before"] is None
    assert read_payload["after"] == {
        "id": 1001, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"
    }  # fmt: skip
    src = read_payload["source"]
    assert (src["connector"], src["name"], src["db"], src["table"]) == ("mysql", "dbserver1", db, "customers")
    assert src["snapshot"] == "last" and src["server_id"] == 0 and src["row"] == 0

    upd = json.loads(values.from_connect_data(update.topic, update.value_schema, update.value))["payload"]
    assert upd["op"] == "u"
    assert upd["before"]["first_name"] == "Sally" and upd["after"]["first_name"] == "Anne Marie"
    src = upd["source"]
    assert src["snapshot"] == "false" and src["server_id"] == 1 and src["file"].startswith("mysql-bin.")
    assert src["pos"] > 4 and src["row"] == 0 and src["gtid"].count("-") == 2 and src["query"] is None
    assert src["ts_ms"] % 1000 == 0  # binlog timestamps have second precision


def test_offsets_have_debezium_keys(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO t VALUES (1), (2)")
        recs = run.wait_data(3)[1:]
    first, second = (r.source_offset for r in recs)
    assert recs[0].source_partition == {"server": "dbserver1"}
    # Debezium's keys (`server_id`: the id of the server that wrote the transaction, as in Debezium's
    # offsets), plus the binlog lineage's server identity (cdc_mysql/lineage.py; `epoch` appears only
    # once a failover bumped it above 0); the reader's server id only when the connector chose it
    # (cdc_mysql/server_ids.py), and connector_props gives one.
    keys = {"file", "pos", "gtids", "row", "ts_sec", "server_id", "server_identity"}
    assert set(first) == keys and first["row"] == 1
    assert f"server_id={first['server_id']}" == first["server_identity"]
    assert set(second) == keys and second["row"] == 2
    assert first["server_identity"].startswith("server_id=")
    assert first["pos"] == second["pos"]  # the transaction start, not the row event
