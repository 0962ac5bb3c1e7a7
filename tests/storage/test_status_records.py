"""The status topic may hold records that are not Kafka Connect's format (other tools, torn writes):
like KafkaStatusBackingStore, the worker skips them and keeps reading everything else."""

from __future__ import annotations

from pathlib import Path

from cdc.log.embedded import EmbeddedLog
from cdc.storage.status import ConnectorStatus, State, StatusBackingStore, TaskStatus
from tests.rest.conftest import wait_until

_BAD = [
    (b"status-task-c1-notanumber", b'{"state":"RUNNING","worker_id":"w","generation":0}'),
    (b"status-connector-c1", b"{not json"),
    (b"status-connector-c2", b'{"state":"SLEEPING","worker_id":"w","generation":0}'),
    (b"status-task-c1-1", b'["a list"]'),
]


def _write(log_: EmbeddedLog, records: list[tuple[bytes, bytes]]) -> None:
    producer = log_.producer()
    for key, value in records:
        producer.send("connect-status", value, key=key)
    assert producer.flush(10) == 0
    producer.close()


def test_unreadable_status_records_are_skipped_at_start(tmp_path: Path) -> None:
    log_ = EmbeddedLog(tmp_path)
    first = StatusBackingStore(log_)
    first.start()
    first.put(ConnectorStatus("c1", State.RUNNING, "w1"))
    _write(log_, _BAD)
    first.put(TaskStatus("c1", 0, State.FAILED, "w1", "boom"))
    first.stop()

    again = StatusBackingStore(log_)
    again.start()  # must not fail on the bad records
    try:
        task = again.get_task("c1", 0)
        assert task is not None and task.state is State.FAILED
        assert again.get_connector("c2") is None
    finally:
        again.stop()
        log_.close()


def test_a_bad_status_record_does_not_stop_the_follower(tmp_path: Path) -> None:
    log_ = EmbeddedLog(tmp_path)
    writer, follower = StatusBackingStore(log_), StatusBackingStore(log_)
    writer.start()
    follower.start()
    follower.follow()
    try:
        _write(log_, _BAD)
        writer.put(ConnectorStatus("c3", State.PAUSED, "w2"))
        wait_until(lambda: follower.get_connector("c3") is not None, 10, "the follower reads past the bad records")
        assert follower.get_connector("c3").state is State.PAUSED  # type: ignore[union-attr]
    finally:
        follower.stop()
        writer.stop()
        log_.close()
