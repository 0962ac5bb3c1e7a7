"""`max.queue.size.in.bytes` on MySQL/MariaDB: implemented, not merely recognised, and checked by key.

The task decodes binlog events as poll() asks for them, so the records decoded for the next poll()
are its queue: decoding pauses once their estimated size (Debezium's per-record estimate,
cdc_debezium.queue.approximate_size) reaches the bound, inside one large rows event too.
"""

from __future__ import annotations

import pytest

from cdc_debezium.queue import approximate_size

BASE = {"database.hostname": "db", "database.user": "u", "topic.prefix": "srv", "database.server.id": "5400"}


@pytest.mark.integration
@pytest.mark.parametrize("bound", [0, 60_000])
def test_a_poll_holds_no_more_than_the_bound_in_bytes(mariadb_db, bound: int) -> None:
    """One 1,500-row UPDATE (one transaction, large rows events) of 2 KB rows while streaming: with
    the bound, each poll returns about the bound's worth of records (the last one crosses it), not
    max.batch.size; every row arrives once, in order. Without it, a poll holds many times as much."""
    from tests.mysql.harness import TaskRunner, connector_props, execute

    execute(
        mariadb_db,
        "CREATE TABLE wide (id INT PRIMARY KEY, body TEXT NOT NULL)",
        "INSERT INTO wide SELECT seq, REPEAT('x', 2000) FROM seq_1_to_1500",
    )
    props = connector_props(mariadb_db, max__batch__size="1000", max__queue__size="4000")
    props["max.queue.size.in.bytes"] = str(bound)
    with TaskRunner(props) as run:
        run.wait_data(1500)  # the snapshot
        run.wait_streaming()
        execute(mariadb_db, "UPDATE wide SET body = REPEAT('y', 2000)")
        batches: list[list] = []
        seen = 0
        for _ in range(400):
            batch = [r for r in run.poll_once() if r.topic.endswith(".wide")]
            if batch:
                batches.append(batch)
                seen += len(batch)
            if seen >= 1500:
                break
    updates = [r for b in batches for r in b]
    assert [r.value.get("after").get("id") for r in updates] == list(range(1, 1501))
    assert {r.value.get("op") for r in updates} == {"u"}
    sizes = [sum(approximate_size(r) for r in b) for b in batches]
    one = max(approximate_size(r) for r in updates)
    if bound:
        assert all(s < bound + one for s in sizes), f"a poll held more than the bound: {sizes} (bound {bound})"
        assert max(len(b) for b in batches) < 1000, [len(b) for b in batches]
    else:  # bounded by count only: a poll holds far more than the bound above lets it
        assert max(sizes) > 2 * 60_000, sizes
