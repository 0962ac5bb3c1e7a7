from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import (
    FileOffsetBackingStore,
    OffsetStorageReaderImpl,
    OffsetStorageWriter,
    OffsetStoreError,
    TopicOffsetBackingStore,
    describe_offsets,
    offset_key,
)
from cdc.storage.status import ConnectorStatus, State, StatusBackingStore, TaskStatus
from tests.log.contract import unique
from tests.support.logs import stored_offsets


def test_key_is_kafka_connects_json() -> None:
    assert offset_key("inv", {"server": "dbserver1"}) == b'["inv",{"server":"dbserver1"}]'


def _roundtrip(store_factory) -> None:
    store = store_factory()
    store.start()
    w = OffsetStorageWriter(store, "conn")
    w.offset({"server": "a"}, {"file": "mysql-bin.000003", "pos": 154, "row": 1})
    w.offset({"server": "b", "x": 1}, {"lsn": 5})
    assert w.flush() == 2
    store.stop()
    again = store_factory()
    again.start()
    reader = OffsetStorageReaderImpl(again, "conn")
    assert reader.offset({"server": "a"}) == {"file": "mysql-bin.000003", "pos": 154, "row": 1}
    # Lookups do not depend on the key order the task uses.
    assert reader.offset({"x": 1, "server": "b"}) == {"lsn": 5}
    assert reader.offset({"server": "zzz"}) is None
    assert OffsetStorageReaderImpl(again, "other").offset({"server": "a"}) is None
    w2 = OffsetStorageWriter(again, "conn")
    w2.offset({"server": "a"}, None)  # a tombstone resets
    w2.flush()
    assert reader.offset({"server": "a"}) is None
    rows = describe_offsets(again)
    assert [r["partition"] for r in rows] == [{"server": "b", "x": 1}]
    again.stop()


def test_file_store_roundtrip(tmp_path: Path) -> None:
    _roundtrip(lambda: FileOffsetBackingStore(tmp_path / "offsets.json"))


def test_file_store_corrupt_file_is_explained(tmp_path: Path) -> None:
    p = tmp_path / "offsets.json"
    p.write_text("{nope")
    with pytest.raises(OffsetStoreError, match=r"offsets\.json"):
        FileOffsetBackingStore(p).start()


def test_embedded_topic_store_roundtrip(tmp_path: Path) -> None:
    log_ = EmbeddedLog(tmp_path / "s")
    _roundtrip(lambda: TopicOffsetBackingStore(log_, "connect-offsets", 25))
    # The topic itself reads as Kafka Connect's format.
    stored = stored_offsets(log_)
    assert stored == {'["conn",{"server":"b","x":1}]': {"lsn": 5}}
    assert log_.describe_topic("connect-offsets").config["cleanup.policy"] == "compact"
    log_.close()


def test_kafka_topic_store_roundtrip(tansu) -> None:
    log_ = KafkaLog(tansu.bootstrap)
    topic = unique("offsets")
    _roundtrip(lambda: TopicOffsetBackingStore(log_, topic, 5))
    raw = stored_offsets(log_, topic)
    assert raw == {'["conn",{"server":"b","x":1}]': {"lsn": 5}}
    assert all(json.loads(k)[0] == "conn" for k in raw)


def test_status_store_topic_format(tmp_path: Path) -> None:
    log_ = EmbeddedLog(tmp_path / "s")
    store = StatusBackingStore(log_, "connect-status", 5)
    store.start()
    store.put(ConnectorStatus("c1", State.RUNNING, "w1"))
    store.put(TaskStatus("c1", 0, State.FAILED, "w1", "boom"))
    store.stop()
    raw = {k: v for k, v in stored_offsets(log_, "connect-status").items()}
    assert raw["status-connector-c1"] == {"state": "RUNNING", "trace": None, "worker_id": "w1", "generation": 0}
    assert raw["status-task-c1-0"]["state"] == "FAILED" and raw["status-task-c1-0"]["trace"] == "boom"
    again = StatusBackingStore(log_, "connect-status", 5)
    again.start()
    assert again.get_task("c1", 0).state is State.FAILED
    again.stop()
    log_.close()
