"""The Spark sink's per-table figures as Prometheus metrics, in `cdc run`'s exposition.

The sink's ChangeApplier runs in the `cdc run` process (foreachBatch runs on the driver) and
keeps its figures in `cdc_spark.apply.metrics`; this collector renders them at scrape time
next to the worker's Debezium and Kafka Connect metrics (cdc.runtime.prometheus), on the
job's `metrics.port`:

- `cdc_sink_batches_total{target, table}`: micro-batches that applied rows to the table;
- `cdc_sink_rows_applied_total{target, table}`: rows written (a key's latest event of a batch once);
- `cdc_sink_rows_rejected_total{target, table}`: events left out under errors.tolerance=all,
  written to the dead-letter table or topic when one is set;
- `cdc_sink_lag_ms{target, table}`: at the table's last commit, the commit time minus the
  source commit time of the newest row applied (source commit to lake). What the source has
  not read yet is `cdc_source_bytes_behind` (cdc.runtime.prometheus.debezium).

Kafka Connect's sink-task metrics (`sink-record-send-total`…) count per task; none per table,
which is how a lake is watched, hence names of cdc's own. No `job` label: Prometheus gives
every scraped series its scrape job's `job` label, and a target's own would be renamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from cdc_spark.apply.metrics import SinkMetrics

LABELS = ["target", "table"]


class SinkCollector(Collector):
    """The figures of `metrics` for a sink of type `target` (delta, iceberg, postgres, parquet)."""

    def __init__(self, metrics: SinkMetrics, target: str) -> None:
        self.metrics = metrics
        self.target = target

    def collect(self) -> Iterator[Metric]:
        batches = CounterMetricFamily(
            "cdc_sink_batches", "cdc: micro-batches that applied rows to the table", labels=LABELS
        )
        applied = CounterMetricFamily("cdc_sink_rows_applied", "cdc: rows the sink wrote to the table", labels=LABELS)
        rejected = CounterMetricFamily(
            "cdc_sink_rows_rejected",
            "cdc: events left out of the table under errors.tolerance=all (to the dead-letter table or topic)",
            labels=LABELS,
        )
        lag = GaugeMetricFamily(
            "cdc_sink_lag_ms",
            "cdc: at the table's last commit, commit time minus the source commit time of its newest row",
            labels=LABELS,
        )
        for table, f in sorted(self.metrics.snapshot().items()):
            labels = [self.target, table]
            batches.add_metric(labels, f.batches)
            applied.add_metric(labels, f.rows_applied)
            rejected.add_metric(labels, f.rows_rejected)
            if f.lag_ms is not None:
                lag.add_metric(labels, f.lag_ms)
        yield from (batches, applied, rejected, lag)

    def describe(self) -> list[Metric]:
        return []  # registering must not read the figures
