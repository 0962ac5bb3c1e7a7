"""The PostgreSQL deviations from Debezium 3.6 found with its own test material (issue 19), one test each.

Tables without a primary key (captured, null key or their first unique index), column defaults in the
schemas (SERIAL's `default 0`), BIT VARYING values, `include.unknown.datatypes`, and the Debezium keys
this connector implements (`column/datatype.propagate.source.type`, `snapshot.select.statement.overrides`,
`event.processing.failure.handling.mode`, `schema.include/exclude.list`, `topic.naming.strategy`,
`field.name.adjustment.mode`, column masks) or accepts with a warning (every other one).
"""

from __future__ import annotations

import decimal
import hashlib
import logging
import random
from pathlib import Path

import pytest

from cdc.api import ConnectException, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium import snapshot_modes
from cdc_postgres.column_mappers import java_serialized
from cdc_postgres.config import CONFIG_DEF, PostgresConnectorConfig, validate
from cdc_postgres.debezium_keys import UNSUPPORTED
from cdc_postgres.geometric import java_double
from cdc_postgres.names import adjuster
from cdc_postgres.types import PgColumn, PgType
from cdc_postgres.value_converters import ConverterSettings, PostgresValueConverters
from tests.postgres.harness import TaskRunner, connector_props, op

SEED = random.randrange(2**32)


def _after(r: SourceRecord) -> Struct:
    return r.value.get("after")


def _field(r: SourceRecord, name: str) -> Schema:
    f = _after(r).schema.field(name)
    assert f is not None, f"{name} not in {[x.name for x in _after(r).schema.fields]}"
    return f.schema


# -- tables without a primary key ----------------------------------------------------------------------------------


def test_table_without_primary_key_streams_with_a_null_key_and_full_identity_before(postgres_db) -> None:
    """RecordsStreamProducerIT.shouldReceiveChangesForTableWithoutPrimaryKey: c, u and d, with `before` under FULL."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE test_table (id SERIAL, text TEXT)")
    sql.execute("ALTER TABLE test_table REPLICA IDENTITY FULL")
    with TaskRunner(connector_props(postgres_db, **{"snapshot.mode": "no_data"})) as runner:
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO test_table (text) VALUES ('a')")
        sql.execute("UPDATE test_table SET text = 'b' WHERE id = 1")
        sql.execute("DELETE FROM test_table WHERE id = 1")
        runner.poll_until(lambda recs: len(recs) >= 4, what="c, u, d and the tombstone")
    records = [r for r in runner.records if r.topic == "test_server.public.test_table"]
    assert [op(r) for r in records] == ["c", "u", "d", "tombstone"]
    assert all(r.key is None and r.key_schema is None for r in records)
    create, update, delete, _ = records
    assert _field(create, "id") == SchemaBuilder.int32().default_value(0).build()  # SERIAL is NOT NULL
    assert _after(create).to_dict() == {"id": 1, "text": "a"}
    assert update.value.get("before").to_dict() == {"id": 1, "text": "a"}
    assert _after(update).to_dict() == {"id": 1, "text": "b"}
    assert delete.value.get("before").to_dict() == {"id": 1, "text": "b"} and _after(delete) is None


def test_table_without_primary_key_is_keyed_by_its_first_unique_index(postgres_db) -> None:
    """Debezium (pgjdbc's getIndexInfo order, by name): the first unique index keys the table; a nullable
    column of it is an optional key field."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE u (a int, b text NOT NULL, c int)")
    sql.execute("CREATE UNIQUE INDEX u_z ON u (c)")
    sql.execute("CREATE UNIQUE INDEX u_a ON u (b, a)")
    sql.execute("CREATE UNIQUE INDEX u_0 ON u (lower(b))")  # an expression cannot key a row: skipped
    sql.execute("INSERT INTO u VALUES (1, 'x', 3)")
    with TaskRunner(connector_props(postgres_db)) as runner:
        (record,) = runner.wait_data(1, "public.u")
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO u VALUES (NULL, 'y', 4)")
        streamed = runner.wait_data(2, "public.u")[1]
    assert [(f.name, f.schema.optional) for f in record.key_schema.fields] == [("b", False), ("a", True)]
    assert record.key.to_dict() == {"b": "x", "a": 1}
    assert streamed.key.to_dict() == {"b": "y", "a": None}


