"""Every Debezium MySQL connector key loads (issue 19): implemented, or recognised with what happens instead.

The key list is Debezium 3.6.1's: the `Field`s of MySqlConnectorConfig, BinlogConnectorConfig,
HistorizedRelationalDatabaseConnectorConfig, RelationalDatabaseConnectorConfig, CommonConnectorConfig,
SchemaHistory/KafkaSchemaHistory and DefaultTopicNamingStrategy that a MySQL connector reads.
"""

from __future__ import annotations

import datetime
import logging
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, DataException, Schema, SchemaBuilder
from cdc_mysql import debezium_keys
from cdc_mysql.column_hash import HashMasks, java_serialized
from cdc_mysql.config import CONFIG_DEF, MySqlConnectorConfig, validate
from cdc_mysql.connector import MySqlConnector
from cdc_mysql.row_builder import compile_row_builder
from cdc_mysql.schema_options import adjust_field_name, adjust_schema_name
from cdc_mysql.value_converters import adjust_two_digit_year, escape_enum_option
from tests.mysql.harness import TaskRunner, after, connector_props, execute
from tests.mysql.test_config import BASE

DEBEZIUM_MYSQL_KEYS = [
    "database.hostname",
    "database.port",
    "database.user",
    "database.password",
    "database.query.timeout.ms",
    "database.initial.statements",
    "database.server.id",
    "database.server.id.offset",
    "database.ssl.mode",
    "database.ssl.keystore",
    "database.ssl.keystore.password",
    "database.ssl.truststore",
    "database.ssl.truststore.password",
    "database.jdbc.driver",
    "database.protocol",
    "connect.timeout.ms",
    "connect.keep.alive",
    "connect.keep.alive.interval.ms",
    "use.nongraceful.disconnect",
    "binlog.net.write.timeout",
    "binlog.net.read.timeout",
    "snapshot.mode",
    "snapshot.query.mode",
    "snapshot.query.mode.custom.name",
    "bigint.unsigned.handling.mode",
    "time.precision.mode",
    "enable.time.adjuster",
    "schema.name.adjustment.mode",
    "min.row.count.to.stream.results",
    "incremental.snapshot.chunk.size",
    "incremental.snapshot.allow.schema.changes",
    "snapshot.locking.mode",
    "snapshot.locking.mode.custom.name",
    "ddl.parser.type",
    "include.query",
    "database.include.list",
    "database.exclude.list",
    "binlog.buffer.size",
    "event.deserialization.failure.handling.mode",
    "inconsistent.schema.handling.mode",
    "gtid.source.includes",
    "gtid.source.excludes",
    "gtid.source.filter.dml.events",
    "gtid.ignore.on.recovery",
    "sourceinfo.struct.maker",
    "read.only",
    "topic.prefix",
    "decimal.handling.mode",
    "snapshot.lock.timeout.ms",
    "column.include.list",
    "column.exclude.list",
    "table.include.list",
    "table.exclude.list",
    "table.ignore.builtin",
    "message.key.columns",
    "snapshot.select.statement.overrides",
    "include.schema.changes",
    "include.schema.comments",
    "column.propagate.source.type",
    "datatype.propagate.source.type",
    "snapshot.scan.all.columns.force",
    "snapshot.tables.order.by.row.count",
    "heartbeat.action.query",
    "unavailable.value.placeholder",
    "schema.history.internal",
    "schema.history.internal.skip.unparseable.ddl",
    "schema.history.internal.store.only.captured.tables.ddl",
    "schema.history.internal.store.only.captured.databases.ddl",
    "schema.history.internal.name",
    "schema.history.internal.connector.class",
    "schema.history.internal.connector.id",
    "schema.history.internal.prefer.ddl",
    "schema.history.internal.file.filename",
    "schema.history.internal.kafka.topic",
    "schema.history.internal.kafka.bootstrap.servers",
    "schema.history.internal.kafka.recovery.poll.interval.ms",
    "schema.history.internal.kafka.recovery.attempts",
    "schema.history.internal.kafka.query.timeout.ms",
    "schema.history.internal.kafka.create.timeout.ms",
    "event.processing.failure.handling.mode",
    "max.batch.size",
    "max.queue.size",
    "poll.interval.ms",
    "max.queue.size.in.bytes",
    "provide.transaction.metadata",
    "skipped.operations",
    "snapshot.delay.ms",
    "streaming.delay.ms",
    "snapshot.include.collection.list",
    "snapshot.fetch.size",
    "snapshot.max.threads",
    "snapshot.max.threads.multiplier",
    "snapshot.mode.custom.name",
    "snapshot.mode.configuration.based.snapshot.data",
    "snapshot.mode.configuration.based.snapshot.schema",
    "snapshot.mode.configuration.based.start.stream",
    "snapshot.mode.configuration.based.snapshot.on.schema.error",
    "snapshot.mode.configuration.based.snapshot.on.data.error",
    "retriable.restart.connector.wait.ms",
    "query.fetch.size",
    "errors.max.retries",
    "incremental.snapshot.watermarking.strategy",
    "log.position.check.enable",
    "advanced.metrics.enable",
    "connection.validation.timeout.ms",
    "executor.shutdown.timeout.ms",
    "openlineage.integration.enabled",
    "openlineage.integration.config.file.path",
    "openlineage.integration.job.namespace",
    "openlineage.integration.job.description",
    "openlineage.integration.job.tags",
    "openlineage.integration.job.owners",
    "openlineage.integration.dataset.kafka.bootstrap.servers",
    "extended.headers.enabled",
    "guardrail.collections.max",
    "guardrail.collections.limit.action",
    "custom.sanitize.pattern",
    "statistics.metrics.enabled",
    "converters",
    "post.processors",
    "tombstones.on.delete",
    "heartbeat.interval.ms",
    "heartbeat.topics.prefix",
    "signal.data.collection",
    "signal.poll.interval.ms",
    "signal.enabled.channels",
    "topic.naming.strategy",
    "notification.enabled.channels",
    "notification.sink.topic.name",
    "transaction.metadata.factory",
    "custom.metric.tags",
    "binary.handling.mode",
    "field.name.adjustment.mode",
    "skip.messages.without.change",
    "event.converting.failure.handling.mode",
    "custom.retriable.exception",
    "topic.delimiter",
    "topic.cache.size",
    "topic.heartbeat.prefix",
    "topic.transaction",
]


