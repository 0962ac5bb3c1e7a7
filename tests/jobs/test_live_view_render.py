"""What `cdc run`'s live view draws (cdc/jobs/live_view.py), from a real worker: Debezium's MySQL
connector against MariaDB through its snapshot and streamed inserts, and the sink's figures as
ChangeApplier records them. Rendered to a recording rich Console (the terminal itself is
tests/jobs/test_run_live_view.py). The rate arithmetic is checked on seeded series."""

from __future__ import annotations

import io
import random
import re
import time
from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from cdc.jobs.live_view import WINDOW_S, LiveView, Series, duration
from cdc_spark.apply.metrics import SinkMetrics
from tests.mysql.harness import connector_props, execute
from tests.rest.conftest import Rest


@given(
    st.floats(0, 1e6),
    st.floats(1, 1e5),
    st.lists(st.floats(0.5, 4), min_size=1, max_size=30),
)
def test_a_steady_total_has_its_slope_as_rate(start: float, per_s: float, gaps: list[float]) -> None:
    series, at = Series(), 1000.0
    series.add(at, start)
    assert series.rate() is None
    for gap in gaps:
        at += gap
        series.add(at, start + per_s * (at - 1000.0))
        series.add(at, -1)  # a repeat of the last time is ignored
    assert abs((series.rate() or 0) - per_s) <= 1e-6 * per_s
    assert not series.moved_since(at)


def test_the_rate_follows_the_recent_pace() -> None:
    series = Series()
    for t in range(0, 60, 2):  # 1000 rows/s for a minute, then 100 rows/s
        series.add(float(t), 1000.0 * t)
    for t in range(60, 60 + int(WINDOW_S) + 4, 2):
        series.add(float(t), 60_000 + 100.0 * (t - 60))
    assert series.rate() == 100.0


def test_durations_read_as_people_write_them() -> None:
    assert [duration(s) for s in (0, 42, 60, 65.9, 3599, 3600, 3725)] == [
        "0s", "42s", "1m00s", "1m05s", "59m59s", "1h00m", "1h02m"
    ]  # fmt: skip


def test_the_view_of_a_running_worker(mariadb_db, tmp_path: Path) -> None:
    rng = random.Random()
    rows, streamed = rng.randint(1, 50), rng.randint(1, 20)
    execute(
        mariadb_db,
        "CREATE TABLE items (id INT PRIMARY KEY, v INT)",
        "INSERT INTO items VALUES " + ",".join(f"({i}, {i})" for i in range(rows)),
    )
    table = f"{mariadb_db.database}.items"
    figures = SinkMetrics()
    out = io.StringIO()
    console = Console(file=out, width=160, record=True, color_system=None)
    rest = Rest(tmp_path)
    try:
        config = connector_props(mariadb_db, **{"topic.prefix": "lv"})
        assert rest.http.post("/connectors", json={"name": "shop", "config": config}).status_code == 201
        view = LiveView("cdc run shop", rest.herder, lambda t: "lv_" + t.replace(".", "_"), figures, (table,), console)

        def shown() -> str:
            console.print(view.render())
            return console.export_text()

        def until(pattern: str, what: str, act: object = None) -> str:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                text = shown()
                if re.search(pattern, text):
                    return text
                if callable(act):
                    act()
                time.sleep(0.3)
            raise AssertionError(f"no {what} in the view:\n{text}")

        text = until(rf"{re.escape(table)}\W+{rows:,} done", "finished snapshot")
        assert "snapshot done" in text
        execute(mariadb_db, "INSERT INTO items VALUES " + ",".join(f"({1000 + i}, 0)" for i in range(streamed)))

        def more() -> None:  # a steady trickle: a rate needs two published totals apart
            execute(mariadb_db, f"INSERT INTO items VALUES ({rng.randrange(10_000, 2**31)}, 0)")

        text = until(r"streaming [1-9][\d,]* events/s, [\d.,]+ s behind the source", "streaming rate and lag", more)

        ts = int(time.time() * 1000) - 1500
        figures.applied(f"lv_{table.replace('.', '_')}", rows + streamed, pa.table({"__source_ts_ms": [ts - 10, ts]}))
        figures.rejected([f"lv_{table.replace('.', '_')}"])
        figures.batch_done()
        text = shown()
        line = next(line for line in text.splitlines()[::-1] if table in line)
        assert f"{rows + streamed:,}, 1 rejected" in line, line
        lag = float(re.search(r"([\d.]+) s\W*$", line)[1])  # type: ignore[index]
        assert 1.5 <= lag < 10, line
    finally:
        rest.close()