# -- column defaults ---------------------------------------------------------------------------------------------------


def test_schemas_carry_column_defaults_as_debezium_parses_them(postgres_db) -> None:
    """PostgresDefaultValueConverter: literals of the mapped types; a generated value (nextval, now(),
    CURRENT_TIMESTAMP) maps to its type's placeholder; NULL, structs and unmapped types give none."""
    sql = postgres_db.connect()
    sql.execute("CREATE TYPE mood AS ENUM ('sad', 'ok')")
    sql.execute(
        "CREATE TABLE d (pk SERIAL PRIMARY KEY, ss SMALLSERIAL, bs BIGSERIAL, i int4 NOT NULL DEFAULT 2,"
        " neg int8 DEFAULT -7, n numeric(19,4) NOT NULL DEFAULT 1, n_null numeric(19,4) NULL DEFAULT NULL,"
        " nv numeric DEFAULT 1.5, t text DEFAULT 'abc', v varchar(5) DEFAULT 'x'::character varying,"
        " b bool DEFAULT true, dt date DEFAULT '2020-01-02', ts timestamp DEFAULT now(),"
        " tz timestamptz DEFAULT CURRENT_TIMESTAMP, u uuid DEFAULT gen_random_uuid(), m mood DEFAULT 'ok',"
        " cash money DEFAULT 0, bits bit(3) DEFAULT B'101', flag bit(1) DEFAULT B'1', j jsonb DEFAULT '{}',"
        " it interval DEFAULT '60 days', g int4 GENERATED ALWAYS AS (i * 2) STORED)"
    )
    sql.execute("INSERT INTO d DEFAULT VALUES")
    with TaskRunner(connector_props(postgres_db)) as runner:
        (record,) = runner.wait_data(1, "public.d")
    defaults = {f.name: f.schema.default_value for f in _after(record).schema.fields}
    assert defaults == {
        "pk": 0,
        "ss": 0,
        "bs": 0,
        "i": 2,
        "neg": -7,
        "n": decimal.Decimal("1.0000"),
        "n_null": None,
        "nv": None,  # a VariableScaleDecimal struct cannot be a default (KAFKA-12694)
        "t": "abc",
        "v": "x",
        "b": True,
        "dt": 18263,
        "ts": 0,
        "tz": "1970-01-01T00:00:00.000000Z",
        "u": "00000000-0000-0000-0000-000000000000",
        "m": "ok",
        "cash": None,  # no mapper for money
        "bits": b"\x05",
        "flag": True,
        "j": "{}",
        "it": 60 * 86_400_000_000,
        "g": None,  # a generated column's expression is not a literal
    }
    assert record.key_schema.field("pk").schema.default_value == 0  # key fields carry it too
    assert _field(record, "ss") == SchemaBuilder.int16().default_value(0).build()
    assert _field(record, "bs") == SchemaBuilder.int64().default_value(0).build()


def test_numeric_default_as_double(postgres_db) -> None:
    """RecordsStreamProducerIT.shouldReceiveNumericTypeAsDoubleWithDefaults."""
    sql = postgres_db.connect()
    sql.execute(
        "CREATE TABLE numeric_table_with_defaults (r int4 NOT NULL, r_numeric numeric(19, 4) NOT NULL DEFAULT 1,"
        " r_int int4 NOT NULL DEFAULT 2)"
    )
    sql.execute("ALTER TABLE numeric_table_with_defaults REPLICA IDENTITY FULL")
    props = connector_props(postgres_db, **{"decimal.handling.mode": "double", "snapshot.mode": "no_data"})
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO numeric_table_with_defaults (r) VALUES (1)")
        (record,) = runner.wait_data(1)
    assert _field(record, "r") == Schema.INT32_SCHEMA
    assert _field(record, "r_numeric") == SchemaBuilder.float64().default_value(1.0).build()
    assert _field(record, "r_int") == SchemaBuilder.int32().default_value(2).build()
    assert _after(record).to_dict() == {"r": 1, "r_numeric": 1.0, "r_int": 2}


