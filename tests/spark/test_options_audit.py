"""Option audit: every wrong source option or sink setting is refused with a message that names
it and says what to do (no bare ValueError, no silent acceptance), with Spark's Kafka source
names and semantics where they overlap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_spark.apply import SinkConfig, SinkConfigError
from cdc_spark.source import SourceOptionError, SourceOptions

SRC = {"state.dir": "/x", "topics": "a"}
KAFKA = {"transport": "kafka", "bootstrap.servers": "127.0.0.1:1", "topics": "a"}
DELTA = {"target": "delta", "path": "/x"}
_RF = "errors.deadletterqueue.topic.replication.factor"
_CTX = "errors.deadletterqueue.context.headers.enable"


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        # Numbers: the option is named, not "invalid literal for int()".
        ({**SRC, "maxEventsPerTrigger": "abc"}, "maxEventsPerTrigger='abc' must be a positive integer"),
        ({**SRC, "maxEventsPerTrigger": "1.5"}, "maxEventsPerTrigger='1.5' must be a positive integer"),
        ({**SRC, "maxEventsPerTrigger": ""}, "maxEventsPerTrigger='' must be a positive integer"),
        ({**SRC, "maxOffsetsPerTrigger": "-3"}, "maxOffsetsPerTrigger='-3' must be a positive integer"),
        ({**SRC, "pollTimeoutMs": "abc"}, "pollTimeoutMs='abc' must be a positive number"),
        ({**SRC, "idleTimeoutMs": "0"}, "idleTimeoutMs='0' must be a positive number"),
        # Booleans: a typo is not "false".
        ({**SRC, "includeHeaders": "yes"}, "includeHeaders='yes': use true or false"),
        ({**SRC, "probeEndOffsets": "1"}, "probeEndOffsets='1': use true or false"),
        ({**SRC, "decode": "debezium-json", "latestPerKey": "on"}, "latestPerKey='on': use true or false"),
        ({**SRC, "schemas.enable": "maybe"}, "schemas.enable='maybe': use true or false"),
        # Unknown and misspelled options are not ignored.
        ({**SRC, "maxEventsPerTriger": "10"}, "unknown option maxeventspertriger.*did you mean maxEventsPerTrigger"),
        ({**SRC, "startingOffset": "latest"}, "did you mean startingOffsets"),
        ({**SRC, "path": "/data"}, "takes no path"),
        # Spark Kafka source options this source does not have say so, and what to use instead.
        ({**SRC, "endingOffsets": "latest"}, "endingOffsets.*Trigger.AvailableNow"),
        ({"state.dir": "/x", "assign": '{"a":[0]}'}, "assign is not supported.*topics"),
        ({**SRC, "startingTimestamp": "1000"}, "startingTimestamp is not supported"),
        ({**SRC, "minOffsetsPerTrigger": "10"}, "minOffsetsPerTrigger is not supported"),
        ({**SRC, "startingOffsets": '{"a":{"0":5}}'}, "per-partition JSON offsets are not supported"),
        ({**KAFKA, "kafka.group.id": "g"}, "kafka.group.id.*no consumer group"),
        ({**KAFKA, "groupIdPrefix": "g"}, "groupIdPrefix.*no consumer group"),
        ({**KAFKA, "kafka.auto.offset.reset": "latest"}, "kafka.auto.offset.reset.*startingOffsets"),
        ({**KAFKA, "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit.*checkpoint"),
        ({**KAFKA, "kafka.value.deserializer": "x"}, "kafka.value.deserializer.*binary"),
        # Aliases set twice, to different values: which one wins would be a guess.
        ({**SRC, "subscribe": "b"}, "topics and subscribe"),
        ({"state.dir": "/x", "topic.pattern": "a.*", "subscribePattern": "b.*"}, "topic.pattern and subscribePattern"),
        (
            {**SRC, "maxEventsPerTrigger": "5", "maxOffsetsPerTrigger": "6"},
            "maxEventsPerTrigger and maxOffsetsPerTrigger",
        ),
        ({**KAFKA, "kafka.bootstrap.servers": "other:9092"}, "bootstrap.servers and kafka.bootstrap.servers"),
        ({"state.dir": "/x", "topics": "a", "TOPICS": "b"}, "topics is set twice"),
        # Options of the other transport: Spark's Kafka shape without transport=kafka.
        ({"kafka.bootstrap.servers": "h:9092", "subscribe": "a"}, "set transport=kafka"),
        ({**SRC, "bootstrap.servers": "h:9092"}, "set transport=kafka"),
        ({**KAFKA, "state.dir": "/x"}, "state.dir is for transport=embedded"),
    ],
)
def test_source_option_errors_name_the_option_and_the_fix(options: dict[str, str], needle: str) -> None:
    with pytest.raises(SourceOptionError, match=needle):
        SourceOptions.parse(options)


def test_source_options_follow_spark_kafka_names_and_case() -> None:
    """Spark's option names are case-insensitive; maxOffsetsPerTrigger and kafkaConsumer.pollTimeoutMs
    are Spark's names for maxEventsPerTrigger and pollTimeoutMs; values are trimmed."""
    o = SourceOptions.parse(
        {"STATE.DIR": "/x", "Subscribe": "a", "MaxOffsetsPerTrigger": "7", "kafkaConsumer.pollTimeoutMs": "500"}
    )
    assert (o.topics, o.max_events, o.poll_timeout) == (("a",), 7, 0.5)
    assert SourceOptions.parse({**SRC, "startingOffsets": " Latest "}).starting == "latest"
    assert SourceOptions.parse({**SRC, "includeHeaders": "TRUE", "failOnDataLoss": "False"}).include_headers
    same = SourceOptions.parse({**SRC, "subscribe": "a", "maxEventsPerTrigger": "5", "maxOffsetsPerTrigger": "5"})
    assert same.topics == ("a",) and same.max_events == 5


