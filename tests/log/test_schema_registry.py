"""The embedded schema registry's store (cdc.log.schema_registry): Confluent's id, version,
delete and compatibility semantics in the log's own SQLite file, persistence across reopen,
and a log file from before the registry tables."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.log.base import LogError, TopicPartition, TopicSpec
from cdc.log.embedded import SCHEMA_VERSION, EmbeddedLog
from cdc.log.schema_compatibility import LEVELS
from cdc.log.schema_registry import STORE_VERSION, SchemaRegistryError, SchemaRegistryStore
from tests.support.examples import examples


def record(name: str, fields: list[dict[str, Any]], namespace: str = "test") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": fields})


def envelope(value_fields: list[dict[str, Any]]) -> str:
    """A Debezium-shaped envelope: the change sits inside `["null", Value]` unions."""
    value = {"type": "record", "name": "Value", "fields": value_fields}
    return json.dumps(
        {
            "type": "record",
            "name": "Envelope",
            "namespace": "dbserver1.inventory.customers",
            "fields": [
                {"name": "before", "type": ["null", value], "default": None},
                {"name": "after", "type": ["null", "Value"], "default": None},
                {"name": "op", "type": "string"},
            ],
        }
    )


ID = {"name": "id", "type": "int"}


@pytest.fixture
def log_(tmp_path: Path) -> Iterator[EmbeddedLog]:
    lg = EmbeddedLog(tmp_path / "state", synchronous="NORMAL")
    yield lg
    lg.close()


@pytest.fixture
def store(log_: EmbeddedLog) -> Iterator[SchemaRegistryStore]:
    s = SchemaRegistryStore(log_)
    yield s
    s.close()


def test_ids_are_global_and_versions_per_subject(store: SchemaRegistryStore) -> None:
    v1 = record("R", [ID])
    first = store.register("orders-value", v1)
    assert store.register("orders-value", v1) == first  # the same schema again: no new version
    assert store.versions("orders-value") == [1]
    assert store.register("payments-value", v1) == first  # another subject reuses the global id
    assert store.versions("payments-value") == [1]
    v2 = record("R", [ID, {"name": "note", "type": ["null", "string"], "default": None}])
    second = store.register("orders-value", v2)
    assert second != first
    assert store.versions("orders-value") == [1, 2]
    latest = store.version("orders-value", "latest")
    assert (latest.version, latest.id, json.loads(latest.schema)) == (2, second, json.loads(v2))
    assert store.version("orders-value", 1).id == first
    assert store.subjects() == ["orders-value", "payments-value"]
    assert store.schema_subjects(first) == ["orders-value", "payments-value"]
    assert store.schema_versions(first) == [("orders-value", 1), ("payments-value", 1)]
    assert json.loads(store.schema(second).schema) == json.loads(v2)
    found = store.lookup("orders-value", v1)
    assert (found.version, found.id) == (1, first)


def test_whitespace_does_not_make_a_new_schema_and_normalize_ignores_key_order(store: SchemaRegistryStore) -> None:
    compact = '{"type":"record","name":"R","fields":[{"name":"id","type":"int"}]}'
    spaced = '{ "type": "record",\n  "name": "R", "fields": [ {"name": "id", "type": "int"} ] }'
    reordered = '{"name":"R","fields":[{"type":"int","name":"id"}],"type":"record"}'
    schema_id = store.register("s", compact)
    assert store.register("s", spaced) == schema_id
    assert store.lookup("s", spaced).id == schema_id
    normalized = store.register("n", compact, normalize=True)
    assert store.register("n", reordered, normalize=True) == normalized
    assert store.versions("n") == [1]


def test_errors_carry_confluent_codes(store: SchemaRegistryStore) -> None:
    def code(call: Any) -> tuple[int, int, str]:
        with pytest.raises(SchemaRegistryError) as e:
            call()
        return e.value.status, e.value.error_code, str(e.value)

    assert code(lambda: store.version("nope"))[:2] == (404, 40401)
    store.register("s", record("R", [ID]))
    assert code(lambda: store.version("s", 7))[:2] == (404, 40402)
    assert code(lambda: store.schema(99))[:2] == (404, 40403)
    assert code(lambda: store.lookup("s", record("Other", [ID])))[:2] == (404, 40403)
    assert code(lambda: store.lookup("nope", record("R", [ID])))[:2] == (404, 40401)
    assert code(lambda: store.register("s", '{"type":"record","name":"R"}'))[:2] == (422, 42201)
    assert code(lambda: store.register("s", "not json"))[:2] == (422, 42201)
    assert code(lambda: store.register("s", record("R", [ID]), "PROTOBUF"))[:2] == (422, 42201)
    assert code(lambda: store.version("s", "first"))[:2] == (422, 42202)
    assert code(lambda: store.version("s", 0))[:2] == (422, 42202)
    assert code(lambda: store.set_compatibility("SIDEWAYS"))[:2] == (422, 42203)
    assert code(lambda: store.compatibility("s"))[:2] == (404, 40408)
    for _status, _code, message in (code(lambda: store.version("nope")), code(lambda: store.schema(99))):
        assert "\n" not in message


def test_soft_and_permanent_deletes(store: SchemaRegistryStore) -> None:
    a = store.register("s", record("R", [ID]))
    b = store.register("s", record("R", [ID, {"name": "x", "type": "long", "default": 0}]))
    assert store.delete_version("s", 2) == 2
    assert store.versions("s") == [1]
    assert store.versions("s", deleted=True) == [1, 2]
    assert store.version("s", 2, deleted=True).deleted
    with pytest.raises(SchemaRegistryError) as e:
        store.delete_version("s", 2)
    assert e.value.error_code == 40406
    with pytest.raises(SchemaRegistryError) as e:
        store.delete_version("s", 1, permanent=True)
    assert e.value.error_code == 40407
    assert store.delete_version("s", 2, permanent=True) == 2
    assert store.versions("s", deleted=True) == [1]
    # a schema whose versions are all gone is still readable by id: records in the log name it
    assert store.schema(b).id == b
    assert store.delete_subject("s") == [1]
    assert store.subjects() == []
    assert store.subjects(deleted=True) == ["s"] == store.subjects(deleted_only=True)
    with pytest.raises(SchemaRegistryError) as e:
        store.version("s")
    assert e.value.error_code == 40401
    # registering again after a soft delete: the same id, a new version after the deleted one
    assert store.register("s", record("R", [ID])) == a
    assert store.versions("s") == [2]
    with pytest.raises(SchemaRegistryError) as e:
        store.delete_subject("s", permanent=True)
    assert e.value.error_code == 40405
    store.delete_subject("s")
    assert store.delete_subject("s", permanent=True) == [1, 2]
    assert store.subjects(deleted=True) == []


def test_backward_compatibility_refuses_a_required_field_and_a_type_change(store: SchemaRegistryStore) -> None:
    store.register("orders-value", record("R", [ID]))
    ok = record("R", [ID, {"name": "city", "type": ["null", "string"], "default": None}])
    store.register("orders-value", ok)  # an optional field with a default passes BACKWARD
    required = record(
        "R", [ID, {"name": "city", "type": ["null", "string"], "default": None}, {"name": "zip", "type": "string"}]
    )
    with pytest.raises(SchemaRegistryError) as e:
        store.register("orders-value", required)
    assert (e.value.status, e.value.error_code) == (409, 409)
    message = str(e.value)
    assert message.startswith(
        'Schema being registered is incompatible with an earlier schema for subject "orders-value", details: ['
    )
    assert "'zip'" in message and "READER_FIELD_MISSING_DEFAULT_VALUE" in message and "\n" not in message
    retyped = record(
        "R", [{"name": "id", "type": "string"}, {"name": "city", "type": ["null", "string"], "default": None}]
    )
    with pytest.raises(SchemaRegistryError) as e:
        store.register("orders-value", retyped)
    assert "TYPE_MISMATCH" in str(e.value) and "'id'" in str(e.value)
    assert store.versions("orders-value") == [1, 2]
    store.set_compatibility("NONE", "orders-value")
    store.register("orders-value", retyped)
    assert store.versions("orders-value") == [1, 2, 3]


def test_a_column_change_inside_a_debezium_envelope_names_the_column(store: SchemaRegistryStore) -> None:
    store.register("dbserver1.inventory.customers-value", envelope([ID, {"name": "email", "type": "string"}]))
    changed = envelope([ID, {"name": "email", "type": "long"}])
    with pytest.raises(SchemaRegistryError) as e:
        store.register("dbserver1.inventory.customers-value", changed)
    assert "before.email" in str(e.value) and "dbserver1.inventory.customers-value" in str(e.value)
    added = envelope(
        [ID, {"name": "email", "type": "string"}, {"name": "phone", "type": ["null", "string"], "default": None}]
    )
    store.register("dbserver1.inventory.customers-value", added)  # ALTER TABLE ADD COLUMN phone NULL
    assert store.versions("dbserver1.inventory.customers-value") == [1, 2]


@pytest.mark.parametrize("level", LEVELS)
def test_levels_follow_their_direction_and_history(store: SchemaRegistryStore, level: str) -> None:
    """v1 {id}; v2 {id, a=0}; then {id, a=0, b} with b required: it cannot read v2's data (no b,
    no default), so BACKWARD and FULL refuse it; v1 and v2 can read its data, so FORWARD passes."""
    subject = f"s-{level}"
    store.set_compatibility("NONE", subject)
    store.register(subject, record("R", [ID]))
    store.register(subject, record("R", [ID, {"name": "a", "type": "int", "default": 0}]))
    store.set_compatibility(level, subject)
    with_b = record("R", [ID, {"name": "a", "type": "int", "default": 0}, {"name": "b", "type": "int"}])
    expected_ok = level in ("NONE", "FORWARD", "FORWARD_TRANSITIVE")
    assert (store.test_compatibility(subject, with_b) == []) is expected_ok
    if expected_ok:
        store.register(subject, with_b)
    else:
        with pytest.raises(SchemaRegistryError):
            store.register(subject, with_b)


def test_transitive_levels_check_every_live_version(store: SchemaRegistryStore) -> None:
    """v1 {id: int}; v2 {x=0}; v3 {x=0, id: string=""}: v3 reads v2's data (id defaults), but
    not v1's (id was an int), so only BACKWARD_TRANSITIVE refuses it."""
    store.set_compatibility("NONE")
    store.register("t", record("R", [ID]))
    store.register("t", record("R", [{"name": "x", "type": "int", "default": 0}]))
    v3 = record("R", [{"name": "x", "type": "int", "default": 0}, {"name": "id", "type": "string", "default": ""}])
    store.set_compatibility("BACKWARD", "t")
    assert store.test_compatibility("t", v3) == []  # against v2 only
    store.set_compatibility("BACKWARD_TRANSITIVE", "t")
    problems = store.test_compatibility("t", v3, version=None)
    assert any("'id'" in p for p in problems) and "{oldSchemaVersion: 1}" in problems
    assert store.test_compatibility("t", v3, version="latest") == []  # one version asked for: that one only
    with pytest.raises(SchemaRegistryError, match="oldSchemaVersion: 1"):
        store.register("t", v3)


