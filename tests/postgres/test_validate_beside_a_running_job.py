"""`cdc validate`'s live checks beside the PostgreSQL job they validate (issue 31).

Before the fix, validating a running job reported its own replication slot as "in use by
process N" (the job's own streaming connection), so the most natural check of a healthy job
failed. The streaming connection now names its slot in application_name
(`cdc streaming <slot>`), and the check accepts that reader; another client reading the slot
is still reported. The check is read-only: the job keeps streaming, and its slot's position
is not moved by it.
"""

from __future__ import annotations

import psycopg
import pytest

from cdc_postgres.connection import streaming_application_name
from cdc_postgres.replication import ReplicationConnection
from cdc_postgres.validation import preflight
from tests.postgres.harness import TaskRunner, connector_props

pytestmark = pytest.mark.integration


def _slot_state(sql: psycopg.Connection, slot: str) -> tuple[bool, str]:
    row = sql.execute(
        "SELECT s.active, a.application_name FROM pg_replication_slots s "
        "LEFT JOIN pg_stat_activity a ON a.pid = s.active_pid WHERE s.slot_name = %s",
        (slot,),
    ).fetchone()
    return bool(row[0]), row[1] or ""


def test_validate_in_a_loop_beside_a_streaming_task_disturbs_nothing(postgres_db) -> None:
    sql = postgres_db.connect(autocommit=True)
    sql.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    props = connector_props(postgres_db, **{"snapshot.mode": "no_data"})
    slot = props["slot.name"]
    with TaskRunner(props) as run:
        run.wait_streaming(sql)
        assert _slot_state(sql, slot) == (True, streaming_application_name(slot))
        for i in range(10):
            assert preflight(props) == [], "the job's own config validates while it runs"
            sql.execute("INSERT INTO t VALUES (%s)", (i,))
            run.poll_once()
        records = run.wait_data(10, timeout=40)
        assert _slot_state(sql, slot)[0], "the job still holds its slot"
    assert [r.value.get("after").get("id") for r in records] == list(range(10))


def test_another_reader_of_the_slot_is_still_reported(postgres_db) -> None:
    sql = postgres_db.connect(autocommit=True)
    sql.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    props = connector_props(postgres_db, **{"snapshot.mode": "no_data", "slot.drop.on.stop": "false"})
    slot = props["slot.name"]
    with TaskRunner(props) as run:
        run.wait_streaming(sql)
    other = ReplicationConnection({"host": postgres_db.host, "port": postgres_db.port, "user": postgres_db.user,
                                   "dbname": postgres_db.dbname, "application_name": "someone else"})  # fmt: skip
    try:
        other.start(slot, ["dbz_publication"])
        assert _slot_state(sql, slot) == (True, "someone else")
        (value,) = [v for v in preflight(props) if v.errors]
        assert value.name == "slot.name" and f"replication slot {slot!r} is in use by process" in value.errors[0]
    finally:
        other.close()
        sql.execute("SELECT pg_drop_replication_slot(%s) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
                    (slot, slot))  # fmt: skip
