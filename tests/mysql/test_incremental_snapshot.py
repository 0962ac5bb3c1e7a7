"""Incremental snapshots (Debezium's DBLog watermark algorithm) on MariaDB, driven by signals."""

from __future__ import annotations

from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import create_signal_table, incremental_reads, send_signal, signal_props


def test_execute_snapshot_through_the_signal_table_reads_every_row_in_chunks(mariadb_db) -> None:
    create_signal_table(mariadb_db)
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
    execute(mariadb_db, "INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(1, 51)))
    props = connector_props(mariadb_db, snapshot__mode="no_data", incremental__snapshot__chunk__size="7",
                            **signal_props(mariadb_db))  # fmt: skip
    with TaskRunner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "sig-1", "execute-snapshot", {"data-collections": [f"{mariadb_db.database}.t"]})
        run.poll_until(lambda rs: len(incremental_reads(rs, "t")) >= 50, what="50 incremental reads")
    reads = incremental_reads(run.records, "t")
    assert sorted(r.key.get("id") for r in reads) == list(range(1, 51))
