"""replica.identity.autoset.values: parsing, applying at start (relreplident, full `before`), and its errors."""

from __future__ import annotations

import json

import pytest

from cdc.api import ConfigException
from cdc.runtime.standalone import StandaloneHerder
from cdc_postgres.config import validate
from cdc_postgres.connection import PostgresConnectorError
from cdc_postgres.replica_identity import parse, rule_for
from tests.postgres.test_connector import _failed_trace, connector_for, herder, values, wait_until
from tests.support.logs import topic_records

__all__ = ["herder"]  # the fixture, imported for the tests below


def test_parse_entries() -> None:
    rules = parse(r" public.orders:FULL, public\..*_audit:default ,s.t:INDEX t_uk,s.n:Nothing")
    assert [(r.pattern.pattern, r.identity, r.index) for r in rules] == [
        ("public.orders", "FULL", None),
        (r"public\..*_audit", "DEFAULT", None),
        ("s.t", "INDEX", "t_uk"),
        ("s.n", "NOTHING", None),
    ]
    assert rules[2].sql() == 'USING INDEX "t_uk"' and str(rules[2]) == "INDEX t_uk"
    assert rule_for(rules, "PUBLIC.Orders") is rules[0]  # anchored, case-insensitive, like Debezium's lists
    assert rule_for(rules, "public.orders_x") is None and rule_for(rules, "public.x_audit") is rules[1]
    assert parse(None) == [] and parse("") == []


@pytest.mark.parametrize(
    "value, message",
    [
        ("public.orders", "'public.orders' is not '<schema.table regex>:<identity>'"),
        ("public.orders:PARTIAL", "identity DEFAULT, FULL, NOTHING or INDEX <index name>"),
        ("public.orders:INDEX", "'public.orders:INDEX' is not"),
        ("public.(orders:FULL", "'public.(orders' is not a valid regular expression"),
    ],
)
def test_bad_values_are_config_errors(value: str, message: str) -> None:
    with pytest.raises(ConfigException, match=r"replica\.identity\.autoset\.values: ") as e:
        parse(value)
    assert message in str(e.value)
    errors = {v.name: v.errors for v in validate({"replica.identity.autoset.values": value})}
    assert any(message in m for m in errors["replica.identity.autoset.values"])


def test_two_entries_matching_one_table() -> None:
    rules = parse(r"public\..*:FULL,public\.orders:DEFAULT")
    with pytest.raises(PostgresConnectorError, match=r"table public.orders matches more than one entry"):
        rule_for(rules, "public.orders")


def _identity(sql, table: str) -> tuple[str, str | None]:
    return sql.execute(
        "SELECT c.relreplident, (SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
        " WHERE i.indrelid = c.oid AND i.indisreplident) FROM pg_class c WHERE c.oid = %s::regclass",
        (table,),
    ).fetchone()


def test_autoset_applies_identities_and_full_before(herder: StandaloneHerder, postgres_db, caplog) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TYPE state AS ENUM ('new', 'paid')")  # a user type: pgoutput sends a Type message
    sql.execute("CREATE TABLE orders(id int PRIMARY KEY, v text, n int, st state)")
    sql.execute("CREATE TABLE nokey_audit(id int, v text)")  # no primary key: FULL makes it capturable
    sql.execute("CREATE TABLE keyed(id int PRIMARY KEY, code text NOT NULL, v text)")
    sql.execute("CREATE UNIQUE INDEX keyed_code ON keyed(code)")
    sql.execute("CREATE TABLE plain(id int PRIMARY KEY, v text)")
    sql.execute("ALTER TABLE plain REPLICA IDENTITY FULL")
    autoset = r"public\.orders:FULL,public\..*_audit:full,public.keyed:INDEX keyed_code,public.plain:DEFAULT"
    herder.put_connector_config(connector_for(sql, **{"replica.identity.autoset.values": autoset}))
    wait_until(lambda: _identity(sql, "plain")[0] == "d", what="the identities set")
    assert _identity(sql, "orders") == ("f", None) and _identity(sql, "nokey_audit") == ("f", None)
    assert _identity(sql, "keyed") == ("i", "keyed_code")
    wait_until(
        lambda: sql.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_test'").fetchone()[0],
        what="the slot",
    )
    sql.execute("INSERT INTO orders VALUES (1, 'a', 10, 'new'); UPDATE orders SET v = 'b', st = 'paid' WHERE id = 1")
    sql.execute("DELETE FROM orders WHERE id = 1")
    sql.execute("INSERT INTO nokey_audit VALUES (7, 'x'); UPDATE nokey_audit SET v = 'y'; DELETE FROM nokey_audit")
    sql.execute("INSERT INTO keyed VALUES (1, 'k1', 'a'); UPDATE keyed SET code = 'k2'")
    wait_until(lambda: len(values(herder, "srv.public.keyed")) == 2, what="the keyed events")
    wait_until(lambda: len(values(herder, "srv.public.orders")) == 4, what="the orders events")  # + tombstone
    _, update, delete, tombstone = values(herder, "srv.public.orders")
    assert update["before"] == {"id": 1, "v": "a", "n": 10, "st": "new"}
    assert update["after"] == {"id": 1, "v": "b", "n": 10, "st": "paid"}
    assert delete["op"] == "d" and delete["before"] == {"id": 1, "v": "b", "n": 10, "st": "paid"} and tombstone is None
    audit = values(herder, "srv.public.nokey_audit")
    assert [e and e["op"] for e in audit] == ["c", "u", "d", None]
    assert audit[1]["before"] == {"id": 7, "v": "x"} and audit[2]["before"] == {"id": 7, "v": "y"}
    # INDEX: the old row carries the index's columns only; the others fall back as under DEFAULT.
    # Its made-up id 0 is not taken for a key change: one update, keyed by the new row's id.
    keyed = [
        (json.loads(r.key)["payload"], json.loads(r.value)["payload"])
        for r in topic_records(herder.worker.log, "srv.public.keyed")
    ]
    assert [(k, v["op"]) for k, v in keyed] == [({"id": 1}, "c"), ({"id": 1}, "u")]
    assert keyed[1][1]["before"] == {"id": 0, "code": "k1", "v": None}
    # Said at start already, for this table only.
    warned = [r.getMessage() for r in caplog.records if "old rows carry only" in r.getMessage()]
    assert warned and all(m.startswith("public.keyed: old rows carry only the identity index (code)") for m in warned)
    # A delete's key would be that id 0: the task stops and says what to change instead.
    sql.execute("DELETE FROM keyed")
    trace = _failed_trace(herder)
    assert "A DELETE on public.keyed cannot be keyed" in trace and "message key column(s) id" in trace
    assert "REPLICA IDENTITY FULL" in trace and "message.key.columns=public.keyed:" in trace


def test_autoset_without_ownership_is_explained(herder: StandaloneHerder, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE owned(id int PRIMARY KEY)")
    sql.execute("DROP ROLE IF EXISTS notowner; CREATE ROLE notowner LOGIN REPLICATION")
    props = connector_for(sql, **{"database.user": "notowner", "replica.identity.autoset.values": "public.owned:FULL"})
    herder.put_connector_config(props)
    trace = _failed_trace(herder)
    line = next(x for x in trace.splitlines() if "cannot set REPLICA IDENTITY FULL on table public.owned" in x)
    assert 'Run ALTER TABLE "public"."owned" REPLICA IDENTITY FULL; as the owner' in line
    assert "remove public.owned from replica.identity.autoset.values" in line
    assert sql.execute("SELECT relreplident FROM pg_class WHERE oid = 'owned'::regclass").fetchone()[0] == "d"
