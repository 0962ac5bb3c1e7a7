"""`kill -9` of a real `cdc standalone` worker in the middle of a large transaction, then a restart.

Embedded log: the records of each poll batch and their offset commit together, and the
offset of a record inside a transaction is the transaction start plus event/row skip
counts. So at the kill the topic holds exactly the rows the stored offset covers, and the
restarted worker re-reads the transaction from its start, skips what was emitted and
delivers the rest: every row exactly once, in commit order.
"""

from __future__ import annotations

import json
from pathlib import Path

from cdc.log.base import TopicPartition
from cdc.log.embedded import EmbeddedLog
from tests.mysql.harness import connector_props, execute
from tests.support.logs import stored_offsets, topic_records
from tests.support.proc import CdcProcess, wait_for, write_props

ROWS = 30_000
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _count(log_: EmbeddedLog, topic: str) -> int:
    """Records in the topic, from its end offset (cheap enough to poll while the worker writes)."""
    if log_.describe_topic(topic) is None:
        return 0
    tp = TopicPartition(topic, 0)
    return log_.end_offsets([tp])[tp]


def _ids(log_: EmbeddedLog, topic: str) -> list[int]:
    out = []
    for r in topic_records(log_, topic):
        if r.value is not None:
            out.append(json.loads(r.value)["payload"]["after"]["id"])
    return out


def test_kill9_mid_transaction_resumes_without_loss_or_duplicates(mariadb_db, tmp_path: Path) -> None:
    db = mariadb_db.database
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", "INSERT INTO t VALUES (0, 'seed')")
    state = tmp_path / "state"
    state.mkdir()
    worker = write_props(
        tmp_path / "worker.properties",
        {
            "transport": "embedded",
            "state.dir": state,
            "key.converter": JSON,
            "value.converter": JSON,
            "listeners": "http://127.0.0.1:0",
        },
    )
    props = connector_props(mariadb_db, name="mysql", max__batch__size=500, max__queue__size=2000)
    props["schema.history.internal.file.filename"] = str(tmp_path / "history.jsonl")
    connector = write_props(tmp_path / "mysql.properties", props)
    topic = f"dbserver1.{db}.t"
    key = json.dumps(["mysql", {"server": "dbserver1"}], separators=(",", ":"))

    log_ = EmbeddedLog(state)
    try:
        first = CdcProcess("standalone", str(worker), str(connector), log_path=tmp_path / "worker-1.log")
        try:
            wait_for(lambda: _count(log_, topic) >= 1, 60, "the snapshot row", first)
            values = ",".join(f"({i}, 'value-{i}')" for i in range(1, ROWS + 1))
            execute(mariadb_db, "START TRANSACTION", f"INSERT INTO t VALUES {values}", "COMMIT")
            wait_for(lambda: _count(log_, topic) >= 3000, 60, "3000 rows of the transaction", first)
        finally:
            first.kill9()

        at_kill = _ids(log_, topic)
        stored = stored_offsets(log_)[key]
        assert 1 < len(at_kill) < ROWS + 1, "the kill must land inside the transaction"
        # Records and offsets committed together: the offset covers exactly what is in the topic.
        assert stored.get("row", 0) > 0 or stored.get("event", 0) > 0, stored
        assert at_kill == list(range(len(at_kill)))

        second = CdcProcess("standalone", str(worker), str(connector), log_path=tmp_path / "worker-2.log")
        try:
            wait_for(lambda: _count(log_, topic) >= ROWS + 1, 120, "every row", second)
        finally:
            code = second.terminate()
        assert code == 0, second.output()[-3000:]
        assert _ids(log_, topic) == list(range(ROWS + 1))
        assert (tmp_path / "history.jsonl").read_text().count('"ddl"') >= 1
    finally:
        log_.close()