def test_missing_state_dir_is_refused_instead_of_creating_an_empty_log(tmp_path: Path) -> None:
    """A mistyped state.dir would otherwise get a new, empty cdc.db and the query would wait forever."""
    missing = tmp_path / "typo"
    with pytest.raises(SourceOptionError, match="holds no topic log"):
        SourceOptions.parse({"state.dir": str(missing), "topics": "a"}).open_log()
    assert not missing.exists()


def test_kafka_client_settings_reach_the_reader_and_bad_ones_are_named() -> None:
    """kafka.isolation.level was silently replaced by the reader's default; an unknown librdkafka
    key failed with a bare KafkaException that did not name the option."""
    log: Any = SourceOptions.parse({**KAFKA, "kafka.isolation.level": "read_uncommitted"}).open_log()
    assert log._consumer_config("g", {})["isolation.level"] == "read_uncommitted"
    with pytest.raises(SourceOptionError, match=r"kafka\.bogus\.setting"):
        SourceOptions.parse({**KAFKA, "kafka.bogus.setting": "1"}).open_log()


@pytest.mark.parametrize(
    ("conf", "needle"),
    [
        ({**DELTA, "delete.retention.ms": "abc"}, "delete.retention.ms='abc' must be an integer"),
        ({**DELTA, "delete.retention.ms": "-1"}, "delete.retention.ms=-1 must be 0 or more"),
        ({**DELTA, "maintenance.interval.batches": "-1"}, "maintenance.interval.batches=-1 must be 0"),
        ({**DELTA, "maintenance.interval.batches": "x"}, "maintenance.interval.batches='x' must be an integer"),
        ({**DELTA, "truncate.enabled": "nope"}, "truncate.enabled='nope': use true or false"),
        ({**DELTA, "schemas.enable": "maybe"}, "schemas.enable='maybe': use true or false"),
        ({**DELTA, "app.id": " "}, "app.id must not be empty"),
        ({**DELTA, "delete.mod": "soft"}, "unknown setting delete.mod.*did you mean delete.mode"),
        ({**DELTA, "keys": "id"}, "keys.*record key.*message.key.columns"),
        ({"Target": "delta", "path": "/x"}, "did you mean target"),
        ({**DELTA, "table.name.format": "${tabel}"}, r"table.name.format='\$\{tabel\}'.*\$\{topic\}"),
        ({**DELTA, "partition.by": ["day"]}, "partition.by must be a mapping.*topic: columns"),
        ({**DELTA, "table.names": "orders"}, "table.names must be a mapping.*topic: table"),
        ({"target": "iceberg", "catalog": "sqlite:///c.db"}, "catalog must be a mapping.*uri"),
        ({"target": "iceberg", "catalog": {"warehouse": "file:///w"}}, "catalog needs uri"),
        ({"target": "postgres", "dsn": "not a dsn"}, "dsn is not a valid libpq connection string"),
        ({"target": "postgres", "dsn": "host=h bogus=1"}, "dsn is not a valid.*bogus"),
        ({"target": "postgres", "dsn": "host=h", "schema": ""}, "schema must not be empty"),
        ({"target": "postgres", "dsn": "host=h", "schema": "s" * 64}, "at most 63 bytes"),
        ({**DELTA, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "bad name!"}, "legal topic name"),
        (
            {**DELTA, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "d", **{_RF: "0"}},
            "replication.factor=0: use -1",
        ),
        (
            {**DELTA, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "d", **{_CTX: "yes"}},
            "context.headers.enable='yes': use true or false",
        ),
    ],
)
def test_sink_setting_errors_name_the_setting_and_the_fix(conf: dict[str, Any], needle: str) -> None:
    with pytest.raises(SinkConfigError, match=needle):
        SinkConfig.parse(conf)


