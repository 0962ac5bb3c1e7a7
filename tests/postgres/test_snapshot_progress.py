"""Snapshot progress on tables PostgreSQL has no statistics for: a count, never "about -1 rows".

pg_class.reltuples is -1 until ANALYZE or VACUUM first runs (PostgreSQL 14+); autovacuum is
off on these tables, so nothing analyzes them while the test runs. Every number also comes
back as text in the snapshot's transaction, where float4 prints 1234567 as 1.234567e+06.
"""

from __future__ import annotations

import logging
import random
import re

import pytest

from cdc.runtime.standalone import StandaloneHerder
from tests.postgres.test_connector import connector, herder, values, wait_until

__all__ = ["herder"]  # the fixture, shared with test_connector

SEED = random.randrange(2**32)
_NUMBERS = re.compile(r"Snapshot of (\S+?):? (?:started: about |done: |\d+ of about |\d+ of ~)(-?\d+) rows")


def _progress(caplog: pytest.LogCaptureFixture) -> dict[str, list[tuple[str, int]]]:
    """Per table, each snapshot progress line's kind and the row count it names."""
    found: dict[str, list[tuple[str, int]]] = {}
    for record in caplog.records:
        text = record.getMessage()
        if m := _NUMBERS.match(text):
            kind = "started" if "started" in text else "done" if "done" in text else "during"
            found.setdefault(m.group(1), []).append((kind, int(m.group(2))))
    return found


def test_tables_without_statistics_report_a_count_not_minus_one(
    herder: StandaloneHerder, postgres_db, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(SEED)
    sizes = {
        "empty": 0,
        "tiny": rng.randint(1, 9),
        "medium": rng.randint(10, 9_999),
        "large": rng.randint(10_001, 24_000),  # past the counted head: the planner's estimate
    }
    sql = postgres_db.connect()
    for name, rows in sizes.items():
        sql.execute(f"CREATE TABLE {name}(id int PRIMARY KEY, v text) WITH (autovacuum_enabled = false)")
        sql.execute(f"INSERT INTO {name} SELECT g, repeat('x', g % 40) FROM generate_series(1, {rows}) g")
    # Statistics of a table that once held over a million rows (float4 text: 1.234567e+06).
    sql.execute("CREATE TABLE analyzed(id int PRIMARY KEY) WITH (autovacuum_enabled = false)")
    sql.execute("INSERT INTO analyzed SELECT generate_series(1, 5)")
    sql.execute("ANALYZE analyzed")
    sql.execute("UPDATE pg_class SET reltuples = 1234567 WHERE oid = 'analyzed'::regclass")
    never_analyzed = sql.execute(
        "SELECT count(*) FROM pg_class WHERE relname = ANY(%s) AND reltuples < 0", (list(sizes),)
    ).fetchone()[0]
    assert never_analyzed == len(sizes), f"seed {SEED}: the tables must have no statistics yet"

    caplog.set_level(logging.INFO)
    herder.put_connector_config(connector(postgres_db))
    expected = {**sizes, "analyzed": 5}
    for name, rows in expected.items():
        wait_until(lambda n=name, r=rows: len(values(herder, f"srv.public.{n}")) >= r, timeout=120, what=name)
    wait_until(
        lambda: (
            len(_progress(caplog)) == len(expected)
            and all(any(kind == "done" for kind, _ in lines) for lines in _progress(caplog).values())
        ),
        what="every table's snapshot done",
    )

    progress = {table.rsplit(".", 1)[-1]: lines for table, lines in _progress(caplog).items()}
    where = f"seed {SEED}, sizes {sizes}, progress {progress}"
    assert all(n >= 0 for lines in progress.values() for _, n in lines), where
    estimates = {name: next(n for kind, n in lines if kind == "started") for name, lines in progress.items()}
    for name in ("empty", "tiny", "medium"):  # counted: exact
        assert estimates[name] == sizes[name], where
    assert 10_001 <= estimates["large"] <= 10 * sizes["large"], where
    assert estimates["analyzed"] == 1_234_567, where  # the statistics, as they are
    assert any(kind == "during" for kind, _ in progress["large"]), where  # its 10,000-row lines were checked too
    assert {name: next(n for kind, n in lines if kind == "done") for name, lines in progress.items()} == expected