def _errors(props: dict[str, str]) -> dict[str, list[str]]:
    return {v.name: v.errors for v in validate(props) if v.errors}


def test_every_debezium_key_is_defined() -> None:
    assert sorted(set(DEBEZIUM_MYSQL_KEYS) - set(CONFIG_DEF.names())) == []


@pytest.mark.parametrize("key", sorted(debezium_keys.RECOGNISED))
def test_a_recognised_key_is_accepted_with_what_happens_instead(key: str, caplog: pytest.LogCaptureFixture) -> None:
    props = {**BASE, key: "something-else"}
    assert _errors(props) == {}
    MySqlConnector().start(props)  # a refusal here stops the connector (and a standalone worker's file load)
    with caplog.at_level(logging.WARNING):
        MySqlConnectorConfig(props)
    assert f"{key}=something-else: recognised, not supported: " in caplog.text


def test_a_recognised_key_at_debeziums_default_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        MySqlConnectorConfig({**BASE, "snapshot.max.threads": "1", "table.ignore.builtin": "true"})
    assert "recognised" not in caplog.text


def test_a_debezium_config_with_every_implemented_key_loads() -> None:
    props = {
        **BASE,
        "enable.time.adjuster": "false",
        "event.converting.failure.handling.mode": "skip",
        "event.processing.failure.handling.mode": "warn",
        "event.deserialization.failure.handling.mode": "ignore",
        "inconsistent.schema.handling.mode": "skip",
        "column.propagate.source.type": r".*\.c1,.*\.f.",
        "datatype.propagate.source.type": r".+\.FLOAT",
        "field.name.adjustment.mode": "avro_unicode",
        "topic.naming.strategy": "io.debezium.schema.DefaultTopicNamingStrategy",
        "snapshot.select.statement.overrides": "inv.orders",
        "snapshot.select.statement.overrides.inv.orders": "SELECT * FROM inv.orders WHERE id > 10",
    }
    assert _errors(props) == {}
    c = MySqlConnectorConfig(props)
    assert (c.time_adjuster, c.processing_failure, c.deserialization_failure, c.inconsistent_schema) == (
        False, "warn", "ignore", "skip"
    )  # fmt: skip
    assert c.schema_options.field_name_mode == "avro_unicode" and c.schema_options.converting_failure == "skip"
    assert c.select_overrides == {"inv.orders": "SELECT * FROM inv.orders WHERE id > 10"}


