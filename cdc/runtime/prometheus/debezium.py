"""Debezium's snapshot and streaming metrics, named as its JMX-exporter rules name them.

Debezium registers `debezium.<plugin>:type=connector-metrics,context=<snapshot|streaming|
schema-history>,server=<topic.prefix>`; the rules of Debezium's monitoring example and of
Strimzi turn each numeric attribute into `debezium_metrics_<Attribute>{plugin, name, context}`
(`name` is the server, i.e. `topic.prefix`), the RowsScanned map into one sample per table
(`table` label), booleans into 1/0, and drop strings. The values are those the connector last
published (cdc.api.metrics, at most every 2 s); the durations since an event, a snapshot's
start or a schema history change are computed at scrape time from the published timestamps, so
an idle task publishes nothing new. The schema-history context (MySQL's; PostgreSQL has no
schema history) appears when the connector publishes it (cdc_debezium.history_metrics):
Status (0 stopped, 1 recovering, 2 running), RecoveryStartTime, ChangesRecovered,
ChangesApplied and MilliSecondsSinceLast{Recovered,Applied}Change; LastRecoveredChange and
LastAppliedChange are strings, dropped like every string.

cdc's own figures, which Debezium has no MBean for, are `cdc_source_*`, with the same labels:
`cdc_source_bytes_behind` (the database's log position minus the reader's: what the source
has not read yet), `cdc_source_retained_wal_bytes` (PostgreSQL's slot), `cdc_snapshot_rows_estimated`
(per table), `cdc_source_metrics_age_seconds` (how old the published values are) and
`cdc_source_seconds_until_position_lost` (how long the database keeps the position the stored
offset needs, cdc.api.retention: counted down to the scrape, 0 when lost, +Inf when the server
never removes it, no sample when the connector cannot say).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from cdc.api import metrics as m
from cdc.api.retention import PositionRetention
from cdc.runtime.prometheus.view import TaskView, WorkerView

LABELS = ["plugin", "name", "context"]

# Debezium attribute -> the context whose MBean has it, for the published values copied as they are.
SNAPSHOT_ATTRS = (
    m.SNAPSHOT_RUNNING,
    m.SNAPSHOT_COMPLETED,
    m.SNAPSHOT_ABORTED,
    m.TOTAL_TABLE_COUNT,
    m.REMAINING_TABLE_COUNT,
)
STREAMING_ATTRS = (
    m.CONNECTED,
    m.MILLISECONDS_BEHIND_SOURCE,
    m.TOTAL_NUMBER_OF_EVENTS_SEEN,
    m.NUMBER_OF_COMMITTED_TRANSACTIONS,
)
QUEUE_ATTRS = (m.QUEUE_TOTAL_CAPACITY, m.QUEUE_REMAINING_CAPACITY)
SNAPSHOT_DEFAULTS = {m.SNAPSHOT_RUNNING: 0, m.SNAPSHOT_COMPLETED: 0, m.SNAPSHOT_ABORTED: 0, "SnapshotPaused": 0}
STREAMING_DEFAULTS = {m.CONNECTED: 0, m.TOTAL_NUMBER_OF_EVENTS_SEEN: 0, m.NUMBER_OF_COMMITTED_TRANSACTIONS: 0}
SCHEMA_HISTORY_ATTRS = ("Status", "RecoveryStartTime", "ChangesRecovered", "ChangesApplied")
# MilliSecondsSince... attribute -> the published epoch-ms time it counts from (-1 before the first)
SCHEMA_HISTORY_SINCE = {
    "MilliSecondsSinceLastRecoveredChange": "LastRecoveredChangeTs",
    "MilliSecondsSinceLastAppliedChange": "LastAppliedChangeTs",
}


def plugin_of(connector_class: str) -> str | None:
    """Debezium's JMX domain suffix for a connector class (Debezium's or cdc's own name, or an alias)."""
    c = connector_class.lower()
    for plugin in ("mariadb", "mysql", "postgres"):
        if plugin in c:
            return plugin
    return None


