"""`max.queue.size.in.bytes` on PostgreSQL: the queue between the WAL reader and poll() holds no more
than the bound (the key's parsing and checks, for both connectors: tests/debezium_core/test_queue_bytes.py)."""

from __future__ import annotations

import pytest

BASE = {"database.hostname": "db", "database.user": "u", "database.dbname": "shop", "topic.prefix": "srv"}


@pytest.mark.integration
def test_the_connector_queue_holds_no_more_than_the_bound_in_bytes(postgres_db) -> None:
    """A snapshot of 2 KB rows polled slowly: the queue between the reader and poll() holds at
    most about the bound's worth of records (one more may pass below it), not max.queue.size."""
    from tests.postgres.harness import TaskRunner, connector_props

    sql = postgres_db.connect()
    sql.execute("CREATE TABLE public.wide(id int PRIMARY KEY, body text NOT NULL)")
    sql.execute("INSERT INTO wide SELECT i, repeat('x', 2000) FROM generate_series(1, 1500) i")
    bound = 100_000  # about 40 rows of 2 KB; each row's estimate is over 2 KB (its text alone)
    props = connector_props(
        postgres_db, max__batch__size="16", max__queue__size="8192", max__queue__size__in__bytes=str(bound)
    )
    with TaskRunner(props) as run:
        assert run.task.queue.max_queue_size_in_bytes == bound
        seen = 0
        while seen < 1500:
            batch = run.poll_once()
            seen += sum(1 for r in batch if r.topic.endswith(".wide") and r.value is not None)
            assert run.task.queue.size_in_bytes < bound + 3000  # below the bound, plus the record let in
            assert len(run.task.queue) <= bound // 2000 + 1
        assert run.task.queue.high_water <= bound // 2000 + 1