@pytest.mark.parametrize(
    "extra,key,fragment",
    [
        ({"topic.naming.strategy": "com.acme.MyStrategy"}, "topic.naming.strategy", "DefaultTopicNamingStrategy"),
        ({"snapshot.select.statement.overrides": "inv.t"}, "snapshot.select.statement.overrides", "inv.t is not set"),
        ({"column.propagate.source.type": "inv.t.(c"}, "column.propagate.source.type", "not a valid regular"),
        ({"field.name.adjustment.mode": "camel"}, "field.name.adjustment.mode", "avro_unicode"),
        ({"event.converting.failure.handling.mode": "ignore"}, "event.converting.failure.handling.mode", "skip"),
    ],
)
def test_values_that_cannot_work_name_the_key(extra: dict[str, str], key: str, fragment: str) -> None:
    errors = _errors({**BASE, **extra})
    assert key in errors and fragment in " ".join(errors[key]), errors


@given(st.dates(min_value=datetime.date(1, 1, 1), max_value=datetime.date(2200, 12, 31)))
def test_time_adjuster_reads_two_digit_years_as_mysql_does(d: datetime.date) -> None:
    adjusted = adjust_two_digit_year(d)
    if d.year >= 100:
        assert adjusted == d
    else:
        assert adjusted.year == d.year + (2000 if d.year < 70 else 1900)
        assert (adjusted.month, adjusted.day) == (d.month, d.day) or (d.month, d.day, adjusted.day) == (2, 29, 28)
    dt = datetime.datetime.combine(d, datetime.time(12, 34, 56))
    assert adjust_two_digit_year(dt).time() == dt.time()


def test_enum_options_escape_commas_only() -> None:
    assert [escape_enum_option(o) for o in ["a,b", "c,'d", "plain", "x\\y"]] == ["a\\,b", "c\\,'d", "plain", "x\\y"]


@pytest.mark.parametrize(
    "name,mode,expected",
    [
        ("plain_1", "avro", "plain_1"),
        ("1st", "avro", "_1st"),
        ("a-b.c", "avro", "a_b_c"),
        ("názov", "avro", "n_zov"),
        ("názov", "avro_unicode", "n_u00e1zov"),
        ("1st", "avro_unicode", "_u0031st"),
        ("a-b", "none", "a-b"),
    ],
)
def test_field_name_adjustment(name: str, mode: str, expected: str) -> None:
    assert adjust_field_name(name, mode) == expected


def _row_builder(mode: str):  # type: ignore[no-untyped-def]
    schema = (
        SchemaBuilder.struct()
        .field("id", Schema.INT32_SCHEMA)
        .field("opt", Schema.OPTIONAL_STRING_SCHEMA)
        .field("req", Schema.STRING_SCHEMA)
        .build()
    )

    def refuse_bad(v: object) -> object:
        if v == "bad":
            raise DataException("cannot convert 'bad'")
        return v

    return compile_row_builder(schema, [("id", lambda v: v), ("opt", refuse_bad), ("req", refuse_bad)], mode)


def test_converting_failure_warn_nulls_an_optional_field(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert _row_builder("warn")({"id": 1, "opt": "bad", "req": "x"}).to_dict() == {"id": 1, "opt": None, "req": "x"}
    assert "cannot convert 'bad'; emitted as null (event.converting.failure.handling.mode=warn)" in caplog.text
    assert _row_builder("skip")({"id": 1, "opt": "bad", "req": "x"}).get("opt") is None


def test_converting_failure_fails_a_required_field_or_under_fail() -> None:
    with pytest.raises(DataException, match="NOT NULL"):
        _row_builder("warn")({"id": 1, "opt": "ok", "req": "bad"})
    with pytest.raises(DataException, match="cannot convert 'bad'"):
        _row_builder("fail")({"id": 1, "opt": "bad", "req": "x"})


# -- against a server -------------------------------------------------------------------------------


def test_snapshot_select_statement_override(mariadb_db) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5))", "INSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c')"
    )
    props = connector_props(
        mariadb_db,
        **{
            "snapshot.select.statement.overrides": f"{db}.t",
            f"snapshot.select.statement.overrides.{db}.t": f"SELECT * FROM `{db}`.t WHERE id >= 2",
        },
    )
    with TaskRunner(props) as run:
        run.wait_data(2)
        execute(mariadb_db, "INSERT INTO t VALUES (4, 'd')")
        rows = [after(r) for r in run.wait_data(3)]
    assert rows == [{"id": 2, "v": "b"}, {"id": 3, "v": "c"}, {"id": 4, "v": "d"}]


