"""Golden: events match Debezium's documented PostgreSQL structure field for field.

Reference: Debezium's postgresql.adoc, "create events" (the `customers` table of the
`inventory` schema, connector name `PostgreSQL_server`). The doc's source-block schema
lists `snapshot` as boolean and omits `sequence`, while its payloads carry `sequence`;
we follow current Debezium (snapshot is the `io.debezium.data.Enum` string, `sequence`
present), as the shared source-block schema does.
"""

from __future__ import annotations

import json

from tests.postgres.test_connector import connector, herder, values, wait_until  # noqa: F401
from tests.support.logs import topic_records

# The doc's `id` has no default; Debezium's own ITs (and its PostgresDefaultValueConverter) give a SERIAL
# column `default 0` (nextval(...) is "generated": its placeholder), as this connector does.
DOC_ROW_FIELDS = [
    {"type": "int32", "optional": False, "default": 0, "field": "id"},
    {"type": "string", "optional": False, "field": "first_name"},
    {"type": "string", "optional": False, "field": "last_name"},
    {"type": "string", "optional": False, "field": "email"},
]
DOC_SOURCE_FIELDS = {
    "version": ("string", False),
    "connector": ("string", False),
    "name": ("string", False),
    "ts_ms": ("int64", False),
    "db": ("string", False),
    "schema": ("string", False),
    "table": ("string", False),
    "txId": ("int64", True),
    "lsn": ("int64", True),
    "xmin": ("int64", True),
}


def test_create_event_matches_documented_structure(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    sql.execute("CREATE SCHEMA inventory")
    sql.execute(
        "CREATE TABLE inventory.customers(id serial PRIMARY KEY, first_name varchar(255) NOT NULL,"
        " last_name varchar(255) NOT NULL, email varchar(255) NOT NULL UNIQUE)"
    )
    # no_data: nothing to snapshot, so the row below is streamed once the slot exists.
    herder.put_connector_config(
        connector(postgres_db, **{"topic.prefix": "PostgreSQL_server", "snapshot.mode": "no_data"})
    )
    topic = "PostgreSQL_server.inventory.customers"
    wait_until(
        lambda: (
            sql.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_test'").fetchone()[0] == 1
        ),
        what="the slot",
    )
    sql.execute(
        "INSERT INTO inventory.customers(first_name, last_name, email)"
        " VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')"
    )
    wait_until(lambda: len(topic_records(herder.worker.log, topic)) == 1, what="the create event")
    (rec,) = topic_records(herder.worker.log, topic)
    key = json.loads(rec.key)
    value = json.loads(rec.value)

    assert key["schema"] == {
        "type": "struct",
        "fields": [{"type": "int32", "optional": False, "default": 0, "field": "id"}],
        "optional": False,
        "name": "PostgreSQL_server.inventory.customers.Key",
    }
    assert key["payload"] == {"id": 1}

    schema = value["schema"]
    assert schema["name"] == "PostgreSQL_server.inventory.customers.Envelope" and schema["optional"] is False
    fields = {f["field"]: f for f in schema["fields"]}
    assert [f["field"] for f in schema["fields"] if f["field"] != "transaction"] == [
        "before",
        "after",
        "source",
        "op",
        "ts_ms",
        "ts_us",
        "ts_ns",
    ]
    for side in ("before", "after"):
        assert fields[side]["type"] == "struct" and fields[side]["optional"] is True
        assert fields[side]["name"] == "PostgreSQL_server.inventory.customers.Value"
        assert fields[side]["fields"] == DOC_ROW_FIELDS
    source = fields["source"]
    assert source["name"] == "io.debezium.connector.postgresql.Source" and source["optional"] is False
    got = {f["field"]: (f["type"], f["optional"]) for f in source["fields"]}
    for name, spec in DOC_SOURCE_FIELDS.items():
        assert got[name] == spec, name
    assert {"snapshot", "sequence", "ts_us", "ts_ns"} <= set(got)
    assert fields["op"] == {"type": "string", "optional": False, "field": "op"}
    for ts in ("ts_ms", "ts_us", "ts_ns"):
        assert fields[ts] == {"type": "int64", "optional": True, "field": ts}

    payload = value["payload"]
    assert payload["before"] is None and payload["op"] == "c"
    assert payload["after"] == {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
    src = payload["source"]
    assert src["connector"] == "postgresql" and src["name"] == "PostgreSQL_server" and src["snapshot"] == "false"
    assert src["db"] == postgres_db.dbname and src["schema"] == "inventory" and src["table"] == "customers"
    assert isinstance(src["txId"], int) and isinstance(src["lsn"], int) and src["xmin"] is None
    lsn_commit, lsn = json.loads(src["sequence"])
    assert lsn == str(src["lsn"]) and int(lsn_commit) >= src["lsn"]
    assert payload["ts_ms"] >= src["ts_ms"]
