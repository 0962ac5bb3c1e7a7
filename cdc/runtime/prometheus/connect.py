"""Kafka Connect's worker, connector, task, source-task, sink-task and task-error metrics.

Named as Strimzi's JMX-exporter rules (`packaging/examples/metrics/kafka-connect-metrics.yaml`,
lowercase, which the Prometheus jmx_exporter's own `kafka-connect.yml` example mostly shares)
turn Kafka Connect's MBeans into Prometheus metrics, so their dashboards and alerts apply:

- `kafka.connect:type=connect-worker-metrics` -> `kafka_connect_worker_<attr>`, and with
  `connector=` -> `kafka_connect_worker_<attr>{connector}`;
- `type=connector-metrics` string attributes -> `kafka_connect_connector_<attr>{connector,<attr>="value"} 1`;
- `type=connector-task-metrics` status -> `kafka_connect_connector_task_status{connector,task,status} 1`;
- `type=<group>-metrics,connector=,task=` -> `kafka_connect_<group>_<attr>{connector,task}`, a
  counter for `*-total` attributes (Strimzi's `type: COUNTER`), else a gauge; the
  connector-task-metrics `offset-commit-*-percentage` too, as the jmx_exporter example names them
  (Strimzi's rules drop them);
- `type=connect-worker-rebalance-metrics` -> `kafka_connect_worker_rebalance_<attr>` (a counter for
  `completed-rebalances-total`), and `leader-name` as `…_leader_name{leader_name="<url>"} 1`; only
  a distributed worker has them, as in Kafka.

Kafka Connect's own classes mirrored: ConnectMetricsRegistry (the names), WorkerConnector,
WorkerTask, WorkerSourceTask, WorkerSinkTask, ErrorHandlingMetrics and DistributedHerder's
HerderMetrics (what is counted). Kafka's windowed Avg/Max/Frequencies (offset-commit-*,
rebalance-*-time-ms) are computed over its sample window (cdc.runtime.sampled), NaN included.
Attributes the runtime has no figure for (running-ratio, batch-size-*, connect-protocol) are left
out rather than reported as 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cdc.runtime.prometheus.rates import Rates
from cdc.runtime.prometheus.view import TaskView, WorkerView
from cdc.runtime.sink_task import WorkerSinkTask
from cdc.runtime.source_task import WorkerSourceTask
from cdc.runtime.task_meters import OffsetCommitMeter, SinkTaskMeter, SourceTaskMeter

TASK_STATES = ("running", "paused", "failed", "unassigned", "destroyed", "restarting")
_TASK = ["connector", "task"]


class _Families:
    """Families by name, each yielded once however many tasks add samples to it."""

    def __init__(self) -> None:
        self._families: dict[str, Metric] = {}

    def gauge(self, name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = GaugeMetricFamily(name, doc, labels=labels)
        assert isinstance(family, GaugeMetricFamily)
        return family

    def counter(self, name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = CounterMetricFamily(name, doc, labels=labels)
        assert isinstance(family, CounterMetricFamily)
        return family

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())


REBALANCE_ATTRS = (
    "rebalancing",
    "epoch",
    "rebalance-avg-time-ms",
    "rebalance-max-time-ms",
    "time-since-last-rebalance-ms",
)
COMMIT_ATTRS = (
    "offset-commit-avg-time-ms",
    "offset-commit-max-time-ms",
    "offset-commit-success-percentage",
    "offset-commit-failure-percentage",
)


def _prometheus(attr: str) -> str:
    return attr.replace("-", "_")


def connect_metrics(view: WorkerView, rates: Rates) -> Iterator[Metric]:
    f = _Families()
    _worker(view, f)
    _rebalance(view, f)
    for c in view.connectors:
        labels = [c.name]
        if c.status:
            f.gauge(
                "kafka_connect_connector_status",
                "connector-metrics status (1 for the current one)",
                ["connector", "status"],
            ).add_metric([c.name, c.status], 1)
        f.gauge(
            "kafka_connect_connector_connector_class",
            "connector-metrics connector-class",
            ["connector", "connector_class"],
        ).add_metric([*labels, c.connector_class], 1)
        f.gauge(
            "kafka_connect_connector_connector_type",
            "connector-metrics connector-type",
            ["connector", "connector_type"],
        ).add_metric([*labels, c.type], 1)
        if c.version:
            f.gauge(
                "kafka_connect_connector_connector_version",
                "connector-metrics connector-version",
                ["connector", "connector_version"],
            ).add_metric([*labels, c.version], 1)
    seen: set[object] = set()
    for t in view.tasks:
        labels = [t.connector, str(t.task)]
        if t.status:
            f.gauge(
                "kafka_connect_connector_task_status",
                "connector-task-metrics status (1 for the current one)",
                ["connector", "task", "status"],
            ).add_metric([*labels, t.status], 1)
        _offset_commits(t, labels, f)
        if isinstance(t.runner, WorkerSourceTask):
            _source_task(t, labels, f, rates, seen)
        elif isinstance(t.runner, WorkerSinkTask):
            _sink_task(t, labels, f, rates, seen)
        _errors(t, labels, f)
    rates.keep(seen)
    yield from f


def _worker(view: WorkerView, f: _Families) -> None:
    f.gauge("kafka_connect_worker_connector_count", "connect-worker-metrics connector-count", []).add_metric(
        [], len(view.connectors)
    )
    f.gauge("kafka_connect_worker_task_count", "connect-worker-metrics task-count", []).add_metric([], len(view.tasks))
    by_connector: dict[str, list[TaskView]] = {c.name: [] for c in view.connectors}
    for t in view.tasks:
        by_connector.setdefault(t.connector, []).append(t)
    for name, tasks in sorted(by_connector.items()):
        f.gauge(
            "kafka_connect_worker_connector_total_task_count",
            "connect-worker-metrics connector-total-task-count",
            ["connector"],
        ).add_metric([name], len(tasks))
        for state in TASK_STATES:
            f.gauge(
                f"kafka_connect_worker_connector_{state}_task_count",
                f"connect-worker-metrics connector-{state}-task-count",
                ["connector"],
            ).add_metric([name], sum(1 for t in tasks if t.status == state))


def _rebalance(view: WorkerView, f: _Families) -> None:
    values = view.rebalance
    if values is None:  # standalone: no group, no rebalances
        return
    f.counter(
        "kafka_connect_worker_rebalance_completed_rebalances",
        "connect-worker-rebalance-metrics completed-rebalances-total: rebalances this worker completed",
        [],
    ).add_metric([], values["completed-rebalances-total"])
    for attr in REBALANCE_ATTRS:
        f.gauge(
            f"kafka_connect_worker_rebalance_{_prometheus(attr)}", f"connect-worker-rebalance-metrics {attr}", []
        ).add_metric([], values[attr])
    if view.leader_name:
        f.gauge(
            "kafka_connect_worker_rebalance_leader_name",
            "connect-worker-rebalance-metrics leader-name: the group leader's REST URL",
            ["leader_name"],
        ).add_metric([view.leader_name], 1)


def _offset_commits(t: TaskView, labels: list[str], f: _Families) -> None:
    commits = getattr(t.runner, "commits", None)
    if not isinstance(commits, OffsetCommitMeter):  # a task in another process
        return
    for attr, value in commits.values().items():
        f.gauge(
            f"kafka_connect_connector_task_{_prometheus(attr)}",
            f"connector-task-metrics {attr} (over the last 30 to 60 s)",
            _TASK,
        ).add_metric(labels, value)


def _source_task(t: TaskView, labels: list[str], f: _Families, rates: Rates, seen: set[object]) -> None:
    runner = t.runner
    assert isinstance(runner, WorkerSourceTask)
    meter = runner.meter
    written = runner.records_sent
    f.counter(
        "kafka_connect_source_task_source_record_write",
        "source-task-metrics source-record-write-total: records written to the log after transformations",
        _TASK,
    ).add_metric(labels, written)
    key = ("write", t.connector, t.task)
    seen.add(key)
    f.gauge(
        "kafka_connect_source_task_source_record_write_rate", "source-task-metrics source-record-write-rate", _TASK
    ).add_metric(labels, rates.rate(key, written))
    f.gauge(
        "kafka_connect_source_task_source_record_active_count",
        "source-task-metrics source-record-active-count: records written but not yet acknowledged",
        _TASK,
    ).add_metric(labels, runner.submitted.outstanding)
    if isinstance(meter, SourceTaskMeter):
        polled = meter.poll.records
        f.counter(
            "kafka_connect_source_task_source_record_poll",
            "source-task-metrics source-record-poll-total: records the task's poll() returned",
            _TASK,
        ).add_metric(labels, polled)
        key = ("poll", t.connector, t.task)
        seen.add(key)
        f.gauge(
            "kafka_connect_source_task_source_record_poll_rate", "source-task-metrics source-record-poll-rate", _TASK
        ).add_metric(labels, rates.rate(key, polled))
        f.gauge(
            "kafka_connect_source_task_poll_batch_avg_time_ms", "source-task-metrics poll-batch-avg-time-ms", _TASK
        ).add_metric(labels, meter.poll.avg_ms)
        f.gauge(
            "kafka_connect_source_task_poll_batch_max_time_ms", "source-task-metrics poll-batch-max-time-ms", _TASK
        ).add_metric(labels, meter.poll.max_ms)


def _sink_task(t: TaskView, labels: list[str], f: _Families, rates: Rates, seen: set[object]) -> None:
    runner = t.runner
    assert isinstance(runner, WorkerSinkTask)
    meter = runner.meter
    sent = runner.records_put
    f.counter(
        "kafka_connect_sink_task_sink_record_send",
        "sink-task-metrics sink-record-send-total: records put to the task after transformations",
        _TASK,
    ).add_metric(labels, sent)
    key = ("send", t.connector, t.task)
    seen.add(key)
    f.gauge(
        "kafka_connect_sink_task_sink_record_send_rate", "sink-task-metrics sink-record-send-rate", _TASK
    ).add_metric(labels, rates.rate(key, sent))
    f.gauge(
        "kafka_connect_sink_task_partition_count", "sink-task-metrics partition-count: partitions being consumed", _TASK
    ).add_metric(labels, len(runner.current))
    if isinstance(meter, SinkTaskMeter):
        read = meter.read.records
        f.counter(
            "kafka_connect_sink_task_sink_record_read",
            "sink-task-metrics sink-record-read-total: records read from the log",
            _TASK,
        ).add_metric(labels, read)
        key = ("read", t.connector, t.task)
        seen.add(key)
        f.gauge(
            "kafka_connect_sink_task_sink_record_read_rate", "sink-task-metrics sink-record-read-rate", _TASK
        ).add_metric(labels, rates.rate(key, read))
        f.gauge(
            "kafka_connect_sink_task_put_batch_avg_time_ms", "sink-task-metrics put-batch-avg-time-ms", _TASK
        ).add_metric(labels, meter.put.avg_ms)
        f.gauge(
            "kafka_connect_sink_task_put_batch_max_time_ms", "sink-task-metrics put-batch-max-time-ms", _TASK
        ).add_metric(labels, meter.put.max_ms)


def _errors(t: TaskView, labels: list[str], f: _Families) -> None:
    errors = getattr(t.runner, "errors", None)
    stats = getattr(errors, "stats", None)
    if stats is None:
        return
    f.gauge(
        "kafka_connect_task_error_total_record_failures",
        "task-error-metrics total-record-failures: failed conversions and transformations",
        _TASK,
    ).add_metric(labels, stats.total_errors)
    f.gauge(
        "kafka_connect_task_error_total_record_errors",
        "task-error-metrics total-record-errors: records that failed",
        _TASK,
    ).add_metric(labels, stats.total_errors)
    f.gauge(
        "kafka_connect_task_error_total_records_skipped",
        "task-error-metrics total-records-skipped: records skipped under errors.tolerance=all",
        _TASK,
    ).add_metric(labels, stats.skipped_records)