def _time_row_events(mariadb_db, mode: str) -> tuple[list, BaseException | None]:  # type: ignore[no-untyped-def]
    """A NOT NULL TIME of 30 hours under time.precision.mode=connect, streamed: a row that cannot be emitted."""
    execute(
        mariadb_db, "CREATE TABLE tt (id INT PRIMARY KEY, t TIME NOT NULL)", "INSERT INTO tt VALUES (0, '01:00:00')"
    )
    props = connector_props(
        mariadb_db, **{"time.precision.mode": "connect", "event.processing.failure.handling.mode": mode}
    )
    with TaskRunner(props) as run:
        run.wait_data(1)  # the snapshot is done: what follows is streamed
        execute(mariadb_db, "INSERT INTO tt VALUES (1, '30:00:00')", "INSERT INTO tt VALUES (2, '10:00:00')")
        try:
            run.wait_data(2, timeout=10)
        except Exception as e:
            return run.data()[1:], e
        return run.data()[1:], None


def test_event_processing_failure_warn_skips_the_event(mariadb_db, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        records, error = _time_row_events(mariadb_db, "warn")
    assert error is None and [after(r) for r in records] == [{"id": 2, "t": datetime.time(10, 0)}]
    assert "skipped (event.processing.failure.handling.mode=warn)" in caplog.text and "mysql-bin." in caplog.text


def test_event_processing_failure_fail_stops_the_task_naming_the_key(mariadb_db) -> None:
    records, error = _time_row_events(mariadb_db, "fail")
    assert records == [] and error is not None
    assert "event.processing.failure.handling.mode=warn" in str(error) and "tt" in str(error)


def test_field_name_adjustment_renames_fields_not_columns(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE fn (`1id` INT PRIMARY KEY, `a-b` INT)", "INSERT INTO fn VALUES (1, 2)")
    with TaskRunner(connector_props(mariadb_db, **{"field.name.adjustment.mode": "avro"})) as run:
        (record,) = run.wait_data(1)
    assert after(record) == {"_1id": 1, "a_b": 2}
    assert record.key.to_dict() == {"_1id": 1}


def test_no_debezium_key_refused_by_validate_even_all_at_once() -> None:
    props = {**BASE, **{k: "x" for k in debezium_keys.RECOGNISED}}
    assert _errors(props) == {}
    with pytest.raises(ConfigException):  # a value that cannot work is still refused, naming its key
        MySqlConnectorConfig({**props, "topic.naming.strategy": "x"})


@pytest.mark.parametrize(
    "key,expected",
    [
        # Debezium's ColumnMappersTest (DBZ-5366): v1 hashes the Java serialization, v2 the UTF-8 bytes.
        (
            "column.mask.hash.SHA-256.with.salt.salt123",
            "5944c66655670e4ce234df8529d452ba1cae10a641b9cd1583abf62585b8515a",
        ),
        (
            "column.mask.hash.v2.SHA-256.with.salt.salt123",
            "b65875d34a3dedf070f3a012970bf3b5da424560d7be3d2c23b986b525d2d7f3",
        ),
    ],
)
def test_column_hash_matches_debeziums(key: str, expected: str) -> None:
    rule = HashMasks.from_config({key: "db.t.c"}).rule_for("db.t.c")
    assert rule is not None and rule.hasher(None)("12345678901234567890") == expected
    assert rule.hasher(10)("12345678901234567890") == expected[:10] and rule.hasher(None)(None) is None


@given(st.text())
def test_java_serialization_of_strings(text: str) -> None:
    """ObjectOutputStream's TC_STRING: header, 0x74, length, modified UTF-8 (CESU-8 with NUL as C0 80)."""
    data = java_serialized(text)
    assert data[:5] == b"\xac\xed\x00\x05\x74" and int.from_bytes(data[5:7], "big") == len(data) - 7
    decoded = data[7:].replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    assert decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le") == text


def test_a_zero_date_in_a_not_null_column_is_its_default(mariadb_db) -> None:
    """Debezium's convertValue: a NOT NULL column whose value reads as null (a zero date) gets the
    schema default, the epoch only where there is none."""
    execute(
        mariadb_db,
        "SET SESSION sql_mode = ''",
        "CREATE TABLE zd (id INT PRIMARY KEY, d DATE NOT NULL DEFAULT '2000-01-01', e DATE NOT NULL,"
        " dt DATETIME NOT NULL DEFAULT '2001-02-03 04:05:06')",
        "INSERT INTO zd VALUES (1, '0000-00-00', '0000-00-00', '0000-00-00 00:00:00')",
    )
    with TaskRunner(connector_props(mariadb_db)) as run:
        run.wait_data(1)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("INSERT INTO zd VALUES (2, '0000-00-00', '0000-00-00', '0000-00-00 00:00:00')")
        rows = [after(r) for r in run.wait_data(2)]
    expected = {"d": 10957, "e": 0, "dt": 981173106000}
    assert [{k: r[k] for k in expected} for r in rows] == [expected, expected]


def test_dynamic_debezium_keys_are_not_reported_unknown() -> None:
    from cdc.runtime.unknown_keys import unknown_connector_keys

    props = {
        **BASE,
        "snapshot.select.statement.overrides": "inv.t",
        "snapshot.select.statement.overrides.inv.t": "SELECT * FROM inv.t",
        "column.mask.hash.SHA-256.with.salt.x": "inv.t.c",
        "column.mask.hash.v2.MD5.with.salt.y": "inv.t.d",
        "converters": "boolean",
        "boolean.type": "io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter",
    }
    known = CONFIG_DEF.names() | {v.name for v in validate(props)}
    assert [u.name for u in unknown_connector_keys(props, known)] == []


def test_skip_messages_without_change(mariadb_db) -> None:
    """Debezium's skip.messages.without.change with column.exclude.list: an update of excluded columns only
    is not emitted (BinlogSkipMessagesWithoutChangeConfigIT)."""
    db = mariadb_db.database
    execute(mariadb_db, "CREATE TABLE sk (id INT PRIMARY KEY, white INT, black INT)", "INSERT INTO sk VALUES (1,1,1)")
    props = connector_props(
        mariadb_db, **{"skip.messages.without.change": "true", "column.exclude.list": f"{db}\\.sk\\.black"}
    )
    with TaskRunner(props) as run:
        run.wait_data(1)
        execute(mariadb_db, "UPDATE sk SET black = 2 WHERE id = 1", "UPDATE sk SET white = 2 WHERE id = 1")
        records = run.wait_data(2)
        time.sleep(0.5)
        run.poll_once()
    assert [(r.value.get("op"), after(r)) for r in run.data()] == [
        ("r", {"id": 1, "white": 1}),
        ("u", {"id": 1, "white": 2}),
    ]
    assert len(records) == 2


def test_snapshot_include_collection_list(mariadb_db) -> None:
    """Only the listed tables' rows are snapshotted; the others are captured from then on."""
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES (1)",
        "INSERT INTO b VALUES (1)",
    )
    with TaskRunner(connector_props(mariadb_db, **{"snapshot.include.collection.list": f"{db}\\.a"})) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO b VALUES (2)")
        run.wait_data(2)
    assert [(r.topic.rsplit(".", 1)[1], r.value.get("op"), after(r)) for r in run.data()] == [
        ("a", "r", {"id": 1}),
        ("b", "c", {"id": 2}),
    ]


@pytest.mark.parametrize(
    "name,mode,expected",
    [
        ("dbserver1.db.name-adjustment.Value", "avro", "dbserver1.db.name_adjustment.Value"),
        ("1a.b-c", "avro", "_1a.b_c"),
        ("a.ü", "avro_unicode", "a._u00fc"),
        ("a-b.c", "none", "a-b.c"),
    ],
)
def test_schema_name_adjustment(name: str, mode: str, expected: str) -> None:
    assert adjust_schema_name(name, mode) == expected


def test_snapshot_and_streaming_delays(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE dl (id INT PRIMARY KEY)", "INSERT INTO dl VALUES (1)")
    props = connector_props(mariadb_db, **{"snapshot.delay.ms": "1500", "streaming.delay.ms": "1000"})
    started = time.monotonic()
    with TaskRunner(props) as run:
        run.wait_data(1)
        snapshot_at = time.monotonic() - started
        execute(mariadb_db, "INSERT INTO dl VALUES (2)")
        run.wait_data(2)
        streamed_at = time.monotonic() - started
    assert snapshot_at >= 1.5 and streamed_at >= 2.5, (snapshot_at, streamed_at)
