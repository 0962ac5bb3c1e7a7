"""Issue 20's wire acceptance: what a worker writes in Avro is read by clients nobody here wrote.

A worker (in process, embedded log, its REST API serving the log's Schema Registry) runs two
copies of a real connector on one database: `wire-avro` with AvroConverter for keys and values,
and `wire-json` with JsonConverter (schemas on), whose topics a RegexRouter renames `w.*` →
`wjson.*` so both keep topic.prefix `w` (the same `source.name` and schema names). The table has
every column type of the connector's type tests (tests/mysql/test_types.py,
tests/postgres/test_value_converters.py): one row read by the snapshot, then an insert, an update
and a delete (with its tombstone) streamed. The raw records are read from the embedded log;
every Avro record is decoded by confluent-kafka's own AvroDeserializer with a
SchemaRegistryClient pointed at the worker's REST URL, and must equal, field for field (key,
op, before, after, source), the JSON record of the same event mapped as Confluent's AvroData
maps Connect's types (`as_avro` below). Only what differs between two connectors by
construction is left out: the processing times (`ts_ms`, `ts_us`, `ts_ns`) and, on PostgreSQL,
the snapshot records' source positions (each slot has its own consistent point).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.converters.avro_compare import same
from tests.rest.conftest import Rest

AVRO = "io.confluent.connect.avro.AvroConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
VOLATILE = frozenset({"ts_ms", "ts_us", "ts_ns"})  # when each connector processed the event
# PostgreSQL: each connector's snapshot reads at its own slot's consistent point, so the `r`
# records' source positions differ between the two connectors (streamed records' do not)
SNAPSHOT_POSITION = frozenset({"lsn", "sequence", "txId", "xmin"})
RECORDS = 5  # r (snapshot), c, u, d and the delete's tombstone

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


# -- the JSON path's values as confluent-kafka's AvroDeserializer gives them ---------------------
def as_avro(schema: dict[str, Any], value: Any) -> Any:
    """A JsonConverter payload value of Connect `schema` (its JSON form) as fastavro reads the Avro
    that Confluent's AvroData writes for it:

    - Kafka's Decimal: JSON has base64 of the unscaled two's complement (decimal.format=BASE64);
      Avro's `bytes`+`decimal` reads as `decimal.Decimal` at the schema's scale.
    - Kafka's Date / Time / Timestamp: JSON has days / ms of the day / epoch ms; Avro's `date`,
      `time-millis`, `timestamp-millis` read as `date`, `time`, UTC `datetime`.
    - Other bytes: base64 in JSON, bytes in Avro. FLOAT32: JSON has the shortest decimal of the
      float, Avro's `float` reads as that float32 widened to a double; NaN and the infinities are
      strings in JSON (Jackson's WRITE_NAN_AS_STRINGS) and floats in Avro.
    - Structs are dicts (Avro records); a map with non-string keys is JSON's `[[k, v], ...]` and
      Avro's array of `{key, value}` records. Debezium's named types (io.debezium.time.*, Json,
      geometry, ...) are their physical types on both sides.
    """
    if value is None:
        return None
    name, t = schema.get("name"), schema["type"]
    if name == DECIMAL:
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        return decimal.Decimal(f"{unscaled}e-{int(schema['parameters']['scale'])}")  # exact (no context rounding)
    if name == DATE:
        return (EPOCH + datetime.timedelta(days=value)).date()
    if name == TIME:
        return (EPOCH + datetime.timedelta(milliseconds=value)).time()
    if name == TIMESTAMP:
        return EPOCH + datetime.timedelta(milliseconds=value)
    if t == "bytes":
        return base64.b64decode(value)
    if t in ("float", "double") and isinstance(value, str):
        return float(value)  # Jackson writes NaN and the infinities as strings ("NaN", "-Infinity")
    if t == "float":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if t == "struct":
        return {f["field"]: as_avro(f, value.get(f["field"])) for f in schema["fields"]}
    if t == "array":
        return [as_avro(schema["items"], v) for v in value]
    if t == "map":
        keys, values = schema["keys"], schema["values"]
        if keys["type"] == "string" and not keys.get("optional", False):
            return {k: as_avro(values, v) for k, v in value.items()}
        return [{"key": as_avro(keys, k), "value": as_avro(values, v)} for k, v in value]
    return value


def schema_names(schema: dict[str, Any]) -> set[str]:
    """Every schema name in a JSON path schema (which logical types the comparison went through)."""
    names = {schema["name"]} if schema.get("name") else set()
    for child in [*schema.get("fields", []), *(schema[k] for k in ("items", "keys", "values") if k in schema)]:
        names |= schema_names(child)
    return names


def without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    return value


# -- the worker, its connectors and the log ------------------------------------------------------
@pytest.fixture
def rest(tmp_path: Path) -> Iterator[Rest]:
    r = Rest(tmp_path)
    yield r
    r.close()


def _start_pair(rest: Rest, base: dict[str, str], json_overrides: dict[str, str]) -> None:
    avro = {**base, "key.converter": AVRO, "value.converter": AVRO}
    plain_json = {
        **base,
        "key.converter": JSON,
        "value.converter": JSON,
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "transforms": "tojson",
        "transforms.tojson.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.tojson.regex": r"w\.(.*)",
        "transforms.tojson.replacement": "wjson.$1",
        **json_overrides,
    }
    for name, config in (("wire-avro", avro), ("wire-json", plain_json)):
        res = rest.http.put(f"/connectors/{name}/config", json=config)
        assert res.status_code in (200, 201), res.text


def _read_all(state: Path, topic: str) -> list[Any]:
    from cdc.log.base import TopicPartition
    from cdc.log.embedded import EmbeddedLog

    log_ = EmbeddedLog(str(state), auto_create_topics=False)
    try:
        desc = log_.describe_topic(topic)
        if desc is None:
            return []
        count = desc.partitions if hasattr(desc, "partitions") else int(desc)
        reader = log_.reader()
        try:
            reader.assign({TopicPartition(topic, p): 0 for p in range(count)})
            out: list[Any] = []
            while batch := reader.poll(1000, 0.5):
                out.extend(batch)
            return out
        finally:
            reader.close()
    finally:
        log_.close()


def _wait_records(rest: Rest, state: Path, topics: list[str], what: str) -> None:
    deadline = time.monotonic() + 120
    counts: dict[str, int] = {}
    while time.monotonic() < deadline:
        counts = {t: len(_read_all(state, t)) for t in topics}
        if all(n >= RECORDS for n in counts.values()):
            assert all(n == RECORDS for n in counts.values()), counts
            return
        time.sleep(0.2)
    states = {n: rest.state(n) for n in ("wire-avro", "wire-json")}
    raise AssertionError(f"{what}: records per topic {counts} after 120 s, expected {RECORDS}; {states}")


def _wait_streaming(rest: Rest, state: Path, topics: list[str]) -> None:
    """Both connectors have written their snapshot row (so each streams from after it)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(len(_read_all(state, t)) >= 1 for t in topics):
            return
        time.sleep(0.2)
    raise AssertionError(f"no snapshot record in {topics}: {rest.state('wire-avro')} {rest.state('wire-json')}")


def _by_key(records: list[tuple[Any, Any]]) -> dict[str, list[Any]]:
    """Each key's values in log order (keys of the two paths hash to partitions differently)."""
    out: dict[str, list[Any]] = {}
    for key, value in records:
        out.setdefault(json.dumps(key, sort_keys=True, default=str), []).append(value)
    return out


def _compare(rest: Rest, state: Path, table_topic: str) -> set[str]:
    """Compares the two paths' records of the table; the schema names the values went through."""
    avro_topic, json_topic = f"w.{table_topic}", f"wjson.{table_topic}"
    registry = SchemaRegistryClient({"url": rest.url})
    keys, values = AvroDeserializer(registry), AvroDeserializer(registry)
    key_ctx = SerializationContext(avro_topic, MessageField.KEY)
    value_ctx = SerializationContext(avro_topic, MessageField.VALUE)
    avro_records = []
    for r in _read_all(state, avro_topic):
        assert r.key[0] == 0 and (r.value is None or r.value[0] == 0), "not Confluent's wire format"
        avro_records.append((keys(r.key, key_ctx), None if r.value is None else values(r.value, value_ctx)))
    json_records = []
    names: set[str] = set()
    for r in _read_all(state, json_topic):
        key = json.loads(r.key)
        value = None if r.value is None else json.loads(r.value)
        names |= schema_names(value["schema"]) if value is not None else set()
        json_records.append(
            (
                as_avro(key["schema"], key["payload"]),
                None if value is None else as_avro(value["schema"], value["payload"]),
            )
        )
    got, want = _by_key(avro_records), _by_key(json_records)
    assert got.keys() == want.keys()
    ops = []
    for key, avro_values in got.items():
        json_values = want[key]
        assert len(avro_values) == len(json_values), key
        for a, j in zip(avro_values, json_values, strict=True):
            if j is None:
                assert a is None, f"{key}: a tombstone on the JSON path, {a} on the Avro path"
                continue
            ops.append(j["op"])
            a, j = without_volatile(a), without_volatile(j)
            if j["op"] == "r":
                for side in (a, j):
                    side["source"] = {k: v for k, v in side["source"].items() if k not in SNAPSHOT_POSITION}
            assert a.keys() == j.keys(), key
            for field in j:
                assert same(a[field], j[field]), _diff(field, a[field], j[field])
    assert sorted(ops) == ["c", "d", "r", "u"], ops
    return names


def _diff(path: str, a: Any, j: Any) -> str:
    if isinstance(a, dict) and isinstance(j, dict):
        for k in j:
            if k not in a or not same(a[k], j[k]):
                return _diff(f"{path}.{k}", a.get(k), j[k])
    return f"{path}: Avro (confluent-kafka) {a!r} != JSON path {j!r}"


# -- MariaDB ------------------------------------------------------------------------------------
def _mysql(server: Any, statements: list[str]) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET SESSION time_zone = '+00:00'")
        for sql in statements:
            cur.execute(sql)


def test_mariadb_avro_records_decode_with_confluent_kafka_equal_to_the_json_path(
    tmp_path: Path, rest: Rest, mariadb_db: Any
) -> None:
    from tests.mysql.harness import connector_props
    from tests.mysql.test_types import COLUMNS, VALUES

    db = mariadb_db.database
    _mysql(mariadb_db, [f"CREATE TABLE types ({COLUMNS})", f"INSERT INTO types VALUES {VALUES.format(id=1)}"])
    base = connector_props(mariadb_db, topic__prefix="w", include__schema__changes="false")
    _start_pair(rest, base, {"database.server.id": str(int(base["database.server.id"]) + 1000)})
    topics = [f"w.{db}.types", f"wjson.{db}.types"]
    state = tmp_path / "state"
    _wait_streaming(rest, state, topics)
    _mysql(
        mariadb_db,
        [
            f"INSERT INTO types VALUES {VALUES.format(id=2)}",
            "UPDATE types SET vc = 'changed', dec1 = -0.01, f = 0.1, dtm6 = '1969-12-31 23:59:59.999999',"
            " tm = '00:00:01', j = '[]', bl = NULL WHERE id = 1",
            "DELETE FROM types WHERE id = 2",
        ],
    )
    _wait_records(rest, state, topics, "MariaDB")
    names = _compare(rest, state, f"{db}.types")
    assert {DECIMAL, "io.debezium.data.geometry.Geometry", "io.debezium.time.MicroTimestamp"} <= names, names


# -- PostgreSQL ---------------------------------------------------------------------------------
def _pg(server: Any, statements: list[str]) -> None:
    with server.connect(autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'; SET lc_monetary = 'C'")
        for sql in statements:
            conn.execute(sql)


@pytest.mark.parametrize("time_precision", ["adaptive", "connect"])
def test_postgres_avro_records_decode_with_confluent_kafka_equal_to_the_json_path(
    tmp_path: Path, rest: Rest, postgres_db: Any, time_precision: str
) -> None:
    """With time.precision.mode=connect the temporal columns are Kafka's Date/Time/Timestamp, which
    Avro carries as its own logical types."""
    from tests.postgres.harness import connector_props
    from tests.postgres.test_value_converters import COLUMNS, VALUES

    cols, vals = ", ".join(VALUES), ", ".join(VALUES.values())

    def row(i: int) -> str:
        return f"INSERT INTO all_types(id, {cols}) VALUES ({i}, {vals})"

    _pg(
        postgres_db,
        [
            "CREATE EXTENSION IF NOT EXISTS hstore",
            "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
            f"CREATE TABLE all_types(id int PRIMARY KEY, {COLUMNS})",
            "ALTER TABLE all_types REPLICA IDENTITY FULL",
            row(1),
        ],
    )
    base = connector_props(postgres_db, topic__prefix="w", time__precision__mode=time_precision)
    slot = base["slot.name"]
    _start_pair(rest, {**base, "slot.name": f"{slot}_avro"}, {"slot.name": f"{slot}_json"})
    topics = ["w.public.all_types", "wjson.public.all_types"]
    state = tmp_path / "state"
    _wait_streaming(rest, state, topics)
    _pg(
        postgres_db,
        [
            row(2),
            "UPDATE all_types SET c_num = -0.001, c_f4 = 0.1, c_date = '1969-12-31', c_ts = '1969-12-31 23:59:59.999',"
            " c_time = '00:00:00.001', c_text = NULL, c_int_arr = '{}' WHERE id = 1",
            "DELETE FROM all_types WHERE id = 2",
        ],
    )
    _wait_records(rest, state, topics, f"PostgreSQL, time.precision.mode={time_precision}")
    names = _compare(rest, state, "public.all_types")
    assert {DECIMAL, "io.debezium.data.VariableScaleDecimal", "io.debezium.data.geometry.Point"} <= names, names
    if time_precision == "connect":
        assert {DATE, TIME, TIMESTAMP} <= names, names
