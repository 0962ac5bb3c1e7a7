"""A worker acts on the config topic only once it has read it to the end (Kafka Connect's readConfigToEnd)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from cdc.log.base import LogReader, LogRecord, TopicLog, TopicPartition
from cdc.storage.status import ConnectorStatus, State, Status, TaskStatus
from tests.distributed.cluster import Member, cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker


class _SlowReader(LogReader):
    """Hands out one record per poll, slowly: a config topic that takes seconds to catch up on."""

    def __init__(self, inner: LogReader, delay: float) -> None:
        self._inner, self._delay = inner, delay
        self._buffer: list[LogRecord] = []

    def assign(self, positions: Any) -> None:
        self._inner.assign(positions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._inner.seek(tp, offset)

    def position(self, tp: TopicPartition) -> int:
        # What the follower has been handed so far, not what the inner reader fetched ahead.
        return self._buffer[0].offset if self._buffer else self._inner.position(tp)

    def assignment(self) -> list[TopicPartition]:
        return self._inner.assignment()

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        if not self._buffer:
            self._buffer = self._inner.poll(max_records, timeout)
        if not self._buffer:
            return []
        time.sleep(self._delay)
        return [self._buffer.pop(0)]

    def close(self) -> None:
        self._inner.close()


class _SlowConfigLog:
    """The worker's log, except that readers (only the config follower asks for one) are slow."""

    def __init__(self, inner: TopicLog, delay: float) -> None:
        self._inner, self._delay = inner, delay

    def reader(self, **overrides: str) -> LogReader:
        return _SlowReader(self._inner.reader(**overrides), self._delay)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_stopped_connector_never_starts_while_the_config_topic_is_still_being_read(tansu: KafkaBroker) -> None:
    props = cluster_props(tansu.bootstrap)
    first = Member(props)
    try:
        wait_until(lambda: first.herder.membership.is_leader, 60, "first worker leads")
        body = {"name": "s", "config": {"connector.class": "ControlledSource", "topic": "t-sync"}}
        assert first.http.post("/connectors", json=body).status_code == 201
        wait_until(lambda: [t["state"] for t in first.state("s").get("tasks", [])] == ["RUNNING"], 60, "s RUNNING")
        assert first.http.put("/connectors/s/stop").status_code == 204
        wait_until(lambda: first.state("s")["connector"]["state"] == "STOPPED", 30, "s STOPPED")
    finally:
        first.close()

    # A fresh worker whose config follower needs ~0.5 s per record: it is assigned every slot
    # long before it reaches the `target-state-s` record that says STOPPED.
    written: list[Status] = []

    def slow_config_topic(m: Member) -> None:
        m.herder.configs._log = _SlowConfigLog(m.herder.configs._log, 0.5)  # type: ignore[assignment]
        m.worker.status_store.add_listener(written.append)

    second = Member({**props, "worker.sync.timeout.ms": "30000"}, before_start=slow_config_topic)
    try:
        wait_until(
            lambda: any(isinstance(s, ConnectorStatus) and s.state is State.STOPPED for s in written),
            60,
            "the new worker reports s STOPPED",
        )
        started = [
            s
            for s in written
            if s.state is State.RUNNING or (isinstance(s, TaskStatus) and s.state is not State.UNASSIGNED)
        ]
        assert started == [], f"the stopped connector ran on a worker that had not read the config topic: {started}"
        assert second.worker.tasks == {}
    finally:
        with contextlib.suppress(Exception):
            second.close()
