"""The worker in process: SMTs and converters on the source path, the sink path, error tolerance, restarts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc.log.base import TopicPartition
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State
from tests.runtime.connectors import CollectingSink, CollectingTask, GeneratorSource, GeneratorTask
from tests.support.logs import topic_records


def wait_until(cond, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def herder(tmp_path: Path) -> Iterator[StandaloneHerder]:
    GeneratorTask.committed_records = []
    GeneratorTask.commits = 0
    CollectingTask.received = []
    config = WorkerConfig(
        {"transport": "embedded", "state.dir": str(tmp_path / "state"), "offset.flush.interval.ms": "200"}
    )
    registry = PluginRegistry.discover()
    registry.add(GeneratorSource, "1.0", "test")
    registry.add(CollectingSink, "1.0", "test")
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w1")
    h = StandaloneHerder(worker)
    h.start()
    yield h
    h.stop()


def source_config(**extra: str) -> dict[str, str]:
    return {"name": "gen", "connector.class": "GeneratorSource", "topic": "gen.events", "count": "100", **extra}


def test_source_path_applies_smts_then_converter(herder: StandaloneHerder) -> None:
    herder.put_connector_config(
        source_config(
            transforms="route,stamp",
            **{
                "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex": "gen\\.(.*)",
                "transforms.route.replacement": "routed-$1",
                "transforms.stamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.stamp.static.field": "origin",
                "transforms.stamp.static.value": "generator",
            },
        )
    )
    log_ = herder.worker.log
    wait_until(lambda: len(topic_records(log_, "routed-events")) == 100, what="100 routed records")
    first = topic_records(log_, "routed-events")[0]
    key = json.loads(first.key)
    value = json.loads(first.value)
    assert key == {
        "schema": {
            "type": "struct",
            "fields": [{"type": "int32", "optional": False, "field": "id"}],
            "optional": False,
            "name": "gen.Key",
        },
        "payload": {"id": 0},
    }
    assert value["payload"] == {"id": 0, "name": "n0", "origin": "generator"}
    assert log_.describe_topic("gen.events") is None
    # Each acknowledged record is reported back to the task; the offset is stored.
    wait_until(lambda: len(GeneratorTask.committed_records) == 100, what="commit_record for all")
    assert herder.worker.offset_store.get([b'["gen",{"gen":"gen.events"}]'])[b'["gen",{"gen":"gen.events"}]'] == (
        b'{"n":100}'
    )


def test_errors_tolerance_none_fails_the_task_with_a_trace(herder: StandaloneHerder) -> None:
    herder.put_connector_config(source_config(**{"bad.every": "30"}))
    status = herder.worker.status_store
    wait_until(lambda: (s := status.get_task("gen", 0)) is not None and s.state is State.FAILED, what="FAILED")
    trace = status.get_task("gen", 0).trace
    assert "VALUE_CONVERTER" in trace and "errors.tolerance=all" in trace
    # Record 0 is the bad one: nothing after it may be stored as done.
    assert not topic_records(herder.worker.log, "gen.events")
    assert herder.worker.offset_store.all() == {}


def test_errors_tolerance_all_skips_and_continues(herder: StandaloneHerder, caplog) -> None:
    herder.put_connector_config(
        source_config(**{"bad.every": "30", "errors.tolerance": "all", "errors.log.enable": "true"})
    )
    log_ = herder.worker.log
    wait_until(lambda: len(topic_records(log_, "gen.events")) == 96, what="96 good records")
    ids = [json.loads(r.value)["payload"]["id"] for r in topic_records(log_, "gen.events")]
    assert ids == [n for n in range(100) if n % 30 != 0]
    wait_until(lambda: herder.worker.offset_store.all() != {}, what="offsets")
    assert list(herder.worker.offset_store.all().values()) == [b'{"n":100}']
    assert sum("record skipped" in r.getMessage() for r in caplog.records) == 4


def test_sink_path_delivers_converted_records_and_commits(herder: StandaloneHerder) -> None:
    herder.put_connector_config(source_config())
    herder.put_connector_config(
        {
            "name": "collect",
            "connector.class": "CollectingSink",
            "topics": "gen.events",
            "transforms": "drop",
            "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
            "transforms.drop.exclude": "name",
        }
    )
    wait_until(lambda: len(CollectingTask.received) == 100, what="100 records in the sink")
    r = CollectingTask.received[5]
    assert r.topic == "gen.events" and r.kafka_partition == 0 and r.kafka_offset == 5
    assert r.key.get("id") == 5
    assert r.value.to_dict() == {"id": 5}
    group = herder.worker.log.group_consumer("connect-collect", ["gen.events"])
    tp = TopicPartition("gen.events", 0)
    wait_until(lambda: group.committed([tp])[tp] == 100, what="committed sink offsets")
    group.close()


def test_sink_requires_exactly_one_of_topics_and_regex(herder: StandaloneHerder) -> None:
    from cdc.api.errors import ConfigException

    with pytest.raises(ConfigException, match="topics"):
        herder.put_connector_config({"name": "c", "connector.class": "CollectingSink"})


def test_task_restart_resumes_from_stored_offset(herder: StandaloneHerder) -> None:
    herder.put_connector_config(source_config(count="50"))
    log_ = herder.worker.log
    wait_until(lambda: len(topic_records(log_, "gen.events")) == 50, what="50 records")
    herder.restart_task(ConnectorTaskId("gen", 0))
    time.sleep(0.5)
    # The restarted task read its stored offset and emitted nothing again.
    assert len(topic_records(log_, "gen.events")) == 50
    assert herder.worker.status_store.get_task("gen", 0).state is State.RUNNING


def test_sink_dead_letter_queue_keeps_failed_records(herder: StandaloneHerder) -> None:
    log_ = herder.worker.log
    p = log_.producer()
    good = b'{"schema":{"type":"int32","optional":false},"payload":7}'
    p.send("raw", good, key=b"k1")
    p.send("raw", b"{not json", key=b"k2")
    p.send("raw", good, key=b"k3")
    p.flush()
    p.close()
    herder.put_connector_config(
        {
            "name": "collect",
            "connector.class": "CollectingSink",
            "topics": "raw",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
        }
    )
    wait_until(lambda: len(CollectingTask.received) == 2, what="2 good records")
    assert [r.value for r in CollectingTask.received] == [7, 7]
    wait_until(lambda: len(topic_records(log_, "dlq")) == 1, what="the failed record in the DLQ")
    (dead,) = topic_records(log_, "dlq")
    assert dead.key == b"k2" and dead.value == b"{not json"
    headers = dict(dead.headers)
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.offset"] == b"1"
    assert headers["__connect.errors.connector.name"] == b"collect"


def test_validate_reports_every_field_in_kafka_connects_shape(herder: StandaloneHerder) -> None:
    infos = herder.worker.validate_infos(
        source_config(
            **{
                "tasks.max": "zero",
                "count": "many",
                "transforms": "r",
                "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
            }
        )
    )
    assert infos["name"] == "tests.runtime.connectors.GeneratorSource"
    by_name = {c["value"]["name"]: c for c in infos["configs"]}
    assert by_name["tasks.max"]["value"]["errors"] and by_name["count"]["value"]["errors"]
    assert any("transforms.r.regex" in e for c in infos["configs"] for e in c["value"]["errors"])
    assert not by_name["topic"]["value"]["errors"]
    assert infos["error_count"] >= 3
    assert by_name["tasks.max"]["definition"]["type"] == "INT"


def test_embedded_log_retention_is_enforced_by_the_worker(tmp_path: Path) -> None:
    """As a Kafka broker's log cleaner: expired records of delete-policy topics go, compacted
    topics and retention.ms=-1 topics (schema history) stay."""
    from cdc.log.base import TopicSpec

    config = WorkerConfig(
        {"transport": "embedded", "state.dir": str(tmp_path / "state"), "log.retention.check.interval.ms": "50"}
    )
    log_ = open_log(config)
    log_.create_topics(
        [
            TopicSpec("events", 1, config={"retention.ms": "500"}),
            TopicSpec("history", 1, config={"retention.ms": "-1"}),
            TopicSpec("offsets", 1, config={"cleanup.policy": "compact", "retention.ms": "500"}),
        ]
    )
    producer = log_.producer()
    for topic in ("events", "history", "offsets"):
        for i in range(5):
            producer.send(topic, str(i).encode(), key=str(i).encode())
    producer.flush()
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_)
    )
    worker.start()
    try:
        tp = TopicPartition("events", 0)
        wait_until(lambda: log_.beginning_offsets([tp]) == {tp: 5}, what="the expired records to be deleted")
        others = [TopicPartition("history", 0), TopicPartition("offsets", 0)]
        assert list(log_.beginning_offsets(others).values()) == [0, 0]
    finally:
        worker.stop()
    assert worker.cleaner is not None and not worker.cleaner._thread.is_alive()


class _ExplainedFailureTask(GeneratorTask):
    def poll(self):  # type: ignore[no-untyped-def]
        from cdc.api.errors import ConnectException

        raise ConnectException("cannot reach db:3306 (refused); check database.hostname")


class _BugTask(GeneratorTask):
    def poll(self):  # type: ignore[no-untyped-def]
        raise KeyError("oops")


class ExplainedFailureSource(GeneratorSource):
    def task_class(self):  # type: ignore[no-untyped-def]
        return _ExplainedFailureTask


class BugSource(GeneratorSource):
    def task_class(self):  # type: ignore[no-untyped-def]
        return _BugTask


def test_a_failure_the_connector_explains_is_logged_without_a_trace(herder: StandaloneHerder, caplog) -> None:
    """A ConnectException's message is the advice: one ERROR line (its trace in the status and
    at DEBUG); any other exception is a bug and keeps its trace in the log."""
    herder.worker.registry.add(ExplainedFailureSource, "1.0", "test")
    herder.worker.registry.add(BugSource, "1.0", "test")
    status = herder.worker.status_store
    for name in ("ExplainedFailureSource", "BugSource"):
        herder.put_connector_config(source_config(name=name, **{"connector.class": name}))
        wait_until(lambda n=name: (s := status.get_task(n, 0)) is not None and s.state is State.FAILED, what=name)
    failed = {r.getMessage().split(" failed")[0]: r for r in caplog.records if " failed: " in r.getMessage()}
    explained, bug = failed["Task ExplainedFailureSource-0"], failed["Task BugSource-0"]
    assert explained.levelname == "ERROR" and not explained.exc_info
    assert "check database.hostname" in explained.getMessage()
    assert bug.levelname == "ERROR" and bug.exc_info
    assert "ConnectException" in (status.get_task("ExplainedFailureSource", 0).trace or "")
