"""An incremental snapshot the connector's user may not run stops with one error naming the grant.

The watermark INSERT into the signal table refused (error 1142, which PyMySQL reports as an
OperationalError, like a lost connection) used to be retried once a second for ever; retrying cannot
help, so the table's snapshot ends (TABLE_SCAN_COMPLETED SQL_EXCEPTION) with one line that says what
to grant, and streaming goes on.
"""

from __future__ import annotations

import logging
from typing import Any

from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.mysql.incremental_support import SIGNAL_TABLE, incremental_reads, send_signal, signal_props
from tests.rig import MariaDbServer


def test_a_refused_watermark_write_stops_the_snapshot_with_the_grant_to_give(
    mariadb_db: MariaDbServer, caplog: Any
) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        f"CREATE TABLE {SIGNAL_TABLE} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)",
    )  # no GRANT INSERT on the signal table for the connector's user
    caplog.set_level(logging.WARNING, logger="cdc_mysql.incremental")
    props = connector_props(mariadb_db, snapshot__mode="no_data", **signal_props(mariadb_db))
    with TaskRunner(props) as run:
        run.poll_until(lambda _: run.task.streaming is not None, what="streaming")
        send_signal(mariadb_db, "denied-1", "execute-snapshot", {"data-collections": [f"{db}.t"]})
        run.poll_until(lambda _: any("stopped" in r.getMessage() for r in caplog.records), what="the error")
        execute(mariadb_db, "INSERT INTO t VALUES (4, 4)")
        run.wait_data(1, "t")  # the streamed insert
        assert not run.task.signals.ctx.running
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and f"INSERT, DELETE on {db}.{SIGNAL_TABLE}" in errors[0], errors
    assert "read.only=true" in errors[0] and "1142" in errors[0]
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert incremental_reads(run.records, "t") == []