# -- BIT VARYING ------------------------------------------------------------------------------------------------------


def _bits_converter(name: str, typmod: int):
    conv = PostgresValueConverters(ConverterSettings())
    col = PgColumn("c", PgType(1, name, "b", "V"), typmod, True)
    return conv.schema_builder(col).build(), conv.converter(col)


def test_bit_varying_values_follow_debezium_3_6() -> None:
    """'00' in BIT VARYING(2) is no byte at all; BIT VARYING(1) is a boolean, as BIT(1) (Debezium 3.6)."""
    schema, convert = _bits_converter("varbit", 2)
    assert schema.name == "io.debezium.data.Bits" and convert("00") == b"" and convert("10") == b"\x02"
    schema, convert = _bits_converter("varbit", 1)
    assert schema == Schema.OPTIONAL_BOOLEAN_SCHEMA and convert("1") is True and convert("0") is False
    rng = random.Random(SEED)
    _, convert = _bits_converter("varbit", 64)
    for _ in range(200):
        text = "".join(rng.choice("01") for _ in range(rng.randint(0, 64)))
        value = int(text, 2) if text else 0
        # Java's BitSet.toByteArray: little-endian, up to the highest bit set
        assert convert(text) == value.to_bytes((value.bit_length() + 7) // 8, "little"), f"seed {SEED}: {text}"


# -- include.unknown.datatypes ---------------------------------------------------------------------------------------


def test_unknown_types_are_left_out_with_one_warning_per_column(postgres_db, caplog) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE EXTENSION IF NOT EXISTS isn")
    sql.execute("CREATE TABLE odd (id int PRIMARY KEY, c circle, q tsquery, l pg_lsn, i isbn)")
    sql.execute("INSERT INTO odd VALUES (1, '<(1,2),3>', 'a & b', '0/16B3748', '978-0-393-04002-9')")
    caplog.set_level(logging.WARNING)
    with TaskRunner(connector_props(postgres_db)) as runner:
        (snapshot,) = runner.wait_data(1, "public.odd")
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO odd VALUES (2, '<(1,2),3>', 'a', '0/1', '0-393-04002-X')")
        sql.execute("ALTER TABLE odd ADD COLUMN extra int")  # a new Relation message: the schema is built again
        sql.execute("INSERT INTO odd VALUES (3, NULL, NULL, NULL, '0-393-04002-X', 7)")
        runner.wait_data(3, "public.odd")
    assert [f.name for f in _after(snapshot).schema.fields] == ["id", "i"]  # isbn is a type Debezium knows
    assert _after(snapshot).get("i") == "0-393-04002-X"
    for column, type_name in (("c", "circle"), ("q", "tsquery"), ("l", "pg_lsn")):
        lines = [
            r.getMessage()
            for r in caplog.records
            if f"column public.odd.{column} has type {type_name}" in r.getMessage()
        ]
        assert len(lines) == 1, lines  # never silent, never once per event
        assert "include.unknown.datatypes=true" in lines[0]


def test_unknown_types_with_include_unknown_datatypes_are_their_text_as_binary(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE odd (id int PRIMARY KEY, c circle, q tsquery, l pg_lsn, qa tsquery[])")
    row = "'<(1,2.5),3e10>', 'a & b', '0/16B3748', ARRAY['x'::tsquery]"
    sql.execute(f"INSERT INTO odd VALUES (1, {row})")
    props = connector_props(postgres_db, **{"include.unknown.datatypes": "true", "binary.handling.mode": "hex"})
    with TaskRunner(props) as runner:
        runner.wait_data(1, "public.odd")
        runner.wait_streaming(sql)
        sql.execute(f"INSERT INTO odd VALUES (2, {row})")
        events = runner.wait_data(2, "public.odd")
    for event in events:
        after = _after(event)
        assert _field(event, "c") == Schema.OPTIONAL_STRING_SCHEMA  # hex: binary as text
        assert bytes.fromhex(after.get("c")) == b"<(1.0,2.5),3.0E10>"  # pgjdbc's PGcircle text
        assert bytes.fromhex(after.get("q")) == b"'a' & 'b'"
        assert bytes.fromhex(after.get("l")) == b"0/16B3748"
        assert [bytes.fromhex(x) for x in after.get("qa")] == [b"'x'"]


def test_java_double_text() -> None:
    cases = {1.0: "1.0", 10.0: "10.0", -0.0: "-0.0", 0.001: "0.001", 1e7: "1.0E7", 1.5e-5: "1.5E-5"}
    cases |= {12345678.9: "1.23456789E7", 1e-3 / 2: "5.0E-4", 9999999.0: "9999999.0", float("nan"): "NaN"}
    for value, text in cases.items():
        assert java_double(value) == text, value


# -- Debezium's keys -------------------------------------------------------------------------------------------------

DEBEZIUM_KEYS = Path(__file__).with_name("debezium_postgres_keys.txt")
BASE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": "localhost",
    "database.user": "u",
    "database.dbname": "d",
    "topic.prefix": "srv",
}
# Valid values for keys whose type or choices Debezium checks too (others take any text).
SAMPLES = {
    "signal.enabled.channels": "source,file",  # implemented (issue 22): its values are checked
    "incremental.snapshot.watermarking.strategy": "insert_delete",
    "binary.handling.mode": "hex",
    "decimal.handling.mode": "string",
    "event.processing.failure.handling.mode": "warn",
    "field.name.adjustment.mode": "avro",
    "schema.name.adjustment.mode": "avro_unicode",
    "hstore.handling.mode": "map",
    "interval.handling.mode": "string",
    "time.precision.mode": "connect",
    "include.unknown.datatypes": "true",
    "snapshot.mode": "configuration_based",  # with the data snapshot and streaming on: runs as always
    "snapshot.mode.configuration.based.snapshot.data": "true",
    "snapshot.mode.configuration.based.start.stream": "true",
    "snapshot.mode.configuration.based.snapshot.on.schema.error": "false",
    "snapshot.mode.configuration.based.snapshot.on.data.error": "false",
    "snapshot.isolation.mode": "repeatable_read",
    "snapshot.locking.mode": "none",
    "plugin.name": "pgoutput",
    "publication.autocreate.mode": "filtered",
    "database.sslmode": "disable",
    "skipped.operations": "t",
    "slot.name": "s1",
    "topic.prefix": "srv",
    "column.exclude.list": "public.t.c",
    "schema.exclude.list": "other",
    "table.exclude.list": "public.x",
    "database.exclude.list": "x",
    "message.prefix.exclude.list": "x",
    "topic.naming.strategy": "io.debezium.schema.SchemaTopicNamingStrategy",
    "replica.identity.autoset.values": "public.t:FULL",
    "message.key.columns": "public.t:id",
    "post.processors": "",
    "max.batch.size": "2048",
    "max.queue.size": "8192",
}
_NUMERIC = ("ms", "size", "retries", "digits", "threads", "max", "multiplier", "count")


def _sample(key: str) -> str:
    if key in SAMPLES:
        return SAMPLES[key]
    kind = CONFIG_DEF.config_keys[key].type.name if key in CONFIG_DEF.names() else "STRING"
    if kind == "BOOLEAN":
        return "true"
    if kind in ("INT", "LONG", "SHORT") or key.endswith(_NUMERIC):
        return "1"
    return "x"


def test_every_debezium_postgres_key_is_implemented_or_accepted_with_a_warning(caplog) -> None:
    """No key of Debezium's PostgreSQL connector (Postgres/RelationalDatabase/CommonConnectorConfig) is refused."""
    keys = [k.strip() for k in DEBEZIUM_KEYS.read_text().splitlines() if k.strip() and not k.startswith("#")]
    assert len(keys) > 130
    props = {**BASE, **{k: _sample(k) for k in keys}}
    props |= {"column.mask.with.3.chars": "public.t.c", "column.truncate.to.2.chars": "public.t.d"}
    props |= {
        "column.mask.hash.SHA-256.with.salt.pepper": "public.t.e",
        "snapshot.select.statement.overrides.public.t": "SELECT 1",
    }
    props |= {"signal.kafka.topic": "x", "column.propagate.source.type": "public.t.f"}
    props.pop("schema.include.list")  # exclusive with the exclude lists, as in Debezium
    props.pop("table.include.list")
    props.pop("column.include.list")
    props.pop("message.prefix.include.list")
    errors = {v.name: v.errors for v in validate(props) if v.errors}
    assert not errors
    caplog.set_level(logging.WARNING)
    PostgresConnectorConfig.parse(props)
    warned = {r.getMessage().split("=", 1)[0] for r in caplog.records if "recognised, not supported" in r.getMessage()}
    # every unsupported key warns, unless given the one value that changes nothing (snapshot.max.threads=1)
    unsupported = {k for k, (_, neutral) in UNSUPPORTED.items() if k in props and props[k].lower() != neutral}
    unsupported -= set(snapshot_modes.KEYS)  # read by snapshot.mode=configuration_based (cdc_debezium.snapshot_modes)
    assert unsupported <= warned and not {"snapshot.max.threads", "read.only"} & warned  # read.only: implemented
    assert "signal.kafka.topic" not in warned  # the kafka signal channel (issue 22)
    assert not (warned & {"include.unknown.datatypes", "column.propagate.source.type", "field.name.adjustment.mode"})
    every = set(keys) - CONFIG_DEF.names() - {"database.sslfactory"}  # the TLS keys warn about that one
    assert not every, f"Debezium keys this connector does not define: {sorted(every)}"


def test_propagate_source_type_by_datatype(postgres_db) -> None:
    """RecordsStreamProducerIT.shouldPropagateSourceTypeByDatatype."""
    sql = postgres_db.connect()
    sql.execute(
        "CREATE TABLE test_table (id SERIAL, c1 INT, c2 INT, c3a NUMERIC(5,2), c3b VARCHAR(128), f1 float(10),"
        " f2 decimal(8,4), primary key (id))"
    )
    props = connector_props(
        postgres_db,
        **{"snapshot.mode": "no_data", "datatype.propagate.source.type": r".+\.NUMERIC,.+\.VARCHAR,.+\.FLOAT4"},
    )
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute(
            "INSERT INTO test_table (id,c1,c2,c3a,c3b,f1,f2) values (1, 123, 456, 789.01, 'test', 1.228, 234.56)"
        )
        (record,) = runner.wait_data(1)
    p = {f.name: f.schema.parameters or {} for f in _after(record).schema.fields}
    t, n, s = "__debezium.source.column.type", "__debezium.source.column.length", "__debezium.source.column.scale"
    assert not {k for k in p["id"] if k.startswith("__debezium")} and not p["c1"] and not p["c2"]
    assert (p["c3a"][t], p["c3a"][n], p["c3a"][s]) == ("NUMERIC", "5", "2")
    assert (p["c3b"][t], p["c3b"][n]) == ("VARCHAR", "128")
    assert (p["f2"][t], p["f2"][n], p["f2"][s]) == ("NUMERIC", "8", "4")
    assert (p["f1"][t], p["f1"][n], p["f1"][s]) == ("FLOAT4", "8", "8")


def test_snapshot_select_statement_overrides(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t (id int PRIMARY KEY, v text, w text)")
    sql.execute("CREATE TABLE other (id int PRIMARY KEY)")
    sql.execute("INSERT INTO t SELECT g, 'v' || g, 'w' || g FROM generate_series(1, 5) g")
    sql.execute("INSERT INTO other VALUES (1), (2)")
    props = connector_props(
        postgres_db,
        **{
            "snapshot.select.statement.overrides": "public.t",
            "snapshot.select.statement.overrides.public.t": "SELECT id, v FROM public.t WHERE id > 3 ORDER BY id",
        },
    )
    with TaskRunner(props) as runner:
        runner.wait_data(2, "public.other")
        runner.wait_streaming(sql)
        rows = runner.data("public.t")
    assert [_after(r).to_dict() for r in rows] == [{"id": 4, "v": "v4", "w": None}, {"id": 5, "v": "v5", "w": None}]


def test_event_processing_failure_handling_mode(postgres_db, caplog) -> None:
    """An event no schema can carry (a two-dimensional array): fail stops the task; warn logs and goes on."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE arr (id int PRIMARY KEY, a int[])")
    props = connector_props(
        postgres_db, **{"snapshot.mode": "no_data", "event.processing.failure.handling.mode": "warn"}
    )
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO arr VALUES (1, '{{1,2},{3,4}}')")
        sql.execute("INSERT INTO arr VALUES (2, '{5}')")
        (record,) = runner.wait_data(1, "public.arr")
    assert _after(record).to_dict() == {"id": 2, "a": [5]}
    assert any(
        "Error while processing event at offset" in r.getMessage() and "multi-dimensional" in r.getMessage()
        for r in caplog.records
    )
    sql.execute("TRUNCATE arr")
    with TaskRunner(connector_props(postgres_db, **{"snapshot.mode": "no_data"})) as runner:
        runner.wait_streaming(sql)
        sql.execute("INSERT INTO arr VALUES (1, '{{1,2},{3,4}}')")
        with pytest.raises(ConnectException, match="multi-dimensional"):
            runner.poll_until(lambda _: False, timeout=20, what="the failure")


def test_schema_include_and_exclude_lists(postgres_db) -> None:
    sql = postgres_db.connect()
    for schema in ("s1", "s2"):
        sql.execute(f"CREATE SCHEMA {schema}")
        sql.execute(f"CREATE TABLE {schema}.a (id int PRIMARY KEY)")
        sql.execute(f"INSERT INTO {schema}.a VALUES (1)")
    for key, captured in (("schema.include.list", "s1"), ("schema.exclude.list", "s2")):
        value = "s1" if key == "schema.include.list" else "s1,public"
        with TaskRunner(connector_props(postgres_db, **{key: value})) as runner:
            runner.wait_data(1, f"{captured}.a")
            runner.wait_streaming(sql)
            sql.execute("INSERT INTO s1.a VALUES (2); INSERT INTO s2.a VALUES (2)")
            runner.wait_data(2, f"{captured}.a")
            sql.execute("DELETE FROM s1.a WHERE id = 2; DELETE FROM s2.a WHERE id = 2")
            runner.poll_until(lambda recs: sum(op(r) == "d" for r in recs) >= 1, what="the delete")
        assert {r.topic for r in runner.records if r.topic.startswith("test_server.s")} == {f"test_server.{captured}.a"}


def test_topic_naming_strategy_and_field_name_adjustment(postgres_db, caplog) -> None:
    sql = postgres_db.connect()
    sql.execute('CREATE TABLE "t-1" (id int PRIMARY KEY, "a-b" text, "1st" int)')
    sql.execute("""INSERT INTO "t-1" VALUES (1, 'x', 2)""")
    props = connector_props(
        postgres_db,
        **{
            "topic.naming.strategy": "io.debezium.schema.DefaultTopicNamingStrategy",
            "topic.delimiter": "_",
            "field.name.adjustment.mode": "avro",
            "schema.name.adjustment.mode": "avro",
            "column.propagate.source.type": r"public\.t-1\.a-b",
        },
    )
    with TaskRunner(props) as runner:
        runner.poll_until(lambda recs: any(op(r) == "r" for r in recs), what="the snapshot row")
        (record,) = runner.data()
    assert record.topic == "test_server_public.t-1"  # DefaultTopicNamingStrategy: the delimiter after the prefix
    assert [f.name for f in _after(record).schema.fields] == ["id", "a_b", "_1st"]
    assert _after(record).schema.field("a_b").schema.parameters["__debezium.source.column.name"] == "a-b"
    assert record.value.get("after").schema.name == "test_server_public.t_1.Value"
    caplog.set_level(logging.WARNING)
    PostgresConnectorConfig.parse({**BASE, "topic.naming.strategy": "com.acme.MyStrategy"})
    assert "topic.naming.strategy=com.acme.MyStrategy: recognised, not supported" in caplog.text


def test_name_adjusters_follow_debezium() -> None:
    avro, unicode = adjuster("avro"), adjuster("avro_unicode")
    assert [avro(n) for n in ("ok", "1a", "a b", "_x", "\u017e")] == ["ok", "_1a", "a_b", "_x", "_"]
    assert [unicode(n) for n in ("ok", "a_b", "1a", "\u017e")] == ["ok", "a_u005fb", "_u0031a", "_u17e"]
    assert adjuster("none")("a b") == "a b"


def test_column_masks_truncation_and_hashes(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE p (id int PRIMARY KEY, ssn varchar(11), note text, code varchar(8), n int)")
    sql.execute("INSERT INTO p VALUES (1, '123-45-6789', 'a long note', 'secret', 5)")
    props = connector_props(
        postgres_db,
        **{
            "column.mask.with.3.chars": r"public\.p\.ssn, public\.p\.n",
            "column.truncate.to.4.chars": r"public\.p\.note",
            "column.mask.hash.SHA-256.with.salt.pepper": r"public\.p\.code",
        },
    )
    with TaskRunner(props) as runner:
        (record,) = runner.wait_data(1, "public.p")
    after = _after(record)
    digest = hashlib.sha256(b"pepper" + java_serialized("secret")).hexdigest()[:8]  # cut to varchar(8)
    assert after.to_dict() == {"id": 1, "ssn": "***", "note": "a lo", "code": digest, "n": 5}  # an int is not masked
    assert _field(record, "ssn").parameters == {"masked": "true"}
    assert _field(record, "note").parameters == {"truncateLength": "4"}
    assert java_serialized("ab") == b"\xac\xed\x00\x05t\x00\x02ab"


def test_arrays_debezium_does_not_map_are_left_out(postgres_db, caplog) -> None:
    """PostgresValueConverter has no schema for money[], interval[], name[], varbit[], xml[], point[] (DBZ-459)."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE arrs (id int PRIMARY KEY, m money[], i interval[], n name[], x xml[], ok int[])")
    sql.execute("INSERT INTO arrs VALUES (1, '{1}', '{1 day}', '{a}', ARRAY['<a/>'::xml], '{1}')")
    caplog.set_level(logging.WARNING)
    with TaskRunner(connector_props(postgres_db, **{"include.unknown.datatypes": "true"})) as runner:
        (record,) = runner.wait_data(1, "public.arrs")
    assert [f.name for f in _after(record).schema.fields] == ["id", "ok"]
    for column in ("m", "i", "n", "x"):
        assert sum(f"column public.arrs.{column} is an array of" in r.getMessage() for r in caplog.records) == 1


def test_connect_time_precision_clamps_what_python_dates_cannot_hold(caplog) -> None:
    """Debezium keeps year 294247 and infinity in Java's Date; Python's stops at 9999: clamped, never a failure."""
    import datetime

    conv = PostgresValueConverters(ConverterSettings(time_precision_mode="connect"))
    ts = conv.converter(PgColumn("ts", PgType(1, "timestamp", "b", "D"), 6, True))
    d = conv.converter(PgColumn("d", PgType(2, "date", "b", "D"), -1, True))
    top = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, datetime.UTC)
    bottom = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
    assert ts("294247-01-01 23:59:59.999999") == top and ts("infinity") == top
    assert ts("4713-12-31 23:59:59.999999 BC") == bottom and ts("-infinity") == bottom
    assert d("infinity") == datetime.date.max and d("-infinity") == datetime.date.min
    assert ts("2016-11-04 13:51:30.123456") == datetime.datetime(2016, 11, 4, 13, 51, 30, 123000, datetime.UTC)
    assert sum("time.precision.mode=connect" in r.getMessage() for r in caplog.records) == 1


def test_readme_lists_every_key_accepted_without_support() -> None:
    """plugins/postgres/README.md's table is the one users read: it must not go stale."""
    readme = (Path(__file__).resolve().parents[2] / "plugins" / "postgres" / "README.md").read_text()
    missing = [k for k in UNSUPPORTED if f"`{k}`" not in readme]
    assert not missing, f"README does not list {missing}"
