"""The sink's per-table figures (cdc_spark/apply/metrics.py, exported by `cdc run` as cdc_sink_*):
after a seeded run of two tables through ChangeApplier under errors.tolerance=all, rows applied
are each table's keys but those whose row Delta refuses (a date of the year 10000), rejected are
those and the poison events (both dead-lettered), batches are the micro-batches that wrote the
table, and the lag is the commit time minus the newest source commit time the batch handled."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from cdc.api.data import Schema
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply.metrics import TableFigures, process_metrics
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, run_available_now
from tests.spark.test_error_keys import DATE

SEED = random.randrange(2**32)
BASE_TS = 1_700_000_000_000  # tests/spark/events.py: source.ts_ms = BASE_TS + seq
YEAR_10000_DAY = 2_932_897  # 10000-01-01 in days since 1970


def _events(rng: random.Random, table: Table, keys: int, start: int) -> tuple[list[Any], int]:
    """Creates then random updates of `keys` keys; returns the records and the highest seq."""
    records, seq = [], start
    for key in range(1, keys + 1):
        seq += 1
        records.append(table.event("c", key, {"name": f"n{key}", "qty": key, "day": key}, seq))
    for _ in range(rng.randint(0, 3 * keys)):
        seq += 1
        key = rng.randint(1, keys)
        records.append(table.event("u", key, {"name": f"u{seq}", "qty": seq}, seq))
    return records, seq


def test_figures_per_table_follow_a_seeded_run(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    alpha = Table("shop.inv.alpha", {"id": Schema.INT32_SCHEMA, "name": Schema.OPTIONAL_STRING_SCHEMA, "day": DATE})
    beta = Table("shop.inv.beta")
    alpha_keys, beta_keys, poison = rng.randint(1, 40), rng.randint(1, 40), rng.randint(1, 5)
    alpha_records, alpha_seq = _events(rng, alpha, alpha_keys, 0)
    # Keys whose latest event has a date Delta cannot hold (year 10000): parked, not applied.
    refused = rng.sample(range(1, alpha_keys + 1), rng.randint(0, alpha_keys // 2))
    for key in refused:
        alpha_seq += 1
        alpha_records.append(alpha.event("u", key, {"name": "late", "day": YEAR_10000_DAY}, alpha_seq))
    beta_records, beta_seq = _events(rng, beta, beta_keys, 10_000)
    state = str(tmp_path / "state")
    with EmbeddedLog(state) as log:
        produce(log, alpha.topic, alpha_records, partitions=2)
        produce(log, beta.topic, beta_records, partitions=2)
        bad = [(f'{{"id":{900 + i}}}'.encode(), b'{"op":"c","after":{') for i in range(poison)]
        produce(log, alpha.topic, bad, partition=0)
    sink = {
        "target": "delta",
        "path": str(tmp_path / "lake"),
        "errors.tolerance": "all",
        "errors.deadletterqueue.path": str(tmp_path / "dlq"),
    }
    before = process_metrics().snapshot()
    query = run_available_now(
        spark, {"state.dir": state, "topics": f"{alpha.topic},{beta.topic}"}, sink, str(tmp_path / "ckpt")
    )
    after = process_metrics().snapshot()
    batches = sum(1 for p in query.recentProgress if p["numInputRows"] > 0)
    assert batches == 1  # no maxEventsPerTrigger: the whole log in one micro-batch, each key applied once

    def delta(table: str) -> TableFigures:
        a, b = after[table], before.get(table, TableFigures())
        return TableFigures(a.batches - b.batches, a.rows_applied - b.rows_applied, a.rows_rejected - b.rows_rejected)

    assert len(delta_rows(str(tmp_path / "lake" / "shop_inv_alpha"))) == alpha_keys - len(refused), SEED
    assert delta("shop_inv_alpha") == TableFigures(batches, alpha_keys - len(refused), poison + len(refused)), SEED
    assert delta("shop_inv_beta") == TableFigures(batches, beta_keys, 0), SEED
    for table, newest in (("shop_inv_alpha", BASE_TS + alpha_seq), ("shop_inv_beta", BASE_TS + beta_seq)):
        figures = after[table]
        assert figures.last_commit_ms is not None and figures.lag_ms == figures.last_commit_ms - newest, SEED
