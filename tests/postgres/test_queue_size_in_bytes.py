"""`max.queue.size.in.bytes`: implemented, not merely recognised, and checked by key."""

from __future__ import annotations

import logging

import pytest

from cdc.api import ConfigException
from cdc_postgres.config import PostgresConnectorConfig, validate

BASE = {"database.hostname": "db", "database.user": "u", "database.dbname": "shop", "topic.prefix": "srv"}


def test_the_bound_in_bytes_is_read_and_not_reported_unsupported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert PostgresConnectorConfig.parse(BASE).max_queue_size_in_bytes == 0  # Debezium's default: no bound
    config = PostgresConnectorConfig.parse({**BASE, "max.queue.size.in.bytes": "1048576"})
    assert config.max_queue_size_in_bytes == 1_048_576
    assert "max.queue.size.in.bytes" not in caplog.text


@pytest.mark.parametrize("bad", ["-1", "lots"])
def test_a_bad_bound_names_the_key(bad: str) -> None:
    errors = {v.name: v.errors for v in validate({**BASE, "max.queue.size.in.bytes": bad}) if v.errors}
    assert list(errors) == ["max.queue.size.in.bytes"]
    with pytest.raises(ConfigException) as e:
        PostgresConnectorConfig.parse({**BASE, "max.queue.size.in.bytes": bad})
    assert e.value.name == "max.queue.size.in.bytes"


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