def test_config_global_and_per_subject(store: SchemaRegistryStore) -> None:
    assert store.compatibility() == "BACKWARD"
    assert store.compatibility("s", default_to_global=True) == "BACKWARD"
    assert store.set_compatibility("full") == "FULL"
    assert store.compatibility("s", default_to_global=True) == "FULL"
    store.set_compatibility("NONE", "s")
    assert store.compatibility("s") == "NONE"
    assert store.delete_compatibility("s") == "NONE"
    assert store.compatibility("s", default_to_global=True) == "FULL"
    assert store.delete_compatibility() == "FULL"
    assert store.compatibility() == "BACKWARD"
    assert store.mode() == "READWRITE"


def test_reopen_keeps_ids_versions_and_configs(tmp_path: Path) -> None:
    rng = random.Random(20)
    schemas = [record(f"R{i}", [ID, {"name": f"f{i}", "type": "string"}]) for i in range(6)]
    state = tmp_path / "state"
    log_ = EmbeddedLog(state)
    store = SchemaRegistryStore(log_)
    store.set_compatibility("NONE")
    assigned = {}
    for _ in range(20):
        subject = rng.choice(["a", "b", "c"])
        text = rng.choice(schemas)
        assigned[(subject, text)] = store.register(subject, text)
    before = {s: [store.version(s, v) for v in store.versions(s)] for s in store.subjects()}
    store.close()
    log_.close()
    log_ = EmbeddedLog(state)
    store = SchemaRegistryStore(log_)
    try:
        assert {s: [store.version(s, v) for v in store.versions(s)] for s in store.subjects()} == before
        for (subject, text), schema_id in assigned.items():
            assert store.register(subject, text) == schema_id
            assert json.loads(store.schema(schema_id).schema) == json.loads(text)
        assert store.compatibility() == "NONE"
    finally:
        store.close()
        log_.close()