def _number(value: Any) -> float | None:
    """What the JMX exporter keeps: numbers, booleans as 1/0; strings and nulls are dropped."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


class _Out:
    def __init__(self) -> None:
        self.families: dict[str, GaugeMetricFamily] = {}

    def add(self, name: str, labels: list[str], values: list[str], value: Any, doc: str) -> None:
        number = _number(value)
        if number is None:
            return
        family = self.families.get(name)
        if family is None:
            family = self.families[name] = GaugeMetricFamily(name, doc, labels=labels)
        family.add_metric(values, number)


def debezium_metrics(view: WorkerView) -> Iterator[Metric]:
    out = _Out()
    emitted: set[tuple[str, str]] = set()
    for t in view.tasks:
        plugin = plugin_of(t.connector_class)
        if plugin is None or t.type != "source" or not t.topic_prefix:
            continue
        if (plugin, t.topic_prefix) in emitted:  # Debezium refuses a second MBean of one server name too
            continue
        emitted.add((plugin, t.topic_prefix))
        _task(out, t, plugin, t.topic_prefix, view.now_ms)
    yield from out.families.values()


def _attr(out: _Out, attr: str, plugin: str, name: str, context: str, value: Any) -> None:
    out.add(
        f"debezium_metrics_{attr}",
        LABELS,
        [plugin, name, context],
        value,
        f"Debezium {context} metric {attr} (debezium.{plugin}:type=connector-metrics,context={context})",
    )


def _task(out: _Out, t: TaskView, plugin: str, name: str, now_ms: int) -> None:
    values: Mapping[str, Any] = t.metrics
    # -- snapshot --------------------------------------------------------------------------------
    snapshot = {**SNAPSHOT_DEFAULTS, **{a: values[a] for a in SNAPSHOT_ATTRS if a in values}}
    scanned = values.get(m.ROWS_SCANNED) or {}
    snapshot[m.TOTAL_NUMBER_OF_EVENTS_SEEN] = sum(v for v in scanned.values() if isinstance(v, int))
    started, ended = values.get(m.SNAPSHOT_STARTED_TS), values.get(m.SNAPSHOT_ENDED_TS)
    if isinstance(started, int):
        end = ended if isinstance(ended, int) else now_ms
        snapshot["SnapshotDurationInSeconds"] = max(0, (end - started) // 1000)
    streaming = {**STREAMING_DEFAULTS, **{a: values[a] for a in STREAMING_ATTRS if a in values}}
    for attr in QUEUE_ATTRS:
        if attr in values:
            snapshot[attr] = streaming[attr] = values[attr]
    processed = values.get(m.LAST_EVENT_PROCESSED_TS)
    streaming["MilliSecondsSinceLastEvent"] = max(0, now_ms - processed) if isinstance(processed, int) else -1
    position = values.get(m.SOURCE_EVENT_POSITION)
    if plugin in ("mysql", "mariadb") and isinstance(position, dict) and isinstance(position.get("pos"), int):
        streaming["BinlogPosition"] = position["pos"]
    for attr, value in snapshot.items():
        _attr(out, attr, plugin, name, "snapshot", value)
    for attr, value in streaming.items():
        _attr(out, attr, plugin, name, "streaming", value)
    for table, rows in sorted(scanned.items()):
        out.add(
            "debezium_metrics_RowsScanned",
            [*LABELS, "table"],
            [plugin, name, "snapshot", str(table)],
            rows,
            f"Debezium snapshot metric RowsScanned per table (debezium.{plugin}:...,context=snapshot,key=<table>)",
        )
    # -- schema history --------------------------------------------------------------------------
    history = values.get(m.SCHEMA_HISTORY)
    if isinstance(history, dict):
        for attr in SCHEMA_HISTORY_ATTRS:
            _attr(out, attr, plugin, name, "schema-history", history.get(attr))
        for attr, ts_key in SCHEMA_HISTORY_SINCE.items():
            ts = history.get(ts_key)
            since = max(0, now_ms - ts) if isinstance(ts, int) and not isinstance(ts, bool) else -1
            _attr(out, attr, plugin, name, "schema-history", since)
    # -- cdc's own ------------------------------------------------------------------------------
    for attr, metric, context, doc in (
        (m.BYTES_BEHIND_SOURCE, "cdc_source_bytes_behind", "streaming", "log bytes the source has not read yet"),
        (m.RETAINED_WAL_BYTES, "cdc_source_retained_wal_bytes", "streaming", "WAL bytes the replication slot retains"),
    ):
        out.add(metric, LABELS, [plugin, name, context], values.get(attr), f"cdc: {doc}")
    retention = values.get(m.POSITION_RETENTION)
    if isinstance(retention, dict):
        out.add(
            "cdc_source_seconds_until_position_lost",
            ["plugin", "name"],
            [plugin, name],
            _seconds_until_lost(retention, now_ms),
            "cdc: seconds until the database may remove the log position the stored offset needs (a lower bound; "
            "+Inf: never removed automatically, 0: lost)",
        )
    for table, rows in sorted((values.get(m.ROWS_ESTIMATED) or {}).items()):
        out.add(
            "cdc_snapshot_rows_estimated",
            [*LABELS, "table"],
            [plugin, name, "snapshot", str(table)],
            rows,
            "cdc: the database's row estimate of a table being snapshotted",
        )
    if t.metrics_ms is not None:
        out.add(
            "cdc_source_metrics_age_seconds",
            ["plugin", "name"],
            [plugin, name],
            max(0, now_ms - t.metrics_ms) / 1000,
            "cdc: how long ago the task published the values above",
        )


def _seconds_until_lost(retention: dict[str, Any], now_ms: int) -> float | None:
    """The published PositionRetention counted down to `now_ms`; None (no sample) when unreadable."""
    try:
        return PositionRetention.from_json(retention).seconds_until_lost(now_ms)
    except (TypeError, ValueError):  # a value of another shape: not a number to show
        return None
