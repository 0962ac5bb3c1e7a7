"""`cdc signal job.yaml ...`: the signal reaches the connector through the channel the job's source enables."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cdc.cli.signal import signal
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.signal_log import TopicSignalLog
from cdc_debezium.signals.record import SignalRecord
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, signal_props
from tests.rig import MariaDbServer


def _job(tmp_path: Path, server: MariaDbServer, **extra: str) -> Path:
    props = connector_props(server, snapshot__mode="no_data", **extra)
    return mysql_delta_job(tmp_path, "sig", props, {f"{server.database}.t": ""})


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(signal, list(args), catch_exceptions=False)
    return res.exit_code, res.output


def test_execute_snapshot_through_the_signal_table_reads_the_filtered_rows(
    mariadb_db: MariaDbServer, tmp_path: Path
) -> None:
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "INSERT INTO t VALUES " + ",".join(f"({i})" for i in range(1, 31)),
    )
    extra = signal_props(mariadb_db, incremental__snapshot__chunk__size="4")
    job = _job(tmp_path, mariadb_db, **extra)
    props = connector_props(mariadb_db, snapshot__mode="no_data", **extra)
    with TaskRunner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        code, out = _invoke(str(job), "execute-snapshot", "--tables", f"{mariadb_db.database}.t", "--filter", "id > 20",
                            "--id", "cli-1")  # fmt: skip
        assert code == 0 and "Sent execute-snapshot signal cli-1 to the signal table" in out, out
        # The snapshot's context forgets its correlation id when the snapshot ends, which on a quiet machine
        # happens within one poll; so wait for what the signal brings (the filtered rows) and the end instead.
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= 10 and not run.task.signals.ctx.running,
                       what="the signalled snapshot's rows and end")  # fmt: skip
    assert sorted(r.key.get("id") for r in incremental_reads(run.records, "t")) == list(range(21, 31))


def test_file_channel_gets_one_json_line_per_signal(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    job = _job(tmp_path, mariadb_db, signal__enabled__channels="file", signal__file=str(path))
    assert _invoke(str(job), "execute-snapshot", "--tables", "a.b,c.d", "--type", "blocking", "--id", "f1")[0] == 0
    assert _invoke(str(job), "pause-snapshot", "--id", "f2")[0] == 0
    first, second = (SignalRecord.from_json(line, "file") for line in path.read_text().splitlines())
    assert (first.id, first.type, json.loads(first.data or "")) == (
        "f1", "execute-snapshot", {"data-collections": ["a.b", "c.d"], "type": "BLOCKING"}
    )  # fmt: skip
    assert (second.id, second.type, second.data) == ("f2", "pause-snapshot", None)


def test_kafka_channel_writes_the_jobs_embedded_log_keyed_by_topic_prefix(
    mariadb_db: MariaDbServer, tmp_path: Path
) -> None:
    job = _job(tmp_path, mariadb_db, signal__enabled__channels="kafka")
    code, out = _invoke(str(job), "stop-snapshot", "--tables", "x.y", "--id", "k1")
    assert code == 0 and "dbserver1-signal" in out, out
    with EmbeddedLog(tmp_path / "state", synchronous="NORMAL") as log_:
        (key, value), *rest = TopicSignalLog(log_, "dbserver1-signal", "reader").poll()
    assert rest == [] and key == b"dbserver1"
    assert json.loads(value or b"") == {"id": "k1", "type": "stop-snapshot",
                                         "data": {"type": "INCREMENTAL", "data-collections": ["x.y"]}}  # fmt: skip


def test_a_job_without_a_signal_channel_is_refused_in_one_line(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    job = _job(tmp_path, mariadb_db)
    code, out = _invoke(str(job), "resume-snapshot")
    assert code != 0 and "signal.data.collection" in out and len(out.strip().splitlines()) == 1, out