def test_dead_letter_settings_without_tolerance_all_warn(caplog: pytest.LogCaptureFixture) -> None:
    """Accepted as Kafka Connect does (tolerance switched to none while debugging), but not silently."""
    assert SinkConfig.parse({**DELTA, "errors.deadletterqueue.path": "/d"}).errors_tolerance == "none"
    assert "used only with errors.tolerance=all" in caplog.text


def test_sink_settings_accept_what_jobs_and_yaml_give() -> None:
    """YAML booleans, a single partition column as a string, and the job's own keys still parse."""
    c = SinkConfig.parse({**DELTA, "truncate.enabled": False, "schemas.enable": True, "partition.by": {"a.b": "day"}})
    assert (c.truncate_enabled, c.schemas_enable, c.partition_by) == (False, True, {"a_b": ("day",)})
    assert SinkConfig.parse({**DELTA, "maintenance.interval.batches": "0"}).maintenance_interval_batches == 0
    assert SinkConfig.parse({"target": "postgres", "dsn": "postgresql://u:p@h:5432/db"}).dsn
    assert SinkConfig.parse({"target": " Delta ", "path": "/x"}).target == "delta"


def test_dead_letter_topic_read_by_the_stream_itself_is_refused(spark: Any, tmp_path: Path) -> None:
    """As Kafka Connect refuses a DLQ topic among the topics it consumes: its records would be read
    back as input and dead-lettered again on every batch."""
    from cdc.log.embedded import EmbeddedLog
    from cdc_spark.pipeline import start_query

    state = str(tmp_path / "state")
    EmbeddedLog(state).close()
    sink = {**DELTA, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "shop.dlq"}
    with pytest.raises(SinkConfigError, match=r"shop\.dlq.*is read by this stream"):
        start_query(spark, {"state.dir": state, "topic.pattern": r"shop\..*"}, sink, str(tmp_path / "ck"))


def test_start_query_refuses_a_missing_state_dir_before_spark_starts(spark: Any, tmp_path: Path) -> None:
    """A plain SourceOptionError from start_query, not a failed query wrapping a Python traceback."""
    from cdc_spark.pipeline import start_query

    with pytest.raises(SourceOptionError, match="holds no topic log"):
        start_query(spark, {"state.dir": str(tmp_path / "typo"), "topics": "a"}, DELTA, str(tmp_path / "ck"))
    assert not spark.streams.active