def test_a_log_file_from_before_the_registry_gains_it_and_stays_readable(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old = EmbeddedLog(state)
    old.create_topics([TopicSpec("t", 1)])
    producer = old.producer()
    producer.send("t", b"v", key=b"k")
    producer.flush()
    producer.close()
    old.close()
    log_ = EmbeddedLog(state)
    reader_only = SchemaRegistryStore(log_)  # opening takes no write lock and creates nothing
    assert reader_only.subjects() == [] and reader_only.versions("x") == []
    with sqlite3.connect(state / "cdc.db") as raw:
        assert raw.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sr_%'").fetchall() == []
    schema_id = reader_only.register("t-value", record("R", [ID]))
    with sqlite3.connect(state / "cdc.db") as raw:
        assert raw.execute("SELECT value FROM sr_meta WHERE key='version'").fetchone() == (str(STORE_VERSION),)
        assert raw.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)  # the log's own layout is unchanged
    reader = log_.reader()
    reader.assign({TopicPartition("t", 0): 0})
    assert [r.value for r in reader.poll(10, 1.0)] == [b"v"]
    reader.close()
    reader_only.close()
    log_.close()
    # a registry layout newer than this code is refused, naming the file
    with sqlite3.connect(state / "cdc.db") as raw:
        raw.execute("UPDATE sr_meta SET value='99' WHERE key='version'")
    log_ = EmbeddedLog(state)
    try:
        with pytest.raises(LogError, match="newer cdc"):
            SchemaRegistryStore(log_)
    finally:
        log_.close()
    assert schema_id == 1


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.sampled_from(["int", "long", "string", "boolean", "double"]), min_size=1, max_size=5))
def test_any_schema_is_found_by_the_id_it_got(tmp_path_factory: pytest.TempPathFactory, types: list[str]) -> None:
    log_ = EmbeddedLog(tmp_path_factory.mktemp("state"), synchronous="OFF")
    store = SchemaRegistryStore(log_)
    try:
        store.set_compatibility("NONE")
        ids = []
        for i, t in enumerate(types):
            text = record("R", [{"name": f"c{j}", "type": types[j]} for j in range(i + 1)] + [{"name": "k", "type": t}])
            ids.append(store.register("s", text))
            assert json.loads(store.schema(ids[-1]).schema) == json.loads(text)
        assert store.versions("s") == list(range(1, len(set(ids)) + 1))
    finally:
        store.close()
        log_.close()
