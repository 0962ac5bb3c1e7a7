"""Per-table `mode` / `delete.mode` (issue 24): one query, one event stream on three topics, each
table applied in its own mode: scd1 with hard deletes, scd2 history, scd1 with soft deletes.

Random histories (seeded by hypothesis) go through the streaming source on the embedded log in
two runs, keys spread over two partitions and events out of sequence order; since one table keeps
history the source forwards every event, and each table must end equal to its model."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import SinkConfig
from cdc_spark.decode import sequence
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, run_available_now
from tests.support.examples import examples

Event = tuple[int, int, str, int]  # (seq, key, op, qty)
HARD, HISTORY, SOFT = "p.db.hard", "p.db.history", "p.db.soft"

pytestmark = pytest.mark.slow  # a Spark query per delivery


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Event], list[list[Event]]]:
    n = draw(st.integers(2, 14))
    events = [
        (seq, draw(st.integers(1, 4)), draw(st.sampled_from("cud")), draw(st.integers(0, 99)))
        for seq in range(1, n + 1)
    ]
    order = draw(st.permutations(events))
    cut = draw(st.integers(1, n - 1))
    return events, [list(order[:cut]), list(order[cut:])]


def last_events(events: list[Event]) -> dict[int, Event]:
    last: dict[int, Event] = {}
    for e in sorted(events):
        last[e[1]] = e
    return last


def test_the_source_forwards_every_event_while_a_table_keeps_history() -> None:
    lake = "/lake"
    mixed = SinkConfig.parse({"target": "delta", "path": lake, "table.modes": {HISTORY: "scd2"}})
    assert not mixed.keeps_only_latest and mixed.mode_for("p_db_history") == "scd2" and mixed.mode_for("x") == "scd1"
    assert SinkConfig.parse({"target": "delta", "path": lake, "table.delete.modes": {SOFT: "soft"}}).keeps_only_latest


@pytest.mark.parametrize("target", ["postgres", "iceberg", "parquet"])
def test_history_for_a_table_is_refused_off_delta_naming_it(target: str) -> None:
    conf = {"target": target, "path": "/l", "dsn": "postgresql://u@h/d", "catalog": {"uri": "sqlite:////l/c.db"}}
    with pytest.raises(Exception) as e:
        SinkConfig.parse({**conf, "table.modes": {HISTORY: "scd2", HARD: "scd1"}})
    assert (
        str(e.value)
        == f"table.modes: scd2 (history) for table p_db_history needs target=delta; use scd1 for target={target}"
    )


@settings(
    max_examples=examples(3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=deliveries())
def test_each_table_ends_as_its_own_mode_says(spark: Any, case: tuple[list[Event], list[list[Event]]]) -> None:
    events, batches = case
    root = Path(tempfile.mkdtemp(prefix="cdc-modes-"))
    state, lake = str(root / "state"), str(root / "lake")
    topics = {topic: Table(topic) for topic in (HARD, HISTORY, SOFT)}
    sink = {"target": "delta", "path": lake, "table.modes": {HISTORY: "scd2"}, "table.delete.modes": {SOFT: "soft"}}
    for batch in batches:
        with EmbeddedLog(state) as log:
            for topic, t in topics.items():
                records = [t.event(op, key, {"name": f"v{seq}", "qty": qty}, seq) for seq, key, op, qty in batch]
                produce(log, topic, records, partitions=2)
        run_available_now(spark, {"state.dir": state, "topics": ",".join(topics)}, sink, str(root / "ckpt"))

    last = last_events(events)
    live = {k: e[3] for k, e in last.items() if e[2] != "d"}
    hard = delta_rows(f"{lake}/p_db_hard")
    assert {r["id"]: r["qty"] for r in hard} == live and not any(r["__deleted"] for r in hard), "scd1, hard deletes"

    soft = delta_rows(f"{lake}/p_db_soft")
    assert {r["id"]: r["__deleted"] for r in soft} == {k: e[2] == "d" for k, e in last.items()}, "soft: deletes flagged"
    assert {r["id"]: r["qty"] for r in soft if not r["__deleted"]} == live, "soft: live rows"

    history = delta_rows(f"{lake}/p_db_history")
    versions = sorted((r["id"], sequence.unpack(r["__valid_from"])[1]) for r in history)
    assert versions == sorted((key, seq) for seq, key, _, _ in events), "scd2: every event once as a version"
    current = [r for r in history if r["__valid_to"] is None and not r["__deleted"]]
    assert {r["id"]: r["qty"] for r in current} == live, "scd2: current rows"
    assert not Path(f"{lake}/p_db_history__tombstones").exists() and not Path(f"{lake}/p_db_soft__tombstones").exists()
