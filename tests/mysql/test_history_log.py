"""Schema history in the worker's own log: with no history setting, DDL lands in `schema-changes.<prefix>`."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cdc.api.history import history_log
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.history_log import TopicHistoryLog
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from tests.mysql.harness import connector_props, execute
from tests.support.logs import topic_records


def test_topic_history_log_appends_and_reads_back_in_order(tmp_path: Path) -> None:
    with EmbeddedLog(str(tmp_path)) as log_:
        history = TopicHistoryLog(log_, "schema-changes.x")
        for i in range(3):
            history.append(f"r{i}".encode())
        assert history.read_all() == [b"r0", b"r1", b"r2"]
        assert TopicHistoryLog(log_, "schema-changes.x").read_all() == [b"r0", b"r1", b"r2"]  # a restarted task
    assert history_log(object(), "t") is None  # a context without the accessor (older runtimes, test harnesses)


def test_embedded_worker_keeps_the_schema_history_in_its_log(mariadb_db, tmp_path: Path) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)")
    config = WorkerConfig({"transport": "embedded", "state.dir": str(tmp_path)})
    log_ = open_log(config)
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_), "w"
    )
    herder = StandaloneHerder(worker)
    herder.start()
    try:
        herder.put_connector_config({"name": "shop", **connector_props(mariadb_db)})
        _wait(lambda: log_.describe_topic("dbserver1") is not None, "the snapshot's schema change")
        execute(mariadb_db, "ALTER TABLE t ADD COLUMN c INT DEFAULT 7")
        _wait(lambda: len(topic_records(log_, "schema-changes.dbserver1")) == 2, "two history records")
        records = [json.loads(r.value) for r in topic_records(log_, "schema-changes.dbserver1")]
    finally:
        herder.stop()
    assert [r["ddl"].split()[0] for r in records] == ["CREATE", "ALTER"]
    columns = records[1]["tableChanges"][0]["table"]["columns"]
    assert columns[1]["name"] == "c" and columns[1]["defaultValueExpression"] == "7"
    assert (tmp_path / "cdc.db").exists() and not list(tmp_path.glob("*.jsonl"))


def _wait(cond, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
