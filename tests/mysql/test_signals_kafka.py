"""The kafka signal channel: signals on a topic of the worker's embedded log, read through the runtime's SignalLog.

The task gets the reader from its context (`SourceTaskContext.signal_log`), the runtime's own
SourceTaskContextImpl and TopicCreator as WorkerSourceTask builds them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from cdc.log.embedded import EmbeddedLog
from cdc.runtime.signal_log import TopicSignalLog
from cdc.runtime.source_task import SourceTaskContextImpl, TopicCreator
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, signal_props
from tests.rig import MariaDbServer


def _send(log_: EmbeddedLog, key: str, signal_id: str, kind: str, data: Any) -> None:
    value = json.dumps({"id": signal_id, "type": kind, "data": data}).encode()
    TopicSignalLog(log_, "dbserver1-signal", "writer").send(key.encode(), value)


@pytest.fixture
def embedded(tmp_path: Path):
    log_ = EmbeddedLog(tmp_path / "state", synchronous="NORMAL")
    yield log_
    log_.close()


def _runner(server: MariaDbServer, log_: EmbeddedLog, offsets: MemoryOffsets) -> TaskRunner:
    props = connector_props(
        server, snapshot__mode="no_data", incremental__snapshot__chunk__size="4", signal__enabled__channels="kafka",
        signal__poll__interval__ms="100", **signal_props(server),
    )  # fmt: skip
    run = TaskRunner(props, offsets)
    # The runtime's own context and topic creator, as WorkerSourceTask builds them.
    context = SourceTaskContextImpl(props, offsets, signals=TopicCreator(log_, None, -1).signal_log)
    run.task.initialize(context)
    return run


def test_kafka_channel_runs_signals_keyed_by_topic_prefix_once(
    mariadb_db: MariaDbServer, embedded: EmbeddedLog, caplog: pytest.LogCaptureFixture
) -> None:
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES " + ",".join(f"({i})" for i in range(1, 19)),
    )
    offsets = MemoryOffsets()
    table = f"{mariadb_db.database}.a"
    with caplog.at_level(logging.INFO), _runner(mariadb_db, embedded, offsets) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        _send(embedded, "other-connector", "k0", "execute-snapshot", {"data-collections": [table]})  # not ours
        _send(embedded, "dbserver1", "k1", "log", {"message": "kafka says hi"})
        _send(embedded, "dbserver1", "k2", "make-coffee", {})
        _send(embedded, "dbserver1", "k3", "execute-snapshot", {"data-collections": [table]})
        run.poll_until(lambda rs: len(incremental_reads(rs, "a")) >= 18, what="the reads of a")
        run.poll_until(lambda _: not run.task.signals.ctx.running, what="the snapshot's end")
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "a")) == list(range(1, 19))
    assert "kafka says hi" in caplog.text and "'k2'" in caplog.text and "unknown signal type" in caplog.text
    # A restarted task does not act on the signals it already read (the group's position is committed).
    with _runner(mariadb_db, embedded, offsets) as again:
        again.poll_until(lambda _: again.task.streaming is not None, what="streaming")
        execute(mariadb_db, "INSERT INTO a VALUES (100)")
        again.wait_data(1, "a")
    assert incremental_reads(again.records) == [] and not again.task.signals.ctx.running
