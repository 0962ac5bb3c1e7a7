"""What one worker runs, read once per scrape: its connectors, its tasks, their states and metrics.

Kafka Connect registers its MBeans per worker: a worker reports the connectors and tasks it
runs, not the cluster's. The same holds here. Values come from live objects (the worker's task
runners and their meters) and from the status store (states, and the metrics each task last
published, which is how process-isolated tasks report too). Nothing here reads a connector's
config beyond its class and `topic.prefix`, so no secret can reach the exposition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from cdc.api.source import SourceConnector
from cdc.runtime.distributed.rebalance_metrics import RebalanceMetrics
from cdc.runtime.sink_task import WorkerSinkTask
from cdc.runtime.source_task import WorkerSourceTask
from cdc.runtime.task import WorkerTask
from cdc.runtime.worker import Worker


@dataclass(frozen=True)
class ConnectorView:
    name: str
    connector_class: str
    type: str  # "source" | "sink" | "unknown"
    version: str | None
    status: str | None  # Kafka Connect's connector-metrics `status`, lowercase


@dataclass(frozen=True)
class TaskView:
    connector: str
    task: int
    type: str  # "source" | "sink" | "unknown"
    status: str | None  # connector-task-metrics `status`, lowercase
    connector_class: str
    topic_prefix: str | None
    runner: WorkerTask
    metrics: dict[str, Any] = field(default_factory=dict)  # as the task last published them
    metrics_ms: int | None = None  # when


@dataclass(frozen=True)
class WorkerView:
    worker_id: str
    now_ms: int
    connectors: list[ConnectorView]
    tasks: list[TaskView]
    # connect-worker-rebalance-metrics: a distributed worker's (cdc.runtime.distributed.rebalance_metrics),
    # None in standalone mode, which has no rebalances (nor, in Kafka, these metrics)
    rebalance: dict[str, float] | None = None
    leader_name: str | None = None  # the group leader's REST URL, as far as this worker knows


def _running_connectors(herder: Any) -> dict[str, tuple[dict[str, str], Any]]:
    """{name: (config, Connector instance or None)} of the connectors this worker runs.

    StandaloneHerder keeps them in `connectors` (every one runs here), DistributedHerder in
    `running` (those assigned to this worker).
    """
    out: dict[str, tuple[dict[str, str], Any]] = {}
    standalone = getattr(herder, "connectors", None)
    if isinstance(standalone, dict):
        for name, state in list(standalone.items()):
            out[name] = (dict(state.config), state.connector)
    distributed = getattr(herder, "running", None)
    if isinstance(distributed, dict):
        for name, running in list(distributed.items()):
            out[name] = (dict(running.config), running.instance)
    return out


def _version(instance: Any) -> str | None:
    try:
        return str(instance.version()) if instance is not None else None
    except Exception:  # a plugin's version() failing must not fail the scrape
        return None


def _connector_type(worker: Worker, config: dict[str, str]) -> str:
    try:
        return "source" if issubclass(worker.connector_class(config), SourceConnector) else "sink"
    except Exception:  # a class no longer installed
        return "unknown"


def _task_type(runner: WorkerTask, config: dict[str, str] | None, worker: Worker) -> str:
    if isinstance(runner, WorkerSourceTask):
        return "source"
    if isinstance(runner, WorkerSinkTask):
        return "sink"
    return _connector_type(worker, config) if config is not None else "unknown"


def _task_props(runner: WorkerTask) -> dict[str, str]:
    """The task's config: a thread task's `task_config`, a process task's spec (cdc.runtime.task_process)."""
    props = getattr(runner, "task_config", None)
    if isinstance(props, dict):
        return props
    spec = getattr(runner, "spec", None)
    task = spec.get("task") if isinstance(spec, dict) else None
    return task if isinstance(task, dict) else {}


def worker_view(herder: Any) -> WorkerView:
    """The worker behind `herder` (StandaloneHerder or DistributedHerder), as of now."""
    worker: Worker = herder.worker
    store = worker.status_store
    connectors: list[ConnectorView] = []
    configs: dict[str, dict[str, str]] = {}
    for name, (config, instance) in sorted(_running_connectors(herder).items()):
        configs[name] = config
        status = store.get_connector(name)
        connectors.append(
            ConnectorView(
                name,
                config.get("connector.class", ""),
                _connector_type(worker, config),
                _version(instance),
                status.state.value.lower() if status is not None else None,
            )
        )
    tasks: list[TaskView] = []
    for id, runner in sorted(list(worker.tasks.items())):
        props = _task_props(runner)
        config = configs.get(id.connector)
        status = store.get_task(id.connector, id.task)
        report = store.get_task_metrics(id.connector, id.task)
        tasks.append(
            TaskView(
                id.connector,
                id.task,
                _task_type(runner, config, worker),
                status.state.value.lower() if status is not None else None,
                (config or props).get("connector.class", ""),
                props.get("topic.prefix") or (config or {}).get("topic.prefix"),
                runner,
                dict(report.metrics) if report is not None else {},
                report.timestamp if report is not None and report.timestamp else None,
            )
        )
    rebalance = getattr(herder, "rebalance", None)
    if not isinstance(rebalance, RebalanceMetrics):  # standalone
        return WorkerView(worker.worker_id, int(time.time() * 1000), connectors, tasks)
    leader = herder.leader_url()
    return WorkerView(worker.worker_id, int(time.time() * 1000), connectors, tasks, rebalance.values(), leader)
