"""Per-key ordering, property-based: random histories delivered out of order, split into
batches, with re-deliveries and replayed batch ids; Delta (applied by Spark tasks, and by the
driver's MERGE), PostgreSQL and Iceberg must
each end equal to the model (the last event by sequence; a delete beats older updates),
and Delta SCD2 must hold every event once as a version, its current rows equal to the model."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_spark.apply import ChangeApplier
from cdc_spark.decode import sequence
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame
from tests.support.examples import examples

Event = tuple[int, int, str, int]  # (seq, key, op, qty)

pytestmark = pytest.mark.slow  # a minute or more: `pytest -m 'not slow'` for a quick local run


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Event], list[list[Event]], bool]:
    n = draw(st.integers(1, 16))
    events = [
        (seq, draw(st.integers(1, 4)), draw(st.sampled_from("cud")), draw(st.integers(0, 99)))
        for seq in range(1, n + 1)
    ]
    order = draw(st.permutations(events))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=2))))
    batches = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, n], strict=True) if order[a:b]]
    # Re-deliver a random slice later (at-least-once upstream), and maybe re-run the last batch id.
    again = draw(st.lists(st.sampled_from(events), max_size=4))
    if again:
        batches.append(again)
    return events, batches, draw(st.booleans())


def model(events: list[Event]) -> dict[int, int]:
    last: dict[int, Event] = {}
    for e in sorted(events):
        last[e[1]] = e
    return {k: e[3] for k, e in last.items() if e[2] != "d"}


def _visible(rows: list[dict[str, Any]]) -> dict[int, int]:
    return {r["id"]: r["qty"] for r in rows if not r.get("__deleted")}


@settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=deliveries())
def test_targets_equal_the_model(spark: Any, postgres: Any, case: tuple[list[Event], list[list[Event]], bool]) -> None:
    events, batches, replay_last = case
    topic = f"p.db.t{uuid.uuid4().hex[:8]}"
    table = topic.replace(".", "_")
    t = Table(topic)
    root = Path(tempfile.mkdtemp(prefix="cdc-prop-"))
    catalog = {"uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}"}
    appliers = [
        ChangeApplier({"target": "delta", "path": str(root / "lake"), "buckets": 3}),  # Spark tasks apply
        ChangeApplier({"target": "delta", "path": str(root / "driver"), "apply.on": "driver"}),
        ChangeApplier({"target": "postgres", "dsn": postgres.dsn}),
        ChangeApplier({"target": "iceberg", "catalog": catalog, "namespace": "lake"}),
        ChangeApplier({"target": "delta", "path": str(root / "history"), "mode": "scd2"}),
    ]
    runs = list(enumerate(batches))
    if replay_last:
        runs.append(runs[-1])
    for batch_id, batch in runs:
        frame = raw_frame(
            spark, topic, [t.event(op, key, {"name": f"v{seq}", "qty": qty}, seq) for seq, key, op, qty in batch]
        )
        for applier in appliers:
            applier(frame, batch_id)
    expected = model(events)
    assert _visible(delta_rows(str(root / "lake" / table))) == expected, "Delta (executors)"
    assert _visible(delta_rows(str(root / "driver" / table))) == expected, "Delta (driver)"
    assert _visible(postgres_rows(postgres.dsn, table)) == expected, "PostgreSQL"
    assert _visible(iceberg_rows(catalog, "lake", table)) == expected, "Iceberg"
    history = delta_rows(str(root / "history" / table))
    current = [r for r in history if r["__valid_to"] is None]
    assert _visible(current) == expected, "Delta SCD2 current rows"
    versions = sorted((r["id"], sequence.unpack(r["__valid_from"])[1]) for r in history)
    assert versions == sorted((key, seq) for seq, key, _, _ in events), "Delta SCD2 versions"
