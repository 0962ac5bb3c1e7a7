"""Debezium's signals on MariaDB: each type through the source and file channels; bad signals refused in one line."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, replay, send_signal, signal_props
from tests.rig import MariaDbServer


class Sender:
    """Sends a signal through one channel: a row of the signal table, or a line of signal.file."""

    def __init__(self, channel: str, server: MariaDbServer, path: Path) -> None:
        self.channel, self.server, self.path = channel, server, path

    def props(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"signal__enabled__channels": self.channel, "signal__poll__interval__ms": "100"}
        if self.channel == "file":
            extra["signal__file"] = str(self.path)
        return extra

    def send(self, signal_id: str, kind: str, data: Any) -> None:
        if self.channel == "source":
            send_signal(self.server, signal_id, kind, data)
            return
        with open(self.path, "a", encoding="utf-8") as f:
            text = data if isinstance(data, str) or data is None else json.dumps(data)
            f.write(json.dumps({"id": signal_id, "type": kind, "data": text}) + "\n")


@pytest.fixture(params=["source", "file"])
def sender(request: pytest.FixtureRequest, mariadb_db: MariaDbServer, tmp_path: Path) -> Sender:
    create_signal_table(mariadb_db)
    return Sender(request.param, mariadb_db, tmp_path / "signals.jsonl")


def _tables(server: MariaDbServer, rows: int, *names: str) -> None:
    for name in names:
        execute(server, f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(20))")
        execute(server, f"INSERT INTO {name} VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(1, rows + 1)))


def _runner(server: MariaDbServer, sender: Sender, chunk: int = 5) -> TaskRunner:
    props = connector_props(
        server, snapshot__mode="no_data", incremental__snapshot__chunk__size=str(chunk), **signal_props(server),
        **sender.props(),
    )  # fmt: skip
    return TaskRunner(props)


def _streaming(run: TaskRunner) -> None:
    run.poll_until(lambda _: run.task.streaming is not None, what="streaming")


def test_execute_snapshot_reads_the_named_tables_only(mariadb_db: MariaDbServer, sender: Sender) -> None:
    _tables(mariadb_db, 23, "a", "b")
    with _runner(mariadb_db, sender) as run:
        _streaming(run)
        sender.send("x1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.b"], "type": "INCREMENTAL"})
        run.poll_until(lambda rs: len(incremental_reads(rs, "b")) >= 23, what="the reads of b")
        run.poll_until(lambda _: not run.task.signals.ctx.running, what="the snapshot's end")
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "b")) == list(range(1, 24))
    assert incremental_reads(run.records, "a") == []
    if sender.channel == "file":
        assert sender.path.read_text() == ""  # the file channel empties the file once read


def test_additional_conditions_filter_the_rows(mariadb_db: MariaDbServer, sender: Sender) -> None:
    _tables(mariadb_db, 30, "a")
    with _runner(mariadb_db, sender) as run:
        _streaming(run)
        sender.send("x2", "execute-snapshot", {
            "data-collections": [f"{mariadb_db.database}.a"],
            "additional-conditions": [{"data-collection": f"{mariadb_db.database}.a", "filter": "id % 3 = 0"}],
        })  # fmt: skip
        run.poll_until(lambda _: run.task.signals.ctx.correlation_id is not None, what="the snapshot to start")
        run.poll_until(lambda _: not run.task.signals.ctx.running, what="the snapshot's end")
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "a")) == list(range(3, 31, 3))


def test_pause_holds_the_snapshot_and_resume_finishes_it(mariadb_db: MariaDbServer, sender: Sender) -> None:
    _tables(mariadb_db, 60, "a")
    with _runner(mariadb_db, sender, chunk=3) as run:
        _streaming(run)
        sender.send("p0", "pause-snapshot", None)
        run.poll_until(lambda _: run.task.signals.ctx.paused, what="the pause")
        sender.send("x3", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.a"]})
        run.poll_until(lambda _: run.task.signals.ctx.running, what="the snapshot to be queued")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            run.poll_once()
        assert incremental_reads(run.records, "a") == []  # paused: no chunk read
        sender.send("r0", "resume-snapshot", None)
        run.poll_until(lambda rs: len(incremental_reads(rs, "a")) >= 60, what="all reads after resume")
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "a")) == list(range(1, 61))


@pytest.mark.parametrize("named", [True, False])
def test_stop_snapshot_drops_the_named_tables_or_all(mariadb_db: MariaDbServer, sender: Sender, named: bool) -> None:
    _tables(mariadb_db, 20, "a", "b")
    db = mariadb_db.database
    with _runner(mariadb_db, sender) as run:
        _streaming(run)
        sender.send("p1", "pause-snapshot", None)
        run.poll_until(lambda _: run.task.signals.ctx.paused, what="the pause")
        sender.send("x4", "execute-snapshot", {"data-collections": [f"{db}.a", f"{db}.b"]})
        run.poll_until(lambda _: len(run.task.signals.ctx.collections) == 2, what="both tables queued")
        stop = {"type": "INCREMENTAL", "data-collections": [f"{db}.b"]} if named else {"type": "INCREMENTAL"}
        sender.send("s1", "stop-snapshot", stop)
        run.poll_until(lambda _: len(run.task.signals.ctx.collections) < 2, what="the stop")
        sender.send("r1", "resume-snapshot", None)
        if named:
            run.poll_until(lambda rs: len(incremental_reads(rs, "a")) >= 20, what="the reads of a")
        run.poll_until(lambda _: not run.task.signals.ctx.running, what="the snapshot's end")
        execute(mariadb_db, "INSERT INTO b VALUES (100, 'after')")
        run.wait_data(1, "b")
    assert len(incremental_reads(run.records, "a")) == (20 if named else 0)
    assert incremental_reads(run.records, "b") == []


def test_log_signal_logs_its_message_with_the_offset(
    mariadb_db: MariaDbServer, sender: Sender, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="cdc_debezium.signals"), _runner(mariadb_db, sender) as run:
        _streaming(run)
        sender.send("l1", "log", {"message": "signal reached me at {}"})
        run.poll_until(lambda _: "signal reached me at {" in caplog.text, what="the log line")
    line = next(r.getMessage() for r in caplog.records if "signal reached me" in r.getMessage())
    assert "'file'" in line and "'pos'" in line  # {} became the offset


BAD = [
    ("b1", "make-coffee", {"x": 1}, "unknown signal type"),
    ("b2", "execute-snapshot", "{not json", "data is not valid JSON"),
    ("b3", "execute-snapshot", {"data-collections": ["nosuchdb.nosuchtable"]}, "matches no table"),
    ("b4", "execute-snapshot", {"data-collections": []}, "non-empty 'data-collections'"),
    ("b5", "execute-snapshot", {"data-collections": ["x"], "type": "sideways"}, "not incremental or blocking"),
    ("b6", "log", {"text": "no message"}, "'message' string"),
    ("b7", "execute-snapshot", [1, 2], "must be a JSON object"),
]


def test_bad_signals_log_one_line_naming_the_signal_and_change_nothing(
    mariadb_db: MariaDbServer, sender: Sender, caplog: pytest.LogCaptureFixture
) -> None:
    _tables(mariadb_db, 5, "a")
    with caplog.at_level(logging.WARNING), _runner(mariadb_db, sender) as run:
        _streaming(run)
        for signal_id, kind, data, _ in BAD:
            sender.send(signal_id, kind, data)
        run.poll_until(lambda _: all(f"'{i}'" in caplog.text for i, *_ in BAD), timeout=30, what="the warnings")
        execute(mariadb_db, "INSERT INTO a VALUES (99, 'still running')")
        run.wait_data(1, "a")
    for signal_id, _, _, fragment in BAD:
        lines = [r.getMessage() for r in caplog.records if f"'{signal_id}'" in r.getMessage()]
        assert len(lines) == 1 and fragment in lines[0] and "\n" not in lines[0], (signal_id, lines)
    assert not run.task.signals.ctx.running and incremental_reads(run.records) == []


def test_blocking_snapshot_reads_the_tables_while_the_binlog_waits(mariadb_db: MariaDbServer, sender: Sender) -> None:
    _tables(mariadb_db, 3000, "a", "b")
    table = f"{mariadb_db.database}.a"
    with _runner(mariadb_db, sender) as run:
        _streaming(run)
        sender.send("blk", "execute-snapshot", {"data-collections": [table], "type": "blocking"})
        # Changes made while the snapshot reads: streamed after it, ranking above its rows.
        execute(mariadb_db, "UPDATE a SET v = 'changed' WHERE id % 7 = 0", "DELETE FROM a WHERE id % 11 = 0",
                "INSERT INTO a VALUES (5000, 'new')")  # fmt: skip
        signals = run.task.signals

        def done(rs: list[Any]) -> bool:
            reads = [r for r in rs if r.topic.endswith(".a") and _snapshot(r) == "true"]
            return len(reads) >= 2000 and signals._blocking is None and not signals._blocking_queue

        run.poll_until(done, timeout=60, what="the blocking snapshot's reads")
        execute(mariadb_db, "UPDATE b SET v = 'marker' WHERE id = 1")
        run.poll_until(lambda rs: any(r.topic.endswith(".b") and r.value is not None for r in rs), what="marker")
    assert replay(run.records, "a") == {(("id", i),): {"id": i, "v": v} for i, v in _rows(mariadb_db, "a")}
    assert incremental_reads(run.records) == [] and not [r for r in run.records if r.topic.endswith(".b")
                                                         and _snapshot(r) == "true"]  # fmt: skip


def _snapshot(r: Any) -> str | None:
    if r.value is None or r.value.schema.field("op") is None:
        return None
    return r.value.get("source").get("snapshot")


def _rows(server: MariaDbServer, table: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, v FROM {table}")
        return [tuple(r) for r in cur.fetchall()]
